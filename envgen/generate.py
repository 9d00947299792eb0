"""``envwright generate``: documents in, validated environments out.

Pipeline for one run (:func:`run_generate`):

1. select documents from the corpus (size, language, stateful filter, dedup,
   seeded sample: :mod:`corpora`);
2. skip the documents this run already attempted (a run is identified by
   corpus, however its path is spelled, proposer, backend, model and seed, so
   re-running the same command resumes a killed run);
3. propose: the ``template`` proposer runs inside the worker processes with
   validation; model proposers generate in batches in this process, then fan
   validation out to the workers and feed rejection reasons back for up to
   ``max_retries`` repairs;
4. validate through the gate (:mod:`envgen.gate`): in-process for the
   template proposer (our own code generator is trusted), in isolated sandbox
   workers for model output;
5. write accepted specs to the library (refusing duplicates) and record every
   attempt in the catalog, in batches (:meth:`Library.record_batch`: spec files,
   then one transaction per batch). The workers hand back each accepted spec
   ready to store (its file text, signature and catalog columns: a
   :class:`~envgen.catalog.PreparedEnv`), so this process, which shares the CPU
   with the workers, only writes. Results count (summary, progress bar) once
   their batch is committed; a killed run re-attempts the uncommitted ones.

Workers are local processes (``executor="local"``) or Ray tasks
(``executor="ray"``), running the same job function.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from envgen.blueprint.grounding import grounding
from envgen.catalog import AttemptRecord, PreparedEnv
from envgen.errors import FailureCode, NoUsableDocuments
from envgen.gate import Verdict, validate_spec
from envgen.library import BACKEND_FAILURE, Library, check_library_folder
from envgen.proposers import Proposal, Proposer, make_proposer

__all__ = ["GenerateConfig", "GenerateInterrupted", "GenerateSummary", "NoUsableDocuments", "corpus_key",
           "grounding", "run_generate", "select_corpus"]


@dataclass
class GenerateConfig:
    """Options of one generation run (each maps to an ``envwright generate`` flag)."""

    corpus: str = "stdlib"  #: ``stdlib``, a PATH (tree, .jsonl, .parquet) or ``hf:NAME``
    proposer: str = "template"  #: ``template`` or ``llm``
    backend: str | None = None  #: model backend for ``llm`` (transformers, vllm, openai, scripted)
    model: str | None = None  #: model name or path for the backend
    n: int = 20  #: documents to attempt
    out: Path = Path("library")  #: library folder
    catalog_url: str | None = None  #: SQLAlchemy URL of the catalog (default: sqlite in ``out``)
    workers: int = 1  #: parallel validation processes
    seed: int = 0
    executor: str = "local"  #: ``local`` processes or ``ray``
    max_retries: int = 2  #: repair rounds for proposers that can repair
    batch_size: int = 8  #: documents per generation batch (model proposers)
    min_stateful: float | None = 0.0  #: stateful-score filter (None: no filter)
    keep_tests: bool = False  #: keep test code (dropped by default: :func:`corpora.filters.is_test_path`)
    max_doc_chars: int = 200_000
    validation: str = "auto"  #: ``auto`` (inprocess for template, worker otherwise), ``worker``, ``inprocess``
    proposer_options: dict[str, Any] = field(default_factory=dict)
    skills: Path | None = None  #: skill library folder (skill-conditioned stream)
    alpha: float = 0.5  #: share of skill-conditioned documents when ``skills`` is given
    inline_single_worker: bool = True  #: with ``workers=1`` run jobs in this process (no pool)
    commit_every: int = 32  #: results per catalog transaction (a killed run re-attempts at most this many)
    corpus_options: dict[str, Any] = field(default_factory=dict)  #: the corpus loader's options (``--corpus-option``)

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        if self.n < 1:
            raise ValueError("n must be >= 1 (documents to attempt)")
        if self.workers < 1:
            raise ValueError("workers must be >= 1")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1 (documents per generation batch), got {self.batch_size}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0 (repair rounds; 0: no repair), got {self.max_retries}")
        if self.commit_every < 1:
            raise ValueError("commit_every must be >= 1")
        if self.executor not in ("local", "ray"):
            raise ValueError(f"executor must be 'local' or 'ray', got {self.executor!r}")
        if self.validation not in ("auto", "worker", "inprocess"):
            raise ValueError("validation must be 'auto', 'worker' or 'inprocess'")
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError("alpha must be in [0, 1]")
        if self.proposer == "llm" and not self.backend:
            raise ValueError("the llm proposer needs --backend (transformers, vllm, openai or scripted)")

    @property
    def run_id(self) -> str:
        """What identifies the run (re-running it resumes): corpus, proposer, backend, model, seed, skills.

        The corpus enters as :func:`corpus_key` spells it, so ``src``, ``./src/`` and ``/abs/src`` are one run.
        """
        parts: list[Any] = [corpus_key(self.corpus), self.proposer, self.backend, self.model, self.seed,
                            str(self.skills) if self.skills else None, self.alpha]
        structure = self.proposer_options.get("structure", "spec")
        constrained = self.proposer_options.get("constrained")
        if structure != "spec" or constrained is not None:  # older runs' ids stay as they were
            parts += [structure, constrained]
        if self.corpus_options:  # other documents: another run (without options, ids stay as they were)
            parts.append(sorted((str(k), repr(v)) for k, v in self.corpus_options.items()))
        if self.keep_tests:
            parts.append("keep_tests")
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]

    @property
    def validation_mode(self) -> str:
        if self.validation != "auto":
            return self.validation
        return "inprocess" if self.proposer == "template" else "worker"


REASON_EXAMPLES = 3  #: distinct reasons a summary keeps per rejection code
REASON_CHARS = 300  #: characters a summary keeps of one reason


def corpus_key(corpus: str) -> str:
    """One spelling per corpus, for the run id: a local path (plain or after a ``loader:`` prefix) becomes
    its resolved absolute path (prefixed with the loader only where the plain path would load otherwise).

    ``/data/src``, ``/data/src/``, ``./src`` (from ``/data``), ``~/src`` and ``tree:/data/src`` are one
    key; ``stdlib``, hub ids and anything that does not resolve stay as written. A spec written the
    canonical way keeps its key, so runs started that way resume as before.
    """
    from corpora import resolve_spec

    try:
        loader, source = resolve_spec(corpus)
        if source is None:
            return corpus
        path = Path(source).expanduser()
        if not path.exists():
            return corpus  # a hub id, or a path that will fail to load anyway
        resolved = str(path.resolve())
        return resolved if resolve_spec(resolved)[0] == loader else f"{loader}:{resolved}"
    except (ValueError, KeyError, OSError):  # an invalid spec fails when loaded, with its own message
        return corpus


@dataclass
class GenerateSummary:
    """What a run did (the table ``envwright generate`` prints)."""

    run_id: str
    attempted: int = 0
    accepted: int = 0
    skipped_resumed: int = 0
    rejected_by_reason: dict[str, int] = field(default_factory=dict)
    retries: int = 0
    tokens: int = 0
    wall_seconds: float = 0.0
    validation_seconds: list[float] = field(default_factory=list)
    duplicates: int = 0
    env_ids: list[str] = field(default_factory=list)
    backend_failures: int = 0  #: attempts the model backend failed (not marked done: a re-run retries them)
    first_backend_error: str | None = None
    #: per rejection code, up to :data:`REASON_EXAMPLES` distinct reasons (what ``generate`` prints)
    reason_examples: dict[str, list[str]] = field(default_factory=dict)

    @property
    def only_duplicates(self) -> bool:
        """Every attempt gave an environment the library already had (a re-run of a finished run)."""
        return self.attempted > 0 and self.duplicates == self.attempted

    def note_reasons(self, codes: list[str], reasons: list[str]) -> None:
        """Keep a few distinct reasons per code (each cut to :data:`REASON_CHARS` characters)."""
        reasons = [r if len(r) <= REASON_CHARS else r[:REASON_CHARS] + "…" for r in reasons if r]
        for code in codes or ["unknown"]:
            kept = self.reason_examples.setdefault(code, [])
            for reason in reasons:
                if len(kept) >= REASON_EXAMPLES:
                    break
                if reason not in kept:
                    kept.append(reason)

    @property
    def only_backend_failures(self) -> bool:
        """Every attempt failed in the model backend (a server down, an engine error): the run did nothing."""
        return self.attempted > 0 and self.backend_failures == self.attempted

    @property
    def yield_rate(self) -> float:
        return self.accepted / self.attempted if self.attempted else 0.0

    @property
    def seconds_per_env(self) -> float:
        return self.wall_seconds / self.accepted if self.accepted else float("nan")

    @property
    def median_validation_ms(self) -> float:
        return 1000 * statistics.median(self.validation_seconds) if self.validation_seconds else float("nan")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("validation_seconds")
        d.update(yield_rate=self.yield_rate, seconds_per_env=self.seconds_per_env,
                 median_validation_ms=self.median_validation_ms)
        return d


# -- documents --------------------------------------------------------------------------------


def select_corpus(cfg: GenerateConfig) -> list[Any]:
    """The documents a run attempts, in a deterministic order; :class:`NoUsableDocuments` when none."""
    from corpora import SelectConfig, load_corpus, select_documents
    from corpora.pipeline import SelectionReport

    sel = SelectConfig(max_chars=cfg.max_doc_chars, min_stateful_score=cfg.min_stateful,
                       dedup="exact", sample=cfg.n, seed=cfg.seed, keep_tests=cfg.keep_tests,
                       languages=("python",) if cfg.proposer == "template" else None)
    report = SelectionReport()
    docs = select_documents(load_corpus(cfg.corpus, **cfg.corpus_options), sel, report)
    if not docs:
        why = report.explain()
        skipped = _loader_skips(cfg.corpus, cfg.corpus_options)
        if skipped:
            why += f". The loader: {skipped}"
        removed = {stage.split(" (")[0] for stage, left in _removing(report.stages)}
        hints = []
        if "the language filter" in removed:
            hints.append("the template proposer reads Python source: give it a folder of .py files, or use "
                         "--proposer llm")
        if "the test-code filter" in removed:
            hints.append("--keep-tests keeps test code")
        hint = f" ({'; '.join(hints)})" if hints else ""
        raise NoUsableDocuments(f"no usable documents in corpus {cfg.corpus!r}: {why}{hint}")
    return docs


def _removing(stages: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The selection stages that removed documents (each with how many it left)."""
    return [(stage, left) for (stage, left), (_, before) in zip(stages[1:], stages, strict=False) if left < before]


def _loader_skips(corpus: str, options: dict[str, Any] | None = None) -> str | None:
    """What a source-tree corpus's loader found and skipped, with the run's loader options (None for
    other corpora)."""
    from corpora import resolve_spec
    from corpora.loaders.tree import explain_tree
    from corpora.registry import build_config, get_loader

    try:
        name, source = resolve_spec(corpus)
        if name != "tree" or not source:
            return None
        return explain_tree(build_config(get_loader("tree"), source, options or {}))
    except (ValueError, OSError):  # a diagnosis must never hide the error it explains
        return None


# -- the work units ---------------------------------------------------------------------------


@dataclass
class Outcome:
    """One document's result, as sent back from a worker."""

    doc_id: str
    accepted: bool
    spec_json: str | None  #: a rejected candidate (compact JSON), kept for inspection
    reasons: list[str]
    codes: list[str]
    validation_seconds: float
    error: str | None = None
    grounding: float = 0.0
    retries: int = 0
    tokens: int = 0
    raw: str | None = None
    env: PreparedEnv | None = None  #: an accepted spec, ready to store
    structure: str | None = None  #: ``blueprint`` or ``spec``
    repairs: list[str] = field(default_factory=list)  #: what the blueprint compiler changed
    skill_id: str | None = None
    stream: str | None = None
    gate: dict[str, Any] | None = None  #: the gate's report (``Verdict.to_dict()``), kept in the library
    mutation_score: float | None = None  #: the gate's killed / mutants
    mutants: int | None = None  #: wrong trajectories the gate tried
    difficulty: str | None = None  #: the blueprint compiler's difficulty level (``meta["difficulty"]``)


def _verdict_outcome(doc_id: str, proposal: Proposal, verdict: Verdict | None, doc: Any = None,
                     extra_reasons: list[str] | None = None) -> Outcome:
    meta = proposal.meta or {}
    common: dict[str, Any] = {"retries": proposal.retries, "tokens": proposal.tokens,
                              "structure": meta.get("structure"), "repairs": list(meta.get("repairs") or []),
                              "skill_id": meta.get("skill_id"), "stream": meta.get("stream"),
                              "difficulty": meta.get("difficulty")}
    if proposal.spec is None:
        code = meta.get("error_code") or FailureCode.NO_SPEC
        return Outcome(doc_id, False, None, [proposal.error or "no spec produced"], [code], 0.0,
                       error=proposal.error, raw=proposal.raw, **common)
    assert verdict is not None
    g = grounding(proposal.spec, doc) if doc is not None else 0.0
    reasons = [str(r) for r in verdict.reasons] + list(extra_reasons or [])
    codes = list(verdict.codes) + ([FailureCode.SKILL_VALIDATOR] if extra_reasons else [])
    accepted = verdict.accepted and not extra_reasons
    return Outcome(doc_id, accepted, None if accepted else proposal.spec.to_json(indent=None),
                   reasons, codes, verdict.seconds, grounding=g, raw=None if accepted else proposal.raw,
                   env=PreparedEnv.of(proposal.spec) if accepted else None, gate=verdict.to_dict(),
                   mutation_score=verdict.mutation_score, mutants=verdict.mutants, **common)


def template_job(doc: Any, seed: int, proposer_options: dict[str, Any], validation: str) -> Outcome:
    """Propose with the template proposer and validate, inside a worker."""
    proposer = make_proposer("template", **proposer_options)
    proposal = proposer.propose(doc, seed=seed)
    verdict = validate_spec(proposal.spec, executor=validation) if proposal.spec is not None else None
    return _verdict_outcome(doc.id, proposal, verdict, doc)


def validate_job(spec_json: str, validation: str) -> Verdict:
    """Validate one spec (JSON text) inside a worker."""
    return validate_spec(spec_json, executor=validation)


# -- execution backends -------------------------------------------------------------------------


def _ignore_sigint() -> None:
    """Worker processes leave Ctrl-C to the parent, which commits what is done and shuts them down."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


class _Runner:
    """Maps a job over inputs with local processes, Ray, or inline (workers=1)."""

    def __init__(self, workers: int, executor: str, inline_single_worker: bool = True):
        self.workers = workers
        self.executor = executor
        self._pool: ProcessPoolExecutor | None = None
        self._ray: Any = None
        if executor == "ray":
            try:
                import ray
            except ImportError:
                raise RuntimeError("--executor ray needs Ray: pip install 'envwright[ray]'") from None
            if not ray.is_initialized():
                ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
                         ignore_reinit_error=True)
            self._ray = ray
        elif workers > 1 or not inline_single_worker:
            import multiprocessing as mp
            import sys

            # fork starts a worker in milliseconds with everything already imported; fall back to spawn
            # where fork is unavailable or unsafe (a CUDA/OpenMP runtime already loaded by torch).
            method = "fork" if "fork" in mp.get_all_start_methods() and "torch" not in sys.modules else "spawn"
            self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context(method),
                                             initializer=_ignore_sigint)

    def map_unordered(self, fn: Callable[..., Any], arg_lists: list[tuple[Any, ...]]) -> Iterator[tuple[int, Any]]:
        """Yield ``(index, result)`` as results arrive; exceptions become results."""
        if self._ray is not None:
            remote = self._ray.remote(fn)
            refs = {remote.remote(*args): i for i, args in enumerate(arg_lists)}
            pending = list(refs)
            while pending:
                done, pending = self._ray.wait(pending, num_returns=1)
                ref = done[0]
                try:
                    yield refs[ref], self._ray.get(ref)
                except Exception as e:  # the runner's boundary: a work unit that raised is its result
                    yield refs[ref], e
            return
        if self._pool is None:
            for i, args in enumerate(arg_lists):
                try:
                    yield i, fn(*args)
                except Exception as e:  # the runner's boundary, as above
                    yield i, e
            return
        futures: dict[Future[Any], int] = {self._pool.submit(fn, *args): i for i, args in enumerate(arg_lists)}
        from concurrent.futures import as_completed

        for fut in as_completed(futures):
            try:
                yield futures[fut], fut.result()
            except Exception as e:  # the runner's boundary, as above
                yield futures[fut], e

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)


# -- the run ------------------------------------------------------------------------------------


def _progress(enabled: bool, total: int, description: str) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    prog = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("accepted {task.fields[accepted]}"), TimeRemainingColumn(),
                    disable=not enabled, transient=False)
    return prog, prog.add_task(description, total=total, accepted=0)


class _Recorder:
    """Writes outcomes to the library in batches and accumulates the summary.

    A batch is committed when it holds ``batch_size`` results or its oldest result has waited
    ``max_wait`` seconds (checked as results arrive), and at the end of the run; ``on_commit(n)``
    is told how many results each commit made count.
    """

    def __init__(self, lib: Library, cfg: GenerateConfig, summary: GenerateSummary, model: str | None, *,
                 batch_size: int = 32, max_wait: float = 1.0, on_commit: Callable[[int], None] | None = None):
        self.lib, self.cfg, self.summary, self.model = lib, cfg, summary, model
        self.batch_size, self.max_wait, self.on_commit = max(1, batch_size), max_wait, on_commit
        self._pending: list[tuple[AttemptRecord, Outcome]] = []
        self._since = 0.0

    def record(self, doc_id: str, out: Outcome | BaseException) -> None:
        if isinstance(out, BaseException):
            out = Outcome(doc_id, False, None, [f"internal error: {type(out).__name__}: {out}"], ["internal"], 0.0)
        run_id = self.summary.run_id
        attempt_id = hashlib.sha256(f"{run_id}:{doc_id}".encode()).hexdigest()[:24]
        rec = AttemptRecord(attempt_id=attempt_id, run_id=run_id, doc_id=doc_id, proposer=self.cfg.proposer,
                            accepted=out.accepted and out.env is not None, env=out.env,
                            reasons=list(out.reasons), codes=list(out.codes), retries=out.retries,
                            tokens=out.tokens, seconds=out.validation_seconds, model=self.model,
                            grounding=out.grounding, structure=out.structure, repairs=list(out.repairs),
                            skill_id=out.skill_id, stream=out.stream, gate=out.gate,
                            mutation_score=out.mutation_score, mutants=out.mutants, difficulty=out.difficulty,
                            rejected_spec=None if out.accepted else (out.spec_json or out.raw))
        if not self._pending:
            self._since = time.perf_counter()
        self._pending.append((rec, out))
        if len(self._pending) >= self.batch_size or time.perf_counter() - self._since >= self.max_wait:
            self.flush()

    def flush(self) -> None:
        """Commit the pending results and count them."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        self.lib.record_batch([rec for rec, _ in pending])
        s = self.summary
        for rec, out in pending:
            s.attempted += 1
            s.retries += out.retries
            s.tokens += out.tokens
            if out.validation_seconds:
                s.validation_seconds.append(out.validation_seconds)
            if rec.duplicate:
                s.duplicates += 1
            if rec.accepted:
                s.accepted += 1
                if rec.env_id:
                    s.env_ids.append(rec.env_id)
            else:
                for c in rec.codes or ["unknown"]:
                    s.rejected_by_reason[c] = s.rejected_by_reason.get(c, 0) + 1
                s.note_reasons(rec.codes, rec.reasons)
                if list(rec.codes) == [BACKEND_FAILURE]:
                    s.backend_failures += 1
                    if s.first_backend_error is None:
                        s.first_backend_error = rec.reasons[0] if rec.reasons else "generation failed"
        if self.on_commit is not None:
            self.on_commit(len(pending))


def run_generate(cfg: GenerateConfig, *, progress: bool = True, proposer: Proposer | None = None,
                 docs: Iterable[Any] | None = None) -> GenerateSummary:
    """Run (or resume) a generation run; returns its summary."""
    t0 = time.perf_counter()
    if cfg.proposer == "template" and proposer is None:
        # once here, before the workers start: bad options fail now, not once per document, and the
        # proposer's modules are imported once, by the process that fork-started workers inherit
        make_proposer("template", **cfg.proposer_options)
    check_library_folder(cfg.out)  # before any work: a file, or a folder that holds something else, is refused
    all_docs = list(docs) if docs is not None else select_corpus(cfg)
    lib = Library(cfg.out, cfg.catalog_url)  # only once there is work to store: a failed run leaves no library
    summary = GenerateSummary(run_id=cfg.run_id)
    done = lib.attempted_docs(cfg.run_id)
    todo = [d for d in all_docs if d.id not in done]
    summary.skipped_resumed = len(all_docs) - len(todo)
    prog, task = _progress(progress, len(todo), f"generate ({cfg.proposer})")
    recorder = _Recorder(lib, cfg, summary, cfg.model, batch_size=cfg.commit_every,
                         on_commit=lambda n: prog.update(task, advance=n, accepted=summary.accepted))
    runner = _Runner(cfg.workers, cfg.executor, cfg.inline_single_worker)
    try:
        with prog:
            if cfg.proposer == "template" and proposer is None:
                args = [(d, cfg.seed, cfg.proposer_options, cfg.validation_mode) for d in todo]
                for i, out in runner.map_unordered(template_job, args):
                    recorder.record(todo[i].id, out)
            else:
                prop = proposer or make_proposer(cfg.proposer, backend=cfg.backend, model=cfg.model,
                                                 **cfg.proposer_options)
                routing = _SkillRouting(cfg) if cfg.skills is not None else None
                try:
                    for start in range(0, len(todo), cfg.batch_size):
                        batch = todo[start:start + cfg.batch_size]
                        skills = routing.route(len(batch)) if routing is not None else None
                        for doc, out in _propose_and_validate(prop, batch, cfg, runner, skills):
                            if routing is not None and not isinstance(out, BaseException):
                                routing.observe(out.skill_id, out)
                            recorder.record(doc.id, out)
                        recorder.flush()
                finally:
                    if routing is not None:
                        routing.save()
            recorder.flush()
    except KeyboardInterrupt:
        recorder.flush()  # the results already computed count; the rest is re-attempted on resume
        summary.wall_seconds = time.perf_counter() - t0
        raise GenerateInterrupted(summary, len(todo)) from None
    finally:
        runner.close()
        lib.close()
    summary.wall_seconds = time.perf_counter() - t0
    return summary


class GenerateInterrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C after committing what it had; re-running the same command resumes it."""

    def __init__(self, summary: GenerateSummary, todo: int):
        super().__init__("interrupted")
        self.summary = summary  #: what was committed before the interrupt
        self.todo = todo  #: documents this run set out to attempt


class _SkillRouting:
    """Skills per batch: the first ``round(alpha * n)`` documents get a routed skill, the rest none.

    The skill library and its controller are loaded once per run (the controller's seeded RNG carries
    over from batch to batch). :meth:`observe` counts every proposal made under a skill and whether the
    gate and the skill's validator accepted it; :meth:`save` writes those usage stats back to the
    library (each skill folder atomically) at the end of the run.
    """

    def __init__(self, cfg: GenerateConfig):
        from envgen.skills import Controller, ControllerConfig, SkillLibrary

        assert cfg.skills is not None
        self.alpha = cfg.alpha
        self.lib = SkillLibrary.from_builtin(cfg.skills)
        self.controller = Controller(self.lib, ControllerConfig(seed=cfg.seed))
        self.touched: set[str] = set()

    def route(self, n: int) -> list[Any]:
        k = round(self.alpha * n)
        return [self.lib.get(s) for s in self.controller.route(k)] + [None] * (n - k)

    def observe(self, skill_id: str | None, out: Outcome) -> None:
        if not skill_id or list(out.codes) == [BACKEND_FAILURE]:
            return
        try:
            skill = self.lib.get(skill_id)
        except KeyError:
            return
        skill.stats.proposals += 1
        skill.stats.valid += int(out.accepted)
        self.touched.add(skill_id)

    def save(self) -> None:
        for skill_id in sorted(self.touched):
            self.lib.save(self.lib.get(skill_id))


def _skill_problems(skill: Any, spec: Any) -> list[str]:
    """A routed skill's validator on an accepted spec (sandboxed; a crash is a reason, never an exception)."""
    if skill is None or not getattr(skill, "validator", None):
        return []
    from envgen.skills.skill import run_validator

    return [f"skill {skill.id}: {p}" for p in run_validator(skill, spec, executor="worker")]


def _propose_and_validate(prop: Proposer, batch: list[Any], cfg: GenerateConfig,
                          runner: _Runner, skills: list[Any] | None = None
                          ) -> Iterator[tuple[Any, Outcome | BaseException]]:
    """Generate a batch, validate in workers, repair rejected ones (model proposers)."""
    proposals = prop.propose_batch(batch, seed=cfg.seed, skills=skills)
    for p, sk in zip(proposals, skills or [None] * len(proposals), strict=True):
        if p.spec is not None:
            p.spec.provenance.stream = "skill" if sk is not None else "explore"  # type: ignore[assignment]
            p.spec.provenance.skill_id = sk.id if sk is not None else None
    pending = list(zip(batch, proposals, strict=True))
    for attempt in range(cfg.max_retries + 1):
        to_validate = [(d, p) for d, p in pending if p.spec is not None]
        verdicts: dict[int, Verdict | BaseException] = {}
        args = [(p.spec.to_json(indent=None), cfg.validation_mode) for _, p in to_validate]  # type: ignore[union-attr]
        for i, v in runner.map_unordered(validate_job, args):
            verdicts[i] = v
        results: dict[str, tuple[Proposal, Verdict | None]] = {}
        for i, (d, p) in enumerate(to_validate):
            v = verdicts[i]
            results[d.id] = (p, v if isinstance(v, Verdict) else None)
        retry: list[tuple[Any, Proposal, str]] = []
        for d, p in pending:
            if p.spec is None and (p.meta or {}).get("error_code") == BACKEND_FAILURE:
                yield d, _verdict_outcome(d.id, p, None, d)  # the backend failed: no repair prompt can help
                continue
            if p.spec is None:
                feedback = f"- your output could not be used: {p.error}"
                verdict = None
            else:
                verdict = results[d.id][1]
                if verdict is None:
                    yield d, RuntimeError("validation crashed")
                    continue
                if verdict.accepted:
                    problems = _skill_problems(p.meta.get("skill"), p.spec)
                    if not problems:
                        yield d, _verdict_outcome(d.id, p, verdict, d)
                        continue
                    verdict = None
                    feedback = "\n".join(f"- {x}" for x in problems)
                    if not (prop.can_repair and attempt < cfg.max_retries):
                        yield d, _verdict_outcome(d.id, p, results[d.id][1], d, extra_reasons=problems)
                        continue
                    retry.append((d, p, feedback))
                    continue
                feedback = verdict.feedback()
            if prop.can_repair and attempt < cfg.max_retries:
                retry.append((d, p, feedback))
            else:
                yield d, _verdict_outcome(d.id, p, verdict, d)
        if not retry:
            return
        repaired = prop.repair_batch([(p, fb) for _, p, fb in retry], seed=cfg.seed + attempt + 1)
        pending = [(d, r) for (d, _, _), r in zip(retry, repaired, strict=True)]

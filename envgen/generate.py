"""``envwright generate``: documents in, validated environments out.

Pipeline for one run (:func:`run_generate`):

1. select documents from the corpus (size, language, stateful filter, dedup,
   seeded sample: :mod:`corpora`);
2. skip the documents this run already attempted (a run is identified by
   corpus, however its path is spelled, proposer, backend, model and seed, so
   re-running the same command resumes a killed run), except those whose
   environment's spec file is corrupt: that file is set aside as
   ``specs/<id>.json.corrupt`` and the document done again
   (:mod:`envgen.library_health`);
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

One run writes a library at a time (:mod:`envgen.library_lock`): a second run into a library that
another live run is writing is refused with :class:`~envgen.library_lock.LibraryBusy`, naming it.

Workers are local processes (``executor="local"``) or Ray tasks
(``executor="ray"``), running the same job function. The run's options, its
documents and its summary are :mod:`envgen.generate_config`'s (re-exported here).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from envgen.blueprint.grounding import grounding
from envgen.catalog import AttemptRecord, PreparedEnv
from envgen.errors import FailureCode, NoUsableDocuments, install_hint
from envgen.gate import Verdict, validate_spec
from envgen.generate_config import STATIC_PROPOSERS, GenerateConfig, GenerateSummary, corpus_key, select_corpus
from envgen.library import BACKEND_FAILURE, Library, LibraryNotWritable, check_library_folder
from envgen.library_lock import library_lock
from envgen.proposers import Proposal, Proposer, make_proposer
from gym_envs.seeding import stable_seed

__all__ = ["GenerateConfig", "GenerateInterrupted", "GenerateSummary", "NoUsableDocuments", "corpus_key",
           "grounding", "run_generate", "select_corpus"]


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


def static_job(name: str, doc: Any, seed: int, proposer_options: dict[str, Any], validation: str) -> Outcome:
    """Propose with a static proposer (:data:`STATIC_PROPOSERS`: no model) and validate, inside a worker."""
    proposer = make_proposer(name, **proposer_options)
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
                raise RuntimeError(f"--runner ray needs Ray: {install_hint('ray')}") from None
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
    if cfg.proposer in STATIC_PROPOSERS and proposer is None:
        # once here, before the workers start: bad options fail now, not once per document, and the
        # proposer's modules are imported once, by the process that fork-started workers inherit
        make_proposer(cfg.proposer, **cfg.proposer_options)
    check_library_folder(cfg.out)  # before any work: a file, or a folder that holds something else, is refused
    all_docs = list(docs) if docs is not None else select_corpus(cfg)
    with ExitStack() as held:  # the lock before the library is opened: opening it for writing re-indexes
        try:  # only once there is work to store: a failed run leaves no library
            cfg.out.mkdir(parents=True, exist_ok=True)
            held.enter_context(library_lock(cfg.out, f"run {cfg.run_id} ({cfg.proposer}, corpus {cfg.corpus})"))
        except OSError as e:
            raise LibraryNotWritable(f"cannot write the library {cfg.out}: {e.strerror or e} ({e.filename or cfg.out});"
                                     " choose a folder you can write to, or fix its permissions") from None
        lib = Library(cfg.out, cfg.catalog_url)
        held.callback(lib.close)
        return _run(cfg, lib, all_docs, t0, progress, proposer)


def _run(cfg: GenerateConfig, lib: Library, all_docs: list[Any], t0: float, progress: bool,
         proposer: Proposer | None) -> GenerateSummary:
    """The run itself, with the library open and its lock held."""
    summary = GenerateSummary(run_id=cfg.run_id)
    summary.redone_corrupt = lib.set_aside_corrupt(cfg.run_id)  # their documents are attempted again
    done = lib.attempted_docs(cfg.run_id)
    todo = [d for d in all_docs if d.id not in done]
    summary.skipped_resumed = len(all_docs) - len(todo)
    prog, task = _progress(progress, len(todo), f"generate ({cfg.proposer})")
    recorder = _Recorder(lib, cfg, summary, cfg.model, batch_size=cfg.commit_every,
                         on_commit=lambda n: prog.update(task, advance=n, accepted=summary.accepted))
    runner = _Runner(cfg.workers, cfg.executor, cfg.inline_single_worker)
    try:
        with prog:
            if cfg.proposer in STATIC_PROPOSERS and proposer is None:
                args = [(cfg.proposer, d, cfg.seed, cfg.proposer_options, cfg.validation_mode) for d in todo]
                for i, out in runner.map_unordered(static_job, args):
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
            if p.spec is None and (p.meta or {}).get("error_code") in (BACKEND_FAILURE, FailureCode.TOO_LONG):
                # the backend failed, or the prompt did not fit the context window: no repair prompt can help
                yield d, _verdict_outcome(d.id, p, None, d)
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
        repaired = prop.repair_batch([(p, fb) for _, p, fb in retry], seed=stable_seed(cfg.seed, "repair", attempt))
        pending = [(d, r) for (d, _, _), r in zip(retry, repaired, strict=True)]

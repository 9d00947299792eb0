"""What one ``envwright generate`` run is: its options, its documents, its id, and what it did.

Role: the data side of :mod:`envgen.generate` (which runs it and re-exports these names):

* :class:`GenerateConfig`: the run's options (each an ``envwright generate`` flag) and its
  :attr:`~GenerateConfig.run_id`, which identifies the run so a re-run resumes it;
* :func:`corpus_key`: one spelling per corpus for that id;
* :func:`select_corpus`: the documents a run attempts, in a deterministic order, with a diagnosis
  (:class:`~envgen.errors.NoUsableDocuments`) when none is left;
* :class:`GenerateSummary`: what a run did (the table ``envwright generate`` prints).
"""

from __future__ import annotations

import hashlib
import json
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from envgen.errors import NoUsableDocuments

__all__ = ["REASON_CHARS", "REASON_EXAMPLES", "STATIC_PROPOSERS", "GenerateConfig", "GenerateSummary", "corpus_key",
           "select_corpus"]


STATIC_PROPOSERS = ("world", "template")
"""Proposers without a model: each document is proposed and validated in a worker process, validation in
process (their code is the compiler's own rendering)."""

@dataclass
class GenerateConfig:
    """Options of one generation run (each maps to an ``envwright generate`` flag)."""

    corpus: str = "stdlib"  #: ``stdlib``, a PATH (tree, .jsonl, .parquet) or ``hf:NAME``
    proposer: str = "world"  #: ``world`` (the default), ``template`` (blueprint v1, no model) or ``llm``
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
    validation: str = "auto"  #: ``auto`` (inprocess for static proposers, worker otherwise), ``worker``, ``inprocess``
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
        return "inprocess" if self.proposer in STATIC_PROPOSERS else "worker"


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
    #: environments of this run whose spec file was corrupt, set aside (``specs/<id>.json.corrupt``) so their
    #: documents are done again: env id -> why
    redone_corrupt: dict[str, str] = field(default_factory=dict)

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
                       languages=("python",) if cfg.proposer in STATIC_PROPOSERS else None)
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
    from corpora.loaders.registry import get_loader, loader_config
    from corpora.loaders.tree import explain_tree

    try:
        name, source = resolve_spec(corpus)
        if name != "tree" or not source:
            return None
        return explain_tree(loader_config(get_loader("tree"), source, options or {}))
    except (ValueError, OSError):  # a diagnosis must never hide the error it explains
        return None

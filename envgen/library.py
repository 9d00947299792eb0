"""The environment library: spec files plus a catalog in any SQLAlchemy database.

Layout of a library folder::

    LIBRARY/
      specs/<env_id>.json       accepted specs (written atomically)
      rejected/<attempt>.json   rejected candidates with their reasons, for inspection
      catalog.sqlite            the default catalog (or ``catalog_url=`` any SQLAlchemy URL)

Catalog tables: ``envs`` (one row per accepted environment: title, source
document, proposer, model, skill, stream, counts, signature, solve-rate
statistics filled in by evaluation), ``attempts`` (every attempt of every run:
document, proposer, verdict and reasons, retries, tokens, seconds; what makes a
run resumable and what the yield measures read) and ``task_stats``
(per-task solve rates written by evaluation).

Guarantees: a spec file is written atomically before its catalog row is
committed, and on open any spec file without a row is re-indexed, so a killed
run loses nothing. An environment whose tool signatures equal an existing one's
and whose task texts are near-identical is refused with the original's id
(:class:`DuplicateEnv`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from gym_envs.spec import EnvSpec, atomic_write_text, load_spec, save_spec

__all__ = ["DuplicateEnv", "Library", "signature_key", "task_texts", "text_similarity"]

_META = sa.MetaData()
ENVS = sa.Table(
    "envs", _META,
    sa.Column("id", sa.String(96), primary_key=True),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("corpus", sa.String(200)),
    sa.Column("doc_id", sa.String(500), index=True),
    sa.Column("doc_path", sa.String(500)),
    sa.Column("proposer", sa.String(100), index=True),
    sa.Column("model", sa.String(200)),
    sa.Column("skill_id", sa.String(120), index=True),
    sa.Column("stream", sa.String(20)),
    sa.Column("valid", sa.Boolean, nullable=False, default=True),
    sa.Column("reasons", sa.Text, default="[]"),
    sa.Column("n_tools", sa.Integer),
    sa.Column("n_tasks", sa.Integer),
    sa.Column("signature", sa.String(64), index=True),
    sa.Column("task_text", sa.Text),
    sa.Column("created_at", sa.String(40)),
    sa.Column("run_id", sa.String(64)),
    sa.Column("path", sa.Text),
    sa.Column("solve_rate", sa.Float, nullable=True),
    sa.Column("n_evals", sa.Integer, default=0),
    sa.Column("split", sa.String(20), nullable=True),
    sa.Column("grounding", sa.Float, nullable=True),
)
ATTEMPTS = sa.Table(
    "attempts", _META,
    sa.Column("attempt_id", sa.String(64), primary_key=True),
    sa.Column("run_id", sa.String(64), index=True),
    sa.Column("doc_id", sa.String(500), index=True),
    sa.Column("proposer", sa.String(100)),
    sa.Column("model", sa.String(200)),
    sa.Column("skill_id", sa.String(120)),
    sa.Column("stream", sa.String(20)),
    sa.Column("accepted", sa.Boolean, nullable=False),
    sa.Column("env_id", sa.String(96), nullable=True),
    sa.Column("reasons", sa.Text, default="[]"),
    sa.Column("codes", sa.Text, default="[]"),
    sa.Column("retries", sa.Integer, default=0),
    sa.Column("tokens", sa.Integer, default=0),
    sa.Column("seconds", sa.Float, default=0.0),
    sa.Column("created_at", sa.String(40)),
)
TASK_STATS = sa.Table(
    "task_stats", _META,
    sa.Column("env_id", sa.String(96), primary_key=True),
    sa.Column("task_id", sa.String(64), primary_key=True),
    sa.Column("policy", sa.String(200), primary_key=True),
    sa.Column("n", sa.Integer, default=0),
    sa.Column("passes", sa.Integer, default=0),
    sa.Column("reference_passes", sa.Boolean, nullable=True),
    sa.Column("updated_at", sa.String(40)),
)


class DuplicateEnv(ValueError):
    """The environment duplicates one already in the library."""

    def __init__(self, env_id: str, original: str):
        self.env_id = env_id
        self.original = original
        super().__init__(f"environment {env_id!r} duplicates {original!r} (same tool signatures and "
                         "near-identical tasks)")


def signature_key(spec: EnvSpec) -> str:
    """Hash of the sorted tool signatures (names, parameter names and types)."""
    sigs = []
    for t in spec.tools:
        props = t.parameters.get("properties", {})
        params = sorted((k, str(v.get("type", "any"))) for k, v in props.items())
        sigs.append((t.name, params))
    return hashlib.sha256(json.dumps(sorted(sigs)).encode()).hexdigest()


def task_texts(spec: EnvSpec) -> str:
    """All instructions of all tasks, one per line."""
    return "\n".join(turn.instruction for task in spec.tasks for turn in task.turns)


def _shingles(text: str, k: int = 3) -> set[str]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    if len(words) < k:
        return {" ".join(words)} if words else set()
    return {" ".join(words[i:i + k]) for i in range(len(words) - k + 1)}


def text_similarity(a: str, b: str) -> float:
    """Jaccard similarity of word 3-shingles (1.0 = identical text)."""
    sa_, sb = _shingles(a), _shingles(b)
    if not sa_ and not sb:
        return 1.0
    return len(sa_ & sb) / max(1, len(sa_ | sb))


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    """WAL journal with NORMAL sync: commits stay atomic and durable across a process kill (the
    case that matters for a resumable run) at a fraction of the default's fsync cost."""
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


@dataclass
class EnvRow:
    """A catalog row (a subset of columns) as a plain object."""

    id: str
    title: str
    proposer: str | None
    stream: str | None
    n_tools: int
    n_tasks: int
    doc_id: str | None
    skill_id: str | None
    solve_rate: float | None
    created_at: str | None
    path: str | None


class Library:
    """A folder of specs plus a catalog. Safe to reopen after a crash.

    Args:
        root: the library folder (created if missing).
        catalog_url: a SQLAlchemy URL; default ``sqlite:///ROOT/catalog.sqlite``.
        near_duplicate: task-text similarity at or above which same-signature envs are duplicates.
    """

    def __init__(self, root: str | Path, catalog_url: str | None = None, *, near_duplicate: float = 0.8):
        self.root = Path(root)
        (self.root / "specs").mkdir(parents=True, exist_ok=True)
        (self.root / "rejected").mkdir(parents=True, exist_ok=True)
        self.url = catalog_url or f"sqlite:///{(self.root / 'catalog.sqlite').resolve()}"
        self.engine = sa.create_engine(self.url, future=True)
        if self.engine.dialect.name == "sqlite":
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
        _META.create_all(self.engine)
        self.near_duplicate = near_duplicate
        self.reindex()

    # -- writing -------------------------------------------------------------------------------
    def spec_path(self, env_id: str) -> Path:
        return self.root / "specs" / f"{env_id}.json"

    def find_duplicate(self, spec: EnvSpec) -> str | None:
        """The id of an existing env with the same signatures and near-identical tasks, if any."""
        sig = signature_key(spec)
        text = task_texts(spec)
        with self.engine.connect() as c:
            rows = c.execute(sa.select(ENVS.c.id, ENVS.c.task_text).where(ENVS.c.signature == sig)).all()
        for env_id, other in rows:
            if env_id != spec.id and text_similarity(text, other or "") >= self.near_duplicate:
                return env_id
        return None

    def add(self, spec: EnvSpec, *, model: str | None = None, run_id: str | None = None,
            reasons: list[str] | None = None, grounding: float | None = None) -> Path:
        """Add an accepted spec; raises :class:`DuplicateEnv` or ``FileExistsError`` (same id)."""
        original = self.find_duplicate(spec)
        if original is not None:
            raise DuplicateEnv(spec.id, original)
        path = self.spec_path(spec.id)
        if path.exists() and self.get_row(spec.id) is not None:
            raise FileExistsError(f"an environment with id {spec.id!r} is already in {self.root}")
        save_spec(spec, path)
        self._index(spec, path, model=model, run_id=run_id, reasons=reasons or [], grounding=grounding)
        return path

    def _index(self, spec: EnvSpec, path: Path, *, model: str | None, run_id: str | None,
               reasons: list[str], grounding: float | None = None) -> None:
        prov = spec.provenance
        src = spec.source
        row = {
            "id": spec.id, "title": spec.title, "corpus": src.corpus if src else None,
            "doc_id": src.doc_id if src else None, "doc_path": src.path if src else None,
            "proposer": prov.generator, "model": model, "skill_id": prov.skill_id, "stream": prov.stream,
            "valid": True, "reasons": json.dumps(reasons), "n_tools": len(spec.tools),
            "n_tasks": len(spec.tasks), "signature": signature_key(spec), "task_text": task_texts(spec),
            "created_at": prov.created_at or _now(), "run_id": run_id, "path": str(path.relative_to(self.root)),
            "grounding": grounding,
        }
        with self.engine.begin() as c:
            c.execute(sa.delete(ENVS).where(ENVS.c.id == spec.id))
            c.execute(sa.insert(ENVS).values(**row))

    def record_attempt(self, *, attempt_id: str, run_id: str, doc_id: str, proposer: str, accepted: bool,
                       env_id: str | None = None, reasons: Iterable[str] = (), codes: Iterable[str] = (),
                       retries: int = 0, tokens: int = 0, seconds: float = 0.0, model: str | None = None,
                       skill_id: str | None = None, stream: str | None = None,
                       rejected_spec: dict[str, Any] | str | None = None) -> None:
        """Record one attempt (accepted or not); rejected candidates are kept under ``rejected/``."""
        if rejected_spec is not None:
            payload = {"attempt_id": attempt_id, "doc_id": doc_id, "reasons": list(reasons),
                       "candidate": rejected_spec}
            atomic_write_text(self.root / "rejected" / f"{attempt_id}.json", json.dumps(payload, indent=1))
        row = {"attempt_id": attempt_id, "run_id": run_id, "doc_id": doc_id, "proposer": proposer,
               "model": model, "skill_id": skill_id, "stream": stream, "accepted": accepted, "env_id": env_id,
               "reasons": json.dumps(list(reasons)), "codes": json.dumps(sorted(set(codes))),
               "retries": retries, "tokens": tokens, "seconds": seconds, "created_at": _now()}
        with self.engine.begin() as c:
            c.execute(sa.delete(ATTEMPTS).where(ATTEMPTS.c.attempt_id == attempt_id))
            c.execute(sa.insert(ATTEMPTS).values(**row))

    def attempted_docs(self, run_id: str) -> set[str]:
        """Documents already attempted in a run (to resume it)."""
        with self.engine.connect() as c:
            return {r[0] for r in c.execute(sa.select(ATTEMPTS.c.doc_id).where(ATTEMPTS.c.run_id == run_id))}

    def reindex(self) -> int:
        """Index spec files that have no catalog row (after a crash); returns how many."""
        with self.engine.connect() as c:
            known = {r[0] for r in c.execute(sa.select(ENVS.c.id))}
        added = 0
        for path in sorted((self.root / "specs").glob("*.json")):
            if path.stem in known:
                continue
            try:
                spec = load_spec(path)
            except (ValueError, OSError):
                continue
            self._index(spec, path, model=None, run_id=None, reasons=[])
            added += 1
        return added

    # -- reading -------------------------------------------------------------------------------
    def get_row(self, env_id: str) -> dict[str, Any] | None:
        with self.engine.connect() as c:
            row = c.execute(sa.select(ENVS).where(ENVS.c.id == env_id)).mappings().first()
        return dict(row) if row else None

    def load(self, env_id: str) -> EnvSpec:
        return load_spec(self.spec_path(env_id))

    def __len__(self) -> int:
        with self.engine.connect() as c:
            return int(c.execute(sa.select(sa.func.count()).select_from(ENVS)).scalar_one())

    def __iter__(self) -> Iterator[EnvSpec]:
        for row in self.rows():
            yield self.load(row["id"])

    def rows(self, *, proposer: str | None = None, stream: str | None = None, skill: str | None = None,
             min_solve: float | None = None, max_solve: float | None = None, doc: str | None = None,
             sort: str = "created_at", descending: bool = False, limit: int | None = None) -> list[dict[str, Any]]:
        """Catalog rows with filters and sorting (what ``envwright list`` shows)."""
        q = sa.select(ENVS)
        if proposer:
            q = q.where(ENVS.c.proposer.like(f"{proposer}%"))
        if stream:
            q = q.where(ENVS.c.stream == stream)
        if skill:
            q = q.where(ENVS.c.skill_id == skill)
        if doc:
            q = q.where(ENVS.c.doc_id.like(f"%{doc}%"))
        if min_solve is not None:
            q = q.where(ENVS.c.solve_rate >= min_solve)
        if max_solve is not None:
            q = q.where(ENVS.c.solve_rate <= max_solve)
        if sort not in ENVS.c:
            raise ValueError(f"cannot sort by {sort!r}; columns: {[c.name for c in ENVS.c]}")
        col = ENVS.c[sort]
        q = q.order_by(col.desc() if descending else col.asc(), ENVS.c.id)
        if limit:
            q = q.limit(limit)
        with self.engine.connect() as c:
            return [dict(r) for r in c.execute(q).mappings()]

    def attempts(self, run_id: str | None = None) -> list[dict[str, Any]]:
        q = sa.select(ATTEMPTS)
        if run_id:
            q = q.where(ATTEMPTS.c.run_id == run_id)
        with self.engine.connect() as c:
            return [dict(r) for r in c.execute(q.order_by(ATTEMPTS.c.created_at)).mappings()]

    # -- evaluation statistics -----------------------------------------------------------------
    def record_task_result(self, env_id: str, task_id: str, policy: str, *, n: int, passes: int,
                           reference_passes: bool | None = None) -> None:
        """Accumulate a policy's results on a task and refresh the env's solve rate.

        The policy ``"reference"`` (the scripted reference trajectory) is stored, and read by
        :meth:`suspicious_tasks`, but is not counted in the env's solve rate.
        """
        with self.engine.begin() as c:
            key = (TASK_STATS.c.env_id == env_id) & (TASK_STATS.c.task_id == task_id) & (TASK_STATS.c.policy == policy)
            old = c.execute(sa.select(TASK_STATS).where(key)).mappings().first()
            if old:
                c.execute(sa.update(TASK_STATS).where(key).values(
                    n=old["n"] + n, passes=old["passes"] + passes, updated_at=_now(),
                    reference_passes=reference_passes if reference_passes is not None else old["reference_passes"]))
            else:
                c.execute(sa.insert(TASK_STATS).values(env_id=env_id, task_id=task_id, policy=policy, n=n,
                                                       passes=passes, reference_passes=reference_passes,
                                                       updated_at=_now()))
            tot = c.execute(sa.select(sa.func.sum(TASK_STATS.c.n), sa.func.sum(TASK_STATS.c.passes))
                            .where((TASK_STATS.c.env_id == env_id) & (TASK_STATS.c.policy != "reference"))).one()
            if tot[0]:
                c.execute(sa.update(ENVS).where(ENVS.c.id == env_id).values(
                    solve_rate=float(tot[1]) / float(tot[0]), n_evals=int(tot[0])))

    def task_stats(self, env_id: str | None = None) -> list[dict[str, Any]]:
        q = sa.select(TASK_STATS)
        if env_id:
            q = q.where(TASK_STATS.c.env_id == env_id)
        with self.engine.connect() as c:
            return [dict(r) for r in c.execute(q).mappings()]

    def suspicious_tasks(self) -> list[dict[str, Any]]:
        """Tasks every evaluated policy fails although the reference passes (check candidates)."""
        rows = self.task_stats()
        by_task: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for r in rows:
            by_task.setdefault((r["env_id"], r["task_id"]), []).append(r)
        out = []
        for (env_id, task_id), rs in sorted(by_task.items()):
            policies = [r for r in rs if r["policy"] != "reference"]
            ref_ok = any(r["reference_passes"] for r in rs) or any(
                r["policy"] == "reference" and r["passes"] == r["n"] and r["n"] > 0 for r in rs)
            if policies and ref_ok and all(r["passes"] == 0 for r in policies):
                out.append({"env_id": env_id, "task_id": task_id, "policies": [r["policy"] for r in policies]})
        return out

    def set_split(self, env_id: str, split: str) -> None:
        with self.engine.begin() as c:
            c.execute(sa.update(ENVS).where(ENVS.c.id == env_id).values(split=split))

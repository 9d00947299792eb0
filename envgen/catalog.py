"""The catalog's tables and the SQL helpers the library writes them with (any SQLAlchemy database).

Tables: ``envs`` (one row per accepted environment), ``attempts`` (every attempt of
every run), ``task_stats`` (per-task, per-policy solve counts written by evaluation)
and ``solve_history`` (one row per evaluation result). :func:`create_tables` is safe
when another process creates the same catalog at the same moment; :func:`upsert`
writes rows with dialect-aware ``INSERT ... ON CONFLICT`` (SQLite, PostgreSQL) or
delete + insert elsewhere; :func:`make_engine` sets the WAL pragmas on SQLite and
checks server connections before use, or (``readonly=True``) opens a SQLite file so that reading it
writes nothing, not even a file beside it; :func:`probe_write` makes a catalog that refuses writes say so
when it is opened; :func:`missing_schema` and :func:`copy_catalog` let a read-only opening read an
older version's catalog without upgrading it in place. :mod:`envgen.library` (which owns the files) is the only
module that opens a catalog; the generator builds the rows below in its workers.

Rows: :class:`PreparedEnv` (an environment ready to be stored: its spec file's text and its
:func:`env_entry` columns, :func:`signature_key` among them) and :class:`AttemptRecord` (one attempt
of a run). Evaluation statistics: :func:`record_task_result` accumulates a policy's results and
refreshes an env's solve rate; :func:`task_stats`, :func:`solve_history` and
:func:`suspicious_tasks` read them back.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from gym_envs.spec import EnvSpec

__all__ = ["ATTEMPTS", "ENVS", "SOLVE_HISTORY", "TASK_STATS", "AttemptRecord", "PreparedEnv", "copy_catalog",
           "create_tables", "env_entry", "make_engine", "missing_schema", "now", "probe_write", "record_task_result",
           "signature_key", "solve_history", "sqlite_file", "suspicious_tasks", "task_stats", "task_texts", "upsert"]

_META = sa.MetaData()
ENVS = sa.Table(
    "envs", _META,
    sa.Column("id", sa.String(96), primary_key=True),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("corpus", sa.Text),
    sa.Column("doc_id", sa.Text, index=True),
    sa.Column("doc_path", sa.Text),
    sa.Column("proposer", sa.Text, index=True),
    sa.Column("model", sa.Text),
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
    sa.Column("structure", sa.String(20), nullable=True),
    sa.Column("repairs", sa.Text, nullable=True),
    sa.Column("mutation_score", sa.Float, nullable=True),  #: the gate's killed / mutants (check adequacy)
    sa.Column("mutants", sa.Integer, nullable=True),  #: wrong trajectories the gate tried
    sa.Column("difficulty", sa.String(10), nullable=True),  #: the compiler's difficulty (easy/medium/hard)
    sa.Column("spec_sha256", sa.String(64), nullable=True),  #: SHA-256 of the spec file as written (corruption check)
)
ATTEMPTS = sa.Table(
    "attempts", _META,
    sa.Column("attempt_id", sa.String(64), primary_key=True),
    sa.Column("run_id", sa.String(64), index=True),
    sa.Column("doc_id", sa.Text, index=True),
    sa.Column("proposer", sa.Text),
    sa.Column("model", sa.Text),
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
    sa.Column("structure", sa.String(20), nullable=True),
    sa.Column("grounding", sa.Float, nullable=True),
    sa.Column("mutation_score", sa.Float, nullable=True),
    sa.Column("repairs", sa.Text, nullable=True),  #: what the blueprint compiler changed (JSON list)
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
SOLVE_HISTORY = sa.Table(
    "solve_history", _META,
    sa.Column("row_id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("env_id", sa.String(96), index=True),
    sa.Column("task_id", sa.String(64)),
    sa.Column("policy", sa.String(200)),
    sa.Column("n", sa.Integer),
    sa.Column("passes", sa.Integer),
    sa.Column("at", sa.String(40)),
)


def create_tables(engine: sa.Engine, attempts: int = 6) -> None:
    """Create the catalog's tables, and add the columns an older catalog lacks (all are nullable).

    A concurrent creator winning the race is not an error.
    """
    for i in range(attempts):
        try:
            _META.create_all(engine)
            _add_missing_columns(engine)
            return
        except sa.exc.DBAPIError:
            if i == attempts - 1:
                raise
            time.sleep(0.05 * (i + 1))  # the other process's CREATE is committed by now; checkfirst skips it


def probe_write(engine: sa.Engine) -> None:
    """Raise the database's own error when the catalog cannot be written (a read-only file or user).

    A write that changes nothing (deleting an attempt id no attempt has), rolled back: it takes the
    write lock, so a catalog that refuses writes says so when it is opened, not after a run's first batch.
    """
    with engine.connect() as c:
        c.execute(sa.delete(ATTEMPTS).where(ATTEMPTS.c.attempt_id == ""))
        c.rollback()


def missing_schema(engine: sa.Engine) -> list[tuple[sa.Table, sa.Column[Any] | None]]:
    """What this version's catalog has and ``engine``'s lacks: ``(table, None)`` for a missing table,
    ``(table, column)`` for a missing column of an existing one (empty: the catalog is current). Reads only."""
    inspector = sa.inspect(engine)
    missing: list[tuple[sa.Table, sa.Column[Any] | None]] = []
    for table in _META.sorted_tables:
        if not inspector.has_table(table.name):
            missing.append((table, None))
            continue
        have = {col["name"] for col in inspector.get_columns(table.name)}
        missing += [(table, col) for col in table.columns if col.name not in have]
    return missing


def _add_missing_columns(engine: sa.Engine) -> None:
    """Bring a catalog written by an older version up to this one (``ALTER TABLE ... ADD COLUMN``)."""
    missing = [(table.name, col) for table, col in missing_schema(engine) if col is not None]
    if not missing:
        return
    with engine.begin() as c:
        for name, col in missing:
            kind = col.type.compile(dialect=engine.dialect)
            c.execute(sa.text(f'ALTER TABLE "{name}" ADD COLUMN "{col.name}" {kind}'))


def copy_catalog(source: sa.Engine, target: sa.Engine, *, chunk: int = 5000) -> None:
    """Copy the rows of ``source`` (only read, any version) into ``target`` (given this version's tables)."""
    create_tables(target)
    missing = missing_schema(source)
    absent = {table.name for table, col in missing if col is None}
    lacking = {(table.name, col.name) for table, col in missing if col is not None}
    with source.connect() as src, target.begin() as dst:
        for table in _META.sorted_tables:
            if table.name in absent:
                continue
            columns = [col for col in table.columns if (table.name, col.name) not in lacking]
            rows = src.execute(sa.select(*columns).execution_options(yield_per=chunk)).mappings()
            for part in rows.partitions(chunk):
                dst.execute(table.insert(), [dict(r) for r in part])


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite catalog URL (None: a server's catalog, an in-memory one, or a ``file:`` URI,
    which is opened as written)."""
    u = sa.engine.make_url(url)
    if u.get_backend_name() != "sqlite" or not u.database or u.database == ":memory:" \
            or str(u.query.get("uri", "")).lower() in ("true", "1"):
        return None
    return Path(u.database)


def make_engine(url: str, *, readonly: bool = False) -> sa.Engine:
    """An engine for a catalog URL: WAL pragmas on SQLite; on servers, connections checked before use.

    ``postgresql://`` (no driver) uses psycopg 3 when psycopg2, SQLAlchemy's default, is missing.
    ``readonly``: no pragma is set (setting the journal mode is a write), and a SQLite file is opened
    by :func:`_connect_readonly`, which creates no file beside it. A server's catalog is opened as usual
    (the caller writes nothing; its user may be one that can only read).
    """
    file = sqlite_file(url) if readonly else None
    if file is not None:
        # a connection per use: each decides afresh whether a writer's WAL must be read (see _connect_readonly)
        return sa.create_engine("sqlite://", creator=lambda: _connect_readonly(file), poolclass=sa.pool.NullPool)
    u = sa.engine.make_url(url)
    if u.drivername == "postgresql" and find_spec("psycopg2") is None and find_spec("psycopg") is not None:
        u = u.set(drivername="postgresql+psycopg")
    sqlite = u.get_backend_name() == "sqlite"
    try:
        engine = sa.create_engine(u, pool_pre_ping=not sqlite)
    except ImportError as e:
        from envgen.errors import install_hint

        extra = f" ({install_hint('psycopg')})" if u.get_backend_name() == "postgresql" else ""
        raise ValueError(f"the catalog {u.render_as_string(hide_password=True)!r} needs a database driver that is "
                         f"not installed: {e}{extra}") from None
    if sqlite and not readonly:
        sa.event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _connect_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection to the SQLite catalog ``path`` that creates no file beside it.

    The catalog is in WAL mode, and SQLite opening a WAL database read-only (``mode=ro``) creates its
    ``-wal`` and ``-shm`` files when they are missing, and leaves them behind (in a read-only folder it
    cannot, and fails). So: without a ``-wal`` file no writer is connected and every committed
    transaction is in the main file (the last connection to close checkpoints the WAL into it and deletes
    it), and the file is opened ``immutable=1``: read as it is, no locks, no ``-wal``/``-shm``. With one,
    a writer may be at work (or was killed) and committed transactions may be only in the WAL: it is
    opened ``mode=ro``, which reads the WAL through the ``-shm`` index beside it, locking as a writer
    expects (the caller makes sure the ``-shm`` exists, see :meth:`envgen.library.Library`).

    A writer that connects after this check and checkpoints while this connection reads could be read
    half-way: the engine pools no connections, so that window is one query long.
    """
    wal = path.with_name(path.name + "-wal")
    options = "mode=ro" if wal.exists() else "mode=ro&immutable=1"
    return sqlite3.connect(f"{path.resolve().as_uri()}?{options}", uri=True)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    """WAL journal with NORMAL sync: commits stay atomic and durable across a process kill (the
    case that matters for a resumable run) at a fraction of the default's fsync cost."""
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def now() -> str:
    """The current UTC time, ISO 8601 to the second (what the catalog stores)."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


@functools.lru_cache(maxsize=32)
def _upsert_statement(dialect: str, table: sa.Table, columns: tuple[str, ...]) -> Any:
    """``INSERT ... ON CONFLICT (primary key) DO UPDATE SET columns`` for SQLite or PostgreSQL."""
    from sqlalchemy.dialects import postgresql, sqlite

    stmt = (sqlite.insert if dialect == "sqlite" else postgresql.insert)(table)
    keys = [c.name for c in table.primary_key.columns]
    if not columns:
        return stmt.on_conflict_do_nothing(index_elements=keys)
    return stmt.on_conflict_do_update(index_elements=keys, set_={k: stmt.excluded[k] for k in columns})


def upsert(conn: sa.Connection, table: sa.Table, rows: Sequence[dict[str, Any]]) -> None:
    """Insert ``rows`` (all with the same keys), replacing the columns they carry in existing rows with
    the same primary key. Other columns of an existing row (solve rates, splits) are kept."""
    if not rows:
        return
    keys = [c.name for c in table.primary_key.columns]
    # one row per key (the last wins): a multi-row upsert may not touch the same row twice (PostgreSQL)
    rows = list({tuple(r[k] for k in keys): r for r in rows}.values())
    dialect = conn.dialect.name
    if dialect in ("sqlite", "postgresql"):
        conn.execute(_upsert_statement(dialect, table, tuple(k for k in rows[0] if k not in keys)), list(rows))
        return
    # portable fallback (the caller's transaction makes it atomic): delete the keys, insert the rows
    where = sa.and_(*(table.c[k] == sa.bindparam(f"_key_{k}") for k in keys))
    conn.execute(table.delete().where(where), [{f"_key_{k}": r[k] for k in keys} for r in rows])
    conn.execute(table.insert(), list(rows))


# -- rows --------------------------------------------------------------------------------------------
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


def env_entry(spec: EnvSpec) -> dict[str, Any]:
    """The catalog columns of an environment that follow from its spec alone."""
    prov = spec.provenance
    src = spec.source
    return {
        "id": spec.id, "title": spec.title, "corpus": src.corpus if src else None,
        "doc_id": src.doc_id if src else None, "doc_path": src.path if src else None,
        "proposer": prov.generator, "skill_id": prov.skill_id, "stream": prov.stream,
        "n_tools": len(spec.tools), "n_tasks": len(spec.tasks), "signature": signature_key(spec),
        "task_text": task_texts(spec), "created_at": prov.created_at or now(),
    }


@dataclass(frozen=True)
class PreparedEnv:
    """An environment ready to be stored: its spec file's text and its catalog columns.

    Built once with :meth:`of`, where the spec is at hand (a generation worker), so the process
    that writes the library neither re-parses nor re-serialises the spec.
    """

    id: str
    text: str  #: the spec file's content (what :func:`gym_envs.spec.save_spec` writes)
    entry: dict[str, Any]  #: :func:`env_entry` of the spec

    @classmethod
    def of(cls, spec: EnvSpec) -> PreparedEnv:
        return cls(spec.id, spec.to_json() + "\n", env_entry(spec))

    @property
    def signature(self) -> str:
        return str(self.entry["signature"])

    @property
    def task_text(self) -> str:
        return str(self.entry["task_text"] or "")


@dataclass
class AttemptRecord:
    """One attempt of a run, for :meth:`envgen.library.Library.record_batch` (which may turn an acceptance into a
    ``duplicate`` rejection and fills in ``env_id``)."""

    attempt_id: str
    run_id: str
    doc_id: str
    proposer: str
    accepted: bool
    env: PreparedEnv | None = None  #: the accepted environment
    reasons: list[str] = field(default_factory=list)
    codes: list[str] = field(default_factory=list)
    retries: int = 0
    tokens: int = 0
    seconds: float = 0.0
    model: str | None = None
    skill_id: str | None = None
    stream: str | None = None
    rejected_spec: dict[str, Any] | str | None = None  #: kept under ``rejected/`` for inspection
    grounding: float | None = None
    env_id: str | None = None
    duplicate: bool = False  #: set when the library refused the environment
    structure: str | None = None  #: what the proposer wrote: ``blueprint`` or ``spec``
    repairs: list[str] = field(default_factory=list)  #: what the blueprint compiler changed
    gate: dict[str, Any] | None = None  #: the gate's report (``Verdict.to_dict()``), kept under ``gate/``
    mutation_score: float | None = None  #: the gate's killed / mutants (:attr:`envgen.gate.Verdict`)
    mutants: int | None = None  #: wrong trajectories the gate tried
    difficulty: str | None = None  #: the blueprint compiler's difficulty level

    def attempt_row(self) -> dict[str, Any]:
        return {"attempt_id": self.attempt_id, "run_id": self.run_id, "doc_id": self.doc_id,
                "proposer": self.proposer, "model": self.model, "skill_id": self.skill_id, "stream": self.stream,
                "accepted": self.accepted, "env_id": self.env_id, "reasons": json.dumps(list(self.reasons)),
                "codes": json.dumps(sorted(set(self.codes))), "retries": self.retries, "tokens": self.tokens,
                "seconds": self.seconds, "created_at": now(), "structure": self.structure,
                "grounding": self.grounding, "mutation_score": self.mutation_score,
                "repairs": json.dumps(list(self.repairs))}


# -- evaluation statistics ---------------------------------------------------------------------------
def record_task_result(engine: sa.Engine, env_id: str, task_id: str, policy: str, *, n: int, passes: int,
                       reference_passes: bool | None = None) -> None:
    """Accumulate a policy's results on a task and refresh the env's solve rate (``reference`` not counted)."""
    with engine.begin() as c:
        key = (TASK_STATS.c.env_id == env_id) & (TASK_STATS.c.task_id == task_id) & (TASK_STATS.c.policy == policy)
        old = c.execute(sa.select(TASK_STATS).where(key)).mappings().first()
        if old:
            c.execute(sa.update(TASK_STATS).where(key).values(
                n=old["n"] + n, passes=old["passes"] + passes, updated_at=now(),
                reference_passes=reference_passes if reference_passes is not None else old["reference_passes"]))
        else:
            c.execute(sa.insert(TASK_STATS).values(env_id=env_id, task_id=task_id, policy=policy, n=n,
                                                   passes=passes, reference_passes=reference_passes,
                                                   updated_at=now()))
        c.execute(sa.insert(SOLVE_HISTORY).values(env_id=env_id, task_id=task_id, policy=policy, n=n,
                                                  passes=passes, at=now()))
        tot = c.execute(sa.select(sa.func.sum(TASK_STATS.c.n), sa.func.sum(TASK_STATS.c.passes))
                        .where((TASK_STATS.c.env_id == env_id) & (TASK_STATS.c.policy != "reference"))).one()
        if tot[0]:
            c.execute(sa.update(ENVS).where(ENVS.c.id == env_id).values(
                solve_rate=float(tot[1]) / float(tot[0]), n_evals=int(tot[0])))


def task_stats(engine: sa.Engine, env_id: str | None = None) -> list[dict[str, Any]]:
    """The ``task_stats`` rows (of one env or all)."""
    q = sa.select(TASK_STATS)
    if env_id:
        q = q.where(TASK_STATS.c.env_id == env_id)
    with engine.connect() as c:
        return [dict(r) for r in c.execute(q).mappings()]


def solve_history(engine: sa.Engine, env_id: str | None = None) -> list[dict[str, Any]]:
    """Every evaluation result recorded (oldest first), of one env or all."""
    q = sa.select(SOLVE_HISTORY).order_by(SOLVE_HISTORY.c.row_id)
    if env_id:
        q = q.where(SOLVE_HISTORY.c.env_id == env_id)
    with engine.connect() as c:
        return [dict(r) for r in c.execute(q).mappings()]


def suspicious_tasks(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Of ``task_stats`` rows: the tasks every evaluated policy fails although the reference passes."""
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

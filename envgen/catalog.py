"""The catalog's tables and the SQL helpers the library writes them with (any SQLAlchemy database).

Tables: ``envs`` (one row per accepted environment), ``attempts`` (every attempt of
every run), ``task_stats`` (per-task, per-policy solve counts written by evaluation)
and ``solve_history`` (one row per evaluation result). :func:`create_tables` is safe
when another process creates the same catalog at the same moment; :func:`upsert`
writes rows with dialect-aware ``INSERT ... ON CONFLICT`` (SQLite, PostgreSQL) or
delete + insert elsewhere; :func:`make_engine` sets the WAL pragmas on SQLite and
checks server connections before use. :mod:`envgen.library` is the only user.
"""

from __future__ import annotations

import datetime as dt
import functools
import time
from collections.abc import Sequence
from importlib.util import find_spec
from typing import Any

import sqlalchemy as sa

__all__ = ["ATTEMPTS", "ENVS", "SOLVE_HISTORY", "TASK_STATS", "create_tables", "make_engine", "now", "upsert"]

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


def _add_missing_columns(engine: sa.Engine) -> None:
    """Bring a catalog written by an older version up to this one (``ALTER TABLE ... ADD COLUMN``)."""
    inspector = sa.inspect(engine)
    missing = []
    for table in _META.sorted_tables:
        if inspector.has_table(table.name):
            have = {col["name"] for col in inspector.get_columns(table.name)}
            missing += [(table.name, col) for col in table.columns if col.name not in have]
    if not missing:
        return
    with engine.begin() as c:
        for name, col in missing:
            kind = col.type.compile(dialect=engine.dialect)
            c.execute(sa.text(f'ALTER TABLE "{name}" ADD COLUMN "{col.name}" {kind}'))


def make_engine(url: str) -> sa.Engine:
    """An engine for a catalog URL: WAL pragmas on SQLite; on servers, connections checked before use.

    ``postgresql://`` (no driver) uses psycopg 3 when psycopg2, SQLAlchemy's default, is missing.
    """
    u = sa.engine.make_url(url)
    if u.drivername == "postgresql" and find_spec("psycopg2") is None and find_spec("psycopg") is not None:
        u = u.set(drivername="postgresql+psycopg")
    sqlite = u.get_backend_name() == "sqlite"
    try:
        engine = sa.create_engine(u, pool_pre_ping=not sqlite)
    except ImportError as e:
        extra = " (pip install 'envwright[postgres]')" if u.get_backend_name() == "postgresql" else ""
        raise ValueError(f"the catalog {u.render_as_string(hide_password=True)!r} needs a database driver that is "
                         f"not installed: {e}{extra}") from None
    if sqlite:
        sa.event.listen(engine, "connect", _sqlite_pragmas)
    return engine


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

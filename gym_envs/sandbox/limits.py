"""The sandbox's resource limits: :class:`Limits` for the executor, :class:`SqlLimits` for every connection.

Both are frozen dataclasses that cross the worker pipe as JSON (:meth:`Limits.to_dict` /
:meth:`Limits.from_dict`); every field is documented where it is declared.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Limits", "SqlLimits"]


@dataclass(frozen=True)
class SqlLimits:
    """Limits applied to every connection and every statement of untrusted SQL, and how a connection keeps
    its table digests."""

    max_sql_length: int = 20_000  #: characters of one statement's text
    max_value_length: int = 1_000_000  #: bytes of one string or blob value (SQLITE_LIMIT_LENGTH)
    max_variables: int = 100  #: bound parameters of one statement
    max_rows: int = 10_000  #: rows one query may return
    max_result_bytes: int = 16 << 20  #: bytes of text and blob values one query may return
    max_columns: int = 100  #: columns of a table or a result
    max_like_pattern: int = 100  #: bytes of a LIKE or GLOB pattern
    max_db_pages: int = 16_384  #: pages of 4 KiB (64 MiB)
    max_format_width: int = 10_000  #: width and precision of a printf/format conversion
    statement_timeout_s: float = 2.0  #: wall clock of one statement (the progress handler's deadline)
    progress_interval: int = 2_000  #: SQLite virtual-machine steps between deadline checks
    #: keep each table's digest until its content may change (:mod:`gym_envs.sandbox.digests`); False reads
    #: every table at every digest (the same digests, for measuring what the cache saves)
    digest_cache: bool = True


@dataclass(frozen=True)
class Limits:
    """Resource limits of the executor; every field is per call unless it says otherwise."""

    call_timeout_s: float = 2.0  #: wall clock per request, enforced by the parent (worker mode)
    cpu_seconds: int = 10  #: CPU seconds per request (RLIMIT_CPU, worker mode)
    memory_bytes: int = 1 << 30  #: address space of a worker (RLIMIT_AS)
    max_open_files: int = 64  #: RLIMIT_NOFILE of a worker
    max_output_chars: int = 2_000  #: printed output and exception text kept
    max_result_bytes: int = 65_536  #: size of a tool result as compact JSON
    max_sequence: int = 10_000_000  #: elements a guarded `*`, `range`, `bytes` may create
    max_int_bits: int = 100_000  #: bits of an integer produced by `*`, `**` or `<<`
    recursion_limit: int = 300  #: Python frames available to untrusted code (worker mode)
    sql: SqlLimits = field(default_factory=SqlLimits)

    def to_dict(self) -> dict[str, Any]:
        """A plain dict (JSON), as :meth:`from_dict` reads it."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Limits:
        """The limits :meth:`to_dict` wrote."""
        d = dict(d)
        sql = SqlLimits(**d.pop("sql", {}))
        return cls(sql=sql, **d)

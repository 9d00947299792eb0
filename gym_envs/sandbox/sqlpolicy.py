"""What untrusted SQL may do: the authorizer's allow-lists, the SQL functions, and the statement filter.

* :func:`authorize` is the authorizer's decision, an allow-list by action: ``SELECT`` and recursive CTEs;
  reads of the schema's own tables (and ``sqlite_schema``) in ``main``;
  writes of the schema's tables in ``rw`` mode; ``CREATE TABLE`` / ``CREATE INDEX`` in ``setup`` mode;
  calls of the functions in :data:`ALLOWED_FUNCTIONS`. Everything else is denied, whatever the SQLite
  build compiles in (``sqlite_stmt``, ``dbstat``, ``fts3_tokenizer``, ``load_extension``...).
* :func:`install_functions` makes the same allow-list hold where the authorizer is not asked (a column's
  ``DEFAULT`` expression is compiled into the INSERT unseen): every other function the build lists is
  replaced on the connection by one that refuses; ``printf``/``format`` run SQLite's own code on a
  canonical format whose widths and precisions are checked literals (:func:`canonical_printf`), and the
  date and time functions refuse ``'now'``, ``'localtime'`` and ``'utc'`` (the clock and the host's time
  zone) before running SQLite's own.
* :func:`leading_keyword` is the filter applied before a statement is prepared (VACUUM has no
  authorizer code); :func:`state_error` turns ``sqlite3`` exceptions into :class:`StateError`.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from typing import Any

from gym_envs.errors import StateError

__all__ = [
    "ALLOWED_FUNCTIONS",
    "DATE_FUNCTIONS",
    "FormatRefused",
    "authorize",
    "canonical_printf",
    "check_date_arguments",
    "install_functions",
    "leading_keyword",
    "quote_identifier",
    "split_sql",
    "state_error",
]

_C = sqlite3
_OK, _DENY = sqlite3.SQLITE_OK, sqlite3.SQLITE_DENY
_WRITES = frozenset({_C.SQLITE_INSERT, _C.SQLITE_UPDATE, _C.SQLITE_DELETE})
_SETUP_ONLY = frozenset({_C.SQLITE_CREATE_TABLE, _C.SQLITE_CREATE_INDEX, _C.SQLITE_REINDEX})
_ALWAYS_OK = frozenset({_C.SQLITE_SELECT, _C.SQLITE_RECURSIVE})

#: Functions untrusted SQL may call: SQLite's core scalar, aggregate, window, math, JSON and date/time
#: functions, minus everything that reads the clock, entropy or the connection's history (``random``,
#: ``randomblob``, ``current_*``, ``total_changes``), the build (``sqlite_version``...), or memory
#: (``fts3_tokenizer``, ``load_extension``). ``changes()`` and ``last_insert_rowid()`` are reset per episode.
ALLOWED_FUNCTIONS = frozenset({
    # core scalar
    "abs", "changes", "char", "coalesce", "concat", "concat_ws", "format", "glob", "hex", "ifnull", "iif", "instr",
    "last_insert_rowid", "length", "like", "likelihood", "likely", "lower", "ltrim", "max", "min", "nullif",
    "octet_length", "printf", "quote", "replace", "round", "rtrim", "sign", "soundex", "substr", "substring",
    "trim", "typeof", "unhex", "unicode", "unlikely", "upper", "zeroblob",
    # aggregate and window
    "avg", "count", "group_concat", "string_agg", "sum", "total", "row_number", "rank", "dense_rank",
    "percent_rank", "cume_dist", "ntile", "lag", "lead", "first_value", "last_value", "nth_value",
    # math
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "ceiling", "cos", "cosh", "degrees", "exp",
    "floor", "ln", "log", "log10", "log2", "mod", "pi", "pow", "power", "radians", "sin", "sinh", "sqrt", "tan",
    "tanh", "trunc",
    # JSON
    "json", "json_array", "json_array_length", "json_extract", "json_insert", "json_object", "json_patch",
    "json_quote", "json_remove", "json_replace", "json_set", "json_type", "json_valid", "json_group_array",
    "json_group_object", "->", "->>",
    # date and time (replaced: see DATE_FUNCTIONS)
    "date", "time", "datetime", "julianday", "unixepoch", "strftime", "timediff",
})
#: The date and time functions: they run SQLite's own code once their arguments are known not to read the
#: clock or the host's time zone.
DATE_FUNCTIONS = frozenset({"date", "time", "datetime", "julianday", "unixepoch", "strftime", "timediff"})
#: table-valued functions untrusted SQL may read. None: a virtual table's constructor declares its schema with
#: writes of ``sqlite_schema``, which no mode but ``setup`` allows, so ``json_each`` and the rest cannot be built.
_TABLE_FUNCTIONS: frozenset[str] = frozenset()
_SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema"})
_HIDDEN_PREFIXES = ("pragma_", "sqlite_", "envwright_")  #: table-valued pragmas, SQLite's own, the host's
#: used when the build cannot list its functions (PRAGMA function_list): the refusals that matter most
_KNOWN_REFUSED = ("random", "randomblob", "current_date", "current_time", "current_timestamp", "total_changes",
                  "load_extension", "fts3_tokenizer", "sqlite_version", "sqlite_source_id", "sqlite_offset",
                  "sqlite_compileoption_get", "sqlite_compileoption_used", "sqlite_log")


def authorize(mode: str, readable: set[str], action: int, arg1: str | None, arg2: str | None,
              dbname: str | None) -> int:
    """The authorizer's verdict for one action of a statement prepared in ``mode`` (``setup``, ``rw``,
    ``ro``); ``readable`` holds the lower-cased names of the schema's tables (the ``setup`` mode adds each
    table it creates). The host's own statements never get here."""
    if action == _C.SQLITE_READ:
        if arg1 is None:
            return _DENY
        name = arg1.lower()
        if name in readable or name in _SCHEMA_TABLES or name in _TABLE_FUNCTIONS:
            return _OK if dbname in ("main", None) else _DENY  # `temp` holds only the host's scratch table
        if dbname is not None:
            return _DENY
        # No database: SQLite names the table a statement reads no column of (`SELECT count(*) FROM x`),
        # which may also be a CTE or a subquery; those read only what their own text reads, authorized
        # on its own. Every other object of the connection is a table above, the host's temp table or a
        # virtual table of the build (sqlite_stmt, dbstat, pragma_*), all refused.
        return _DENY if name in _virtual_tables() or name.startswith(_HIDDEN_PREFIXES) else _OK
    if action == _C.SQLITE_FUNCTION:
        return _OK if (arg2 or "").lower() in ALLOWED_FUNCTIONS else _DENY
    if action in _ALWAYS_OK:
        return _OK
    if action in _WRITES:
        if mode == "ro" or dbname != "main":
            return _DENY
        if mode == "setup":  # CREATE writes sqlite_schema
            return _OK
        name = (arg1 or "").lower()
        return _OK if name in readable and not name.startswith("sqlite_") else _DENY
    if action in _SETUP_ONLY and mode == "setup" and (dbname == "main" or action == _C.SQLITE_REINDEX):
        if action == _C.SQLITE_CREATE_TABLE and arg1:
            readable.add(arg1.lower())  # its CHECK and generated-column expressions read it
        return _OK
    return _DENY


# -- printf / format -------------------------------------------------------------------------------------

class FormatRefused(ValueError):
    """A printf/format call whose width or precision is past the limit."""


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_FLAG_CHARS = frozenset(b"-+ #!0,")
# SQLite's conversions and what each takes from the arguments: one value, none, or the end of the output
# (an unknown letter, and the internal-only T and S, stop the formatting there).
_TAKES_ARG = frozenset(b"dsgzqQwcouxXfeEGipr")
_TAKES_NONE = frozenset(b"n%")
_SPACES = b" \t\n\v\f\r"
_DIGITS = re.compile(rb"[0-9]*")


def _int64(value: Any) -> int:
    """``sqlite3_value_int64`` of a function argument, as SQLite computes it for a ``*`` width."""
    if value is None:
        return 0
    if isinstance(value, int):
        return max(_INT64_MIN, min(_INT64_MAX, value))
    if isinstance(value, float):
        if value != value or value <= _INT64_MIN:
            return _INT64_MIN
        return _INT64_MAX if value >= _INT64_MAX else int(value)
    raw = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else bytes(value)
    raw = raw.lstrip(_SPACES)
    sign = -1 if raw[:1] == b"-" else 1
    if raw[:1] in (b"-", b"+"):
        raw = raw[1:]
    digits = _DIGITS.match(raw).group(0)  # type: ignore[union-attr]
    if not digits:
        return 0
    if len(digits) > 25:
        return _INT64_MIN if sign < 0 else _INT64_MAX
    return max(_INT64_MIN, min(_INT64_MAX, sign * int(digits)))


def _number(digits: bytes) -> int:
    """A width or precision written as digits (past 18 digits, a value past any cap)."""
    return int(digits or b"0") if len(digits) <= 18 else 1 << 62


def _as_int32(v: int) -> int:
    return ((v + (1 << 31)) % (1 << 32)) - (1 << 31)


def _parse_spec(fmt: bytes, i: int) -> tuple[int, list[Any]]:
    """One conversion of ``fmt`` after its ``%`` (at ``i``), parsed the way SQLite's printf does: flags,
    then a width (digits or ``*``), ``.`` and a precision (digits or ``*``), ``l``/``ll``, the conversion
    letter. Returns ``(index after it, [flags, width, precision, longs, letter])``; width and precision
    are ``None``, ``"*"`` or an int."""
    n = len(fmt)
    flags = bytearray()
    while i < n and fmt[i] in _FLAG_CHARS:
        flags.append(fmt[i])
        i += 1
    width: Any = None
    if i < n and fmt[i] == ord("*"):
        width, i = "*", i + 1
    else:
        m = _DIGITS.match(fmt, i)
        if m.end() > i:  # type: ignore[union-attr]
            width, i = _number(m.group(0)), m.end()  # type: ignore[union-attr]
    precision: Any = None
    if i < n and fmt[i] == ord("."):
        i += 1
        if i < n and fmt[i] == ord("*"):
            precision, i = "*", i + 1
        else:
            m = _DIGITS.match(fmt, i)
            precision, i = _number(m.group(0)), m.end()  # type: ignore[union-attr]
    longs = 0
    while longs < 2 and i < n and fmt[i] == ord("l"):
        longs, i = longs + 1, i + 1
    letter = fmt[i] if i < n else 0
    return i + 1, [bytes(flags), width, precision, longs, letter]


_PARSED: dict[bytes, list[Any]] = {}  #: format text -> its pieces (literal bytes, specs, None for a stop)


def _pieces(fmt: bytes) -> list[Any]:
    out = _PARSED.get(fmt)
    if out is not None:
        return out
    out = []
    i, n = 0, len(fmt)
    while i < n:
        j = fmt.find(b"%", i)
        if j < 0:
            out.append(fmt[i:])
            break
        if j > i:
            out.append(fmt[i:j])
        if j + 1 >= n:  # a lone '%' at the end is written as is
            out.append(b"%%")
            break
        i, spec = _parse_spec(fmt, j + 1)
        if spec[4] not in _TAKES_ARG and spec[4] not in _TAKES_NONE:
            out.append(None)  # SQLite stops formatting at an unknown conversion
            break
        out.append(spec)
    if len(_PARSED) >= 512:
        _PARSED.clear()
    _PARSED[fmt] = out
    return out


def canonical_printf(fmt: Any, args: tuple[Any, ...], max_width: int) -> tuple[Any, tuple[Any, ...]]:
    """``(fmt2, args2)`` such that SQLite's ``printf(fmt2, *args2)`` writes what ``printf(fmt, *args)``
    does, with every width and precision a literal of at most ``max_width`` (:class:`FormatRefused`
    otherwise). ``*`` widths are taken from ``args`` as SQLite takes them (its 64-bit integer value of the
    argument, cut to 32 bits) and written into ``fmt2``, so SQLite never reads a width from an argument;
    a format that is not text or a blob passes through (it holds no ``%``)."""
    if isinstance(fmt, str):
        raw, text = fmt.encode("utf-8", "surrogatepass"), True
    elif isinstance(fmt, bytes):
        raw, text = fmt, False
    else:
        return fmt, args
    if b"%" not in raw:
        return fmt, args
    out = bytearray()
    rest: list[Any] = []
    k = 0  # the next argument
    for piece in _pieces(raw):
        if piece is None:
            break
        if piece.__class__ is bytes:
            out += piece
            continue
        flags, width, precision, longs, letter = piece
        left = False
        if width == "*":
            width = _as_int32(_int64(args[k]) if k < len(args) else 0)
            k += 1
            if width < 0:
                left, width = True, (-width if width >= -2147483647 else 0)
        if precision == "*":
            precision = _as_int32(_int64(args[k]) if k < len(args) else 0)
            k += 1
            if precision < 0:
                precision = -precision if precision >= -2147483647 else None
        if (width or 0) > max_width or (precision or 0) > max_width:
            raise FormatRefused(f"printf/format width or precision larger than {max_width}")
        out += b"%" + flags + (b"-" if left else b"") + (str(width).encode() if width else b"")
        out += (b"." + str(precision).encode() if precision is not None else b"") + b"l" * longs + bytes([letter])
        if letter in _TAKES_ARG:
            if k < len(args):
                rest.append(args[k])
            k += 1
    rest.extend(args[k:])
    fmt2 = bytes(out)
    return (fmt2.decode("utf-8", "surrogatepass") if text else fmt2), tuple(rest)


# -- date and time ----------------------------------------------------------------------------------------

_HOST_STATE_WORDS = frozenset({"now", "localtime", "utc"})


def check_date_arguments(name: str, args: tuple[Any, ...]) -> None:
    """``ValueError`` when a date/time function call would read the clock (no time value, ``'now'``) or the
    host's time zone (``'localtime'``, ``'utc'``)."""
    if len(args) < (2 if name == "strftime" else 1):
        raise ValueError(f"{name}() without a time value reads the clock")
    for v in args:
        if isinstance(v, str | bytes):
            word = (v.decode("utf-8", "replace") if isinstance(v, bytes) else v).strip().lower()
            if word in _HOST_STATE_WORDS:
                raise ValueError(f"{name}(): {word!r} reads the clock or the host's time zone")


class _FunctionErrors:
    """The message of the last refusal by one of our SQL functions (``sqlite3`` reports only that a
    user-defined function raised), read by :func:`state_error`."""

    __slots__ = ("message",)

    def __init__(self) -> None:
        self.message = ""


_BUILD: dict[str, Any] = {}  #: what the SQLite build defines, listed once per process


def _list_build() -> None:
    """Fill :data:`_BUILD`: ``functions`` (``(name, narg)`` of every SQL function) and ``modules`` (the
    lower-cased virtual-table modules, eponymous ones included)."""
    conn = sqlite3.connect(":memory:")
    try:
        try:
            rows = conn.execute("SELECT DISTINCT name, narg FROM pragma_function_list").fetchall()
        except sqlite3.Error:  # a build without the introspection pragmas
            rows = [(name, -1) for name in _KNOWN_REFUSED]
        try:
            modules = {str(r[0]).lower() for r in conn.execute("PRAGMA module_list")}
        except sqlite3.Error:
            modules = {"sqlite_stmt", "dbstat", "fts3tokenize", "fts4aux", "fts5vocab"}
    finally:
        conn.close()
    _BUILD["functions"] = [(str(name), int(narg)) for name, narg in rows]
    _BUILD["modules"] = frozenset(modules - _TABLE_FUNCTIONS)


def _builtin_functions() -> list[tuple[str, int]]:
    if not _BUILD:
        _list_build()
    return _BUILD["functions"]  # type: ignore[no-any-return]


def _virtual_tables() -> frozenset[str]:
    if not _BUILD:
        _list_build()
    return _BUILD["modules"]  # type: ignore[no-any-return]


def install_functions(conn: sqlite3.Connection, native: Callable[[], sqlite3.Connection], max_width: int,
                      errors: _FunctionErrors) -> None:
    """Put the function policy of the module docstring on ``conn``. ``native()`` is a private connection
    with SQLite's own functions, where checked calls of ``printf``/``format`` and the date functions run."""
    def refuse(name: str) -> Callable[..., Any]:
        def refused(*args: Any) -> Any:
            errors.message = f"the SQL function {name}() is not allowed here (it is off the sandbox's allow-list)"
            raise ValueError(errors.message)
        return refused

    for name, narg in _builtin_functions():
        if name.lower() not in ALLOWED_FUNCTIONS:
            conn.create_function(name, narg, refuse(name), deterministic=True)

    def run_native(name: str, args: tuple[Any, ...]) -> Any:
        try:
            return native().execute(f"SELECT {name}(" + ",".join("?" * len(args)) + ")", args).fetchone()[0]
        except sqlite3.Error as e:  # e.g. "string or blob too big"
            errors.message = f"{name}(): {e}"
            raise

    def printf(*args: Any) -> Any:
        if not args:
            return None
        try:
            fmt, rest = canonical_printf(args[0], args[1:], max_width)
        except FormatRefused as e:
            errors.message = str(e)
            raise
        return run_native("printf", (fmt, *rest))

    for name in ("printf", "format"):
        conn.create_function(name, -1, printf, deterministic=True)

    def date_function(name: str) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            try:
                check_date_arguments(name, args)
            except ValueError as e:
                errors.message = f"{e}: date and time functions work on fixed values only"
                raise
            return run_native(name, args)
        return call

    built = {n.lower() for n, _ in _builtin_functions()}
    for name in DATE_FUNCTIONS & built:  # the build's own: one it lacks stays unknown ("no such function")
        conn.create_function(name, -1, date_function(name), deterministic=True)


# -- statements ---------------------------------------------------------------------------------------------

_LEADING_NOISE = re.compile(r"^(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*", re.S)
_WORD = re.compile(r"[A-Za-z]+")


def leading_keyword(sql: str) -> str:
    """The statement's first keyword, upper-cased, after any whitespace and comments."""
    rest = _LEADING_NOISE.sub("", sql, count=1)
    m = _WORD.match(rest)
    return m.group(0).upper() if m else ""


def quote_identifier(name: str) -> str:
    """``name`` as an SQL identifier (double quotes, embedded quotes doubled)."""
    return '"' + str(name).replace('"', '""') + '"'


def split_sql(script: str) -> list[str]:
    """Split a script into complete statements (string literals with ';' are respected)."""
    out: list[str] = []
    buf = ""
    for piece in script.split(";"):
        buf += piece + ";"
        if sqlite3.complete_statement(buf):
            stmt = buf.strip()
            if stmt.strip(";").strip() and _LEADING_NOISE.sub("", stmt).strip(";").strip():
                out.append(stmt)
            buf = ""
    tail = buf[:-1].strip()  # the last piece got a ';' it did not have
    if tail and _LEADING_NOISE.sub("", tail).strip():
        out.append(tail)
    return out


def state_error(e: sqlite3.Error | sqlite3.Warning | MemoryError, errors: _FunctionErrors | None = None) -> StateError:
    """The :class:`StateError` to show for an exception of the ``sqlite3`` module (``errors``: the messages of
    our SQL functions' refusals)."""
    if isinstance(e, MemoryError):
        return StateError("out of memory", transient=True)
    msg = str(e)
    if isinstance(e, sqlite3.Warning):  # e.g. "You can only execute one statement at a time."
        return StateError(msg)
    if "user-defined function raised exception" in msg:
        detail = errors.message if errors is not None and errors.message else "an SQL function failed"
        if errors is not None:
            errors.message = ""
        return StateError(detail)
    if msg == "not authorized":
        return StateError("not authorized: the statement does something this view does not allow (a table, "
                          "function or statement outside the sandbox's allow-list)")
    if "interrupted" in msg:
        return StateError("statement took too long and was interrupted", transient=True)
    if "out of memory" in msg:
        return StateError("out of memory", transient=True)
    if "not authorized" in msg or "prohibited" in msg:
        return StateError(f"not authorized: {msg}")
    if "readonly database" in msg:
        return StateError("not authorized: this database view is read-only")
    return StateError(msg)

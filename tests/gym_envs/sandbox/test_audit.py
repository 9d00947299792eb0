"""The audit: everything tool code can reach, and whether any of it reaches process-wide state or runs source.

Starting from the builtins and the module views an episode gets, the walk (:mod:`tests.gym_envs.sandbox.reach`)
follows every attribute the sandbox's own ``_getattr_`` hands out (so what it refuses is not walked and what it
wraps is walked as the wrapper), on classes, functions and instances of the classes it finds. Every callable found
is judged: Python code by the globals it loads (followed through attribute chains, calls of other Python
functions, ``self.`` and ``super().`` methods, transitively), C code by :data:`C_STATE`, the table of C
callables known to read or write process state. A callable fails the audit when it reaches

* a random generator shared by the process (``random``'s module-level instance, ``os.urandom``, a generator
  seeded from entropy),
* the clock or the host's time zone,
* a module-level mutable object (a cache, a registry, a configuration object),
* ``eval``, ``exec`` or ``compile``: source text run outside the sandbox's compiler, with the real builtins
  (the red team reached them through ``functools.singledispatch``, which reads a function's annotations with
  ``typing.get_type_hints``),

unless :data:`ALLOWED` names the object with the reason it is harmless. A new finding means: close it at the
root in ``gym_envs/sandbox`` (leave the name out of the view, refuse or wrap the attribute), or, when it is
harmless, add it to :data:`ALLOWED` with the reason. The SQL side is audited at the end: every allowed SQL
function that takes a width, precision or count is called with huge values of every type.
"""

from __future__ import annotations

import builtins
import collections
import datetime
import decimal
import dis
import functools
import os
import random
import re
import sqlite3
import statistics
import sys
import time
import types
from collections.abc import Iterator
from typing import Any

import pytest

from gym_envs.errors import StateError
from gym_envs.sandbox import SqlLimits, StateDB
from tests.gym_envs.sandbox.reach import walk

_MISSING = object()
_IMMUTABLE = (str, bytes, int, float, complex, bool, type(None), tuple, frozenset, range, re.Pattern,
              types.MappingProxyType, datetime.timezone, datetime.date, datetime.time, datetime.timedelta,
              decimal.Decimal, type(Ellipsis), type(NotImplemented))
_CONTAINERS = (dict, list, set, bytearray, collections.deque)
_PROCESS_MODULES = frozenset({"random", "time", "os", "sys", "gc", "threading", "_thread", "locale", "atexit",
                              "signal", "importlib", "builtins", "_random", "_datetime", "_decimal", "_locale",
                              "posix", "resource", "faulthandler", "tracemalloc", "sysconfig", "site"})


def _c_state() -> dict[Any, str]:
    """C callables (by identity, or ``(class, name)`` for methods) that read or write process state."""
    table: dict[Any, str] = {}
    for name in ("time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "process_time",
                 "process_time_ns", "thread_time", "thread_time_ns", "localtime", "gmtime", "ctime", "asctime",
                 "strftime", "mktime", "tzset", "sleep", "clock_gettime", "clock_gettime_ns"):
        if hasattr(time, name):
            table[getattr(time, name)] = "the clock or the host's time zone (time)"
    for cls, names in ((datetime.datetime, ("now", "utcnow", "today", "fromtimestamp", "timestamp", "astimezone",
                                            "strftime", "__format__")),
                       (datetime.date, ("today", "fromtimestamp", "strftime", "__format__")),
                       (datetime.time, ("strftime", "__format__"))):
        for name in names:
            table[(cls, name)] = "the clock or the host's time zone (datetime)"
    table[os.urandom] = "the operating system's entropy"
    table[random.SystemRandom] = "the operating system's entropy"
    table[(random.Random, "seed")] = "the operating system's entropy when seeded without a value"
    for name in dir(random):
        fn = getattr(random, name)
        if getattr(fn, "__self__", None) is random._inst:  # type: ignore[attr-defined]
            table[fn] = "the process-wide random generator"
    for name in ("getcontext", "setcontext", "localcontext"):
        table[getattr(decimal, name)] = "the thread's decimal context"
    for name in dir(decimal.Decimal):
        table[(decimal.Decimal, name)] = "the thread's decimal context"
    for name in dir(decimal.Context):
        if name in ("clear_flags", "clear_traps", "copy"):
            continue
        table[(decimal.Context, name)] = "the thread's decimal context (through Decimal operations)"
    table[sys._getframe] = "the caller's frame"
    table[builtins.__import__] = "the import system (sys.modules)"
    table[builtins.setattr] = "attribute writes on whatever it is given"
    table[builtins.delattr] = "attribute writes on whatever it is given"
    table[builtins.globals] = "the caller's globals"
    table[builtins.vars] = "the caller's namespace"
    table[builtins.open] = "the file system"
    table[builtins.print] = "the process's standard output"
    table[builtins.input] = "the process's standard input"
    table[builtins.hash] = "the process's hash seed"
    table[builtins.id] = "memory addresses"
    for fn in (builtins.eval, builtins.exec, builtins.compile):  # the red team's singledispatch escape
        table[fn] = "source text run outside the sandbox's compiler, with the real builtins"
    return table


C_STATE = _c_state()

#: Process-wide objects that reachable code uses and that are harmless, each with the reason; keyed by
#: ``module.name`` of the object, or of the C callable, that the audit reports.
ALLOWED: dict[str, str] = {
    "re._cache": "a memo of compiled patterns: a pure function of the pattern and flags (re.purge is left out)",
    "re._MAXCACHE": "a constant size bound of that memo",
    "json._default_encoder": "a JSONEncoder with the default settings, never written after import",
    "json._default_decoder": "a JSONDecoder with the default settings, never written after import",
    "json.decoder.WHITESPACE": "a compiled pattern",
    "json.decoder.NUMBER_RE": "a compiled pattern",
    "json.decoder._CONSTANTS": "a constant mapping of NaN/Infinity to their floats, never written",
    "json.decoder.BACKSLASH": "a constant mapping of escape letters, never written",
    "json.encoder.ESCAPE_DCT": "a constant escape table filled at import, never written after",
    "json.scanner.NUMBER_RE": "a compiled pattern",
    "hashlib.__builtin_constructor_cache": "a memo of the hash constructors, a pure function of the algorithm name",
    "collections._sys._getframe": "namedtuple reads its caller's __name__ for __module__: the episode's own "
                                  "globals ('envspec')",
    "sys._getframe": "namedtuple reads its caller's __name__ for __module__: the episode's own globals",
    "decimal": "Decimal and Context operations use the thread's decimal context; every view that reaches decimal "
               "gives the episode its own, installed around all its code (test_modules.py::test_decimal_arithmetic_"
               "runs_in_the_episodes_context, test_surface.py) and getcontext/setcontext/localcontext are removed",
    "functools.update_wrapper -> builtins.setattr": "it writes the wrapper it is given; reachable only through "
                                                    "lru_cache and cache, which give it the "
                                                    "wrapper they just made (the view's update_wrapper and wraps copy "
                                                    "nothing)",
    "collections.namedtuple -> builtins.eval": "it evals `lambda _cls, a, b: _tuple_new(_cls, (a, b))` built from "
                                               "the field names after checking each is an identifier, not a "
                                               "keyword and not private, with empty builtins",
    "reprlib.recursive_repr -> builtins.id": "keys of a per-wrapper set of the objects being repr'd, never shown",
    "hashlib.__block_openssl_constructor": "a constant set of algorithm names, never written after import",
    "re._compiler": "constant tables of the regular-expression compiler, never written after import",
    "re._parser": "constant tables of the regular-expression parser, never written after import",
    "re._constants": "constant tables of the regular-expression compiler, never written after import",
    "re._casefix": "a constant case-folding table, never written after import",
    "re._special_chars_map": "re.escape's constant translation table, never written after import",
}


def _owner_name(obj: Any) -> str:
    mod = getattr(obj, "__module__", None) or type(obj).__module__
    return f"{mod}.{getattr(obj, '__qualname__', getattr(obj, '__name__', type(obj).__name__))}"


def _is_sandbox_own(obj: Any) -> bool:
    return str(getattr(obj, "__module__", "") or "").startswith("gym_envs.")


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _codes(c)


def _loads(fn: types.FunctionType, owner: type | None) -> Iterator[tuple[str, Any]]:
    """``(dotted name, object)`` for each global (followed through attribute loads) and each ``self.`` /
    ``super().`` method ``fn``'s code uses."""
    g = fn.__globals__
    for code in _codes(fn.__code__):
        ins = list(dis.get_instructions(code))
        for i, op in enumerate(ins):
            if op.opname == "IMPORT_NAME":  # `from typing import get_type_hints` inside a function
                module = sys.modules.get(str(op.argval))
                j = i + 1
                names = []
                while module is not None and j < len(ins) and ins[j].opname in ("IMPORT_FROM", "STORE_FAST",
                                                                                   "STORE_NAME", "STORE_GLOBAL"):
                    if ins[j].opname == "IMPORT_FROM":
                        names.append(str(ins[j].argval))
                    j += 1
                for name in names:
                    obj = getattr(module, name, _MISSING)
                    if obj is not _MISSING:
                        yield f"{module.__name__}.{name}", obj
                if module is not None and not names:
                    yield module.__name__, module
            elif op.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                name = str(op.argval)
                obj = g.get(name, getattr(builtins, name, _MISSING))
                if name == "super" and owner is not None:
                    j = i + 1
                    while j < len(ins) and ins[j].opname not in ("LOAD_ATTR", "LOAD_METHOD"):
                        j += 1
                    if j < len(ins):
                        attr = str(ins[j].argval)
                        for base in owner.__mro__[1:]:
                            if attr in vars(base):
                                yield f"{base.__qualname__}.{attr}", (base, attr, vars(base)[attr])
                                break
                    continue
                chain = [name]
                j = i + 1
                while obj is not _MISSING and j < len(ins) and ins[j].opname in ("LOAD_ATTR", "LOAD_METHOD"):
                    attr = str(ins[j].argval)
                    if isinstance(obj, types.ModuleType | type):
                        chain.append(attr)
                        obj = getattr(obj, attr, _MISSING)
                    j += 1
                    if not isinstance(obj, types.ModuleType | type):
                        break
                if obj is not _MISSING:
                    module = g.get("__name__", fn.__module__) if name in g else "builtins"
                    yield f"{module}.{'.'.join(chain)}", obj
            elif op.opname == "LOAD_FAST" and op.argval == "self" and owner is not None and i + 1 < len(ins) \
                    and ins[i + 1].opname in ("LOAD_ATTR", "LOAD_METHOD"):
                attr = str(ins[i + 1].argval)
                for base in owner.__mro__:
                    if attr in vars(base):
                        yield f"{base.__qualname__}.{attr}", (base, attr, vars(base)[attr])
                        break
    for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True):
        if var == "__class__":  # the cell of zero-argument super(): its class is not callable by spec code
            continue
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if callable(value) or isinstance(value, _CONTAINERS):
            yield f"{fn.__module__}.{fn.__qualname__}.<closure>", value


class _Judge:
    """Finds where a callable reaches process state (memoised over the whole walk). A finding reads
    ``caller -> object: reason``; :data:`ALLOWED` may name the object, its module, or the pair."""

    def __init__(self) -> None:
        self.memo: dict[tuple[int, int], tuple[Any, Any, list[str]]] = {}  # the objects are kept: ids stay theirs
        self.active: set[tuple[int, int]] = set()

    @staticmethod
    def allowed(name: str, where: str = "") -> bool:
        """Whether ``name`` (an object, or a module of objects) is allowed, for every caller or for ``where``."""
        return any(name == k or name.startswith(k + ".") or f"{where} -> {name}" == k for k in ALLOWED)

    def judge(self, obj: Any, owner: type | None = None, name: str = "") -> list[str]:
        """The findings of ``obj`` (a callable; ``owner``: the class it was read from)."""
        key = (id(obj), id(owner))
        hit = self.memo.get(key)
        if hit is not None and hit[0] is obj and hit[1] is owner:
            return hit[2]
        if key in self.active:
            return []
        self.active.add(key)
        try:
            found = self._judge(obj, owner, name)
        finally:
            self.active.discard(key)
        self.memo[key] = (obj, owner, found)
        return found

    def _c(self, obj: Any, owner: type | None, name: str, where: str) -> list[str] | None:
        """Findings of a C callable in :data:`C_STATE` (``None``: not in the table)."""
        keys: list[Any] = [obj]
        cls = getattr(obj, "__objclass__", None) or owner
        self_ = getattr(obj, "__self__", None)
        fname = getattr(obj, "__name__", name)
        for c in (cls, self_ if isinstance(self_, type) else type(self_) if self_ is not None else None):
            if isinstance(c, type):
                keys += [(k, fname) for k in c.__mro__]
        for k in keys:
            try:
                reason = C_STATE.get(k)
            except TypeError:
                continue
            if reason is not None:
                mod = getattr(k[0] if isinstance(k, tuple) else obj, "__module__", "") or ""
                label = f"{mod}.{fname}"
                if self.allowed(label, where) or self.allowed(mod.lstrip("_"), where):
                    return []
                return [f"{where or '(reachable)'} -> {label}: {reason}"]
        return None

    def _global(self, where: str, label: str, obj: Any) -> list[str]:
        """Findings of an object that ``where``'s code loads as ``label``."""
        if isinstance(obj, tuple) and len(obj) == 3 and isinstance(obj[0], type):  # (class, name, raw attribute)
            base, attr, raw = obj
            fn = raw.__func__ if isinstance(raw, classmethod | staticmethod) else raw
            c = self._c(fn, base, attr, where)
            if c is not None:
                return c
            return self.judge(fn, base, attr) if callable(fn) else []
        if callable(obj) and not isinstance(obj, type):  # followed whatever its name: ALLOWED is for data
            c = self._c(obj, None, "", where)
            if c is not None:
                return c
            cache = [f"{where} -> {label}: a process-wide cache (lru_cache)"] \
                if type(obj).__name__ == "_lru_cache_wrapper" and not self.allowed(label, where) else []
            return cache + self.judge(obj)
        if isinstance(obj, type):
            return self._class(obj)
        if self.allowed(label, where):
            return []
        if isinstance(obj, types.ModuleType):
            return [f"{where} -> {label}: the module {obj.__name__}"] if obj.__name__ in _PROCESS_MODULES else []
        if isinstance(obj, _CONTAINERS):
            return [f"{where} -> {label}: module-level mutable {type(obj).__name__}"]
        if isinstance(obj, (*_IMMUTABLE, property, classmethod, staticmethod)):
            return []
        return [f"{where} -> {label}: module-level {type(obj).__name__} object"]

    def _class(self, cls: type) -> list[str]:
        """Findings of calling ``cls``: its Python ``__new__``/``__init__``."""
        out: list[str] = []
        for attr in ("__new__", "__init__", "__init_subclass__", "__post_init__"):
            raw = next((vars(b)[attr] for b in cls.__mro__ if attr in vars(b)), None)
            fn = getattr(raw, "__func__", raw)
            if isinstance(fn, types.FunctionType):
                out += self.judge(fn, cls, attr)
        return out + (self._c(cls, None, "", "") or [])

    def _judge(self, obj: Any, owner: type | None, name: str) -> list[str]:
        if _is_sandbox_own(obj):
            return []  # the sandbox's own replacements and wrappers: tested by their own files
        c = self._c(obj, owner, name, "")
        if c is not None:
            return c
        if isinstance(obj, functools.partial):
            return self.judge(obj.func)
        if type(obj).__name__ == "_lru_cache_wrapper":
            return self.judge(obj.__wrapped__)
        if isinstance(obj, type):
            return self._class(obj)
        fn = getattr(obj, "__func__", obj)
        if not isinstance(fn, types.FunctionType):
            return []  # C code that is not in the table: pure
        if owner is None:
            self_ = getattr(obj, "__self__", None)
            owner = (self_ if isinstance(self_, type) else type(self_)) if self_ is not None \
                else self._defining_class(fn)
        where = f"{fn.__module__}.{fn.__qualname__}"
        out: list[str] = []
        for label, value in _loads(fn, owner):
            out += self._global(where, label, value)
        return out

    @staticmethod
    def _defining_class(fn: types.FunctionType) -> type | None:
        parts = fn.__qualname__.split(".")
        if len(parts) < 2 or "<locals>" in parts:
            return None
        obj: Any = sys.modules.get(fn.__module__)
        for p in parts[:-1]:
            obj = getattr(obj, p, None)
        return obj if isinstance(obj, type) else None


def test_nothing_reachable_reaches_process_state() -> None:
    """The red team's case was ``statistics.NormalDist(...).samples()`` drawing from the process-wide
    ``random``; this walks everything of that kind."""
    judge = _Judge()
    reachable = walk()
    assert len(reachable) > 1000  # the walk reaches the modules' classes, functions and methods
    problems: dict[str, list[str]] = {}
    for path, obj in reachable.items():
        if callable(obj):
            found = judge.judge(obj)
            if found:
                problems[path] = sorted(set(found))
    assert not problems, "reachable code that reaches process state:\n" + "\n".join(
        f"  {p}: {', '.join(v)}" for p, v in sorted(problems.items()))


def test_the_audit_finds_what_it_is_for() -> None:
    """The judge itself: it finds the red team's case and its kin when they are not wrapped."""
    judge = _Judge()
    assert any("random generator" in f for f in judge.judge(statistics.NormalDist.samples, statistics.NormalDist,
                                                             "samples"))
    assert any("clock" in f for f in judge.judge(datetime.datetime.now))
    assert any("entropy" in f for f in judge.judge(random.Random.seed, random.Random, "seed"))
    assert any("cache" in f or "mutable" in f for f in judge.judge(re.purge))
    # the red team's escape: register() imports typing.get_type_hints in its body, which evals annotations
    assert any("source text" in f for f in judge.judge(functools.singledispatch))
    assert any("source text" in f for f in judge.judge(functools.singledispatchmethod))


# -- SQL functions that take a width, a precision or a count ---------------------------------------------

HUGE = [10**9, -(10**9), 1e9, "1000000000", " +1000000000", b"1000000000", "4394967296", 2**40]
SIZED = {  # every allowed SQL function whose cost grows with an argument's value
    "printf('%*d', ?, 1)": "width", "printf('%.*f', ?, 1.5)": "width", "printf('%.*c', ?, 'x')": "width",
    "format('%*s', ?, 'x')": "width", "format('%.*q', ?, 'x')": "width", "printf('%!.*w', ?, 'x')": "width",
    "zeroblob(?)": None, "substr('abc', 1, ?)": None, "round(1.5, ?)": None, "char(?)": None,
    "printf('%s', zeroblob(?))": None, "replace(hex(zeroblob(?)), '0', 'ab')": None,
}


@pytest.mark.parametrize("value", HUGE, ids=[repr(v)[:20] for v in HUGE])
@pytest.mark.parametrize("expr", list(SIZED))
def test_sized_sql_functions_stay_cheap_for_any_argument_type(expr: str, value: Any) -> None:
    """Each finishes in well under a second, or is refused, whatever the type of the huge value."""
    state = StateDB(SqlLimits(statement_timeout_s=0.5))
    state.script("CREATE TABLE t (x)", mode="setup")
    state.open_episode()
    start = time.perf_counter()
    try:
        state.run(f"SELECT length({expr}) AS n", [value], mode="ro", fetch=True)
    except StateError as e:
        if SIZED[expr]:
            assert SIZED[expr] in str(e) or "too big" in str(e), e
    assert time.perf_counter() - start < 1.0
    state.close()


def test_the_sql_function_list_is_an_allow_list() -> None:
    """Every function of this SQLite build that is not on the list is refused, by the authorizer and on the
    connection itself."""
    from gym_envs.sandbox.sqlpolicy import ALLOWED_FUNCTIONS

    conn = sqlite3.connect(":memory:")
    names = {r[0] for r in conn.execute("SELECT name FROM pragma_function_list")}
    conn.close()
    state = StateDB(SqlLimits(statement_timeout_s=0.5))
    state.script("CREATE TABLE t (x)", mode="setup")
    state.open_episode()
    refused = []
    for name in sorted(names - ALLOWED_FUNCTIONS):
        if not re.fullmatch(r"[a-z_0-9]+", name):
            continue
        try:
            state.run(f"SELECT {name}() AS v", mode="ro", fetch=True)
        except StateError:
            refused.append(name)
    assert refused == sorted(n for n in names - ALLOWED_FUNCTIONS if re.fullmatch(r"[a-z_0-9]+", n))
    assert {"random", "randomblob", "fts3_tokenizer", "sqlite_version", "load_extension"} <= set(refused)
    state.close()

"""What spec code can name: its builtins and read-only views of a short allow-list of pure modules.

A view (:func:`module_view`) holds only a module's public classes, functions and immutable constants:
never a module (``statistics.sys``, ``re.enum`` would reach ``sys.modules``), a mutable module-level
container (copied frozen) or shared mutable state. Functions that would bypass the guards, or reach
process-wide state, are replaced or left out (:data:`VIEW_DROP`, :func:`views`): ``operator``'s getters
and setters go through the guards, its ``mul``/``pow``/``lshift`` through the size guard,
``functools.wraps`` and ``update_wrapper`` copy nothing, ``re``'s functions refuse ``re.DEBUG`` (it prints
to the process's stdout), ``time.strftime`` needs its time tuple and refuses the directives that read the
host's time zone. ``random`` is each episode's own generator (:func:`random_module`), created on first
import from the episode's seed. :func:`make_import` is the ``__import__`` of the shared builtins
(:func:`builtins_template`); :func:`spec_globals` puts them together with the guards' names into the
globals every piece of spec code starts from.
"""

from __future__ import annotations

import _strptime  # noqa: F401 - imported here so datetime.strptime finds it without importing
import bisect
import collections
import datetime
import decimal
import fractions
import functools
import hashlib
import heapq
import itertools
import json
import math
import operator
import random
import re
import statistics
import string
import sys
import time
from collections.abc import Callable
from types import BuiltinFunctionType, FunctionType, MappingProxyType, ModuleType, SimpleNamespace
from typing import Any

from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence

from gym_envs.errors import ResourceLimit, SandboxViolation, ToolError
from gym_envs.sandbox.guards import (
    PrintCollector,
    guarded_delitem,
    guarded_format,
    guarded_getattr,
    guarded_getitem,
    guarded_setitem,
    host_time_directive,
    make_binop,
    make_inplacevar,
    write_guard,
)
from gym_envs.sandbox.limits import Limits
from gym_envs.sandbox.scope import DECIMAL_KEY, use_decimal

__all__ = [
    "ALLOWED_MODULES",
    "RANDOM_KEY",
    "SEED_KEY",
    "VIEW_DROP",
    "builtins_template",
    "make_import",
    "module_view",
    "random_module",
    "sandbox_decimal_context",
    "spec_globals",
    "views",
]

_IMPORT_ALLOW: dict[str, ModuleType] = {
    "json": json, "math": math, "re": re, "datetime": datetime, "collections": collections,
    "itertools": itertools, "statistics": statistics, "functools": functools,
    "operator": operator, "string": string, "decimal": decimal, "fractions": fractions,
    "bisect": bisect, "heapq": heapq, "hashlib": hashlib,
}
#: every module tool code may import (``random`` is the episode's own generator, ``time`` a two-name view)
ALLOWED_MODULES: tuple[str, ...] = (*_IMPORT_ALLOW, "random")

#: names left out of a module's view, and why
VIEW_DROP: dict[str, frozenset[str]] = {
    "string": frozenset({"Formatter", "Template"}),  # attribute walks through format strings
    # the thread's shared decimal context and the templates new contexts copy
    "decimal": frozenset({"getcontext", "setcontext", "localcontext", "DefaultContext", "BasicContext",
                          "ExtendedContext"}),
    "re": frozenset({"purge", "Scanner", "template"}),  # clears the process-wide cache; flags unchecked
    # total_ordering adds methods to the class it is given (a shared one); the dispatchers read a function's
    # annotations through typing.get_type_hints, which evals strings as source with the real builtins
    "functools": frozenset({"total_ordering", "singledispatch", "singledispatchmethod"}),
}
_VIEW_TYPES = (type, BuiltinFunctionType, FunctionType, int, float, complex, str, bytes, tuple, frozenset,
               type(None), datetime.timezone)

SEED_KEY = "__envwright_seed__"  #: in an episode's globals: its seed (tool code cannot name it)
RANDOM_KEY = "__envwright_random__"  #: in an episode's globals: its ``random``, made on first import


def _guarded_attrgetter(*names: str) -> Callable[[Any], Any]:
    paths = [str(n).split(".") for n in names]

    def get(obj: Any) -> Any:
        values = []
        for path in paths:
            v = obj
            for part in path:
                v = guarded_getattr(v, part)
            values.append(v)
        return values[0] if len(values) == 1 else tuple(values)

    return get


def _guarded_methodcaller(name: str, /, *args: Any, **kwargs: Any) -> Callable[[Any], Any]:
    def call(obj: Any) -> Any:
        return guarded_getattr(obj, name)(*args, **kwargs)

    return call


def _guarded_itemgetter(*items: Any) -> Callable[[Any], Any]:
    def get(obj: Any) -> Any:
        if len(items) == 1:
            return guarded_getitem(obj, items[0])
        return tuple(guarded_getitem(obj, i) for i in items)

    return get


def _no_wraps(wrapped: Any, assigned: Any = (), updated: Any = ()) -> Callable[[Any], Any]:
    """``functools.wraps`` for sandboxed code: returns the wrapper unchanged."""
    return lambda wrapper: wrapper


def _no_update_wrapper(wrapper: Any, wrapped: Any, assigned: Any = (), updated: Any = ()) -> Any:
    return wrapper


def _strftime(format: str, t: Any = None, /) -> str:
    """``time.strftime`` with its time tuple required (without one it formats the clock) and without
    ``%s``, ``%z`` and ``%Z``, which read the host's time zone."""
    if t is None:
        raise SandboxViolation("strftime(): without a time tuple it formats the clock, which tool code cannot read "
                               "(an episode must replay exactly); format a fixed datetime instead")
    found = host_time_directive(format, "szZ")
    if found:
        raise SandboxViolation(f"strftime(): %{found} reads the host's time zone; format the value from the "
                               "datetime's own fields")
    return time.strftime(format, t)


#: where each ``re`` function takes its ``flags``: re.DEBUG makes the compiler print to the process's stdout
_RE_FLAGS_AT = {"compile": 1, "search": 2, "match": 2, "fullmatch": 2, "findall": 2, "finditer": 2, "split": 3,
                "sub": 4, "subn": 4}


def _without_debug(fn: Callable[..., Any], index: int) -> Callable[..., Any]:
    """``re.<fn>`` refusing the ``re.DEBUG`` flag (the compiler would print the pattern's parse to stdout)."""
    def call(*args: Any, **kwargs: Any) -> Any:
        flags = kwargs.get("flags", args[index] if len(args) > index else 0)
        if isinstance(flags, int) and flags & re.DEBUG:
            raise SandboxViolation(f"{fn.__name__}(): re.DEBUG prints to the process's standard output; leave it out")
        return fn(*args, **kwargs)

    call.__name__ = call.__qualname__ = fn.__name__
    call.__doc__ = fn.__doc__
    return call


def module_view(name: str, mod: ModuleType, overrides: dict[str, Any] | None = None) -> SimpleNamespace:
    """A read-only namespace of ``mod``'s public classes, functions and immutable constants."""
    drop = VIEW_DROP.get(name, frozenset())
    names: dict[str, Any] = {}
    for k in dir(mod):
        if k.startswith("_") or k in drop:
            continue
        v = getattr(mod, k)
        if isinstance(v, set | frozenset):
            v = frozenset(v)
        elif isinstance(v, list):
            v = tuple(v)
        elif isinstance(v, dict):
            v = MappingProxyType(dict(v))
        elif isinstance(v, ModuleType) or not isinstance(v, _VIEW_TYPES):
            continue
        names[k] = v
    names.update(overrides or {})
    return SimpleNamespace(**names)


def views(binop: Callable[[str, Any, Any], Any]) -> dict[str, SimpleNamespace]:
    """The view of every allowed module but ``random``; ``binop`` is the size guard ``operator`` routes through."""
    def guarded(op: str) -> Callable[[Any, Any], Any]:
        return lambda a, b: binop(op, a, b)

    overrides: dict[str, dict[str, Any]] = {
        "operator": {"attrgetter": _guarded_attrgetter, "methodcaller": _guarded_methodcaller,
                     "itemgetter": _guarded_itemgetter, "getitem": guarded_getitem,
                     "setitem": guarded_setitem, "delitem": guarded_delitem,
                     "mul": guarded("mul"), "imul": guarded("mul"), "pow": guarded("pow"),
                     "ipow": guarded("pow"), "lshift": guarded("lshift"), "ilshift": guarded("lshift")},
        "functools": {"wraps": _no_wraps, "update_wrapper": _no_update_wrapper},
        "re": {name: _without_debug(getattr(re, name), i) for name, i in _RE_FLAGS_AT.items()},
    }
    out = {name: module_view(name, mod, overrides.get(name)) for name, mod in _IMPORT_ALLOW.items()}
    out["time"] = SimpleNamespace(strftime=_strftime, struct_time=time.struct_time)
    return out


_RANDOM_NAMES = ("random", "randint", "randrange", "choice", "choices", "shuffle", "sample", "uniform",
                 "gauss", "normalvariate", "lognormvariate", "triangular", "betavariate", "expovariate",
                 "gammavariate", "paretovariate", "weibullvariate", "vonmisesvariate", "getrandbits", "randbytes",
                 "binomialvariate")


def random_module(rng: random.Random) -> SimpleNamespace:
    """The ``random`` an episode imports: the functions of its own generator ``rng``."""
    def make_random(seed: Any = None) -> random.Random:
        """A new generator; without a seed it is seeded from the episode's generator."""
        return random.Random(rng.getrandbits(64) if seed is None else seed)

    def seed(a: Any = None, version: int = 2) -> None:
        """Re-seed the episode's generator (a value is required: without one Python draws from the
        operating system's entropy)."""
        if a is None:
            raise SandboxViolation("seed(): seeding without a value draws from the operating system's entropy; "
                                   "pass a value")
        rng.seed(a, version)

    names = {n: getattr(rng, n) for n in _RANDOM_NAMES if hasattr(rng, n)}
    return SimpleNamespace(**names, seed=seed, Random=make_random)


def sandbox_decimal_context() -> decimal.Context:
    """The decimal context spec code computes in: Python's defaults, spelled out (not copied from the
    process's ``DefaultContext``, which the host may change). Installed for every piece of code of an
    episode that imported ``decimal`` (:mod:`gym_envs.sandbox.scope`), so decimal arithmetic neither reads
    nor writes the host thread's context."""
    return decimal.Context(prec=28, rounding=decimal.ROUND_HALF_EVEN, Emin=-999999, Emax=999999, capitals=1,
                           clamp=0, flags=[], traps=[decimal.InvalidOperation, decimal.DivisionByZero,
                                                     decimal.Overflow])


def make_import(module_views: dict[str, SimpleNamespace], decimal_context: decimal.Context) -> Callable[..., Any]:
    """The ``__import__`` of the shared builtins: module views, and each episode's own ``random``, kept in
    the globals of the importing code (the interpreter passes them; tool code cannot call ``__import__``
    itself, nor name either key). Importing ``decimal`` installs ``decimal_context`` and marks the
    globals, so the engine installs it for every later piece of the episode's code too."""

    def guarded_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (),
                       level: int = 0) -> Any:
        if level != 0:
            raise SandboxViolation("relative imports are not allowed")
        view = module_views.get(name)
        if view is not None:
            if name == "decimal" and globals.__class__ is dict:
                globals[DECIMAL_KEY] = True
                use_decimal(decimal_context)
            return view
        if name == "random":
            if globals.__class__ is not dict or SEED_KEY not in globals:
                raise SandboxViolation("random can only be imported by episode code")
            rng = globals.get(RANDOM_KEY)
            if rng is None:
                rng = globals[RANDOM_KEY] = random_module(random.Random(globals[SEED_KEY]))
            return rng
        if name == "_strptime":  # datetime.strptime imports it from C; code cannot name it
            return sys.modules["_strptime"]
        raise SandboxViolation(f"import of {name!r} is not allowed; allowed modules: {sorted(ALLOWED_MODULES)}")

    return guarded_import


def builtins_template(limits: Limits, binop: Callable[[str, Any, Any], Any]) -> dict[str, Any]:
    """The builtins of episode code (the engine adds ``__import__``); shared by every episode, which
    cannot reach the dict: ``__builtins__`` is a name tool code may not use."""
    max_seq = limits.max_sequence

    def safe_range(*args: int) -> range:
        r = range(*args)
        if len(r) > max_seq:
            raise ResourceLimit(f"range of {len(r):,} elements exceeds {max_seq:,}")
        return r

    def safe_bytes(*args: Any) -> bytes:
        if args and isinstance(args[0], int) and args[0] > max_seq:
            raise ResourceLimit(f"bytes({args[0]:,}) exceeds {max_seq:,}")
        return bytes(*args)

    def safe_pow(a: Any, b: Any, m: Any = None) -> Any:
        return pow(a, b, m) if m is not None else binop("pow", a, b)

    b: dict[str, Any] = {
        "None": None, "True": True, "False": False,
        "abs": abs, "all": all, "any": any, "bool": bool, "callable": callable, "chr": chr,
        "divmod": divmod, "enumerate": enumerate, "filter": filter, "float": float,
        "frozenset": frozenset, "int": int, "isinstance": isinstance, "len": len, "list": list,
        "map": map, "max": max, "min": min, "next": next, "ord": ord, "range": safe_range,
        "repr": repr, "reversed": reversed, "round": round, "set": set, "sorted": sorted,
        "str": str, "sum": sum, "tuple": tuple, "zip": zip, "dict": dict, "bytes": safe_bytes,
        "hex": hex, "oct": oct, "bin": bin, "slice": slice, "iter": iter, "complex": complex,
        "pow": safe_pow, "ToolError": ToolError,
    }
    for exc in (Exception, ValueError, KeyError, TypeError, IndexError, ZeroDivisionError,
                ArithmeticError, LookupError, RuntimeError, StopIteration, AttributeError,
                NotImplementedError, OverflowError, AssertionError, NameError):
        b[exc.__name__] = exc
    return b


def spec_globals(limits: Limits) -> tuple[dict[str, Any], decimal.Context]:
    """The globals every piece of spec code starts from (the engine copies them per episode) and the
    sandbox's decimal context its ``decimal`` computes in: the shared builtins with :func:`make_import`,
    and the names RestrictedPython's compiled code calls, bound to the guards."""
    binop = make_binop(limits)
    builtins = builtins_template(limits, binop)
    context = sandbox_decimal_context()
    builtins["__import__"] = make_import(views(binop), context)
    cap = limits.max_output_chars
    return {
        "__builtins__": builtins,  # shared: episode code cannot reach the dict (see builtins_template)
        "__name__": "envspec",
        "__metaclass__": type,
        "_getattr_": guarded_getattr,
        "_getitem_": guarded_getitem,
        "_getiter_": iter,
        "_write_": write_guard,
        "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
        "_unpack_sequence_": guarded_unpack_sequence,
        "_inplacevar_": make_inplacevar(binop),
        "_binop_": binop,
        "_format_": guarded_format,
        "_print_": lambda _getattr_=None: PrintCollector(cap),
        "_apply_": lambda f, *a, **kw: f(*a, **kw),
    }, context

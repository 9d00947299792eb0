"""What spec code can name: its builtins and read-only views of a short allow-list of pure modules.

A view (:func:`module_view`) holds only a module's public classes, functions and immutable constants:
never a module (``statistics.sys``, ``re.enum`` would reach ``sys.modules``), a mutable module-level
container (copied frozen) or shared mutable state. What a view holds is decided by the identity of each
object, whichever module re-exports it (:mod:`~gym_envs.sandbox.surface`): :data:`~gym_envs.sandbox.surface.REMOVED`
objects are left out, and every object :func:`views` replaces is replaced in every view (``statistics.mul`` is
``operator.mul``, so both are the guarded one): ``operator``'s getters and setters go through the guards, the
functions that multiply, raise to a power, shift or repeat through the size guards
(:meth:`~gym_envs.sandbox.sizes.SizeGuard.replacements`), ``functools.wraps`` and ``update_wrapper`` copy
nothing, ``re``'s functions refuse ``re.DEBUG`` (it prints to the process's stdout), ``time.strftime`` needs its
time tuple and refuses the directives that read the host's time zone. ``random`` is each episode's own generator
(:func:`random_module`), created on first import from the episode's seed; importing a module whose view holds
``decimal``'s classes (``decimal``, and ``fractions`` and ``statistics``, which re-export ``Decimal``) gives the
episode its own decimal context (:func:`make_import`). :func:`make_import` is the ``__import__`` of the shared
builtins (:func:`builtins_template`), whose ``repr`` and ``str`` write no memory addresses
(:mod:`~gym_envs.sandbox.reprs`); :func:`spec_globals` puts them together with the guards' names into the
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

from gym_envs.errors import SandboxViolation, ToolError
from gym_envs.sandbox.guards import (
    PrintCollector,
    guarded_delitem,
    guarded_format,
    guarded_getattr,
    guarded_getitem,
    guarded_setitem,
    host_time_directive,
    make_inplacevar,
    write_guard,
)
from gym_envs.sandbox.limits import Limits
from gym_envs.sandbox.reprs import STR, safe_repr, scrub
from gym_envs.sandbox.scope import DECIMAL_KEY, use_decimal
from gym_envs.sandbox.sizes import SizeGuard
from gym_envs.sandbox.surface import REMOVED

__all__ = [
    "ALLOWED_MODULES",
    "RANDOM_KEY",
    "SEED_KEY",
    "Views",
    "builtins_template",
    "make_import",
    "module_view",
    "random_module",
    "spec_globals",
]

_IMPORT_ALLOW: dict[str, ModuleType] = {
    "json": json, "math": math, "re": re, "datetime": datetime, "collections": collections,
    "itertools": itertools, "statistics": statistics, "functools": functools,
    "operator": operator, "string": string, "decimal": decimal, "fractions": fractions,
    "bisect": bisect, "heapq": heapq, "hashlib": hashlib,
}
#: every module tool code may import (``random`` is the episode's own generator, ``time`` a two-name view)
ALLOWED_MODULES: tuple[str, ...] = (*_IMPORT_ALLOW, "random")

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


_REMOVED_IDS = frozenset(map(id, REMOVED))


def module_view(mod: ModuleType, replaced: dict[int, Any] | None = None) -> SimpleNamespace:
    """A read-only namespace of ``mod``'s public classes, functions and immutable constants: objects in
    :data:`~gym_envs.sandbox.surface.REMOVED` left out, those in ``replaced`` (``{id(original): stand-in}``)
    replaced, whatever name ``mod`` gives them."""
    replaced = replaced or {}
    names: dict[str, Any] = {}
    for k in dir(mod):
        if k.startswith("_"):
            continue
        v = getattr(mod, k)
        if id(v) in _REMOVED_IDS:
            continue
        v = replaced.get(id(v), v)
        if isinstance(v, set | frozenset):
            v = frozenset(v)
        elif isinstance(v, list):
            v = tuple(v)
        elif isinstance(v, dict):
            v = MappingProxyType(dict(v))
        elif isinstance(v, ModuleType) or not isinstance(v, _VIEW_TYPES):
            continue
        names[k] = v
    return SimpleNamespace(**names)


def _holds_decimal(view: SimpleNamespace) -> bool:
    return any(getattr(v, "__module__", None) in ("decimal", "_decimal", "_pydecimal") for v in vars(view).values())


class Views:
    """The views of every allowed module but ``random`` (:attr:`modules`), what replaced what in them
    (:attr:`replaced`, ``{id(original): (original, stand-in)}``) and which views hold ``decimal``'s classes
    (:attr:`decimal`: importing one gives the episode its own decimal context)."""

    def __init__(self, sized: SizeGuard):
        pairs: dict[Any, Any] = {
            operator.attrgetter: _guarded_attrgetter, operator.methodcaller: _guarded_methodcaller,
            operator.itemgetter: _guarded_itemgetter, operator.getitem: guarded_getitem,
            operator.setitem: guarded_setitem, operator.delitem: guarded_delitem,
            functools.wraps: _no_wraps, functools.update_wrapper: _no_update_wrapper,
            **{getattr(re, name): _without_debug(getattr(re, name), i) for name, i in _RE_FLAGS_AT.items()},
            **sized.replacements(),
        }
        self.replaced: dict[int, tuple[Any, Any]] = {id(k): (k, v) for k, v in pairs.items()}
        by_id = {i: v for i, (_, v) in self.replaced.items()}
        self.modules: dict[str, SimpleNamespace] = {name: module_view(mod, by_id)
                                                    for name, mod in _IMPORT_ALLOW.items()}
        self.modules["time"] = SimpleNamespace(strftime=_strftime, struct_time=time.struct_time)
        self.decimal: frozenset[str] = frozenset(n for n, view in self.modules.items() if _holds_decimal(view))


_RANDOM_NAMES = ("random", "randint", "randrange", "choice", "choices", "shuffle", "sample", "uniform",
                 "gauss", "normalvariate", "lognormvariate", "triangular", "betavariate", "expovariate",
                 "gammavariate", "paretovariate", "weibullvariate", "vonmisesvariate", "binomialvariate")


def random_module(rng: random.Random, sized: SizeGuard, random_class: type[random.Random]) -> SimpleNamespace:
    """The ``random`` an episode imports: the functions of its own generator ``rng``; ``getrandbits`` and
    ``randbytes`` sized; ``Random`` makes instances of ``random_class`` (:meth:`SizeGuard.random_class`)."""
    def make_random(seed: Any = None) -> random.Random:
        """A new generator; without a seed it is seeded from the episode's generator."""
        return random_class(rng.getrandbits(64) if seed is None else seed)

    def seed(a: Any = None, version: int = 2) -> None:
        """Re-seed the episode's generator (a value is required: without one Python draws from the
        operating system's entropy)."""
        if a is None:
            raise SandboxViolation("seed(): seeding without a value draws from the operating system's entropy; "
                                   "pass a value")
        rng.seed(a, version)

    def getrandbits(k: int, /) -> int:
        """``k`` random bits (at most ``max_int_bits``)."""
        sized.check_int_bits(k if isinstance(k, int) else 0, f"getrandbits({k})")
        return rng.getrandbits(k)

    def randbytes(n: int) -> bytes:
        """``n`` random bytes (at most ``max_sequence``)."""
        sized.check_count(n, "randbytes")
        return rng.randbytes(n)

    names = {n: getattr(rng, n) for n in _RANDOM_NAMES if hasattr(rng, n)}
    return SimpleNamespace(**names, seed=seed, Random=make_random, getrandbits=getrandbits, randbytes=randbytes)


def make_import(views: Views, decimal_context: decimal.Context, sized: SizeGuard) -> Callable[..., Any]:
    """The ``__import__`` of the shared builtins: module views, and each episode's own ``random``, kept in
    the globals of the importing code (the interpreter passes them; tool code cannot call ``__import__``
    itself, nor name either key). Importing a view that holds ``decimal``'s classes gives the episode its own
    copy of ``decimal_context``, kept in its globals under :data:`~gym_envs.sandbox.scope.DECIMAL_KEY` and
    installed at once; the engine installs it around every later piece of the episode's code too."""
    module_views, decimal_views = views.modules, views.decimal
    random_class = sized.random_class()

    def guarded_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (),
                       level: int = 0) -> Any:
        if level != 0:
            raise SandboxViolation("relative imports are not allowed")
        view = module_views.get(name)
        if view is not None:
            if name in decimal_views:
                if globals.__class__ is dict:
                    ctx = globals.get(DECIMAL_KEY)
                    if ctx is None:
                        ctx = globals[DECIMAL_KEY] = decimal_context.copy()
                    use_decimal(ctx)
                else:  # not the code's own globals: the sandbox's context still, for this piece of code
                    use_decimal(decimal_context.copy())
            return view
        if name == "random":
            if globals.__class__ is not dict or SEED_KEY not in globals:
                raise SandboxViolation("random can only be imported by episode code")
            rng = globals.get(RANDOM_KEY)
            if rng is None:
                rng = globals[RANDOM_KEY] = random_module(random.Random(globals[SEED_KEY]), sized, random_class)
            return rng
        if name == "_strptime":  # datetime.strptime imports it from C; code cannot name it
            return sys.modules["_strptime"]
        raise SandboxViolation(f"import of {name!r} is not allowed; allowed modules: {sorted(ALLOWED_MODULES)}")

    return guarded_import


def builtins_template(sized: SizeGuard) -> dict[str, Any]:
    """The builtins of episode code (the engine adds ``__import__``); shared by every episode, which
    cannot reach the dict: ``__builtins__`` is a name tool code may not use. ``range``, ``bytes``, ``pow`` and
    ``round`` are sized (:meth:`SizeGuard.builtins`), ``repr`` and ``str`` write no addresses."""
    b: dict[str, Any] = {
        "None": None, "True": True, "False": False,
        "abs": abs, "all": all, "any": any, "bool": bool, "callable": callable, "chr": chr,
        "divmod": divmod, "enumerate": enumerate, "filter": filter, "float": float,
        "frozenset": frozenset, "int": int, "isinstance": isinstance, "len": len, "list": list,
        "map": map, "max": max, "min": min, "next": next, "ord": ord,
        "repr": safe_repr, "reversed": reversed, "set": set, "sorted": sorted,
        "str": STR, "sum": sum, "tuple": tuple, "zip": zip, "dict": dict,
        "hex": hex, "oct": oct, "bin": bin, "slice": slice, "iter": iter, "complex": complex,
        "ToolError": ToolError, **sized.builtins(),
    }
    for exc in (Exception, ValueError, KeyError, TypeError, IndexError, ZeroDivisionError,
                ArithmeticError, LookupError, RuntimeError, StopIteration, AttributeError,
                NotImplementedError, OverflowError, AssertionError, NameError):
        b[exc.__name__] = exc
    return b


def spec_globals(limits: Limits) -> dict[str, Any]:
    """The globals every piece of spec code starts from (the engine copies them per episode): the shared
    builtins with :func:`make_import` (whose decimal context is :meth:`SizeGuard.decimal_context`'s default),
    and the names RestrictedPython's compiled code calls, bound to the guards."""
    sized = SizeGuard(limits)
    builtins = builtins_template(sized)
    builtins["__import__"] = make_import(Views(sized), sized.decimal_context(), sized)
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
        "_inplacevar_": make_inplacevar(sized.binop),
        "_binop_": sized.binop,
        "_format_": guarded_format,
        "_fstring_": scrub,
        "_print_": lambda _getattr_=None: PrintCollector(cap),
        "_apply_": lambda f, *a, **kw: f(*a, **kw),
    }

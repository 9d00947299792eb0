"""What spec code can reach, enumerated afresh: the walk the audits (``test_audit.py``, ``test_surface.py``) judge.

Starting from the builtins and the view of every allowed module, exactly as the sandbox's own ``__import__``
hands them out, the walk follows every public attribute the sandbox's ``_getattr_`` lets through (so what it
refuses is not walked and what it wraps is walked as the wrapper), on classes, functions, constants and
instances: instances of every reachable class it can make with small arguments, and the samples below of those
that need particular ones. Each object is reached once, by its first (shortest) path.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import re
import types
from collections.abc import Callable, Iterator
from typing import Any

from gym_envs.errors import SandboxViolation
from gym_envs.sandbox import ALLOWED_MODULES, Engine
from gym_envs.sandbox.guards import guarded_getattr
from gym_envs.sandbox.modules import SEED_KEY
from gym_envs.sandbox.scope import restore_decimal

#: values whose methods are walked on their type
VALUES = (str, bytes, int, float, complex, bool, type(None), tuple, frozenset, range)
#: immutable objects (descriptors of classes included: nothing can write them): safe to share between episodes
IMMUTABLE = (*VALUES, re.Pattern, types.MappingProxyType, datetime.timezone, datetime.date, datetime.time,
             datetime.timedelta, decimal.Decimal, type(Ellipsis), type(NotImplemented), re.RegexFlag,
             types.GetSetDescriptorType, types.MemberDescriptorType, property,
             type(collections.namedtuple("T", "x").x))
_ARGS: tuple[tuple[Any, ...], ...] = ((), (1,), ("x",), ([1, 2],), (len,), (1, 2), (2024, 1, 2), (1, 2, 3))


def importer() -> tuple[Callable[[str, dict[str, Any]], Any], dict[str, Any]]:
    """A fresh engine's ``__import__`` and globals of an episode (seed 0) to import into. Importing a view that
    holds ``decimal`` installs the episode's context, as in a call; here the host's is put back at once."""
    imp = Engine()._base_globals["__builtins__"]["__import__"]

    def import_(name: str, glb: dict[str, Any]) -> Any:
        try:
            return imp(name, glb)
        finally:
            restore_decimal()

    return import_, {SEED_KEY: 0}


MODULES = (*ALLOWED_MODULES, "time")  #: every name spec code may import


def roots(only: str | None = None) -> Iterator[tuple[str, Any]]:
    """``(path, object)``: the view of every module spec code may import, and every builtin (``only``: the view
    of that module alone)."""
    imp, glb = importer()
    for name in MODULES if only is None else (only,):
        yield name, imp(name, glb)
    if only is None:
        for k, v in Engine()._base_globals["__builtins__"].items():
            if k != "__import__":
                yield k, v


def samples() -> list[tuple[str, Any]]:
    """Instances that need particular arguments to be made (the walk makes the rest itself)."""
    imp, glb = importer()
    rnd, dt, col = imp("random", glb), imp("datetime", glb), imp("collections", glb)
    return [("random.Random(1)", rnd.Random(1)), ("datetime.datetime(...)", dt.datetime(2024, 1, 1, 12, 30)),
            ("re.compile('(?P<x>x)')", re.compile("(?P<x>x)")), ("re.match", re.match("x", "x")),
            ("a namedtuple", col.namedtuple("P", "x y")(1, 2)),
            ("itertools.groupby(...) group", next(iter(imp("itertools", glb).groupby("aab")))[1]),
            ("a decimal tuple", imp("decimal", glb).Decimal("1.5").as_tuple())]


def _instance(cls: type) -> Any:
    """An instance of ``cls`` made with the first small arguments it accepts, else ``None``."""
    if issubclass(cls, BaseException):
        return None  # their attributes are refused
    for args in _ARGS:
        try:
            return cls(*args)
        except Exception:
            continue
    return None


def walk(*, instances: bool = True, depth: int = 5, only: str | None = None) -> dict[str, Any]:
    """``path -> object`` for everything reachable through ``_getattr_`` (breadth first, first path wins);
    ``instances``: also instances of the reachable classes, and :func:`samples`; ``only``: from that module's
    view alone."""
    seen: set[int] = set()
    found: dict[str, Any] = {}  # holds every object walked, so the ids in `seen` stay theirs
    start = [*roots(only), *(samples() if instances and only is None else [])]
    queue: collections.deque[tuple[str, Any, int]] = collections.deque((p, o, 0) for p, o in start)
    while queue:
        path, obj, level = queue.popleft()
        if id(obj) in seen or level > depth:
            continue
        seen.add(id(obj))
        found[path] = obj
        if isinstance(obj, VALUES) and not isinstance(obj, type):
            base: Any = type(obj)  # str, int, ... values: their methods are walked on their type
        else:
            base = obj
        for name in dir(base):
            if name.startswith("_"):
                continue
            try:
                value = guarded_getattr(base, name)
            except (SandboxViolation, AttributeError, TypeError, ValueError):
                continue
            queue.append((f"{path}.{name}", value, level + 1))
        if instances and isinstance(obj, type):
            made = _instance(obj)
            if made is not None:
                queue.append((f"{path}()", made, level + 1))
    return found

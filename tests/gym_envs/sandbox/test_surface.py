"""``gym_envs.sandbox.surface``: every callable spec code can reach is classified, and what is taken out stays out.

The walk (:mod:`tests.gym_envs.sandbox.reach`) enumerates the reachable set afresh each run, from each allowed
module's view (re-exports included), the builtins, and instances of every reachable class. A new callable (a
new Python version adding a function, a module re-exporting another's) fails here by name until it is removed,
replaced, wrapped or allowed in :mod:`gym_envs.sandbox.surface`, with its reason.
"""

from __future__ import annotations

import decimal
import sys
from typing import Any

import pytest

from gym_envs.errors import ResourceLimit
from gym_envs.sandbox import Limits
from gym_envs.sandbox.guards import SHARED_ATTRIBUTES
from gym_envs.sandbox.modules import Views
from gym_envs.sandbox.sizes import SizeGuard
from gym_envs.sandbox.surface import ALLOWED, AUDITED_PYTHON, REMOVED, StandIn, canonical_name
from tests.gym_envs.sandbox.reach import IMMUTABLE, MODULES, importer, walk

_WALK: dict[str, Any] = {}


def _reachable() -> dict[str, Any]:
    """The full walk, made once per test session."""
    if not _WALK:
        _WALK.update(walk())
    return _WALK


def _sandbox_own(name: str) -> bool:
    return name.startswith("gym_envs.sandbox.")


def test_every_reachable_callable_is_classified() -> None:
    """The red team's class: a function reached through another allowed module, unwrapped. Every callable the
    walk finds is the sandbox's own stand-in or wrapper, or is allowed as it is, by name, with a reason."""
    unclassified: dict[str, str] = {}
    reachable = _reachable()
    assert len(reachable) > 1500  # the walk reaches the modules' classes, functions, methods and instances
    for path, obj in reachable.items():
        if not callable(obj) or isinstance(obj, StandIn):
            continue
        name = canonical_name(obj)
        assert name is not None, path
        if not _sandbox_own(name) and name not in ALLOWED:
            unclassified.setdefault(name, path)
    assert not unclassified, (
        "reachable callables that gym_envs/sandbox/surface.py does not classify (remove, replace, wrap or allow "
        "each, with its reason):\n" + "\n".join(f"  {n}  (reached as {p})" for n, p in sorted(unclassified.items())))


def test_removed_replaced_and_wrapped_originals_are_out_of_reach() -> None:
    """What the sandbox removes or replaces is gone under every name (``statistics.mul`` is ``operator.mul``,
    ``fractions.Decimal`` is ``decimal.Decimal``), and what ``_getattr_`` wraps is reached only as the wrapper."""
    replaced = Views(SizeGuard(Limits())).replaced
    gone = {id(o): f"removed ({why})" for o, why in REMOVED.items()}
    gone |= {i: "replaced" for i in replaced}
    wrapped = {canonical_name(getattr(cls, name)) for name, pairs in SHARED_ATTRIBUTES.items() for cls, _ in pairs}
    found = []
    for path, obj in _reachable().items():
        if id(obj) in gone:
            found.append(f"{path}: {gone[id(obj)]}")
        elif callable(obj) and not isinstance(obj, StandIn) and canonical_name(obj) in wrapped:
            found.append(f"{path}: wrapped by _getattr_, reached unwrapped")
    assert not found, "\n".join(found)
    imp, glb = importer()
    for module, name, original in (("statistics", "mul", "operator"), ("statistics", "repeat", "itertools"),
                                   ("statistics", "Decimal", "decimal"), ("fractions", "Decimal", "decimal"),
                                   ("statistics", "Fraction", "fractions")):
        assert getattr(imp(module, glb), name) is getattr(imp(original, glb), name)  # the re-export: the stand-in


@pytest.mark.skipif(sys.version_info[:2] != AUDITED_PYTHON, reason="the table was audited on another Python")
def test_the_allowed_table_has_no_stale_entries() -> None:
    names = {canonical_name(o) for o in _reachable().values() if callable(o) and not isinstance(o, StandIn)}
    assert not sorted(set(ALLOWED) - names)


@pytest.mark.parametrize("module", MODULES)
def test_a_view_that_reaches_decimal_gives_the_episode_its_own_context(module: str) -> None:
    """Decimal arithmetic reached through another module (``fractions.Decimal``, ``statistics.Decimal``) used to
    run in the host's context; a view from which anything of ``decimal`` is reachable is one whose import
    installs the episode's context."""
    reaches = [p for p, o in walk(only=module).items()
               if getattr(o, "__module__", None) in ("decimal", "_decimal", "_pydecimal")
               or isinstance(o, decimal.Decimal | decimal.Context)]
    if reaches:
        assert module in Views(SizeGuard(Limits())).decimal, reaches[:5]


def test_nothing_reachable_is_shared_mutable_state() -> None:
    """Every object reachable from the builtins and the views (shared by every episode of a process) is
    immutable or a class or function: no counter, cache, registry or configuration object that one episode,
    or the host, could change and another observe."""
    shared = [f"{p}: {type(o).__qualname__}" for p, o in walk(instances=False).items()
              if not callable(o) and not isinstance(o, IMMUTABLE) and "." in p]
    assert not shared, shared


def test_no_process_state_callable_is_reachable() -> None:
    """``id``, ``hash``, ``gc``, ``sys.getrefcount``, locks and the ABC cache token (a process-wide counter that
    ``functools.get_cache_token`` handed out) are out of reach."""
    process = ("builtins.id", "builtins.hash", "builtins.object.__hash__", "_abc.", "abc.", "gc.", "sys.", "os.",
               "_thread.", "threading.", "time.time", "time.monotonic", "time.perf_counter")
    found = sorted({f"{canonical_name(o)} ({p})" for p, o in _reachable().items()
                    if callable(o) and not isinstance(o, StandIn) and (canonical_name(o) or "").startswith(process)})
    assert not found, found


def test_every_reachable_path_to_multiplication_is_size_guarded() -> None:
    """Each reachable name of ``operator.mul``/``pow``/``lshift`` (and in-place forms), ``math.prod`` and the
    like, wherever re-exported, refuses an oversized result."""
    small = SizeGuard(Limits())
    calls = {"mul": ("ab", 10**9), "imul": ([0], 10**9), "pow": (10, 10**7), "ipow": (3, 10**7),
             "lshift": (1, 10**9), "ilshift": (1, 10**9), "prod": ([10**60_000, 10**60_000],),
             "factorial": (10**6,), "comb": (10**6, 5 * 10**5), "perm": (10**6,), "lcm": (*range(1, 10**5),)}
    guarded = {f"gym_envs.sandbox.sizes.{n}": args for n, args in calls.items()}
    seen = set()
    for obj in _reachable().values():
        name = canonical_name(obj) if callable(obj) else None
        if name in guarded:
            seen.add(name)
            with pytest.raises(ResourceLimit):
                obj(*guarded[name])
    assert seen == set(guarded)
    assert small.max_bits == Limits().max_int_bits

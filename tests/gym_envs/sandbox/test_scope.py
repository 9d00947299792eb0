"""``gym_envs.sandbox.scope``: the call scope, the soft deadline's lazy timer and the decimal context swap, in this
process."""

from __future__ import annotations

import decimal
import signal
import time
from collections.abc import Iterator

import pytest

from gym_envs.errors import CallTimeout
from gym_envs.sandbox import Engine, program_request, scope
from gym_envs.sandbox.db import Guard
from gym_envs.sandbox.scope import (
    DECIMAL_KEY,
    HOST_CONTEXT,
    CallScope,
    alarm_handler,
    arm,
    disarm,
    restore_decimal,
    use_decimal,
)
from tests.gym_envs.sandbox.attacks import LIMITS, make_spec


@pytest.fixture
def alarm() -> Iterator[None]:
    """The worker's SIGALRM handler, installed in this process for the test."""
    previous = signal.signal(signal.SIGALRM, alarm_handler)
    try:
        yield
    finally:
        disarm()
        signal.setitimer(signal.ITIMER_REAL, 0)
        scope._TIMER[0] = False  # the timer was cancelled here, behind the scope's back (a worker never does)
        signal.signal(signal.SIGALRM, previous)


def _spin_until_stopped(limit_s: float) -> float:
    start = time.monotonic()
    with pytest.raises(CallTimeout):
        while time.monotonic() - start < limit_s:
            pass
    return time.monotonic() - start


def test_a_loop_is_stopped_at_its_deadline(alarm: None) -> None:
    arm(0.2)
    try:
        took = _spin_until_stopped(5.0)
    finally:
        disarm()
    assert 0.15 < took < 1.0


def test_the_timer_of_an_earlier_call_does_not_cut_a_later_one_short(alarm: None) -> None:
    """Calls only record their deadline; the one pending timer, started for an earlier call, re-arms itself
    for the rest of the running call's time instead of stopping it early."""
    for _ in range(50):  # quick calls: the first starts the timer, the others only move the deadline
        arm(0.3)
        disarm()
    time.sleep(0.15)
    arm(0.3)  # the pending timer fires about 0.15 s into this call
    try:
        took = _spin_until_stopped(5.0)
    finally:
        disarm()
    assert took > 0.25, took


def test_a_disarmed_deadline_never_fires(alarm: None) -> None:
    arm(0.05)
    disarm()
    time.sleep(0.15)  # the timer fires into a disarmed deadline and stops
    arm(0.3)
    disarm()
    time.sleep(0.05)


def test_a_loop_that_survives_the_first_stop_is_stopped_again(alarm: None) -> None:
    arm(0.1)
    stops = 0
    start = time.monotonic()
    try:
        while stops < 3 and time.monotonic() - start < 5:
            try:
                while True:
                    pass
            except CallTimeout:
                stops += 1
    finally:
        disarm()
    assert stops == 3 and time.monotonic() - start < 2


def test_the_decimal_context_is_swapped_and_restored() -> None:
    sandbox = decimal.Context(prec=7)
    host = decimal.getcontext()
    use_decimal(sandbox)
    assert decimal.getcontext() is sandbox and [host] == HOST_CONTEXT
    use_decimal(sandbox)  # already installed: nothing more to restore
    assert [host] == HOST_CONTEXT
    restore_decimal()
    assert decimal.getcontext() is host and HOST_CONTEXT == []
    restore_decimal()  # nothing installed: nothing to do
    assert decimal.getcontext() is host


def test_the_call_scope_installs_and_removes_everything_even_on_failure(alarm: None) -> None:
    guard, token, ctx = Guard(), object(), decimal.Context(prec=7)
    host = decimal.getcontext()
    guard.owner = "previous"
    scope_ = CallScope(guard, token, {DECIMAL_KEY: ctx}, 5.0)
    for _ in range(2):  # a scope is entered again for each call
        with scope_:
            assert guard.owner is token and decimal.getcontext() is ctx and scope._ARMED[0]
        assert guard.owner == "previous" and decimal.getcontext() is host and not scope._ARMED[0]
        assert not HOST_CONTEXT
    with pytest.raises(ZeroDivisionError), scope_:
        1 / 0  # noqa: B018
    assert guard.owner == "previous" and decimal.getcontext() is host and not scope._ARMED[0] and not HOST_CONTEXT
    with CallScope(guard, None, {}, 0.0):  # no context, no deadline: only the owner changes
        assert guard.owner is None and decimal.getcontext() is host and not scope._ARMED[0]
    assert guard.owner == "previous"


def test_each_episode_computes_in_its_own_decimal_context() -> None:
    """Importing a module that holds ``decimal``'s classes gives the episode a context of its own (before, one
    context was shared by every episode of the engine), whichever module it was."""
    engine = Engine(LIMITS)
    req = program_request(make_spec("import statistics\ndef t(db, **kw):\n    return str(statistics.Decimal(1) / 3)"))
    assert engine.handle(req)["ok"]
    for ep in ("a", "b"):
        assert engine.handle({"op": "open", "key": req["key"], "ep": ep, "seed": 1})["ok"]
        assert engine.handle({"op": "call", "ep": ep, "name": "t", "arguments": {}})["ok"]
    a, b = (engine.episodes[ep].glb[DECIMAL_KEY] for ep in ("a", "b"))
    assert isinstance(a, decimal.Context) and isinstance(b, decimal.Context) and a is not b
    assert a.flags[decimal.Inexact] and decimal.getcontext() is not a and not HOST_CONTEXT

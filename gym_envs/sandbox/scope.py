"""The call scope: what the engine installs around every piece of spec code, and removes after it.

* The connection's **owner token** (:attr:`gym_envs.sandbox.db.Guard.owner`): a ``db`` works only while
  its own token is installed; the engine saves the previous one, installs it and restores it after.
* The **decimal context**: an episode that imported a module whose view holds ``decimal``'s classes
  (``decimal``, ``fractions``, ``statistics``) computes in its own context, a copy of the sandbox's, never the
  host thread's. The import hook installs it (:func:`use_decimal`) the moment an episode imports such a
  module and keeps it in the episode's globals under :data:`DECIMAL_KEY`; the engine installs it on entry for
  episodes that did, and :func:`restore_decimal` puts the host's back on the way out. Episodes that never
  import one pay nothing.
* The worker's **soft deadline**: :func:`arm` records the call's deadline and starts the interval timer
  only when none is pending; :func:`alarm_handler` (the worker's SIGALRM handler) raises
  :class:`~gym_envs.errors.CallTimeout` once the deadline has passed, re-arming the timer for the rest
  otherwise, and fires again every 50 ms while the code survives (a loop in a ``finally:``). A call costs
  a clock read, not a system call.
"""

from __future__ import annotations

import decimal
import signal
import time
from typing import Any

from gym_envs.errors import CallTimeout

__all__ = ["DECIMAL_KEY", "HOST_CONTEXT", "alarm_handler", "arm", "disarm", "restore_decimal", "use_decimal"]

DECIMAL_KEY = "__envwright_decimal__"  #: in an episode's globals: its decimal context (code cannot name it)

_getcontext, _setcontext = decimal.getcontext, decimal.setcontext
HOST_CONTEXT: list[decimal.Context] = []  #: the host thread's context while the sandbox's is installed
_monotonic = time.monotonic
_ARMED = [False]  #: spec code runs under a deadline
_DEADLINE = [0.0]  #: when it ends (monotonic)
_TIMER = [False]  #: the interval timer is pending


def use_decimal(ctx: decimal.Context) -> None:
    """Install ``ctx`` as the thread's decimal context, keeping the host's for :func:`restore_decimal`."""
    current = _getcontext()
    if current is not ctx:
        HOST_CONTEXT.append(current)
        _setcontext(ctx)


def restore_decimal() -> None:
    """Put the host's decimal context back, if the sandbox's is installed."""
    if HOST_CONTEXT:
        _setcontext(HOST_CONTEXT.pop())


def arm(seconds: float) -> None:
    """Start a deadline ``seconds`` from now for the spec code about to run."""
    _DEADLINE[0] = _monotonic() + seconds
    _ARMED[0] = True
    if not _TIMER[0]:
        _TIMER[0] = True
        signal.setitimer(signal.ITIMER_REAL, seconds)


def disarm() -> None:
    """End the deadline (idempotent); a timer that fires later finds it disarmed and stops."""
    _ARMED[0] = False


def alarm_handler(signum: int, frame: Any) -> None:
    """The worker's SIGALRM handler (see the module docstring)."""
    if not _ARMED[0]:
        _TIMER[0] = False
        return
    remaining = _DEADLINE[0] - _monotonic()
    if remaining > 0.001:  # the timer was started for an earlier call: wait for the rest of this one's
        signal.setitimer(signal.ITIMER_REAL, remaining)
        return
    signal.setitimer(signal.ITIMER_REAL, 0.05)  # again, should the code survive this one
    raise CallTimeout()

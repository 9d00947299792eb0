"""The call scope: what the engine installs around every piece of spec code, and removes after it.

:class:`CallScope` is the one way the engine enters it (``with scope:`` around a tool call, a check, a program's
module level); on the way out it removes, in reverse order and whatever happened, what it installed:

* The connection's **owner token** (:attr:`gym_envs.sandbox.db.Guard.owner`): a ``db`` works only while
  its own token is installed; the engine saves the previous one, installs it and restores it after.
* The **decimal context**: an episode that imported a module whose view holds ``decimal``'s classes
  (``decimal``, ``fractions``, ``statistics``) computes in its own context, a copy of the sandbox's, never the
  host thread's. The import hook installs it (:func:`use_decimal`) the moment an episode imports such a
  module and keeps it in the episode's globals under :data:`DECIMAL_KEY`; the scope installs it on entry for
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
import sys
import time
from types import FrameType
from typing import TYPE_CHECKING, Any

from gym_envs.errors import CallTimeout

if TYPE_CHECKING:
    from gym_envs.sandbox.db import Guard

__all__ = ["DECIMAL_KEY", "HOST_CONTEXT", "CallScope", "alarm_handler", "arm", "disarm", "restore_decimal",
           "use_decimal"]

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


def _frames() -> int:
    """The number of Python frames on the stack up to the frame that entered the scope."""
    f: FrameType | None = sys._getframe(2)
    n = 0
    while f is not None:
        n += 1
        f = f.f_back
    return n


class CallScope:
    """``with scope:`` runs its block as spec code of one episode (a scope is entered by one block at a time; the
    engine keeps one per episode for its calls).

    On entry the connection guard's owner token becomes ``owner`` (the previous one is saved), the episode's
    decimal context is installed when its globals ``glb`` hold one (:data:`DECIMAL_KEY`), and a ``deadline_s``
    above 0 is armed (:func:`arm`; a worker's engine); with a ``headroom`` (a worker's engine) the recursion
    limit leaves spec code exactly that many frames above the frame that entered the scope, whatever path called
    it (a single call, a batch, a check), so it cannot tell how it was called. On exit the deadline is disarmed,
    the owner restored and the host's decimal context put back, even when the block raised (the exception goes on).
    """

    __slots__ = ("_deadline_s", "_glb", "_guard", "_headroom", "_owner", "_saved")

    def __init__(self, guard: Guard, owner: object | None, glb: dict[str, Any], deadline_s: float,
                 headroom: int = 0):
        self._guard = guard
        self._owner = owner
        self._glb = glb
        self._deadline_s = deadline_s
        self._headroom = headroom
        self._saved: object | None = None

    def __enter__(self) -> None:
        guard = self._guard
        self._saved = guard.owner
        guard.owner = self._owner
        try:
            context = self._glb.get(DECIMAL_KEY)
            if context is not None:
                use_decimal(context)
            if self._headroom:  # spec code starts with this many frames left, whatever path called it
                sys.setrecursionlimit(_frames() + self._headroom)
            if self._deadline_s:
                arm(self._deadline_s)
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            if self._deadline_s:
                disarm()
        finally:
            self._guard.owner = self._saved
            if HOST_CONTEXT:
                restore_decimal()


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

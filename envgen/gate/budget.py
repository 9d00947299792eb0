"""The gate's total budget for one spec (validity rule 9): wall time and calls, whatever each call costs.

Every tool call and check of a spec runs inside the executor's per-call limits, but the gate plays a
hundred or more trajectories per spec, so a spec whose every call takes just under its limit, or that
has very many tasks and tools, could hold the gate for many minutes. :class:`GateBudget` bounds one
spec's whole run; :class:`GateEnv` (the :class:`~gym_envs.env.ToolEnv` the gate plays on) charges a
:class:`BudgetMeter` before each thing it asks the executor to do, and the meter raises
:class:`BudgetExceeded` once either budget is spent. The gate turns that into a rejection (rule 9) that
says which budget ran out and how much was used.

What counts as a call: each tool call (a replayed one too), each check evaluated, each reset. The
defaults leave a wide margin over what well-made specs need: the shipped examples and a 200-document
template library use at most a few thousand calls and a few seconds each.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gym_envs.env import ToolEnv

__all__ = ["BudgetExceeded", "BudgetMeter", "GateBudget", "GateEnv"]


@dataclass(frozen=True)
class GateBudget:
    """What one spec's run through the gate may use."""

    wall_s: float = 120.0  #: wall-clock seconds, from the start of the run (loading the spec included)
    calls: int = 30_000  #: tool calls, check evaluations and resets

    def __post_init__(self) -> None:
        if not self.wall_s > 0:
            raise ValueError(f"GateBudget.wall_s must be a positive number of seconds, got {self.wall_s!r}")
        if isinstance(self.calls, bool) or not isinstance(self.calls, int) or self.calls < 1:
            raise ValueError(f"GateBudget.calls must be a positive integer, got {self.calls!r}")


class BudgetExceeded(Exception):
    """A spec's run used up its :class:`GateBudget`: ``which`` is ``"wall_s"`` or ``"calls"``."""

    def __init__(self, which: str, used: float, limit: float, calls: int, seconds: float):
        self.which, self.used, self.limit, self.calls, self.seconds = which, used, limit, calls, seconds
        what = (f"its wall-time budget ran out: {seconds:.1f} s used of {limit:g} s ({calls} tool calls and check "
                "evaluations made)" if which == "wall_s" else
                f"its call budget ran out: {calls} of {int(limit)} tool calls and check evaluations used, in "
                f"{seconds:.1f} s")
        super().__init__(what)


class BudgetMeter:
    """Counts what a run uses against a :class:`GateBudget` (``clock``: seconds, for tests)."""

    def __init__(self, budget: GateBudget, *, start: float | None = None,
                 clock: Callable[[], float] = time.perf_counter):
        self.budget = budget
        self.clock = clock
        self.start = clock() if start is None else start
        self.calls = 0

    @property
    def seconds(self) -> float:
        return self.clock() - self.start

    def charge(self, calls: int = 1) -> None:
        """Count ``calls`` more; :class:`BudgetExceeded` when either budget is spent."""
        self.calls += calls
        seconds = self.seconds
        if self.calls > self.budget.calls:
            raise BudgetExceeded("calls", self.calls, self.budget.calls, self.calls, seconds)
        if seconds > self.budget.wall_s:
            raise BudgetExceeded("wall_s", seconds, self.budget.wall_s, self.calls, seconds)


class GateEnv(ToolEnv):
    """A :class:`~gym_envs.env.ToolEnv` that charges :attr:`meter` before each request it makes. Its episodes take
    the results of calls that change nothing from what the executor remembers (:attr:`ToolEnv.recall_calls`),
    unless the run turns that off (the determinism rule's replay does)."""

    recall_calls = True

    def __init__(self, spec: Any, meter: BudgetMeter, **kwargs: Any):
        super().__init__(spec, **kwargs)
        self.meter = meter

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        self.meter.charge(1)
        return super().reset(seed=seed, options=options)

    def reset_to_turn(self, turn: int, calls: Sequence[Mapping[str, Any]], *, seed: int | None = None,
                      options: dict[str, Any] | None = None,
                      history: Sequence[str] = ()) -> tuple[str, dict[str, Any]]:
        self.meter.charge(1 + len(calls))
        return super().reset_to_turn(turn, calls, seed=seed, options=options, history=history)

    def call_tools(self, calls: Sequence[Mapping[str, Any]], *, offer_all: bool = False, continues: bool = False,
                   ends: bool = True) -> list[Any]:
        self.meter.charge(len(calls))
        return super().call_tools(calls, offer_all=offer_all, continues=continues, ends=ends)

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.meter.charge(1 + (len(self.task.turns[self.turn_index].checks) if self.task is not None
                               and not self.done else 0))
        return super().step(action)

    def say(self, text: str) -> Any:
        self.meter.charge(1)
        return super().say(text)

    def score_view(self, view: Any, only: Sequence[int] | None = None,
                   checks: Sequence[Any] | None = None) -> list[Any]:
        if only is not None:
            only = list(only)
        if checks is None and self.task is not None:
            checks = self.task.turns[self.turn_index].checks
        self.meter.charge(len(only) if only is not None else len(checks or ()))
        return super().score_view(view, only, checks)

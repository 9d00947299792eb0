"""The compiler's simulator: runs candidate calls on the rendered environment to write tasks from what happens.

Role: the task writer never predicts what a tool does; it runs the tool. :class:`Simulator` loads the
rendered state and code once in an in-process executor (the code is the compiler's own rendering,
trusted like the shipped examples), and each :class:`Run` is one episode: calls go in, their results
come out, and :meth:`Run.tables` reads the whole state back. Checks are derived from the state the
reference actually reaches, so a task's checks and its tools cannot disagree.

Contract: a :class:`Run` starts from the seed state; ``Run.call`` never raises (a refused call is a
:class:`~gym_envs.sandbox.CallResult` with ``ok`` false); :meth:`Simulator.close` releases the executor.
"""

from __future__ import annotations

from typing import Any

from gym_envs.sandbox import CallResult
from gym_envs.sandbox.inprocess import InProcessExecutor
from gym_envs.spec import EnvSpec

__all__ = ["Run", "Simulator"]


class Run:
    """One episode of the simulator."""

    def __init__(self, sim: Simulator):
        self.sim = sim
        self.session = sim.executor.session(sim.spec, 0)
        self.log: list[CallResult] = []

    def call(self, name: str, arguments: dict[str, Any]) -> CallResult:
        result = self.session.call(name, dict(arguments))
        self.log.append(result)
        return result

    def calls(self, calls: list[dict[str, Any]]) -> list[CallResult]:
        return [self.call(c["name"], c["arguments"]) for c in calls]

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        """Every table's rows (``id`` included), as the episode holds them now."""
        dumped = self.session.dump(None, limit=100_000)
        out: dict[str, list[dict[str, Any]]] = {}
        for name, t in dumped.items():
            cols = t["columns"]
            out[name] = [dict(zip(cols, r, strict=True)) for r in t["rows"]]
        return out

    def digests(self) -> dict[str, str]:
        return dict(self.session.digest()["tables"])

    def close(self) -> None:
        self.session.close()


class Simulator:
    """The rendered environment, loaded once; :meth:`run` opens an episode."""

    def __init__(self, spec: EnvSpec):
        self.spec = spec
        self.executor = InProcessExecutor()
        loaded = self.executor.load(spec)
        if not loaded.get("ok", True):
            raise ValueError(f"the rendered environment does not load: {loaded.get('error')}")

    def run(self, calls: list[dict[str, Any]] | None = None) -> Run:
        r = Run(self)
        if calls:
            r.calls(calls)
        return r

    def close(self) -> None:
        self.executor.close()

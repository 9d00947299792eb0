"""How the gate scores a wrong trajectory's checks cheaply, with the verdicts the runtime gives.

Role: helpers of :class:`~envgen.gate.adequacy.MutationRun`. A wrong trajectory's verdict needs one failed
check other than ``calls``, so its checks are scored cheapest first and scoring stops at the first failure:

* ``reply_contains`` and ``calls`` checks are judged here (:func:`local_verdicts`) with the runtime's own
  :func:`~gym_envs.sandbox.checks.evaluate`; they read no state, except a ``reply_contains`` check whose
  string answer the reply contains (the candidates it may name come from the state:
  :func:`~gym_envs.sandbox.checks.needs_state`), which the runtime judges on the trajectory's state;
* then the state checks in the stages of :func:`stages`.
"""

from __future__ import annotations

from typing import Any

from gym_envs.sandbox.checks import evaluate, needs_state
from gym_envs.spec import Turn

__all__ = ["CHECK_NOTES", "LOCAL", "caught", "detail", "guards_all", "local_verdicts", "stages"]

COSTLY = ("python", "unchanged")  #: check kinds scored only when the cheap ones catch nothing
LOCAL = ("reply_contains", "calls")  #: check kinds judged here, without the runtime (unless needs_state)
CHECK_NOTES = {"calls": "only a `calls` check fails, and a calls check alone never makes a turn adequate",
               "pass": "it passes every check"}

def local_verdicts(checks: list[dict[str, Any]], reply: str, calls: list[Any]) -> tuple[list[dict[str, Any]],
                                                                                         list[int]]:
    """The verdicts of a turn's ``reply_contains`` and ``calls`` checks (``checks``: the turn's, as the engine takes
    them: :func:`~gym_envs.sandbox.checks.with_turn_answers`) that read no state, and the indexes of those whose
    verdict on ``reply`` reads the state (the runtime scores them)."""
    ok = [c.name for c in calls if c.ok]
    attempted = [c.name for c in calls]
    out: list[dict[str, Any]] = []
    pending: list[int] = []
    for i, check in enumerate(checks):
        if check["kind"] not in LOCAL:
            continue
        if needs_state(check, reply):
            pending.append(i)
            continue
        v = evaluate(check, reply, ok, attempted, sql=_no_state, python=_no_state, digests=_no_state, marks={},
                     columns=_no_state)
        out.append({"index": i, "kind": check["kind"], "passed": v.get("passed") is True,
                    "detail": str(v.get("detail", ""))})
    return out, pending


def guards_all(turn: Turn) -> bool:
    """Whether the turn has an ``unchanged`` check on every table: then every extra write is caught by
    construction (a call that changes the state changes some table), so no extra-write mutant is played."""
    return any(c.kind == "unchanged" and not c.tables for c in turn.checks)


def caught(checks: list[dict[str, Any]]) -> bool:
    """Whether a check other than ``calls`` failed (what catches a wrong trajectory)."""
    return any(not c["passed"] and c["kind"] != "calls" for c in checks)


def stages(turn: Turn) -> list[list[int]]:
    """The indexes of the turn's state checks in the order a mutant is scored, stopping once one fails.

    The first ``sql`` check alone (it catches most mutants), the other cheap ones, then the costly ones
    (``python``, ``unchanged``). Reply and calls checks are judged before, by :func:`local_verdicts`."""
    kinds = [c.kind for c in turn.checks]
    cheap = [i for i, k in enumerate(kinds) if k not in COSTLY and k not in LOCAL]
    first = cheap[:1]
    out = [first, [i for i in cheap if i not in first], [i for i, k in enumerate(kinds) if k in COSTLY]]
    return [s for s in out if s]


def detail(check: dict[str, Any]) -> str:
    """A failed check's verdict in one line, for a mutant's record."""
    return f"check {check['index'] + 1} ({check['kind']}) failed: {check.get('detail', '')}"


def _no_state(*_: Any) -> Any:
    raise RuntimeError("a reply or calls check read the state")

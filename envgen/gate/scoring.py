"""How the gate scores a wrong trajectory's checks cheaply, with the verdicts the runtime gives.

Role: helpers of :class:`~envgen.gate.adequacy.MutationRun`, read from the check kinds' classes
(:mod:`gym_envs.checks`). A wrong trajectory's verdict needs one failed check that catches it (its kind's
:meth:`~gym_envs.checks.BaseCheck.catches` for the mutant's kind: a ``calls`` check alone never does unless its
patterns pin arguments and the mutant changed some; a ``judged`` check never is scored), so its checks are scored
cheapest first and scoring stops at the first such failure:

* the checks that read no state for this trajectory (kinds of cost ``local`` whose
  :meth:`~gym_envs.checks.BaseCheck.probes` ask nothing: ``calls``, ``confirmed``, ``calls_per_message``, a
  ``reply_contains`` check whose reply names no string answer) are judged here (:func:`local_verdicts`) by the
  runtime's own :func:`~gym_envs.checks.judge`; a local check that does read the state (a reply that names a string
  answer: the candidates it may name come from the state) goes with the first state stage;
* then the state checks in the stages of :func:`stages` (by each kind's ``cost``).
"""

from __future__ import annotations

from typing import Any

from gym_envs.checks import BaseCheck, TurnView, judge
from gym_envs.spec import Turn

__all__ = ["CHECK_NOTES", "catches", "caught", "detail", "guards_all", "local_verdicts", "stages", "uncaught_note"]

CHECK_NOTES = {"pass": "it passes every check"}


def local_verdicts(checks: list[BaseCheck], view: TurnView) -> tuple[list[dict[str, Any]], list[int]]:
    """The verdicts of a turn's ``local`` checks that read no state on ``view``, and the indexes of the local ones
    whose verdict reads the state (the runtime scores them with the state checks)."""
    local = [i for i, c in enumerate(checks) if c.scored and c.cost == "local"]
    pending = [i for i in local if checks[i].probes(view)]
    now = [i for i in local if i not in pending]
    return ([r.to_dict() for r in judge(None, checks, view, now)] if now else []), pending


def guards_all(turn: Turn) -> bool:
    """Whether a check of the turn fails on any write at all (an ``unchanged`` check on every table): then every extra
    write is caught by construction, so no extra-write mutant is played."""
    return any(c.guards_all_writes() for c in turn.checks)


def catches(turn: Turn, verdict: dict[str, Any], mutant: str) -> bool:
    """Whether ``verdict`` (a failed check of ``turn``) catches a wrong trajectory of kind ``mutant``."""
    return not verdict["passed"] and turn.checks[verdict["index"]].catches(mutant)


def caught(turn: Turn, checks: list[dict[str, Any]], mutant: str) -> bool:
    """Whether a failed check catches a wrong trajectory of kind ``mutant`` (what kills it)."""
    return any(catches(turn, c, mutant) for c in checks)


def uncaught_note(turn: Turn, checks: list[dict[str, Any]]) -> str:
    """Why no failed check caught a trajectory: it passes them all, or only kinds that alone catch nothing of it
    failed (a ``calls`` check catches only calls whose arguments its patterns pin)."""
    failed = sorted({c["kind"] for c in checks if not c["passed"]})
    if not failed:
        return CHECK_NOTES["pass"]
    which = f"a `{failed[0]}` check fails" if len(failed) == 1 else \
        f"{' and '.join(f'`{k}`' for k in failed)} checks fail"
    return f"only {which}, and such a check alone never makes a turn adequate against this wrong trajectory"


def stages(turn: Turn) -> list[list[int]]:
    """The indexes of the turn's state checks in the order a mutant is scored, stopping once one catches it.

    The first ``cheap`` check alone (a ``sql`` check catches most mutants), the other cheap ones, then the
    ``costly`` ones (``python``, ``unchanged``, ``state``). The ``local`` checks are judged before
    (:func:`local_verdicts`)."""
    cheap = [i for i, c in enumerate(turn.checks) if c.scored and c.cost == "cheap"]
    first = cheap[:1]
    out = [first, [i for i in cheap if i not in first],
           [i for i, c in enumerate(turn.checks) if c.scored and c.cost == "costly"]]
    return [s for s in out if s]


def detail(check: dict[str, Any]) -> str:
    """A failed check's verdict in one line, for a mutant's record."""
    return f"check {check['index'] + 1} ({check['kind']}) failed: {check.get('detail', '')}"

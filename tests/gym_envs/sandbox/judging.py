"""Scoring check dicts on a sandbox session, as ``ToolEnv`` scores a turn's checks (:func:`gym_envs.checks.judge`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gym_envs.checks import CallView, TurnView, judge, parse_check
from gym_envs.sandbox import CheckResult, Session


def check(session: Session, checks: Sequence[dict[str, Any]], reply: str = "", calls: Sequence[str] = (),
          attempted: Sequence[str] | None = None) -> list[CheckResult]:
    """The verdicts of ``checks`` on the session's state after a turn that replied ``reply``, made the successful
    calls ``calls`` and attempted ``attempted`` (default: ``calls``), by tool name."""
    left = list(calls)
    views = []
    for i, name in enumerate(calls if attempted is None else attempted):
        ok = name in left
        if ok:
            left.remove(name)
        views.append(CallView(name, {}, ok, i))
    return judge(session, [parse_check(c) for c in checks], TurnView(reply, tuple(views)))

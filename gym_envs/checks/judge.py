"""Scoring a turn's checks: the probes of every check in one round trip to the sandbox, then each verdict here.

:func:`judge` is the one place checks are scored (``ToolEnv`` and the validity gate call it): it collects what each
check must read of the state (:meth:`~gym_envs.checks.base.BaseCheck.probes`, the same probe asked once), sends
them to the episode's sandbox session in one request (none when no check reads the state), and computes each
verdict on the host. A check whose probe failed (a timeout, an error of its SQL or code) fails with that error; a
verdict that raises fails its check with the exception's text. A failure is data: scoring never raises for a check.
``judged`` checks (``scored`` false) are never scored here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from gym_envs.checks.base import BaseCheck, TurnView, Verdict
from gym_envs.errors import exception_text
from gym_envs.sandbox.host import CheckResult

if TYPE_CHECKING:
    from gym_envs.sandbox import Session

__all__ = ["answers_of", "judge"]


def answers_of(checks: Sequence[BaseCheck]) -> tuple[str, ...]:
    """Every answer string of a turn's checks (each kind's :meth:`~gym_envs.checks.BaseCheck.answers`: what
    :attr:`TurnView.answers` holds)."""
    return tuple(s for c in checks for s in c.answers())


def judge(session: Session | None, checks: Sequence[BaseCheck], view: TurnView,
          only: Sequence[int] | None = None) -> list[CheckResult]:
    """The verdicts of a turn's ``checks`` (those at the indexes ``only``, default every scored one) on ``view`` and
    the session's current state. Each result's ``index`` is the check's index in ``checks``. ``view.answers`` is
    filled from ``checks`` when empty. ``session`` may be None when no chosen check reads the state."""
    if not view.answers:
        answers = answers_of(checks)
        if answers:
            view = replace(view, answers=answers)
    picked = [i for i in (range(len(checks)) if only is None else only) if checks[i].scored]
    plans: list[list[Any]] = []
    unique: dict[Any, dict[str, Any]] = {}
    for i in picked:
        keys = []
        for p in checks[i].probes(view):
            key = _probe_key(p)
            unique.setdefault(key, p)
            keys.append(key)
        plans.append(keys)
    got: list[dict[str, Any]] | str = _probe(session, list(unique.values())) if unique else []
    answered = dict(zip(unique, got, strict=True)) if isinstance(got, list) else {}
    out = []
    for i, keys in zip(picked, plans, strict=True):
        check = checks[i]
        if isinstance(got, str) and keys:
            v = Verdict(False, got)
        else:
            failed = next((answered[k] for k in keys if not answered[k].get("ok")), None)
            v = Verdict(False, str(failed.get("error", "the state could not be read"))) if failed else \
                _verdict(check, view, [answered[k].get("value") for k in keys])
        out.append(CheckResult(i, check.kind, v.passed is True, v.detail))
    return out


def _probe_key(probe: dict[str, Any]) -> Any:
    """A key equal for equal probes (as JSON): a one-kind probe of a string, None or a list of strings (every probe
    kind's shape) is keyed by its kind and value as they are, any other by its JSON text."""
    if len(probe) == 1:
        (kind, arg), = probe.items()
        c = arg.__class__
        if c is str or arg is None:
            return kind, arg
        if (c is list or c is tuple) and all(a.__class__ is str for a in arg):
            return kind, tuple(arg)
    return json.dumps(probe, sort_keys=True)


def _verdict(check: BaseCheck, view: TurnView, answers: list[Any]) -> Verdict:
    try:
        return check.verdict(view, answers)
    except Exception as e:  # the boundary: a verdict that breaks on what it was given fails its check, never the turn
        return Verdict(False, exception_text(e))


def _probe(session: Session | None, probes: list[dict[str, Any]]) -> list[dict[str, Any]] | str:
    """The sandbox's answers to ``probes``, or why none came (every check that needed one fails with it)."""
    if session is None:
        return "no episode to read the state of"
    resp = session.probe(probes)
    if not resp.get("ok"):
        return f"{resp.get('error_type')}: {resp.get('error')}"
    results = resp.get("results")
    if not isinstance(results, list) or len(results) != len(probes):
        return "the sandbox answered the checks' probes out of shape"
    return results

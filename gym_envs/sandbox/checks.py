"""Check evaluation: the verdict of one check of a turn on the episode's state after the turn.

:func:`evaluate` judges the five kinds of gym_envs/ENVSPEC.md. The engine hands it the two ways of reading the
state that run untrusted code, both inside the engine's call scope: ``sql(query)`` runs a query in the
read-only mode, ``python(code)`` runs a ``check(db)`` function on the read-only facade and returns its
verdict (:func:`python_verdict`). Only JSON crosses
back: a verdict ``{"passed": bool, "detail": str}``, and a ``python`` check passes only when it returns
the real ``True``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from gym_envs.errors import CallTimeout, cap_text, describe

__all__ = ["evaluate", "python_verdict"]

_SCALARS = (bool, int, float, str, type(None))


def evaluate(check: dict[str, Any], reply: str, calls: list[str], attempted: list[str], *,
             sql: Callable[[str], list[dict[str, Any]]], python: Callable[[str], dict[str, Any]],
             digests: Callable[[list[str] | None], dict[str, str]], marks: dict[str, str]) -> dict[str, Any]:
    """One check's verdict. ``calls``: the turn's successful calls (``require``); ``attempted``: every call
    it tried (``forbid``); ``digests(tables)``: table digests now; ``marks``: the digests at the turn's start."""
    kind = check.get("kind")
    try:
        if kind == "sql":
            return _sql(check, sql)
        if kind == "python":
            return python(check["code"])
        if kind == "reply_contains":
            low = reply.lower()
            hit = [s for s in check["any_of"] if s.lower() in low]
            return {"passed": bool(hit), "detail": f"found {hit[0]!r}" if hit else
                    f"the reply contains none of {check['any_of']}"}
        if kind == "unchanged":
            now = digests(check.get("tables") or None)
            changed = [t for t, d in now.items() if marks.get(t) != d]
            if not check.get("tables"):
                changed += [t for t in marks if t not in now]
            return {"passed": not changed, "detail": f"changed: {sorted(changed)}" if changed else "unchanged"}
        if kind == "calls":
            missing = [n for n in check.get("require", []) if n not in calls]
            bad = [n for n in check.get("forbid", []) if n in attempted]
            detail = "; ".join(filter(None, [f"missing calls {missing}" if missing else "",
                                             f"forbidden calls {bad}" if bad else ""]))
            return {"passed": not missing and not bad, "detail": detail or "ok"}
        return {"passed": False, "detail": f"unknown check kind {kind!r}"}
    except CallTimeout:
        return {"passed": False, "detail": "check timed out"}
    except Exception as e:  # the boundary: a check whose evaluation raises (its SQL, its values) fails
        return {"passed": False, "detail": describe(e, 500)["error"]}


def _sql(check: dict[str, Any], sql: Callable[[str], list[dict[str, Any]]]) -> dict[str, Any]:
    rows = sql(check["query"])
    got = json.loads(json.dumps([list(r.values()) for r in rows], default=repr))
    want = json.loads(json.dumps(check["expect"]))
    if not check.get("ordered", False):
        key = functools.partial(json.dumps, sort_keys=True)
        ok = sorted(got, key=key) == sorted(want, key=key)
    else:
        ok = got == want
    return {"passed": ok, "detail": "rows match" if ok else
            cap_text(f"expected {json.dumps(want)}, got {json.dumps(got)}", 300)}


def python_verdict(value: Any) -> dict[str, Any]:
    """The verdict of a ``python`` check whose ``check(db)`` returned ``value``."""
    if value is True:
        return {"passed": True, "detail": "check(db) returned True"}
    shown = repr(value) if type(value) in _SCALARS else type(value).__name__
    return {"passed": False, "detail": f"check(db) returned {cap_text(shown, 100)}, not True"}

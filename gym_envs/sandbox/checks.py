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
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from gym_envs.errors import CallTimeout, cap_text
from gym_envs.sandbox.reprs import described

__all__ = ["MAX_REPLY_NUMBERS", "evaluate", "python_verdict", "reply_contains", "text_contains"]

_SCALARS = (bool, int, float, str, type(None))

_NUMERIC = re.compile(r"^[-+]?\d+(?:\.\d+)?$")  #: a ``reply_contains`` string that is a number
#: a run of digits with its separators, standing on its own (not part of a word, an identifier or a longer number)
_NUMBER_TOKEN = re.compile(r"(?<![\w.,])(-?)(\d+(?:[.,]\d+)*)(?![\w]|[.,]\d)")
_THOUSANDS = re.compile(r"^\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
#: a reply that names more distinct numbers than this passes no numeric ``reply_contains`` check: a list of every
#: candidate is no answer
MAX_REPLY_NUMBERS = 20


def _is_code(digits: str) -> bool:
    """A run of digits with a leading zero (``06``, ``0042``): a code or a date's part, not a quantity."""
    return len(digits) > 1 and digits[0] == "0" and digits[1].isdigit()


def _numbers(text: str) -> list[Decimal]:
    """The numbers a text names, each standing on its own: ``1,670.50`` is one number, ``3,4,5`` three, the
    digits inside ``T-1042`` or ``v2`` none; a ``-`` right before a number is its sign unless it joins two words
    or numbers (``2024-06-10``); a part with a leading zero (``06``, ``0042``) is a code, not a number."""
    out: list[Decimal] = []
    for m in _NUMBER_TOKEN.finditer(text):
        sign, body = m.group(1), m.group(2)
        if sign and m.start() > 0 and text[m.start() - 1].isalnum():
            sign = ""  # 2024-06-10, A-12: a joiner, not a sign
        parts = [body.replace(",", "")] if _THOUSANDS.match(body) else body.split(",")
        for part in parts:
            if _is_code(part):
                continue
            try:
                value = Decimal(part)
            except InvalidOperation:
                continue
            out.append(value.copy_negate() if sign else value)  # exact: no decimal context involved
    return out


def _find(text: str, s: str, numbers: list[Decimal] | None) -> bool:
    """Whether ``text`` contains the stripped string ``s``; ``numbers``: ``_numbers(text)`` when ``s`` is a
    number (it is then found as a number of its own), else None."""
    if numbers is not None and not _is_code(s.lstrip("+-")):
        return Decimal(s) in numbers
    return s.lower() in text.lower()


def text_contains(text: str, answer: str) -> bool:
    """Whether ``text`` contains a ``reply_contains`` string (gym_envs/ENVSPEC.md): case-insensitively; a string
    that is a number (``42``, ``-3``, ``4.50``) only as a number of its own with that value, so ``42`` is found in
    "42 units" and "42.00" but not in "420", "1042", "4.2" or "error 4420"."""
    s = answer.strip()
    return _find(text, s, _numbers(text) if _NUMERIC.match(s) else None)


def reply_contains(reply: str, answer: str) -> bool:
    """:func:`text_contains`, and a number is found in no reply that names more than :data:`MAX_REPLY_NUMBERS`
    distinct numbers (a list of every candidate is no answer)."""
    s = answer.strip()
    numbers = _numbers(reply) if _NUMERIC.match(s) else None
    if numbers is not None and len(set(numbers)) > MAX_REPLY_NUMBERS:
        return False
    return _find(reply, s, numbers)


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
            hit = [s for s in check["any_of"] if reply_contains(reply, s)]
            return {"passed": bool(hit), "detail": f"found {hit[0]!r}" if hit else
                    f"the reply contains none of {check['any_of']} (a number counts as a number of its own, "
                    f"in a reply that names at most {MAX_REPLY_NUMBERS} numbers)"}
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
        return {"passed": False, "detail": described(e, 500)["error"]}


def _plain_rows(rows: Any) -> bool:
    """Whether ``rows`` is a list of lists of exact JSON scalars (its JSON round trip is itself)."""
    return rows.__class__ is list and all(
        r.__class__ is list and all(v.__class__ in _SCALARS for v in r) for r in rows)


def _sql(check: dict[str, Any], sql: Callable[[str], list[dict[str, Any]]]) -> dict[str, Any]:
    rows = sql(check["query"])
    got: Any = [list(r.values()) for r in rows]
    if not _plain_rows(got):  # bytes and the like compare as their JSON text (repr)
        got = json.loads(json.dumps(got, default=repr))
    want = check["expect"]
    if not _plain_rows(want):
        want = json.loads(json.dumps(want))
    if not check.get("ordered", False):
        key = functools.partial(json.dumps, sort_keys=True)
        ok = sorted(got, key=key) == sorted(want, key=key)
    else:
        ok = got == want
    return {"passed": ok, "detail": "rows match" if ok else
            cap_text(f"expected {json.dumps(want[:20])}, got {json.dumps(got[:20])}", 300)}


def python_verdict(value: Any) -> dict[str, Any]:
    """The verdict of a ``python`` check whose ``check(db)`` returned ``value``."""
    if value is True:
        return {"passed": True, "detail": "check(db) returned True"}
    shown = repr(value) if type(value) in _SCALARS else type(value).__name__
    return {"passed": False, "detail": f"check(db) returned {cap_text(shown, 100)}, not True"}

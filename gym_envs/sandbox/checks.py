"""Check evaluation: the verdict of one check of a turn on the episode's state after the turn.

:func:`evaluate` judges the five kinds of gym_envs/ENVSPEC.md. The engine hands it the two ways of reading the
state that run untrusted code, both inside the engine's call scope: ``sql(query)`` runs a query in the
read-only mode, ``python(code)`` runs a ``check(db)`` function on the read-only facade and returns its
verdict (:func:`python_verdict`). Only JSON crosses
back: a verdict ``{"passed": bool, "detail": str}``, and a ``python`` check passes only when it returns
the real ``True``.

A ``reply_contains`` check reads the state in one case: a reply that contains a string answer (not a number)
names the answer, unless it lists the candidates instead. The engine's ``columns(text)`` gives each column
that holds the text as a value (else each whose values contain it) with its distinct values; a reply that
names too many values of the columns holding any of the check's strings passes no check of that answer
(:func:`names_too_many`). A number is found in no reply that names more than :data:`MAX_REPLY_NUMBERS`
numbers. Each ``reply_contains`` check dict carries ``turn_answers``, the strings
of every ``reply_contains`` check of its turn (:func:`with_turn_answers`): the other answers a turn asks for
are no candidates.
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

__all__ = ["MAX_REPLY_NAMES", "MAX_REPLY_NUMBERS", "NUMBER_WORDS", "ColumnValues", "allowed_other_names", "evaluate",
           "names_too_many", "needs_state", "python_verdict", "reply_contains", "text_contains", "with_turn_answers"]

_SCALARS = (bool, int, float, str, type(None))

_NUMERIC = re.compile(r"^[-+]?\d+(?:\.\d+)?$")  #: a ``reply_contains`` string that is a number
#: a run of digits with its separators, standing on its own (not part of a word, an identifier or a longer number)
_NUMBER_TOKEN = re.compile(r"(?<![\w.,])(-?)(\d+(?:[.,]\d+)*)(?![\w]|[.,]\d)")
_THOUSANDS = re.compile(r"^\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
#: a reply that names more distinct numbers than this passes no numeric ``reply_contains`` check: a list of every
#: candidate is no answer
MAX_REPLY_NUMBERS = 20
#: a reply names at most this many values of the column holding a string answer (the answer included), and at
#: most half of them (:func:`allowed_other_names`): a list of the candidates is no answer
MAX_REPLY_NAMES = 5
#: ``columns(text)``: ``(table.column, its distinct values)`` for each column that holds ``text`` (else contains it)
ColumnValues = Callable[[str], list[tuple[str, list[str]]]]


def _is_code(digits: str) -> bool:
    """A run of digits with a leading zero (``06``, ``0042``): a code or a date's part, not a quantity."""
    return len(digits) > 1 and digits[0] == "0" and digits[1].isdigit()


#: numbers a reply may write as a word (whole words only: "one" in "someone" or "done" is no number)
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty")
_NUMBER_WORD = re.compile(r"(?<![\w-])(" + "|".join(NUMBER_WORDS) + r")(?![\w-])", re.IGNORECASE)


def _numbers(text: str, words: bool = True) -> list[Decimal]:
    """The numbers a text names, each standing on its own: ``1,670.50`` is one number, ``3,4,5`` three, the
    digits inside ``T-1042`` or ``v2`` none; a ``-`` right before a number is its sign unless it joins two words
    or numbers (``2024-06-10``); a part with a leading zero (``06``, ``0042``) is a code, not a number; a whole
    word from ``zero`` to ``twenty`` is that number ("two orders") unless ``words`` is false."""
    out: list[Decimal] = [Decimal(NUMBER_WORDS.index(m.group(1).lower())) for m in _NUMBER_WORD.finditer(text)] \
        if words else []
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
    if numbers is not None and len(set(_numbers(reply, words=False))) > MAX_REPLY_NUMBERS:
        return False  # numbers written in digits are counted: "one of" is no listing
    return _find(reply, s, numbers)


def allowed_other_names(others: int) -> int:
    """How many of ``others`` other values of an answer's column a reply may name beside the answer: with the
    answer, at most half of the column's values and at most :data:`MAX_REPLY_NAMES` (so none of up to two
    others, one of 3 or 4, two of 5 or 6, three of 7 or 8, four of 9 or more)."""
    return min(MAX_REPLY_NAMES, max(1, (others + 1) // 2)) - 1


def names_too_many(reply: str, wanted: list[str], columns: list[tuple[str, list[str]]]) -> str | None:
    """Why ``reply`` lists candidates instead of answering: for the first of ``columns`` (those holding the
    check's answer) of whose other values it names more than :func:`allowed_other_names` allows, how many it
    names; None when it names few enough. The other values are the column's distinct values of 3 characters or
    more that neither contain nor are contained in a string of ``wanted`` (every answer of the turn: the value
    an answer was read from is no other candidate); a value is named as a ``reply_contains`` string is found
    (:func:`text_contains`)."""
    for label, values in columns:
        others: dict[str, str] = {}
        for v in values:
            key = v.strip().lower()
            if len(key) >= 3 and key not in others and not any(text_contains(w, v) or text_contains(v, w)
                                                               for w in wanted):
                others[key] = v
        named = [v for v in others.values() if text_contains(reply, v)]
        if len(named) > allowed_other_names(len(others)):
            shown = ", ".join(repr(v) for v in named[:5]) + (", ..." if len(named) > 5 else "")
            return (f"it also names {len(named)} of the {len(others)} other values of {label} ({shown}), and a reply "
                    f"may name at most {allowed_other_names(len(others))} of them")
    return None


def _is_number(s: str) -> bool:
    return bool(_NUMERIC.match(s.strip()))


def needs_state(check: dict[str, Any], reply: str) -> bool:
    """Whether the verdict of ``check`` on ``reply`` reads the state: a ``reply_contains`` check of which the reply
    contains a string answer (not a number) and no number (the candidates it may name come from the state)."""
    if check.get("kind") != "reply_contains":
        return False
    found = [s for s in check.get("any_of") or [] if reply_contains(reply, s)]
    return bool(found) and not any(_is_number(s) for s in found)


def with_turn_answers(checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A turn's check dicts as the engine takes them: each ``reply_contains`` one with ``turn_answers``, the
    strings of every ``reply_contains`` check of the turn (see the module docstring)."""
    answers = [s for c in checks if c.get("kind") == "reply_contains" for s in c.get("any_of") or []]
    return [c | {"turn_answers": answers} if c.get("kind") == "reply_contains" else c for c in checks]


def _reply_verdict(check: dict[str, Any], reply: str, columns: ColumnValues) -> dict[str, Any]:
    """A ``reply_contains`` verdict: a string found, and (for one that is no number) few enough candidates named,
    of every column that holds one of the check's strings (its answer, however the check spells it)."""
    found = [s for s in check["any_of"] if reply_contains(reply, s)]
    if not found:
        return {"passed": False, "detail": f"the reply contains none of {check['any_of']} (a number counts as a "
                f"number of its own, in a reply that names at most {MAX_REPLY_NUMBERS} numbers)"}
    number = next((s for s in found if _is_number(s)), None)
    if number is not None:
        return {"passed": True, "detail": f"found {number!r}"}
    held: dict[str, list[str]] = {}
    for s in check["any_of"]:
        if not _is_number(s):
            for label, values in columns(s):
                held.setdefault(label, values)
    why = names_too_many(reply, check.get("turn_answers") or check["any_of"], list(held.items()))
    if why is None:
        return {"passed": True, "detail": f"found {found[0]!r}"}
    return {"passed": False, "detail": cap_text(f"found {found[0]!r}, but {why}: a list of the candidates is no "
                                                "answer", 300)}


def evaluate(check: dict[str, Any], reply: str, calls: list[str], attempted: list[str], *,
             sql: Callable[[str], list[dict[str, Any]]], python: Callable[[str], dict[str, Any]],
             digests: Callable[[list[str] | None], dict[str, str]], marks: dict[str, str],
             columns: ColumnValues) -> dict[str, Any]:
    """One check's verdict. ``calls``: the turn's successful calls (``require``); ``attempted``: every call
    it tried (``forbid``); ``digests(tables)``: table digests now; ``marks``: the digests at the turn's start;
    ``columns(answer)``: the columns holding a string answer, with their values (``reply_contains``)."""
    kind = check.get("kind")
    try:
        if kind == "sql":
            return _sql(check, sql)
        if kind == "python":
            return python(check["code"])
        if kind == "reply_contains":
            return _reply_verdict(check, reply, columns)
        if kind == "unchanged":
            now = digests(check.get("tables") or None)
            changed = [t for t, d in now.items() if marks.get(t) != d]
            if not check.get("tables"):
                changed += [t for t in marks if t not in now]
            return {"passed": not changed, "detail": f"changed: {sorted(changed)}" if changed else "unchanged"}
        if kind == "state":
            want = check["digests"]
            now = digests(sorted(want))
            differ = sorted(t for t, d in want.items() if now.get(t) != d)
            return {"passed": not differ, "detail": f"differs from the expected state: {differ}" if differ else
                    "the expected state"}
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

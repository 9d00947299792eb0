"""How a reply is matched against a ``reply_contains`` string: numbers of their own, and lists that are no answer.

Role: the text rules of gym_envs/ENVSPEC.md's ``reply_contains`` row, shared by the check kind
(:mod:`gym_envs.checks.reply`), the gate's distinctiveness test (:mod:`envgen.gate.replies`) and the task
writers that pick answers the gate accepts. Pure text functions: nothing here reads the state.

* :func:`text_contains`: case-insensitive, and a string that is a number only as a number of its own
  (``42`` in "42 units", not in "420"); numbers from 0 to 20 also written as whole words;
* :func:`reply_contains`: that, and no number in a reply naming more than :data:`MAX_REPLY_NUMBERS` numbers;
* :func:`names_too_many`: a reply that names more of an answer's column's other values than
  :func:`allowed_other_names` allows lists the candidates instead of answering.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation

__all__ = ["MAX_REPLY_NAMES", "MAX_REPLY_NUMBERS", "NUMBER_WORDS", "allowed_other_names", "is_number",
           "names_too_many", "reply_contains", "text_contains"]

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
    contains = _contains_in(reply)
    for label, values in columns:
        others = _other_values(tuple(values), tuple(wanted))
        named = [v for v in others if contains(v)]
        if len(named) > allowed_other_names(len(others)):
            shown = ", ".join(repr(v) for v in named[:5]) + (", ..." if len(named) > 5 else "")
            return (f"it also names {len(named)} of the {len(others)} other values of {label} ({shown}), and a reply "
                    f"may name at most {allowed_other_names(len(others))} of them")
    return None



def is_number(s: str) -> bool:
    """Whether a ``reply_contains`` string is a number (``42``, ``-3``, ``4.50``)."""
    return bool(_NUMERIC.match(s.strip()))


_OTHERS: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[str, ...]] = {}  #: see :func:`_other_values`
_OTHERS_MAX = 256


def _other_values(values: tuple[str, ...], wanted: tuple[str, ...]) -> tuple[str, ...]:
    """A column's other values for :func:`names_too_many` (its distinct values of 3 characters or more that neither
    contain nor are contained in a string of ``wanted``, the first of each lower-cased text), remembered for the
    last :data:`_OTHERS_MAX` columns and answers (a turn's replies are judged against the same ones again and
    again)."""
    key = (values, wanted)
    found = _OTHERS.get(key)
    if found is None:
        others: dict[str, str] = {}
        for v in values:
            low = v.strip().lower()
            if len(low) >= 3 and low not in others and not any(text_contains(w, v) or text_contains(v, w)
                                                               for w in wanted):
                others[low] = v
        if len(_OTHERS) >= _OTHERS_MAX:
            _OTHERS.clear()
        found = _OTHERS[key] = tuple(others.values())
    return found


def _contains_in(text: str) -> Callable[[str], bool]:
    """``lambda answer: text_contains(text, answer)``, reading ``text`` (its lower case, its numbers) once for many
    answers."""
    low = text.lower()
    numbers: list[Decimal] | None = None

    def contains(answer: str) -> bool:
        nonlocal numbers
        s = answer.strip()
        if _NUMERIC.match(s) and not _is_code(s.lstrip("+-")):
            if numbers is None:
                numbers = _numbers(text)
            return Decimal(s) in numbers
        return s.lower() in low

    return contains

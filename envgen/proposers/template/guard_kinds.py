"""What kind of refusal a guard is: ``full``, ``empty``, ``closed``, ``locked``... from its words and form.

Role: :func:`guard_kind` classifies one ``if COND: raise EXC(MESSAGE)`` guard of a document's code for the
semantics reader (:mod:`envgen.proposers.template.semantics`): the first rule that matches the message's
words, else the exception's name, else the condition's form. The kinds are :data:`GUARD_KINDS`.
"""

from __future__ import annotations

import re

__all__ = ["GUARD_KINDS", "guard_kind"]

GUARD_KINDS = ("full", "empty", "closed", "unlocked", "locked", "exists", "missing", "negative", "state", "other")


def _rules(*pairs: tuple[str, str]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple((kind, re.compile(pattern)) for kind, pattern in pairs)


_BY_EXCEPTION = _rules(("full", r"full"), ("empty", r"empty"), ("closed", r"closed"), ("exists", r"exists|duplicate"),
                       ("missing", r"^(keyerror|lookuperror|indexerror)$|notfound|nosuch"), ("state", r"state"))
_BY_MESSAGE = _rules(
    ("full", r"\bfull\b|too many items|\bcapacity\b|\boverflow"), ("empty", r"\bempty\b"),
    ("closed", r"\bclosed\b|\bnot open\b"), ("unlocked", r"\bunlocked\b|un-?acquired|not (acquired|locked|held|owned)"),
    ("locked", r"already (locked|acquired|held)|\bis locked\b"),
    ("state", r"\bstate\b|not started|already started|not running|\bfinished\b"),
    ("exists", r"\balready\b|\bexists\b|\bduplicate\b"),
    ("missing", r"not found|no such|\bunknown\b|does not exist|\bmissing\b|\bno \w+ (with|named|for)\b"),
    ("negative", r"negative|>=? ?0\b|must be positive|too many times|one or more"))
_BY_CONDITION = _rules(
    ("full", r"full\(\)|maxsize|capacity|maxlen|>= ?(self\.)?_?max"),
    ("empty", r"empty\(\)|^not len\(|len\(.*\) ?(==|<=) ?0$|^not (self\.)?_?q?size\(\)$|^not (self\.)?_?\w+[^s]s$"
              r"|^not (self\.)?_?(queue|heap|stack|data|entries|pending|buffer|deque|pool)$"),
    ("closed", r"closed"), ("unlocked", r"^not (self\.)?_?locked\b"), ("locked", r"(self\.)?_?locked\b"),
    ("state", r"state|status|_started|_done|running|stage|phase"),
    ("missing", r" not in (?![(\[{])| is none$"), ("exists", r"(?<!not) in (?![(\[{])"),
    ("negative", r"<=? ?-?[01](\.0)?$|^-?[01](\.0)? ?>=?"))


def guard_kind(exception: str, message: str, condition: str) -> str:
    """A guard's kind (one of :data:`GUARD_KINDS`): the first rule that matches the message's words, else the
    exception's name, else the condition's form (``self.full()``, ``key not in self._data``, ``n < 0``)."""
    for rules, text in ((_BY_MESSAGE, message.lower()), (_BY_EXCEPTION, exception.lower()),
                        (_BY_CONDITION, condition.strip().lower())):
        for kind, pattern in rules:
            if pattern.search(text):
                return kind
    return "other"

"""The ``sql`` check: a read-only query on the state after the turn returns the expected rows.

The query runs in the sandbox (a ``{"sql": query}`` probe: the read-only mode, the engine's call scope) and its rows
come back as JSON; they are compared here with ``expect``, as multisets unless ``ordered``.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from gym_envs.checks.base import BaseCheck, Cost, Probe, TurnView, Verdict
from gym_envs.errors import cap_text

__all__ = ["SqlCheck"]

_SCALARS = (bool, int, float, str, type(None))
_PATTERN = re.compile(r"\b(?:LIKE|GLOB|REGEXP|MATCH|instr|substr|substring)\b", re.IGNORECASE)


def _plain_rows(rows: Any) -> bool:
    """Whether ``rows`` is a list of lists of exact JSON scalars (its JSON round trip is itself)."""
    return rows.__class__ is list and all(
        r.__class__ is list and all(v.__class__ in _SCALARS for v in r) for r in rows)


class SqlCheck(BaseCheck):
    """Passes when a SELECT on the final state returns ``expect`` (in order when ``ordered``)."""

    kind: Literal["sql"] = "sql"
    query: str = Field(description="A single SELECT (or WITH ... SELECT) statement.")
    expect: list[list[Any]] = Field(description="Expected rows, each a list of column values.")
    ordered: bool = False

    prompt: ClassVar[str] = ('{"kind": "sql", "query": "SELECT ...", "expect": [[value, ...], ...]}: the query\'s rows '
                             'equal expect (add "ordered": true to compare in order)')
    cost: ClassVar[Cost] = "cheap"

    @field_validator("query")
    @classmethod
    def _select_only(cls, v: str) -> str:
        head = re.sub(r"^\s*(--[^\n]*\n|/\*.*?\*/|\s)*", "", v, flags=re.S).split(None, 1)
        if not head or head[0].upper() not in ("SELECT", "WITH", "VALUES"):
            raise ValueError("a sql check must be one SELECT statement")
        return v

    def probes(self, view: TurnView) -> list[Probe]:
        return [{"sql": self.query}]

    def verdict(self, view: TurnView, answers: list[Any]) -> Verdict:
        got = answers[0]
        want: Any = self.expect
        if not _plain_rows(want):
            want = json.loads(json.dumps(want))
        if not self.ordered and len(got) > 1 and len(got) == len(want):  # (else in any order as they are)
            key = functools.partial(json.dumps, sort_keys=True)
            ok = sorted(got, key=key) == sorted(want, key=key)
        else:
            ok = got == want
        return Verdict(ok, "rows match" if ok else
                       cap_text(f"expected {json.dumps(want[:20])}, got {json.dumps(got[:20])}", 300))

    def summary(self) -> str:
        text = " ".join(self.query.split())
        text = text if len(text) <= 160 else text[:159] + "…"
        return f"{text} = {json.dumps(self.expect)}{' (ordered)' if self.ordered else ''}"

    def detail(self) -> str:
        return f"{self.query}\n-- expect{' (ordered)' if self.ordered else ''}: {json.dumps(self.expect)}"

    def state_text(self) -> str:
        return self.query

    def matches_patterns(self) -> bool:
        return bool(_PATTERN.search(self.query))

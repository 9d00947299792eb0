"""The ``python`` check: restricted ``check(db)`` code returns exactly ``True`` on the state after the turn.

The code runs in the sandbox (a ``{"python": code}`` probe: compiled under the sandbox policy, on the read-only
facade, inside the engine's call scope); only its verdict comes back, and it passes only when the function returned
the real ``True`` (:func:`gym_envs.sandbox.checks.python_verdict`).
"""

from __future__ import annotations

import ast
import functools
import re
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from gym_envs.checks.base import BaseCheck, Cost, Probe, TurnView, Verdict

__all__ = ["PythonCheck"]

#: string methods and functions that look inside text (a check using one matches by pattern or substring)
_PY_PATTERN = ("startswith", "endswith", "find", "rfind", "index", "rindex", "count", "search", "match", "fullmatch",
               "fnmatch", "fnmatchcase", "removeprefix", "removesuffix", "partition", "rpartition", "split")


@functools.lru_cache(maxsize=1024)
def _python_patterns(code: str) -> bool:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
            return True
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else \
                node.func.id if isinstance(node.func, ast.Name) else ""
            if name in _PY_PATTERN:
                return True
    return False


class PythonCheck(BaseCheck):
    """Passes when restricted ``check(db)`` returns true on the final state."""

    kind: Literal["python"] = "python"
    code: str = Field(description="Restricted Python defining `def check(db) -> bool`.")

    prompt: ClassVar[str] = '{"kind": "python", "code": "def check(db):\\n    return ..."}: must return True'
    cost: ClassVar[Cost] = "costly"
    decoded_lines: ClassVar[dict[str, int]] = {"code": 3}

    @field_validator("code")
    @classmethod
    def _defines_check(cls, v: str) -> str:
        if not re.search(r"^def\s+check\s*\(", v, flags=re.M):
            raise ValueError("must define a top-level function `def check(db) -> bool`")
        return v

    def probes(self, view: TurnView) -> list[Probe]:
        return [{"python": self.code}]

    def verdict(self, view: TurnView, answers: list[Any]) -> Verdict:
        got = answers[0] if isinstance(answers[0], dict) else {}
        return Verdict(got.get("passed") is True, str(got.get("detail", "")))

    def summary(self) -> str:
        return f"def check(db) … ({len([ln for ln in self.code.splitlines() if ln.strip()])} lines)"

    def detail(self) -> str:
        return self.code

    def state_text(self) -> str:
        return self.code

    def python_code(self) -> str:
        return self.code

    def matches_patterns(self) -> bool:
        return _python_patterns(self.code)

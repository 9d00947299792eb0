"""The ``calls`` check: which calls the turn made, by tool name or (spec_version 2) by call pattern.

A ``require`` item must match a successful call of the turn; a ``forbid`` item may match no call the turn attempted.
An item is a tool name (any call of it) or a :class:`CallPattern` (a call of the tool whose arguments relate to the
pattern's by ``match``: ``exact``, ``subset`` or ``keys``), as τ²-bench's and BFCL's action checks compare gold
calls. With ``ordered`` the ``require`` items match successful calls in their order, each a later call than the one
before. Values compare as JSON values (:func:`same_value`). The check reads no state.

Adequacy: a calls check sees which calls were made, not what they did or what the agent said, so failing it alone
catches no wrong trajectory, except that a check whose patterns pin arguments catches the trajectories whose calls
differ from the reference's in their arguments (``argument`` and ``retarget`` mutants).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gym_envs.checks.base import BaseCheck, CallView, TurnView, Verdict

__all__ = ["CallPattern", "CallsCheck", "same_value"]


def same_value(a: Any, b: Any) -> bool:
    """JSON equality: numbers by value (``2 == 2.0``), booleans only equal booleans, strings exactly, lists in
    order, objects key by key."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(v, b[k]) for k, v in a.items())
    return type(a) is type(b) and a == b


class CallPattern(BaseModel):
    """A call a ``calls`` check looks for: tool ``name`` with ``arguments`` compared by ``match``."""

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    match: Literal["exact", "subset", "keys"] = Field(
        default="exact", description="'exact': the same arguments; 'subset': these with these values, others "
                                     "allowed; 'keys': only the arguments named in 'keys'.")
    keys: list[str] = Field(default_factory=list, description="With match 'keys': the arguments compared.")

    @model_validator(mode="after")
    def _keys(self) -> CallPattern:
        if self.match == "keys":
            if not self.keys:
                raise ValueError("match 'keys' needs 'keys', the arguments to compare")
            missing = [k for k in self.keys if k not in self.arguments]
            if missing:
                raise ValueError(f"keys {missing} have no value in 'arguments'")
        elif self.keys:
            raise ValueError(f"'keys' is for match 'keys' (this pattern's match is {self.match!r})")
        return self

    def matches(self, call: CallView) -> bool:
        if call.name != self.name:
            return False
        args = call.arguments
        if self.match == "exact":
            return same_value(dict(args), self.arguments)
        keys = self.keys if self.match == "keys" else list(self.arguments)
        return all(k in args and same_value(args[k], self.arguments[k]) for k in keys)

    def pins_arguments(self) -> bool:
        return self.match == "exact" or bool(self.arguments)

    def text(self) -> str:
        args = {k: self.arguments[k] for k in self.keys} if self.match == "keys" else self.arguments
        shown = json.dumps(args, ensure_ascii=False, sort_keys=True)
        return f"{self.name}({shown})" + ("" if self.match == "exact" else f" [{self.match}]")


Item = str | CallPattern


def _matches(item: Item, call: CallView) -> bool:
    return call.name == item if isinstance(item, str) else item.matches(call)


def _text(item: Item) -> str:
    return item if isinstance(item, str) else item.text()


class CallsCheck(BaseCheck):
    """Passes when the turn's successful calls match every ``require`` item (in order when ``ordered``) and no
    call it attempted matches a ``forbid`` item."""

    kind: Literal["calls"] = "calls"
    require: list[str | CallPattern] = Field(default_factory=list)
    forbid: list[str | CallPattern] = Field(default_factory=list)
    ordered: bool = Field(default=False, description="spec_version 2: the require items match calls in order.")

    prompt: ClassVar[str] = ('{"kind": "calls", "require": ["tool"], "forbid": ["tool"]}: tools the turn must / must '
                             'not call')
    idle_passes: ClassVar[bool] = False

    @model_validator(mode="after")
    def _something(self) -> CallsCheck:
        if not self.require and not self.forbid:
            raise ValueError("a calls check needs 'require' or 'forbid' items")
        names = {i for i in self.require if isinstance(i, str)} & {i for i in self.forbid if isinstance(i, str)}
        if names:
            raise ValueError(f"tools both required and forbidden: {sorted(names)}")
        return self

    def verdict(self, view: TurnView, answers: list[Any]) -> Verdict:
        ok = view.succeeded
        if self.ordered:
            missing, at = [], 0
            for item in self.require:
                hit = next((j for j in range(at, len(ok)) if _matches(item, ok[j])), None)
                if hit is None:
                    missing.append(item)
                else:
                    at = hit + 1
        else:
            missing = [item for item in self.require if not any(_matches(item, c) for c in ok)]
        bad = [item for item in self.forbid if any(_matches(item, c) for c in view.calls)]
        parts = [f"missing calls {[_text(i) for i in missing]}{' (in this order)' if self.ordered else ''}"
                 if missing else "", f"forbidden calls {[_text(i) for i in bad]}" if bad else ""]
        detail = "; ".join(p for p in parts if p)
        return Verdict(not missing and not bad, detail or "ok")

    def summary(self) -> str:
        parts = []
        if self.require:
            parts.append(f"require{' in order' if self.ordered else ''} " + ", ".join(map(_text, self.require)))
        if self.forbid:
            parts.append("forbid " + ", ".join(map(_text, self.forbid)))
        return "; ".join(parts)

    def tool_names(self) -> list[str]:
        return [i if isinstance(i, str) else i.name for i in [*self.require, *self.forbid]]

    def v2_features(self) -> list[str]:
        out = ["a calls check's 'ordered'"] if self.ordered else []
        if any(isinstance(i, CallPattern) for i in [*self.require, *self.forbid]):
            out.append("call patterns in a calls check")
        return out

    @classmethod
    def version_1_schema(cls, schema: dict[str, Any]) -> None:
        """Version 1: tool names only (no call patterns), no ``ordered``."""
        props = schema.get("properties", {})
        props.pop("ordered", None)
        for f in ("require", "forbid"):
            if f in props:
                props[f]["items"] = {"type": "string"}

    def forbidden_tools(self) -> list[str]:
        return [i if isinstance(i, str) else i.name for i in self.forbid]

    def pins_arguments(self) -> bool:
        """Whether a pattern of it compares arguments (it then tells a call from the same call with other ones)."""
        return any(isinstance(i, CallPattern) and i.pins_arguments() for i in [*self.require, *self.forbid])

    def catches(self, mutant: str) -> bool:
        return mutant in ("argument", "retarget") and self.pins_arguments()

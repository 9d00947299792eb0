"""Tool-call parsing: turns an agent's action into text plus a list of calls.

Accepted forms (ENVSPEC.md, "Episode semantics"):

* Hermes / Qwen3 blocks: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``,
  several per message; an unterminated final block is accepted; ``arguments``
  may itself be a JSON string.
* Plain JSON: the whole message (optionally in a ```json fence) is one call
  object, a list of them, or ``{"tool_calls": [...]}``; ``parameters`` is
  accepted as an alias of ``arguments``.
* Structured: a dict ``{"content": str, "tool_calls": [...]}`` where each call is
  ``{"name", "arguments"}`` or the OpenAI form ``{"function": {"name", "arguments"}}``.

``<think>...</think>`` spans are removed from the visible content. A block that
cannot be parsed is reported in ``errors`` (the agent sees the error as an
observation) rather than silently treated as a final message.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ParsedAction", "format_tool_call", "parse_action"]

_TOOL_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.S)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)


@dataclass
class ParsedAction:
    """What an action means: visible text, the calls it makes, and what could not be parsed."""

    content: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def is_message(self) -> bool:
        """True when the action ends the turn (no calls and nothing unparsable)."""
        return not self.calls and not self.errors


def _normalise_call(obj: Any) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise ValueError(f"a tool call must be a JSON object, got {type(obj).__name__}")
    if "function" in obj and isinstance(obj["function"], dict):
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("a tool call needs a string 'name'")
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as e:
            raise ValueError(f"arguments of {name!r} are not valid JSON: {e.msg}") from None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ValueError(f"arguments of {name!r} must be a JSON object")
    return {"name": name, "arguments": args}


def _calls_from_json(obj: Any) -> list[dict[str, Any]] | None:
    """Calls if ``obj`` looks like a call, a list of calls or a tool_calls wrapper; else None."""
    if isinstance(obj, dict) and isinstance(obj.get("tool_calls"), list):
        return [_normalise_call(c) for c in obj["tool_calls"]]
    if isinstance(obj, dict) and (("name" in obj and ("arguments" in obj or "parameters" in obj))
                                  or "function" in obj):
        return [_normalise_call(obj)]
    if isinstance(obj, list) and obj and all(isinstance(c, dict) and ("name" in c or "function" in c)
                                             for c in obj):
        return [_normalise_call(c) for c in obj]
    return None


def _parse_text(text: str) -> ParsedAction:
    visible = _THINK.sub("", text)
    blocks = _TOOL_BLOCK.findall(visible)
    if blocks:
        calls: list[dict[str, Any]] = []
        errors: list[str] = []
        for raw in blocks:
            body = _FENCE.sub(r"\1", raw.strip())
            try:
                parsed = _calls_from_json(json.loads(body))
                if parsed is None:
                    raise ValueError("expected {\"name\": ..., \"arguments\": {...}}")
                calls.extend(parsed)
            except json.JSONDecodeError as e:
                errors.append(f"could not parse tool call {body[:80]!r}: {e.msg}")
            except ValueError as e:
                errors.append(f"could not parse tool call {body[:80]!r}: {e}")
        content = _TOOL_BLOCK.sub("", visible).strip()
        return ParsedAction(content, calls, errors)
    stripped = visible.strip()
    candidate = _FENCE.sub(r"\1", stripped)
    if candidate[:1] in "{[":
        try:
            obj = json.loads(candidate)
        except json.JSONDecodeError:
            return ParsedAction(stripped)
        try:
            calls_or_none = _calls_from_json(obj)
        except ValueError as e:
            return ParsedAction("", [], [str(e)])
        if calls_or_none is not None:
            return ParsedAction("", calls_or_none)
    return ParsedAction(stripped)


def parse_action(action: Any) -> ParsedAction:
    """Parse an action (text, structured dict, or a list of call dicts)."""
    if isinstance(action, str):
        return _parse_text(action)
    if isinstance(action, bytes):
        return _parse_text(action.decode("utf-8", "replace"))
    if isinstance(action, dict):
        content = action.get("content") or ""
        if not isinstance(content, str):
            content = json.dumps(content)
        raw_calls = action.get("tool_calls")
        if raw_calls is None and ("name" in action or "function" in action):
            raw_calls = [action]
            content = ""
        calls, errors = [], []
        for c in raw_calls or []:
            try:
                calls.append(_normalise_call(c))
            except ValueError as e:
                errors.append(str(e))
        if not raw_calls:
            return _parse_text(content)
        return ParsedAction(_THINK.sub("", content).strip(), calls, errors)
    if isinstance(action, list):
        return parse_action({"tool_calls": action})
    raise TypeError(f"an action must be text or a dict, not {type(action).__name__}")


def format_tool_call(name: str, arguments: dict[str, Any]) -> str:
    """Render a call in Hermes/Qwen3 form (what a model is expected to emit)."""
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False) + "\n</tool_call>"

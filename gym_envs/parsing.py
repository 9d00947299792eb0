"""Tool-call parsing: turns an agent's action into text plus a list of calls. It never raises.

Accepted forms (gym_envs/ENVSPEC.md, "Episode semantics"):

* Hermes / Qwen3 blocks: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``,
  several per message; an unterminated final block is accepted; ``arguments``
  may itself be a JSON string.
* Plain JSON: the whole message (optionally in a ```json fence) is one call
  object, a list of them, or ``{"tool_calls": [...]}``; ``parameters`` is
  accepted as an alias of ``arguments``.
* Structured: a dict ``{"content": str, "tool_calls": [...]}`` where each call is
  ``{"name", "arguments"}`` or the OpenAI form ``{"function": {"name", "arguments"}}``.

``<think>...</think>`` spans are removed from the visible content (:func:`strip_think`, the
project's one way to drop reasoning from a model's text, also used on generated specs). A block that
cannot be parsed is reported in ``errors`` (the agent sees the error as an
observation) rather than silently treated as a final message. So is an action
that is too large (more than :data:`MAX_ACTION_CHARS` characters or
:data:`MAX_CALLS` calls), arguments nested deeper than :data:`MAX_DEPTH` levels
(the sandbox's own limit), and anything that is not text, a dict or a list:
whatever the input, :func:`parse_action` returns a :class:`ParsedAction`. The
scanning is linear in the length of the action (no backtracking patterns).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_ACTION_CHARS", "MAX_CALLS", "MAX_DEPTH", "ParsedAction", "action_text", "format_tool_call",
           "load_json", "parse_action", "strip_think"]

MAX_ACTION_CHARS = 1_000_000  #: characters of an action that are read
MAX_CALLS = 64  #: tool calls one action may make
MAX_DEPTH = 64  #: nesting of a call's arguments (what the sandbox accepts)
_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_TOO_DEEP = "nested too deeply"
_TOO_BIG = "a number too large to read: "


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


def _nesting_ok(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests at most ``limit`` containers deep (iterative: safe on any depth or cycle)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, dict):
            children: Any = v.values()
        elif isinstance(v, list | tuple):
            children = v
        else:
            continue
        if depth >= limit:
            return False
        stack.extend((c, depth + 1) for c in children)
    return True


def load_json(text: str) -> Any:
    """``json.loads`` that fails only with :class:`json.JSONDecodeError`: also for JSON nested deeper than
    the interpreter can parse, or an integer with more digits than it converts."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise json.JSONDecodeError(_TOO_DEEP, text, 0) from None
    except ValueError as e:  # e.g. "Exceeds the limit (4300 digits) for integer string conversion"
        raise json.JSONDecodeError(_TOO_BIG + str(e), text, 0) from None


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
            args = load_json(args) if args.strip() else {}
        except json.JSONDecodeError as e:
            raise ValueError(f"arguments of {name[:80]!r} are not valid JSON: {e.msg}") from None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ValueError(f"arguments of {name[:80]!r} must be a JSON object")
    if not _nesting_ok(args):
        raise ValueError(f"arguments of {name[:80]!r} are nested deeper than {MAX_DEPTH} levels")
    return {"name": name, "arguments": args}


def _too_many(calls: Any) -> None:
    if len(calls) > MAX_CALLS:
        raise ValueError(f"an action may make at most {MAX_CALLS} tool calls, not {len(calls)}")


def _calls_from_json(obj: Any) -> list[dict[str, Any]] | None:
    """Calls if ``obj`` looks like a call, a list of calls or a tool_calls wrapper; else None."""
    if isinstance(obj, dict) and isinstance(obj.get("tool_calls"), list):
        _too_many(obj["tool_calls"])
        return [_normalise_call(c) for c in obj["tool_calls"]]
    if isinstance(obj, dict) and (("name" in obj and ("arguments" in obj or "parameters" in obj))
                                  or "function" in obj):
        return [_normalise_call(obj)]
    if isinstance(obj, list) and obj and all(isinstance(c, dict) and ("name" in c or "function" in c)
                                             for c in obj):
        _too_many(obj)
        return [_normalise_call(c) for c in obj]
    return None


def _spans(text: str, open_tag: str, close_tag: str) -> tuple[list[str], list[str]]:
    """``(outside, inside)``: the text outside ``open_tag ... close_tag`` spans and each span's inside
    (an unterminated last span runs to the end)."""
    outside: list[str] = []
    inside: list[str] = []
    i = 0
    while True:
        j = text.find(open_tag, i)
        if j < 0:
            outside.append(text[i:])
            return outside, inside
        outside.append(text[i:j])
        k = text.find(close_tag, j + len(open_tag))
        if k < 0:
            inside.append(text[j + len(open_tag):])
            return outside, inside
        inside.append(text[j + len(open_tag):k])
        i = k + len(close_tag)


def strip_think(text: str, *, keep_unclosed: bool = False) -> str:
    """``text`` without its reasoning: every ``<think>...</think>`` block, and everything up to a
    ``</think>`` left without its opening tag (a chat template that opened the block in the prompt).

    A ``<think>`` never closed hides the rest of the text, unless ``keep_unclosed``: then only its tag
    goes (a generated spec cut short inside its reasoning may still hold the answer; the gate judges
    it). Linear in the length of the text (no backtracking patterns).
    """
    outside, inside = _spans(text, _THINK_OPEN, _THINK_CLOSE)
    visible = "".join(outside)
    if keep_unclosed and len(inside) == len(outside):  # the last block never closed
        visible += inside[-1].replace(_THINK_OPEN, "")
    if _THINK_CLOSE in visible:
        visible = visible.rsplit(_THINK_CLOSE, 1)[1]
    return visible


def _unfence(text: str) -> str:
    """The inside of a whole-text ```json fence (``text`` already stripped), else ``text``."""
    if len(text) >= 6 and text.startswith("```") and text.endswith("```"):
        inner = text[3:-3]
        return (inner[4:] if inner.startswith("json") else inner).strip()
    return text


def _parse_blocks(blocks: list[str], outside: list[str]) -> ParsedAction:
    calls: list[dict[str, Any]] = []
    errors: list[str] = []
    for raw in blocks:
        body = _unfence(raw.strip())
        try:
            parsed = _calls_from_json(load_json(body))
            if parsed is None:
                raise ValueError("expected {\"name\": ..., \"arguments\": {...}}")
            calls.extend(parsed)
        except json.JSONDecodeError as e:
            errors.append(f"could not parse tool call {body[:80]!r}: {e.msg}")
        except ValueError as e:
            errors.append(f"could not parse tool call {body[:80]!r}: {e}")
    return ParsedAction("".join(outside).strip(), calls, errors)


def _parse_text(text: str) -> ParsedAction:
    visible = strip_think(text)
    outside, blocks = _spans(visible, _OPEN, _CLOSE)
    if blocks:
        return _parse_blocks(blocks, outside)
    stripped = visible.strip()
    candidate = _unfence(stripped)
    if candidate[:1] in "{[":
        try:
            obj = load_json(candidate)
        except json.JSONDecodeError as e:
            if e.msg == _TOO_DEEP or e.msg.startswith(_TOO_BIG):  # JSON, but more than can be read
                return ParsedAction("", [], [f"could not parse the message as JSON: {e.msg}"])
            return ParsedAction(stripped)
        try:
            calls_or_none = _calls_from_json(obj)
        except ValueError as e:
            return ParsedAction("", [], [str(e)])
        if calls_or_none is not None:
            return ParsedAction("", calls_or_none)
    return ParsedAction(stripped)


def _parse_structured(action: dict[str, Any]) -> ParsedAction:
    content = action.get("content") or ""
    if not isinstance(content, str):
        content = action_text(content)
    raw_calls = action.get("tool_calls")
    if raw_calls is None and ("name" in action or "function" in action):
        raw_calls = [action]
        content = ""
    if raw_calls is not None and not isinstance(raw_calls, list | tuple):
        return ParsedAction("", [], ["tool_calls must be a list of calls"])
    if raw_calls is not None and len(raw_calls) > MAX_CALLS:
        return ParsedAction("", [], [f"an action may make at most {MAX_CALLS} tool calls, not {len(raw_calls)}"])
    calls, errors = [], []
    for c in raw_calls or []:
        try:
            calls.append(_normalise_call(c))
        except ValueError as e:
            errors.append(str(e))
    if not raw_calls:
        return _parse_text(content)
    return ParsedAction(strip_think(content).strip(), calls, errors)


def _parse(action: Any) -> ParsedAction:
    if isinstance(action, bytes):
        action = action.decode("utf-8", "replace")
    if isinstance(action, str):
        if len(action) > MAX_ACTION_CHARS:
            return ParsedAction("", [], [f"the action is {len(action):,} characters long; at most "
                                         f"{MAX_ACTION_CHARS:,} are read"])
        return _parse_text(action)
    if isinstance(action, list):
        action = {"tool_calls": action}
    if isinstance(action, dict):
        return _parse_structured(action)
    return ParsedAction("", [], [f"an action must be text or a dict, not {type(action).__name__}"])


def parse_action(action: Any) -> ParsedAction:
    """Parse an action (text, structured dict, or a list of call dicts); never raises."""
    try:
        parsed = _parse(action)
    except Exception as e:  # the boundary (never raises): nested too deeply, a cycle, a rigged __str__
        return ParsedAction("", [], [f"the action could not be parsed ({type(e).__name__})"])
    if len(parsed.calls) > MAX_CALLS:
        return ParsedAction(parsed.content, [], [f"an action may make at most {MAX_CALLS} tool calls, not "
                                                 f"{len(parsed.calls)}"])
    return parsed


def action_text(action: Any, limit: int = MAX_ACTION_CHARS) -> str:
    """An action as text for transcripts: itself if it is text, else its JSON (``default=str``); a value
    that cannot be written (nested too deeply, a cycle) becomes a short note. Never raises."""
    if isinstance(action, str):
        return action
    calls = action.get("tool_calls") if isinstance(action, dict) else action
    if isinstance(calls, list | tuple) and len(calls) > MAX_CALLS:
        return f"<an action of {len(calls):,} tool calls>"
    try:
        text = json.dumps(action, ensure_ascii=False, default=str)
    except Exception as e:  # kept broad, never raises: nested too deeply, a cycle, a rigged __str__
        return f"<an action that cannot be written as JSON: {type(e).__name__}>"
    return text if len(text) <= limit else text[:limit] + "...[cut]"


def format_tool_call(name: str, arguments: dict[str, Any]) -> str:
    """Render a call in Hermes/Qwen3 form (what a model is expected to emit)."""
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False) + "\n</tool_call>"

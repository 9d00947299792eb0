"""Reading what a model writes back: the JSON in a completion, parsed leniently, and the spec it holds.

:func:`parse_completion` never raises: it strips ``<think>`` blocks
(:func:`gym_envs.parsing.strip_think`, keeping an unclosed block's text),
takes the largest ```` ```json ```` block (or the outermost ``{...}``:
:func:`balanced_objects`, the one JSON-object scanner, which blueprints use too), parses it
leniently (:func:`loads_lenient`: raw newlines in strings, trailing commas, ``//`` comments, Python
``True``/``False``/``None``, single-quoted Python literals, missing closing
brackets at the end), overrides the fields the model does not control
(``provenance``, ``source``, a missing, invalid or copied ``id``: :func:`finalize_spec_data`) and runs
:func:`gym_envs.spec.parse_spec`. A failure comes back as a typed
:class:`ParsedCompletion` (``code`` in ``no_json``, ``json_syntax``,
``not_object``, ``spec_schema``) whose ``error`` says what to fix, in words a
model can act on. (The prompts that ask for a spec are built by :mod:`envgen.prompts`.)
"""

from __future__ import annotations

import ast
import datetime as _dt
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from envgen.errors import FailureCode
from gym_envs.parsing import strip_think
from gym_envs.spec import ID_PATTERN, EnvSpec, SpecError, parse_spec

__all__ = ["ParsedCompletion", "balanced_objects", "extract_json_text", "finalize_spec_data", "loads_lenient",
           "make_env_id", "parse_completion"]

_FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+-]*)[^\n]*$", re.M)


def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    """``(info, body)`` of each fenced block in order; an unclosed last fence runs to the end."""
    blocks = []
    fences = list(_FENCE.finditer(text))
    i = 0
    while i < len(fences):
        opening = fences[i]
        info = opening.group(1).lower()
        closing = next((f for f in fences[i + 1:] if not f.group(1)), None)
        end = closing.start() if closing else len(text)
        blocks.append((info, text[opening.end():end].strip("\n")))
        if closing is None:
            break
        i = fences.index(closing) + 1
    return blocks


def balanced_objects(text: str) -> list[str]:
    """Top-level ``{...}`` spans (string-aware); an unbalanced last one runs to the end.

    The one JSON-object scanner of envgen: completions (here) and blueprints
    (:func:`envgen.blueprint.schema.parse_blueprint`, which takes the first span) read model text with it.
    """
    spans: list[str] = []
    depth, start, in_str, esc = 0, -1, False, False
    for i, c in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
            continue
        if c == '"' and depth > 0:
            in_str = True
        elif c == "{":
            if depth == 0:
                start = i
            depth += 1
        elif c == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start:i + 1])
    if depth > 0 and start >= 0:
        spans.append(text[start:])
    return spans


def extract_json_text(text: str) -> str | None:
    """The JSON object's text in a completion: the largest ```json block, else the largest ``{...}``."""
    text = strip_think(text, keep_unclosed=True)
    candidates = [body.strip() for info, body in _fenced_blocks(text)
                  if info in ("", "json", "json5", "jsonc", "javascript", "js")
                  and ("{" in body or body.lstrip().startswith("["))]
    if candidates:
        best = max(reversed(candidates), key=len)  # largest; the last one on a tie
        if best.startswith("["):
            return best
        objs = balanced_objects(best)
        return max(reversed(objs), key=len) if objs else best
    objs = balanced_objects(text)
    return max(reversed(objs), key=len) if objs else None


def _split_strings(text: str) -> list[tuple[bool, str]]:
    """``(is_string, chunk)`` pieces; a string keeps its quotes (an unterminated one runs to the end)."""
    parts: list[tuple[bool, str]] = []
    i, n, start = 0, len(text), 0
    while i < n:
        if text[i] == '"':
            parts.append((False, text[start:i]))
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            parts.append((True, text[i:j + 1]))
            i = start = j + 1
        else:
            i += 1
    parts.append((False, text[start:]))
    return [p for p in parts if p[1]]


_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}


def _repair(text: str) -> tuple[str, list[str]]:
    """Light syntactic repairs outside strings; returns the text and the names of the repairs applied."""
    applied: list[str] = []
    parts = _split_strings(text)
    out: list[str] = []
    for is_str, chunk in parts:
        if is_str:
            out.append(chunk)
            continue
        new = re.sub(r"//[^\n]*", "", chunk)
        if new != chunk:
            applied.append("removed // comments")
        fixed = re.sub(r",(\s*[}\]])", r"\1", new)
        if fixed != new:
            applied.append("removed trailing commas")
        lit = re.sub(r"\b(True|False|None)\b", lambda m: _PY_LITERALS[m.group(1)], fixed)
        if lit != fixed:
            applied.append("Python literals to JSON")
        out.append(lit)
    text = "".join(out)
    closed = _close_brackets(text)
    if closed != text:
        applied.append("closed unterminated brackets")
    return closed, sorted(set(applied))


def _ends_in_string(text: str) -> bool:
    in_str, esc = False, False
    for c in text:
        if esc:
            esc = False
        elif in_str and c == "\\":
            esc = True
        elif c == '"':
            in_str = not in_str
    return in_str


def _close_brackets(text: str) -> str:
    """Append the closers a truncated JSON text is missing (closing an open string first)."""
    stack: list[str] = []
    parts = _split_strings(text)
    open_string = _ends_in_string(text)
    for is_str, chunk in parts:
        if is_str:
            continue
        for c in chunk:
            if c in "{[":
                stack.append("}" if c == "{" else "]")
            elif c in "}]" and stack and stack[-1] == c:
                stack.pop()
    if not stack and not open_string:
        return text
    out = text + ('"' if open_string else "")
    out = out.rstrip()
    if out.endswith(","):
        out = out[:-1]
    elif out.endswith(":"):
        out += " null"
    return out + "".join(reversed(stack))


def _python_literal(text: str) -> Any:
    """Parse a Python-literal dict (single quotes, True/None, JSON's true/false/null mapped)."""
    names = {"true": "True", "false": "False", "null": "None"}
    mapped = "".join(c if s else re.sub(r"\b(true|false|null)\b", lambda m: names[m.group(1)], c)
                     for s, c in _split_strings(text))
    return ast.literal_eval(mapped)


def loads_lenient(text: str) -> tuple[Any, list[str]]:
    """Parse JSON, applying light repairs when strict parsing fails.

    Returns ``(value, repairs)``; raises :class:`ValueError` with the JSON error
    (line, column and the text around it) when no repair helps.
    """
    try:
        return json.loads(text, strict=False), []
    except json.JSONDecodeError as e:
        first = e
    fixed, applied = _repair(text)
    if applied:
        try:
            return json.loads(fixed, strict=False), applied
        except json.JSONDecodeError as e:
            first = e
            text_for_error = fixed
    else:
        text_for_error = text
    try:
        value = _python_literal(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        value = None
    if isinstance(value, dict):
        return value, ["Python literal (single quotes) to JSON"]
    lo = max(0, first.pos - 40)
    near = text_for_error[lo:first.pos + 40].replace("\n", "\\n")
    raise ValueError(f"{first.msg} at line {first.lineno} column {first.colno} (near: ...{near}...)")


def make_env_id(data: dict[str, Any], doc: Any = None, salt: str = "") -> str:
    """``llm-<slug>-<hash>``: slug from the title (else the document path), hash of the content."""
    title = data.get("title") if isinstance(data.get("title"), str) else ""
    base = title or str(getattr(doc, "path", "") or "env").rsplit("/", 1)[-1].rsplit(".", 1)[0]
    slug = re.sub(r"[^a-z0-9]+", "-", base.lower()).strip("-")[:40].strip("-") or "env"
    payload = json.dumps([str(getattr(doc, "id", "")), salt, data], sort_keys=True, default=str)
    return f"llm-{slug}-{hashlib.sha256(payload.encode()).hexdigest()[:10]}"


_WRAPPERS = ("environment", "env", "spec", "envspec")


def finalize_spec_data(data: dict[str, Any], *, doc: Any = None, generator: str = "llm:unknown",
                       stream: str = "explore", skill_id: str | None = None, prompt_sha256: str | None = None,
                       seed: int | None = None, created_at: str | None = None,
                       reserved_ids: Sequence[str] = ()) -> dict[str, Any]:
    """Fill and override the fields the model does not control (returns a new dict)."""
    if len(data) == 1:
        (key, inner), = data.items()
        if key.lower() in _WRAPPERS and isinstance(inner, dict):
            data = inner
    data = dict(data)
    data.pop("provenance", None)
    data.pop("source", None)
    if data.get("spec_version", 1) in (1, "1"):
        data["spec_version"] = 1
    env_id = data.get("id")
    if not isinstance(env_id, str) or not re.match(ID_PATTERN, env_id) or env_id in reserved_ids:
        data["id"] = make_env_id({k: v for k, v in data.items() if k != "id"}, doc)
    data["provenance"] = {
        "generator": generator, "skill_id": skill_id, "stream": stream, "prompt_sha256": prompt_sha256,
        "seed": seed, "created_at": created_at or _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "parents": [],
    }
    if doc is not None and getattr(doc, "id", None):
        corpus = str(getattr(doc, "corpus", "") or str(doc.id).split(":", 1)[0])
        data["source"] = {"corpus": corpus, "doc_id": str(doc.id), "path": getattr(doc, "path", None),
                          "sha256": getattr(doc, "sha256", None) or None}
    return data


@dataclass
class ParsedCompletion:
    """What :func:`parse_completion` made of a completion."""

    spec: EnvSpec | None
    error: str | None = None  #: what to fix, for the repair prompt (``None`` when ``spec`` is set)
    code: FailureCode | None = None  #: why there is no spec (``no_json``, ``json_syntax``, ``not_object``, ...)
    data: dict[str, Any] | None = None  #: the object after filling the controlled fields
    repairs: list[str] = field(default_factory=list)  #: light JSON repairs that were needed

    @property
    def ok(self) -> bool:
        return self.spec is not None


def parse_completion(text: str, **fill: Any) -> ParsedCompletion:
    """Parse a model's completion into an :class:`EnvSpec` (``fill`` goes to :func:`finalize_spec_data`)."""
    body = extract_json_text(text or "")
    if body is None:
        return ParsedCompletion(None, "no JSON object was found in your answer. Write the whole environment "
                                      "as one JSON object inside a ```json fenced block.", FailureCode.NO_JSON)
    try:
        value, repairs = loads_lenient(body)
    except ValueError as e:
        return ParsedCompletion(None, f"your JSON does not parse: {e}. Write strict JSON: double-quoted keys "
                                      "and strings, no comments, no trailing commas, newlines inside strings "
                                      "written as \\n.", FailureCode.JSON_SYNTAX)
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict):
        value = value[0]
    if not isinstance(value, dict):
        return ParsedCompletion(None, f"your answer is a JSON {type(value).__name__}, not an object; write "
                                      "one JSON object with the fields spec_version, id, title, description, "
                                      "state, tools, code and tasks.", FailureCode.NOT_OBJECT, repairs=repairs)
    data = finalize_spec_data(value, **fill)
    try:
        spec = parse_spec(data)
    except SpecError as e:
        lines = "\n".join(f"  - {r}" for r in e.reasons)
        return ParsedCompletion(None, f"the JSON is not a valid environment spec; fix each field:\n{lines}",
                                FailureCode.SPEC_SCHEMA, data=data, repairs=repairs)
    return ParsedCompletion(spec, None, None, data=data, repairs=repairs)

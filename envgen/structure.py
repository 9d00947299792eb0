r"""What a model proposer writes, and the JSON Schema it decodes under: a blueprint or a full spec.

Three structures (``STRUCTURES``):

* ``blueprint``: the compact proposal of :mod:`envgen.blueprint`, decoded under
  :func:`envgen.blueprint.schema.blueprint_json_schema` (narrowed by a routed
  skill's requirements), then compiled;
* ``world``: a world blueprint (blueprint_version 2, :mod:`envgen.world`), decoded under
  :func:`envgen.world.blueprint.world_json_schema`, then compiled by the world compiler;
* ``spec``: a whole environment (the free stream, for strong models), decoded
  under :func:`spec_decoding_schema`, the EnvSpec JSON Schema
  (:func:`gym_envs.spec_schema.json_schema`) made finite.

Making the EnvSpec schema finite, so a constrained completion always closes
before the token limit (grammar engines bound a string's length only when it
has no escape sequences):

* every string gets a ``maxLength`` (by field name, :data:`TEXT_CAPS`) and every
  array a ``maxItems`` (:data:`ARRAY_CAPS`); integers get a range; a tool's
  ``parameters`` and a call's ``arguments`` become objects of at most
  :data:`MAX_PROPERTIES` bounded properties; ``expect`` rows hold bounded scalars;
* multi-line text (``code``, ``state.schema_sql``, ``state.seed_sql`` and the
  fields a check kind names in its ``decoded_lines``, such as a python check's
  ``code``) is decoded as an array of lines, joined back with
  ``\n`` by :func:`spec_from_decoded`. Inside a line there are no escape
  sequences, so generated code quotes strings with ``'`` (the prompt says so);
* ``source`` and ``provenance`` are left out: the host fills them.
"""

from __future__ import annotations

import copy
from typing import Any

from gym_envs.checks import CHECKS
from gym_envs.spec_schema import json_schema

__all__ = [
    "ARRAY_CAPS",
    "MAX_PROPERTIES",
    "MULTILINE",
    "STRUCTURES",
    "TEXT_CAPS",
    "spec_decoding_schema",
    "spec_from_decoded",
]

STRUCTURES = ("blueprint", "world", "spec")
#: field → most lines (a check kind's own: its ``decoded_lines``, e.g. a python check's code, 3)
MULTILINE = {"code": 28, "schema_sql": 8, "seed_sql": 12}
LINE_CHARS = 80
TEXT_CAPS = {"description": 100, "instruction": 100, "query": 100, "title": 48, "name": 40, "id": 48}
ARRAY_CAPS = {"tools": 4, "tasks": 3, "turns": 2, "checks": 2, "reference": 2, "expect": 2, "any_of": 2,
              "require": 2, "forbid": 2, "tables": 2, "required": 3, "enum": 4}
MAX_PROPERTIES = 3
INT_BOUND = 100_000
_SCALAR = {"anyOf": [{"type": "string", "maxLength": 24}, {"type": "integer", "minimum": -INT_BOUND,
                                                           "maximum": INT_BOUND},
                     {"type": "boolean"}, {"type": "null"}]}
_PARAM = {"type": "object", "properties": {
    "type": {"enum": ["string", "integer", "number", "boolean"]},
    "description": {"type": "string", "maxLength": 60}}, "required": ["type", "description"],
    "additionalProperties": False}
_PARAMETERS = {"type": "object", "properties": {
    "type": {"const": "object"},
    "properties": {"type": "object", "additionalProperties": _PARAM, "maxProperties": MAX_PROPERTIES,
                   "propertyNames": {"pattern": "^[a-z][a-z0-9_]{0,23}$"}},
    "required": {"type": "array", "items": {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,23}$"},
                 "maxItems": MAX_PROPERTIES}},
    "required": ["type", "properties", "required"], "additionalProperties": False}
_ARGUMENTS = {"type": "object", "additionalProperties": _SCALAR, "maxProperties": MAX_PROPERTIES,
              "propertyNames": {"pattern": "^[a-z][a-z0-9_]{0,23}$"}}


def _lines(n: int) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string", "maxLength": LINE_CHARS}, "maxItems": n}


def _kind_lines(kind: Any) -> dict[str, int]:
    """The fields a check kind decodes as arrays of lines (its ``decoded_lines``; none for what is no check)."""
    return CHECKS.get(kind).decoded_lines if isinstance(kind, str) and kind in CHECKS else {}


def _bound(node: Any, defs: dict[str, Any], name: str | None) -> Any:
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _bound(defs[node["$ref"].rsplit("/", 1)[-1]], defs, name)
    if "oneOf" in node or "anyOf" in node:
        return {"anyOf": [_bound(x, defs, name) for x in node.get("oneOf") or node["anyOf"]]}
    t = node.get("type")
    if name == "parameters":
        return copy.deepcopy(_PARAMETERS)
    if name == "arguments":
        return copy.deepcopy(_ARGUMENTS)
    if name == "expect":
        return {"type": "array", "maxItems": ARRAY_CAPS["expect"],
                "items": {"type": "array", "items": copy.deepcopy(_SCALAR), "maxItems": 3}}
    if t == "string" and name in MULTILINE:
        return _lines(MULTILINE[name])
    out: dict[str, Any] = {k: v for k, v in node.items()
                           if k in ("type", "enum", "const", "pattern", "minLength", "minItems", "description")}
    if t == "object":
        raw = node.get("properties", {})
        lines = _kind_lines(raw.get("kind", {}).get("const"))
        props = {k: _lines(lines[k]) if k in lines else _bound(v, defs, k) for k, v in raw.items()
                 if k not in ("source", "provenance")}
        out.update(properties=props, required=list(props), additionalProperties=False)
    elif t == "array":
        out["items"] = _bound(node.get("items", {}), defs, name)
        out["maxItems"] = ARRAY_CAPS.get(name or "", 4)
    elif t == "string" and "pattern" not in out and "enum" not in out and "const" not in out:
        out["maxLength"] = TEXT_CAPS.get(name or "", 100)
    elif t == "integer":
        out.setdefault("minimum", 0)
        out["maximum"] = INT_BOUND
    return out


def spec_decoding_schema() -> dict[str, Any]:
    """The finite EnvSpec decoding schema of the free stream (see the module docstring)."""
    raw = json_schema(1)
    out = _bound(raw, raw.get("$defs", {}), None)
    out["title"] = "envwright spec v1 (decoding form)"
    return out


def spec_from_decoded(obj: Any) -> Any:
    """A decoded free-stream object with its line arrays joined back into text (``code``, SQL)."""
    if isinstance(obj, list):
        return [spec_from_decoded(x) for x in obj]
    if not isinstance(obj, dict):
        return obj
    out = {}
    joined = MULTILINE.keys() | _kind_lines(obj.get("kind")).keys()
    for k, v in obj.items():
        if k in joined and isinstance(v, list) and all(isinstance(x, str) for x in v):
            out[k] = "\n".join(v)
        else:
            out[k] = spec_from_decoded(v)
    return out

"""Tool-call arguments against the tool's ``parameters`` schema (the JSON Schema subset tool schemas use).

:func:`validate_arguments` words every problem for the agent; :func:`compile_arguments` builds, once per
tool, the fast path the engine takes for the common case of flat scalar arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gym_envs.sandbox.values import MAX_DEPTH

__all__ = ["compile_arguments", "validate_arguments", "validate_value"]

_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}
_EXACT_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "array": (list,), "object": (dict,), "null": (type(None),),
}
_ANNOTATION_KEYS = frozenset({"type", "description", "title", "default", "examples"})
_INF = (float("inf"), float("-inf"))


def validate_value(schema: dict[str, Any], value: Any, where: str, depth: int = MAX_DEPTH) -> list[str]:
    """Errors of ``value`` against a JSON Schema subset (type, enum, bounds, items, properties)."""
    errors: list[str] = []
    typ = schema.get("type")
    if typ is not None:
        types = typ if isinstance(typ, list) else [typ]
        if not any(_JSON_TYPES.get(t, lambda v: True)(value) for t in types):
            return [f"{where} must be of type {' or '.join(map(str, types))}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where} must be one of {schema['enum']}, got {value!r}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{where} must be >= {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{where} must be <= {schema['maximum']}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(f"{where} must have at least {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{where} must have at most {schema['maxLength']} characters")
    if depth <= 0:  # the values are plain JSON, capped at this depth; a schema nested deeper is not followed
        return errors
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value[:1000]):
            errors += validate_value(schema["items"], item, f"{where}[{i}]", depth - 1)
    if isinstance(value, dict) and "properties" in schema:
        errors += validate_arguments(schema, value, where=where + ".", depth=depth - 1)
    return errors


def validate_arguments(schema: dict[str, Any], args: dict[str, Any], where: str = "",
                       depth: int = MAX_DEPTH) -> list[str]:
    """Errors of a call's arguments against its tool's ``parameters`` schema."""
    props = schema.get("properties", {})
    errors = [f"missing required argument '{where}{r}'" for r in schema.get("required", []) if r not in args]
    for k, v in args.items():
        if k not in props:
            if schema.get("additionalProperties", False) is False:
                errors.append(f"unexpected argument '{where}{k}'; expected {sorted(props)}")
            continue
        sub = props[k]
        if isinstance(sub, dict):
            errors += validate_value(sub, v, f"argument '{where}{k}'", depth)
    return errors


def compile_arguments(schema: Any) -> Callable[[dict[str, Any]], dict[str, Any] | None]:
    """The fast path of argument checking for one tool's ``parameters`` schema.

    The function returns a private copy of ``args`` when every argument is declared with a plain scalar
    type (and nothing but annotations), has exactly that type (a finite float for ``number``) and every
    required argument is present: such arguments are valid and already plain JSON. Otherwise it
    returns ``None`` and the caller copies them with :func:`~gym_envs.sandbox.values.plain_json` and
    words the errors with :func:`validate_arguments`.
    """
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    required = schema.get("required", ()) if isinstance(schema, dict) else ()
    if not isinstance(props, dict) or not isinstance(required, list | tuple) \
            or not all(r.__class__ is str for r in required):
        return lambda args: None
    need = frozenset(required)
    simple: dict[str, tuple[type, ...]] = {}
    for k, sub in props.items():
        typ = sub.get("type") if isinstance(sub, dict) else None
        if isinstance(sub, dict) and set(sub) <= _ANNOTATION_KEYS and isinstance(typ, str) \
                and typ in _EXACT_TYPES and typ not in ("array", "object"):
            simple[k] = _EXACT_TYPES[typ]
    get = simple.get

    def admit(args: dict[str, Any]) -> dict[str, Any] | None:
        for k, v in args.items():
            c = v.__class__
            if k.__class__ is not str or c not in get(k, ()) or (c is float and (v != v or v in _INF)):
                return None
        if not args.keys() >= need:
            return None
        return args.copy()

    return admit

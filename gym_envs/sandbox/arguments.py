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
    type, has exactly that type (a finite float for ``number``), meets the constraints
    :func:`validate_value` checks on a scalar (``enum``, ``minimum``, ``maximum``, ``minLength``,
    ``maxLength``: each compiled to the same comparison) and every required argument is present: such
    arguments are valid (:func:`validate_arguments` finds no error) and already plain JSON. Otherwise it
    returns ``None`` and the caller copies them with :func:`~gym_envs.sandbox.values.plain_json` and
    words the errors with :func:`validate_arguments`. A property whose constraint is of an unusual type
    (a non-list ``enum``, a bound that is not a number) is left to that slow path.
    """
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    required = schema.get("required", ()) if isinstance(schema, dict) else ()
    if not isinstance(props, dict) or not isinstance(required, list | tuple) \
            or not all(r.__class__ is str for r in required):
        return lambda args: None
    need = frozenset(required)
    simple: dict[str, tuple[type, ...]] = {}
    checks: dict[str, Callable[[Any], bool]] = {}  # a property's constraints, where it has any
    for k, sub in props.items():
        typ = sub.get("type") if isinstance(sub, dict) else None
        if not isinstance(sub, dict) or not isinstance(typ, str) or typ not in _EXACT_TYPES \
                or typ in ("array", "object"):
            continue
        check = _scalar_check(sub)
        simple[k] = _EXACT_TYPES[typ]
        if check is not None:
            checks[k] = check
    get = simple.get
    check_of = checks.get

    def admit(args: dict[str, Any]) -> dict[str, Any] | None:
        for k, v in args.items():
            c = v.__class__
            if k.__class__ is not str or c not in get(k, ()) or (c is float and (v != v or v in _INF)):
                return None
            check = check_of(k)
            if check is not None and not check(v):
                return None
        if not args.keys() >= need:
            return None
        return args.copy()

    return admit


_NUMBER = (int, float)


def _never(v: Any) -> bool:
    return False


def _scalar_check(sub: dict[str, Any]) -> Callable[[Any], bool] | None:
    """The constraints :func:`validate_value` checks on a scalar of schema ``sub``, as one function that is true
    when it would find no error (the same comparisons); ``None``: no constraint. A constraint of a type the fast
    path leaves to :func:`validate_value` (a non-list ``enum``, a bound that is not an exact number) gives a
    function that is never true."""
    enum = sub.get("enum")
    if "enum" in sub and enum.__class__ is not list and enum.__class__ is not tuple:
        return _never
    lo, hi = sub.get("minimum"), sub.get("maximum")
    shortest, longest = sub.get("minLength"), sub.get("maxLength")
    if any(b is not None and b.__class__ not in _NUMBER for b in (lo, hi)) \
            or ("minimum" in sub and lo is None) or ("maximum" in sub and hi is None) \
            or any(n is not None and n.__class__ is not int for n in (shortest, longest)) \
            or ("minLength" in sub and shortest is None) or ("maxLength" in sub and longest is None):
        return _never
    if enum is None and lo is None and hi is None and shortest is None and longest is None:
        return None
    choices = tuple(enum) if enum is not None else None

    def check(v: Any) -> bool:
        if choices is not None and v not in choices:
            return False
        c = v.__class__
        if c is int or c is float:  # exact classes only reach here; bool is neither
            return not ((lo is not None and v < lo) or (hi is not None and v > hi))
        if c is str:
            return not ((shortest is not None and len(v) < shortest) or (longest is not None and len(v) > longest))
        return True

    return check

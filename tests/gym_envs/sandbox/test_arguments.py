"""``gym_envs.sandbox.arguments``: a call's arguments against its tool's schema."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gym_envs.sandbox import plain_json, validate_arguments
from gym_envs.sandbox.arguments import compile_arguments
from tests.gym_envs.sandbox.store import STORE_TOOLS


def test_validate_arguments() -> None:
    schema = STORE_TOOLS[1]["parameters"]
    assert validate_arguments(schema, {"name": "x", "qty": 2}) == []
    errors = validate_arguments(schema, {"qty": 0, "extra": 1})
    assert any("missing required argument 'name'" in e for e in errors)
    assert any("unexpected argument 'extra'" in e for e in errors)
    assert any("must be >= 1" in e for e in errors)
    assert validate_arguments(schema, {"name": True}) == ["argument 'name' must be of type string, got bool"]


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63), st.text(max_size=6),
                     st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0, 1, 1.0, -0.0, "a", "ab"]))
_BOUNDS = st.one_of(st.integers(-5, 5), st.floats(-5, 5), st.sampled_from([1.0, True, "3", None]))


@st.composite
def _property(draw: Any) -> dict[str, Any]:
    sub: dict[str, Any] = {"type": draw(st.sampled_from(["string", "integer", "number", "boolean", "null", "array"]))}
    if draw(st.booleans()):
        sub["description"] = "d"
    if draw(st.integers(0, 3)) == 0:
        sub["enum"] = draw(st.one_of(st.lists(_SCALARS, max_size=4), st.sampled_from(["ab", None, 3])))
    for key in ("minimum", "maximum"):
        if draw(st.integers(0, 2)) == 0:
            sub[key] = draw(_BOUNDS)
    for key in ("minLength", "maxLength"):
        if draw(st.integers(0, 2)) == 0:
            sub[key] = draw(st.one_of(st.integers(0, 4), st.sampled_from([1.5, None, True])))
    if draw(st.integers(0, 5)) == 0:
        sub["format"] = "date"
    return sub


@st.composite
def _schema_and_args(draw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    names = draw(st.lists(st.sampled_from("abcde"), unique=True, max_size=4))
    props = {n: draw(_property()) for n in names}
    required = [n for n in names if draw(st.booleans())]
    keys = draw(st.lists(st.sampled_from([*names, "x"]), unique=True, max_size=5))
    args = {k: draw(st.one_of(_SCALARS, st.lists(st.integers(), max_size=2))) for k in keys}
    return {"type": "object", "properties": props, "required": required}, args


@settings(max_examples=600, deadline=None)
@given(_schema_and_args())
def test_fast_path_admits_exactly_what_the_slow_path_finds_valid(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """The compiled check (enum, bounds and lengths included) admits arguments only where validate_arguments finds
    no error and plain_json would leave them as they are; and it admits every such call of a schema whose
    constraints are all of the usual types, so those calls take the fast path."""
    schema, args = case
    admitted = compile_arguments(schema)(args)
    try:
        slow_errors: list[str] | None = validate_arguments(schema, args)
    except TypeError:  # an odd constraint's comparison: the slow path's own failure, never the fast path's
        slow_errors = None
    try:
        copy = plain_json(args)[0]
    except ValueError:
        copy = None
    plain = copy == args and all(copy[k].__class__ is v.__class__ for k, v in args.items())
    if admitted is not None:
        assert admitted == args and admitted is not args
        assert slow_errors == [] and plain
    usual = all(sub["type"] != "array"
                and (sub.get("enum", []).__class__ is list)
                and all(sub.get(b, 0).__class__ in (int, float) for b in ("minimum", "maximum"))
                and all(sub.get(n, 0).__class__ is int for n in ("minLength", "maxLength"))
                for sub in schema["properties"].values())
    scalar = all(v.__class__ in (str, int, float, bool, type(None)) for v in args.values())
    if usual and scalar and slow_errors == [] and plain:
        assert admitted == args


def test_fast_path_checks_constraints() -> None:
    schema = {"type": "object", "required": ["qty"],
              "properties": {"qty": {"type": "integer", "minimum": 1, "maximum": 50},
                             "status": {"type": "string", "enum": ["open", "closed"], "maxLength": 5},
                             "note": {"type": "string", "minLength": 1, "format": "date"}}}
    admit = compile_arguments(schema)
    assert admit({"qty": 3, "status": "open", "note": "x"}) == {"qty": 3, "status": "open", "note": "x"}
    for bad in ({"qty": 0}, {"qty": 51}, {"qty": 2, "status": "closed"}, {"qty": 2, "status": "shut"},
                {"qty": 2, "note": ""}, {"qty": True}, {"status": "open"}):
        assert admit(bad) is None
        assert validate_arguments(schema, bad) != []

"""``gym_envs.sandbox.arguments``: a call's arguments against its tool's schema."""

from __future__ import annotations

from gym_envs.sandbox import validate_arguments
from tests.gym_envs.sandbox.store import STORE_TOOLS


def test_validate_arguments() -> None:
    schema = STORE_TOOLS[1]["parameters"]
    assert validate_arguments(schema, {"name": "x", "qty": 2}) == []
    errors = validate_arguments(schema, {"qty": 0, "extra": 1})
    assert any("missing required argument 'name'" in e for e in errors)
    assert any("unexpected argument 'extra'" in e for e in errors)
    assert any("must be >= 1" in e for e in errors)
    assert validate_arguments(schema, {"name": True}) == ["argument 'name' must be of type string, got bool"]

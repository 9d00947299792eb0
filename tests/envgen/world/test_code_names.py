"""A world's names never shadow the names of its own tool code (envgen.world.code.CODE_NAMES): a tool named
``find`` would replace the lookup helper every tool calls, and a parameter named ``owner`` or ``rec`` would be
overwritten by the tool's own local before it is read."""

from __future__ import annotations

import ast
import copy

from envgen.gate import validate_spec
from envgen.world.blueprint import WorldBlueprint
from envgen.world.catalog import domain, entries
from envgen.world.code import code_name
from envgen.world.compile import compile_world
from tests.envgen.world.operator_world import _WORLD


def _names_of(code: str) -> set[str]:
    """What the code defines at module level as functions, and what its functions assign."""
    out: set[str] = set()
    for node in ast.parse(code).body:
        if isinstance(node, ast.FunctionDef):
            out |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return out


def test_every_name_the_rendered_code_assigns_is_known_as_a_code_name() -> None:
    for entry in entries():
        cw = compile_world(domain(entry.blueprint.id), env_id=f"w-{entry.blueprint.id.replace('_', '-')}", seed=0)
        helpers = {n.name for n in ast.parse(cw.spec.code).body if isinstance(n, ast.FunctionDef)} - \
            {t.name for t in cw.spec.tools}
        unknown = sorted(n for n in _names_of(cw.spec.code) | helpers if not code_name(n))
        assert not unknown, (entry.blueprint.id, unknown)


def test_a_blueprint_naming_a_tool_field_or_key_as_the_code_does_still_compiles_to_a_working_world() -> None:
    raw = copy.deepcopy(_WORLD)
    ents = {e["name"]: e for e in raw["entities"]}
    ents["printer"]["key"] = {"name": "show", "kind": "code"}
    ents["print_job"]["fields"].append({"name": "owner", "kind": "person_name"})
    raw["operations"].append({"name": "find", "kind": "lookup", "entity": "print_job"})
    cw = compile_world(WorldBlueprint.model_validate(raw), env_id="print-room-names", seed=0)
    tools = {t.name for t in cw.spec.tools}
    assert "find" not in tools and "find_print_job" in tools
    assert any("'show' is reserved" in r for r in cw.repairs) and any("'owner'" in r for r in cw.repairs)
    for tool in cw.spec.tools:
        assert not any(code_name(p) for p in tool.parameters.get("properties", {})), tool.name
    assert validate_spec(cw.spec).accepted

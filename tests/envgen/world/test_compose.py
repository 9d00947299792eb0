"""Composed worlds: two or three services as one environment with namespaced tools and one database."""

from __future__ import annotations

from envgen.gate import validate_spec
from envgen.world.compile import compile_world
from tests.envgen.world.operator_world import operator_world
from tests.envgen.world.store_world import store_world


def test_two_worlds_compose_into_one_environment_the_gate_accepts():
    cw = compile_world([store_world(), operator_world()], env_id="test-composed", seed=1)
    names = [t.name for t in cw.spec.tools]
    assert len(names) == len(set(names))
    assert {n.split("_", 1)[0] for n in names} == {"test", "test2"}  # every tool is namespaced by its part
    tables = cw.spec.state.schema_sql.count("CREATE TABLE")
    assert tables >= 8
    assert any("[Corner shop]" in r.text for r in cw.spec.policy)
    assert any("[Print room]" in r.text for r in cw.spec.policy)
    verdict = validate_spec(cw.spec, executor="inprocess")
    assert verdict.accepted, verdict.reasons


def test_an_entity_two_parts_share_is_renamed_so_tables_never_collide():
    a = store_world()
    b = store_world(id="test_shop_two", title="Second shop")
    cw = compile_world([a, b], env_id="test-composed-two", seed=2)
    ddl = cw.spec.state.schema_sql
    assert 'CREATE TABLE "customers"' in ddl and 'CREATE TABLE "test2_customers"' in ddl
    assert len(cw.world.parts) == 2

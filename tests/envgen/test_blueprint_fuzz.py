"""Property test: any blueprint the schema admits compiles or is refused with a CompileError, never a crash.

Constrained decoding guarantees only the schema, so the compiler meets every shape the schema allows:
entities with only their key, operations and rules on unknown entities or fields, parents that loop,
states without transitions, empty task mixes. Names come from a small pool so references collide.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envgen.blueprint.compiler import CompileError, compile_blueprint
from envgen.blueprint.schema import (
    DIFFICULTIES,
    FIELD_TYPES,
    MAX_ENTITIES,
    MAX_ENUM_VALUES,
    MAX_FIELDS,
    MAX_OPERATIONS,
    MAX_RULES,
    MAX_STATES,
    MAX_TASKS_PER_KIND,
    OP_KINDS,
    RULE_KINDS,
    parse_blueprint,
)
from tests.envgen.test_blueprint import DOC, JS

NAMES = st.sampled_from(["item", "order", "queue", "job", "label", "count", "state", "user_id", "total", "name",
                         "priority", "list", "db", "id", "status", "ab"])
VALUES = st.sampled_from(["open", "closed", "done", "waiting", "active", "x", "open"])
TEXT = st.sampled_from(["", "a thing", "from Queue.add", "x" * 60])
OPT_NAME = st.none() | NAMES

field_ = st.fixed_dictionaries({"name": NAMES, "type": st.sampled_from(FIELD_TYPES), "description": TEXT})
entity = st.fixed_dictionaries({
    "name": NAMES, "description": TEXT, "key": NAMES, "fields": st.lists(field_, max_size=MAX_FIELDS),
    "parent": OPT_NAME, "states": st.lists(VALUES, max_size=MAX_STATES)})
operation = st.fixed_dictionaries({
    "kind": st.sampled_from(OP_KINDS), "entity": NAMES,
    # names the compiler also writes for the tools it completes (update_item_count, get_item, ...), so
    # that a model's tool of another kind can take the name a completed tool wants
    "name": st.none() | st.sampled_from(["add_item", "get", "list_items", "close_job", "move", "ab", "get_item",
                                         "update_item_count", "set_item_count", "change_item_count",
                                         "update_item_name", "set_order_total", "find_item", "create_item"]),
    "field": OPT_NAME, "target": st.none() | VALUES, "description": TEXT})
bound = st.none() | st.integers(-1_000_000, 1_000_000)
rule = st.fixed_dictionaries({
    "kind": st.sampled_from(RULE_KINDS), "entity": NAMES, "field": OPT_NAME, "min": bound, "max": bound,
    "values": st.lists(VALUES, max_size=MAX_ENUM_VALUES)})
count = st.integers(0, MAX_TASKS_PER_KIND)
blueprint = st.fixed_dictionaries({
    "blueprint_version": st.just(1), "title": st.sampled_from(["Queue", "Shop"]), "summary": TEXT,
    "entities": st.lists(entity, min_size=1, max_size=MAX_ENTITIES),
    "operations": st.lists(operation, max_size=MAX_OPERATIONS), "rules": st.lists(rule, max_size=MAX_RULES),
    "tasks": st.fixed_dictionaries({k: count for k in
                                    ("execute", "read", "read_then_write", "missing_parameter", "decline")}),
    "difficulty": st.none() | st.sampled_from(DIFFICULTIES)})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=blueprint, python=st.booleans(), seed=st.integers(0, 3))
def test_every_schema_valid_blueprint_compiles_or_is_refused(data: dict[str, Any], python: bool, seed: int) -> None:
    parsed = parse_blueprint(data)
    assert parsed.blueprint is not None, parsed.error  # the strategy stays inside the schema
    try:
        compiled = compile_blueprint(parsed.blueprint, DOC if python else JS, seed=seed)
    except CompileError:
        return
    assert compiled.spec.tools and compiled.spec.tasks

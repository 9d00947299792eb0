"""Property test: any blueprint the schema admits compiles or is refused with a CompileError, never a crash.

Constrained decoding guarantees only the schema, so the compiler meets every shape the schema allows:
entities with only their key, operations and rules on unknown entities or fields, parents that loop,
states without transitions, empty task mixes. Names come from a small pool so references collide.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
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


def _one_entity(key: str, fields: list[tuple[str, str]]) -> dict[str, Any]:
    return {"blueprint_version": 1, "title": "Queue", "summary": "", "operations": [], "rules": [],
            "tasks": {"execute": 1, "read": 1, "read_then_write": 0, "missing_parameter": 0, "decline": 0},
            "difficulty": None,
            "entities": [{"name": "list", "description": "", "key": key, "parent": None, "states": [],
                          "fields": [{"name": n, "type": t, "description": ""} for n, t in fields]}]}


@pytest.mark.parametrize("key", ["item", "id", "name", "list"])
@pytest.mark.parametrize("fields", [
    [("item", "integer"), ("item", "string"), ("name", "integer"), ("list", "integer")],  # hypothesis found it
    [("name", "integer"), ("list", "integer")],
    [("name", "number"), ("list", "boolean"), ("label", "integer"), ("list_label", "integer")],
])
@pytest.mark.parametrize("seed", range(4))
def test_an_added_key_never_takes_a_renamed_fields_column(key: str, fields: list[tuple[str, str]], seed: int) -> None:
    # entity ``list`` with no string field: the compiler adds a string key; its first choices, ``name`` and
    # ``list_name``, are the columns of an integer field and of the field ``list`` (renamed: a builtin)
    bp = parse_blueprint(_one_entity(key, fields)).blueprint
    assert bp is not None
    for doc in (DOC, JS):
        try:
            compiled = compile_blueprint(bp, doc, seed=seed)
        except CompileError:
            continue
        assert compiled.spec.tools and compiled.spec.tasks
        db = sqlite3.connect(":memory:")
        db.executescript(compiled.spec.state.schema_sql + compiled.spec.state.seed_sql)
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            for _, column, sqltype, *_ in db.execute(f'PRAGMA table_info("{table}")'):
                kinds = {k for (k,) in db.execute(f'SELECT DISTINCT typeof("{column}") FROM "{table}"')}
                want = {"INTEGER": {"integer"}, "TEXT": {"text"}, "REAL": {"real", "integer"},
                        "BOOLEAN": {"integer"}}.get(sqltype, kinds)
                assert kinds <= want | {"null"}, (table, column, sqltype, kinds)

"""The store spec of the sandbox's contract tests: an ``items`` table and four ordinary tools."""

from __future__ import annotations

from typing import Any

from gym_envs.sandbox import SqlLimits, StateDB
from gym_envs.spec import EnvSpec, parse_spec

STORE_SCHEMA = """
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL);
CREATE INDEX items_name ON items (name);
"""


STORE_SEED = "INSERT INTO items VALUES (1, 'apple', 3), (2, 'pear', 0);"


STORE_CODE = '''
import datetime, random

def get(db, item_id):
    rows = db.query("SELECT id, name, qty FROM items WHERE id = ?", [item_id])
    if not rows:
        raise ToolError(f"no item {item_id}")
    return rows[0]

def add(db, name, qty=1):
    r = db.execute("INSERT INTO items (name, qty) VALUES (?, ?)", [name, qty])
    return {"id": r["lastrowid"]}

def take(db, item_id, qty):
    item = get(db, item_id)
    if item["qty"] < qty:
        raise ToolError("not enough " + item["name"])
    db.execute("UPDATE items SET qty = qty - ? WHERE id = ?", [qty, item_id])
    return get(db, item_id)

def misc(db, **kw):
    try:
        db.nothing
    except AttributeError:
        missing = "AttributeError"
    try:
        undefined
    except NameError:
        name_error = "NameError"
    rng = random.Random()
    return {"date": datetime.date(2024, 3, 1).strftime("%Y-%m-%d"),
            "parsed": datetime.datetime.strptime("01/02/2024", "%d/%m/%Y").isoformat(),
            "missing": missing, "name_error": name_error, "draw": random.randint(1, 10**9),
            "child": rng.randint(1, 10**9), "product": 6 * 7, "power": 2 ** 10}
'''


STORE_TOOLS = [
    {"name": "get", "parameters": {"type": "object", "properties": {"item_id": {"type": "integer"}},
                                   "required": ["item_id"]}},
    {"name": "add", "parameters": {"type": "object", "properties": {
        "name": {"type": "string", "minLength": 1}, "qty": {"type": "integer", "minimum": 1}},
        "required": ["name"]}},
    {"name": "take", "parameters": {"type": "object", "properties": {
        "item_id": {"type": "integer"}, "qty": {"type": "integer"}}, "required": ["item_id", "qty"]}},
    {"name": "misc", "parameters": {"type": "object", "properties": {}, "additionalProperties": True}},
]


def store_spec(code: str = STORE_CODE, tools: list[dict[str, Any]] | None = None, schema: str = STORE_SCHEMA,
              seed: str = STORE_SEED) -> EnvSpec:
    tools = tools or STORE_TOOLS
    reference = [{"name": "take", "arguments": {"item_id": 1, "qty": 1}}] if tools is STORE_TOOLS else []
    return parse_spec({
        "id": "executor-test", "title": "Store", "state": {"schema_sql": schema, "seed_sql": seed},
        "tools": tools, "code": code,
        "tasks": [{"id": "t0", "kind": "execute", "turns": [
            {"instruction": "Take one apple.",
             "checks": [{"kind": "sql", "query": "SELECT qty FROM items WHERE id = 1", "expect": [[2]]}],
             "reference": reference},
            {"instruction": "How many apples?", "checks": [{"kind": "reply_contains", "any_of": ["2"]}]}]}],
    })


def state_image(schema: str, seed: str, limits: SqlLimits) -> bytes:
    """The serialised image of a fresh state database built from ``schema`` and ``seed``."""
    db = StateDB(limits)
    db.script(schema, mode="setup")
    db.script(seed, mode="rw")
    image = db.image()
    db.close()
    return image

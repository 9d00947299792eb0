"""What the AST writer adds to a document's blueprint so that its tasks can go deep.

Role: the static analysis (:mod:`envgen.proposers.template.build`) finds what a
document manages and the operations its methods name; deep tasks also need a
relation to cross (a record that belongs to another), numbers that move
between records, and business rules that refuse. :func:`deepen` adds them to
the blueprint the writer emits, in the blueprint's own vocabulary, so the
model that learns from the writer learns to propose them too:

* **a holder**: when the main entity belongs to nothing and the blueprint has
  room, a parent entity that holds its records (named with a grouping word of
  the document when it has one: ``pool``, ``queue``, ``group``...), with an
  integer field that says how many it holds (a ``capacity`` rule);
* **movement**: a ``transfer`` that moves a record to another parent (when it
  has one), and for a number field of the main entity an ``adjust`` and a
  ``transfer`` of an amount between two records, with a ``non_negative`` rule
  (an overdraft is refused);
* **lifecycles with an end**: a main entity with states gets a ``final`` state
  (its last one; with only two, an ``archived`` state and the status
  operation that reaches it), so a status change out of it is refused;
* **difficulty** drawn from the seed (:data:`DIFFICULTY_WEIGHTS`), and a task
  mix with one task of every kind.

Deterministic for ``(blueprint, model, rng)``; every list stays within the
schema's bounds.
"""

from __future__ import annotations

import random
from typing import Any

from envgen.blueprint.render.model import Column, Entity, EnvModel, human, plural
from envgen.blueprint.schema import MAX_ENTITIES, MAX_OPERATIONS, MAX_RULES, MAX_STATES, NAME_RE

__all__ = ["DIFFICULTY_WEIGHTS", "deepen"]

DIFFICULTY_WEIGHTS = {"easy": 0.15, "medium": 0.35, "hard": 0.5}
"""How often the AST writer picks each difficulty (the stats report the mix)."""

_READS = ("get", "find", "list")
_HOLDERS = ("pool", "queue", "group", "folder", "bucket", "batch", "category", "collection", "team", "registry")
_COUNTS = ("count", "copies", "quantity", "qty", "stock", "balance", "amount", "capacity", "size", "limit",
           "total", "seats", "units", "credits", "points", "score")


def _holder_word(words: set[str]) -> str:
    return next((w for w in _HOLDERS if w in words), "group")


def _number(main: Entity) -> Column | None:
    """The number field that moves: a count-like integer first, then any integer, then any number."""
    nums = [c for c in main.columns if c.sqltype in ("INTEGER", "REAL") and c is not main.key]
    ranked = sorted(nums, key=lambda c: (c.name.rsplit("_", 1)[-1] not in _COUNTS, c.sqltype != "INTEGER"))
    return ranked[0] if ranked else None


def _rule(kind: str, entity: str, field: str | None = None, values: list[str] | None = None,
          high: int | None = None) -> dict[str, Any]:
    return {"kind": kind, "entity": entity, "field": field, "min": None, "max": high, "values": values or []}


def _op(kind: str, entity: str, field: str | None = None, target: str | None = None,
        name: str | None = None) -> dict[str, Any]:
    return {"kind": kind, "entity": entity, "name": name, "field": field, "target": target, "description": ""}


def _add_holder(data: dict[str, Any], main: Entity, words: set[str], max_tables: int) -> dict[str, Any] | None:
    """A parent entity that holds the main entity's records, with a capacity field (or None: no room)."""
    ents = data["entities"]
    if len(ents) >= min(MAX_ENTITIES, max_tables) or ents[0]["parent"] is not None:
        return None
    holder = _holder_word(words)
    # the last word of the main entity's name that is a word (``ipv_32`` -> ``ipv``): a name starts with a letter
    stem = next((w for w in reversed(main.name.split("_")) if w[:1].isalpha()), main.name)
    name = f"{stem}_{holder}"[:24].strip("_")
    taken = {e["name"] for e in ents}
    if name in taken or not NAME_RE.match(name):
        return None
    many = plural(stem)
    cap = f"max_{many}"[:40]
    ent = {"name": name, "description": f"a {holder} that holds {human(main.table)}"[:60],
           "key": "label", "fields": [{"name": "label", "type": "string", "description": f"the name of the {holder}"},
                                      {"name": cap, "type": "integer",
                                       "description": f"how many {many} the {holder} can hold"[:60]}],
           "parent": None, "states": []}
    ents.append(ent)
    ents[0]["parent"] = name
    return ent


def _moves(data: dict[str, Any], main: Entity, number: Column | None) -> list[dict[str, Any]]:
    """Operations that move things: the main record to another parent, an amount between two records."""
    ops = []
    if data["entities"][0]["parent"] is not None:
        ops.append(_op("transfer", main.name))
    else:
        child = next((e for e in data["entities"][1:] if e["parent"] == main.name), None)
        if child is not None:
            ops.append(_op("transfer", child["name"]))
    if number is not None:
        ops += [_op("adjust", main.name, number.name), _op("transfer", main.name, number.name)]
    return ops


def _lifecycle(data: dict[str, Any], main: Entity) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Operations and rules for a final state of the main entity's lifecycle."""
    states = list(data["entities"][0]["states"])
    if len(states) < 2:
        return [], []
    if len(states) >= 3:
        return [], [_rule("final", main.name, values=[states[-1]])]
    if len(states) >= MAX_STATES or "archived" in states:
        return [], []
    data["entities"][0]["states"] = [*states, "archived"]
    return [_op("status", main.name, target="archived")], [_rule("final", main.name, values=["archived"])]


def _capacity(data: dict[str, Any], holder: dict[str, Any] | None, rng: random.Random) -> list[dict[str, Any]]:
    """A capacity rule on the entity whose records others belong to."""
    parents = {e["parent"] for e in data["entities"] if e["parent"]}
    target = next((e for e in data["entities"] if e["name"] in parents), None)
    if target is None:
        return []
    if holder is not None and target is holder:
        return [_rule("capacity", holder["name"], holder["fields"][1]["name"])]
    ints = [f["name"] for f in target["fields"] if f["type"] == "integer" and f["name"] != target["key"]]
    if ints:
        return [_rule("capacity", target["name"], ints[0])]
    return [_rule("capacity", target["name"], high=rng.randint(3, 6))]


def _mix(level: str) -> dict[str, int]:
    """One task of every kind (the depth is in each task: its turns and its chains, by the difficulty)."""
    return {"execute": 1, "read": 1, "read_then_write": 1, "missing_parameter": 1, "decline": 1}


def deepen(data: dict[str, Any], model: EnvModel, words: set[str], rng: random.Random,
           max_tables: int = MAX_ENTITIES) -> None:
    """Add a holder (when there are fewer than ``max_tables`` entities), movement, a final state, rules, a
    difficulty and a task mix to the blueprint ``data`` (a dict in the blueprint format whose first entity is
    ``model``'s main entity)."""
    main = next(o.entity for o in model.ops if o.kind == "update")
    holder = _add_holder(data, main, words, max_tables)
    number = _number(main)
    life_ops, life_rules = _lifecycle(data, main)
    extra_ops = _moves(data, main, number) + life_ops
    new = {(x["kind"], x["entity"], x["field"]) for x in extra_ops}
    have = [o for o in data["operations"] if (o["kind"], o["entity"], o["field"]) not in new]
    writes = [o for o in have if o["kind"] not in _READS]
    reads = [o for o in have if o["kind"] in _READS]  # the compiler adds the lookups a model needs anyway
    data["operations"] = (writes + extra_ops + reads)[:MAX_OPERATIONS]
    rules = _capacity(data, holder, rng) + life_rules
    if number is not None:
        rules.append(_rule("non_negative", main.name, number.name))
    rest = [r for r in data["rules"] if (r["kind"], r["field"]) not in {(x["kind"], x["field"]) for x in rules}]
    data["rules"] = (rules + rest)[:MAX_RULES]
    level = rng.choices(list(DIFFICULTY_WEIGHTS), weights=list(DIFFICULTY_WEIGHTS.values()))[0]
    data["difficulty"] = level
    data["tasks"] = _mix(level)

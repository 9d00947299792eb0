"""Seed rows of a world: every table filled with realistic, related, seeded records.

Role: :func:`fill_rows` draws each entity's rows (referenced entities first) from
:class:`~envgen.world.data.Pools`, links them (a child to a parent with a skew, so some customers have
many orders and some none; a reference to a catalog record uniformly; a holder to a person or NULL),
spreads lifecycle states, and sets capacity fields so that some containers are full (a refusal a
task can ask for) and most have room.

A row's lifecycle state and title are drawn before its other fields, so what goes with them follows: the
adjective and category of the title's line, its price range, the part of the day its title names
(:meth:`~envgen.world.data.Pools.title`), and for a record in a final state (a delivered order, a completed
visit) its days ahead of today moved behind it, after its other past days (:meth:`~envgen.world.data.Pools.date`).

Contract: ids are 1..n in insertion order; keys are unique per table; every reference points to an
existing row (or NULL where the reference is nullable); a capacity field is never below the number of
records it counts; values are SQL-safe (see :mod:`envgen.world.data`). The same world and ``rng`` give
the same rows.
"""

from __future__ import annotations

import random
from typing import Any

from envgen.world.data import Pools, date_side
from envgen.world.model import Entity, Field, World

__all__ = ["NEW_CODE_BASE", "Rows", "apply_copies", "fill_rows", "order_entities"]

Rows = dict[str, list[dict[str, Any]]]
NEW_CODE_BASE = 90000
"""Seed codes are drawn below this; a tool that creates a record numbers it ``NEW_CODE_BASE + id``, so a new
code never repeats a seed one and the same trajectory always gives the same code."""


def order_entities(world: World) -> list[Entity]:
    """Entities with every referenced entity before the ones that reference it (a cycle raises ValueError)."""
    done: list[Entity] = []
    pending = list(world.entities)
    while pending:
        ready = [e for e in pending if all(r.entity in done or r.entity is e for r in e.refs)]
        if not ready:
            raise ValueError(f"the references of {[e.name for e in pending]} form a cycle")
        for e in ready:
            done.append(e)
            pending.remove(e)
    return done


def _value(pools: Pools, ent: Entity, f: Field, row: dict[str, Any], state: str | None = None) -> Any:
    ctx = {"field": f, "row": row, "prefix": ent.prefix, "over": state is not None and state in ent.final}
    return f.semantic.draw(pools, ctx)


def _draw_order(f: Field) -> tuple[bool, bool]:
    """A title first (what goes with it follows it), a day ahead of today last (a finished record's due day falls
    after its past days)."""
    return f.kind != "title", f.kind in ("date", "datetime") and date_side(f.name) > 0


def _draw_key(pools: Pools, ent: Entity, row: dict[str, Any], used: set[str]) -> str:
    for attempt in range(40):
        value = str(_value(pools, ent, ent.key, row))
        if attempt >= 20 and ent.key.kind == "title":
            value = f"{value} {pools.rng.choice(['Plus', 'Pro', 'Mini', 'Max', 'Lite', 'XL', 'II', 'Go'])}"
        if value.lower() not in used:
            used.add(value.lower())
            return value
        row.pop("__person", None)  # a person key: draw another person
    n = len(used) + 1
    value = f"{value} {n}"
    used.add(value.lower())
    return value


def _skewed(rng: random.Random, n: int) -> int:
    """An index in ``range(n)`` favouring low ones (a few parents hold many records, some hold none)."""
    return min(int(rng.paretovariate(1.2)) - 1 + rng.randrange(max(1, n // 3)), n - 1) if n > 1 else 0


def _state(rng: random.Random, ent: Entity) -> str:
    weights = [3 if i == 0 else (1 if s in ent.final else 2) for i, s in enumerate(ent.states)]
    return rng.choices(ent.states, weights=weights)[0]


def fill_rows(world: World, pools: Pools) -> Rows:
    """Every entity's seed rows, by table name (see the module docstring)."""
    rng = pools.rng
    rows: Rows = {}
    for ent in order_entities(world):
        used: set[str] = set()
        parent = ent.parent
        parent_rows = rows.get(parent.entity.table, []) if parent is not None else []
        order = list(range(len(parent_rows)))
        rng.shuffle(order)  # which parents hold the most records
        out: list[dict[str, Any]] = []
        for i in range(ent.rows):
            row: dict[str, Any] = {"id": i + 1}
            for ref in ent.refs:
                target = rows.get(ref.entity.table, [])
                if not target or (ref.nullable and rng.random() < 0.5):
                    row[ref.column] = None
                elif ref.owner:
                    row[ref.column] = target[order[_skewed(rng, len(order))]]["id"]
                else:
                    row[ref.column] = rng.choice(target)["id"]
            row[ent.key.name] = _draw_key(pools, ent, row, used)
            state = _state(rng, ent) if ent.states else None
            for f in sorted(ent.fields, key=_draw_order):
                row[f.name] = None if f.nullable and rng.random() < 0.3 else _value(pools, ent, f, row, state)
            for scratch in ("__person", "__line", "__title"):
                row.pop(scratch, None)
            if state is not None:
                row["state"] = state
            out.append(row)
        rows[ent.table] = out
    _fit_capacities(world, rows, rng)
    return rows


def _fit_capacities(world: World, rows: Rows, rng: random.Random) -> None:
    """A container's capacity field is at least the records it holds: a fifth are exactly full."""
    for parent in world.entities:
        if parent.capacity is None:
            continue
        for child in world.children(parent):
            held: dict[int, int] = {}
            counted = set(child.active_states) if child.states else None
            for r in rows[child.table]:
                if counted is None or r.get("state") in counted:
                    pid = r[child.parent.column]  # type: ignore[union-attr]
                    held[pid] = held.get(pid, 0) + 1
            for r in rows[parent.table]:
                n = held.get(r["id"], 0)
                r[parent.capacity] = n if (n and rng.random() < 0.2) else n + rng.randint(1, 4)
            break


def apply_copies(world: World, rows: Rows) -> None:
    """Seed rows agree with what the tools do: a field a create copies from a referenced record (an order
    line's ``unit_price`` from its product's ``price``) holds that record's value in every seed row."""
    for op in world.ops:
        if op.kind != "create":
            continue
        ent = op.entity
        for eff in op.effects:
            if eff.kind != "copy" or not eff.source:
                continue
            ref_name, fname = eff.source.split(".", 1)
            ref = next((r for r in ent.refs if r.name == ref_name), None)
            if ref is None:
                continue
            by_id = {r["id"]: r for r in rows.get(ref.entity.table, [])}
            for r in rows.get(ent.table, []):
                src = by_id.get(r[ref.column])
                if src is not None and fname in src:
                    r[eff.field] = src[fname]

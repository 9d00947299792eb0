"""Seed rows: filling every entity's table with seeded values, within its capacity rules.

Role: the compiler's row renderer. :func:`fill_entity_rows` draws each entity's rows (parents first,
so a child row points at an existing parent row) from a :class:`~envgen.blueprint.render.values.ValueMaker`;
:func:`fit_capacity` then makes the rows respect a parent's capacity (a fixed number, or one of its
integer columns).

Contract: deterministic for the same entities, ``rng`` and maker state; every entity gets at least
``rows[0]`` rows before capacity fitting, and a row in each of its final states when it has them.
"""

from __future__ import annotations

import random

from envgen.blueprint.render.model import Entity
from envgen.blueprint.render.values import ValueMaker

__all__ = ["fill_entity_rows", "fit_capacity"]


def _fill_rows(ent: Entity, n: int, maker: ValueMaker, parent_ids: list[int]) -> None:
    used: set[str] = set()
    for i in range(n):
        row: dict[str, object] = {"id": i + 1}
        if ent.parent is not None and parent_ids:
            row[ent.parent.id_param] = maker.rng.choice(parent_ids)
        row[ent.key.name] = maker.key(ent.key, ent, used)
        for c in ent.columns:
            row[c.name] = maker.key(c, ent, used) if c.unique else maker.value(c)
        if ent.status:
            weights = [3] + [1] * (len(ent.status) - 1)
            row["status"] = maker.rng.choices(ent.status, weights)[0]
        ent.rows.append(row)
    missing = [s for s in ent.final if all(r["status"] != s for r in ent.rows)]
    for state, row in zip(missing, maker.rng.sample(ent.rows, min(len(missing), len(ent.rows) // 3)), strict=False):
        row["status"] = state  # a record in each final state, for the requests a final state refuses


def fill_entity_rows(entities: list[Entity], rng: random.Random, maker: ValueMaker, rows: tuple[int, int]) -> None:
    """Seed rows for every entity (parents first: a child row points at an existing parent row)."""
    lo, hi = rows
    for ent in entities:
        # Mostly small tables (validation time grows with rows), sometimes up to the configured maximum.
        is_parent = any(e.parent is ent for e in entities)
        top = min(hi, lo + 5) if is_parent or rng.random() < 0.8 else hi
        n = rng.randint(lo, top)
        _fill_rows(ent, n, maker, [r["id"] for r in ent.parent.rows] if ent.parent else [])  # type: ignore[misc]
    for ent in entities:
        if ent.limited:
            fit_capacity(ent, [e for e in entities if e.parent is ent], rng)


def fit_capacity(parent: Entity, children: list[Entity], rng: random.Random) -> None:
    """Make the seed rows respect ``parent``'s capacity: child rows past a fixed capacity move to a parent row
    with room (or are dropped); a capacity column holds at least its row's count, with some rows exactly full
    (so a request can meet a full one) and the others with room to spare."""
    col = parent.capacity_column
    for child in children:
        pid = parent.id_param
        if col is None and parent.capacity is not None:
            cap = parent.capacity
            for row in list(child.rows):
                held = sum(1 for r in child.rows if r[pid] == row[pid])
                if held <= cap:
                    continue
                room = [p["id"] for p in parent.rows if sum(1 for r in child.rows if r[pid] == p["id"]) < cap]
                if room:
                    row[pid] = rng.choice(room)
                else:
                    child.rows.remove(row)
    if col is None:
        return
    counts = {p["id"]: max([sum(1 for r in ch.rows if r[parent.id_param] == p["id"]) for ch in children] or [0])
              for p in parent.rows}
    lo = int(col.minimum) if col.minimum is not None else 1
    hi = int(col.maximum) if col.maximum is not None else None
    for p in parent.rows:
        n = counts[p["id"]]
        if hi is not None and n > hi:  # more child rows than the column may say: drop the extra ones
            for ch in children:
                mine = [r for r in ch.rows if r[parent.id_param] == p["id"]]
                for r in mine[hi:]:
                    ch.rows.remove(r)
            n = hi
        value = max(lo, n if n and rng.random() < 0.4 else n + rng.randint(1, 3))
        p[col.name] = min(value, hi) if hi is not None else value

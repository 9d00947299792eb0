"""Seed rows of a world: every table filled with realistic, related, seeded records.

Role: :func:`fill_rows` draws each entity's rows (referenced entities first) from
:class:`~envgen.world.data.Pools`, links them (a child to a parent with a skew, so some customers have
many orders and some none; a reference to a catalog record uniformly; a holder to a person or NULL),
spreads lifecycle states, and sets capacity fields so that some containers are full (a refusal a
task can ask for) and most have room.

A row's lifecycle state is drawn first and its title before its other fields, so what goes with them follows: the
adjective and category of the title's line, its price range, the part of the day its title names
(:meth:`~envgen.world.data.Pools.title`); the records it refers to agree with what its state means for their dates
(:func:`~envgen.world.data.state_phase`: a confirmed booking's flights depart ahead, a flown one's departed; a row
without a lifecycle, an order's line, is in its owner's phase), and so do its own days (a pending order placed in the
last two weeks, a delivered order's delivery day behind today after its other past days, a picked-up car's pickup day
behind), none before a record it refers to was made (:meth:`~envgen.world.data.Pools.date`).

Contract: ids are 1..n in insertion order; keys are unique per table; every reference points to an
existing row (or NULL where the reference is nullable); a capacity field is never below the number of
records it counts; values are SQL-safe (see :mod:`envgen.world.data`). The same world and ``rng`` give
the same rows.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from typing import Any

from envgen.world.data import TODAY, Pools, begins, created_day, date_side, state_phase
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


def _value(pools: Pools, ent: Entity, f: Field, row: dict[str, Any], phase: str = "open", final: bool = False,
           floor: int | None = None) -> Any:
    ctx = {"field": f, "row": row, "prefix": ent.prefix, "phase": phase, "final": final, "floor": floor}
    return f.semantic.draw(pools, ctx)


def _days(row: dict[str, Any], ent: Entity, which: Callable[[str], bool]) -> list[dt.date]:
    """The row's days (date and date-time fields) whose names ``which`` accepts."""
    out = []
    for f in ent.fields:
        v = row.get(f.name)
        if f.kind in ("date", "datetime") and isinstance(v, str) and which(f.name):
            out.append(dt.date.fromisoformat(v[:10]))
    return out


def _fits(phase: str, ent: Entity, row: dict[str, Any]) -> bool:
    """Whether a referenced record ``row`` of ``ent`` agrees with the phase of the record that refers to it: what a
    record to come or just asked for refers to begins ahead (a booked flight departs later), what a record that is
    over refers to began behind (a flown booking's flight departed)."""
    starts = _days(row, ent, lambda n: date_side(n) > 0 and begins(n))
    if phase in ("new", "booked"):
        return all(d > TODAY for d in starts)
    if phase == "over":
        return all(d < TODAY for d in starts)
    return True


def _floor(row: dict[str, Any], ent: Entity, rows: Rows) -> int | None:
    """Days back to the latest day on which a record the row refers to came to be (its order's, its account's
    opening): the row's own days behind come after it."""
    days: list[dt.date] = []
    for ref in ent.refs:
        target = rows.get(ref.entity.table, [])
        rid = row.get(ref.column)
        if rid is not None and 0 < rid <= len(target):
            days += [d for d in _days(target[rid - 1], ref.entity, created_day) if d < TODAY]
    return (TODAY - max(days)).days if days else None


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
    phases: dict[str, list[str]] = {}  #: each table's rows' phases (:func:`~envgen.world.data.state_phase`)
    fit: dict[tuple[str, str], list[int]] = {}
    for ent in order_entities(world):
        used: set[str] = set()
        parent = ent.parent
        parent_rows = rows.get(parent.entity.table, []) if parent is not None else []
        order = list(range(len(parent_rows)))
        rng.shuffle(order)  # which parents hold the most records
        out: list[dict[str, Any]] = []
        for i in range(ent.rows):
            row: dict[str, Any] = {"id": i + 1}
            owner = None
            if parent is not None and parent_rows:
                owner = parent_rows[order[_skewed(rng, len(order))]]["id"]
            state = _state(rng, ent) if ent.states else None
            inherited = phases[parent.entity.table][owner - 1] if parent is not None and owner is not None else "open"
            phase = state_phase(state, state in ent.final) if state is not None else inherited
            picks = _pick_refs(rng, ent, rows, phase, fit)
            if picks is None and ent.states:  # no referenced record agrees with that state: a state some agree with
                for other in rng.sample(ent.states, len(ent.states)):
                    picks = _pick_refs(rng, ent, rows, state_phase(other, other in ent.final), fit)
                    if picks is not None:
                        state, phase = other, state_phase(other, other in ent.final)
                        break
            if picks is None:
                picks = _pick_refs(rng, ent, rows, "open", fit)
            assert picks is not None
            for ref in ent.refs:
                row[ref.column] = owner if ref.owner and owner is not None else picks[ref.name]
            row[ent.key.name] = _draw_key(pools, ent, row, used)
            final = state is not None and state in ent.final
            floor = _floor(row, ent, rows)
            for f in sorted(ent.fields, key=_draw_order):
                row[f.name] = (None if f.nullable and rng.random() < 0.3
                               else _value(pools, ent, f, row, phase, final, floor))
            for scratch in ("__person", "__line", "__title"):
                row.pop(scratch, None)
            if state is not None:
                row["state"] = state
            out.append(row)
            phases.setdefault(ent.table, []).append(phase)
        rows[ent.table] = out
    _fit_capacities(world, rows, rng)
    return rows


def _pick_refs(rng: random.Random, ent: Entity, rows: Rows, phase: str,
               fit: dict[tuple[str, str], list[int]]) -> dict[str, Any] | None:
    """The referenced record of each reference but the owner (drawn by the caller): uniformly among those that agree
    with the row's phase (:func:`_fits`; ``fit`` keeps the ids that agree, by table and phase), or NULL for half of a
    nullable reference's; None when a reference that must name a record has none that agrees."""
    out: dict[str, Any] = {}
    for ref in ent.refs:
        target = rows.get(ref.entity.table, [])
        if ref.owner or not target or (ref.nullable and rng.random() < 0.5):
            out[ref.name] = None
            continue
        key = (ref.entity.table, phase)
        if key not in fit:
            fit[key] = [r["id"] for r in target if _fits(phase, ref.entity, r)]
        if not fit[key]:
            return None
        out[ref.name] = rng.choice(fit[key])
    return out


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

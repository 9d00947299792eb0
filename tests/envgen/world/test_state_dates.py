"""A record's dates agree with its lifecycle state and with the records it refers to, counted over many generated
worlds (the 40 worlds of the test library, and every catalog domain's rows under more seeds).

A contradiction is any of these, read from the state's own words (a short list of unambiguous ones, kept here apart
from the generator's) and from the name rule every date is drawn by (:func:`~envgen.world.data.date_side`, which
days ahead begin a record, :func:`~envgen.world.data.begins`, and which days behind are when a record was made,
:func:`~envgen.world.data.created_day`):

* a record that happened (a state saying so, or a final state that is not a calling off) has a day ahead that is
  not behind today, or one before its own days behind;
* a record to come (confirmed, booked, scheduled, reserved, pending...) has a day ahead that is not ahead;
* a record waiting to be handled (pending, queued, submitted, new...) has a day behind more than 30 days back;
* a lapsed record (overdue, past due, expired) has an end day ahead; one under way (checked in, in progress, picked
  up) a start day ahead or an end day behind;
* a record's days ahead out of the order of its fields (a rental's return before its pickup);
* a record to come (or one of its lines, which have no state of their own) refers to a record that began already
  (a confirmed booking's flight departed), or one that happened to a record that has not begun (a flown booking's
  flight departs next week);
* a record has a day behind before the day a record it refers to was made (a payment before its account opened).
"""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from collections import Counter
from typing import Any

from envgen.world.catalog import domains
from envgen.world.compile import world_pools
from envgen.world.data import TODAY, begins, created_day, date_side
from envgen.world.model import Entity, World
from envgen.world.normalize import to_world
from envgen.world.rows import fill_rows, order_entities
from tests.envgen.world.library40 import library40

HAPPENED = {"flown", "delivered", "completed", "attended", "used", "checked_out", "returned", "done", "packed",
            "departed", "closed", "resolved", "solved", "reimbursed", "hired", "picked_up", "landed", "fulfilled"}
CALLED_OFF = {"cancelled", "canceled", "refunded", "rejected", "denied", "revoked", "dropped", "deleted", "destroyed",
              "no_show", "reversed", "withdrawn", "yanked", "lost"}
TO_COME = {"confirmed", "booked", "reserved", "scheduled", "upcoming", "guaranteed", "pending", "requested",
           "tentative", "queued", "placed", "waitlisted"}
WAITING = {"pending", "queued", "new", "submitted", "placed", "requested", "waiting", "tentative", "reported",
           "applied", "processing", "preparing", "filed"}
LAPSED = {"overdue", "past_due", "expired", "lapsed"}
UNDER_WAY = {"checked_in", "in_progress", "picked_up", "in_transit", "out_for_delivery", "in_use"}


def _day(v: Any) -> dt.date | None:
    return dt.date.fromisoformat(v[:10]) if isinstance(v, str) and len(v) >= 10 and v[4] == "-" else None


def _dates(ent: Entity, row: dict[str, Any], which: Any) -> list[tuple[str, dt.date]]:
    return [(f.name, d) for f in ent.fields if f.kind in ("date", "datetime") and which(f.name)
            and (d := _day(row.get(f.name))) is not None]


def _happened(ent: Entity, state: str | None) -> bool:
    """A state that says the record happened (``picked_up`` only where it is final: a groomed pet's, not a rental's),
    or a final one that is no calling off."""
    return state is not None and ((state in HAPPENED and (state in ent.final or state != "picked_up"))
                                  or (state in ent.final and state not in CALLED_OFF))


def _ahead(name: str) -> bool:
    return date_side(name) > 0


def _behind(name: str) -> bool:
    return date_side(name) < 0


def _own(ent: Entity, row: dict[str, Any], state: str, read: Counter[str]) -> list[str]:
    """The contradictions between a record's state and its own days."""
    out: list[str] = []
    where = f"{ent.name} {row[ent.key.name]}"
    days_ahead, days_behind = _dates(ent, row, _ahead), _dates(ent, row, _behind)
    if days_ahead:
        read["in order"] += 1
        if [d for _, d in days_ahead] != sorted(d for _, d in days_ahead):
            out.append(f"{where}: its days ahead {days_ahead} are out of order")
    if _happened(ent, state) and days_ahead:
        read["happened"] += 1
        out += [f"{where} is {state} but its {n} {d} is not behind today or before its past days"
                for n, d in days_ahead if d >= TODAY or any(d < b for _, b in days_behind)]
    elif state in TO_COME and state not in ent.final and days_ahead:
        read["to come"] += 1
        out += [f"{where} is {state} but its {n} {d} is not ahead" for n, d in days_ahead if d <= TODAY]
    if state in WAITING and state not in ent.final and days_behind:
        read["waiting"] += 1
        out += [f"{where} is {state} since {n} {d}" for n, d in days_behind if (TODAY - d).days > 30]
    if state in LAPSED and days_ahead:
        read["lapsed"] += 1
        out += [f"{where} is {state} but its {n} {d} is ahead" for n, d in days_ahead if not begins(n) and d > TODAY]
    if state in UNDER_WAY and state not in ent.final and days_ahead:
        read["under way"] += 1
        out += [f"{where} is {state} but its {n} {d} is on the wrong side of today" for n, d in days_ahead
                if (d > TODAY if begins(n) else d <= TODAY)]
    return out


def contradictions(world: World, rows: dict[str, list[dict[str, Any]]]) -> tuple[list[str], Counter[str]]:
    """Every contradiction of the module docstring in a world's seed rows, and how many rows each rule read."""
    out: list[str] = []
    read: Counter[str] = Counter()
    by_id = {t: {r["id"]: r for r in rs} for t, rs in rows.items()}
    for ent in order_entities(world):
        par = ent.parent
        for row in rows.get(ent.table, []):
            where = f"{ent.name} {row[ent.key.name]}"
            holder, state = ent, row.get("state")
            if state is None and par is not None and par.entity.states:  # a line is in its record's state
                holder, state = par.entity, (by_id[par.entity.table].get(row[par.column]) or {}).get("state")
            elif state is not None:
                out += _own(ent, row, state, read)
            days_behind = _dates(ent, row, _behind)
            for ref in ent.refs:
                other = by_id.get(ref.entity.table, {}).get(row.get(ref.column))
                if other is None:
                    continue
                made = [d for _, d in _dates(ref.entity, other, created_day) if d < TODAY]
                if made and days_behind:
                    read["after its references"] += 1
                    out += [f"{where}'s {n} {d} is before its {ref.name} was made ({max(made)})"
                            for n, d in days_behind if d < max(made)]
                starts = _dates(ref.entity, other, lambda n: _ahead(n) and begins(n))
                if ref.owner or not starts or state is None:
                    continue
                if state in TO_COME and state not in holder.final:
                    read["refers to come"] += 1
                    out += [f"{where} is {state} but its {ref.name}'s {n} {d} is past" for n, d in starts if d <= TODAY]
                elif _happened(holder, state):
                    read["refers happened"] += 1
                    out += [f"{where} is {state} but its {ref.name}'s {n} {d} is to come"
                            for n, d in starts if d >= TODAY]
    return out, read


def _spec_rows(spec: Any) -> dict[str, list[dict[str, Any]]]:
    db = sqlite3.connect(":memory:")
    db.row_factory = sqlite3.Row
    db.executescript(spec.state.schema_sql + "\n" + spec.state.seed_sql)
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {t: [dict(r) for r in db.execute(f'SELECT * FROM "{t}"')] for t in tables}


def test_no_record_of_a_generated_world_has_dates_its_state_or_its_references_contradict() -> None:
    wrong: list[str] = []
    read: Counter[str] = Counter()
    for built in library40():
        found, n = contradictions(to_world(built.blueprint, []), _spec_rows(built.spec))
        wrong += [f"{built.spec.id}: {w}" for w in found]
        read += n
    for seed in range(4):  # every catalog domain's rows under more seeds
        for bp in domains():
            world = to_world(bp, [])
            found, n = contradictions(world, fill_rows(world, world_pools(bp, world, random.Random(seed))))
            wrong += [f"{bp.id} (seed {seed}): {w}" for w in found]
            read += n
    assert not wrong, f"{len(wrong)} contradictions, e.g. {wrong[:8]}"
    # every rule read many rows: the states and references it is about are common, not a corner of the library
    assert all(read[k] >= 100 for k in ("happened", "to come", "waiting", "after its references", "in order",
                                       "refers to come", "refers happened", "under way", "lapsed")), read

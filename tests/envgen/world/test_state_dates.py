"""A record's lifecycle state and its dates agree: a record in a final state (a delivered order, a completed visit, a
returned loan) has its days ahead (a delivery day, a visit, a due date) behind today, after its own past days; the
others keep them ahead; and a record's days ahead come in the order of its fields (a rental's pickup, then its
return). Checked on the seed rows of 40 generated worlds; which states are final is each world's own
blueprint, which dates lie ahead is the name rule every date is drawn by."""

from __future__ import annotations

import sqlite3
from typing import Any

from envgen.world.data import TODAY, date_side
from envgen.world.normalize import to_world
from tests.envgen.world.library40 import library40


def _rows(spec: Any, table: str) -> list[dict[str, Any]]:
    db = sqlite3.connect(":memory:")
    db.row_factory = sqlite3.Row
    db.executescript(spec.state.schema_sql + "\n" + spec.state.seed_sql)
    return [dict(r) for r in db.execute(f'SELECT * FROM "{table}"')]


def test_a_finished_record_is_not_due_in_the_future_nor_before_it_began_and_spans_run_forward() -> None:
    today = TODAY.isoformat()
    wrong: list[str] = []
    finished = 0
    for built in library40():
        world = to_world(built.blueprint, [])
        for ent in world.entities:
            dates = [f for f in ent.fields if f.kind in ("date", "datetime")]
            ahead = [f.name for f in dates if date_side(f.name) > 0]
            behind = [f.name for f in dates if date_side(f.name) <= 0]
            if not ent.final or not ahead:
                continue
            for row in _rows(built.spec, ent.table):
                over = row["state"] in ent.final
                finished += over
                past = [str(row[b])[:10] for b in behind if row[b] is not None and str(row[b])[:10] < today]
                days = [None if row[name] is None else str(row[name])[:10] for name in ahead]
                drawn = [d for d in days if d is not None]
                if drawn != sorted(drawn):  # (a rental's pickup, then its return)
                    wrong.append(f"{built.spec.id}: {ent.name} {row[ent.key.name]}: {ahead} are {days}, out of order")
                for name, day in zip(ahead, days, strict=True):
                    if day is None:
                        continue
                    if over and (day >= today or any(day < p for p in past)):
                        wrong.append(f"{built.spec.id}: {ent.name} {row[ent.key.name]} is {row['state']} but its "
                                     f"{name} is {day} (today {today}, its past days {past})")
                    if not over and day <= today:
                        wrong.append(f"{built.spec.id}: {ent.name} {row[ent.key.name]} is {row['state']}, its {name} "
                                     f"{day} is not ahead")
    assert not wrong, f"{len(wrong)} records, e.g. {wrong[:6]}"
    assert finished >= 100  # finished records with a day ahead are common, not a corner of the library

"""A record's title and what goes with it agree: its adjective, its category, its price and the part of the day its
title names follow from the one draw of the title (``vocabulary.lines``), in every catalog domain and in a library
of 40 generated worlds. What contradicts a title is read from the world's own vocabulary, not listed here."""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from typing import Any

import pytest

from envgen.world.blueprint import TitleLine, Vocabulary, WorldBlueprint
from envgen.world.catalog import domains
from envgen.world.data import Line, Pools, day_part
from envgen.world.data import Vocabulary as Words
from envgen.world.model import Entity, World
from envgen.world.normalize import to_world
from tests.envgen.world.library40 import library40
from tests.envgen.world.store_world import store_world


def _rows(spec: Any, table: str) -> list[dict[str, Any]]:
    db = sqlite3.connect(":memory:")
    db.row_factory = sqlite3.Row
    db.executescript(spec.state.schema_sql + "\n" + spec.state.seed_sql)
    return [dict(r) for r in db.execute(f'SELECT * FROM "{table}"')]


def _titled(world: World) -> list[tuple[Entity, str]]:
    return [(e, f.name) for e in world.entities for f in [e.key, *e.fields] if f.kind == "title"]


def contradictions(bp: WorldBlueprint, spec: Any) -> list[str]:
    """Every seeded record of ``spec`` whose title disagrees with what the world's vocabulary says goes with it: an
    adjective its title's line does not have, a category other than its line's, a price outside its line's range,
    a time outside the part of the day (or week) its title names."""
    voc = bp.vocabulary
    flat = TitleLine.model_construct(titles=voc.titles, adjectives=voc.adjectives, category=None, price=[])
    lines = [*voc.lines, *([flat] if voc.titles else [])]
    world = to_world(bp, [])
    out: list[str] = []
    for ent, name in _titled(world):
        for row in _rows(spec, ent.table):
            title = str(row[name] or "")
            if not title:
                continue
            where = f"{spec.id}: {ent.name} {title!r}"
            # (a unique title key drawn again ends in a word of its own: 'Job Applications II')
            parsed = [(t[: -len(b)].strip(), li) for t in (title, title.rsplit(" ", 1)[0]) for li in lines
                      for b in li.titles if t == b or t.endswith(" " + b)]
            if not parsed:
                out.append(f"{where}: no title of the vocabulary")
                continue
            fits = [li for adj, li in parsed if not adj or adj in li.adjectives]
            if not fits:
                out.append(f"{where}: its adjective goes with none of its title's lines")
                continue
            for f in ent.fields:
                value = row.get(f.name)
                if value is None:
                    continue
                if f.kind == "category":
                    said = {li.category for li in fits if li.category in (f.enum or voc.categories)}
                    if said and value not in said:
                        out.append(f"{where}: {f.name} is {value!r}, its line says {sorted(said)}")
                if f.kind == "money" and f.minimum is None and f.maximum is None:
                    ranges = [li.price for li in fits if li.price]
                    if ranges and not any(lo * 100 <= int(value) <= hi * 100 for lo, hi in ranges):
                        out.append(f"{where}: {f.name} {int(value) / 100:.2f} is outside its line's {ranges}")
                if f.kind == "datetime":
                    hours, weekend = day_part(title)
                    when = dt.datetime.fromisoformat(str(value))
                    if hours and not hours[0] <= when.hour <= hours[1]:
                        out.append(f"{where}: {f.name} {value} is not in the hours its title names {hours}")
                    if weekend and when.weekday() < 5:
                        out.append(f"{where}: {f.name} {value} is not on a weekend")
    return out


def test_no_record_of_40_generated_worlds_contradicts_its_title() -> None:
    library = library40()
    found = [c for built in library for c in contradictions(built.blueprint, built.spec)]
    assert not found, f"{len(found)} records contradict their titles, e.g. {found[:8]}"
    with_lines = [b for b in library if b.blueprint.vocabulary.lines]
    assert len(with_lines) >= 20  # the check reads lines in most of the library, not in a corner of it


@pytest.mark.parametrize("bp", domains(), ids=lambda bp: bp.id)
def test_a_domain_that_files_its_titles_by_kind_files_every_one(bp: WorldBlueprint) -> None:
    """A catalog domain's titled records either come in kinds (every title in a line with a category of the
    entity's category field) or in none: never some titles filed by kind and the others drawn apart from theirs."""
    repairs: list[str] = []
    to_world(bp, repairs)
    assert not [r for r in repairs if r.startswith("vocabulary.lines")], repairs
    if any(li.category for li in bp.vocabulary.lines):
        assert not bp.vocabulary.titles
        assert all(li.category for li in bp.vocabulary.lines)


def test_every_title_is_as_likely_as_another_and_its_line_goes_with_the_row() -> None:
    words = Words(lines=[Line(["Desk Lamp", "Floor Lamp", "Pendant Light"], ["Brass"], "lighting", (25, 260)),
                         Line(["Chef Knife"], ["Compact"], "kitchen", (20, 180))])
    pools = Pools(random.Random(7), words)
    bases = [pools.title({"row": {}}).removeprefix("Brass ").removeprefix("Compact ") for _ in range(2000)]
    assert 0.2 < bases.count("Chef Knife") / len(bases) < 0.3  # one title of four, not one line of two
    from envgen.world.model import Field

    cat = Field("category", "category", enum=["lighting", "kitchen", "garden"])
    price = Field("price", "money")
    for _ in range(200):
        row: dict[str, Any] = {}
        title = pools.title({"row": row})
        kitchen = title.endswith("Chef Knife")
        assert pools.category({"field": cat, "row": row}) == ("kitchen" if kitchen else "lighting")
        cents = pools.money({"field": price, "row": row})
        assert (2000 <= cents <= 18000) if kitchen else (2500 <= cents <= 26000)


def test_an_article_title_takes_no_adjective_and_a_named_time_is_kept() -> None:
    pools = Pools(random.Random(3), Words(lines=[Line(["The Tempest", "Swan Lake"], ["Matinee", "Evening"])]))
    titles = {pools.title({"row": {}}) for _ in range(300)}
    assert "The Tempest" in titles and not [t for t in titles if " The " in t]
    assert day_part("Matinee Swan Lake") == ((13, 15), False) and day_part("Weekend Morning Spin")[1]
    assert day_part("Jazz at Midnight")[0] == (23, 23) and day_part("Swan Lake") == (None, False)
    from envgen.world.model import Field

    starts = Field("starts_at", "datetime")
    for _ in range(100):
        row: dict[str, Any] = {}
        title = pools.title({"row": row})
        when = dt.datetime.fromisoformat(pools.datetime({"field": starts, "row": row}))
        hours = day_part(title)[0]
        assert hours is None or hours[0] <= when.hour <= hours[1], (title, when)


def test_a_line_whose_category_no_field_has_is_a_recorded_repair() -> None:
    raw = store_world().model_dump(mode="json")
    raw["vocabulary"]["lines"] = [{"titles": ["Garden Hose"], "category": "garden"}]
    repairs: list[str] = []
    to_world(WorldBlueprint.model_validate(raw), repairs)
    assert [r for r in repairs if r.startswith("vocabulary.lines[0]: category 'garden'")], repairs


def test_a_price_range_is_low_then_high() -> None:
    with pytest.raises(ValueError, match=r"\[low, high\]"):
        TitleLine(titles=["Armchair"], price=[900, 150])
    with pytest.raises(ValueError, match=r"\[low, high\]"):
        TitleLine(titles=["Armchair"], price=[150])
    assert Vocabulary(titles=["Mug"], lines=[TitleLine(titles=["Lamp"])]).all_titles() == ["Mug", "Lamp"]

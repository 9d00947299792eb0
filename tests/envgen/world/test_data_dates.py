"""A date field's name says which side of today its values lie on: what was booked lies behind, a pickup ahead."""

from __future__ import annotations

import datetime as dt
import random

import pytest

from envgen.world.data import TODAY, Pools
from envgen.world.model import Field


@pytest.mark.parametrize("name", ["booked_on", "borrowed_on", "filed_on", "submitted_on", "incident_date",
                                  "applied_on", "posted_on", "sent_at", "requested_on", "published_on",
                                  "started_on", "started_at"])
def test_a_date_of_something_done_lies_in_the_past(name: str) -> None:
    pools = Pools(random.Random(7))
    for kind in ("date", "datetime"):
        f = Field(name, kind)
        drawn = [f.semantic.draw(pools, {"field": f, "row": {}}) for _ in range(60)]
        assert all(d[:10] < TODAY.isoformat() for d in drawn), (name, kind, max(drawn))


@pytest.mark.parametrize("name", ["pickup_date", "renews_on", "valid_until", "visit_date", "starts_at", "paid_until",
                                  "due_date", "checkout_date"])
def test_a_date_of_something_to_come_lies_ahead(name: str) -> None:
    pools = Pools(random.Random(7))
    f = Field(name, "date")
    assert all(f.semantic.draw(pools, {"field": f, "row": {}}) > TODAY.isoformat() for _ in range(60))


@pytest.mark.parametrize("state,final,phase", [("flown", True, "over"), ("checked_in", False, "under_way"),
                                               ("past_due", False, "lapsed"), ("pending_customer", False, "new"),
                                               ("confirmed", False, "booked"), ("cancelled", True, "void"),
                                               ("on_hold", False, "open"), ("archived", True, "over"),
                                               ("picked_up", True, "over"), ("picked_up", False, "under_way")])
def test_a_states_words_say_what_it_means_for_its_dates(state: str, final: bool, phase: str) -> None:
    from envgen.world.data import state_phase

    assert state_phase(state, final) == phase


def test_a_pending_records_past_days_are_recent_and_an_over_records_days_ahead_are_behind() -> None:
    pools = Pools(random.Random(3))
    placed, due = Field("placed_on", "date"), Field("pickup_date", "date")
    recent = [placed.semantic.draw(pools, {"field": placed, "row": {}, "phase": "new"}) for _ in range(80)]
    assert all((TODAY - dt.date.fromisoformat(d)).days <= 14 for d in recent)
    row: dict[str, str] = {}
    row["placed_on"] = placed.semantic.draw(pools, {"field": placed, "row": row, "phase": "under_way"})
    begun = due.semantic.draw(pools, {"field": due, "row": row, "phase": "under_way"})
    assert row["placed_on"] <= begun < TODAY.isoformat()  # a picked-up rental's pickup: behind, after its booking

"""A date field's name says which side of today its values lie on: what was booked lies behind, a pickup ahead."""

from __future__ import annotations

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

"""Values shaped by their field: money by its name (store credit a few hundred, a balance thousands), a file name
by what the document is."""

from __future__ import annotations

import random

import pytest

from envgen.world.data import Pools
from envgen.world.model import Field


def _drawn(name: str) -> list[int]:
    pools = Pools(random.Random(3))
    f = Field(name, "money")
    return [int(f.semantic.draw(pools, {"field": f, "row": {}})) for _ in range(200)]


@pytest.mark.parametrize("name", ["store_credit", "referral_credit", "travel_credit", "wallet_balance",
                                  "gift_card_balance", "prepaid_credit", "stored_value", "goodwill_credit"])
def test_money_a_customer_holds_with_a_service_is_at_most_a_few_hundred(name: str) -> None:
    assert max(_drawn(name)) <= 400_00, name


@pytest.mark.parametrize("name", ["balance", "tuition_balance", "credit_limit", "budget_left", "overdraft_limit"])
def test_a_balance_a_limit_or_a_budget_runs_to_thousands(name: str) -> None:
    drawn = _drawn(name)
    assert min(drawn) >= 200_00 and max(drawn) > 2_000_00, name


def test_a_file_name_says_what_the_document_is() -> None:
    pools = Pools(random.Random(5))
    f = Field("file_name", "file_name")
    said = {"png": ("photo", "scan", "diagram", "screenshot", "plan", "logo"),
            "xlsx": ("budget", "timesheet", "inventory", "forecast", "expenses", "schedule", "price")}
    names = [str(f.semantic.draw(pools, {"field": f, "row": {}})) for _ in range(300)]
    for name in names:
        stem, ext = name.rsplit(".", 1)
        if ext in said:
            assert any(w in stem.split("-") for w in said[ext]), name
    assert len(set(names)) > 200

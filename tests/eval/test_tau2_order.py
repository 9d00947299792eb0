"""Every converted τ² write tool fails where τ²'s own tool fails: a malformed argument gets τ²'s error, word for word.

Each case calls the tool in our environment and in τ²'s, from the same database state, and compares the result or
the error text. The table covers non-dict list items, ``None``, wrong counts, unknown ids, missing keys and wrong
field types; a property test draws list items and field values from all JSON values. The one case left out is
``update_reservation_passengers`` given non-dict passengers of the right count: τ² stores them as they are, in a
database our tables (passenger rows) cannot hold, so ours refuses it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eval.tau2 import _backend
from eval.tau2.convert import convert
from gym_envs.sandbox import InProcessExecutor
from tests.fixtures.tau2 import needs_tau2

pytestmark = needs_tau2

BOOK = {"user_id": "sophia_silva_7557", "origin": "ORD", "destination": "PHL", "flight_type": "one_way",
        "cabin": "economy", "flights": [{"flight_number": "HAT271", "date": "2024-05-26"}],
        "passengers": [{"first_name": "Sophia", "last_name": "Silva", "dob": "1957-10-05"},
                       {"first_name": "Kevin", "last_name": "Smith", "dob": "2001-04-12"}],
        "payment_methods": [{"payment_id": "certificate_8045380", "amount": 348}], "total_baggages": 0,
        "nonfree_baggages": 0, "insurance": "no"}
FLIGHTS = {"reservation_id": "XEHM4B", "cabin": "economy", "payment_id": "credit_card_2408938",
           "flights": [{"flight_number": "HAT005", "date": "2024-05-20"},
                       {"flight_number": "HAT178", "date": "2024-05-30"}]}
PASSENGERS = {"reservation_id": "FQ8APE",
              "passengers": [{"first_name": "Omar", "last_name": "Rossi", "dob": "1970-06-06"}]}
BAGS = {"reservation_id": "YAX4DR", "total_baggages": 2, "nonfree_baggages": 0, "payment_id": "credit_card_4938634"}
P = {"first_name": "A", "last_name": "B", "dob": "2000-01-01"}
PENDING, DELIVERED = "#W5918442", "#W4817420"  # items 1725100896, 5312063289 ... / 6777246137 ...
ADDRESS = {"address1": "1 Main St", "address2": "", "city": "X", "state": "CA", "country": "USA", "zip": "12345"}


def _v(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**base, **changes}


AIRLINE: list[tuple[str, dict[str, Any]]] = [
    # a list not all dicts is kept: τ² looks the user / reservation up and counts before it fails on the item
    ("book_reservation", _v(BOOK, user_id="nobody", flights=["x"])),
    ("book_reservation", _v(BOOK, user_id="nobody", passengers=[P, None])),
    ("book_reservation", _v(BOOK, flights=[None])),
    ("book_reservation", _v(BOOK, flights=[BOOK["flights"][0], 1])),
    ("book_reservation", _v(BOOK, passengers=["x"])),
    ("book_reservation", _v(BOOK, passengers=[{"first_name": 1}, True], payment_methods=[[], {"amount": "x"}])),
    ("book_reservation", _v(BOOK, flights=[{"flight_number": "NOPE", "date": "x"}], passengers=[1.5])),
    ("update_reservation_flights", _v(FLIGHTS, flights=[None])),
    ("update_reservation_flights", _v(FLIGHTS, flights=[FLIGHTS["flights"][0], "x"])),
    ("update_reservation_flights", _v(FLIGHTS, reservation_id="NOPE", flights=["x"])),
    ("update_reservation_passengers", _v(PASSENGERS, passengers=["x", "y"])),
    ("update_reservation_passengers", _v(PASSENGERS, passengers=[P, None, 3])),
    ("update_reservation_passengers", _v(PASSENGERS, reservation_id="NOPE", passengers=[None])),
    # all dicts: converted at once, each model's problems together, in pydantic's words
    ("book_reservation", _v(BOOK, user_id="nobody", flights=[{}])),
    ("book_reservation", _v(BOOK, flights=[{"flight_number": None, "date": 3}])),
    ("book_reservation", _v(BOOK, passengers=[{}, {"first_name": "x"}])),
    ("book_reservation", _v(BOOK, payment_methods=[{"payment_id": "certificate_8045380", "amount": 1.5}])),
    ("book_reservation", _v(BOOK, payment_methods=[{"payment_id": "certificate_8045380", "amount": " 3_48.00 "}])),
    ("book_reservation", _v(BOOK, payment_methods=[{"payment_id": "certificate_8045380", "amount": "3e2"}])),
    ("book_reservation", _v(BOOK, payment_methods=[{"payment_id": "c" * 80, "amount": 1e30}])),
    ("book_reservation", _v(BOOK, passengers=[{**P, "dob": ["y" * 10] * 8}])),
    ("book_reservation", _v(BOOK, flights=[{**BOOK["flights"][0], "extra": 1}])),
    ("update_reservation_flights", _v(FLIGHTS, flights=[{"flight_number": "HAT005"}])),
    ("update_reservation_passengers", _v(PASSENGERS, passengers=[{**P, "first_name": {"k": 1}}])),
    # counts, unknown ids and the happy paths
    ("book_reservation", BOOK),
    ("book_reservation", _v(BOOK, passengers=[])),
    ("book_reservation", _v(BOOK, flights=[])),
    ("book_reservation", _v(BOOK, payment_methods=[{"payment_id": "nope", "amount": 348}])),
    ("book_reservation", _v(BOOK, flights=[{"flight_number": "HAT271", "date": "1999-01-01"}])),
    ("update_reservation_flights", FLIGHTS),
    ("update_reservation_flights", _v(FLIGHTS, flights=[])),
    ("update_reservation_flights", _v(FLIGHTS, payment_id="nope")),
    ("update_reservation_passengers", PASSENGERS),
    ("update_reservation_passengers", _v(PASSENGERS, passengers=[])),
    ("update_reservation_baggages", BAGS),
    ("update_reservation_baggages", _v(BAGS, nonfree_baggages=3, payment_id="x")),
    ("update_reservation_baggages", _v(BAGS, reservation_id="NOPE")),
    ("send_certificate", {"user_id": "nobody", "amount": 50}),
    ("send_certificate", {"user_id": "noah_muller_9847", "amount": -5}),
    ("cancel_reservation", {"reservation_id": "NOPE"}),
    ("cancel_reservation", {"reservation_id": "XEHM4B"}),
]
PM, GIFT, SHIRT = "payment_method_id", "gift_card_8168843", "6777246137"
ITEM1, ITEM2 = "1725100896", "5312063289"
EXCHANGE, MODIFY = "exchange_delivered_order_items", "modify_pending_order_items"
RETURN = "return_delivered_order_items"
RETAIL: list[tuple[str, dict[str, Any]]] = [
    ("cancel_pending_order", {"order_id": PENDING, "reason": "x"}),
    ("cancel_pending_order", {"order_id": DELIVERED, "reason": "x"}),
    ("cancel_pending_order", {"order_id": "#nope", "reason": "x"}),
    (EXCHANGE, {"order_id": DELIVERED, "item_ids": [SHIRT], "new_item_ids": [], PM: "x"}),
    (EXCHANGE, {"order_id": DELIVERED, "item_ids": [SHIRT] * 2, "new_item_ids": ["1"], PM: "x"}),
    (EXCHANGE, {"order_id": DELIVERED, "item_ids": [SHIRT], "new_item_ids": ["1"], PM: "x"}),
    (EXCHANGE, {"order_id": DELIVERED, "item_ids": [SHIRT], "new_item_ids": [SHIRT], PM: "x"}),
    (EXCHANGE, {"order_id": PENDING, "item_ids": ["x"], "new_item_ids": [], PM: "x"}),
    (MODIFY, {"order_id": PENDING, "item_ids": [ITEM1], "new_item_ids": [ITEM1], PM: "x"}),
    (MODIFY, {"order_id": PENDING, "item_ids": [ITEM1], "new_item_ids": ["1", "2"], PM: "x"}),
    (MODIFY, {"order_id": PENDING, "item_ids": ["nope"], "new_item_ids": ["1"], PM: "x"}),
    (MODIFY, {"order_id": PENDING, "item_ids": [ITEM1, ITEM2], "new_item_ids": ["1"], PM: "x"}),
    (MODIFY, {"order_id": DELIVERED, "item_ids": [], "new_item_ids": [], PM: "x"}),
    ("modify_pending_order_payment", {"order_id": PENDING, PM: "credit_card_5051208"}),
    ("modify_pending_order_payment", {"order_id": PENDING, PM: "nope"}),
    ("modify_pending_order_address", {"order_id": DELIVERED, **ADDRESS}),
    ("modify_user_address", {"user_id": "nobody", **ADDRESS}),
    (RETURN, {"order_id": DELIVERED, "item_ids": ["nope"], PM: "nope"}),
    (RETURN, {"order_id": DELIVERED, "item_ids": ["nope"], PM: GIFT}),
    (RETURN, {"order_id": PENDING, "item_ids": [], PM: "nope"}),
]


class Both:
    """One domain's environment on each side; every call starts both from the domain's database."""

    def __init__(self, domain: str) -> None:
        self.domain = domain
        self.executor = InProcessExecutor()
        self.ours = self.executor.session(convert(domain, limit=1).spec)
        self.theirs: Any = None

    def call(self, name: str, args: dict[str, Any]) -> tuple[tuple[bool, str], tuple[bool, str]]:
        """``(ok, text)`` of the call in ours and in τ²'s: the error, or the result as τ²'s tool message has it."""
        from tau2.data_model.message import ToolCall

        if self.theirs is None:
            self.theirs = _backend.environment(self.domain)
        before = _backend.db_hash(self.theirs)
        msg = self.theirs.get_response(ToolCall(id="c", name=name, arguments=json.loads(json.dumps(args))))
        if _backend.db_hash(self.theirs) != before:
            self.theirs = None  # written: the next call starts from a fresh copy
        self.ours.open(0)
        r = self.ours.call(name, args)
        ours = (True, r.result if isinstance(r.result, str) else json.dumps(r.result)) if r.ok else (False, r.error)
        return ours, (not msg.error, msg.content.removeprefix("Error: ") if msg.error else msg.content)

    def close(self) -> None:
        self.executor.close()


def _both(domain: str) -> Any:
    both = Both(domain)
    yield both
    both.close()


@pytest.fixture(scope="module")
def airline() -> Any:
    yield from _both("airline")


@pytest.fixture(scope="module")
def retail() -> Any:
    yield from _both("retail")


@pytest.mark.parametrize(("domain", "name", "args"), [("airline", n, a) for n, a in AIRLINE]
                         + [("retail", n, a) for n, a in RETAIL],
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(AIRLINE + RETAIL)])
def test_a_malformed_call_fails_where_taus_tool_fails(domain: str, name: str, args: dict[str, Any],
                                                      request: pytest.FixtureRequest) -> None:
    ours, theirs = request.getfixturevalue(domain).call(name, args)
    assert ours == theirs


JSON = st.recursive(st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=False,
                    allow_infinity=False) | st.text(max_size=60),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=6)
ITEM = JSON | st.fixed_dictionaries({}, optional={"first_name": JSON, "last_name": JSON, "dob": JSON,
                                                  "flight_number": JSON, "date": JSON, "payment_id": JSON,
                                                  "amount": JSON})


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tool=st.sampled_from(["book_reservation", "update_reservation_flights", "update_reservation_passengers"]),
       field=st.sampled_from(["flights", "passengers", "payment_methods"]), items=st.lists(ITEM, max_size=3),
       unknown=st.booleans())
def test_drawn_list_items_fail_where_taus_tool_fails(airline: Both, tool: str, field: str, items: list[Any],
                                                     unknown: bool) -> None:
    base = {"book_reservation": BOOK, "update_reservation_flights": FLIGHTS,
            "update_reservation_passengers": PASSENGERS}[tool]
    if field not in base:
        field = "flights" if tool == "update_reservation_flights" else "passengers"
    key = "user_id" if tool == "book_reservation" else "reservation_id"
    args = _v(base, **{field: items}, **({key: "NOPE"} if unknown else {}))
    if (tool == "update_reservation_passengers" and not unknown and len(items) == len(PASSENGERS["passengers"])
            and not all(isinstance(i, dict) for i in items)):
        return  # τ² stores non-dict passengers as they are (the module docstring)
    ours, theirs = airline.call(tool, args)
    assert ours == theirs, args

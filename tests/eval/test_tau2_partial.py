"""τ²'s tools keep what they changed before they raise; so do the converted specs (``failed_calls: "keep"``), whose
ported code writes each change when τ² makes it. Agreement plays such trajectories through both environments."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from eval.tau2 import _backend
from eval.tau2.agreement import (
    Trajectory,
    agreement_note,
    agreement_report,
    compare,
    partial_write_perturbations,
    reference_trajectory,
)
from eval.tau2.convert import Conversion, convert
from eval.tau2.partial import certificate_twice
from gym_envs.sandbox import InProcessExecutor
from tests.fixtures.tau2 import needs_tau2

FOREIGN = "credit_card_0000000"  #: a payment method no retail user holds


def test_paying_twice_with_one_certificate_splits_its_payment_keeping_the_total() -> None:
    start = {"users": {"u": {"payment_methods": {"certificate_1": {"source": "certificate"},
                                                 "gift_card_2": {"source": "gift_card"}}}}}
    pays = [{"payment_id": "certificate_1", "amount": 301}, {"payment_id": "gift_card_2", "amount": 9}]
    call = _backend.Call("book_reservation", {"user_id": "u", "payment_methods": pays})
    ((_, split),) = certificate_twice(call, start)
    assert split.arguments["payment_methods"] == [{"payment_id": "certificate_1", "amount": 151}, pays[1],
                                                  {"payment_id": "certificate_1", "amount": 150}]
    assert pays[0]["amount"] == 301  # the gold call is left as it was
    assert certificate_twice(_backend.Call("book_reservation", {"user_id": "v", "payment_methods": pays}), start) == []


@pytest.fixture(scope="module")
def airline() -> Iterator[Conversion]:
    yield convert("airline", task_ids=["14"])  # books paying with a certificate, two gift cards and a card


def _play(conv: Conversion, task_id: str, calls: tuple[Any, ...]) -> list[Any]:
    ex = InProcessExecutor()
    try:
        s = ex.session(conv.spec, start=False)
        s.setup = tuple(conv.spec.task(task_id).setup_sql)
        s.open(0)
        return [s.call(c.name, c.arguments) for c in calls]
    finally:
        ex.close()


@needs_tau2
def test_a_booking_that_pays_twice_with_a_certificate_keeps_its_charges_as_in_tau2(airline: Conversion) -> None:
    assert airline.spec.failed_calls == "keep"
    task = next(iter(airline.tasks.values()))
    ref = reference_trajectory(airline, task)
    (partial,) = partial_write_perturbations(airline, task, ref)
    i = next(k for k, c in enumerate(ref.calls) if c.name == "book_reservation")
    made = _play(airline, task.id, partial.calls)[i]
    cert = partial.calls[i].arguments["payment_methods"][0]["payment_id"]
    assert not made.ok and made.error == repr(cert) and made.changes > 0  # it wrote, then raised
    ex = InProcessExecutor()
    try:
        case = compare(airline, task, partial, ex)
        assert case.hash_agrees and case.result_differences == [] and case.identical_results == case.calls
        assert case.tau2_passed is False and case.verdict_agrees
        rollback = Conversion(**{**vars(airline), "spec": airline.spec.model_copy(update={"failed_calls": "rollback"})})
        assert not compare(rollback, task, partial, ex).hash_agrees  # undoing the call is not τ²
    finally:
        ex.close()


@needs_tau2
def test_agreement_counts_the_write_then_raise_trajectories() -> None:
    report = agreement_report(("airline",), task_ids={"airline": ["14"]}, drops=0, argument_changes=0,
                              partial_writes=None)
    d = report["domains"]["airline"]
    assert d["partial_writes"] == 1 and d["disagreements"] == [] and d["hash_agreement_all"] == 1.0
    assert d["verdict_agreement_all"] == 1.0 and "1 of them writing then raising" in agreement_note(d)


def _retail_start() -> dict[str, Any]:
    """A starting state with two pending orders paid with a method their user does not hold: one whose only payment
    is such (its user's gift card holds enough to pay it instead), one paid first with its user's gift card."""
    db = _backend.db_dump(_backend.environment("retail"))
    orders: dict[str, Any] = {}
    users: dict[str, Any] = {}
    for oid, o in db["orders"].items():
        gift = next((m for m in db["users"][o["user_id"]]["payment_methods"].values()
                     if m["source"] == "gift_card"), None)
        if o["status"] != "pending" or len(o["payment_history"]) != 1 or gift is None or o["user_id"] in users:
            continue
        paid = o["payment_history"][0]
        if not orders:  # modify its payment to the gift card: τ² charges the card, then finds no original method
            orders[oid] = {"payment_history": [{**paid, "payment_method_id": FOREIGN}]}
            users[o["user_id"]] = {"payment_methods": {gift["id"]: {"balance": paid["amount"] + 100.0}}}
        else:  # cancel it: τ² refunds the gift card, then finds no method for the second payment
            orders[oid] = {"payment_history": [{**paid, "amount": 12.5, "payment_method_id": gift["id"]},
                                               {**paid, "payment_method_id": FOREIGN}]}
            return {"orders": orders, "users": users}
    raise AssertionError("no two pending orders of users with a gift card")


@pytest.fixture(scope="module")
def retail() -> Iterator[tuple[Conversion, dict[str, Any]]]:
    """The retail conversion of a task made for this test (no τ² task starts from such a state): τ²'s first task with
    :func:`_retail_start` as its ``initial_state``."""
    start = _retail_start()
    real = _backend.tasks
    base = real("retail")[0]
    made = type(base).model_validate({**base.model_dump(), "id": "partial-writes", "initial_state": {
        "initialization_data": {"agent_data": {"orders": start["orders"], "users": start["users"]}}}})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_backend, "tasks", lambda name: [*real(name), made] if name == "retail" else real(name))
        yield convert("retail", task_ids=["partial-writes"]), start


@needs_tau2
def test_retail_refunds_and_charges_made_before_a_missing_method_stay_as_in_tau2(
        retail: tuple[Conversion, dict[str, Any]]) -> None:
    conv, start = retail
    task = next(iter(conv.tasks.values()))
    assert conv.spec.task(task.id).setup_sql  # the made state reaches our episode as setup statements
    modify, cancel = start["orders"]
    gift = next(iter(next(iter(start["users"].values()))["payment_methods"]))
    calls = (_backend.Call("modify_pending_order_payment", {"order_id": modify, "payment_method_id": gift}),
             _backend.Call("cancel_pending_order", {"order_id": cancel, "reason": "no longer needed"}))
    made = _play(conv, task.id, calls)
    assert [(r.ok, r.error, r.changes > 0) for r in made] == [(False, "Payment method not found", True)] * 2
    ex = InProcessExecutor()
    try:
        case = compare(conv, task, Trajectory("partial_write", "paid with a method the user lacks", calls, ""), ex)
        assert case.hash_agrees and case.result_differences == [] and case.verdict_agrees, case
    finally:
        ex.close()

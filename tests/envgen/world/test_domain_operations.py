"""Domain operations built from a transition's guards and effects: a renewal that keeps the state and shifts a
date, a postponement of a datetime, and a refund whose amount is computed from the record (see
``envgen/world/WORLDS.md``, Effects)."""

from __future__ import annotations

import copy
import datetime
from typing import Any

import pytest

from envgen.world.blueprint import WorldBlueprint
from envgen.world.compile import compile_world
from envgen.world.data import TODAY
from envgen.world.normalize import to_world
from envgen.world.sim import Simulator
from gym_envs.spec import EnvSpec

_LOANS: dict[str, Any] = {
    "id": "test_loans", "title": "Town library", "domain": "a public lending library", "persona": "a reader",
    "entities": [
        {"name": "member", "role": "person", "key": {"name": "email", "kind": "email"},
         "fields": [{"name": "full_name", "kind": "person_name"}, {"name": "wallet", "kind": "money"}], "rows": 30},
        {"name": "loan", "role": "main", "key": {"name": "loan_number", "kind": "code"}, "prefix": "LN",
         "refs": [{"name": "member", "entity": "member", "owner": True}],
         "fields": [{"name": "due_date", "kind": "date"}, {"name": "pickup_at", "kind": "datetime"},
                    {"name": "renewals", "kind": "count", "min": 0, "max": 4},
                    {"name": "late_fee", "kind": "money"}],
         "states": ["active", "overdue", "disputed", "returned"], "final": ["returned"], "rows": 120},
    ],
    "operations": [
        {"name": "renew_loan", "kind": "transition", "entity": "loan", "target": "active", "sources": ["active"],
         "conditions": [{"kind": "compare", "field": "renewals", "op": "<", "value": 2,
                         "message": "This loan has been renewed twice already; return the book to borrow it again."}],
         "effects": [{"kind": "shift", "field": "due_date", "value": 14}, {"kind": "add", "field": "renewals",
                                                                          "value": 1}],
         "phrase": "renew {record}", "reasons": ["I have not finished it"]},
        {"name": "postpone_pickup", "kind": "transition", "entity": "loan", "target": "active",
         "sources": ["active"], "effects": [{"kind": "shift", "field": "pickup_at", "value": 7}],
         "phrase": "push the pickup of {record} back a week", "reasons": ["I am away this week"]},
        {"name": "refund_late_fee", "kind": "transition", "entity": "loan", "target": "returned",
         "sources": ["disputed"],
         "effects": [{"kind": "add", "field": "wallet", "ref": "member", "value": 1, "scale": "late_fee"}],
         "phrase": "refund the late fee of {record}", "reasons": ["I returned it on time"]},
        {"name": "mark_returned", "kind": "transition", "entity": "loan", "target": "returned",
         "sources": ["active", "overdue"], "phrase": "check in {record}", "reasons": ["I dropped it off"]},
    ],
    "vocabulary": {"titles": ["Atlas", "Field Guide"]},
}


def _world(**changes: Any) -> WorldBlueprint:
    return WorldBlueprint.model_validate({**copy.deepcopy(_LOANS), **changes})


@pytest.fixture(scope="module")
def compiled() -> Any:
    return compile_world(_world(), env_id="test-loans", seed=0)


def _row(run: Any, table: str, key: str, value: str) -> dict[str, Any]:
    return next(r for r in run.tables()[table] if r[key] == value)


def test_a_renewal_keeps_the_state_shifts_the_due_date_and_counts_until_its_guard_refuses(compiled: Any) -> None:
    sim = Simulator(compiled.spec)
    run = sim.run()
    try:
        loan = next(r for r in run.tables()["loans"] if r["state"] == "active" and r["renewals"] == 0
                    and r["due_date"])
        key = loan["loan_number"]
        due = datetime.date.fromisoformat(loan["due_date"])
        for n in (1, 2):
            done = run.call("renew_loan", {"loan_number": key})
            assert done.ok, done.error
            assert done.result["state"] == "active" and done.result["renewals"] == n
            assert done.result["due_date"] == (due + datetime.timedelta(days=14 * n)).isoformat()
        refused = run.call("renew_loan", {"loan_number": key})
        assert not refused.ok
        assert refused.error == "This loan has been renewed twice already; return the book to borrow it again."
        after = _row(run, "loans", "loan_number", key)
        assert after["renewals"] == 2 and after["due_date"] == (due + datetime.timedelta(days=28)).isoformat()
    finally:
        run.close()
        sim.close()


def test_a_state_keeping_operation_refuses_other_states_naming_itself(compiled: Any) -> None:
    sim = Simulator(compiled.spec)
    run = sim.run()
    try:
        loan = next(r for r in run.tables()["loans"] if r["state"] == "overdue" and r["renewals"] < 2)
        refused = run.call("renew_loan", {"loan_number": loan["loan_number"]})
        assert not refused.ok
        assert refused.error == (f"The loan {loan['loan_number']} is overdue; renew loan applies only to "
                                 "active loans.")
        assert _row(run, "loans", "loan_number", loan["loan_number"]) == loan
    finally:
        run.close()
        sim.close()


def test_a_datetime_shifts_by_days_and_keeps_its_time_and_a_missing_date_shifts_from_today(compiled: Any) -> None:
    sim = Simulator(compiled.spec)
    run = sim.run()
    try:
        loans = [r for r in run.tables()["loans"] if r["state"] == "active"]
        timed = next(r for r in loans if r["pickup_at"])
        done = run.call("postpone_pickup", {"loan_number": timed["loan_number"]})
        assert done.ok, done.error
        start = datetime.datetime.fromisoformat(timed["pickup_at"])
        assert done.result["pickup_at"] == (start + datetime.timedelta(days=7)).isoformat(timespec="minutes")
        run.call("mark_returned", {"loan_number": timed["loan_number"]})  # no longer active: refused
        assert not run.call("postpone_pickup", {"loan_number": timed["loan_number"]}).ok
        undated = next((r for r in loans if r["due_date"] is None), None)
        if undated is not None:
            renewed = run.call("renew_loan", {"loan_number": undated["loan_number"]})
            assert renewed.ok and renewed.result["due_date"] == (TODAY + datetime.timedelta(days=14)).isoformat()
    finally:
        run.close()
        sim.close()


def test_a_refund_credits_the_amount_the_record_holds_to_its_owner(compiled: Any) -> None:
    sim = Simulator(compiled.spec)
    run = sim.run()
    try:
        tables = run.tables()
        loan = next(r for r in tables["loans"] if r["state"] == "disputed" and r["late_fee"])
        member = next(m for m in tables["members"] if m["id"] == loan["member_id"])
        done = run.call("refund_late_fee", {"loan_number": loan["loan_number"]})
        assert done.ok and done.result["state"] == "returned"
        assert _row(run, "members", "email", member["email"])["wallet"] == member["wallet"] + loan["late_fee"]
        again = run.call("refund_late_fee", {"loan_number": loan["loan_number"]})  # refunded once only
        assert not again.ok and "returned" in again.error
        assert _row(run, "members", "email", member["email"])["wallet"] == member["wallet"] + loan["late_fee"]
    finally:
        run.close()
        sim.close()


def test_tasks_use_the_domain_operations_and_check_their_effects() -> None:
    called: set[str] = set()
    for seed in range(4):
        spec = EnvSpec.model_validate(compile_world(_world(), env_id="test-loans", seed=seed).spec.model_dump())
        for task in spec.tasks:
            for turn in task.turns:
                called |= {c.name for c in turn.calls()}
    assert {"renew_loan", "postpone_pickup", "refund_late_fee"} <= called


@pytest.mark.parametrize(("effect", "problem"), [
    ({"kind": "shift", "field": "renewals", "value": 14}, "a date or datetime field"),
    ({"kind": "shift", "field": "due_date"}, "a nonzero whole number of days"),
    ({"kind": "shift", "field": "due_date", "value": 0}, "a nonzero whole number of days"),
])
def test_a_shift_of_no_date_or_no_days_is_dropped_with_the_reason(effect: dict[str, Any], problem: str) -> None:
    bad = copy.deepcopy(_LOANS["operations"][0])
    bad.update(name="renew_badly", effects=[effect])
    repairs: list[str] = []
    world = to_world(_world(operations=[*_LOANS["operations"], bad]), repairs)
    assert "renew_badly" not in {o.name for o in world.ops}
    assert any("renew_badly" in r and problem in r for r in repairs), repairs


def test_a_record_in_the_wrong_state_is_refused_for_its_state_before_any_guard(compiled: Any) -> None:
    sim = Simulator(compiled.spec)
    run = sim.run()
    try:
        # overdue and renewed twice: both the source state and the renewal guard refuse; the state is said
        loan = next(r for r in run.tables()["loans"] if r["state"] == "overdue" and r["renewals"] >= 2)
        refused = run.call("renew_loan", {"loan_number": loan["loan_number"]})
        assert not refused.ok
        assert refused.error == (f"The loan {loan['loan_number']} is overdue; renew loan applies only to "
                                 "active loans.")
    finally:
        run.close()
        sim.close()

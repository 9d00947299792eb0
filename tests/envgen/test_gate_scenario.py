"""The gate on scenario tasks: references with say items replayed with the scripted user, and the adequacy rule
reading each check kind's hints (call patterns catch argument mutants, confirmed catches a dropped confirmation,
judged catches nothing)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from envgen.gate import validate_spec
from gym_envs.examples import example_path


def _shop() -> dict[str, Any]:
    return json.loads(example_path("shop-support").read_text())


def _mutation(verdict: Any, text: str) -> dict[str, Any]:
    return next(m for m in verdict.mutations if text in m["mutation"])


def test_the_gate_accepts_the_scenario_example_replaying_its_says_with_the_scripted_user() -> None:
    verdict = validate_spec(_shop(), executor="inprocess")
    assert verdict.accepted, verdict.reasons
    confirm = _mutation(verdict, "without the message 'Order A-1042")
    assert confirm["outcome"] == "killed" and "(confirmed) failed" in confirm["detail"]
    question = _mutation(verdict, "without the message 'Thanks, Ana.")  # the same state and answer: no wrong one
    assert question["outcome"] == "tolerated"


def test_without_a_confirmed_check_dropping_the_confirmation_changes_nothing_the_gate_sees() -> None:
    spec = _shop()
    checks = spec["tasks"][0]["turns"][0]["checks"]
    spec["tasks"][0]["turns"][0]["checks"] = [c for c in checks if c["kind"] != "confirmed"]
    verdict = validate_spec(spec, executor="inprocess")
    assert verdict.accepted, verdict.reasons
    assert _mutation(verdict, "without the message 'Order A-1042")["outcome"] == "tolerated"


def test_a_say_the_scripted_user_does_not_answer_fails_the_reference() -> None:
    spec = _shop()
    spec["tasks"][0]["turns"][0]["reference"][0] = {"say": "Let me look into that for you."}
    verdict = validate_spec(spec, executor="inprocess")
    assert not verdict.accepted
    reason = next(r for r in verdict.reasons if r.code == "reference_unanswered")
    assert reason.rule == 3 and "Let me look into that" in reason.message


def test_an_oracle_reply_the_user_answers_fails_the_reference() -> None:
    spec = _shop()
    status = spec["tasks"][1]
    status["turns"].insert(0, {"instruction": "Hi there.",
                               "checks": [{"kind": "reply_contains", "any_of": ["anything else?"]}],
                               "reference": []})
    verdict = validate_spec(spec, executor="inprocess")
    reason = next(r for r in verdict.reasons if r.code == "reference_unanswered")
    assert "answers the oracle's reply" in reason.message


def _status_with(calls_check: dict[str, Any]) -> dict[str, Any]:
    """The status task with an answer no call returns (so argument mutants answer alike) and ``calls_check``."""
    spec = _shop()
    turn = spec["tasks"][1]["turns"][0]
    turn["checks"] = [{"kind": "reply_contains", "any_of": ["warehouse"]}, {"kind": "unchanged", "tables": []},
                      calls_check]
    spec["tasks"] = [spec["tasks"][1]]
    return spec


def test_a_calls_check_catches_argument_mutants_only_where_its_pattern_pins_the_argument() -> None:
    pinned = validate_spec(_status_with({"kind": "calls", "require": [
        {"name": "get_order", "arguments": {"code": "C-3001"}}]}), executor="inprocess")
    assert pinned.accepted, pinned.reasons
    other = _mutation(pinned, "get_order with code=")
    assert other["outcome"] == "killed" and "(calls) failed" in other["detail"]
    named = validate_spec(_status_with({"kind": "calls", "require": ["get_order"]}), executor="inprocess")
    assert named.accepted, named.reasons
    assert _mutation(named, "get_order with code=")["outcome"] == "tolerated"


def test_a_judged_check_never_catches_a_wrong_trajectory() -> None:
    spec = _shop()
    turn = spec["tasks"][0]["turns"][0]
    turn["checks"] = [{"kind": "calls_per_message", "max": 1},
                      {"kind": "judged", "assertion": "The agent cancelled order A-1042."}]
    verdict = validate_spec(spec, executor="inprocess")
    noop = next(r for r in verdict.reasons if r.code == "noop_passes")
    assert noop.rule == 4 and "cancel-with-confirmation" in noop.message
    assert not any("judged" in m["detail"] for m in verdict.mutations if m["outcome"] == "killed")


def _paced(spec: dict[str, Any], pace: int) -> dict[str, Any]:
    """The cancellation turn with its two lookups made back to back (one run of three calls) at ``pace`` calls an
    action."""
    turn = spec["tasks"][0]["turns"][0]
    ref = turn["reference"]
    turn["reference"] = [ref[0], ref[1], ref[3], {"name": "find_customer", "arguments": {"email": "ana@example.com"}},
                         ref[4], ref[5]]
    turn["checks"] = [c for c in turn["checks"] if c["kind"] != "calls_per_message"] + \
        [{"kind": "calls_per_message", "max": pace}]
    return spec


@pytest.mark.parametrize("pace", [None, 1, 2])
def test_wrong_trajectories_started_after_the_references_first_items_are_judged_as_replayed(
        pace: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wrong trajectory that begins with the reference's calls and say items starts from a checkpoint after them,
    the action of the last call continued (at the turn's pace): every verdict and wrong trajectory, in order and
    with its detail, is the one playing each from its turn's start gives."""
    import envgen.gate.adequacy as adequacy
    import envgen.gate.extras as extras

    spec = _shop() if pace is None else _paced(_shop(), pace)
    assert adequacy.stateless(spec["code"])
    fast = validate_spec(spec, executor="inprocess", seed=3)
    for module in (adequacy, extras):  # every wrong trajectory played from its turn's start
        monkeypatch.setattr(module, "shared_items", lambda *a, **k: 0)
    slow = validate_spec(spec, executor="inprocess", seed=3)
    assert [str(r) for r in fast.reasons] == [str(r) for r in slow.reasons]
    assert fast.mutations == slow.mutations and len(fast.mutations) > 10
    assert fast.calls < slow.calls

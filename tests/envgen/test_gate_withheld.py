"""The gate on tasks that withhold a tool until a later turn (spec_version 2 ``withheld_tools``).

References respect availability (the spec refuses a reference that calls a tool before its reveal), and the
adequacy rule plays the write the agent would make with the withheld tool before its reveal, as if the tool
were offered: the turns before the reveal must catch it with their own checks.
"""

from __future__ import annotations

from typing import Any

from envgen.gate import validate_spec
from envgen.gate.mutants import RefTurn, early_mutants
from envgen.gate.values import Snapshot
from gym_envs.spec import parse_spec
from tests.fixtures.withheld import withheld_spec

TASK = "renew-later"


def _task(d: dict[str, Any]) -> dict[str, Any]:
    return next(t for t in d["tasks"] if t["id"] == TASK)


def test_the_early_mutant_is_the_reveal_turns_call_of_each_withheld_tool() -> None:
    task = parse_spec(withheld_spec()).task(TASK)
    first = early_mutants(RefTurn(task, 0, Snapshot({})))
    assert [(m.kind, m.rule, [c.name for c in m.calls]) for m in first] == [("early", 7, ["renew_loan"])]
    assert first[0].calls[0].arguments == {"loan_id": 15} and "before turn 2 reveals renew_loan" in first[0].label
    assert early_mutants(RefTurn(task, 1, Snapshot({}))) == []  # revealed: nothing is early any more


def test_a_pre_reveal_turn_that_catches_the_write_is_accepted_and_the_mutant_killed() -> None:
    verdict = validate_spec(withheld_spec(), executor="inprocess", seed=1)
    assert verdict.accepted, verdict.reasons
    early = [m for m in verdict.mutations if m["task"] == TASK and "reveals renew_loan" in m["mutation"]]
    assert [(m["turn"], m["outcome"]) for m in early] == [(1, "killed")]
    assert "unchanged" in early[0]["detail"]


def test_a_pre_reveal_turn_whose_checks_miss_the_withheld_write_is_rejected() -> None:
    d = withheld_spec()
    # these checks catch every write an offered tool makes (a loan or a return), not a renewal
    _task(d)["turns"][0]["checks"] = [{"kind": "unchanged", "tables": ["books", "members"]},
                                      {"kind": "sql", "query": "SELECT count(*), count(returned_on) FROM loans",
                                       "expect": [[22, 6]]}]
    verdict = validate_spec(d, executor="inprocess", seed=1)
    assert not verdict.accepted
    assert [r.code for r in verdict.reasons] == ["mutant_survives"]
    reason = verdict.reasons[0]
    assert reason.rule == 7 and f"task '{TASK}' turn 1" in reason.message
    assert 'renew_loan({"loan_id": 15}) after the reference calls, before turn 2 reveals renew_loan' in reason.message


def test_a_reference_that_calls_a_withheld_tool_early_is_a_parse_failure_of_rule_1() -> None:
    d = withheld_spec()
    _task(d)["turns"][0]["reference"] = [{"name": "renew_loan", "arguments": {"loan_id": 15}}]
    verdict = validate_spec(d, executor="inprocess", seed=1)
    assert not verdict.accepted and verdict.reasons[0].rule == 1
    assert "withheld until tasks[7].turns[1]" in verdict.reasons[0].message

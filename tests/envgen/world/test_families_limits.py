"""A request over a limit asks for a plausible amount: a count just over it, a sum a few times over it."""

from __future__ import annotations

import re

from envgen.world.compile import compile_world
from tests.envgen.world.operator_world import operator_world


def _limit_requests(**changes: object) -> list[str]:
    bp = operator_world(**changes)
    return [task.turns[0].instruction for seed in range(6)
            for task in compile_world(bp, env_id="test-print-room", seed=seed, n_tasks=10).spec.tasks
            if "policy_limit" in task.id]  # (a session may go on after the request: its first turn is it)


def test_a_count_over_its_limit_is_asked_for_just_over_the_limit() -> None:
    world = operator_world().model_dump()
    for op in world["operations"]:
        if op["name"] == "discount_job":
            op.update(name="add_copies", fields=["copies"], phrase="add {value} copies to {record}")
    world["policy"][1] = {"kind": "limit", "op": "add_copies", "field": "copies_over_limit", "value": 3,
                          "text": "Add at most 3 copies to a job in one request."}
    asked = [int(m.group(1)) for s in _limit_requests(operations=world["operations"], policy=world["policy"])
             if (m := re.search(r"add (\d+) copies", s))]
    assert asked and all(3 < n <= 6 for n in asked), asked


def test_money_over_its_limit_is_asked_for_a_few_times_over() -> None:
    asked = [float(m.group(1)) for s in _limit_requests() if (m := re.search(r"\$(\d+)\.00", s))]
    assert asked and all(10 < a <= 80 for a in asked), asked

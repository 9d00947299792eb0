"""Withheld tools in evaluation: a generated task's turn tags and episode, and BFCL's ``miss_func``, shown alike."""

from __future__ import annotations

import json

import pytest

from eval.suites import SpecSuite, eval_record, make_suite, turn_tags
from gym_envs.availability import REVEALED_HEADER
from gym_envs.spec import parse_spec
from tests.fixtures.withheld import withheld_spec


def test_a_generated_task_that_withholds_a_tool_is_tagged_as_bfcl_miss_func_is() -> None:
    spec = parse_spec(withheld_spec())
    tags = turn_tags(spec, spec.task("renew-later"))
    assert tags[0] == {"role": "decline", "write_tools": ["renew_loan"], "withheld": ["renew_loan"]}
    assert tags[1] == {} and tags[2] == {}
    suite = SpecSuite("t", [spec], executor="inprocess")
    try:
        task = next(t for t in suite.tasks() if t.task_id == "renew-later")
        ep = suite.episode(task, trial=0, seed=0)
        ep.reset()
        assert "renew_loan" not in [t["function"]["name"] for t in ep.tools]
        ep.step({"content": "", "tool_calls": [{"name": "renew_loan", "arguments": {"loan_id": 15}}]})
        out = ep.step("I can't renew loans right now.")
        assert out is not None and REVEALED_HEADER in out.instruction
        assert "renew_loan" in [t["function"]["name"] for t in ep.tools]
        ep.settle()
        rec = eval_record(ep)
        assert rec["turns"][0]["tags"] == tags[0] and rec["turns"][0]["passed"]
    finally:
        suite.close()


def test_bfcl_reveals_withheld_functions_in_the_form_tool_env_uses() -> None:
    pytest.importorskip("bfcl_eval")
    suite = make_suite("bfcl:miss_func", limit=1)
    task = suite.tasks()[0]
    entry = suite.entries[task.task_id]
    reveal = min(entry.missed_function)
    ep = suite.episode(task, trial=0, seed=0)
    ep.reset()
    for _ in range(reveal):
        out = ep.step("I cannot do that with these tools.")
    assert out is not None and out.turn_ended
    text = out.instruction
    assert f"\n\n{REVEALED_HEADER}\n" in text
    shown = [json.loads(line)["name"] for line in text.split(f"{REVEALED_HEADER}\n")[1].splitlines()]
    assert shown == entry.missed_function[reveal]
    assert set(shown) <= {t["function"]["name"] for t in ep.tools}
    ep.settle()

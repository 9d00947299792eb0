"""Tools a task withholds until a later turn (spec_version 2 ``withheld_tools`` / ``reveal_tools``).

The spec refuses inconsistent availability saying what to fix; ``ToolEnv`` and the episode engine offer only
the tools available at each turn (system prompt, ``info["tools"]``, the engine's tool list), show revealed
tools with the turn that reveals them, and answer a call of a withheld tool exactly as a call of a name no
tool has; ``reset_to_turn`` and a restored checkpoint offer what the turns before revealed.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from gym_envs.availability import REVEALED_HEADER
from gym_envs.engine import play
from gym_envs.env import ToolEnv, step_many
from gym_envs.episode import Episode, TaskRef
from gym_envs.episode_env import ToolEnvAdapter
from gym_envs.examples import example_path
from gym_envs.parsing import format_tool_call
from gym_envs.spec import SpecError, parse_spec
from tests.fixtures.withheld import withheld_spec

TASK = "renew-later"
RENEW = {"name": "renew_loan", "arguments": {"loan_id": 15}}


def _task(d: dict[str, Any]) -> dict[str, Any]:
    return next(t for t in d["tasks"] if t["id"] == TASK)


def _refused(d: dict[str, Any], match: str) -> None:
    with pytest.raises(SpecError, match=match):
        parse_spec(d)


def _env(**kw: Any) -> ToolEnv:
    return ToolEnv(parse_spec(withheld_spec()), TASK, executor="inprocess", **kw)


def _call(env: ToolEnv, name: str, arguments: Any) -> str:
    obs, *_ = env.step({"content": "", "tool_calls": [{"name": name, "arguments": arguments}]})
    return obs


# -- the spec -----------------------------------------------------------------------------------------
def test_a_task_withholds_a_tool_until_the_turn_that_reveals_it() -> None:
    task = parse_spec(withheld_spec()).task(TASK)
    assert task.withheld_at(0) == {"renew_loan"} and task.withheld_at(1) == task.withheld_at(2) == frozenset()
    assert parse_spec(withheld_spec()).task("borrow-dune").withheld_at(0) == frozenset()


def test_spec_version_1_has_no_withheld_tools() -> None:
    d = withheld_spec()
    d["spec_version"] = 1
    _refused(d, "spec_version 1 has no 'withheld_tools' and 'reveal_tools': set spec_version to 2")


def test_the_json_schema_has_the_fields_in_version_2_only() -> None:
    from gym_envs.spec_schema import json_schema

    for version, present in ((None, True), (1, False)):
        defs = json_schema(version)["$defs"]
        assert ("withheld_tools" in defs["Task"]["properties"]) is present
        assert ("reveal_tools" in defs["Turn"]["properties"]) is present


def test_an_unknown_tool_is_refused_with_the_closest_names() -> None:
    d = withheld_spec()
    _task(d)["withheld_tools"] = ["renew_loan", "renew_lone"]
    _refused(d, r"tasks\[7\].withheld_tools: unknown tool 'renew_lone'; did you mean 'renew_loan'\?")
    d = withheld_spec()
    _task(d)["turns"][1]["reveal_tools"] = ["renw_loan"]
    _refused(d, r"tasks\[7\].turns\[1\].reveal_tools: unknown tool 'renw_loan'; did you mean 'renew_loan'")


def test_a_tool_revealed_but_never_withheld_is_refused() -> None:
    d = withheld_spec()
    _task(d)["turns"][1]["reveal_tools"] = ["renew_loan", "return_book"]
    _refused(d, r"turns\[1\].reveal_tools: 'return_book' is revealed but never withheld: add it to "
                r"tasks\[7\].withheld_tools")


def test_a_tool_withheld_but_never_revealed_is_refused() -> None:
    d = withheld_spec()
    _task(d)["withheld_tools"] = ["renew_loan", "borrow_book"]
    _refused(d, r"tasks\[7\].withheld_tools: 'borrow_book' is withheld but never revealed: name it in the "
                r"reveal_tools of the turn that offers it")


def test_a_tool_revealed_by_the_first_turn_or_twice_is_refused() -> None:
    d = withheld_spec()
    _task(d)["turns"][0]["reveal_tools"] = ["renew_loan"]
    _task(d)["turns"][1]["reveal_tools"] = []
    _refused(d, r"turns\[0\].reveal_tools: the first turn cannot reveal 'renew_loan'")
    d = withheld_spec()
    _task(d)["turns"][2]["reveal_tools"] = ["renew_loan"]
    _refused(d, r"turns\[2\].reveal_tools: 'renew_loan' is revealed again \(tasks\[7\].turns\[1\] revealed it")


def test_a_reference_or_required_call_of_a_tool_before_its_reveal_is_refused() -> None:
    d = withheld_spec()
    _task(d)["turns"][0]["reference"] = [RENEW]
    _refused(d, r"tasks\[7\].turns\[0\].reference\[0\]: calls 'renew_loan', which is withheld until "
                r"tasks\[7\].turns\[1\] \(its reveal_tools\): move the call")
    d = withheld_spec()
    _task(d)["turns"][0]["checks"].append({"kind": "calls", "require": ["renew_loan"]})
    _refused(d, r"tasks\[7\].turns\[0\].checks\[1\]: requires \['renew_loan'\], withheld at this turn")
    d = withheld_spec()
    _task(d)["turns"][0]["checks"].append({"kind": "calls", "forbid": ["renew_loan"]})
    parse_spec(d)  # forbidding it is fine


# -- the runtime ----------------------------------------------------------------------------------------
def test_the_opening_offers_only_the_tools_available_at_the_first_turn() -> None:
    env = _env()
    obs, info = env.reset(seed=0)
    assert [t["name"] for t in info["tools"]] == ["search_books", "member_loans", "borrow_book", "return_book"]
    assert "renew_loan" not in info["system_prompt"] and "return_book" in info["system_prompt"]
    assert REVEALED_HEADER not in obs
    opening = ToolEnvAdapter(env, TASK).reset(0)
    assert [t["function"]["name"] for t in opening.tools] == [t["name"] for t in info["tools"]]
    env.reset(seed=0, options={"task": "borrow-dune"})  # another task of the same env offers every tool
    assert "renew_loan" in env.system_prompt and len(env._tool_dicts) == 5
    env.close()


def test_a_withheld_tool_is_answered_exactly_as_a_tool_that_does_not_exist() -> None:
    env = _env()
    env.reset(seed=0)
    withheld = _call(env, "renew_loan", {"loan_id": 15})
    unknown = _call(env, "xenew_loan", {"loan_id": 15})  # same length: the error texts differ in the name only
    assert withheld == unknown.replace("xenew_loan", "renew_loan")
    assert json.loads(withheld) == {"error": "no tool named 'renew_loan'; available tools: ['borrow_book', "
                                             "'member_loans', 'return_book', 'search_books']", "type": "UnknownTool"}
    a, b = env.turns[-1].calls[-2:]
    assert (a.ok, a.error_type, a.changes, a.arguments) == (b.ok, b.error_type, b.changes, b.arguments)
    assert _call(env, "renew_loan", [1]) == _call(env, "xenew_loan", [1]).replace("xenew_loan", "renew_loan")
    _, _, _, _, info = env.step("I can't renew loans at the moment.")
    assert info["turn_passed"]  # nothing was renewed
    env.close()


def test_the_turn_that_reveals_a_tool_shows_it_and_offers_it_from_then_on() -> None:
    env = _env()
    env.reset(seed=0)
    obs, _, _, _, info = env.step("Sorry, I can't renew loans.")
    assert obs.startswith("Good news") and f"\n\n{REVEALED_HEADER}\n" in obs
    assert json.loads(obs.split(f"{REVEALED_HEADER}\n")[1])["name"] == "renew_loan"
    assert [t["name"] for t in info["tools"]][-1] == "renew_loan" and len(info["tools"]) == 5
    assert json.loads(_call(env, **RENEW))["renewals"] == 1
    _, _, _, _, info = env.step("Renewed.")
    assert info["turn_passed"] and "tools" not in info  # no tool revealed at turn 3: no new tool list
    env.close()


def test_step_many_refuses_a_withheld_tool_as_step_does() -> None:
    envs = [_env(), _env()]
    for e in envs:
        e.reset(seed=0)
    action = {"content": "", "tool_calls": [RENEW, {"name": "member_loans", "arguments": {"member_id": 11}}]}
    batched = step_many(envs[:1], [action])[0]
    alone = envs[1].step(action)
    assert batched[0] == alone[0] and json.loads(batched[0])[0]["type"] == "UnknownTool"
    assert [r["ok"] for r in batched[4]["tool_results"]] == [False, True]
    for e in envs:
        e.close()


def test_reset_to_turn_offers_what_the_earlier_turns_revealed() -> None:
    env = _env()
    obs, info = env.reset_to_turn(1, [])
    assert REVEALED_HEADER in obs and "renew_loan" in [t["name"] for t in info["tools"]]
    assert "renew_loan" not in info["system_prompt"]  # the system prompt is the task's opening one
    assert json.loads(_call(env, **RENEW))["renewals"] == 1
    obs, info = env.reset_to_turn(2, [RENEW])  # turn 2's reference, made as turn 2 offers it
    assert info["prior_results"][0]["ok"] and REVEALED_HEADER not in obs
    assert "renew_loan" in [t["name"] for t in info["tools"]]
    _, info = env.reset_to_turn(1, [RENEW])  # a call of turn 0 cannot use what turn 1 reveals
    assert info["prior_results"][0]["error_type"] == "UnknownTool"
    env.close()


def test_a_restored_checkpoint_offers_what_its_turn_offers() -> None:
    d = json.loads(Path(example_path("bank-ledger")).read_text(encoding="utf-8"))  # code with no state of its own
    rent = next(t for t in d["tasks"] if t["id"] == "pay-rent")
    rent["withheld_tools"] = ["transfer"]
    rent["turns"][0]["reveal_tools"] = ["transfer"]
    rent["turns"].insert(0, {"instruction": "Pay Maria Lopez's rent, please.",
                             "checks": [{"kind": "unchanged", "tables": []}]})
    env = ToolEnv(parse_spec(d), "pay-rent", executor="inprocess")
    env.reset(seed=0)
    cp = env.checkpoint()
    assert cp is not None
    env.step("Sorry, I can't.")
    assert "transfer" in env._offered
    assert env.restore(cp)
    args = rent["turns"][1]["reference"][0]["arguments"]
    assert json.loads(_call(env, "transfer", args))["type"] == "UnknownTool"
    env.close()


class _Plan:
    def __init__(self, plan: Sequence[Any]):
        self.plan = list(plan)

    def act_batch(self, episodes: Sequence[Episode]) -> list[Any]:
        return [self.plan[len(ep.steps)] for ep in episodes]


def test_the_engine_offers_the_tools_of_each_turn() -> None:
    spec = parse_spec(withheld_spec())
    seen: list[list[str]] = []

    class Watch(_Plan):
        def act_batch(self, episodes: Sequence[Episode]) -> list[Any]:
            seen.append([t["function"]["name"] for t in episodes[0].tools])
            return super().act_batch(episodes)

    plan = [format_tool_call("renew_loan", {"loan_id": 15}), "I can't renew loans.",
            format_tool_call("renew_loan", {"loan_id": 15}), "Renewed.",
            format_tool_call("member_loans", {"member_id": 11}), "It has been renewed 1 time."]
    ep = Episode(TaskRef(spec, TASK), lambda: ToolEnvAdapter(ToolEnv(spec, TASK, executor="inprocess"), TASK))
    play([ep], Watch(plan))
    assert ep.passed, ep.turns
    assert "renew_loan" not in seen[0] and "renew_loan" not in seen[1] and "renew_loan" in seen[2]
    assert "renew_loan" not in ep.messages[0]["content"]  # the system prompt
    assert json.loads(ep.messages[3]["content"])["type"] == "UnknownTool"  # the early call's tool message
    revealed = [m for m in ep.messages if m["role"] == "user" and REVEALED_HEADER in m["content"]]
    assert len(revealed) == 1 and revealed[0] is ep.messages[5]


def test_a_spec_without_withheld_tools_is_unchanged_and_unknown_names_keep_their_answer() -> None:
    spec = parse_spec(copy.deepcopy(withheld_spec()))
    env = ToolEnv(spec, "borrow-dune", executor="inprocess")
    env.reset(seed=0)
    out = json.loads(_call(env, "no_such_tool", {}))
    assert out["type"] == "UnknownTool" and "renew_loan" in out["error"]  # every tool is offered
    env.close()

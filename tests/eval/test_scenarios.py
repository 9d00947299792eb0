"""Evaluation of scenario tasks: the reference plays say items to the scripted user, a model-backed user answers in
batches, a judge decides judged checks apart from the score, and the eval command takes both."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from envgen.cli import cli
from envgen.library import Library
from envgen.users import make_user
from eval.policies import ScriptedPolicy, reference_actions
from eval.runner import EvalConfig, play_suite, run_episodes, run_eval
from eval.suites import SpecSuite
from gym_envs.examples import load_example
from gym_envs.users import STOP


@pytest.fixture
def shop() -> Iterator[SpecSuite]:
    suite = SpecSuite("shop", [load_example("shop-support")], executor="inprocess")
    yield suite
    suite.close()


def test_the_reference_plays_its_say_items_to_the_scripted_user_and_passes(shop: SpecSuite) -> None:
    jobs = [(t, 0) for t in shop.tasks()]
    records = run_episodes(shop, jobs, ScriptedPolicy("reference"))
    assert all(r["passed"] for r in records), [r["turns"] for r in records]
    cancel = next(r for r in records if r["task_id"] == "cancel-with-confirmation")
    assert [s["confirmed"] for s in cancel["turns"][0]["said"]] == [False, False, True]
    roles = [m["role"] for m in cancel["transcript"]]
    assert roles[:4] == ["system", "user", "assistant", "user"]  # the say, then the user's answer
    # one call per action: the turn's calls_per_message check paces the reference
    assert all(len(m.get("tool_calls") or []) <= 1 for m in cancel["transcript"] if m["role"] == "assistant")
    empty = run_episodes(shop, jobs, ScriptedPolicy("empty"))
    assert not any(r["passed"] for r in empty)


def test_reference_actions_group_calls_by_action_and_pace_them() -> None:
    items = [{"say": "Which order?"}, {"name": "a", "arguments": {}, "action": 1},
             {"name": "b", "arguments": {}, "action": 1}, {"name": "c", "arguments": {}, "action": 2}]
    actions = reference_actions(items)
    assert [len(a["tool_calls"]) for a in actions] == [0, 2, 1] and actions[0]["content"] == "Which order?"
    assert [len(a["tool_calls"]) for a in reference_actions(items, per=1)] == [0, 1, 1, 1]
    plain = [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]  # BFCL's: no action numbers
    assert [len(a["tool_calls"]) for a in reference_actions(plain)] == [2]


def _user_model(prompt: Any) -> str:
    """A stand-in user model: answers from the last message it was asked about."""
    last = prompt[-1]["content"].lower()
    if "email" in last:
        return "It's ana@example.com."
    if "order number" in last or "order code" in last:
        return "A-1042, I think. Or C-3001 if that is the other one."
    if "go ahead" in last or "shall i" in last:
        return "Yes please, go ahead."
    return STOP


def test_a_model_backed_user_answers_every_episode_of_a_round_in_one_batch(shop: SpecSuite) -> None:
    user = make_user("scripted", backend_options={"completions": _user_model})
    jobs = [(t, trial) for t in shop.tasks() if t.task_id == "cancel-with-confirmation" for trial in range(3)]
    episodes = play_suite(shop, jobs, ScriptedPolicy("reference"), mode="lockstep", user=user)
    assert all(ep.passed for ep in episodes), [ep.turns for ep in episodes]
    said = episodes[0].turns[0]["said"]
    assert [s["reply"] for s in said] == ["It's ana@example.com.",
                                          "A-1042, I think. Or C-3001 if that is the other one.",
                                          "Yes please, go ahead."]
    assert said[-1]["confirmed"] and not said[0]["confirmed"]
    backend = user.generate.backend  # type: ignore[attr-defined]
    assert len(backend.prompts) == 3 * 4  # 3 says and the final reply, per episode
    assert user.generate.requests == 12 and user.generate.failures == 0  # type: ignore[attr-defined]


def test_a_user_model_that_fails_fails_its_episodes_not_the_run(shop: SpecSuite) -> None:
    def down(prompt: Any) -> str:
        raise ConnectionError("user server down")

    user = make_user("scripted", backend_options={"completions": down})
    jobs = [(t, 0) for t in shop.tasks()]
    episodes = play_suite(shop, jobs, ScriptedPolicy("reference"), mode="lockstep", user=user)
    assert all(ep.status == "env_error" and "the simulated user failed" in (ep.error or "") for ep in episodes)


def _judge(prompt: Any) -> str:
    return "YES: the agent said so." if "37.50" in prompt[-1]["content"] else "NO"


def test_a_judge_decides_judged_checks_apart_from_the_score(tmp_path: Path) -> None:
    lib = Library(tmp_path / "lib")
    lib.add(load_example("shop-support"))
    config = EvalConfig(policy="scripted", model="reference", suites=[f"library:{tmp_path / 'lib'}"],
                        executor="inprocess", progress=False, n_boot=50, write_back=False,
                        judge_backend="scripted", judge_opts={"backend_options": {"completions": _judge}})
    run = run_eval(config)
    judged = [j for r in run.records for t in r["turns"] for j in t.get("judged") or []]
    assert len(judged) == 1 and judged[0]["passed"] is True and judged[0]["judge"] == "scripted:scripted"
    block = run.summary["judged"]["suites"][run.records[0]["suite"]]
    assert block == {"assertions": 1, "decided": 1, "passed": 1, "pass_rate": 1.0}
    no_judge = run_eval(EvalConfig(**{**config.__dict__, "judge_backend": None, "judge_opts": {}}))
    undecided = [j for r in no_judge.records for t in r["turns"] for j in t.get("judged") or []]
    assert undecided[0]["passed"] is None and no_judge.summary["judged"]["judge"] is None
    assert [r["passed"] for r in no_judge.records] == [r["passed"] for r in run.records]  # never in the score


def test_the_eval_command_takes_a_user_model_and_a_judge(tmp_path: Path) -> None:
    lib = Library(tmp_path / "lib")
    lib.add(load_example("shop-support"))
    replies = tmp_path / "user.jsonl"  # a user that ends every turn at once (the first say of each task)
    replies.write_text(json.dumps(f"Bye. {STOP}") + "\n")
    verdicts = tmp_path / "judge.jsonl"
    verdicts.write_text(json.dumps("NO, it did not.") + "\n")
    out = tmp_path / "run"
    result = CliRunner().invoke(cli, ["eval", "--policy", "scripted", "--model", "reference", "--suite",
                                      f"library:{tmp_path / 'lib'}", "--out", str(out), "--executor", "inprocess",
                                      "--concurrency", "1", "--no-progress", "--no-write-back",
                                      "--user-backend", "scripted", "--user-model", str(replies),
                                      "--user-option", 'backend_options={"cycle": true}',
                                      "--judge-backend", "scripted", "--judge-model", str(verdicts)])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run"]["user"] == {"model": "scripted:scripted", "requests": 4, "failures": 0}
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert not any(r["passed"] for r in records) and all(len(r["turns"][0].get("said", [])) == 0 for r in records)
    assert summary["judged"]["suites"] and "judged assertions" in result.output
    assert "Judged assertions" in (out / "report.md").read_text()
    # the inspector's episode page shows the judge's verdict apart from the checks
    site = CliRunner().invoke(cli, ["inspect", str(tmp_path / "lib"), "--out", str(tmp_path / "site"), "--run",
                                    str(out), "--gate", "off", "--executor", "inprocess"])
    assert site.exit_code == 0, site.output
    pages = [p.read_text() for p in (tmp_path / "site" / "runs").rglob("*.html") if p.name != "index.html"]
    judged = [p for p in pages if "The agent told the user that the 37.50 refund" in p]
    assert len(judged) == 1 and "(apart from the score) NO, it did not." in judged[0]
    bad = CliRunner().invoke(cli, ["eval", "--policy", "scripted", "--model", "reference", "--suite", "examples",
                                   "--out", str(tmp_path / "bad"), "--user-model", "m"])
    assert bad.exit_code != 0 and "--user-backend" in bad.output

"""Pure pieces: advantages, rewards, action comparison, histogram, metric flattening."""

from __future__ import annotations

from typing import Any

import pytest

from gym_envs.parsing import format_tool_call
from training.advantages import group_advantages, normalize_per_role, selfplay_advantages
from training.distill import same_action
from training.metrics import drop_rounds_from, flatten
from training.rewards import env_reward, episode_reward, solve_rate, solver_reward
from training.selfplay import histogram


def test_group_advantages() -> None:
    adv = group_advantages([1.0, 0.0, 1.0, 1.0], ["a", "a", "b", "b"], scale="none")
    assert adv == [0.5, -0.5, 0.0, 0.0]
    scaled = group_advantages([1.0, 0.0, 0.0, 0.0], ["a", "a", "b", "b"], scale="group")
    assert scaled[0] == pytest.approx(1.0, rel=1e-3) and scaled[2:] == [0.0, 0.0]
    with pytest.raises(ValueError, match="scale"):
        group_advantages([1.0], ["a"], scale="nope")


def test_per_role_normalisation_is_separate() -> None:
    roles = ["proposer", "proposer", "proposer", "solver", "solver"]
    values = [-1.0, 0.0, 1.0, 10.0, 30.0]
    adv = normalize_per_role(values, roles)
    prop, solv = adv[:3], adv[3:]
    assert sum(prop) == pytest.approx(0.0, abs=1e-6) and sum(solv) == pytest.approx(0.0, abs=1e-6)
    assert max(solv) == pytest.approx(1.0, rel=1e-3)  # the solver's scale does not leak into the proposer's
    assert max(prop) == pytest.approx(1.2247, rel=1e-3)


def test_selfplay_advantages_group_baseline_then_roles() -> None:
    rewards = [1.0, 0.0, 1.0, 1.0, 0.5, -1.0]
    roles = ["solver", "solver", "solver", "solver", "proposer", "proposer"]
    groups = ["t0", "t0", "t1", "t1", "p", "p"]
    adv = selfplay_advantages(rewards, roles, groups)
    assert adv[2] == adv[3] == 0.0  # a group that always passes carries no signal
    assert adv[0] > 0 > adv[1]
    assert adv[4] > 0 > adv[5]


def test_rewards() -> None:
    score = {"episode": 0.0, "turns": 0.5, "checks": 0.75}
    assert episode_reward(score, "turns") == 0.5
    assert episode_reward(None) == 0.0
    assert solver_reward(score, mode="checks", parse_errors=2, parse_error_penalty=0.1) == pytest.approx(0.55)
    assert solve_rate([True, False, True, True]) == 0.75
    logged = {}
    out = env_reward(["p"] * 2, ["c"] * 2, env_reward=[1.0, 0.0], episode_status=["terminated", "max_steps"],
                     episode_passed=[1.0, 0.0], log_metric=logged.__setitem__)
    assert out == [1.0, 0.0]
    assert logged["env/status_max_steps"] == 0.5 and logged["env/episode_passed"] == 0.5


def test_same_action() -> None:
    a = format_tool_call("borrow_book", {"member_id": 7, "book_id": 3})
    b = '<tool_call>{"arguments": {"book_id": 3, "member_id": 7}, "name": "borrow_book"}</tool_call>'
    assert same_action(a, b)
    assert not same_action(a, format_tool_call("borrow_book", {"member_id": 7, "book_id": 2}))
    assert same_action("Done.", "All set, the loan is recorded.")
    assert not same_action(a, "Done.")


def test_histogram_and_flatten() -> None:
    h = histogram([0.0, 0.5, 1.0, 0.99], 4)
    assert h["counts"] == [1.0, 0.0, 1.0, 2.0]
    assert flatten({"a": {"b": 1, "c": True, "d": "x", "e": float("nan")}, "f": 2.5}) == {"a/b": 1.0, "a/c": 1.0,
                                                                                           "f": 2.5}


def test_proposer_group_rewards_and_advantages() -> None:
    """G proposals of one prompt form a group: rewards valid*(1-2|p-0.5|) (+ grounding), fixed values for
    invalid and unparsable ones, and advantages within the group (a group with no spread gives 0)."""
    from types import SimpleNamespace

    from envgen.skills.rewards import proposal_reward
    from training.selfplay_steps import assign_advantages, proposer_samples, role_counts

    r = lambda **kw: proposal_reward("skill_sp", invalid=-0.5, unparsable=-1.0, grounding_weight=0.2, **kw)  # noqa: E731
    assert r(parsed=True, valid=True, solve_rate=0.5) == 1.0
    assert r(parsed=True, valid=True, solve_rate=0.25, grounding=0.5) == pytest.approx(0.6)
    assert r(parsed=True, valid=True, solve_rate=1.0) == 0.0
    assert r(parsed=True, valid=False, solve_rate=None) == -0.5
    assert r(parsed=False, valid=False, solve_rate=None) == -1.0
    assert proposal_reward("spade", parsed=True, valid=True, solve_rate=0.45) == 1.0
    with pytest.raises(ValueError, match="proposer reward"):
        proposal_reward("nope", parsed=True, valid=True, solve_rate=0.5)

    def cand(raw: str, reward: float, group: str) -> SimpleNamespace:
        return SimpleNamespace(proposal=SimpleNamespace(raw=raw), reward=reward, group=group, valid=reward > -1)

    records = {f"c{i}": SimpleNamespace(prompt_ids=[1, 2], completion_ids=[3, 4, 5]) for i in range(7)}
    cands = [cand("c0", 1.0, "a"), cand("c1", 0.0, "a"), cand("c2", -1.0, "a"),  # a group with spread
             cand("c3", 0.5, "b"), cand("c4", 0.5, "b"),  # all equal: no signal
             cand("c5", 0.9, "c"),  # a group of one: no baseline
             cand("missing", 1.0, "d")]  # nothing sampled (a generation error)
    samples, missing = proposer_samples(cands, records.get, weight=1.0)
    assert missing == 1 and len(samples) == 6 and all(s.loss_mask == [1, 1, 1] for s in samples)
    assign_advantages(samples)
    adv = [s.advantage for s in samples]
    assert adv[0] > adv[1] > adv[2] and adv[1] == pytest.approx(0.0, abs=1e-6)
    assert adv[3:] == [0.0, 0.0, 0.0]
    assert role_counts(samples, "proposer") == {"samples": 2.0, "trained_tokens": 6.0}


def test_drop_rounds_from_keeps_earlier_rounds_only(tmp_path) -> None:
    import json

    path = tmp_path / "metrics.jsonl"
    lines = [{"step": 0, "round": 0}, {"round": 1, "heldout": True}, {"step": 2}, {"round": 1}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"round": 3, "cut sh')
    assert drop_rounds_from(path, 1) == 4  # rounds 1, 2 (by "step"), 1, and the line a kill cut short
    assert [json.loads(x) for x in path.read_text().splitlines()] == [{"step": 0, "round": 0}]
    assert drop_rounds_from(path, 1) == 0 and drop_rounds_from(tmp_path / "missing.jsonl", 0) == 0
    assert drop_rounds_from(path, 0) == 1 and path.read_text() == ""


def test_failures_count_codes_cut_offs_and_first_schema_problems() -> None:
    """``failures``: proposals without a spec by failure code, those the budget cut off, and the blueprints that
    broke their schema by the kind of their first problem (its top-level key and pydantic type)."""
    from types import SimpleNamespace

    from training.selfplay_metrics import failures

    def prop(code: str | None, *, finish: str = "stop", errors: list[dict[str, str]] | None = None) -> Any:
        meta: dict[str, Any] = {"error_code": code, "finish_reason": finish}
        if errors:
            meta["schema_errors"] = errors
        return SimpleNamespace(spec=object() if code is None else None, meta=meta)

    ops = [{"loc": "operations", "type": "too_long"}]
    props = [prop(None), prop("json_syntax", finish="length"), prop("blueprint_schema", errors=ops),
             prop("blueprint_schema", errors=[{"loc": "entities.0.description", "type": "string_pattern_mismatch"},
                                              *ops]),
             prop("blueprint_schema", errors=ops), prop("no_json")]
    assert failures(props) == {"codes": {"blueprint_schema": 3, "json_syntax": 1, "no_json": 1}, "truncated": 1,
                               "schema": {"operations: too_long": 2, "entities: string_pattern_mismatch": 1}}
    assert "schema" not in failures([prop("no_json")])  # no blueprint broke its schema: no such count

"""The hand-written example environments (``gym_envs.examples``): lookup, gate, play-through, coverage.

Every example must pass the validity gate (once in-process, once in isolated
workers), score 1.0 when its reference is played through ``ToolEnv`` with
structured actions, score 0.0 when nothing is done, satisfy Gymnasium's
``check_env``, and enforce its invariants with agent-visible ``ToolError``s.
Together the examples must use every task kind and every check kind.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import gym_envs  # noqa: F401  (registers envwright/ToolEnv-v0)
from envgen.gate import oracle_reply, validate_spec
from gym_envs.checks import TurnView, judge, kind_names
from gym_envs.examples import (
    EXAMPLES_DIR,
    UnknownExample,
    example_path,
    list_examples,
    load_all,
    load_example,
)
from gym_envs.sandbox import make_executor
from gym_envs.spec import CHECK_KINDS, TASK_KINDS, EnvSpec, Say, Task

NAMES = list_examples()
SPECS: dict[str, EnvSpec] = {s.id: s for s in load_all()}
TASKS = [(name, t.id) for name, spec in SPECS.items() for t in spec.tasks]
DECLINE_PHRASES = ("cannot", "can't", "unable", "not able", "not possible", "sorry")


def _of_kind(kind: str) -> list[tuple[str, str]]:
    return [(n, t) for n, t in TASKS if SPECS[n].task(t).kind == kind]


def _make(spec: EnvSpec, task: str | None = None) -> gym.Env:
    return gym.make("envwright/ToolEnv-v0", spec=spec, task=task, executor="inprocess")


def _play(env: gym.Env, task: Task, *, empty: bool = False) -> tuple[float, dict, int]:
    """Play the task's reference (or nothing at all); returns (reward, last info, rows changed)."""
    env.reset(seed=0)
    changed = 0
    reward, info, terminated = 0.0, {}, False
    for turn in task.turns:
        for action in [] if empty else turn.plan():
            if isinstance(action, Say):  # a message the scenario's user answers (the turn goes on)
                assert "user_reply" in env.step({"content": action.say, "tool_calls": []})[4], action
                continue
            _, _, _, _, info = env.step({"content": "", "tool_calls": [c.model_dump() for c in action]})
            for result in info["tool_results"]:
                assert result["ok"], f"{result['name']}({result['arguments']}) failed: {result['error']}"
                changed += result["changes"]
        _, reward, terminated, _, info = env.step({"content": "" if empty else oracle_reply(turn),
                                                   "tool_calls": []})
    assert terminated
    return reward, info, changed


# -- lookup ---------------------------------------------------------------------------------------


def test_examples_are_listed_sorted_and_named_by_id():
    assert len(NAMES) >= 7
    assert sorted(NAMES) == NAMES
    for name in NAMES:
        assert example_path(name) == EXAMPLES_DIR / f"{name}.json"
        assert example_path(f"{name}.json") == example_path(name)
        assert SPECS[name].id == name
    assert [s.id for s in load_all()] == NAMES


def test_unknown_example_suggests_close_matches():
    with pytest.raises(UnknownExample, match="did you mean 'bank-ledger'") as err:
        example_path("bank-ledgr")
    assert isinstance(err.value, KeyError)
    with pytest.raises(KeyError, match="no example environment"):
        load_example("../spec")


def test_load_example_returns_a_fresh_spec():
    a, b = load_example("bank-ledger"), load_example("bank-ledger")
    assert a == b and a is not b


@pytest.mark.parametrize("name", NAMES)
def test_example_is_manual_and_well_formed(name):
    spec = SPECS[name]
    assert spec.source is None
    assert spec.provenance.generator == "manual" and spec.provenance.stream == "manual"
    assert 3 <= len(spec.tools) <= 6
    assert 4 <= len(spec.tasks) <= 8
    rows = make_executor("inprocess").load(spec)["tables"]
    written = sum(n for n in rows.values() if n < 500)  # bigger tables are generated in seed_sql
    assert 10 <= written <= 60


# -- the validity gate ----------------------------------------------------------------------------


@pytest.mark.parametrize("executor", ["inprocess", "worker"])
@pytest.mark.parametrize("name", NAMES)
def test_gate_accepts_example(name, executor):
    verdict = validate_spec(example_path(name), executor=executor)
    assert verdict.accepted, verdict.feedback()
    assert verdict.spec_id == name


# -- playing through ToolEnv ----------------------------------------------------------------------


@pytest.mark.parametrize(("name", "task_id"), TASKS)
def test_reference_scores_one_and_doing_nothing_scores_zero(name, task_id):
    spec = SPECS[name]
    task = spec.task(task_id)
    env = _make(spec, task_id)
    try:
        reward, info, changed = _play(env, task)
        assert reward == 1.0, [t["checks"] for t in info["turn_results"]]
        assert info["episode_passed"]
        empty_reward, empty_info, _ = _play(env, task, empty=True)
    finally:
        env.close()
    # every example task needs a state change or an answer, so doing nothing never scores
    assert empty_reward == 0.0
    assert not empty_info["episode_passed"]
    assert (changed > 0) == (task.kind in ("execute", "read_then_write", "missing_parameter"))


def test_the_dense_reward_modes_credit_the_checks_doing_nothing_passes():
    """``episode`` pays doing nothing 0 on every example task; ``turns`` and ``checks`` are partial credit, and
    ``checks`` counts the guards (``unchanged``, a ``calls`` check's ``forbid``) that doing nothing keeps, as
    gym_envs/ENVSPEC.md and gym_envs/ENVIRONMENTS.md say: a dense learning signal whose floor is well above 0,
    not a score (an outside red team measured it; the figures are pinned here so the docs stay true).
    ``progress`` pays doing nothing only where not acting is the turn's task: the first turn of a
    missing-parameter task, where the agent must ask before it writes."""
    means = {}
    for mode in ("episode", "turns", "checks", "progress"):
        rewards = {}
        for name, task_id in TASKS:
            env = gym.make("envwright/ToolEnv-v0", spec=SPECS[name], task=task_id, executor="inprocess",
                           reward_mode=mode)
            try:
                env.reset(seed=0)
                total, done = 0.0, False
                while not done:
                    _, r, term, trunc, _ = env.step({"content": "OK.", "tool_calls": []})
                    total, done = total + float(r), term or trunc
            finally:
                env.close()
            rewards[name, task_id] = total
        means[mode] = sum(rewards.values()) / len(rewards)
        if mode == "progress":
            paid = {k for k, v in rewards.items() if v > 0}
            assert paid == set(_of_kind("missing_parameter")), paid
    assert means["episode"] == 0.0
    assert round(means["turns"], 2) == 0.07 and round(means["checks"], 2) == 0.40, means
    assert round(means["progress"], 2) == 0.06, means


@pytest.mark.parametrize(("name", "task_id"), TASKS)
def test_progress_pays_the_reference_in_full_and_sums_its_turns(name, task_id):
    """``reward_mode="progress"``: the reference earns 1.0, summed over its turns as ``checks`` does, and
    ``info["score"]`` carries the mode (which every turn's record backs with its ``free`` verdicts)."""
    spec = SPECS[name]
    env = gym.make("envwright/ToolEnv-v0", spec=spec, task=task_id, executor="inprocess", reward_mode="progress")
    try:
        env.reset(seed=0)
        total = 0.0
        for turn in spec.task(task_id).turns:
            for action in turn.plan():
                _, r, _, _, _ = env.step({"content": action.say, "tool_calls": []} if isinstance(action, Say) else
                                         {"content": "", "tool_calls": [c.model_dump() for c in action]})
                total += float(r)
            _, r, terminated, _, info = env.step({"content": oracle_reply(turn), "tool_calls": []})
            total += float(r)
        assert terminated and total == pytest.approx(1.0) and info["score"]["progress"] == pytest.approx(1.0)
        assert all(len(t["free"]) == len(t["checks"]) for t in info["turn_results"])
        # doing nothing keeps every check only where not acting is the turn's task (ask for the missing value)
        kept = [t["index"] for t in info["turn_results"] if all(t["free"])]
        assert kept == ([0] if spec.task(task_id).kind == "missing_parameter" else []), kept
    finally:
        env.close()


def test_progress_on_the_worker_executor_and_the_vector_env():
    """The worker executor and ``gym.make_vec`` (batched resets and steps) judge the ``free`` verdicts as the
    in-process env does: doing nothing scores 0 in a write task."""
    name, task_id = _of_kind("execute")[0]
    rewards = {}
    for executor in ("inprocess", "worker"):
        env = gym.make("envwright/ToolEnv-v0", spec=SPECS[name], task=task_id, executor=executor,
                       reward_mode="progress")
        try:
            env.reset(seed=0)
            _, r, term, _, info = env.step({"content": "OK.", "tool_calls": []})
            rewards[executor] = (float(r), [t["free"] for t in info["turn_results"]] if term else info["checks"])
        finally:
            env.close()
    assert rewards["inprocess"] == rewards["worker"] and rewards["worker"][0] == 0.0
    envs = gym.make_vec("envwright/ToolEnv-v0", num_envs=2, spec=SPECS[name], task=task_id, reward_mode="progress")
    try:
        envs.reset(seed=0)
        _, r, _, _, _ = envs.step(["OK.", "OK."])
        assert list(r) == [0.0, 0.0]
    finally:
        envs.close()


@pytest.mark.parametrize("name", NAMES)
def test_the_free_verdicts_skip_only_what_running_them_would_pass(name):
    """``unchanged`` checks are not run for the ``free`` verdicts (they pass on the state they marked): the
    verdicts equal running every check as each turn of each reference episode begins."""
    from gym_envs.env import ToolEnv

    spec = SPECS[name]
    env = ToolEnv(spec, executor="inprocess", track_progress=True)
    try:
        for task in spec.tasks:
            env.reset(options={"task": task.id, "episode_seed": 0})
            for k, turn in enumerate(task.turns):
                every = judge(env.session, turn.checks, TurnView())
                assert env.turns[k].free == [c.passed for c in every], (task.id, k)
                for action in turn.plan():
                    env.step({"content": action.say, "tool_calls": []} if isinstance(action, Say) else
                             {"content": "", "tool_calls": [c.model_dump() for c in action]})
                env.step({"content": oracle_reply(turn), "tool_calls": []})
    finally:
        env.close()


def test_progress_credits_the_guards_only_beside_progress():
    """A turn's guards (checks doing nothing keeps) earn credit in ``progress`` only when the turn also passes a
    check doing nothing fails; ``checks`` credits them always. A wrong write that breaks a guard loses it."""
    from gym_envs.env import TurnOutcome
    from gym_envs.sandbox import CheckResult

    def turn(passed: list[bool], free: list[bool] | None) -> TurnOutcome:
        checks = [CheckResult(index=i, kind="state", passed=p, detail="") for i, p in enumerate(passed)]
        return TurnOutcome(0, "x", checks=checks, scored=True, free=free)

    assert turn([False, True, True], [False, True, True]).credited == 0  # nothing done: the guards are not paid
    assert turn([True, True, True], [False, True, True]).credited == 3  # progress: the guards count too
    assert turn([True, False, True], [False, True, True]).credited == 2  # progress, one guard broken
    assert turn([True, True], [True, True]).credited == 2  # doing nothing is this turn's task (a refusal)
    assert turn([False, True, True], None).credited == 2  # no free verdicts (other modes): every passed check


@pytest.mark.parametrize("name", NAMES)
def test_gymnasium_env_checker_passes(name):
    env = _make(SPECS[name])
    try:
        check_env(env.unwrapped)
    finally:
        env.close()


# Invariants the tools enforce: (example, tool, arguments, part of the ToolError message).
REFUSALS = [
    ("bank-ledger", "transfer", {"from_account_id": 1005, "to_account_id": 1003, "amount_cents": 10000},
     "insufficient funds"),
    ("bank-ledger", "transfer", {"from_account_id": 1001, "to_account_id": 1006, "amount_cents": 100},
     "currency mismatch"),
    ("bank-ledger", "transfer", {"from_account_id": 1008, "to_account_id": 1001, "amount_cents": 100},
     "frozen"),
    ("library-loans", "borrow_book", {"member_id": 4, "book_id": 1}, "overdue"),
    ("library-loans", "borrow_book", {"member_id": 3, "book_id": 7}, "no copy"),
    ("library-loans", "renew_loan", {"loan_id": 4}, "overdue"),
    ("library-loans", "return_book", {"loan_id": 17}, "already returned"),
    ("calendar-scheduling", "book_room", {"room_id": 5, "day": "2024-06-18", "start_time": "13:30",
                                          "end_time": "14:00", "title": "Sync", "organizer": "ana.silva",
                                          "attendees": 4}, "taken"),
    ("calendar-scheduling", "book_room", {"room_id": 2, "day": "2024-06-22", "start_time": "10:00",
                                          "end_time": "11:00", "title": "Sync", "organizer": "ana.silva",
                                          "attendees": 2}, "weekend"),
    ("warehouse-inventory", "receive_stock", {"sku": "FILTER-A", "warehouse": "AMS", "qty": 500,
                                              "po_ref": "PO-7731"}, "only 150 more fit"),
    ("warehouse-inventory", "ship_order", {"sku": "SENSOR-T", "warehouse": "BER", "qty": 1,
                                           "order_ref": "SO-91022"}, "only 0"),
    ("support-tickets", "update_status", {"ticket_id": 108, "status": "closed"}, "cannot go from"),
    ("support-tickets", "assign_ticket", {"ticket_id": 102, "agent_id": 1}, "billing ticket"),
    ("user-roles", "grant_role", {"actor": "rgarcia", "username": "tnguyen", "role": "admin"},
     "only an admin"),
    ("user-roles", "grant_role", {"actor": "dkim", "username": "tnguyen", "role": "editor"}, "lacks"),
    ("user-roles", "set_user_active", {"actor": "mbrown", "username": "mbrown", "active": False},
     "your own"),
    ("restaurant-orders", "add_item", {"order_id": 56, "item_id": 15, "qty": 1}, "sold out"),
    ("restaurant-orders", "open_order", {"table_id": 7, "guests": 2}, "live order"),
    ("restaurant-orders", "pay_order", {"order_id": 56, "tip_cents": 0, "method": "cash"},
     "only orders sent"),
    ("travel-booking", "book_flight", {"flight_id": 2, "passenger": "Amara Okafor", "seats": 1},
     "0 seats left"),
    ("travel-booking", "change_flight", {"booking_ref": "BK0001", "new_flight_id": 5}, "keep the route"),
]


@pytest.mark.parametrize(("name", "tool", "arguments", "message"), REFUSALS)
def test_tools_refuse_to_break_invariants(name, tool, arguments, message):
    env = _make(SPECS[name], SPECS[name].tasks[0].id)
    try:
        env.reset(seed=0)
        before = env.unwrapped.state_digest()
        _, _, _, _, info = env.step({"tool_calls": [{"name": tool, "arguments": arguments}]})
        (result,) = info["tool_results"]
        assert not result["ok"] and result["error_type"] == "ToolError", result
        assert message in result["error"]
        assert env.unwrapped.state_digest() == before
    finally:
        env.close()


# -- coverage -------------------------------------------------------------------------------------


def test_examples_cover_every_task_kind_and_check_kind():
    tasks = [t for spec in SPECS.values() for t in spec.tasks]
    checks: list[Any] = [c for t in tasks for turn in t.turns for c in turn.checks]
    assert {t.kind for t in tasks} == set(TASK_KINDS)
    assert {c.kind for c in checks} == set(CHECK_KINDS) == set(kind_names())  # every registered kind
    assert any(c.kind == "sql" and c.ordered for c in checks)
    assert any(c.kind == "sql" and not c.ordered for c in checks)
    assert any(c.kind == "unchanged" and c.tables for c in checks)
    assert any(c.kind == "unchanged" and not c.tables for c in checks)
    assert any(c.kind == "calls" and c.require for c in checks)
    assert any(c.kind == "calls" and c.forbid for c in checks)
    assert all("def check(db)" in c.code for c in checks if c.kind == "python")
    patterns = [i for c in checks if c.kind == "calls" for i in [*c.require, *c.forbid] if not isinstance(i, str)]
    assert {i.match for i in patterns} >= {"exact", "keys"}
    assert {c.scope for c in checks if c.kind == "reply_contains"} == {"turn", "conversation"}
    # the scripted user: scenarios with say items, asked for facts and to confirm
    scenario = [t for t in tasks if t.scenario is not None]
    assert scenario and any(isinstance(i, Say) for t in scenario for u in t.turns for i in u.reference)
    assert {s.spec_version for s in SPECS.values()} == {1, 2}
    assert {len(t.turns) for t in tasks} >= {1, 2, 3}
    assert sum(len(t.turns) > 1 for t in tasks) >= 7


@pytest.mark.parametrize(("name", "task_id"), _of_kind("missing_parameter"))
def test_missing_parameter_tasks_ask_first_then_write(name, task_id):
    spec = SPECS[name]
    first, *rest = spec.task(task_id).turns
    kinds = {c.kind for c in first.checks}
    assert {"calls", "unchanged"} <= kinds
    forbidden = {n for c in first.checks if c.kind == "calls" for n in c.forbid}
    assert forbidden and all(call.name not in forbidden for call in first.reference)
    assert rest and any(call.name in forbidden for call in rest[0].reference)


@pytest.mark.parametrize(("name", "task_id"), _of_kind("decline"))
def test_decline_tasks_change_nothing_and_say_so(name, task_id):
    (turn,) = SPECS[name].task(task_id).turns
    assert not turn.reference
    assert any(c.kind == "unchanged" and not c.tables for c in turn.checks)
    phrases = [s for c in turn.checks if c.kind == "reply_contains" for s in c.any_of]
    assert set(DECLINE_PHRASES) <= set(phrases)
    assert any(c.kind == "calls" and c.forbid for c in turn.checks)


def test_warehouse_history_is_generated_by_a_recursive_cte():
    spec = SPECS["warehouse-inventory"]
    assert "WITH RECURSIVE" in spec.state.seed_sql
    rows = make_executor("inprocess").load(spec)["tables"]
    assert rows["movements"] == 1000

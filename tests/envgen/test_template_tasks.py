"""Deep task shapes (``envgen.blueprint.render.tasks``): for each shape, the reference passes, doing
nothing fails, a near miss fails, and the validity gate accepts it (every wrong trajectory it derives is
caught, on every turn)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from corpora import Document
from envgen.blueprint import Blueprint, CompileOptions, compile_blueprint
from envgen.blueprint.render.difficulty import PROFILES
from envgen.blueprint.render.tasks import TaskMaker
from envgen.blueprint.render.values import ValueMaker
from envgen.gate import validate_spec
from gym_envs.env import ToolEnv
from gym_envs.spec import parse_spec

DOC = Document.create('''\
"""Branches hold customer accounts; money moves between accounts, accounts move between branches."""


class Branch:
    def __init__(self, label: str, seats: int):
        self.label = label
        self.seats = seats


class Account:
    def __init__(self, handle: str, balance: int = 0, tier: str = "basic", limit: int = 100):
        self.handle = handle
        self.balance = balance
        self.tier = tier
        self.limit = limit
''', corpus="mem", path="accounts.py")


def _blueprint(**over: Any) -> Blueprint:
    data: dict[str, Any] = {
        "blueprint_version": 1, "title": "Branch accounts", "summary": "Accounts of a bank, held by branches.",
        "entities": [
            {"name": "account", "description": "a customer account", "key": "handle",
             "fields": [{"name": "handle", "type": "string", "description": "the account handle"},
                        {"name": "balance", "type": "integer", "description": "money in the account"},
                        {"name": "tier", "type": "string", "description": "service tier"},
                        {"name": "limit", "type": "integer", "description": "daily limit"}],
             "parent": "branch", "states": ["open", "frozen", "closed"]},
            {"name": "branch", "description": "a bank branch", "key": "label",
             "fields": [{"name": "label", "type": "string", "description": "the branch name"},
                        {"name": "seats", "type": "integer", "description": "how many accounts it holds"}],
             "parent": None, "states": []},
            {"name": "entry", "description": "a ledger entry of an account", "key": "memo",
             "fields": [{"name": "memo", "type": "string", "description": "what it was for"},
                        {"name": "points", "type": "integer", "description": "loyalty points"}],
             "parent": "account", "states": []},
        ],
        "operations": [
            {"kind": "update", "entity": "account", "name": None, "field": "tier", "target": None, "description": ""},
            {"kind": "status", "entity": "account", "name": "freeze_account", "field": None, "target": "frozen",
             "description": ""},
            {"kind": "status", "entity": "account", "name": "close_account", "field": None, "target": "closed",
             "description": ""},
            {"kind": "adjust", "entity": "account", "name": None, "field": "balance", "target": None,
             "description": ""},
            {"kind": "transfer", "entity": "account", "name": None, "field": "balance", "target": None,
             "description": ""},
            {"kind": "transfer", "entity": "account", "name": None, "field": None, "target": None,
             "description": ""},
            {"kind": "delete", "entity": "account", "name": None, "field": None, "target": None, "description": ""},
        ],
        "rules": [
            {"kind": "non_negative", "entity": "account", "field": "balance", "min": None, "max": None, "values": []},
            {"kind": "capacity", "entity": "branch", "field": "seats", "min": None, "max": None, "values": []},
            {"kind": "final", "entity": "account", "field": None, "min": None, "max": None, "values": ["closed"]},
        ],
        "tasks": {"execute": 1, "read": 1, "read_then_write": 1, "missing_parameter": 1, "decline": 1},
        "difficulty": "hard",
    }
    data.update(over)
    return Blueprint.model_validate(data)


@pytest.fixture(scope="module")
def compiled() -> Any:
    return compile_blueprint(_blueprint(), DOC, seed=3, options=CompileOptions(rows=(6, 9)),
                             created_at="2024-01-01T00:00:00+00:00")


SHAPES = ["exec_batch", "exec_transfer", "create_talk", "read_talk", "chain_key", "chain_pick", "chain_transfer",
          "chain_move", "cascade", "chain_decide", "refuse_overdraft", "refuse_capacity", "refuse_transition",
          "talk_list", "talk_refer", "missing_update", "missing_create", "decline_deep"]


def _task(compiled: Any, shape: str) -> dict[str, Any]:
    """The first task ``shape`` writes for the fixture's model over a few seeds (padded like the plan does)."""
    for seed in range(40):
        rng = random.Random(seed)
        tm = TaskMaker(compiled.model, rng, ValueMaker(rng, compiled.model.words or ["amber"], []), PROFILES["hard"])
        tm.reset()
        task = getattr(tm, shape)()
        if task is not None:
            tm.pad(task)
            task["id"] = f"t_{shape}"
            return task
    raise AssertionError(f"shape {shape} wrote no task for the fixture")


def _spec(compiled: Any, task: dict[str, Any]) -> dict[str, Any]:
    data = compiled.spec.model_dump(mode="json")
    data["tasks"] = [task]
    return data


def _reply(turn: dict[str, Any]) -> str:
    return " ".join(c["any_of"][0] for c in turn["checks"] if c["kind"] == "reply_contains") or "Done."


def _play(spec: dict[str, Any], turns: list[tuple[list[dict[str, Any]], str]]) -> float:
    env = ToolEnv(parse_spec(spec), executor="inprocess", max_steps=200)
    try:
        env.reset(options={"task": spec["tasks"][0]["id"], "episode_seed": 0})
        reward = 0.0
        for calls, reply in turns:
            if calls:
                env.step({"tool_calls": calls})
            _, reward, terminated, _, _ = env.step({"content": reply, "tool_calls": []})
            if terminated:
                break
        return reward
    finally:
        env.close()


def _near_miss(spec: dict[str, Any]) -> list[tuple[list[dict[str, Any]], str]]:
    """The reference with its last effective step wrong: the last turn that makes calls gets its last call aimed
    at another record (an id argument moved to another row) or dropped, or, in a turn that only answers, a
    reply without the answer."""
    task = spec["tasks"][0]
    turns = [([dict(c) for c in t["reference"]], _reply(t)) for t in task["turns"]]
    for ti in range(len(turns) - 1, -1, -1):
        calls, reply = turns[ti]
        if any(c["kind"] == "reply_contains" for c in task["turns"][ti]["checks"]):
            turns[ti] = (calls, "I could not find that.")
            return turns
        if calls:
            last = calls[-1]
            ids = [k for k, v in last["arguments"].items() if k.endswith("_id") and isinstance(v, int)]
            if ids:
                args = dict(last["arguments"])
                args[ids[0]] = args[ids[0]] + 1 if args[ids[0]] > 1 else 2
                calls = [*calls[:-1], {"name": last["name"], "arguments": args}]
            else:
                calls = calls[:-1]
            turns[ti] = (calls, reply)
            return turns
    raise AssertionError("no turn to miss")


@pytest.mark.parametrize("shape", SHAPES)
def test_shape_reference_passes_noop_and_near_miss_fail(compiled: Any, shape: str) -> None:
    task = _task(compiled, shape)
    spec = _spec(compiled, task)
    reference = [([{"name": c["name"], "arguments": c["arguments"]} for c in t["reference"]], _reply(t))
                 for t in task["turns"]]
    assert _play(spec, reference) == 1.0, shape
    assert _play(spec, [([], "") for _ in task["turns"]]) == 0.0, shape
    assert _play(spec, _near_miss(spec)) == 0.0, shape
    verdict = validate_spec(spec, executor="inprocess")
    assert verdict.accepted, [str(r) for r in verdict.reasons]
    assert verdict.mutation_score == 1.0 and verdict.killed >= len(task["turns"])
    # every turn had a wrong trajectory caught, or catches every write by construction (an unchanged check on
    # every table, the gate's proof for the extra writes of a turn that asks back)
    turns_killed = {m["turn"] for m in verdict.mutations if m["outcome"] == "killed"}
    guarded = {i + 1 for i, t in enumerate(task["turns"])
               if any(c["kind"] == "unchanged" and not c["tables"] for c in t["checks"])}
    assert turns_killed | guarded == set(range(1, len(task["turns"]) + 1)), (shape, turns_killed)


def test_shapes_are_deep(compiled: Any) -> None:
    tasks = [_task(compiled, s) for s in SHAPES]
    calls = [sum(len(t["reference"]) for t in task["turns"]) for task in tasks]
    turns = [len(task["turns"]) for task in tasks]
    assert sum(calls) / len(calls) >= 3.5 and sum(turns) / len(turns) >= 2.5, (calls, turns)


def test_the_compiled_environment_has_the_rules_and_distractors(compiled: Any) -> None:
    spec = compiled.spec
    code = spec.code
    assert "is full" in code and "a final state" in code and "would go below 0" in code
    tools = {t.name for t in spec.tools}
    assert {"transfer_account_balance", "move_account", "adjust_account_balance"} <= tools
    assert compiled.difficulty == "hard"
    assert any(r.startswith("difficulty: near-duplicate") for r in compiled.repairs)
    assert validate_spec(spec, executor="inprocess").accepted


def test_refusals_change_nothing_and_say_why(compiled: Any) -> None:
    for shape in ("refuse_overdraft", "refuse_capacity", "refuse_transition"):
        first = _task(compiled, shape)["turns"][0]
        kinds = {c["kind"]: c for c in first["checks"]}
        assert kinds["unchanged"]["tables"] == [] and "reply_contains" in kinds, shape


def test_difficulty_is_a_knob(compiled: Any) -> None:
    easy = compile_blueprint(_blueprint(difficulty="easy"), DOC, seed=3, options=CompileOptions(rows=(6, 9)))
    forced = compile_blueprint(_blueprint(difficulty="easy"), DOC, seed=3,
                               options=CompileOptions(rows=(6, 9), difficulty="hard"))
    assert easy.difficulty == "easy" and forced.difficulty == "hard"
    assert not any(r.startswith("difficulty:") for r in easy.repairs)
    turns = [len(t.turns) for t in easy.spec.tasks]
    hard = [len(t.turns) for t in compiled.spec.tasks]
    assert sum(turns) <= sum(hard)
    with pytest.raises(ValueError, match="unknown difficulty"):
        CompileOptions(difficulty="brutal")

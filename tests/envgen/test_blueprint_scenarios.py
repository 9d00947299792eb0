"""Scenario tasks of the blueprint compiler (``envgen.blueprint.render.tasks.scenarios``): for each shape the reference
with its questions passes against the scripted user and the gate accepts it; an agent that acts without asking for
what the request leaves out, or without the approval the user asked for, fails; and a library written by either
blueprint writer (the AST writer of the template proposer, a model through the LLM proposer) is about a third
scenario tasks, which ``envwright stats`` reports."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from corpora import Document
from envgen.blueprint import CompileOptions, compile_blueprint
from envgen.blueprint.render.difficulty import PROFILES
from envgen.blueprint.render.tasks import TaskMaker
from envgen.blueprint.render.values import ValueMaker
from envgen.gate import validate_spec
from envgen.generate import GenerateConfig, run_generate
from envgen.library import Library
from envgen.proposers.llm import LLMProposer
from envgen.proposers.template import TemplateProposer
from envgen.stats import library_stats
from gym_envs.env import ToolEnv
from gym_envs.spec import parse_spec
from gym_envs.users.scenario import Scenario
from gym_envs.users.scripted import scripted_reply
from tests.envgen.test_blueprint import JS, bp
from tests.envgen.test_template_tasks import DOC, _blueprint

SHAPES = ["scenario_value", "scenario_record", "scenario_confirm", "scenario_batch", "scenario_create",
          "scenario_read"]


@pytest.fixture(scope="module")
def compiled() -> Any:
    return compile_blueprint(_blueprint(), DOC, seed=3, options=CompileOptions(rows=(6, 9)),
                             created_at="2024-01-01T00:00:00+00:00")


def _task(compiled: Any, shape: str, want: Any = None) -> dict[str, Any]:
    """The first task ``shape`` writes for the fixture's model over a few seeds for which ``want(task)`` holds."""
    for seed in range(60):
        rng = random.Random(seed)
        tm = TaskMaker(compiled.model, rng, ValueMaker(rng, compiled.model.words or ["amber"], []), PROFILES["hard"])
        tm.reset()
        task = getattr(tm, shape)()
        if task is not None and (want is None or want(task)):
            task["id"] = f"t_{shape}"
            return task
    raise AssertionError(f"shape {shape} wrote no such task for the fixture")


def _spec(compiled: Any, task: dict[str, Any]) -> dict[str, Any]:
    data = compiled.spec.model_dump(mode="json")
    data["spec_version"] = 2
    data["tasks"] = [task]
    return data


def _reply(turn: dict[str, Any]) -> str:
    return " ".join(c["any_of"][0] for c in turn["checks"] if c["kind"] == "reply_contains") or "Done."


def _play(spec: dict[str, Any], turns: list[tuple[list[dict[str, Any]], str]]) -> float:
    """The reward of playing ``turns`` (each: reference items, a call or a ``say``, one action each, then the final
    reply) against the task's scripted user."""
    env = ToolEnv(parse_spec(spec), executor="inprocess", max_steps=200)
    try:
        env.reset(options={"task": spec["tasks"][0]["id"], "episode_seed": 0})
        reward = 0.0
        for items, reply in turns:
            for item in items:
                if "say" in item:
                    _, _, _, _, info = env.step({"content": item["say"], "tool_calls": []})
                    assert info.get("user_reply"), item  # the user answered: the turn goes on
                else:
                    env.step({"tool_calls": [{"name": item["name"], "arguments": item["arguments"]}]})
            _, reward, terminated, _, _ = env.step({"content": reply, "tool_calls": []})
            if terminated:
                break
        return reward
    finally:
        env.close()


def _reference(task: dict[str, Any]) -> list[tuple[list[dict[str, Any]], str]]:
    return [([dict(i) for i in t["reference"]], _reply(t)) for t in task["turns"]]


def _without_says(task: dict[str, Any]) -> list[tuple[list[dict[str, Any]], str]]:
    return [([i for i in items if "say" not in i], reply) for items, reply in _reference(task)]


def _confirmed(task: dict[str, Any]) -> bool:
    return any(c["kind"] == "confirmed" for c in task["turns"][0]["checks"])


@pytest.mark.parametrize("shape", SHAPES)
def test_a_scenario_shape_asks_the_user_its_reference_passes_and_the_gate_accepts_it(compiled: Any,
                                                                                     shape: str) -> None:
    task = _task(compiled, shape)
    scenario = Scenario.model_validate(task["scenario"])
    first = task["turns"][0]
    says = [i["say"] for i in first["reference"] if "say" in i]
    assert says
    for text in says:  # each question is answered: a fact's value, or a yes to a change it states
        reply = scripted_reply(scenario, text)
        assert reply.confirmed or any(str(v) in (reply.text or "") for v in scenario.facts.values()), (text, reply)
    for value in scenario.facts.values():  # what the user withholds is not in the request
        assert f"'{value}'" not in first["instruction"] and f" {value}." not in first["instruction"]
    spec = _spec(compiled, task)
    assert _play(spec, _reference(task)) == 1.0
    verdict = validate_spec(spec, executor="inprocess")
    assert verdict.accepted, [str(r) for r in verdict.reasons]
    assert verdict.mutation_score == 1.0


@pytest.mark.parametrize("shape", ["scenario_confirm", "scenario_batch", "scenario_create"])
def test_a_write_without_the_users_approval_fails(compiled: Any, shape: str) -> None:
    task = _task(compiled, shape, lambda t: _confirmed(t) and not t["scenario"]["facts"])
    spec = _spec(compiled, task)
    (tool,) = next(c["tools"] for c in task["turns"][0]["checks"] if c["kind"] == "confirmed")
    assert _play(spec, _without_says(task)) == 0.0  # the same calls, unasked
    verdict = validate_spec(spec, executor="inprocess")
    dropped = next(m for m in verdict.mutations if "without the message" in m["mutation"])
    assert dropped["outcome"] == "killed" and "(confirmed) failed" in dropped["detail"], (tool, dropped)


def test_a_guessed_value_fails(compiled: Any) -> None:
    task = _task(compiled, "scenario_value", lambda t: not _confirmed(t))
    ((_, value),) = task["scenario"]["facts"].items()
    turns = _without_says(task)
    items, reply = turns[0]
    guess = [dict(i, arguments={k: (v + 1 if isinstance(v, int) else f"{v}x") if v == value else v
                                for k, v in i["arguments"].items()}) for i in items]
    assert guess != items  # the agent wrote a value of its own
    assert _play(_spec(compiled, task), [(guess, reply), *turns[1:]]) == 0.0


def test_a_guessed_record_fails(compiled: Any) -> None:
    task = _task(compiled, "scenario_record", lambda t: not _confirmed(t))
    spec = _spec(compiled, task)
    turns = _without_says(task)
    items, reply = turns[0]
    write = items[-1]
    id_param = next(k for k in write["arguments"] if k.endswith("_id"))
    other = 1 if write["arguments"][id_param] != 1 else 2  # the agent acts on a record it picked itself
    guess = [*items[:-1], dict(write, arguments={**write["arguments"], id_param: other})]
    assert _play(spec, [(guess, reply), *turns[1:]]) == 0.0


def test_a_read_of_a_record_the_user_did_not_name_fails(compiled: Any) -> None:
    task = _task(compiled, "scenario_read")
    turns = _without_says(task)
    assert _play(_spec(compiled, task), [(turns[0][0], "I could not tell which one you mean."), *turns[1:]]) == 0.0


def _share(lib: Library) -> float:
    return float(library_stats(lib).realism["scenario_share"])


DOCS = [DOC, Document.create('''\
"""A lending library: members borrow books and return them."""


class Book:
    def __init__(self, title: str, copies: int = 1, shelf: str = "A"):
        self.title = title
        self.copies = copies
        self.shelf = shelf


class Library:
    def add_book(self, title: str, copies: int) -> Book: ...
    def find_book(self, title: str) -> Book: ...
    def set_shelf(self, title: str, shelf: str) -> None: ...
    def retire_book(self, title: str) -> None: ...
''', corpus="mem", path="lending.py")]


def _config(tmp_path: Path, proposer: str, **kw: Any) -> GenerateConfig:
    return GenerateConfig(proposer=proposer, n=len(DOCS), out=tmp_path / proposer, validation="inprocess",
                          max_retries=0, batch_size=2, **kw)


def test_a_template_library_is_a_third_scenario_tasks_and_stats_reports_it(tmp_path: Path) -> None:
    summary = run_generate(_config(tmp_path, "template"), progress=False, proposer=TemplateProposer(), docs=DOCS)
    assert summary.accepted == len(DOCS)  # through the gate, scenario tasks included
    lib = Library(tmp_path / "template")
    specs = [lib.load(r["id"]) for r in lib.rows()]
    assert all(s.spec_version == 2 and any(t.scenario is not None for t in s.tasks) for s in specs)
    assert _share(lib) >= 0.25


def test_a_model_written_blueprint_library_is_a_third_scenario_tasks(tmp_path: Path) -> None:
    blueprints = [_blueprint().to_json(), bp().to_json()]
    prop = LLMProposer("scripted", backend_options={"completions": blueprints}, structure="blueprint")
    cfg = _config(tmp_path, "llm", backend="scripted", proposer_options={"structure": "blueprint"})
    summary = run_generate(cfg, progress=False, proposer=prop, docs=[DOC, JS])
    assert summary.accepted == 2
    assert _share(Library(tmp_path / "llm")) >= 0.25

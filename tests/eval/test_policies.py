"""Policies: registry, scripted baselines, model policies over a backend, the tiny-model smoke test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eval.policies import POLICIES, ModelPolicy, PolicyFailure, ScriptedPolicy, make_policy, policy_help
from gym_envs.episode import Episode, TaskRef
from gym_envs.messages import openai_messages

TASK = TaskRef(suite="examples", env_id="bank-ledger", task_id="pay-rent", kind="execute", n_turns=1)
CALLS = [{"name": "find_accounts", "arguments": {"customer_name": "Maria"}},
         {"name": "transfer", "arguments": {"from_account_id": 1, "to_account_id": 2, "amount_cents": 5}}]


def _history(steps_in_turn: int = 0, messages: list[dict[str, Any]] | None = None, trial: int = 0,
             tools: list[dict[str, Any]] | None = None) -> Episode:
    """An episode as a policy sees it, in a given state."""
    ep = Episode(TASK, trial=trial, oracle=lambda turn: (CALLS, "Paid."))
    ep.messages = messages or [{"role": "system", "content": "s"}]
    ep.tools = tools or []
    ep.steps_in_turn = steps_in_turn
    return ep


def test_registry_names_and_lookup() -> None:
    """A model policy per model backend of the one backend registry, beside the scripted policy."""
    from envgen.backends import BACKENDS

    assert POLICIES.names() == ["openai", "scripted", "transformers", "vllm"]
    assert set(POLICIES.names()) == set(BACKENDS.names())
    assert policy_help().startswith("openai, transformers, vllm (a model through the backend of that name")
    assert make_policy("scripted:empty").label == "scripted:empty"
    assert make_policy("scripted", model="reference").label == "reference"
    with pytest.raises(KeyError, match="did you mean 'scripted'"):
        make_policy("scriptd")
    with pytest.raises(ValueError, match="neither"):
        make_policy("scripted", model="no-such-file.jsonl")
    with pytest.raises(ValueError, match="already names"):
        make_policy("scripted:empty", model="reference")


def test_reference_replays_calls_one_per_step_then_the_oracle_reply() -> None:
    p = ScriptedPolicy("reference", calls_per_step=1)
    assert p.act(_history(0)) == {"content": "", "tool_calls": [CALLS[0]]}
    assert p.act(_history(1)) == {"content": "", "tool_calls": [CALLS[1]]}
    assert p.act(_history(2)) == {"content": "Paid.", "tool_calls": []}
    together = make_policy("scripted", model="reference")  # default: a turn's calls in one step
    assert together.act(_history(0))["tool_calls"] == CALLS
    assert together.act(_history(1))["content"] == "Paid."


def test_empty_policy_always_ends_the_turn() -> None:
    assert make_policy("scripted:empty").act_batch([_history(0), _history(3)]) == [
        {"content": "", "tool_calls": []}] * 2


def test_replay_policy_from_actions_and_from_a_results_file(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    lines = [{"env_id": "bank-ledger", "task_id": "pay-rent", "trial": 1, "actions": ["a1", "a2"]},
             {"env_id": "bank-ledger", "task_id": "pay-rent", "trial": 0,
              "transcript": [{"role": "assistant", "raw": "r0"},
                             {"role": "assistant", "content": "c", "tool_calls": [
                                 {"id": "x", "type": "function",
                                  "function": {"name": "transfer", "arguments": "{}"}}]}]}]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    p = make_policy("scripted", model=str(path))
    assert p.label == "scripted:replay:rec.jsonl"
    assert p.act(_history(trial=1)) == "a1"
    seen = [{"role": "system", "content": "s"}, {"role": "assistant", "content": "a1"}]
    assert p.act(_history(messages=seen, trial=1)) == "a2"
    assert p.act(_history(messages=[*seen, {"role": "assistant"}], trial=1)) == {"content": "", "tool_calls": []}
    assert p.act(_history(trial=0)) == "r0"
    assert p.act(_history(messages=seen, trial=0)) == {
        "content": "c", "tool_calls": [{"name": "transfer", "arguments": "{}"}]}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "x"}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:1"):
        make_policy("scripted", model=str(bad))


class FakeBackend:
    """Records every generate call; answers from a function of the chat."""

    def __init__(self, answer: Any = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.answer = answer or (lambda chat: f"turns={len(chat)}")

    def generate(self, prompts: list[Any], **kwargs: Any) -> list[Any]:
        from envgen.backends import Completion

        self.calls.append({"prompts": prompts, **kwargs})
        out = []
        for p in prompts:
            a = self.answer(p)
            out.append(a if isinstance(a, Completion) else Completion(a, prompt_tokens=10, completion_tokens=3))
        return out


def test_model_policy_batches_records_usage_and_groups_by_tools() -> None:
    backend = FakeBackend()
    p = ModelPolicy("transformers", "m", backend=backend, max_new_tokens=7, temperature=0.5, seed=1)
    assert p.label == "transformers:m" and p.batched
    hs = [_history(), _history(messages=[{"role": "system", "content": "s"}, {"role": "user", "content": "u",
                                                                              "raw": "x"}])]
    assert p.act_batch(hs) == ["turns=1", "turns=2"] and p.chat is None  # this backend samples text only
    assert len(backend.calls) == 1 and "tools" not in backend.calls[0]
    assert backend.calls[0]["max_new_tokens"] == 7 and backend.calls[0]["temperature"] == 0.5
    assert "raw" not in backend.calls[0]["prompts"][1][1]
    assert hs[0].usage == {"prompt_tokens": 10, "completion_tokens": 3, "calls": 1}
    seeds = {c["seed"] for c in backend.calls}
    p.act_batch(hs)
    assert len({c["seed"] for c in backend.calls}) == 2 > len(seeds)  # a fresh seed per call
    t1, t2 = [{"type": "function", "function": {"name": "a"}}], [{"type": "function", "function": {"name": "b"}}]
    tooled = ModelPolicy("vllm", "m", backend=(b2 := FakeBackend()), pass_tools=True)
    tooled.act_batch([_history(tools=t1), _history(tools=t2), _history(tools=t1)])
    assert sorted(len(c["prompts"]) for c in b2.calls) == [1, 2]
    assert {json.dumps(c["tools"]) for c in b2.calls} == {json.dumps(t1), json.dumps(t2)}


def test_model_policy_turns_failed_completions_into_policy_failures_and_structured_calls() -> None:
    from envgen.backends import Completion

    answers = iter([Completion("", finish_reason="error", error="HTTP 500"),
                    Completion("", tool_calls=[{"name": "transfer", "arguments": {"x": 1}}])])
    p = ModelPolicy("openai", "m", backend=FakeBackend(lambda chat: next(answers)))
    failed, structured = p.act_batch([_history(), _history()])
    assert isinstance(failed, PolicyFailure) and "HTTP 500" in failed.message
    assert structured == {"content": "", "tool_calls": [{"name": "transfer", "arguments": {"x": 1}}]}
    with pytest.raises(ValueError, match="needs --model"):
        ModelPolicy("openai", None)


def test_openai_messages_keeps_only_answered_tool_messages() -> None:
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
            {"role": "assistant", "content": "", "raw": "<tool_call>..", "step": 1,
             "tool_calls": [{"id": "call_1_0", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_1_0", "name": "f", "content": "1"},
            {"role": "assistant", "content": "oops", "raw": "<tool_call>{bad"},
            {"role": "tool", "tool_call_id": None, "name": "parse_error", "content": "err"}]
    out = openai_messages(msgs)
    assert out[3] == {"role": "tool", "tool_call_id": "call_1_0", "content": "1"}
    assert "tool_calls" not in out[4] and "raw" not in out[4] and "raw" not in out[2]
    assert out[5] == {"role": "user", "content": "[tool output] err"}


def test_transformers_policy_smoke_with_a_tiny_model(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("trl")
    from eval.runner import run_episodes
    from eval.suites import SpecSuite
    from gym_envs.spec import parse_spec
    from tests.fixtures.library_spec import SPEC
    from training.tiny_model import build_tiny_qwen3

    build_tiny_qwen3(tmp_path / "tiny")
    policy = make_policy("transformers", model=str(tmp_path / "tiny"), max_new_tokens=4, temperature=0.0)
    suite = SpecSuite("tiny", [parse_spec(SPEC)], executor="inprocess")
    try:
        records = run_episodes(suite, [(t, trial) for t in suite.tasks() for trial in range(2)], policy,
                               concurrency=2, max_turn_steps=1)
    finally:
        policy.close()
        suite.close()
    assert policy.label == f"transformers:{tmp_path / 'tiny'}"
    assert len(records) == 2 and all(r["error"] is None for r in records)
    assert all(r["usage"]["completion_tokens"] > 0 and r["usage"]["calls"] >= 1 for r in records)
    assert all(m["role"] != "assistant" or "raw" in m for r in records for m in r["transcript"])


def test_a_misspelt_policy_option_names_the_close_match() -> None:
    """Policy options and the backend's own (under ``backend_options``) are typed: a typo is refused before any
    model loads, naming what was meant."""
    from corpora.errors import UnknownNameError

    with pytest.raises(UnknownNameError, match="'max_new_token' for policy 'transformers'; did you mean "
                                               "'max_new_tokens'"):
        make_policy("transformers", model="m", max_new_token=5)
    with pytest.raises(UnknownNameError, match="'calls_per_stp' for policy 'scripted'; did you mean 'calls_per_step'"):
        make_policy("scripted", calls_per_stp=1)
    with pytest.raises(UnknownNameError, match="'base_ulr' for backend 'openai'; did you mean 'base_url'"):
        make_policy("openai", model="m", backend_options={"base_ulr": "http://localhost:1"})

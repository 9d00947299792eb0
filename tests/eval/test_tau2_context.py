"""A model's context window bounds what it is asked to read: a τ² prompt longer than the window fails the episode
with a message saying so (instead of a model reading past its positions), and a completion ends at the window."""

from __future__ import annotations

import json

import pytest

from eval.runner import EvalConfig, run_eval
from tests.fixtures.tau2 import needs_tau2

pytest.importorskip("transformers")
pytest.importorskip("trl")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from training.tiny_model import build_tiny_qwen3

    return build_tiny_qwen3(tmp_path_factory.mktemp("tiny") / "m")


def _backend(path):
    from envgen.backends import make_backend

    return make_backend("transformers", model=str(path), device="cpu")


def test_the_backend_reads_the_window_and_ends_a_completion_there(tiny) -> None:
    backend = _backend(tiny)
    window = json.loads((tiny / "config.json").read_text())["max_position_embeddings"]
    assert backend.context_window == window
    backend.context_window = 40  # a small window: the same rule at any size
    near, full = [5] * 36, [5] * 40
    c_near, c_full = backend.generate_tokens([near, full], max_new_tokens=10, temperature=0.0)
    assert c_near.ok and 1 <= c_near.completion_tokens <= 4
    assert not c_full.ok and "does not fit the context window" in (c_full.error or "") and "40 tokens" in c_full.error
    chat = [{"role": "user", "content": "word " * 60}]
    (long,) = backend.generate([chat], max_new_tokens=8, temperature=0.0)
    assert not long.ok and "does not fit the context window" in (long.error or "")


@needs_tau2
def test_a_tau2_prompt_over_the_models_window_fails_the_episode_saying_so(tiny, tmp_path) -> None:
    """The retail system prompt (policy and 15 tool schemas) is far longer than the tiny model's window: the episode
    is a policy failure naming both lengths, no token is generated, and the run still writes its report."""
    config = EvalConfig(policy="transformers", model=str(tiny), suites=["tau2:retail"], limit=1, max_turn_steps=1,
                        out=tmp_path / "run", progress=False, n_boot=10, executor="inprocess",
                        policy_opts={"max_new_tokens": 6, "temperature": 0.0, "backend_options": {"device": "cpu"}})
    run = run_eval(config)
    (rec,) = run.records
    assert rec["error_stage"] == "policy" and "does not fit the model's context window of 2048 tokens" in rec["error"]
    assert rec["usage"]["completion_tokens"] == 0 and rec["passed"] is False
    assert (tmp_path / "run" / "report.md").is_file()


def test_an_episode_ends_when_its_tokens_reach_the_window(tiny, tmp_path) -> None:
    """A prompt that fits leaves the completion what is left of the window: the episode ends ``max_tokens`` there."""
    from eval.policies import make_policy
    from eval.runner import play_suite
    from eval.suites import make_suite

    suite = make_suite("examples", executor="inprocess")
    policy = make_policy("transformers", str(tiny), max_new_tokens=16, backend_options={"device": "cpu"})
    try:
        task = suite.tasks()[0]
        (probe,) = play_suite(suite, [(task, 0)], policy, max_turn_steps=1)
        prompt = len(probe.prompt_ids)
        policy.context_window = prompt + 5  # less room than one action's 16 tokens
        (ep,) = play_suite(suite, [(task, 0)], policy, max_turn_steps=6)
    finally:
        policy.close()
        suite.close()
    assert ep.status == "max_tokens" and len(ep.prompt_ids) == prompt and len(ep.completion_ids) == 5
    assert ep.error is None

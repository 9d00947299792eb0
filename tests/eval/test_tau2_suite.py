"""``envwright eval --suite tau2:DOMAIN``: the scripted reference passes, nothing passes doing nothing, pass^k and
τ²'s splits are reported."""

from __future__ import annotations

import json

import pytest

from eval.runner import EvalConfig, run_eval
from eval.suites import Tau2Suite, make_suite
from eval.tau2 import _backend
from tests.fixtures.tau2 import needs_tau2

pytestmark = needs_tau2


def _run(tmp_path, model: str, **kw):
    config = EvalConfig(policy="scripted", model=model, suites=["tau2:retail"], limit=3, k=2, executor="inprocess",
                        out=tmp_path / model, progress=False, n_boot=50, **kw)
    return run_eval(config)


def test_the_reference_scores_every_evaluable_task_and_doing_nothing_none(tmp_path) -> None:
    ref = _run(tmp_path, "reference", agreement=True)
    s = ref.summary["suites"]["tau2:retail"]
    assert s["tasks"] == 3 and s["pass@1"] == 1.0 and s["pass^k"]["2"]["value"] == 1.0
    assert set(s["by_split"]) <= {"train", "test"} and sum(b["tasks"] for b in s["by_split"].values()) == 3
    info = ref.summary["runs"]["tau2:retail"]
    assert info["tau2"]["played"] == 3 and info["tau2"]["evaluable"] == 3
    agreement = info["agreement"]
    assert agreement["agrees"] and agreement["benchmark"]["verdict_agreement_all"] == 1.0
    assert any("agreement with τ²" in n for n in info["notes"])
    report = (tmp_path / "reference" / "report.md").read_text(encoding="utf-8")
    assert "split train" in report and "agreement with τ²" in report
    empty = _run(tmp_path, "empty")
    assert empty.summary["suites"]["tau2:retail"]["pass@1"] == 0.0


def test_the_heldout_split_is_taus_test_split() -> None:
    suite = make_suite("tau2:airline", split="heldout", limit=2, executor="inprocess")
    try:
        tasks = suite.tasks()
        test_ids = set(_backend.splits("airline")["test"])
        assert len(tasks) == 2 and all(t.split == "test" and t.meta["tau2_id"] in test_ids for t in tasks)
    finally:
        suite.close()


def test_an_unknown_domain_is_refused_with_the_close_match() -> None:
    with pytest.raises(ValueError, match="did you mean 'airline'"):
        Tau2Suite("airlines")


def test_telecom_is_refused_with_the_reason_measured_from_taus_data() -> None:
    with pytest.raises(ValueError, match="not converted") as info:
        make_suite("tau2:telecom")
    tasks = _backend.tasks("telecom")
    user = sum(a.requestor == "user" for t in tasks for a in t.evaluation_criteria.actions or [])
    assert f"all {len(tasks)} tasks" in str(info.value) and f"{user} of the" in str(info.value)


def test_a_model_policy_plays_a_task_end_to_end_on_cpu(tmp_path) -> None:
    """``envwright eval --policy transformers --suite tau2:retail`` with a tiny random Qwen3: the policy document
    and the tools are its system prompt, the scenario its first user message, and the episode is scored."""
    pytest.importorskip("transformers")
    pytest.importorskip("trl")
    from eval.tau2.convert import converted
    from training.tiny_model import build_tiny_qwen3

    tiny = build_tiny_qwen3(tmp_path / "tiny")
    config_file = tiny / "config.json"  # a window the retail prompt fits (the random model reads any position)
    config_file.write_text(json.dumps({**json.loads(config_file.read_text()), "max_position_embeddings": 32768}))
    config = EvalConfig(policy="transformers", model=str(tiny), suites=["tau2:retail"], limit=1,
                        max_turn_steps=1, out=tmp_path / "run", progress=False, n_boot=10,
                        policy_opts={"max_new_tokens": 6, "temperature": 0.0})
    run = run_eval(config)
    (rec,) = run.records
    assert rec["error"] is None and rec["usage"]["completion_tokens"] > 0 and rec["score"]["checks"] < 1.0
    spec = converted("retail", (rec["task_id"],)).spec
    system, user = rec["transcript"][0], rec["transcript"][1]
    assert system["role"] == "system" and spec.policy[0].text in system["content"]
    assert all(t.name in system["content"] for t in spec.tools)
    assert user == {"role": "user", "content": spec.tasks[0].turns[0].instruction}
    assert run.summary["suites"]["tau2:retail"]["episodes"] == 1

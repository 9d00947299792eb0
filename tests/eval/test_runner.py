"""Runner: scripted baselines on the shipped examples, checker agreement, concurrency modes,
failures as data, labelled-pool write-back, BFCL through the same loop."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from eval.policies import ModelPolicy, Policy, ScriptedPolicy
from eval.runner import EvalConfig, checker_agreement, run_episodes, run_eval
from eval.suites import ExamplesSuite
from gym_envs.episode import Episode
from gym_envs.spec import parse_spec
from tests.fixtures.library_spec import SPEC


def _config(**kw: Any) -> EvalConfig:
    base = {"suites": ["examples"], "executor": "inprocess", "progress": False, "n_boot": 200, "concurrency": 4}
    return EvalConfig(**(base | kw))


@pytest.fixture(scope="module")
def reference_run():
    return run_eval(_config(policy="scripted", model="reference"))


@pytest.fixture(scope="module")
def empty_run():
    return run_eval(_config(policy="scripted:empty"))


def _changes_state(rec: dict[str, Any]) -> bool:
    return any((c.get("changes") or 0) > 0 for t in rec["turns"] for c in t["calls"])


def test_reference_passes_every_example_task(reference_run) -> None:
    s = reference_run.summary["suites"]["examples"]
    assert s["pass@1"] == 1.0 and s["errors"] == 0 and s["tasks"] == s["episodes"] >= 6
    assert all(b["pass@1"] == 1.0 for b in s["by_kind"].values())
    assert reference_run.summary["run"]["policy"] == "reference"
    d = s["diagnostics"]
    assert d["ask_turns"] > 0 and d["fabricated"] == 0 and d["asked_rate"] == 1.0
    assert d["decline_turns"] > 0 and d["declined_rate"] == 1.0


def test_empty_fails_every_state_changing_example_task(reference_run, empty_run) -> None:
    changing = {r["episode_id"] for r in reference_run.records if _changes_state(r)}
    assert changing
    empty = {r["episode_id"]: r for r in empty_run.records}
    assert not any(empty[e]["passed"] for e in changing)
    assert empty_run.summary["suites"]["examples"]["pass@1"] == 0.0


def test_checker_agreement_on_the_shipped_examples() -> None:
    suite = ExamplesSuite(executor="inprocess")
    try:
        report = checker_agreement(suite, concurrency=4)
    finally:
        suite.close()
    assert report["agrees"] and not report["violations"]
    assert report["reference_pass_rate"] == 1.0 and report["empty_pass_rate_state_changing"] == 0.0
    assert 0 < report["state_changing"] <= report["tasks"]


def test_runs_are_deterministic_and_lockstep_matches_threads(reference_run) -> None:
    suite = ExamplesSuite(executor="inprocess")
    jobs = [(t, 0) for t in suite.tasks()[:8]]
    try:
        threads = run_episodes(suite, jobs, ScriptedPolicy("reference"), mode="threads")
        lockstep = run_episodes(suite, jobs, ScriptedPolicy("reference"), mode="lockstep", concurrency=3)
    finally:
        suite.close()

    def strip(recs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        return {r["episode_id"]: {k: v for k, v in r.items() if k != "seconds"} for r in recs}

    assert strip(threads) == strip(lockstep)
    first = strip(reference_run.records)
    assert strip(threads) == {e: first[e] for e in strip(threads)}


def test_lockstep_on_worker_processes_batches_env_steps_and_matches_threads() -> None:
    """Lockstep steps generated environments together (ToolEnvAdapter.step_many: one round trip per
    worker for all their tool calls); the records are those of one-at-a-time threads."""
    from gym_envs.sandbox import WorkerExecutor
    from tests.fixtures.trips import counted_trips

    ex = WorkerExecutor(2)
    trips = counted_trips(ex)
    suite = ExamplesSuite(executor=ex)
    jobs = [(t, 0) for t in suite.tasks()[:6]]
    try:
        threads = run_episodes(suite, jobs, ScriptedPolicy("reference"), mode="threads")
        trips.clear()
        lockstep = run_episodes(suite, jobs, ScriptedPolicy("reference"), mode="lockstep", concurrency=6)
    finally:
        suite.close()
        ex.close()

    def strip(recs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        return {r["episode_id"]: {k: v for k, v in r.items() if k != "seconds"} for r in recs}

    assert strip(lockstep) == strip(threads) and all(r["passed"] for r in lockstep)
    calls = sum(len(t["calls"]) for r in lockstep for t in r["turns"])
    # every call and every episode's opening travelled (the engine resets its episodes together too), several
    # per round trip
    assert max(trips) > 1 and sum(trips) == calls + len(jobs)


class StepFailures(Policy):
    """Valid actions for some episodes, a policy failure for one, and for another an action that is neither
    text nor a dict."""

    label = "step-failures"
    batched = True

    def act_batch(self, histories: list[Episode]) -> list[Any]:
        from eval.policies import PolicyFailure

        return [PolicyFailure("no answer") if k == 1 else _Unprintable() if k == 2 else "I give up."
                for k in range(len(histories))]


class _Unprintable:
    """An action that is neither text nor a dict: the agent sees a parse error (parsing never raises)."""


def test_lockstep_failures_in_a_batch_are_data() -> None:
    suite = ExamplesSuite(executor="inprocess")
    jobs = [(t, 0) for t in suite.tasks()[:4]]
    try:
        recs = run_episodes(suite, jobs, StepFailures(), mode="lockstep", concurrency=4)
    finally:
        suite.close()
    errors = sorted(str(r["error"]) for r in recs if r["error"])
    assert any("policy failed: no answer" in e for e in errors)
    assert not any("step failed" in e for e in errors)  # a parse error observation, not a failed step
    assert sum(r["error"] is None for r in recs) >= 2 and not any(r["passed"] for r in recs)


class CountingBackend:
    """A model that always declines; counts the batches it is asked for."""

    def __init__(self) -> None:
        self.batches: list[int] = []

    def generate(self, prompts: list[Any], **kwargs: Any) -> list[Any]:
        from envgen.backends import Completion

        self.batches.append(len(prompts))
        return [Completion("Sorry, I cannot do that.", prompt_tokens=5, completion_tokens=2) for _ in prompts]


def test_lockstep_batches_active_episodes_for_model_policies() -> None:
    backend = CountingBackend()
    run = run_eval(_config(policy="openai", k=2, concurrency=8, limit=5),
                   policy=ModelPolicy("openai", "fake", backend=backend))
    assert len(run.records) == 10 and max(backend.batches) == 8
    assert sum(backend.batches) == sum(r["steps"] for r in run.records)
    assert all(r["usage"]["completion_tokens"] == 2 * r["steps"] for r in run.records)


class BrokenPolicy(Policy):
    label = "broken"

    def act_batch(self, histories: list[Episode]) -> list[Any]:
        if histories[0].task.task_id.startswith("p"):
            raise RuntimeError("model server unreachable")
        return ["I give up."] * len(histories)


def test_policy_failures_are_recorded_not_raised() -> None:
    run = run_eval(_config(policy="broken", limit=8, mode="threads"), policy=BrokenPolicy())
    errors = [r for r in run.records if r["error"]]
    assert errors and all("model server unreachable" in r["error"] and not r["passed"] for r in errors)
    assert len(errors) < len(run.records) == 8
    assert run.summary["suites"]["examples"]["errors"] == len(errors)


def test_config_is_validated() -> None:
    for bad, match in [({"k": 0}, "k must be"), ({"split": "test"}, "split"), ({"suites": []}, "at least one"),
                       ({"mode": "fast"}, "mode"), ({"concurrency": 0}, "concurrency")]:
        with pytest.raises(ValueError, match=match):
            EvalConfig(**bad)


# -- labelled pools ---------------------------------------------------------------------------------
class GiveUp(Policy):
    """Deliberately fails every task."""

    label = "give-up"

    def act_batch(self, histories: list[Episode]) -> list[Any]:
        return ["I give up."] * len(histories)


class SolvesOneEnv(ScriptedPolicy):
    """The reference on env lib-0, nothing elsewhere."""

    def __init__(self) -> None:
        super().__init__("reference")
        self.label = "solves-lib-0"

    def _act(self, h: Episode) -> Any:
        return super()._act(h) if h.task.env_id == "lib-0" else "No."


def _library(root: Path):
    from envgen.library import Library

    lib = Library(root)
    for i in range(3):
        spec = copy.deepcopy(SPEC)
        spec["id"] = f"lib-{i}"
        spec["source"] = {"corpus": "test", "doc_id": f"doc-{i}"}
        spec["tasks"][0]["turns"][0]["instruction"] = f"Case {i}: member 7 wants to borrow 'Dune' ({i})."
        lib.add(parse_spec(spec))
    return lib


def test_library_write_back_and_suspicious_tasks(tmp_path: Path) -> None:
    lib = _library(tmp_path / "lib")
    suite = f"library:{tmp_path / 'lib'}"
    run = run_eval(_config(suites=[suite], k=2), policy=GiveUp())
    assert run.summary["suites"][suite]["pass@1"] == 0.0
    stats = {(r["env_id"], r["policy"]): r for r in lib.task_stats()}
    assert stats[("lib-0", "give-up")]["n"] == 2 and stats[("lib-0", "give-up")]["passes"] == 0
    assert stats[("lib-0", "give-up")]["reference_passes"] is True
    assert stats[("lib-0", "reference")]["passes"] == stats[("lib-0", "reference")]["n"] == 1
    flagged = {(s["env_id"], s["task_id"]) for s in run.summary["runs"][suite]["library"]["suspicious"]}
    assert flagged == {(f"lib-{i}", "t0") for i in range(3)}
    assert {(s["env_id"], s["task_id"]) for s in lib.suspicious_tasks()} == flagged
    assert lib.get_row("lib-0")["solve_rate"] is not None

    run2 = run_eval(_config(suites=[suite]), policy=SolvesOneEnv())
    assert run2.summary["suites"][suite]["pass@1"] == pytest.approx(1 / 3)
    assert {s["env_id"] for s in lib.suspicious_tasks()} == {"lib-1", "lib-2"}
    assert sum(r["policy"] == "reference" for r in lib.task_stats()) == 3  # the reference is recorded once


def test_empty_baseline_does_not_write_back_by_default(tmp_path: Path) -> None:
    lib = _library(tmp_path / "lib")
    run = run_eval(_config(suites=[f"library:{tmp_path / 'lib'}"], policy="scripted:empty"))
    assert "library" not in next(iter(run.summary["runs"].values())) and lib.task_stats() == []


# -- BFCL ---------------------------------------------------------------------------------------------
def test_bfcl_suite_through_the_runner() -> None:
    pytest.importorskip("bfcl_eval")
    ref = run_eval(_config(policy="scripted", model="reference", suites=["bfcl:base", "bfcl:miss_param"], limit=4,
                           agreement=True))
    for name in ("bfcl:base", "bfcl:miss_param"):
        assert ref.summary["suites"][name]["pass@1"] == 1.0
        assert ref.summary["runs"][name]["agreement"]["agrees"]
        assert ref.summary["runs"][name]["episodes_per_s"] > 0
    assert ref.summary["suites"]["bfcl:miss_param"]["diagnostics"]["asked_rate"] == 1.0
    empty = run_eval(_config(policy="scripted:empty", suites=["bfcl:base"], limit=4))
    assert empty.summary["suites"]["bfcl:base"]["pass@1"] == 0.0


def test_replaying_a_recorded_run_reproduces_it(reference_run, tmp_path: Path) -> None:
    import json

    path = tmp_path / "recorded.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in reference_run.records))
    replay = run_eval(_config(policy="scripted", model=str(path)))
    assert replay.summary["run"]["policy"] == "scripted:replay:recorded.jsonl"
    assert replay.summary["suites"]["examples"]["pass@1"] == 1.0
    assert [r["steps"] for r in replay.records] == [r["steps"] for r in reference_run.records]


def test_failures_are_typed_by_stage_and_a_failed_close_is_recorded(monkeypatch) -> None:
    """The evaluator's boundary (Episode.fail): a record says where its episode failed (``error_stage``); an
    episode that cannot be closed after scoring keeps its score and says so (``close_error``)."""
    from eval.errors import FailureStage, PolicyFailure, episode_failure
    from gym_envs.episode_env import ToolEnvAdapter

    def broken_close(self) -> None:
        raise OSError("the worker is gone")

    monkeypatch.setattr(ToolEnvAdapter, "close", broken_close)
    suite = ExamplesSuite(executor="inprocess")
    try:
        recs = run_episodes(suite, [(suite.tasks()[0], 0)], ScriptedPolicy("reference"), mode="threads")
        failed = run_episodes(suite, [(suite.tasks()[0], 0)], _AlwaysRaises(), mode="threads")
    finally:
        suite.close()
    assert recs[0]["passed"] and recs[0]["close_error"] == "OSError: the worker is gone"
    assert recs[0]["error"] is None and recs[0]["error_stage"] is None
    assert failed[0]["error_stage"] == FailureStage.POLICY == "policy" and not failed[0]["passed"]
    assert failed[0]["error"] == "policy failed: RuntimeError: model server unreachable"
    assert episode_failure(FailureStage.STEP, KeyError("x")) == "step failed: KeyError: 'x'"
    assert episode_failure(FailureStage.POLICY, PolicyFailure("no answer")) == "policy failed: no answer"
    assert episode_failure(FailureStage.BACKEND) == "no completion from the model"


class _AlwaysRaises(Policy):
    label = "always-raises"

    def act_batch(self, histories: list[Episode]) -> list[Any]:
        raise RuntimeError("model server unreachable")


def test_every_suite_opens_before_any_runs_so_a_bad_one_costs_no_work(monkeypatch, tmp_path: Path) -> None:
    """A suite that cannot open (a typo, a missing library, a refused benchmark domain) fails the run before the
    policy is built or any episode of the suites before it is played."""
    import eval.runner as runner

    played: list[str] = []
    built: list[str] = []
    monkeypatch.setattr(runner, "run_episodes", lambda suite, *a, **k: played.append(suite.name) or [])
    monkeypatch.setattr(runner, "make_policy", lambda *a, **k: built.append("policy") or ScriptedPolicy("reference"))
    config = _config(policy="scripted", model="reference", suites=["examples", f"library:{tmp_path / 'none'}"],
                     out=tmp_path / "run")
    with pytest.raises(FileNotFoundError, match="no library at"):
        run_eval(config)
    assert played == [] and built == [] and not (tmp_path / "run" / "results.jsonl").exists()

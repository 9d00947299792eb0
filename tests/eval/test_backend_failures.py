"""A model backend that gives no completion is not a model that fails: such episodes are counted apart, left
out of every score and of the library's solve rates, said in the summary and the reports, and a run with
nothing else exits 1 (a run with some warns)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from eval.policies import ModelPolicy
from eval.runner import EvalConfig, run_eval
from tests.eval.test_runner import _library


class DownBackend:
    """A server that is down for the prompts whose system prompt mentions ``down`` (all of them by default)."""

    def __init__(self, down: str = "", raises: bool = False) -> None:
        self.down, self.raises = down, raises

    def generate(self, prompts: list[Any], **kwargs: Any) -> list[Any]:
        from envgen.backends import Completion

        if self.raises:
            raise ConnectionRefusedError("[Errno 111] Connection refused")
        return [Completion("", finish_reason="error", error="Connection refused")
                if self.down in json.dumps(p) else Completion("Sorry, I cannot do that.") for p in prompts]


def _run(tmp_path: Path, backend: Any, **kw: Any) -> Any:
    base = {"suites": ["examples"], "executor": "inprocess", "progress": False, "n_boot": 50, "limit": 3,
            "out": tmp_path / "run"}
    return run_eval(EvalConfig(policy="openai", **(base | kw)), policy=ModelPolicy("openai", "m", backend=backend))


def test_a_run_whose_backend_is_down_scores_nothing_and_says_so(tmp_path: Path) -> None:
    for raises in (False, True):  # an error completion, or a generate call that raises
        run = _run(tmp_path / str(raises), DownBackend(raises=raises))
        s = run.summary["suites"]["examples"]
        assert s["backend_failures"] == 3 and s["episodes"] == 0 and s["tasks"] == 0
        assert s["pass@1"] is None  # not 0.000: nothing was measured
        assert run.summary["run"]["backend_failures"] == 3
        assert "Connection refused" in run.summary["run"]["backend_error"]
        assert all(r["error_stage"] == "backend" for r in run.records)
        md = (tmp_path / str(raises) / "run" / "report.md").read_text()
        assert "no episode reached the model" in md and "Connection refused" in md


def test_some_backend_failures_are_counted_apart_from_the_model_s_failures(tmp_path: Path) -> None:
    run = _run(tmp_path, DownBackend(down="circulation desk"), limit=None)  # the library-loans prompts fail
    s = run.summary["suites"]["examples"]
    failed = [r for r in run.records if r["error_stage"] == "backend"]
    assert 0 < len(failed) < len(run.records)
    assert s["backend_failures"] == len(failed) and s["episodes"] == len(run.records) - len(failed)
    assert s["pass@1"] is not None and s["errors"] == 0  # the model's own failures: none raised
    assert {r["env_id"] for r in failed} == {"library-loans"}


def test_backend_failures_are_not_written_to_a_library(tmp_path: Path) -> None:
    lib = _library(tmp_path / "lib")
    run_eval(EvalConfig(policy="openai", suites=[f"library:{tmp_path / 'lib'}"], executor="inprocess",
                        progress=False, n_boot=50), policy=ModelPolicy("openai", "m", backend=DownBackend()))
    assert [r for r in lib.task_stats() if r["policy"] != "reference"] == []
    assert lib.get_row("lib-0")["solve_rate"] is None  # no solve rate of 0 from a server that was down


def test_the_eval_command_exits_1_when_no_episode_reached_the_model(tmp_path: Path) -> None:
    from envgen.cli import cli

    out = tmp_path / "run"
    result = CliRunner().invoke(cli, ["eval", "--policy", "openai", "--model", "m", "--suite", "examples",
                                      "--limit", "2", "--out", str(out), "--executor", "inprocess",
                                      "--no-progress", "--backend-option", "base_url=http://127.0.0.1:9/v1",
                                      "--backend-option", "max_retries=0", "--bootstrap", "50"])
    assert result.exit_code == 1, result.output
    assert "nothing was measured" in result.output and "no episode reached the model" in result.output
    assert (out / "results.jsonl").is_file()  # the run folder is kept, with the errors


def test_the_eval_command_warns_when_some_episodes_failed_in_the_backend(tmp_path: Path, monkeypatch) -> None:
    from envgen.cli import cli
    from eval import policies

    real = policies.ModelPolicy.__init__

    def init(self: Any, name: str, model: Any, **opts: Any) -> None:
        real(self, name, model, backend=DownBackend(down="circulation desk"),
             **{k: v for k, v in opts.items() if k != "backend"})

    monkeypatch.setattr(policies.ModelPolicy, "__init__", init)
    result = CliRunner().invoke(cli, ["eval", "--policy", "openai", "--model", "m", "--suite", "examples",
                                      "--out", str(tmp_path / "run"), "--executor", "inprocess", "--no-progress",
                                      "--bootstrap", "50"])
    assert result.exit_code == 0, result.output
    assert "warning:" in result.output and "failed in the model backend" in result.output


def test_the_eval_command_takes_backend_options_for_model_policies_only(tmp_path: Path) -> None:
    from envgen.cli import cli

    result = CliRunner().invoke(cli, ["eval", "--policy", "scripted", "--suite", "examples", "--out",
                                      str(tmp_path / "run"), "--backend-option", "device=cpu"])
    assert result.exit_code == 2 and "the scripted policy has none" in result.output
    result = CliRunner().invoke(cli, ["eval", "--policy", "openai", "--model", "m", "--suite", "examples", "--out",
                                      str(tmp_path / "run"), "--backend-option", "base_ulr=http://127.0.0.1:9/v1"])
    assert result.exit_code == 1 and "did you mean 'base_url'" in result.output
    help_text = CliRunner().invoke(cli, ["eval", "--help"]).output
    assert "openai, transformers, vllm" in " ".join(help_text.split())  # from the backend registry

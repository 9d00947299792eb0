"""``envwright train ...`` and ``envwright plot``: config errors, bundled configs, a CLI run, plots."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from training.cli import train

runner = CliRunner()


def test_configs_listed() -> None:
    result = runner.invoke(train, ["configs"])
    assert result.exit_code == 0
    assert "smoke-cpu.yaml" in result.output and "qwen3-8b-multigpu.yaml" in result.output


def test_config_errors_exit_2_with_the_fix(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: {name_or_path: x}\nsolver: {num_generatons: 4}\n")
    result = runner.invoke(train, ["selfplay", "--config", str(bad)])
    assert result.exit_code == 2
    assert "did you mean 'solver.num_generations'" in result.output
    result = runner.invoke(train, ["solver", "--config", "smoke-cpu.yaml", "--set", "rollout.max_steps=0"])
    assert result.exit_code == 2 and "max_steps must be >= 1" in result.output
    result = runner.invoke(train, ["distill", "--config", str(tmp_path / "missing.yaml")])
    assert result.exit_code == 2 and "no config file" in result.output


def test_distill_command_runs(tmp_path: Path, tiny_dir: Path) -> None:
    out = tmp_path / "run"
    result = runner.invoke(train, [
        "distill", "--config", "smoke-cpu.yaml", "--output-dir", str(out),
        "--set", f"model.name_or_path={tiny_dir}", "--set", "distill.episodes_per_iteration=1",
        "--set", "rollout.max_turn_tokens=4", "--set", "rollout.max_completion_tokens=16",
        "--set", "solver.envs=[examples:library-loans]", "--set", "run.report_to=[]", "--engine", "transformers"])
    assert result.exit_code == 0, result.output
    rec = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert rec["iteration"] == 0 and rec["student"]["statuses"]
    assert rec["generation"]["engine"] == "transformers" and set(rec["generation"]["logprob_gap"]) == {
        "mean", "max", "tokens"}
    assert (out / "checkpoints" / "round-0000" / "model").is_dir()


def test_engine_option_sets_the_config_key_and_a_missing_vllm_says_how_to_fix(tmp_path: Path,
                                                                               tiny_dir: Path) -> None:
    from training.cli import _config
    from training.generation import vllm_available

    cfg = _config(Path("smoke-cpu"), (f"model.name_or_path={tiny_dir}",), None, tmp_path / "a", engine="vllm")
    assert cfg.generation.engine == "vllm"
    if vllm_available():
        return
    result = runner.invoke(train, ["distill", "--config", "smoke-cpu.yaml", "--output-dir", str(tmp_path / "b"),
                                   "--set", f"model.name_or_path={tiny_dir}", "--engine", "vllm"])
    assert result.exit_code == 2 and "pip install 'envwright[vllm]'" in result.output
    assert "--engine transformers" in result.output
    result = runner.invoke(train, ["selfplay", "--config", "smoke-cpu.yaml", "--engine", "hf"])
    assert result.exit_code == 2 and "'transformers'" in result.output  # one name per engine


def test_plot_writes_pngs(tmp_path: Path) -> None:
    from envgen.cli import cli

    rows = [{"step": r, "round": r, "solver": {"reward": 0.2 * r, "pass_rate": 0.1 * r,
                                                "solve_rate_histogram": {"edges": [0, 0.5, 1], "counts": [1, r]}},
             "proposer": {"reward": 0.1, "validity": 0.5}, "throughput": {"tokens_per_second": 100.0},
             "time": {"generation": 1.0, "environment": 0.5, "validation": 0.2, "update": 0.7},
             "update": {"loss": 1.0 / (r + 1)}} for r in range(3)]
    (tmp_path / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    result = CliRunner().invoke(cli, ["plot", str(tmp_path)])
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in (tmp_path / "plots").glob("*.png"))
    assert names == ["loss.png", "rewards.png", "solve_rate.png", "solve_rate_histogram.png", "throughput.png",
                     "time.png", "validity.png"]
    result = CliRunner().invoke(cli, ["plot", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "no metrics.jsonl" in result.output


def test_root_command_loads_train_group() -> None:
    from envgen.cli import cli

    result = CliRunner().invoke(cli, ["train", "--help"])
    assert result.exit_code == 0
    assert "selfplay" in result.output and "solver" in result.output and "distill" in result.output

"""``envwright train``/``plot`` as the README runs them: bundled configs by name, run folders that are
never mixed, the tiny model built on demand, plots that read well."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from training.cli import train
from training.config import load_config
from training.metrics import curves_figure, histogram_figure
from training.tiny_model import is_tiny_model_path

runner = CliRunner()


def test_a_bundled_config_resolves_by_name() -> None:
    assert load_config("smoke-cpu").model.name_or_path == "runs/tiny-qwen3"
    assert load_config("smoke-cpu.yaml").model.name_or_path == "runs/tiny-qwen3"
    result = runner.invoke(train, ["selfplay", "--config", "smoke-cpuu"])
    assert result.exit_code == 2 and "bundled configs (by name): " in result.output and "smoke-cpu" in result.output


def test_a_run_folder_with_a_run_is_refused_unless_resumed_or_overwritten(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"step": 0}\n')
    (run / "notes.txt").write_text("mine")
    args = ["selfplay", "--config", "smoke-cpu", "--output-dir", str(run),
            "--set", f"model.name_or_path={tmp_path / 'model'}"]
    result = runner.invoke(train, args)
    assert result.exit_code == 2 and "already holds a run" in result.output and "--resume latest" in result.output
    assert (run / "metrics.jsonl").read_text() == '{"step": 0}\n'
    result = runner.invoke(train, [*args, "--resume", "latest", "--overwrite"])
    assert result.exit_code == 2 and "give one of them" in result.output
    from training.cli import _claim_run_folder

    for name in ("checkpoints", "skills", "skill-rounds"):
        (run / name).mkdir()
    (run / "episodes.jsonl").write_text('{"round": 0}\n')
    _claim_run_folder(run, resume=False, overwrite=True)
    assert not [p.name for p in run.iterdir() if p.name != "notes.txt"]  # self-play's episodes and skills too
    assert (run / "notes.txt").read_text() == "mine"  # only the run's own artefacts go


def test_the_tiny_model_is_built_on_demand(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    target = tmp_path / "runs" / "tiny-qwen3"
    assert is_tiny_model_path(str(target)) and not is_tiny_model_path("Qwen/Qwen3-0.6B")
    result = runner.invoke(train, ["tiny-model", "--out", str(target)])
    assert result.exit_code == 0, result.output
    assert (target / "config.json").is_file() and not is_tiny_model_path(str(target))
    from training.cli import _tiny_model_on_demand

    other = tmp_path / "elsewhere" / "tiny-qwen3"
    _tiny_model_on_demand(load_config("smoke-cpu", [f"model.name_or_path={other}"]))
    assert (other / "tokenizer.json").is_file()


def test_curves_have_whole_round_ticks_and_the_legend_beside_them() -> None:
    fig = curves_figure("Rewards", {"solver/reward": [(0, 0.1), (1, 0.2), (2, 0.4)],
                                    "proposer/reward": [(0, 0.3), (1, 0.3), (2, 0.5)]})
    fig.canvas.draw()
    ax = fig.axes[0]
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)
    assert ax.get_legend().get_window_extent().x0 >= ax.get_window_extent().x1


def test_the_solve_rate_histogram_is_drawn_as_bars() -> None:
    hist = [(r, {"edges": [0, 0.25, 0.5, 0.75, 1.0], "counts": [r, 2, 3, 1]}) for r in range(5)]
    ax = histogram_figure(hist).axes[0]
    assert not ax.lines and len(ax.patches) == 4 * 4  # the last four rounds, four bins each
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [f"round {r}" for r in range(1, 5)]
    empty = histogram_figure([(0, {"edges": [0, 0.5, 1.0], "counts": [0, 0]})]).axes[0]
    assert empty.get_ylim()[0] == 0 and all(float(t).is_integer() for t in empty.get_yticks())


def test_plot_command_still_writes_every_png(tmp_path: Path) -> None:
    from envgen.cli import cli

    rows = [{"step": r, "solver": {"reward": 0.2 * r, "solve_rate_histogram": {"edges": [0, 0.5, 1],
                                                                            "counts": [1, r]}}} for r in range(3)]
    (tmp_path / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    result = CliRunner().invoke(cli, ["plot", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert {p.name for p in (tmp_path / "plots").glob("*.png")} == {"rewards.png", "solve_rate_histogram.png"}


@pytest.mark.slow
def test_the_guides_trl_loop_command_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``envwright train solver --config smoke-cpu --set solver.loop=trl --output-dir runs/smoke-trl`` from a
    fresh folder where the guide's self-play smoke run came first: the tiny model is built, the smoke config's
    multi-turn tasks go through TRL's loop, and both GRPO steps are taken (about 70 s on 2 cores)."""
    from training.metrics import read_metrics
    from training.solver import TaskPool

    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "smoke").mkdir(parents=True)  # the guide's `train selfplay ... --output-dir runs/smoke`
    (tmp_path / "runs" / "smoke" / "metrics.jsonl").write_text('{"step": 0}\n')
    cfg = load_config("smoke-cpu", ["solver.loop=trl"])
    assert any(len(r.spec.task(r.task_id).turns) > 1 for r in TaskPool.from_config(cfg).tasks.values())
    result = runner.invoke(train, ["solver", "--config", "smoke-cpu", "--set", "solver.loop=trl",
                                   "--output-dir", "runs/smoke-trl"])
    assert result.exit_code == 0, result.output
    assert '"global_step": 2' in result.output
    records = [r for r in read_metrics(tmp_path / "runs" / "smoke-trl") if "reward" in r]
    assert len(records) == 2 and all("rewards/envwright_reward/mean" in r for r in records)

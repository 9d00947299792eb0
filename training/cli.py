"""``envwright train selfplay|solver|distill|proposer`` and ``envwright plot RUN_DIR``.

The root command (:mod:`envgen.command`) loads :data:`train` (this typer app,
also exported as :data:`train_app`) and :data:`plot` (:func:`plot_cmd`)
lazily. Each train command reads a YAML config (``--config FILE``, or the name
of a bundled config such as ``smoke-cpu``), applies ``--set key=value``
overrides and validates everything before any model is loaded; a bad config
prints one line that says what to change and exits with status 2.

A run folder that already holds a run (``metrics.jsonl``) is refused unless
``--resume`` continues it or ``--overwrite`` replaces it, so two runs never mix
in one metrics file. A config that names the tiny test model
(``runs/tiny-qwen3``, the ``smoke-cpu`` config's) builds it on first use
(:mod:`training.tiny_model`; ``envwright train tiny-model`` builds it alone).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import typer

from training.config import TrainConfig, load_config
from training.errors import CheckpointError, ConfigError

__all__ = ["plot", "plot_cmd", "train", "train_app"]

HELP = {"help_option_names": ["-h", "--help"]}

train_app = typer.Typer(help="Train the policy: GRPO self-play, solver GRPO (TRL), recovery-step distillation, "
                             "the proposer warm start.",
                        no_args_is_help=True, add_completion=False, context_settings=HELP)

ConfigOpt = typer.Option(..., "--config", "-c", help="YAML config: a path, or a bundled name (see `envwright "
                         "train configs`).")
SetOpt = typer.Option(None, "--set", "-s", help="Override a key, e.g. --set solver.num_generations=4 "
                      "(repeatable; values are YAML).")
ResumeOpt = typer.Option(None, "--resume", help="Resume from a checkpoint folder, or 'latest'.")
OutOpt = typer.Option(None, "--output-dir", "-o", help="Run folder (overrides run.output_dir).")
OverwriteOpt = typer.Option(False, "--overwrite", help="Replace the run already in the run folder (its metrics, "
                            "checkpoints, plots) instead of refusing to start.")

#: What a training run writes into its folder (removed by --overwrite; nothing else there is touched).
RUN_ARTEFACTS = ("metrics.jsonl", "checkpoints", "plots", "tensorboard", "final", "wandb", "model", "holdout.json",
                 "summary.json")


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


def _config(config: Path, overrides: list[str] | None, resume: str | None, output_dir: Path | None,
            overwrite: bool = False) -> TrainConfig:
    sets = list(overrides or [])
    if resume:
        sets.append(f"run.resume={resume}")
    if output_dir:
        sets.append(f"run.output_dir={output_dir}")
    try:
        cfg = load_config(config, sets)
        cfg.require_model()
    except ConfigError as e:
        raise _fail(str(e)) from None
    _claim_run_folder(Path(cfg.run.output_dir), resume=bool(cfg.run.resume), overwrite=overwrite)
    _tiny_model_on_demand(cfg)
    return cfg


def _claim_run_folder(run: Path, *, resume: bool, overwrite: bool) -> None:
    """Refuse a folder that holds a run unless resuming it or replacing it (--overwrite removes its artefacts)."""
    if resume and overwrite:
        raise _fail("--resume continues the run in the folder and --overwrite replaces it: give one of them")
    if resume or not (run / "metrics.jsonl").exists():
        return
    if not overwrite:
        raise _fail(f"{run} already holds a run (metrics.jsonl); a new run would mix into its metrics. Continue it "
                    f"with --resume latest, replace it with --overwrite, or choose another --output-dir")
    if os.environ.get("RANK", "0") != "0":  # under accelerate/torchrun the main process clears the folder
        return
    for target in [run / name for name in RUN_ARTEFACTS] + sorted(run.glob("checkpoint-*")):  # TRL's own too
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    typer.echo(f"--overwrite: removed the previous run's {', '.join(RUN_ARTEFACTS)} and checkpoint-* from {run}",
               err=True)


def _tiny_model_on_demand(cfg: TrainConfig) -> None:
    """Build the tiny test model (``.../tiny-qwen3``) when the config names it and it is not there yet."""
    from training.tiny_model import build_tiny_qwen3, is_tiny_model_path

    if is_tiny_model_path(cfg.model.name_or_path):
        typer.echo(f"building the tiny test model at {cfg.model.name_or_path} (random weights, once)", err=True)
        build_tiny_qwen3(cfg.model.name_or_path)


def _lookup(rec: dict, key: str) -> object:
    node: object = rec
    for part in key.split("/"):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _summary(history: list[dict], keys: tuple[str, ...]) -> None:
    for rec in history:
        flat = {k: _lookup(rec, k) for k in keys}
        typer.echo(json.dumps(flat, default=lambda x: round(x, 4) if isinstance(x, float) else str(x)))


@train_app.command("selfplay")
def selfplay_cmd(config: Path = ConfigOpt, set_: list[str] = SetOpt, resume: str | None = ResumeOpt,
                 output_dir: Path | None = OutOpt, overwrite: bool = OverwriteOpt) -> None:
    """Self-play rounds: the model proposes environments (dual stream with skills) and learns to solve them."""
    cfg = _config(config, set_, resume, output_dir, overwrite)
    from training.selfplay import SelfPlay

    try:
        history = SelfPlay(cfg).run()
    except (ConfigError, CheckpointError) as e:
        raise _fail(str(e)) from None
    _summary(history, ("round", "solver/reward", "solver/pass_rate", "proposer/reward", "proposer/acceptance",
                       "proposer/frontier", "eval/pass_rate", "update/proposer/samples", "update/solver/samples"))
    typer.echo(f"run folder: {cfg.run.output_dir} (metrics.jsonl, checkpoints/); plot: envwright plot "
               f"{cfg.run.output_dir}")


@train_app.command("solver")
def solver_cmd(config: Path = ConfigOpt, set_: list[str] = SetOpt, resume: str | None = ResumeOpt,
               output_dir: Path | None = OutOpt, overwrite: bool = OverwriteOpt) -> None:
    """GRPO on environment tasks with TRL's GRPOTrainer and our multi-turn rollout function."""
    cfg = _config(config, set_, resume, output_dir, overwrite)
    from training.solver import close_process_group, train_solver

    try:
        out = train_solver(cfg)
    except (ConfigError, CheckpointError) as e:
        raise _fail(str(e)) from None
    close_process_group()
    if int(os.environ.get("RANK", "0")) != 0:  # under accelerate/torchrun only the main process reports
        return
    typer.echo(json.dumps(out, default=str))
    typer.echo(f"run folder: {cfg.run.output_dir}; plot: envwright plot {cfg.run.output_dir}")


@train_app.command("proposer")
def proposer_cmd(config: Path = ConfigOpt, set_: list[str] = SetOpt, output_dir: Path | None = OutOpt,
                 overwrite: bool = OverwriteOpt) -> None:
    """The proposer warm start: SFT on (document excerpt -> blueprint) pairs the AST writer makes from a corpus."""
    cfg = _config(config, set_, None, output_dir, overwrite)
    from training.proposer import train_proposer

    try:
        out = train_proposer(cfg, overwrite=overwrite)
    except ConfigError as e:
        raise _fail(str(e)) from None
    typer.echo(json.dumps(out, default=str))
    typer.echo(f"model: {out['model']} (load it with --backend transformers --model {out['model']}); held-out "
               f"documents: {Path(cfg.run.output_dir) / 'holdout.json'}")


@train_app.command("distill")
def distill_cmd(config: Path = ConfigOpt, set_: list[str] = SetOpt, resume: str | None = ResumeOpt,
                output_dir: Path | None = OutOpt, overwrite: bool = OverwriteOpt) -> None:
    """Recovery-step self-distillation: the teacher shows the student how to recover from its own mistakes."""
    cfg = _config(config, set_, resume, output_dir, overwrite)
    from training.distill import Distiller

    try:
        history = Distiller(cfg).run()
    except (ConfigError, CheckpointError) as e:
        raise _fail(str(e)) from None
    _summary(history, ("iteration", "student/pass_rate", "distill/divergences", "distill/recovery_samples"))


@train_app.command("tiny-model")
def tiny_model_cmd(out: Path = typer.Option(Path("runs/tiny-qwen3"), "--out", help="Model folder to write.")) -> None:
    """Build the tiny random-weight Qwen3 (2 layers) that the smoke-cpu config trains (about a second)."""
    from training.tiny_model import build_tiny_qwen3

    typer.echo(str(build_tiny_qwen3(out)))


@train_app.command("configs")
def configs_cmd() -> None:
    """List the bundled example configs."""
    root = Path(__file__).parent / "configs"
    for p in sorted(root.glob("*.yaml")):
        first = next((ln.lstrip("# ").strip() for ln in p.read_text().splitlines() if ln.startswith("#")), "")
        typer.echo(f"{p.name:32s} {first}")


def plot_cmd(run_dir: Path = typer.Argument(..., help="A run folder holding metrics.jsonl."),
             out: Path | None = typer.Option(None, "--out", help="Where to write the PNGs (default RUN_DIR/plots).")
             ) -> None:
    """Plot a run's curves (rewards, solve rate, validity, throughput, time split, loss) as PNG files."""
    from training.metrics import plot_run

    try:
        paths = plot_run(run_dir, out)
    except (FileNotFoundError, ValueError) as e:
        raise _fail(str(e)) from None
    for p in paths:
        typer.echo(str(p))


train = train_app
plot = plot_cmd

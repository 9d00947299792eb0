"""``envwright train selfplay|solver|distill|proposer`` and ``envwright plot RUN_DIR``.

The root command (:mod:`envgen.cli`) loads :data:`train` (a click group) and
:data:`plot` lazily. Each train command reads a YAML config (``--config FILE``, or the name
of a bundled config such as ``smoke-cpu``), applies ``--set key=value``
overrides (``--engine NAME`` is ``--set generation.engine=NAME``) and validates everything before any
model is loaded; a bad config
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

import click

from training.config import TrainConfig, load_config
from training.errors import CheckpointError, ConfigError

__all__ = ["plot", "train"]

HELP = {"help_option_names": ["-h", "--help"], "show_default": True}


@click.group("train", no_args_is_help=True, context_settings=HELP)
def train() -> None:
    """Train the policy: GRPO self-play, solver GRPO (TRL), recovery-step distillation, the proposer warm start."""


config_option = click.option("--config", "-c", type=click.Path(path_type=Path), required=True,
                             help="YAML config: a path, or a bundled name (see `envwright train configs`).")
set_option = click.option("--set", "-s", "set_", multiple=True, help="Override a key, e.g. --set "
                          "solver.num_generations=4 (repeatable; values are YAML).")
resume_option = click.option("--resume", default=None, help="Resume from a checkpoint folder, or 'latest'.")
output_option = click.option("--output-dir", "-o", type=click.Path(path_type=Path), default=None,
                             help="Run folder (overrides run.output_dir).")
overwrite_option = click.option("--overwrite", is_flag=True, help="Replace the run already in the run folder (its "
                                "metrics, checkpoints, plots) instead of refusing to start.")
engine_option = click.option("--engine", type=click.Choice(["auto", "transformers", "vllm"]), default=None,
                             help="The generation engine (sets generation.engine; default: the config's).")

#: What a training run writes into its folder (removed by --overwrite; nothing else there is touched).
RUN_ARTEFACTS = ("metrics.jsonl", "checkpoints", "plots", "tensorboard", "final", "wandb", "model", "holdout.json",
                 "summary.json", "episodes.jsonl", "skills", "skill-rounds")


def _fail(message: str) -> click.exceptions.Exit:
    click.echo(f"error: {message}", err=True)
    return click.exceptions.Exit(2)


def _config(config: Path, overrides: tuple[str, ...], resume: str | None, output_dir: Path | None,
            overwrite: bool = False, engine: str | None = None) -> TrainConfig:
    sets = list(overrides)
    if engine:
        sets.append(f"generation.engine={engine}")
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
    click.echo(f"--overwrite: removed the previous run's {', '.join(RUN_ARTEFACTS)} and checkpoint-* from {run}",
               err=True)


def _tiny_model_on_demand(cfg: TrainConfig) -> None:
    """Build the tiny test model (``.../tiny-qwen3``) when the config names it and it is not there yet."""
    from training.tiny_model import build_tiny_qwen3, is_tiny_model_path

    if is_tiny_model_path(cfg.model.name_or_path):
        click.echo(f"building the tiny test model at {cfg.model.name_or_path} (random weights, once)", err=True)
        build_tiny_qwen3(cfg.model.name_or_path)


def _lookup(rec: dict, key: str) -> object:
    node: object = rec
    for part in key.split("/"):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _summary(history: list[dict], keys: tuple[str, ...]) -> None:
    for rec in history:
        flat = {k: _lookup(rec, k) for k in keys}
        click.echo(json.dumps(flat, default=lambda x: round(x, 4) if isinstance(x, float) else str(x)))


@train.command("selfplay")
@config_option
@set_option
@resume_option
@output_option
@overwrite_option
@engine_option
def selfplay_cmd(config: Path, set_: tuple[str, ...], resume: str | None, output_dir: Path | None,
                 overwrite: bool, engine: str | None) -> None:
    """Self-play rounds: the model proposes environments (dual stream with skills) and learns to solve them."""
    cfg = _config(config, set_, resume, output_dir, overwrite, engine)
    from training.selfplay import SelfPlay

    try:
        history = SelfPlay(cfg).run()
    except (ConfigError, CheckpointError) as e:
        raise _fail(str(e)) from None
    _summary(history, ("round", "solver/reward", "solver/pass_rate", "proposer/reward", "proposer/acceptance",
                       "proposer/frontier", "eval/pass_rate", "update/proposer/samples", "update/solver/samples"))
    click.echo(f"run folder: {cfg.run.output_dir} (metrics.jsonl, checkpoints/); plot: envwright plot "
               f"{cfg.run.output_dir}")


@train.command("solver")
@config_option
@set_option
@resume_option
@output_option
@overwrite_option
@engine_option
def solver_cmd(config: Path, set_: tuple[str, ...], resume: str | None, output_dir: Path | None,
               overwrite: bool, engine: str | None) -> None:
    """GRPO on environment tasks with TRL's GRPOTrainer and our multi-turn rollout function."""
    cfg = _config(config, set_, resume, output_dir, overwrite, engine)
    from training.solver import close_process_group, train_solver

    try:
        out = train_solver(cfg)
    except (ConfigError, CheckpointError) as e:
        raise _fail(str(e)) from None
    close_process_group()
    if int(os.environ.get("RANK", "0")) != 0:  # under accelerate/torchrun only the main process reports
        return
    click.echo(json.dumps(out, default=str))
    click.echo(f"run folder: {cfg.run.output_dir}; plot: envwright plot {cfg.run.output_dir}")


@train.command("proposer")
@config_option
@set_option
@output_option
@overwrite_option
def proposer_cmd(config: Path, set_: tuple[str, ...], output_dir: Path | None, overwrite: bool) -> None:
    """The proposer warm start: SFT on (document excerpt -> blueprint) pairs the AST writer makes from a corpus."""
    cfg = _config(config, set_, None, output_dir, overwrite)
    from training.proposer import train_proposer

    try:
        out = train_proposer(cfg, overwrite=overwrite)
    except ConfigError as e:
        raise _fail(str(e)) from None
    click.echo(json.dumps(out, default=str))
    click.echo(f"model: {out['model']} (load it with --backend transformers --model {out['model']}); held-out "
               f"documents: {Path(cfg.run.output_dir) / 'holdout.json'}")


@train.command("distill")
@config_option
@set_option
@resume_option
@output_option
@overwrite_option
@engine_option
def distill_cmd(config: Path, set_: tuple[str, ...], resume: str | None, output_dir: Path | None,
                overwrite: bool, engine: str | None) -> None:
    """Recovery-step self-distillation: the teacher shows the student how to recover from its own mistakes."""
    cfg = _config(config, set_, resume, output_dir, overwrite, engine)
    from training.distill import Distiller

    try:
        history = Distiller(cfg).run()
    except (ConfigError, CheckpointError) as e:
        raise _fail(str(e)) from None
    _summary(history, ("iteration", "student/pass_rate", "distill/divergences", "distill/recovery_samples"))


@train.command("tiny-model")
@click.option("--out", type=click.Path(path_type=Path), default=Path("runs/tiny-qwen3"),
              help="Model folder to write.")
def tiny_model_cmd(out: Path) -> None:
    """Build the tiny random-weight Qwen3 (2 layers) that the smoke-cpu config trains (about a second)."""
    from training.tiny_model import build_tiny_qwen3

    click.echo(str(build_tiny_qwen3(out)))


@train.command("configs")
def configs_cmd() -> None:
    """List the bundled example configs."""
    root = Path(__file__).parent / "configs"
    for p in sorted(root.glob("*.yaml")):
        first = next((ln.lstrip("# ").strip() for ln in p.read_text().splitlines() if ln.startswith("#")), "")
        click.echo(f"{p.name:32s} {first}")


@click.command("plot", context_settings=HELP)
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Where to write the PNGs (default RUN_DIR/plots).")
def plot(run_dir: Path, out: Path | None) -> None:
    """Plot a run's curves (rewards, solve rate, validity, throughput, time split, loss) as PNG files.

    RUN_DIR is a run folder holding metrics.jsonl.
    """
    from training.metrics import plot_run

    try:
        paths = plot_run(run_dir, out)
    except (FileNotFoundError, ValueError) as e:
        raise _fail(str(e)) from None
    for p in paths:
        click.echo(str(p))

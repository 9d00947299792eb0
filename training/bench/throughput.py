"""``envwright bench throughput``: the trainer's rollout tokens/s, seconds per GRPO step, environment share.

A Qwen3-0.6B-shaped model with random weights (:data:`~training.bench.common.QWEN3_0_6B_SHAPE`;
``--tiny``: a toy shape on CPU) trained by ``envwright train solver``'s path (TRL ``GRPOTrainer`` +
our rollout function) on the shipped example environments. Every action costs a real
``max_turn_tokens``-token generation, but its *text* is the task's reference action
(:class:`ReplayGenerator`: a random model would end every episode at its first action), so the
environment does the work a competent policy causes. Reports rollout tokens/s, seconds per GRPO step
and the share of wall time spent in the environment, in ``OUT/throughput.json``.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from training.bench.common import (
    QWEN3_0_6B_SHAPE,
    TINY_SHAPE,
    bench_options,
    device_of,
    env_info,
    episode_prompt,
    quiet_trl,
    random_qwen3,
    tiny_model_dir,
    write_result,
)
from training.generation import Generator

__all__ = ["ReplayGenerator", "command", "reference_plan", "throughput"]


def reference_plan(spec: Any, task_id: str) -> list[str]:
    """The reference trajectory of a task as action texts, one per env step (a ``say`` item, the agent's message
    to a scenario's user, is its text)."""
    from envgen.gate import oracle_reply
    from gym_envs.parsing import format_tool_call
    from gym_envs.spec import Say

    out = []
    for turn in spec.task(task_id).turns:
        out += [c.say if isinstance(c, Say) else format_tool_call(c.name, dict(c.arguments)) for c in turn.reference]
        out.append(oracle_reply(turn))
    return out


class ReplayGenerator(Generator):
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


def throughput(out: Path, *, tiny: bool = False, device: str = "auto", steps: int = 3, num_generations: int = 8,
               tasks_per_step: int = 4, max_turn_tokens: int = 256, max_completion_tokens: int = 4096,
               static_cache: bool = False, compile: bool = False, executor: str = "worker") -> dict[str, Any]:
    """Rollout tokens/s, seconds per GRPO step and environment share (module docstring).

    The first GRPO step is a warm-up and is not timed. ``throughput.json`` is rewritten after every
    step (``"complete": false`` until the last), so a run cut short by a time limit keeps its figures.
    """
    import torch
    from transformers import AutoTokenizer, TrainerCallback

    from gym_envs.messages import ChatFormat
    from training.config import config_from_dict
    from training.generation import TransformersGenerator
    from training.metrics import read_metrics
    from training.solver import TaskPool, build_solver_trainer

    device = device_of(device)
    if tiny:
        steps, num_generations, tasks_per_step = min(steps, 2), 2, 2
        max_turn_tokens, max_completion_tokens = min(max_turn_tokens, 16), min(max_completion_tokens, 1024)
    calls: list[list[Any]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        tok = AutoTokenizer.from_pretrained(tiny_model_dir(Path(tmp)))
        dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
        model = random_qwen3(TINY_SHAPE if tiny else QWEN3_0_6B_SHAPE, tok, device, dtype)
        run_dir = Path(tmp) / "run"
        cfg = config_from_dict({
            "model": {"name_or_path": "random-qwen3", "device": "cpu" if device == "cpu" else "cuda",
                      "dtype": "fp32" if device == "cpu" else "bf16"},
            "generation": {"engine": "transformers", "static_cache": static_cache, "compile": compile and static_cache},
            "rollout": {"max_steps": 24, "max_turn_tokens": max_turn_tokens,
                        "max_completion_tokens": max_completion_tokens, "executor": executor},
            "solver": {"num_generations": num_generations, "envs": ["examples"]},
            "run": {"output_dir": str(run_dir), "report_to": []},
            "grpo": {"per_device_train_batch_size": num_generations * tasks_per_step, "max_steps": steps + 1,
                     "logging_steps": 1, "save_strategy": "no", "learning_rate": 1e-6, "loss_type": "dapo"}})
        chat = ChatFormat(tok)
        plans = {tuple(episode_prompt(chat, t)): reference_plan(t.spec, t.task_id)
                 for t in TaskPool.from_config(cfg).tasks.values()}
        compute = TransformersGenerator(model, eos_ids=[tok.eos_token_id], pad_id=tok.pad_token_id,
                                        static_cache=static_cache, compile=compile and static_cache,
                                        record_logprobs=True)
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
                "wall_seconds": time.perf_counter() - started, **env_info(device)}

        class _Checkpoint(TrainerCallback):  # type: ignore[misc]
            def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
                if logs and "step_time" in logs:
                    write_result(out, "throughput", summary(complete=False), echo=False)

        trainer = build_solver_trainer(cfg, model=model, tokenizer=tok, generator=gen, on_episodes=seen,
                                       callbacks=[_Checkpoint()])
        trainer.train()
        return write_result(out, "throughput", summary(complete=True))


@click.command("throughput", context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@bench_options("throughput")
@click.option("--steps", type=int, default=3, help="timed GRPO steps (after one untimed warm-up step)")
@click.option("--num-generations", type=int, default=8)
@click.option("--tasks-per-step", type=int, default=4, help="tasks per GRPO step")
@click.option("--max-turn-tokens", type=int, default=256)
@click.option("--static-cache", is_flag=True, help="generate with the static-cache fast path")
@click.option("--compile", is_flag=True, help="torch.compile the static-cache decoding")
@click.option("--executor", type=click.Choice(["worker", "inprocess"]), default="worker")
def command(out: Path, tiny: bool, device: str, steps: int, num_generations: int, tasks_per_step: int,
            max_turn_tokens: int, static_cache: bool, compile: bool, executor: str) -> None:
    """Rollout tokens/s, seconds per GRPO step and the environment's share of wall time (Qwen3-0.6B shape)."""
    quiet_trl()
    throughput(out, tiny=tiny, device=device, steps=steps, num_generations=num_generations,
               tasks_per_step=tasks_per_step, max_turn_tokens=max_turn_tokens, static_cache=static_cache,
               compile=compile, executor=executor)

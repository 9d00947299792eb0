"""The compute-matched fixed-environment baseline: solver-only GRPO on a fixed set of environments.

SPADE's falsifier for self-play: give a solver the same compute on environments
that never change (template environments, say) and see whether self-play still
wins on held-out environments. :class:`FixedEnvGRPO` runs the same machinery as
self-play's solver role (the batched multi-turn rollout with every check, group
baselines over ``k`` episodes of a task, the same update, the same optimizer),
round for round:

* round ``r`` plays ``episodes[r]`` solver episodes (the count a self-play run
  played in its round ``r``: ``matched_episodes`` reads it from that run's
  ``metrics.jsonl``), ``solver.num_generations`` (k) per task, the tasks drawn
  from the fixed environments without replacement until all are used, then again;
* the same optimizer steps per round as self-play's ``joint`` schedule: one, or ``grpo.num_iterations``
  passes of ``grpo.steps_per_generation`` mini-batch steps;
* the held-out tasks (``selfplay.eval_envs``) ride in the same rollout batch,
  never trained on, and are scored once more after the last round.

The run folder holds ``metrics.jsonl`` (one record per round: solver reward and
pass rate, held-out pass rate, samples, update, time and the environment's share),
``episodes.jsonl`` (every episode's record, held-out ones marked, the final scoring's with ``final``: as
self-play writes it, so the two runs can be compared task by task), ``summary.json`` (``eval_final``)
and ``checkpoints/round-NNNN`` (resume with ``run.resume``).
"""

from __future__ import annotations

import json
import random
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gym_envs.messages import ChatFormat
from gym_envs.seeding import stable_seed
from gym_envs.spec import EnvSpec
from training.checkpoint import load_training_state, save_checkpoint
from training.config import TrainConfig, config_to_dict
from training.generation import Generator
from training.metrics import MetricsWriter, drop_rounds_from, read_metrics
from training.rollout import TaskRef, batch_stats, rollout
from training.selfplay import heldout_tasks, rollout_seed
from training.selfplay_metrics import append_episodes, pass_rate
from training.selfplay_steps import assign_advantages, scheduled_update, solver_samples
from training.weight_sync import sampler_report

__all__ = ["FixedEnvGRPO", "matched_episodes"]


def matched_episodes(selfplay_run: str | Path) -> list[int]:
    """The solver episodes of every round of a self-play run (its ``metrics.jsonl``), in round order."""
    rounds = sorted(read_metrics(selfplay_run), key=lambda r: r.get("round", r.get("step", 0)))
    return [int(r["solver"]["episodes"]) for r in rounds if isinstance(r.get("solver"), dict)]


class FixedEnvGRPO:
    """Solver-only GRPO on fixed environments, matched to a self-play run's episodes (module docstring).

    Args:
        cfg: the configuration (``rollout``, ``solver.num_generations``, ``grpo``, ``selfplay.eval_*``,
            ``run``); the fixed environments are ``specs``.
        specs: the fixed environments (e.g. template environments of the training documents).
        episodes: solver episodes per round (its length is the number of rounds).
    """

    def __init__(self, cfg: TrainConfig, specs: Sequence[EnvSpec], episodes: Sequence[int], *, model: Any = None,
                 tokenizer: Any = None, generator: Generator | None = None):
        from training.model import make_generator, open_policy_run

        if not specs:
            raise ValueError("the baseline needs at least one fixed environment")
        if not episodes or min(episodes) < 0:
            raise ValueError("episodes must list a count >= 0 for every round")
        self.cfg = cfg
        run = open_policy_run(cfg, model, tokenizer)
        resume = run.resume_from
        self.run_dir, self.model, self.tokenizer = run.run_dir, run.model, run.tokenizer
        self.update_cfg, self.optimizer = run.update_cfg, run.optimizer
        self.chat = ChatFormat(self.tokenizer, pass_tools=cfg.rollout.pass_tools)
        self.generator = generator or make_generator(cfg, self.model, self.tokenizer)
        self.generator.track(self.optimizer)
        self.pool = [(s, t.id) for s in specs for t in s.tasks]
        self.episodes = list(episodes)
        sp = cfg.selfplay
        self.eval_tasks = heldout_tasks(sp.eval_envs, sp.eval_tasks_per_env, sp.eval_attempts, cfg.run.seed)
        self.metrics = MetricsWriter(self.run_dir, cfg.run.report_to, run_name=cfg.run.run_name,
                                     config=config_to_dict(cfg))
        (self.run_dir / "config.json").write_text(json.dumps(config_to_dict(cfg), indent=1, default=str))
        self.start_round = 0
        self.history: list[dict[str, Any]] = []
        if resume is not None:
            self.start_round = int(load_training_state(resume, self.optimizer)["next_round"])
            self.generator.sync()
        for name in ("metrics.jsonl", "episodes.jsonl"):
            if dropped := drop_rounds_from(self.run_dir / name, self.start_round):
                warnings.warn(f"{self.run_dir} goes on from round {self.start_round}: discarded {dropped} lines of "
                              f"{name} an earlier start wrote for later rounds without their checkpoint",
                              stacklevel=2)

    def _plan(self) -> list[list[int]]:
        """Pool indices per round: ``episodes[r] / k`` tasks, shuffled passes over the pool (seeded)."""
        k = self.cfg.solver.num_generations
        counts = [max(1, round(e / k)) if e else 0 for e in self.episodes]
        order: list[int] = []
        while len(order) < sum(counts):
            rng = random.Random(stable_seed(self.cfg.run.seed, "plan", len(order)))
            order += rng.sample(range(len(self.pool)), len(self.pool))
        starts = [sum(counts[:i]) for i in range(len(counts))]
        return [order[s0:s0 + c] for s0, c in zip(starts, counts, strict=True)]

    def draw(self, r: int) -> list[TaskRef]:
        """Round ``r``'s tasks, ``k`` episodes each (about ``episodes[r]`` in all; module docstring)."""
        k = self.cfg.solver.num_generations
        seed = stable_seed(self.cfg.run.seed, "episodes", r)  # as self-play's episodes of round r
        return [TaskRef(self.pool[i][0], self.pool[i][1], seed) for i in self._plan()[r]
                for _ in range(k)]

    def round(self, r: int) -> dict[str, Any]:
        cfg, sp = self.cfg, self.cfg.selfplay
        t0 = time.perf_counter()
        refs = self.draw(r)
        extra = self.eval_tasks if self.eval_tasks and r % sp.eval_every == 0 else []
        eps = rollout(refs + extra, self.generator, self.chat, cfg.rollout, seed=rollout_seed(cfg.run.seed, r))
        train, held = eps[: len(refs)], eps[len(refs):]
        samples = solver_samples(train, [f"{r}:{e.task.key}" for e in train], sp.solver_weight)
        assign_advantages(samples)
        t1 = time.perf_counter()
        engine = sampler_report(self.generator, self.model, samples, pad_id=self.chat.pad_id, cfg=self.update_cfg,
                                limit=cfg.generation.max_logprob_gap)
        upd = scheduled_update(self.model, self.optimizer, samples, schedule="joint", pad_id=self.chat.pad_id,
                               cfg=self.update_cfg, seed=r)
        t2 = time.perf_counter()
        self.generator.sync()
        t_sync = time.perf_counter() - t2
        t_update = t2 - t1
        bs, allb = batch_stats(train), batch_stats(eps)
        wall = time.perf_counter() - t0
        rec: dict[str, Any] = {
            "round": r,
            "solver": {"reward": bs["reward"], "pass_rate": bs["pass_rate"], "episodes": bs["episodes"],
                       "tasks": len(refs) // max(1, cfg.solver.num_generations), "statuses": bs["statuses"]},
            "samples": {"solver": len(samples)}, "update": upd, "generation": engine,
            "time": {"generation": allb["gen_seconds"], "environment": allb["env_seconds"], "update": t_update,
                     "weight_sync": t_sync, "round": wall,
                     "environment_share": allb["env_seconds"] / wall if wall > 0 else 0.0}}
        if held:
            rec["eval"] = pass_rate(held)
        self.metrics.log(rec, step=r)
        append_episodes(self.run_dir / "episodes.jsonl", r, train, held)
        self.history.append(rec)
        save_checkpoint(self.run_dir, r, model=self.model, tokenizer=self.tokenizer, optimizer=self.optimizer,
                        trainer="baseline")
        return rec

    def run(self) -> list[dict[str, Any]]:
        """Every remaining round, then the held-out score of the final policy."""
        try:
            for r in range(self.start_round, len(self.episodes)):
                self.round(r)
            final = None
            if self.eval_tasks:
                seed = rollout_seed(self.cfg.run.seed, len(self.episodes) + 1)
                held = rollout(self.eval_tasks, self.generator, self.chat, self.cfg.rollout, seed=seed)
                append_episodes(self.run_dir / "episodes.jsonl", len(self.episodes), (), held, final=True)
                final = pass_rate(held)
            (self.run_dir / "summary.json").write_text(json.dumps(
                {"rounds": len(self.episodes), "episodes": self.episodes, "eval_final": final}, indent=1))
        finally:
            self.metrics.close()
        return self.history

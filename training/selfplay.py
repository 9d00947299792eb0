"""``envwright train selfplay``: one model proposes environments and learns to solve them.

One round (:meth:`SelfPlay.round`):

1. **propose** -- envgen's dual stream (:func:`envgen.skills.run_round`): documents
   from the corpus, skills routed by the controller, proposals written by the
   ``llm`` proposer over a :class:`~training.generation.PolicyBackend` that
   wraps the policy itself (one batched generation per stream);
2. **validate** -- the gate (sandboxed), plus each routed skill's validator;
3. **solve** -- for every valid proposal, the solver plays each of its first
   ``selfplay.tasks_per_env`` tasks ``solver.num_generations`` (G) times, all
   episodes of the proposal in one batched rollout
   (:func:`training.rollout.rollout`); the solve rate feeds the proposer reward
   (Skill-SP or SPADE, ``selfplay.round.reward``);
4. **rewards and advantages** -- solver samples: the env's score, GRPO baseline
   per task; proposer samples: the proposer reward; advantages standardised
   separately over each role's samples (:func:`training.advantages.selfplay_advantages`);
5. **update** -- one optimizer step of the one model on both roles
   (:func:`training.loss.update`; environment tokens masked out), then the
   generator is synced (vLLM);
6. **bookkeeping** -- skill statistics and evolution (done by the round),
   kept environments into the library, metrics (``metrics.jsonl`` and
   ``report_to``), and a checkpoint (model, optimizer, round state, RNG, skill
   library) every ``selfplay.checkpoint_every`` rounds.

``run.resume`` (a checkpoint folder or ``latest``) restarts from a checkpoint:
weights, optimizer, every RNG, the controller's RNG and the skill library are
restored and the run continues with the next round.
"""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from envgen.library import Library
from envgen.proposers.llm import LLMProposer
from envgen.skills import Controller, SkillLibrary, run_round
from envgen.skills.round import RoundResult
from gym_envs.spec import EnvSpec
from training.advantages import selfplay_advantages
from training.chat import ChatFormat
from training.checkpoint import find_checkpoint, load_training_state, prune_checkpoints, save_checkpoint
from training.config import TrainConfig, config_to_dict, to_grpo_config
from training.generation import Generator, PolicyBackend
from training.loss import Sample, UpdateConfig, reference_logprobs, update
from training.metrics import MetricsWriter
from training.rewards import solve_rate
from training.rollout import Episode, TaskRef, batch_stats, rollout

__all__ = ["SelfPlay", "histogram", "make_optimizer", "seed_everything", "update_config"]


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's generators (CUDA included) with ``seed``."""
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def update_config(grpo: Any, temperature: float) -> UpdateConfig:
    """The update's knobs from TRL's ``GRPOConfig``."""
    return UpdateConfig(micro_batch_size=grpo.per_device_train_batch_size, max_grad_norm=grpo.max_grad_norm,
                        epsilon_low=grpo.epsilon, epsilon_high=grpo.epsilon_high or grpo.epsilon,
                        beta=grpo.beta, loss_type=grpo.loss_type, temperature=temperature if temperature > 0 else 1.0,
                        autocast_bf16=bool(getattr(grpo, "bf16", False)))


def make_optimizer(model: Any, grpo: Any) -> Any:
    """AdamW over the trainable parameters with GRPOConfig's learning rate, betas, epsilon, weight decay."""
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    return torch.optim.AdamW(params, lr=grpo.learning_rate, betas=(grpo.adam_beta1, grpo.adam_beta2),
                             eps=grpo.adam_epsilon, weight_decay=grpo.weight_decay)


def histogram(values: list[float], bins: int) -> dict[str, list[float]]:
    """Counts of ``values`` in ``bins`` equal bins of [0, 1] (the last bin includes 1.0)."""
    edges = [i / bins for i in range(bins + 1)]
    counts = [0] * bins
    for v in values:
        counts[min(int(v * bins), bins - 1)] += 1
    return {"edges": edges, "counts": [float(c) for c in counts]}


class SelfPlay:
    """The self-play trainer (see the module docstring).

    Args:
        cfg: the configuration.
        model, tokenizer: the policy already loaded (default: loaded from ``model:`` or the checkpoint).
        generator: replaces the configured generation engine (tests, benchmarks).
        docs: the document pool (default: ``selfplay.corpus``, ``selfplay.docs`` of them).
    """

    def __init__(self, cfg: TrainConfig, *, model: Any = None, tokenizer: Any = None,
                 generator: Generator | None = None, docs: list[Any] | None = None):
        from training.model import load_policy, make_generator

        self.cfg = cfg
        self.run_dir = Path(cfg.run.output_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        seed_everything(cfg.run.seed)
        self.resume_from = find_checkpoint(cfg.run.resume, self.run_dir)
        if model is None or tokenizer is None:
            model, tokenizer = load_policy(cfg, str(self.resume_from / "model") if self.resume_from else None)
        self.model, self.tokenizer = model, tokenizer
        self.grpo = to_grpo_config(cfg, self.run_dir / "trainer", for_trl=False)
        self.update_cfg = update_config(self.grpo, cfg.rollout.temperature)
        self.optimizer = make_optimizer(model, self.grpo)
        self.reference = reference_logprobs(model, self._reference_model()) if self.grpo.beta else None
        self.chat = ChatFormat(tokenizer, pass_tools=cfg.rollout.pass_tools)
        self.generator = generator or make_generator(cfg, model, tokenizer)
        self.backend = PolicyBackend(self.generator, self.chat, model_id=cfg.model.name_or_path or "policy")
        p = cfg.selfplay.proposer
        self.proposer = LLMProposer(self.backend, max_new_tokens=p.max_new_tokens, temperature=p.temperature,
                                    top_p=p.top_p, excerpt_tokens=p.excerpt_tokens, n_examples=p.n_examples,
                                    example_tokens=p.example_tokens, skill_level=p.skill_level,
                                    system_prompt=p.system_prompt)
        self.skills_dir = self.run_dir / "skills"
        self._init_skills()
        self.controller = Controller(SkillLibrary(self.skills_dir), cfg.selfplay.controller,
                                     backend=self.backend if cfg.selfplay.refine_with_policy else None)
        self.library = Library(cfg.selfplay.library or self.run_dir / "library")
        self.docs = docs if docs is not None else self._load_docs()
        self.metrics = MetricsWriter(self.run_dir, cfg.run.report_to, run_name=cfg.run.run_name,
                                     config=config_to_dict(cfg))
        (self.run_dir / "config.json").write_text(json.dumps(config_to_dict(cfg), indent=1, default=str))
        self.start_round = 0
        self.history: list[dict[str, Any]] = []
        self._episodes: list[Episode] = []
        if self.resume_from is not None:
            self._restore(self.resume_from)
            self.generator.sync()  # a vLLM engine starts from the base weights

    # -- setup ------------------------------------------------------------------------------------
    def _reference_model(self) -> Any:
        """A frozen copy for the KL penalty (None with LoRA: the adapter is switched off instead)."""
        import copy

        if hasattr(self.model, "disable_adapter"):
            return None
        ref = copy.deepcopy(self.model).eval()
        for prm in ref.parameters():
            prm.requires_grad_(False)
        return ref

    def _init_skills(self) -> None:
        if self.skills_dir.exists() and any(self.skills_dir.iterdir()):
            return
        src = self.cfg.selfplay.skills
        if src:
            shutil.copytree(src, self.skills_dir, dirs_exist_ok=True)
        else:
            SkillLibrary.from_builtin(self.skills_dir)

    def _load_docs(self) -> list[Any]:
        from envgen.generate import GenerateConfig, select_corpus

        sp = self.cfg.selfplay
        docs = select_corpus(GenerateConfig(corpus=sp.corpus, n=sp.docs, seed=self.cfg.run.seed, proposer="llm",
                                            backend="policy", min_stateful=sp.min_stateful,
                                            out=self.run_dir / "library"))
        if not docs:
            from training.errors import ConfigError

            raise ConfigError(f"selfplay.corpus {sp.corpus!r} gave no documents; lower selfplay.min_stateful or "
                              "choose another corpus")
        return docs

    def _restore(self, path: Path) -> None:
        state = load_training_state(path, self.optimizer)
        self.start_round = int(state["next_round"])
        extra = state.get("extra", {})
        if extra.get("controller_rng") is not None:
            self.controller.rng.setstate(extra["controller_rng"])
        if (path / "skills").is_dir():
            shutil.rmtree(self.skills_dir, ignore_errors=True)
            shutil.copytree(path / "skills", self.skills_dir)
            self.controller.library = SkillLibrary(self.skills_dir)

    # -- one round --------------------------------------------------------------------------------
    def _solve(self, spec: EnvSpec) -> float:
        """G rollouts of each of the spec's first tasks, in one batch; returns the solve rate."""
        cfg = self.cfg
        g = cfg.solver.num_generations
        tasks = spec.tasks[: cfg.selfplay.tasks_per_env]
        refs = [TaskRef(spec, t.id, cfg.run.seed + self._round) for t in tasks for _ in range(g)]
        seed = cfg.run.seed * 7919 + self._round * 104729 + len(self._episodes)
        episodes = rollout(refs, self.generator, self.chat, cfg.rollout, seed=seed)
        self._episodes += episodes
        return solve_rate([e.passed for e in episodes])

    def _proposer_samples(self, result: RoundResult) -> tuple[list[Sample], int]:
        out, missing = [], 0
        for s in result.candidates:
            rec = self.backend.record_for(s.proposal.raw)
            if rec is None or not rec.completion_ids:
                missing += 1  # a generation error: nothing was sampled, nothing to learn from
                continue
            out.append(Sample(rec.prompt_ids, rec.completion_ids, [1] * len(rec.completion_ids), role="proposer",
                              weight=self.cfg.selfplay.proposer_weight,
                              meta={"reward": s.reward, "group": "proposer", "valid": s.valid}))
        return out, missing

    def _solver_samples(self) -> list[Sample]:
        return [Sample(e.prompt_ids, e.completion_ids, e.env_mask, role="solver",
                       weight=self.cfg.selfplay.solver_weight, meta={"reward": e.reward, "group": e.task.key})
                for e in self._episodes if e.completion_ids]

    def round(self, r: int) -> dict[str, Any]:
        """Run round ``r`` (see the module docstring); returns its metrics."""
        cfg = self.cfg
        self._round = r
        self._episodes = []
        self.backend.take_records()
        self.backend.timer.seconds = self.backend.timer.tokens = 0
        t0 = time.perf_counter()
        round_cfg = dataclasses.replace(cfg.selfplay.round, seed=cfg.run.seed + cfg.selfplay.round.seed)
        result = run_round(self.controller, self.proposer, self.docs, self._solve, iteration=r, config=round_cfg,
                           library=self.library)
        t_round = time.perf_counter() - t0
        prop, missing = self._proposer_samples(result)
        solv = self._solver_samples()
        samples = prop + solv
        advs = selfplay_advantages([s.meta["reward"] for s in samples], [s.role for s in samples],
                                   [s.meta["group"] for s in samples])
        for s, a in zip(samples, advs, strict=True):
            s.advantage = a
        trained = [s for s in samples if (s.role == "proposer" and cfg.selfplay.train_proposer)
                   or (s.role == "solver" and cfg.selfplay.train_solver)]
        t1 = time.perf_counter()
        stats = update(self.model, self.optimizer, trained, pad_id=self.chat.pad_id, cfg=self.update_cfg,
                       reference=self.reference)
        self.generator.sync()
        t_update = time.perf_counter() - t1
        self._record_solve_rates(result)
        metrics = self._metrics(r, result, samples, missing, stats, t_round, t_update)
        self.metrics.log(metrics, step=r)
        self._write_episodes(r)
        self.history.append(metrics)
        last = r + 1 == cfg.selfplay.rounds
        if (r + 1) % cfg.selfplay.checkpoint_every == 0 or last:
            self.checkpoint(r)
        return metrics

    def run(self) -> list[dict[str, Any]]:
        """All remaining rounds; returns their metrics."""
        try:
            for r in range(self.start_round, self.cfg.selfplay.rounds):
                self.round(r)
        finally:
            self.metrics.close()
        return self.history

    def checkpoint(self, r: int) -> Path:
        path = save_checkpoint(self.run_dir, r, model=self.model, tokenizer=self.tokenizer, optimizer=self.optimizer,
                               trainer="selfplay", skills_dir=self.skills_dir,
                               extra={"controller_rng": self.controller.rng.getstate(),
                                      "library_size": len(self.library)})
        prune_checkpoints(self.run_dir, self.cfg.selfplay.keep_checkpoints)
        return path

    def _record_solve_rates(self, result: RoundResult) -> None:
        """Per-task solver results of the kept environments into the library's catalog."""
        kept = {s.spec.id for s in result.kept if s.spec is not None}
        groups: dict[tuple[str, str], list[bool]] = {}
        for e in self._episodes:
            if e.task.spec.id in kept:
                groups.setdefault((e.task.spec.id, e.task.task_id), []).append(e.passed)
        for (env_id, task_id), passed in groups.items():
            if self.library.get_row(env_id) is not None:
                self.library.record_task_result(env_id, task_id, f"selfplay:{self.backend.model_id}", n=len(passed),
                                                passes=sum(passed))

    # -- observability ----------------------------------------------------------------------------
    def _write_episodes(self, r: int) -> None:
        path = self.run_dir / "episodes.jsonl"
        with path.open("a", encoding="utf-8") as f:
            for e in self._episodes:
                f.write(json.dumps({"round": r, **e.record()}, default=str) + "\n")

    def _metrics(self, r: int, result: RoundResult, samples: list[Sample], missing: int, stats: dict[str, float],
                 t_round: float, t_update: float) -> dict[str, Any]:
        rm = result.metrics()
        eps = self._episodes
        bs = batch_stats(eps)
        by_spec: dict[str, list[bool]] = {}
        for e in eps:
            by_spec.setdefault(e.task.spec.id, []).append(e.passed)
        rates = [solve_rate(v) for v in by_spec.values()]
        gen_s = self.backend.timer.seconds + bs["gen_seconds"]
        tokens = self.backend.timer.tokens + bs["model_tokens"]
        prop_rewards = [c.reward for c in result.candidates]
        return {
            "round": r,
            "solver": {"reward": bs["reward"], "pass_rate": bs["pass_rate"], "episodes": bs["episodes"],
                       "envs": len(by_spec), "mean_solve_rate": statistics.fmean(rates) if rates else None,
                       "solve_rate_histogram": histogram(rates, self.cfg.selfplay.histogram_bins),
                       "statuses": bs["statuses"], "tool_calls": bs["tool_calls"], "tool_errors": bs["tool_errors"],
                       "model_tokens": bs["model_tokens"], "env_tokens": bs["env_tokens"]},
            "proposer": {"reward": statistics.fmean(prop_rewards) if prop_rewards else 0.0,
                         "validity": rm["validity"], "candidates": rm["candidates"], "kept": rm["kept"],
                         "parsed": sum(c.proposal.spec is not None for c in result.candidates)
                         / max(1, len(prop_rewards)),
                         "generation_errors": missing, "tokens": self.backend.timer.tokens},
            "skills": {"routing": rm["routing"], "weights": rm["weights"], "solve_rates": rm["skill_solve_rates"],
                       "mean_solve_rate_routed": rm["mean_solve_rate_routed"], "pruned": rm["pruned"],
                       "refined": rm["refined"], "induced": rm["induced"], "merged": rm["merged"],
                       "active": len(self.controller.library)},
            "samples": {"proposer": sum(s.role == "proposer" for s in samples),
                        "solver": sum(s.role == "solver" for s in samples)},
            "throughput": {"tokens_per_second": tokens / gen_s if gen_s > 0 else 0.0, "generated_tokens": tokens},
            "time": {"generation": gen_s, "environment": bs["env_seconds"],
                     "validation": max(0.0, t_round - gen_s - bs["env_seconds"]), "update": t_update,
                     "round": t_round + t_update},
            "update": stats,
            "library_size": len(self.library),
        }

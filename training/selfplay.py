"""``envwright train selfplay``: one model proposes environments and learns to solve them.

One round (:meth:`SelfPlay.round`):

0. **probe** (``selfplay.probe.documents``: N documents, 0 to skip; every
   ``selfplay.probe.every`` rounds, and once more after the last) -- the policy as it starts the round
   writes a proposal (``selfplay.probe.samples`` of them) for each of N fixed documents *without*
   the decoding grammar, and the gate judges them: acceptance where constrained decoding does not carry the
   model (``probe`` in the metrics);
1. **propose** -- envgen's dual stream (:func:`envgen.skills.run_round`): documents
   from the corpus, skills routed by the controller, ``group_size`` (G) proposals
   per document from the same prompt, written by the ``llm`` proposer over a
   :class:`~training.generation.PolicyBackend` that wraps the policy itself, as
   v1 blueprints or world blueprints (``selfplay.proposer.structure``: ``blueprint`` or ``world``;
   ``explore_structure`` for the exploration stream) decoded under their JSON Schema (``constrained``:
   even an untrained model writes proposals that parse and compile; a routed skill's requirements
   narrow the schema and are said in the prompt, in the structure's own terms); with
   ``explore_constrained: false`` the exploration stream writes without the grammar, so its
   unparsable proposals teach the format;
2. **validate** -- the gate (sandboxed) on the compiled spec, plus each routed skill's check (for a
   blueprint or a world: the skill's requirements, :mod:`envgen.skills.requirements`);
3. **solve** -- every valid proposal's tasks (a seeded draw of
   ``selfplay.tasks_per_env``) are played ``solver.num_generations`` (k) times, all
   episodes of the round in **one** batched rollout (:func:`training.rollout.rollout`;
   the held-out tasks of ``selfplay.eval_envs`` ride in the same batch, never trained
   on); p̂, an environment's solve rate, is the share of its episodes that passed
   (``selfplay.solve_rate``), and the proposer reward is computed from it;
4. **advantages** -- solver samples: the episode's reward, baseline over the k
   episodes of its task; proposer samples: the proposal's reward, baseline over the G
   proposals of its prompt; then each role standardised on its own
   (:mod:`training.selfplay_steps`);
5. **update** -- the engine sleeps (vLLM's sleep mode, ``generation.vllm_sleep``), the sampler-trainer
   log-probability gap is measured on the round's solver episodes (and checked:
   :mod:`training.weight_sync`), then the optimizer step(s) of ``selfplay.schedule`` on the one model
   (environment tokens masked out), then, with ``selfplay.distill``, a
   recovery-step distillation step on the round's failed episodes
   (:func:`training.distill.recovery_samples`; teacher ``distill.teacher``: the
   reference trajectories or a backend), and with ``selfplay.recovery.enabled`` a
   format-recovery step: the free stream's unparsed proposals (and, with
   ``selfplay.recovery.documents``, those of N more documents written for it)
   continued under the free stream's structure's grammar from their first step it rejects
   (:mod:`training.format_recovery`; the decoding grammar is the teacher); the
   generator is synced (vLLM);
6. **skills** -- statistics, prune / merge, and with ``selfplay.write_skills`` the
   policy writes refinements and new skills from successful exploration
   environments, each kept only if its probes pass the gate and its validator
   (:mod:`envgen.skills.authoring`); the library after the round is saved to
   ``RUN/skill-rounds/round-NNNN`` (``envwright skills diff`` compares two);
7. **bookkeeping** -- kept environments into the library, metrics
   (``metrics.jsonl`` and ``report_to``; :mod:`training.selfplay_metrics`), and a
   checkpoint (model, optimizer, round state, RNG, skill library) every
   ``selfplay.checkpoint_every`` rounds.

After the last round the held-out set is scored once more (``eval_final`` in
``summary.json``). ``run.resume`` (a checkpoint folder or ``latest``) restarts from
a checkpoint: weights, optimizer, every RNG, the controller's RNG and the skill
library are restored and the run continues with the next round.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import shutil
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envgen.library import Library
from envgen.proposers.llm import LLMProposer
from envgen.skills import Controller, SkillLibrary, run_round
from envgen.skills.authoring import SkillWriter
from envgen.skills.round import RoundResult
from gym_envs.messages import ChatFormat
from gym_envs.seeding import stable_seed
from gym_envs.spec import EnvSpec
from training.checkpoint import (
    load_training_state,
    prune_checkpoints,
    save_checkpoint,
    seed_everything,
)
from training.config import TrainConfig, config_to_dict
from training.format_recovery import RecoveryRiders
from training.generation import Generator, PolicyBackend
from training.loss import make_optimizer, reference_logprobs, update, update_config
from training.metrics import MetricsWriter, drop_rounds_from
from training.rewards import solve_rate
from training.rollout import Episode, TaskRef, rollout
from training.selfplay_metrics import (
    append_episodes,
    failures,
    histogram,
    pass_rate,
    round_record,
    round_rows,
    with_raw,
)
from training.selfplay_steps import assign_advantages, draw_tasks, proposer_samples, scheduled_update, solver_samples
from training.weight_sync import sampler_report

__all__ = ["SelfPlay", "heldout_tasks", "histogram", "make_optimizer", "rollout_seed", "seed_everything",
           "update_config"]


def rollout_seed(run_seed: int, r: int) -> int:
    """The rollout seed of round ``r`` (``rounds + 1``: the final held-out scoring), the same in self-play and in
    its baseline, so the two runs play their held-out tasks with the same episode seeds, round by round."""
    return stable_seed(run_seed, "rollout", r)


def heldout_tasks(sources: Sequence[str], per_env: int | None, attempts: int, seed: int) -> list[TaskRef]:
    """The held-out tasks of ``selfplay.eval_envs`` (the first ``per_env`` of each environment; each episode gets the
    actions its task needs: :func:`training.rollout.step_budget`), each ``attempts`` times (episode seeds fixed per
    run). Each task names its source, so the held-out score is also reported per source."""
    if not sources:
        return []
    from training.solver import load_sourced_specs

    chosen = [TaskRef(s, t.id, source=source) for source, s in load_sourced_specs(list(sources))
              for t in s.tasks[:per_env]]
    return [TaskRef(t.spec, t.task_id, stable_seed(seed, "heldout", a), t.source) for t in chosen
            for a in range(attempts)]


class SelfPlay:
    """The self-play trainer (see the module docstring).

    Args:
        cfg: the configuration.
        model, tokenizer: the policy already loaded (default: loaded from ``model:`` or the checkpoint).
        generator: replaces the configured generation engine (tests, benchmarks).
        docs: the document pool (default: ``selfplay.corpus``, ``selfplay.docs`` of them).
        teacher: replaces ``distill.teacher`` for the distillation phase.
    """

    def __init__(self, cfg: TrainConfig, *, model: Any = None, tokenizer: Any = None,
                 generator: Generator | None = None, docs: list[Any] | None = None, teacher: Any = None):
        from training.model import make_generator, open_policy_run
        from training.parallel import check_world

        check_world(cfg, "selfplay")  # one process; two GPUs: vLLM server mode
        self.cfg = cfg
        sp = cfg.selfplay
        run = open_policy_run(cfg, model, tokenizer)
        self.run_dir, self.resume_from, self.model, self.tokenizer = (run.run_dir, run.resume_from, run.model,
                                                                      run.tokenizer)
        self.grpo, self.update_cfg, self.optimizer = run.grpo, run.update_cfg, run.optimizer
        model, tokenizer = self.model, self.tokenizer
        self.reference = reference_logprobs(model, self._reference_model()) if self.grpo.beta else None
        self.chat = ChatFormat(tokenizer, pass_tools=cfg.rollout.pass_tools)
        self.generator = generator or make_generator(cfg, model, tokenizer)
        self.generator.track(self.optimizer)  # an engine with its own weights refuses to generate unsynced
        self._from_prefix: Generator | None = None  # the format recovery's, where the engine cannot
        self.backend = PolicyBackend(self.generator, self.chat, model_id=cfg.model.name_or_path or "policy")
        self.proposer = self._proposer(sp.proposer.structure)
        self.explore_proposer = self._explore_proposer()
        self.skills_dir = self.run_dir / "skills"
        #: tags the environments this run keeps in the library, per round (``TAG/round-NNNN``)
        self.run_tag = "selfplay-" + hashlib.sha1(str(self.run_dir.resolve()).encode()).hexdigest()[:12]
        self._init_skills(fresh=self.resume_from is None)
        writer = (SkillWriter(self.backend, self.proposer, probes=sp.controller.probes, executor=sp.round.validation,
                              constrained=sp.proposer.constrained) if sp.write_skills else None)
        self.controller = Controller(SkillLibrary(self.skills_dir), sp.controller, writer=writer)
        self.library = Library(sp.library or self.run_dir / "library")
        self.docs = docs if docs is not None else self._load_docs()
        self.probe_docs = self._probe_docs()
        self.free_proposer = self._proposer(sp.proposer.structure, constrained=False,
                                            max_new_tokens=sp.probe.max_tokens)
        self.eval_tasks = heldout_tasks(sp.eval_envs, sp.eval_tasks_per_env, sp.eval_attempts, cfg.run.seed)
        self.teacher = teacher
        self.metrics = MetricsWriter(self.run_dir, cfg.run.report_to, run_name=cfg.run.run_name,
                                     config=config_to_dict(cfg))
        (self.run_dir / "config.json").write_text(json.dumps(config_to_dict(cfg), indent=1, default=str))
        self.start_round = 0
        self.history: list[dict[str, Any]] = []
        self._round = 0
        self._episodes: list[Episode] = []
        self._groups: list[str] = []
        self._eval_episodes: list[Episode] = []
        self._env_rates: list[float] = []
        if self.resume_from is not None:
            self._restore(self.resume_from)
            self.generator.sync()  # a vLLM engine starts from the base weights
        self._discard_rounds_from(self.start_round)

    # -- setup ------------------------------------------------------------------------------------
    def _proposer(self, structure: str, *, constrained: bool | None = None,
                  max_new_tokens: int | None = None) -> LLMProposer:
        p = self.cfg.selfplay.proposer
        budget = min(max_new_tokens, p.max_new_tokens) if max_new_tokens else p.max_new_tokens
        return LLMProposer(self.backend, max_new_tokens=budget, temperature=p.temperature, top_p=p.top_p,
                           excerpt_tokens=p.excerpt_tokens, n_examples=p.n_examples, example_tokens=p.example_tokens,
                           skill_level=p.skill_level, system_prompt=p.system_prompt, structure=structure,
                           constrained=p.constrained if constrained is None else constrained)

    def _explore_proposer(self) -> LLMProposer | None:
        """The exploration stream's own proposer where its structure, grammar or budget differ from the skill
        stream's (``proposer.explore_structure`` / ``explore_constrained`` / ``explore_max_tokens``); None: the
        skill stream's proposer, with no skill."""
        p = self.cfg.selfplay.proposer
        structure = p.explore_structure or p.structure
        constrained = p.constrained if p.explore_constrained is None else p.explore_constrained
        budget = min(p.explore_max_tokens or p.max_new_tokens, p.max_new_tokens)
        if (structure, constrained, budget) == (p.structure, p.constrained, p.max_new_tokens):
            return None
        return self._proposer(structure, constrained=constrained, max_new_tokens=budget)

    def _probe_docs(self) -> list[Any]:
        """The fixed documents of ``selfplay.probe`` (a seeded order of the pool, the same every round;
        a pool smaller than the probe is gone through again)."""
        n = self.cfg.selfplay.probe.documents
        order = random.Random(stable_seed(self.cfg.run.seed, "probe-documents")).sample(self.docs, len(self.docs))
        return [order[i % len(order)] for i in range(n)] if n and order else []

    def _probe(self, r: int) -> dict[str, Any] | None:
        """``selfplay.probe``: the policy as it starts round ``r`` (``rounds``: the final policy)
        writes a proposal for each probe document without the decoding grammar; the share the gate accepts
        (round 0: the warm start). None when off or not due (``selfplay.probe.every``)."""
        sp = self.cfg.selfplay
        if not self.probe_docs or (r % sp.probe.every and r != sp.rounds):
            return None
        from envgen.gate import validate_spec

        t0 = time.perf_counter()
        k = sp.probe.samples  # proposals per document, in one batch
        docs = [d for d in self.probe_docs for _ in range(k)]
        props = self.free_proposer.propose_batch(docs, seed=stable_seed(self.cfg.run.seed, "probe", r))
        verdicts = [validate_spec(p.spec, executor=self.cfg.selfplay.round.validation) if p.spec is not None
                    else None for p in props]
        accepted = sum(v is not None and v.accepted for v in verdicts)
        n = len(docs)
        self._keep_probe(r, props, verdicts, k)
        return {"documents": len(self.probe_docs), "samples": k, "parsed": sum(p.spec is not None for p in props) / n,
                "acceptance": accepted / n, "failures": failures(props), "seconds": time.perf_counter() - t0}

    def _keep_probe(self, r: int, props: Sequence[Any], verdicts: Sequence[Any], samples: int = 1) -> None:
        """``RUN/probes/round-R.jsonl``: each probe proposal's document (and sample, ``samples`` a document),
        outcome, failure code (and a blueprint's schema problems), finish reason, token count and completion, to
        read what the policy writes without the grammar."""
        from gym_envs.spec import atomic_write_text

        lines = []
        for i, (p, v) in enumerate(zip(props, verdicts, strict=True)):
            meta = p.meta or {}
            lines.append(json.dumps({"round": r, "doc_id": p.doc_id, "sample": i % samples,
                                     "parsed": p.spec is not None, "accepted": bool(v is not None and v.accepted),
                                     "error_code": None if p.spec is not None else str(meta.get("error_code")),
                                     "error": p.error, "schema_errors": meta.get("schema_errors"),
                                     "finish_reason": meta.get("finish_reason"),
                                     "completion_tokens": p.completion_tokens, "completion": p.raw}))
        (self.run_dir / "probes").mkdir(exist_ok=True)
        atomic_write_text(self.run_dir / "probes" / f"round-{r}.jsonl", "\n".join(lines) + "\n")

    def _reference_model(self) -> Any:
        """A frozen copy for the KL penalty (None with LoRA: the adapter is switched off instead)."""
        import copy

        if hasattr(self.model, "disable_adapter"):
            return None
        ref = copy.deepcopy(self.model).eval()
        for prm in ref.parameters():
            prm.requires_grad_(False)
        return ref

    def _init_skills(self, *, fresh: bool) -> None:
        """The skill library to start from: ``selfplay.skills`` or the built-in skills. A fresh start replaces
        what an earlier start that never reached a checkpoint left in ``RUN/skills`` (a resumed run's skills
        come from its checkpoint)."""
        if self.skills_dir.exists() and any(self.skills_dir.iterdir()):
            if not fresh:
                return
            warnings.warn(f"{self.skills_dir}: an earlier start that reached no checkpoint left skills here; this "
                          "fresh start replaces them", stacklevel=3)
            shutil.rmtree(self.skills_dir)
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

    def _discard_rounds_from(self, first: int) -> None:
        """Remove what rounds ``first`` and later of an earlier start wrote (that start ended before their
        checkpoint): the environments they kept in the library, their metrics and episode lines and their
        skill snapshots. A resumed run then continues from exactly its checkpoint's state, and a fresh start
        (``first`` = 0) in the folder of a start that never reached a checkpoint begins clean."""
        mine = self.library.run_env_ids(f"{self.run_tag}/round-")
        stale = [i for i, tag in mine.items() if int(tag.rsplit("/round-", 1)[1]) >= first]
        gone = {"environments in the library": self.library.remove(stale)}
        for name in ("metrics.jsonl", "episodes.jsonl"):
            gone[f"lines of {name}"] = drop_rounds_from(self.run_dir / name, first)
        snaps = [p for p in (self.run_dir / "skill-rounds").glob("round-*")
                 if p.name[6:].isdigit() and int(p.name[6:]) >= first]
        for snap in snaps:
            shutil.rmtree(snap)
        gone["skill snapshots"] = len(snaps)
        if any(gone.values()):
            what = ", ".join(f"{n} {k}" for k, n in gone.items() if n)
            warnings.warn(f"{self.run_dir} goes on from round {first}: an earlier start had written round {first} or "
                          f"later without a checkpoint this run resumes from; discarded its {what}", stacklevel=3)

    # -- one round --------------------------------------------------------------------------------
    def _eval_due(self, r: int) -> bool:
        return bool(self.eval_tasks) and r % self.cfg.selfplay.eval_every == 0

    def _solve(self, specs: Sequence[EnvSpec]) -> list[float]:
        """Every valid proposal's drawn tasks k times (plus the held-out tasks when due), in one batch; returns
        each environment's solve rate p̂."""
        cfg = self.cfg
        k = cfg.solver.num_generations
        refs, groups, owner = [], [], []
        for i, spec in enumerate(specs):
            for tid in draw_tasks(spec, cfg.selfplay.tasks_per_env, stable_seed(cfg.run.seed, "tasks", self._round)):
                refs += [TaskRef(spec, tid, stable_seed(cfg.run.seed, "episodes", self._round))] * k
                groups += [f"{self._round}:{i}/{tid}"] * k  # by position: two proposals may share an id
                owner += [i] * k
        extra = self.eval_tasks if self._eval_due(self._round) else []
        seed = rollout_seed(cfg.run.seed, self._round)
        episodes = rollout(refs + extra, self.generator, self.chat, cfg.rollout, seed=seed)
        self._episodes, self._eval_episodes = episodes[: len(refs)], episodes[len(refs):]
        self._groups = groups
        per: list[list[Episode]] = [[] for _ in specs]
        for e, i in zip(self._episodes, owner, strict=True):
            per[i].append(e)
        by_reward = cfg.selfplay.solve_rate == "reward"
        rates = [(sum(e.reward for e in eps) / len(eps) if by_reward else solve_rate([e.passed for e in eps]))
                 if eps else 0.0 for eps in per]
        self._env_rates = [max(0.0, min(1.0, r)) for r in rates]
        return self._env_rates

    def _distill(self) -> tuple[dict[str, Any] | None, float]:
        """The optional recovery-step distillation phase on the round's failed episodes."""
        if not self.cfg.selfplay.distill:
            return None, 0.0
        from training.distill import make_teacher, recovery_samples
        from training.model import context_window

        t0 = time.perf_counter()
        if self.teacher is None:
            self.teacher = make_teacher(self.cfg)
        failed = [e for e in self._episodes if not e.passed and e.steps][: self.cfg.selfplay.distill_episodes]
        samples, stats = recovery_samples(failed, self.teacher, self.chat, self.cfg,
                                          max_length=context_window(self.model, self.tokenizer)) \
            if failed else ([], {})
        upd = update(self.model, self.optimizer, samples, pad_id=self.chat.pad_id, cfg=self.update_cfg,
                     objective="nll")
        return {"episodes": len(failed), **stats, "update": upd}, time.perf_counter() - t0

    def _format_recovery(self, result: RoundResult, r: int,
                         riders: RecoveryRiders | None = None) -> tuple[dict[str, Any] | None, float]:
        """The optional format-recovery step (:mod:`training.format_recovery`) on the round's unparsed free
        proposals, and those of ``selfplay.recovery.documents`` (``riders``: written in the free stream's
        batch)."""
        if not self.cfg.selfplay.recovery.enabled:
            return None, 0.0
        from envgen.blueprint.schema import max_completion_chars
        from training.format_recovery import recovery_samples, structure_grammar

        t0 = time.perf_counter()
        sp = self.cfg.selfplay
        # the free stream's structure (config validation: a blueprint or a world) and its grammar, with no skill
        schema, parses = structure_grammar(sp.proposer.explore_structure or sp.proposer.structure)
        tok = self.tokenizer
        rode = riders.proposals if riders is not None else None  # None: the round wrote no free stream
        extra = rode if rode is not None else self._recovery_proposals(riders.docs if riders else [], r)
        samples, stats = recovery_samples(
            [c.proposal for c in result.candidates] + extra, self.backend.record_for, self._grammar_generator(),
            schema, parses=parses, decode=lambda ids: tok.decode(ids, skip_special_tokens=True),
            # as constrained proposals are: the schema's worst case (a token is at least a character), so a
            # continuation under the grammar always closes its text
            max_new_tokens=max(sp.proposer.max_new_tokens, max_completion_chars(schema)),
            temperature=sp.proposer.temperature,
            top_p=sp.proposer.top_p, seed=stable_seed(self.cfg.run.seed, "recovery", r), weight=sp.proposer_weight)
        upd = update(self.model, self.optimizer, samples, pad_id=self.chat.pad_id, cfg=self.update_cfg,
                     objective="nll")
        seconds = time.perf_counter() - t0
        if sp.recovery.documents:
            stats["documents"] = len(extra)
            stats["documents_parsed"] = sum(p.spec is not None for p in extra)
            stats["documents_in_round_batch"] = rode is not None
        return {**stats, "update": upd, "seconds": seconds}, seconds

    def _grammar_generator(self) -> Generator:
        """The generator that goes on under a grammar from a prefix: the engine where it can (transformers, and a
        vLLM engine built with our logits processor), else the trainer's own model through transformers (made
        once; :attr:`Generator.continues_grammar`)."""
        if self.generator.continues_grammar:
            return self.generator
        if self._from_prefix is None:
            from training.model import make_generator

            self._from_prefix = make_generator(self.cfg, self.model, self.tokenizer, engine="transformers")
        return self._from_prefix

    def _recovery_docs(self, r: int) -> list[Any]:
        """The documents of ``selfplay.recovery.documents`` in round ``r``: a seeded draw from the pool
        without the acceptance probe's documents (a resumed round draws the same)."""
        n = self.cfg.selfplay.recovery.documents
        if not n:
            return []
        probe = {id(d) for d in self.probe_docs}
        pool = [d for d in self.docs if id(d) not in probe]
        return random.Random(stable_seed(self.cfg.run.seed, "recovery-documents", r)).sample(pool, min(n, len(pool)))

    def _riders(self, r: int) -> RecoveryRiders | None:
        """The free stream's proposer for round ``r``, carrying the format-recovery documents in its batch: the
        round already decodes that batch to its longest proposal, so they cost few extra decoding steps."""
        docs = self._recovery_docs(r)
        return RecoveryRiders(self.explore_proposer or self.proposer, docs) if docs else None

    def _recovery_proposals(self, docs: list[Any], r: int) -> list[Any]:
        """The format-recovery documents' (``docs``, :meth:`_recovery_docs`) proposals in a batch of their own,
        where round ``r`` wrote no free stream to carry them (``round.alpha`` 1); their decoding time counts as
        the recovery step's, not as the round's generation."""
        if not docs:
            return []
        free = self.explore_proposer or self.proposer  # config validation: the free stream writes without grammar
        timer = self.backend.timer
        seconds, tokens = timer.seconds, timer.tokens
        try:
            return list(free.propose_batch(docs, seed=stable_seed(self.cfg.run.seed, "recovery-proposals", r)))
        finally:
            timer.seconds, timer.tokens = seconds, tokens

    def round(self, r: int) -> dict[str, Any]:
        """Run round ``r`` (see the module docstring); returns its metrics."""
        cfg, sp = self.cfg, self.cfg.selfplay
        self._round = r
        probe = self._probe(r)  # before the round's own generation: its records and timer start after it
        self._episodes, self._eval_episodes, self._groups, self._env_rates = [], [], [], []
        self.backend.take_records()
        self.backend.timer.seconds = self.backend.timer.tokens = 0
        t0 = time.perf_counter()
        round_cfg = dataclasses.replace(sp.round, seed=stable_seed(cfg.run.seed, "round", sp.round.seed))
        riders = self._riders(r) if sp.recovery.enabled else None
        self.generator.call_log = [] if cfg.generation.measure_raw else None
        result = run_round(self.controller, self.proposer, self.docs, self._solve, iteration=r, config=round_cfg,
                           library=self.library, explore_proposer=riders or self.explore_proposer,
                           run_id=f"{self.run_tag}/round-{r:04d}")
        calls, self.generator.call_log = self.generator.call_log or [], None
        raw, by_call, t_raw = None, None, 0.0
        if cfg.generation.measure_raw:  # the engine's raw rates at this round's shape (not counted in the round)
            t_raw = time.perf_counter()
            rows, lengths = round_rows(self.backend.records, self._episodes + self._eval_episodes)
            raw = self.generator.raw_throughput(rows, lengths, seed=stable_seed(cfg.run.seed, "raw", r))
            by_call = self.generator.raw_by_call(calls, seed=stable_seed(cfg.run.seed, "raw-calls", r))
            t_raw = time.perf_counter() - t_raw
        prop, missing = proposer_samples(result.candidates, self.backend.record_for, sp.proposer_weight)
        solv = solver_samples(self._episodes, self._groups, sp.solver_weight)
        samples = prop + solv
        assign_advantages(samples)
        trained = [s for s in samples if (s.role == "proposer" and sp.train_proposer)
                   or (s.role == "solver" and sp.train_solver)]
        t1 = time.perf_counter()
        engine = sampler_report(self.generator, self.model, solv, pad_id=self.chat.pad_id, cfg=self.update_cfg,
                                limit=cfg.generation.max_logprob_gap)
        upd = scheduled_update(self.model, self.optimizer, trained, schedule=sp.schedule, pad_id=self.chat.pad_id,
                               cfg=self.update_cfg, reference=self.reference, seed=r)
        t_update = time.perf_counter() - t1
        distill, t_distill = self._distill()
        recovery, t_recovery = self._format_recovery(result, r, riders)
        t2 = time.perf_counter()
        self.generator.sync()
        t_sync = time.perf_counter() - t2
        self._record_solve_rates(result)
        self._snapshot_skills(r)
        seconds = {"round": time.perf_counter() - t0 - t_raw, "update": t_update, "distill": t_distill + t_recovery,
                   "weight_sync": t_sync}
        metrics = round_record(r, result=result, episodes=self._episodes, env_rates=self._env_rates,
                               eval_episodes=self._eval_episodes, missing=missing,
                               n_samples={"proposer": len(prop), "solver": len(solv)}, update=upd, distill=distill,
                               backend_timer=self.backend.timer, seconds=seconds,
                               skills_active=len(self.controller.library), library_size=len(self.library),
                               bins=sp.histogram_bins, generation=engine)
        if cfg.generation.measure_raw:
            metrics["throughput"] = with_raw(metrics["throughput"], raw, by_call)
        if probe is not None:
            metrics["probe"] = probe
        if recovery is not None:
            metrics["format_recovery"] = recovery
        self.metrics.log(metrics, step=r)
        self._write_episodes(r)
        self.history.append(metrics)
        if (r + 1) % sp.checkpoint_every == 0 or r + 1 == sp.rounds:
            self.checkpoint(r)
        return metrics

    def evaluate(self) -> dict[str, Any] | None:
        """The held-out pass rate of the current policy (None without ``selfplay.eval_envs``)."""
        if not self.eval_tasks:
            return None
        rounds = self.cfg.selfplay.rounds
        seed = rollout_seed(self.cfg.run.seed, rounds + 1)
        episodes = rollout(self.eval_tasks, self.generator, self.chat, self.cfg.rollout, seed=seed)
        append_episodes(self.run_dir / "episodes.jsonl", rounds, (), episodes, final=True)
        return pass_rate(episodes)

    def run(self) -> list[dict[str, Any]]:
        """All remaining rounds, then the held-out score of the final policy; returns the rounds' metrics."""
        try:
            for r in range(self.start_round, self.cfg.selfplay.rounds):
                self.round(r)
            final = self.evaluate()
            probe = self._probe(self.cfg.selfplay.rounds)
            summary = {"rounds": self.cfg.selfplay.rounds, "eval_final": final, "probe_final": probe,
                       "library_size": len(self.library), "skills_active": len(self.controller.library)}
            (self.run_dir / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
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

    def _snapshot_skills(self, r: int) -> Path:
        """The skill library as it is after round ``r``: ``RUN/skill-rounds/round-NNNN`` (replaced if there)."""
        dest = self.run_dir / "skill-rounds" / f"round-{r:04d}"
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(self.skills_dir, dest)
        return dest

    def _record_solve_rates(self, result: RoundResult) -> None:
        """Per-task solver results of the kept environments into the library's catalog."""
        kept = {s.spec.id for s in result.kept if s.spec is not None}
        groups: dict[tuple[str, str], list[bool]] = {}
        for e in self._episodes:
            if e.task.env_id in kept:
                groups.setdefault((e.task.env_id, e.task.task_id), []).append(e.passed)
        for (env_id, task_id), passed in groups.items():
            if self.library.get_row(env_id) is not None:
                self.library.record_task_result(env_id, task_id, f"selfplay:{self.backend.model_id}", n=len(passed),
                                                passes=sum(passed))

    # -- observability ----------------------------------------------------------------------------
    def _write_episodes(self, r: int) -> None:
        append_episodes(self.run_dir / "episodes.jsonl", r, self._episodes, self._eval_episodes)

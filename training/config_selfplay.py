"""The self-play section of the training config: rounds, the proposer role, the probe, format recovery.

Role: :class:`SelfPlayConfig` (``selfplay:`` in a config file, see :mod:`training.config`) with its own
sub-sections: :class:`ProposerConfig` (``selfplay.proposer``: the proposer role's sampling and prompt),
:class:`ProbeConfig` (``selfplay.probe``: acceptance without the decoding grammar, measurement only) and
:class:`RecoveryConfig` (``selfplay.recovery``: the format-recovery step). envgen's ``RoundConfig`` and
``ControllerConfig`` nest as they are (``selfplay.round``, ``selfplay.controller``).

Contract: as every section, each field is documented once here, an unknown key is an error naming the
keys, and ``__post_init__`` raises ``ValueError`` saying how to fix a bad value or combination.
"""

from __future__ import annotations

from dataclasses import field
from typing import Literal

from pydantic.dataclasses import dataclass

from envgen.skills.controller import ControllerConfig
from envgen.skills.round import RoundConfig
from training.config_fields import CONFIG, Bool, Float, Int, Section

__all__ = ["RECOVERABLE", "ProbeConfig", "ProposerConfig", "RecoveryConfig", "SelfPlayConfig"]

RECOVERABLE = ("blueprint", "world")
"""The free stream's structures the format recovery can continue under their grammar (``selfplay.recovery``)."""


@dataclass(config=CONFIG)
class ProposerConfig:
    """The proposer role's sampling and prompt (options of envgen's ``llm`` proposer)."""

    #: what the proposer writes: ``blueprint`` (a v1 blueprint, a short typed proposal the one compiler turns into
    #: a spec; the stream a small model can write), ``world`` (a world blueprint, blueprint_version 2: a service
    #: with typed related records, the document's own operations and a policy, compiled by the world compiler;
    #: a routed skill's requirements narrow its grammar: envgen/world/WORLDS.md) or ``spec`` (a whole spec)
    structure: Literal["blueprint", "world", "spec"] = "blueprint"
    #: the exploration stream's structure (None: ``structure``; ``spec``: free exploration by strong models)
    explore_structure: Literal["blueprint", "world", "spec"] | None = None
    constrained: Bool = True  #: decode under the structure's JSON Schema (every completion parses)
    #: decode the exploration stream (no skill) under the grammar too (None: as ``constrained``). ``false``: the
    #: free stream writes on its own, so a proposal may not parse (``round.unparsable_reward``) and its group's
    #: advantages teach the format, while the skill stream keeps the grammar's structure; acceptance then has
    #: room to rise (constrained acceptance starts near 1)
    explore_constrained: Bool | None = None
    #: token budget of an exploration proposal (None: ``max_new_tokens``, which also caps it); an unconstrained
    #: proposal that never closes its JSON decodes to the budget
    explore_max_tokens: Int | None = None
    max_new_tokens: Int = 4096
    temperature: Float = 0.7
    top_p: Float = 0.95
    excerpt_tokens: Int = 1500  #: token budget of the document excerpt
    n_examples: Int = 1  #: example specs shown in the prompt
    example_tokens: Int | None = 3500
    skill_level: Literal["name", "summary", "rules", "full"] = "rules"  #: how much of a routed skill is shown
    system_prompt: str | None = None  #: replaces envgen's proposer system prompt (small models, smoke runs)

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError("max_new_tokens must be >= 1")
        if self.explore_max_tokens is not None and self.explore_max_tokens < 1:
            raise ValueError("explore_max_tokens must be >= 1 or null (max_new_tokens)")
        if self.temperature < 0:
            raise ValueError("temperature must be >= 0")


@dataclass(config=CONFIG)
class ProbeConfig:
    """The acceptance probe (``selfplay.probe``): proposals the policy writes *without* the decoding grammar.

    At the start of a round (``probe`` in the round's metrics) and once more after the last one
    (``probe_final`` in ``summary.json``), the policy writes proposals for a fixed sample of the document
    pool, decoded without the grammar, and the gate judges them. Where constrained decoding carries the
    model (its acceptance starts near 1), this acceptance measures what the model itself learnt to write.
    The probe only measures: it trains nothing, and its proposals are never kept.
    """

    documents: Int = 0  #: probe documents (a seeded sample of the pool, the same every round; 0: off)
    #: rounds between probes (round 0 is always probed, and the final policy after the last round); each probe
    #: costs a proposal batch decoded to its longest proposal
    every: Int = 1
    #: proposals per probe document (from one prompt, in the probe's one batch): acceptance is over all of them,
    #: so more samples lower the probe's noise for few more decoding steps (a batch decodes to its longest)
    samples: Int = 1
    #: token budget of a probe proposal (None: ``proposer.max_new_tokens``, which also caps it); without the
    #: grammar a proposal that never closes its JSON decodes to the budget
    max_tokens: Int | None = None

    def __post_init__(self) -> None:
        if self.documents < 0:
            raise ValueError("documents must be >= 0 (probe documents; 0: off)")
        if self.every < 1 or self.samples < 1:
            raise ValueError("every and samples must be >= 1")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError("max_tokens must be >= 1 or null (proposer.max_new_tokens)")


@dataclass(config=CONFIG)
class RecoveryConfig:
    """The format-recovery step (``selfplay.recovery``, :mod:`training.format_recovery`), once a round.

    The free stream's proposals that did not parse are continued under the grammar from their first step it
    rejects, and the continuation is learnt (masked NLL): the grammar is the teacher of the format. It needs
    the free stream to write blueprints or worlds without the grammar (``selfplay.proposer.explore_constrained:
    false`` and the ``blueprint`` or ``world`` structure); the grammar is that structure's (no skill).
    """

    enabled: Bool = False  #: run the step each round
    #: documents beyond the round's free stream that the policy writes one proposal for without the grammar each
    #: round (in the free stream's batch), for this step only (never solved, scored or kept): more samples to
    #: learn from; a seeded draw from the pool without the probe's documents (0: the free stream's only)
    documents: Int = 0

    def __post_init__(self) -> None:
        if self.documents < 0:
            raise ValueError("documents must be >= 0 (documents a round; 0: the free stream's only)")
        if self.documents and not self.enabled:
            raise ValueError("documents writes proposals for the format-recovery step only: set "
                             "selfplay.recovery.enabled=true, or selfplay.recovery.documents=0")


@dataclass(config=CONFIG)
class SelfPlayConfig:
    """Self-play rounds: the same model proposes environments and solves them."""

    rounds: Int = 10
    corpus: str = "stdlib"  #: ``stdlib``, a PATH (tree, .jsonl, .parquet) or ``hf:NAME``
    docs: Int = 200  #: documents in the pool the rounds draw from
    min_stateful: Float | None = 0.0  #: stateful-score filter of documents (None: no filter)
    skills: str | None = None  #: skill library to start from (None: the built-in skills)
    library: str | None = None  #: environment library folder (None: RUN/library)
    round: Section[RoundConfig] = field(default_factory=RoundConfig)  #: envgen's dual-stream round (n, alpha, ...)
    controller: Section[ControllerConfig] = field(default_factory=ControllerConfig)  #: envgen's skill controller
    proposer: Section[ProposerConfig] = field(default_factory=ProposerConfig)
    #: tasks of each valid proposed environment the solver plays (a seeded draw), ``solver.num_generations``
    #: (k) times each; None: every task
    tasks_per_env: Int | None = 4
    #: p̂, the solve rate the proposer reward is computed from: ``passed`` (the share of an environment's
    #: episodes that passed every check) or ``reward`` (their mean reward in ``rollout.reward_mode``)
    solve_rate: Literal["passed", "reward"] = "passed"
    train_proposer: Bool = True
    train_solver: Bool = True
    proposer_weight: Float = 1.0  #: loss weight of proposer-role samples
    solver_weight: Float = 1.0  #: loss weight of solver-role samples
    #: optimizer steps a round: ``joint`` (one step on both roles' samples) or ``sequential`` (a proposer step,
    #: then a solver step); the distillation phase, when on, is one more step after them
    schedule: Literal["joint", "sequential"] = "joint"
    write_skills: Bool = True  #: the policy writes refinements and new skills (probed before they are kept)
    distill: Bool = False  #: a recovery-step distillation phase each round (teacher: ``distill.teacher``)
    distill_episodes: Int = 16  #: the round's failed solver episodes the distillation phase learns from (at most)
    recovery: Section[RecoveryConfig] = field(default_factory=RecoveryConfig)  #: the format-recovery step
    #: held-out environments the solver is scored on every ``eval_every`` rounds and after the last one
    #: (sources as in ``solver.envs``; never trained on); their episodes share the round's rollout batch
    eval_envs: list[str] = field(default_factory=list)
    eval_every: Int = 1
    eval_attempts: Int = 2  #: episodes per held-out task (sampled at ``rollout.temperature``)
    eval_tasks_per_env: Int | None = None  #: first N tasks of each held-out environment (None: all)
    probe: Section[ProbeConfig] = field(default_factory=ProbeConfig)  #: the acceptance probe (no grammar, gated)
    checkpoint_every: Int = 1  #: rounds between checkpoints
    keep_checkpoints: Int | None = None  #: keep only the newest N (None: all)
    histogram_bins: Int = 5  #: bins of the per-round solve-rate histogram

    def __post_init__(self) -> None:
        if self.rounds < 1:
            raise ValueError("rounds must be >= 1")
        if self.docs < 1:
            raise ValueError("docs must be >= 1")
        if self.tasks_per_env is not None and self.tasks_per_env < 1:
            raise ValueError("tasks_per_env must be >= 1 or null (every task)")
        if not (self.train_proposer or self.train_solver):
            raise ValueError("train_proposer and train_solver are both false: nothing would be trained")
        if self.train_proposer and self.round.group_size < 2:
            raise ValueError("round.group_size is 1: a proposal alone in its group has no GRPO baseline, so the "
                             "proposer would never learn; set selfplay.round.group_size=4 (G proposals per prompt) "
                             "or selfplay.train_proposer=false")
        if self.proposer_weight < 0 or self.solver_weight < 0:
            raise ValueError("proposer_weight and solver_weight must be >= 0")
        if self.checkpoint_every < 1:
            raise ValueError("checkpoint_every must be >= 1")
        if self.keep_checkpoints is not None and self.keep_checkpoints < 1:
            raise ValueError("keep_checkpoints must be >= 1 or null")
        if self.histogram_bins < 1:
            raise ValueError("histogram_bins must be >= 1")
        if self.distill_episodes < 1 or self.eval_every < 1 or self.eval_attempts < 1:
            raise ValueError("distill_episodes, eval_every and eval_attempts must be >= 1")
        if self.eval_tasks_per_env is not None and self.eval_tasks_per_env < 1:
            raise ValueError("eval_tasks_per_env must be >= 1 or null (every task)")
        self._check_format_recovery()

    def _check_format_recovery(self) -> None:
        p = self.proposer
        if not self.recovery.enabled:
            return
        if p.explore_constrained is not False:
            raise ValueError("recovery learns the format where the free stream lost it, so the free stream must "
                             "write without the grammar: set selfplay.proposer.explore_constrained=false, or "
                             "selfplay.recovery.enabled=false")
        if (p.explore_structure or p.structure) not in RECOVERABLE:
            raise ValueError(f"recovery continues the free stream's proposals under the grammar of a blueprint or a "
                             f"world, not of a whole spec: set selfplay.proposer.explore_structure (or structure) "
                             f"to {' or '.join(RECOVERABLE)}, or selfplay.recovery.enabled=false")

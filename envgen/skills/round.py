"""One round of skill self-play generation: the dual stream, in GRPO groups.

A round samples about ``oversample * n`` candidates from two streams:
skill-conditioned (skills routed by the controller; a skill's rules go in the
prompt and its blueprint requirements into the decoding schema, in the structure's own terms for
worlds, and into the v1 compiler)
and free exploration (no skill; ``explore_proposer`` may write whole specs, the
free stream for strong models). Candidates come in **groups**: ``group_size``
(G) proposals sampled from the same prompt (one document, one routed skill), so
the proposer's GRPO baseline is the mean over its own group. Both streams decode in
one batch when their proposers share a backend and its sampling settings
(:func:`envgen.proposers.base.propose_together`: the grammar applies only to the
rows that need it, each row keeps its own token budget).

Every candidate is validated by the gate plus its skill's check (the skill's
validator for whole specs; for the blueprint and world streams, by default, the skill's
requirements validator, :mod:`envgen.skills.requirements`, since the one
compiler writes the code the hand-written validators were written for). All
valid candidates are then solved **in one batch** (``solve(specs) -> solve
rates``: the share of each one's ``k`` solver episodes that passed), and each
gets its proposer reward (:func:`envgen.skills.rewards.proposal_reward`: the
solve-rate reward, an invalid or unparsable value, an optional grounding
bonus). The round keeps the top ``alpha * n`` skill-stream and the top
``(1 - alpha) * n`` exploration environments by reward for the library, records
skill statistics, and ends with the controller's prune / merge / refine /
induce step (high-reward exploration environments are the induction candidates).

The solver is a callable so the same round runs with a synthetic solver (the
simulation), a scripted policy (tests) or the model being trained (training).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from envgen.gate import validate_spec
from envgen.proposers.base import Proposal, Proposer, propose_together
from envgen.skills.controller import Candidate, Controller, RoundLog
from envgen.skills.rewards import proposal_reward, proposer_reward
from envgen.skills.skill import run_validator
from gym_envs.seeding import stable_seed
from gym_envs.spec import EnvSpec

__all__ = ["RoundConfig", "RoundResult", "Scored", "gate_validator", "run_round", "select_dual_stream"]


@dataclass
class RoundConfig:
    """Options of a round."""

    n: int = 8  #: environments kept per round (into the library)
    alpha: float = 0.5  #: share of kept environments (and of candidates) from the skill-conditioned stream
    oversample: float = 2.0  #: candidates generated per kept environment
    group_size: int = 4  #: G: proposals sampled from one prompt (the proposer's GRPO group; 2 or more to learn)
    reward: str = "skill_sp"  #: base proposer reward of a valid proposal (``skill_sp`` or ``spade``)
    invalid_reward: float = 0.0  #: reward of a proposal the gate (or its skill's check) rejected
    unparsable_reward: float = -1.0  #: reward of a proposal that did not parse or compile
    grounding_weight: float = 0.0  #: bonus per unit of grounding for a valid proposal (0: none)
    frontier_low: float = 0.2  #: solve rates in [frontier_low, frontier_high] count as the frontier (metrics)
    frontier_high: float = 0.8
    #: which skill-routed proposals a skill's own ``validator.py`` judges: ``spec`` (whole specs only; a
    #: blueprint- or world-stream proposal is judged by the skill's requirements instead) or ``always``
    skill_validators: Literal["spec", "always"] = "spec"
    validation: str = "worker"  #: executor of the gate
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {self.alpha}")
        if self.n < 1:
            raise ValueError("n must be >= 1")
        if self.oversample < 1.0:
            raise ValueError("oversample must be >= 1 (candidates per kept environment)")
        if self.group_size < 1:
            raise ValueError("group_size must be >= 1 (2 or more gives the proposer a GRPO baseline)")
        proposer_reward(self.reward)
        if not 0.0 <= self.frontier_low <= self.frontier_high <= 1.0:
            raise ValueError("frontier_low and frontier_high must satisfy 0 <= low <= high <= 1")
        if self.grounding_weight < 0:
            raise ValueError("grounding_weight must be >= 0")

    @property
    def groups(self) -> int:
        """Prompts (documents) per round: enough groups of ``group_size`` for ``oversample * n`` candidates."""
        return max(1, math.ceil(round(self.n * self.oversample) / self.group_size))


@dataclass
class Scored:
    """A candidate after validation, solving and reward."""

    proposal: Proposal
    stream: str
    skill_id: str | None
    valid: bool
    reasons: list[str]
    solve_rate: float | None
    reward: float
    group: str = ""  #: the candidates of one group were sampled from the same prompt
    grounding: float | None = None  #: share of its entity and field names found in its document
    doc: Any = None

    @property
    def spec(self) -> EnvSpec | None:
        return self.proposal.spec


@dataclass
class RoundResult:
    """One round of the skill loop: the kept and candidate environments, the log, routing and weights."""
    iteration: int
    kept: list[Scored]
    candidates: list[Scored]
    log: RoundLog
    routing: dict[str, int] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)
    config: RoundConfig = field(default_factory=RoundConfig)

    def metrics(self) -> dict[str, Any]:
        """Per-round numbers for logs and plots."""
        from envgen.catalog import signature_key

        cands = self.candidates
        valid = [c for c in cands if c.valid and c.spec is not None]
        routed = [c.solve_rate for c in self.kept if c.stream == "skill" and c.solve_rate is not None]
        kept_rates = [c.solve_rate for c in self.kept if c.solve_rate is not None]
        rates = [c.solve_rate for c in valid if c.solve_rate is not None]
        lo, hi = self.config.frontier_low, self.config.frontier_high
        grounded = [c.grounding for c in valid if c.grounding is not None]
        per_skill: dict[str, list[float]] = defaultdict(list)
        for c in cands:
            if c.skill_id and c.solve_rate is not None:
                per_skill[c.skill_id].append(c.solve_rate)
        by_stream = {s: [c for c in cands if c.stream == s] for s in ("skill", "explore")}
        return {
            "iteration": self.iteration,
            "candidates": len(cands),
            "groups": len({c.group for c in cands}),
            "validity": len(valid) / len(cands) if cands else 0.0,
            "validity_by_stream": {s: (sum(c.valid for c in v) / len(v) if v else None) for s, v in by_stream.items()},
            "kept": len(self.kept),
            "frontier": (sum(lo <= p <= hi for p in rates) / len(rates)) if rates else None,
            "grounding": statistics.fmean(grounded) if grounded else None,
            "distinct_tool_sets": len({signature_key(c.spec) for c in valid if c.spec is not None}),
            "mean_proposer_reward": statistics.fmean([c.reward for c in cands]) if cands else 0.0,
            "mean_solve_rate_valid": statistics.fmean(rates) if rates else None,
            "mean_solve_rate_routed": statistics.fmean(routed) if routed else None,
            "mean_solve_rate_kept": statistics.fmean(kept_rates) if kept_rates else None,
            "routing": dict(self.routing),
            "weights": dict(self.weights),
            "skill_solve_rates": {k: statistics.fmean(v) for k, v in sorted(per_skill.items())},
            "pruned": self.log.pruned, "refined": self.log.refined, "induced": self.log.induced,
            "merged": self.log.merged, "refused": self.log.refused, "rejected": self.log.rejected,
        }


def select_dual_stream(scored: Sequence[Scored], n: int, alpha: float) -> list[Scored]:
    """Top ``alpha*n`` skill-stream and top ``n - alpha*n`` exploration candidates by reward.

    Invalid candidates are never kept; if one stream runs short, the other fills in.
    """
    n_skill = round(alpha * n)
    valid = [s for s in scored if s.valid and s.spec is not None]
    key = lambda s: (-s.reward, s.spec.id if s.spec else "")  # noqa: E731
    skill = sorted((s for s in valid if s.stream == "skill"), key=key)
    explore = sorted((s for s in valid if s.stream == "explore"), key=key)
    kept = skill[:n_skill] + explore[: n - n_skill]
    rest = sorted(skill[n_skill:] + explore[n - n_skill:], key=key)
    kept += rest[: n - len(kept)]
    return kept


#: ``validator(spec, skill_id, structure) -> reasons`` (empty: valid); ``structure`` is the proposal's
#: (``blueprint``, ``world`` or ``spec``).
Validator = Callable[[EnvSpec, "str | None", str], list[str]]


def gate_validator(controller: Controller, executor: str, skill_validators: str = "spec") -> Validator:
    """The default validity check: the gate, then the routed skill's check (see :class:`RoundConfig`)."""
    from envgen.skills.requirements import requirement_problems

    def check(spec: EnvSpec, skill_id: str | None, structure: str = "spec") -> list[str]:
        verdict = validate_spec(spec, executor=executor)
        reasons = [str(r) for r in verdict.reasons]
        if verdict.accepted and skill_id is not None:
            skill = controller.library.get(skill_id)
            if structure == "spec" or skill_validators == "always":
                reasons += run_validator(skill, spec, executor=executor)
            else:
                reasons += requirement_problems(skill.blueprint, spec, executor=executor)
        return reasons

    return check


@dataclass
class _Group:
    stream: str
    doc: Any
    skill_id: str | None
    proposals: list[Proposal]


def _propose(streams: list[tuple[Proposer, list[Any], list[Any] | None]], g: int,
             seed: int) -> list[list[list[Proposal]]]:
    """``g`` proposals per document from the same prompt for each stream ``(proposer, docs, skills)``, the
    streams in one decoding batch where their proposers can share it
    (:func:`envgen.proposers.base.propose_together`); per stream, the proposals grouped per document."""
    jobs = [(p, [d for d in docs for _ in range(g)], [s for s in skills for _ in range(g)] if skills else None)
            for p, docs, skills in streams]
    out = propose_together(jobs, seed=seed)
    return [[props[i * g:(i + 1) * g] for i in range(len(docs))] for props, (_, docs, _) in zip(out, streams,
                                                                                                 strict=True)]


def _score(groups: list[_Group], check: Validator, solve: Callable[[Sequence[EnvSpec]], Sequence[float]],
           cfg: RoundConfig, iteration: int) -> list[Scored]:
    from envgen.blueprint.grounding import grounding

    out: list[Scored] = []
    for gi, grp in enumerate(groups):
        for p in grp.proposals:
            sc = Scored(p, grp.stream, grp.skill_id, False, [p.error or "unparsable"], None, 0.0,
                        group=f"{iteration}:{gi}", doc=grp.doc)
            if p.spec is not None:
                p.spec.provenance.stream = grp.stream  # type: ignore[assignment]
                p.spec.provenance.skill_id = grp.skill_id
                sc.reasons = check(p.spec, grp.skill_id, str(p.meta.get("structure", "spec")))
                sc.valid = not sc.reasons
                sc.grounding = grounding(p.spec, grp.doc) if grp.doc is not None else None
            out.append(sc)
    valid = [s for s in out if s.valid]
    rates = list(solve([s.spec for s in valid]))  # type: ignore[misc]  # called even with none (held-out scoring)
    if len(rates) != len(valid):
        raise ValueError(f"solve returned {len(rates)} solve rates for {len(valid)} environments")
    for s, r in zip(valid, rates, strict=True):
        s.solve_rate = float(r)
    for s in out:
        s.reward = proposal_reward(cfg.reward, parsed=s.spec is not None, valid=s.valid, solve_rate=s.solve_rate,
                                   grounding=s.grounding, invalid=cfg.invalid_reward,
                                   unparsable=cfg.unparsable_reward, grounding_weight=cfg.grounding_weight)
    return out


def _failures(scored: list[Scored]) -> dict[str, list[str]]:
    failures: dict[str, list[str]] = defaultdict(list)
    for s in scored:
        if not s.skill_id:
            continue
        if not s.valid:
            failures[s.skill_id].extend(s.reasons[:3])
        elif s.solve_rate is not None and s.solve_rate < 0.2:
            failures[s.skill_id].append(f"environment {s.spec.id if s.spec else '?'} was solved in only "
                                        f"{s.solve_rate:.0%} of rollouts")
    return dict(failures)


def run_round(controller: Controller, proposer: Proposer, docs: Sequence[Any],
              solve: Callable[[Sequence[EnvSpec]], Sequence[float]], *, iteration: int,
              config: RoundConfig | None = None, library: Any = None, validator: Validator | None = None,
              explore_proposer: Proposer | None = None, run_id: str | None = None) -> RoundResult:
    """Run one dual-stream round (see the module docstring).

    ``solve(specs) -> solve rates`` solves every valid candidate in one call. ``validator(spec, skill_id,
    structure) -> reasons`` replaces the gate (the simulation uses a synthetic one). ``explore_proposer``
    writes the exploration stream (default: ``proposer``, with no skill). ``run_id`` tags the environments
    kept into ``library`` (a resumed run finds those of rounds after its checkpoint by it).
    """
    cfg = config or RoundConfig()
    check = validator or gate_validator(controller, cfg.validation, cfg.skill_validators)
    doc_list = list(docs)
    if not doc_list:
        raise ValueError("run_round needs at least one document")
    n_groups = cfg.groups
    n_skill = round(n_groups * cfg.alpha) if len(controller.library) else 0
    weights = controller.weights()
    routed = controller.route(n_skill)
    skills = [controller.library.get(s) for s in routed]
    picked = [doc_list[(iteration * n_groups + i) % len(doc_list)] for i in range(n_groups)]
    g = cfg.group_size
    seed = stable_seed(cfg.seed, iteration)  # both streams' proposals of this iteration
    skill_props, explore_props = _propose([(proposer, picked[:n_skill], skills),
                                           (explore_proposer or proposer, picked[n_skill:], None)], g, seed)
    groups = [_Group("skill", d, sid, ps) for d, sid, ps in zip(picked[:n_skill], routed, skill_props, strict=True)]
    groups += [_Group("explore", d, None, ps) for d, ps in zip(picked[n_skill:], explore_props, strict=True)]
    scored = _score(groups, check, solve, cfg, iteration)
    for s in scored:
        if s.skill_id is not None:
            controller.record(s.skill_id, valid=s.valid, solve_rate=s.solve_rate, iteration=iteration,
                              reward=s.reward)
    kept = select_dual_stream(scored, cfg.n, cfg.alpha)
    if library is not None:
        _write(library, kept, run_id)
    candidates = [Candidate(s.spec, s.reward, s.solve_rate, doc=s.doc, blueprint=s.proposal.meta.get("blueprint"))
                  for s in scored if s.stream == "explore" and s.valid and s.spec is not None]
    log = controller.end_round(iteration, candidates, _failures(scored), docs=picked)
    return RoundResult(iteration, kept, scored, log, dict(Counter(routed)), weights, cfg)


def _write(library: Any, kept: list[Scored], run_id: str | None = None) -> None:
    from envgen.library import DuplicateEnv

    for s in kept:
        if s.spec is None:
            continue
        try:
            library.add(s.spec, model=s.proposal.meta.get("model"), run_id=run_id)
        except (DuplicateEnv, FileExistsError):
            continue

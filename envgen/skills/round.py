"""One round of skill self-play generation: the dual stream.

A round draws ``oversample * n`` candidates from two streams: skill-conditioned
(skills routed by the controller) and free exploration (no skill). Every
candidate is validated by the gate (plus its skill's sandboxed validator),
valid ones are solved by the solver (``solve(spec) -> solve rate`` from G
rollouts), and each gets a proposer reward. The round keeps the top
``alpha * n`` skill-stream and the top ``(1 - alpha) * n`` exploration
environments by reward, records skill statistics, writes kept environments to
the library, and ends with the controller's prune / merge / refine / induce
step (exploration environments are the induction candidates).

The solver is a callable so the same round runs with a synthetic solver (the
simulation), a scripted policy (tests) or the model being trained (training).
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from envgen.proposers.base import Proposal, Proposer
from envgen.skills.controller import Candidate, Controller, RoundLog
from envgen.skills.rewards import proposer_reward
from envgen.skills.skill import run_validator
from envgen.validate import validate_spec
from gym_envs.spec import EnvSpec

__all__ = ["RoundConfig", "RoundResult", "Scored", "gate_validator", "run_round", "select_dual_stream"]


@dataclass
class RoundConfig:
    """Options of a round."""

    n: int = 8  #: environments kept per round
    alpha: float = 0.5  #: share of kept environments from the skill-conditioned stream
    oversample: float = 2.0  #: candidates generated per kept environment
    reward: str = "skill_sp"  #: proposer reward (``skill_sp`` or ``spade``)
    validation: str = "worker"  #: executor of the gate
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {self.alpha}")
        if self.n < 1:
            raise ValueError("n must be >= 1")
        if self.oversample < 1.0:
            raise ValueError("oversample must be >= 1 (candidates per kept environment)")


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

    def metrics(self) -> dict[str, Any]:
        """Per-round numbers for logs and plots."""
        cands = self.candidates
        routed = [c.solve_rate for c in self.kept if c.stream == "skill" and c.solve_rate is not None]
        kept_rates = [c.solve_rate for c in self.kept if c.solve_rate is not None]
        per_skill: dict[str, list[float]] = defaultdict(list)
        for c in cands:
            if c.skill_id and c.solve_rate is not None:
                per_skill[c.skill_id].append(c.solve_rate)
        return {
            "iteration": self.iteration,
            "candidates": len(cands),
            "validity": sum(c.valid for c in cands) / len(cands) if cands else 0.0,
            "kept": len(self.kept),
            "mean_proposer_reward": statistics.fmean([c.reward for c in cands]) if cands else 0.0,
            "mean_solve_rate_routed": statistics.fmean(routed) if routed else None,
            "mean_solve_rate_kept": statistics.fmean(kept_rates) if kept_rates else None,
            "routing": dict(self.routing),
            "weights": dict(self.weights),
            "skill_solve_rates": {k: statistics.fmean(v) for k, v in sorted(per_skill.items())},
            "pruned": self.log.pruned, "refined": self.log.refined, "induced": self.log.induced,
            "merged": self.log.merged, "refused": self.log.refused,
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


Validator = Callable[[EnvSpec, "str | None"], list[str]]


def gate_validator(controller: Controller, executor: str) -> Validator:
    """The default validity check: the gate, then the routed skill's sandboxed validator."""

    def check(spec: EnvSpec, skill_id: str | None) -> list[str]:
        verdict = validate_spec(spec, executor=executor)
        reasons = [str(r) for r in verdict.reasons]
        if verdict.accepted and skill_id is not None:
            reasons += run_validator(controller.library.get(skill_id), spec, executor=executor)
        return reasons

    return check


def _score(proposals: list[Proposal], stream: str, skill_ids: list[str | None], check: Validator,
           solve: Callable[[EnvSpec], float], cfg: RoundConfig) -> list[Scored]:
    reward_fn = proposer_reward(cfg.reward)
    out = []
    for p, sid in zip(proposals, skill_ids, strict=True):
        if p.spec is None:
            out.append(Scored(p, stream, sid, False, [p.error or "unparsable"], None,
                              reward_fn(False, None, parsed=False)))
            continue
        p.spec.provenance.stream = stream  # type: ignore[assignment]
        p.spec.provenance.skill_id = sid
        reasons = check(p.spec, sid)
        valid = not reasons
        rate = solve(p.spec) if valid else None
        out.append(Scored(p, stream, sid, valid, reasons, rate, reward_fn(valid, rate)))
    return out


def run_round(controller: Controller, proposer: Proposer, docs: Sequence[Any], solve: Callable[[EnvSpec], float],
              *, iteration: int, config: RoundConfig | None = None, library: Any = None,
              validator: Validator | None = None) -> RoundResult:
    """Run one dual-stream round (see the module docstring).

    ``validator(spec, skill_id) -> reasons`` replaces the gate (the simulation uses a synthetic one).
    """
    cfg = config or RoundConfig()
    check = validator or gate_validator(controller, cfg.validation)
    total = max(1, round(cfg.n * cfg.oversample))
    n_skill = round(total * cfg.alpha) if len(controller.library) else 0
    n_explore = total - n_skill
    weights = controller.weights()
    routed = controller.route(n_skill)
    skills = [controller.library.get(s) for s in routed]
    doc_list = list(docs)
    if not doc_list:
        raise ValueError("run_round needs at least one document")
    pick = lambda i: doc_list[(iteration * total + i) % len(doc_list)]  # noqa: E731
    skill_props = proposer.propose_batch([pick(i) for i in range(n_skill)], seed=cfg.seed + iteration,
                                         skills=skills) if n_skill else []
    explore_props = proposer.propose_batch([pick(n_skill + i) for i in range(n_explore)],
                                           seed=cfg.seed + iteration) if n_explore else []
    scored = _score(skill_props, "skill", list(routed), check, solve, cfg)
    scored += _score(explore_props, "explore", [None] * len(explore_props), check, solve, cfg)
    for s in scored:
        if s.skill_id is not None:
            controller.record(s.skill_id, valid=s.valid, solve_rate=s.solve_rate, iteration=iteration,
                              reward=s.reward)
    kept = select_dual_stream(scored, cfg.n, cfg.alpha)
    if library is not None:
        _write(library, kept)
    failures: dict[str, list[str]] = defaultdict(list)
    for s in scored:
        if not s.skill_id:
            continue
        if not s.valid:
            failures[s.skill_id].extend(s.reasons[:3])
        elif s.solve_rate is not None and s.solve_rate < 0.2:
            failures[s.skill_id].append(f"environment {s.spec.id if s.spec else '?'} was solved in only "
                                        f"{s.solve_rate:.0%} of rollouts")
    candidates = [Candidate(s.spec, s.reward, s.solve_rate) for s in scored
                  if s.stream == "explore" and s.valid and s.spec is not None]
    log = controller.end_round(iteration, candidates, dict(failures))
    return RoundResult(iteration, kept, scored, log, dict(Counter(routed)), weights)


def _write(library: Any, kept: list[Scored]) -> None:
    from envgen.library import DuplicateEnv

    for s in kept:
        if s.spec is None:
            continue
        try:
            library.add(s.spec, model=s.proposal.meta.get("model"))
        except (DuplicateEnv, FileExistsError):
            continue

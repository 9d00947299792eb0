"""The skill controller: routing, pruning, refinement, induction and merging.

Everything here is a pure function of the library's statistics, the config and
a seed, except :meth:`Controller.refine`, which asks a model backend (any
generator backend) to rewrite a skill's rules and hints from failure traces.

* **Routing** (:meth:`Controller.weights`): an upper-confidence rule around the
  solver's frontier. A skill's quality is ``validity * (1 - 2|p - 0.5|)`` (the
  Skill-SP proposer reward of its recent solve rate ``p``, an exponential moving
  average, since the solver improves); its score adds
  ``c * sqrt(ln(N + 1) / (n + 1))`` for exploration; weights are a softmax of
  scores at a temperature. Unseen skills get the prior quality ``prior``.
* **Pruning**: a skill with at least ``prune_min_attempts`` attempts and a recent
  solve rate (exponential moving average) above ``prune_solve_rate`` became
  easy; it is archived.
* **Refinement**: a skill with enough attempts whose validity or solve rate is
  far below the frontier has its rules and hints rewritten.
* **Induction**: an exploration environment with proposer reward at least
  ``induce_min_reward`` becomes a new skill when its content similarity to every
  active skill is below ``novelty_threshold``; otherwise it is refused as a
  duplicate (the log names the skill it duplicates).

With a ``writer`` (:class:`envgen.skills.authoring.SkillWriter`, what self-play
uses) the model writes both: refinements (rules, hints and the required
blueprint structure) and new skills (at most ``max_induced`` a round), and a
written skill replaces or joins the library only if its probes pass the gate and
its validator holds (every refusal is logged with its reason). Without one,
refinement asks ``backend`` for rules and hints as before, and induction builds
the skill from the environment's structure (:func:`skill_from_env`): the
simulation's deterministic path.
* **Merging**: two active skills more similar than ``merge_threshold`` merge;
  the survivor keeps both examples and rules and their statistics pool, the
  other is archived.
"""

from __future__ import annotations

import json
import math
import random
import re
from dataclasses import dataclass, field
from typing import Any

from envgen.skills.library import SkillLibrary, content_similarity, spec_tokens
from envgen.skills.rewards import skill_sp_reward
from envgen.skills.skill import Skill
from gym_envs.parsing import strip_think
from gym_envs.spec import EnvSpec

__all__ = ["Candidate", "Controller", "ControllerConfig", "RoundLog"]


@dataclass
class ControllerConfig:
    """Knobs of the controller (documented in the module docstring)."""

    exploration: float = 0.3
    temperature: float = 0.15
    prior: float = 0.5
    prune_min_attempts: int = 8
    prune_solve_rate: float = 0.85
    refine_min_attempts: int = 4
    refine_below_validity: float = 0.4
    refine_below_solve_rate: float = 0.1
    induce_min_reward: float = 0.6
    novelty_threshold: float = 0.45
    merge_threshold: float = 0.7
    max_skills: int = 40
    max_induced: int = 2  #: model-written skill candidates per round (the best novel exploration environments)
    probes: int = 2  #: probe environments a model-written skill must pass before it is kept (0: none)
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("prune_solve_rate", "refine_below_validity", "refine_below_solve_rate", "induce_min_reward",
                     "novelty_threshold", "merge_threshold", "prior"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {v}")
        if self.temperature <= 0:
            raise ValueError("temperature must be > 0")
        if self.merge_threshold < self.novelty_threshold:
            raise ValueError("merge_threshold must be >= novelty_threshold (else new skills merge at once)")
        if self.max_induced < 0 or self.probes < 0:
            raise ValueError("max_induced and probes must be >= 0")


@dataclass
class Candidate:
    """An exploration-stream environment offered for induction."""

    spec: EnvSpec
    reward: float
    solve_rate: float | None = None
    doc: Any = None  #: the source document (model-written skills are probed on it)
    #: the blueprint (v1 or world) it was compiled from, when it came from the blueprint or world stream
    blueprint: str | None = None


@dataclass
class RoundLog:
    """What the controller changed at the end of a round."""

    iteration: int
    pruned: list[str] = field(default_factory=list)
    refined: list[str] = field(default_factory=list)
    induced: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    merged: list[tuple[str, str]] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)  #: model-written candidates refused, and why


class Controller:
    """Routes generation to skills and evolves the library between rounds."""

    def __init__(self, library: SkillLibrary, config: ControllerConfig | None = None, backend: Any = None,
                 writer: Any = None):
        self.library = library
        self.config = config or ControllerConfig()
        self.backend = backend
        self.writer = writer
        self.rng = random.Random(self.config.seed)
        self.rejected: list[tuple[str, str]] = []  #: this round's refused model-written candidates

    # -- routing -------------------------------------------------------------------------------
    def quality(self, skill: Skill) -> float:
        p = skill.stats.recent_solve_rate
        if p is None:
            return self.config.prior
        v = skill.stats.validity_rate
        return (1.0 if v is None else v) * skill_sp_reward(True, p)

    def weights(self) -> dict[str, float]:
        """Routing distribution over active skills (sums to 1)."""
        skills = list(self.library)
        if not skills:
            return {}
        total = sum(s.stats.attempts for s in skills)
        c = self.config
        scores = {s.id: self.quality(s) + c.exploration * math.sqrt(math.log(total + 1) / (s.stats.attempts + 1))
                  for s in skills}
        top = max(scores.values())
        exp = {k: math.exp((v - top) / c.temperature) for k, v in scores.items()}
        z = sum(exp.values())
        return {k: v / z for k, v in sorted(exp.items())}

    def route(self, n: int) -> list[str]:
        """Draw ``n`` skill ids from the routing distribution (seeded)."""
        w = self.weights()
        if not w:
            return []
        ids = list(w)
        return self.rng.choices(ids, weights=[w[i] for i in ids], k=n)

    # -- statistics ----------------------------------------------------------------------------
    def record(self, skill_id: str, *, valid: bool, solve_rate: float | None, iteration: int,
               reward: float | None = None) -> None:
        """Account one proposal made under a skill (solve rate from G solver rollouts)."""
        skill = self.library.get(skill_id)
        st = skill.stats
        st.proposals += 1
        st.valid += int(valid)
        if valid and solve_rate is not None:
            st.observe(solve_rate)
        st.reward_sum += reward if reward is not None else skill_sp_reward(valid, solve_rate)
        st.last_used = iteration

    # -- evolution -----------------------------------------------------------------------------
    def prune(self, iteration: int) -> list[str]:
        c = self.config
        out = []
        for s in list(self.library):
            p = s.stats.recent_solve_rate
            if s.stats.attempts >= c.prune_min_attempts and p is not None and p > c.prune_solve_rate:
                self.library.archive(s.id, iteration=iteration,
                                     why=f"became easy: recent solve rate {p:.2f} after {s.stats.attempts} attempts")
                out.append(s.id)
        return out

    def needs_refinement(self, skill: Skill) -> bool:
        c = self.config
        st = skill.stats
        if st.proposals - st.proposals_at_refine < c.refine_min_attempts:
            return False  # not enough new evidence since the last rewrite
        v, p = st.validity_rate, st.recent_solve_rate
        return (v is not None and v < c.refine_below_validity) or (p is not None and p < c.refine_below_solve_rate)

    def refine(self, iteration: int, failures: dict[str, list[str]] | None = None,
               docs: list[Any] | None = None) -> list[str]:
        """Rewrite struggling skills (the writer, else rules and hints with the backend); returns refined ids.

        ``docs``: documents the writer's probes of a rewrite are written from.
        """
        failures = failures or {}
        todo = [s for s in self.library if self.needs_refinement(s)]
        if not todo or (self.backend is None and self.writer is None):
            return []
        if self.writer is not None:
            return self._refine_written(iteration, todo, failures, docs or [])
        prompts = [[{"role": "system", "content": _REFINE_SYSTEM},
                    {"role": "user", "content": _refine_prompt(s, failures.get(s.id, []))}] for s in todo]
        completions = self.backend.generate(prompts, max_new_tokens=768, temperature=0.3, seed=iteration)
        out = []
        for s, comp in zip(todo, completions, strict=True):
            parsed = _parse_rules(getattr(comp, "text", comp))
            if parsed is None:
                self.library.log("refine-failed", s.id, iteration, "the model's rewrite could not be parsed")
                continue
            s.rules, s.hints = parsed
            before = (s.stats.validity_rate, s.stats.recent_solve_rate)
            s.stats.proposals_at_refine = s.stats.proposals
            s.stats.recent_solve_rate = None  # the rewrite makes old evidence stale: explore it again
            self.library.save(s)
            self.library.log("refined", s.id, iteration,
                             f"rules and hints rewritten from {len(failures.get(s.id, []))} failure traces "
                             f"(validity {_fmt(before[0])}, recent solve rate {_fmt(before[1])})")
            out.append(s.id)
        return out

    def _refine_written(self, iteration: int, todo: list[Skill], failures: dict[str, list[str]],
                        docs: list[Any]) -> list[str]:
        out = []
        for old, w in zip(todo, self.writer.refine(todo, failures, docs, iteration), strict=True):
            old.stats.proposals_at_refine = old.stats.proposals  # judged on this evidence, kept or not
            if not w.kept or w.skill is None:
                self.rejected.append((old.id, w.why))
                self.library.save(old)
                self.library.log("refine-refused", old.id, iteration, f"the model's rewrite was refused: {w.why}")
                continue
            before = (old.stats.validity_rate, old.stats.recent_solve_rate)
            new = w.skill
            new.stats.recent_solve_rate = None  # the rewrite makes old evidence stale: explore it again
            self.library.save(new)
            self.library.log("refined", new.id, iteration,
                             f"rules, hints and structure rewritten by the model from {len(failures.get(new.id, []))} "
                             f"failure traces (validity {_fmt(before[0])}, recent solve rate {_fmt(before[1])}); "
                             f"{w.why}")
            out.append(new.id)
        return out

    def _skill_id(self, name: str) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40].strip("-") or "skill"
        base = f"induced-{slug}"
        taken = set(self.library.skills) | set(self.library.archived)
        sid, k = base, 2
        while sid in taken:
            sid, k = f"{base}-{k}", k + 1
        return sid

    def _induce_written(self, iteration: int, novel: list[tuple[Candidate, float]]) -> list[str]:
        picked = novel[: self.config.max_induced]
        items = [(c.spec, c.solve_rate, c.blueprint, c.doc) for c, _ in picked]
        taken: set[str] = set()

        def make_id(name: str) -> str:
            sid = self._skill_id(name)
            k = 2
            while sid in taken:
                sid, k = f"{self._skill_id(name)}-{k}", k + 1
            taken.add(sid)
            return sid

        out = []
        for (cand, sim), w in zip(picked, self.writer.induce(items, iteration, make_id), strict=True):
            if not w.kept or w.skill is None:
                self.rejected.append((cand.spec.id, w.why))
                self.library.log("induce-refused", cand.spec.id, iteration, w.why)
                continue
            self.library.add(w.skill, iteration=iteration,
                             why=f"{w.why} (reward {cand.reward:.2f}, max similarity {sim:.2f})")
            out.append(w.skill.id)
        return out

    def induce(self, iteration: int, candidates: list[Candidate]) -> tuple[list[str], list[tuple[str, str]]]:
        """New skills from high-reward exploration environments that are novel in content."""
        c = self.config
        induced, refused = [], []
        novel: list[tuple[Candidate, float]] = []
        for cand in sorted(candidates, key=lambda x: (-x.reward, x.spec.id)):
            if cand.reward < c.induce_min_reward or len(self.library) >= c.max_skills:
                continue
            text = "\n".join(turn.instruction for t in cand.spec.tasks for turn in t.turns)
            near, sim = self.library.most_similar(spec_tokens(cand.spec), text)
            if near is not None and sim >= c.novelty_threshold:
                refused.append((cand.spec.id, near))
                self.library.log("refused", cand.spec.id, iteration,
                                 f"not novel: similarity {sim:.2f} to skill {near!r}")
                continue
            if self.writer is not None:
                novel.append((cand, sim))
                continue
            skill = skill_from_env(cand.spec, iteration)
            if skill.id in self.library.skills or skill.id in self.library.archived:
                continue
            self.library.add(skill, iteration=iteration,
                             why=f"induced from exploration env {cand.spec.id} (reward {cand.reward:.2f}, "
                                 f"max similarity {sim:.2f})")
            induced.append(skill.id)
        if novel:
            induced += self._induce_written(iteration, novel)
        return induced, refused

    def merge(self, iteration: int) -> list[tuple[str, str]]:
        """Merge near-duplicate skills; returns (kept, merged) pairs."""
        out = []
        skills = sorted(self.library, key=lambda s: (s.added_iteration, s.id))
        gone: set[str] = set()
        for i, a in enumerate(skills):
            for b in skills[i + 1:]:
                if a.id in gone or b.id in gone:
                    continue
                sim = content_similarity(a.tool_tokens(), a.fingerprint_text(), b.tool_tokens(), b.fingerprint_text())
                if sim < self.config.merge_threshold:
                    continue
                a.stats = a.stats.pooled(b.stats)
                a.examples = a.examples + [e for e in b.examples if e.id not in {x.id for x in a.examples}]
                a.rules = a.rules + [r for r in b.rules if r not in a.rules]
                a.hints = a.hints + [h for h in b.hints if h not in a.hints]
                a.tags = sorted(set(a.tags) | set(b.tags))
                self.library.save(a)
                self.library.archive(b.id, iteration=iteration, event="merged",
                                     why=f"merged into {a.id!r} (similarity {sim:.2f}); statistics pooled")
                gone.add(b.id)
                out.append((a.id, b.id))
        return out

    def end_round(self, iteration: int, candidates: list[Candidate] | None = None,
                  failures: dict[str, list[str]] | None = None, docs: list[Any] | None = None) -> RoundLog:
        """Prune, merge, refine and induce; save every skill's stats. ``docs``: where refinements are probed."""
        log = RoundLog(iteration)
        self.rejected = []
        log.pruned = self.prune(iteration)
        log.merged = self.merge(iteration)
        log.refined = self.refine(iteration, failures, docs)
        log.induced, log.refused = self.induce(iteration, candidates or [])
        log.rejected = list(self.rejected)
        for s in list(self.library):
            self.library.save(s)
        return log


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def skill_from_env(spec: EnvSpec, iteration: int) -> Skill:
    """A new skill whose example is ``spec`` and whose rules describe its structure."""
    slug = re.sub(r"[^a-z0-9]+", "-", spec.id.lower()).strip("-")[:40] or "skill"
    kinds = sorted({t.kind for t in spec.tasks})
    checks = sorted({c.kind for t in spec.tasks for turn in t.turns for c in turn.checks})
    tables = re.findall(r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?[\"`]?(\w+)", spec.state.schema_sql, re.I)
    return Skill(
        id=f"induced-{slug}", name=f"Like {spec.title}"[:80],
        description=f"Environments shaped like {spec.title!r}: tables {', '.join(tables)}; "
                    f"tools {', '.join(t.name for t in spec.tools)}.",
        tags=["induced", *kinds],
        rules=[f"Model a system with tables {', '.join(tables)} and tools of the same shape "
               f"({', '.join(t.name for t in spec.tools)}).",
               f"Include tasks of kinds {', '.join(kinds)} with checks of kinds {', '.join(checks)}.",
               "State every value the reference uses in the instruction; pin every written column in checks."],
        hints=["Tasks solved about half the time are the most useful; vary which rows and values they touch."],
        examples=[spec], added_iteration=iteration, parent=spec.provenance.skill_id,
    )


_REFINE_SYSTEM = ("You maintain a library of skills that guide a model that writes tool-use environments. "
                  "Rewrite a skill's rules and hints so that environments made with it are valid and solvable "
                  "about half the time. Answer with one JSON object: {\"rules\": [...], \"hints\": [...]}.")


def _refine_prompt(skill: Skill, failures: list[str]) -> str:
    fails = "\n".join(f"- {f}" for f in failures[:12]) or "- (no traces recorded)"
    return (f"{skill.render('rules')}\n\nStatistics: validity {skill.stats.validity_rate}, mean solve rate "
            f"{skill.stats.mean_solve_rate} over {skill.stats.attempts} environments.\n\n"
            f"Recent failures:\n{fails}\n\nReturn the improved rules and hints as JSON.")


def _parse_rules(text: str) -> tuple[list[str], list[str]] | None:
    text = strip_think(text)
    m = re.search(r"\{.*\}", text, re.S)
    if not m:
        return None
    try:
        obj = json.loads(m.group(0))
    except json.JSONDecodeError:
        return None
    rules, hints = obj.get("rules"), obj.get("hints", [])
    if not isinstance(rules, list) or not rules or not all(isinstance(r, str) for r in rules):
        return None
    if not isinstance(hints, list):
        hints = []
    return [r.strip() for r in rules if r.strip()], [str(h).strip() for h in hints if str(h).strip()]

"""A simulation of the skill controller with synthetic solver competences.

No model runs here: each topic has a latent difficulty, an environment's true
solve rate is ``sigmoid(competence - difficulty)``, the observed rate is the
mean of G Bernoulli rollouts, and the solver's competence grows with what it
practises at its frontier (``sum p(1-p)`` of its training environments). The
real :class:`~envgen.skills.controller.Controller`, dual-stream
:func:`~envgen.skills.round.run_round` and skill library run on top, so the
simulation exercises routing, pruning, refinement (a scripted backend rewrites
rules; refined skills get easier), induction with the content novelty check,
and refusal of duplicates.

``envwright skills simulate`` prints per-round numbers and writes the library's
``evolution.log``; the target is a mean solve rate of routed environments in
[0.4, 0.6] after five rounds.
"""

from __future__ import annotations

import json
import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envgen.proposers.base import Proposal, Proposer
from envgen.skills.controller import Controller, ControllerConfig
from envgen.skills.library import SkillLibrary
from envgen.skills.round import RoundConfig, RoundResult, run_round
from envgen.skills.skill import Skill
from gym_envs.seeding import stable_seed
from gym_envs.spec import EnvSpec, parse_spec

__all__ = ["TOPICS", "SimulationConfig", "run_simulation", "synthetic_spec"]

# topic -> (latent difficulty, words used for tool names and task texts)
TOPICS: dict[str, tuple[float, list[str]]] = {
    "notes": (-3.0, ["note", "title", "body", "tag"]),
    "contacts": (-2.2, ["contact", "phone", "email", "group"]),
    "ledger": (0.2, ["account", "balance", "transfer", "entry"]),
    "calendar": (0.8, ["meeting", "slot", "room", "attendee"]),
    "inventory": (-0.3, ["item", "stock", "warehouse", "reorder"]),
    "permissions": (1.4, ["role", "grant", "user", "scope"]),
    "tickets": (0.5, ["ticket", "status", "assignee", "priority"]),
    "shipping": (2.2, ["parcel", "route", "depot", "carrier"]),
    "payroll": (3.5, ["employee", "salary", "period", "deduction"]),
    "recipes": (-1.2, ["recipe", "ingredient", "serving", "step"]),
    # discoverable by exploration only
    "greenhouse": (0.4, ["plant", "sensor", "humidity", "zone"]),
    "observatory": (0.0, ["telescope", "target", "exposure", "night"]),
    "brewery": (0.9, ["batch", "tank", "hops", "gravity"]),
}
INITIAL = ["notes", "contacts", "ledger", "calendar", "inventory", "permissions", "tickets", "shipping",
           "payroll", "recipes"]
# a differently named skill with the same content as "tickets": the controller must merge it
DUPLICATE = ("helpdesk", "tickets")


def synthetic_spec(topic: str, index: int, seed: int) -> EnvSpec:
    """A small structurally valid spec about ``topic`` (content for similarity checks)."""
    words = TOPICS[topic][1]
    rng = random.Random(stable_seed(topic, index, seed))
    main = words[0]
    tools = [
        {"name": f"add_{main}", "description": f"Create a {main}.",
         "parameters": {"type": "object", "properties": {w: {"type": "string"} for w in words[1:3]},
                        "required": words[1:3]}},
        {"name": f"get_{main}", "description": f"Read a {main}.",
         "parameters": {"type": "object", "properties": {f"{main}_id": {"type": "integer"}},
                        "required": [f"{main}_id"]}},
        {"name": f"update_{main}_{words[3]}", "description": f"Change the {words[3]} of a {main}.",
         "parameters": {"type": "object", "properties": {f"{main}_id": {"type": "integer"},
                                                         words[3]: {"type": "string"}},
                        "required": [f"{main}_id", words[3]]}},
    ]
    code = "\n".join([
        f"def add_{main}(db, {words[1]}, {words[2]}):\n    return db.execute('INSERT INTO {main} ({words[1]}, "
        f"{words[2]}) VALUES (?, ?)', ({words[1]}, {words[2]}))\n",
        f"def get_{main}(db, {main}_id):\n    return db.query('SELECT * FROM {main} WHERE id = ?', ({main}_id,))\n",
        f"def update_{main}_{words[3]}(db, {main}_id, {words[3]}):\n    return db.execute('UPDATE {main} SET "
        f"{words[3]} = ? WHERE id = ?', ({words[3]}, {main}_id))\n",
    ])
    n = rng.randint(1, 50)
    tasks = [{"id": f"t{i}", "kind": "execute", "turns": [{
        "instruction": f"Please add a {main} whose {words[1]} is {words[1]}-{n + i} and whose {words[2]} is "
                       f"{words[2]}-{i}, then set its {words[3]} to {words[3]}-{n}.",
        "checks": [{"kind": "sql", "query": f"SELECT count(*) FROM {main}", "expect": [[1]]}],
        "reference": [{"name": f"add_{main}", "arguments": {words[1]: f"{words[1]}-{n + i}",
                                                           words[2]: f"{words[2]}-{i}"}}]}]} for i in range(2)]
    return parse_spec({
        "id": f"sim-{topic}-{seed}-{index}", "title": f"{topic.title()} system",
        "description": f"A synthetic {topic} system.",
        "provenance": {"generator": "template:simulation", "stream": "template", "seed": seed},
        "state": {"schema_sql": f"CREATE TABLE {main} (id INTEGER PRIMARY KEY, {words[1]} TEXT, {words[2]} TEXT, "
                                f"{words[3]} TEXT);"},
        "tools": tools, "code": code, "tasks": tasks,
    })


def _topic_of(spec: EnvSpec) -> str:
    return spec.id.split("-")[1]


@dataclass
class SimulationConfig:
    """The knobs of a skill-loop simulation (rounds, environments per round, the solver model)."""
    rounds: int = 6
    envs_per_round: int = 40
    alpha: float = 0.5
    rollouts: int = 8  #: G: solver attempts per environment
    learning_rate: float = 1.5  #: competence gained per unit of frontier practice (mean p(1-p) of kept envs)
    refine_ease: float = 1.5  #: difficulty removed by a refinement
    seed: int = 0
    controller: ControllerConfig = field(default_factory=ControllerConfig)


class _SyntheticWorld:
    """Latent difficulties, the solver's competence, and a proposer and solver over them."""

    def __init__(self, cfg: SimulationConfig):
        self.cfg = cfg
        self.rng = random.Random(cfg.seed)  # the proposer's draws
        # the solver's and the gate's draws: each its own stream, independent of call order
        self.solve_rng = random.Random(stable_seed(cfg.seed, "solve"))
        self.gate_rng = random.Random(stable_seed(cfg.seed, "gate"))
        self.competence = 0.0
        self.offset: dict[str, float] = {}  # per-skill difficulty change from refinement
        self.difficulty: dict[str, float] = {}
        self.counter = 0
        self.practice: list[float] = []

    def proposer(self, world: _SyntheticWorld) -> Proposer:
        class SyntheticProposer(Proposer):
            name = "synthetic"

            def propose_batch(self, docs: list[Any], *, seed: int = 0,
                              skills: list[Any] | None = None) -> list[Proposal]:
                out = []
                for i, _ in enumerate(docs):
                    skill = skills[i] if skills else None
                    topic = _skill_topic(skill) if skill else world.rng.choice(sorted(TOPICS))
                    world.counter += 1
                    spec = synthetic_spec(topic, world.counter, seed)
                    base = TOPICS[topic][0] - (world.offset.get(skill.id, 0.0) if skill else 0.0)
                    world.difficulty[spec.id] = base + world.rng.gauss(0.0, 0.5)
                    out.append(Proposal(f"doc-{i}", spec, meta={"topic": topic}))
                return out

        return SyntheticProposer()

    def solve(self, specs: Sequence[EnvSpec]) -> list[float]:
        out = []
        for spec in specs:
            p = 1.0 / (1.0 + math.exp(-(self.competence - self.difficulty[spec.id])))
            wins = sum(self.solve_rng.random() < p for _ in range(self.cfg.rollouts))
            out.append(wins / self.cfg.rollouts)
        return out

    def validity(self, spec: EnvSpec, skill_id: str | None, structure: str = "spec") -> list[str]:
        return [] if self.gate_rng.random() < 0.9 else ["synthetic: the gate rejected this one"]

    def learn(self, kept_rates: list[float]) -> None:
        gain = sum(p * (1 - p) for p in kept_rates) / max(1, len(kept_rates))
        self.competence += self.cfg.learning_rate * gain


def _skill_topic(skill: Skill) -> str:
    for t in skill.tags:
        if t.startswith("topic:"):
            return t.split(":", 1)[1]
    for ex in skill.examples:
        if ex.id.startswith("sim-"):
            return _topic_of(ex)
    return INITIAL[0]


class _RefineBackend:
    """A scripted backend: rewrites rules; the simulation makes refined skills easier."""

    def __init__(self, world: _SyntheticWorld, library: SkillLibrary):
        self.world, self.library = world, library

    def generate(self, prompts: list[Any], *, max_new_tokens: int = 512, temperature: float = 0.7,
                 seed: int = 0) -> list[str]:
        """The refinement of each prompt's skill (the sampling settings do not change it)."""
        out = []
        for p in prompts:
            text = p[-1]["content"]
            sid = next((s.id for s in self.library if text.startswith(f"Skill: {s.name}")), None)
            if sid is not None:
                self.world.offset[sid] = self.world.offset.get(sid, 0.0) + self.world.cfg.refine_ease
            out.append(json.dumps({"rules": ["Keep each task to one or two tool calls.",
                                             "State every id and value the solver needs."],
                                   "hints": ["Prefer single-table updates until the solver improves."]}))
        return out


def initial_library(root: Path, seed: int = 0) -> SkillLibrary:
    """Ten synthetic skills, one per initial topic, written to ``root``."""
    lib = SkillLibrary(root)
    for i, topic in enumerate(INITIAL):
        if topic in lib.skills:
            continue
        words = TOPICS[topic][1]
        lib.add(Skill(id=topic, name=f"{topic.title()} systems", description=f"Environments about {', '.join(words)}.",
                      tags=[f"topic:{topic}"], rules=[f"Model {words[0]} records with {', '.join(words[1:])}."],
                      hints=["Vary the rows each task touches."], examples=[synthetic_spec(topic, -1 - i, seed)]),
                iteration=0, why="initial synthetic skill")
    dup, topic = DUPLICATE
    if dup not in lib.skills:
        lib.add(Skill(id=dup, name="Help desk queues", description="Queues of customer requests.",
                      tags=[f"topic:{topic}"], rules=["Model requests that move through states."],
                      examples=[synthetic_spec(topic, -100, seed)]),
                iteration=0, why="initial synthetic skill (same content as 'tickets' under another name)")
    return lib


def run_simulation(root: str | Path, cfg: SimulationConfig | None = None,
                   printer: Any = None) -> list[dict[str, Any]]:
    """Run the simulation in ``root``; returns one metrics dict per round."""
    cfg = cfg or SimulationConfig()
    root = Path(root)
    lib = initial_library(root, cfg.seed)
    world = _SyntheticWorld(cfg)
    controller = Controller(lib, cfg.controller, backend=_RefineBackend(world, lib))
    proposer = world.proposer(world)
    history = []
    docs = [f"doc-{i}" for i in range(64)]
    for it in range(1, cfg.rounds + 1):
        rc = RoundConfig(n=cfg.envs_per_round, alpha=cfg.alpha, seed=cfg.seed, validation="inprocess",
                         group_size=1)  # one synthetic proposal per document: no proposer is trained here
        result: RoundResult = run_round(controller, proposer, docs, world.solve, iteration=it, config=rc,
                                        validator=world.validity)
        # induced skills inherit their topic so the world can keep simulating them
        for sid in result.log.induced:
            s = lib.get(sid)
            s.tags.append(f"topic:{_topic_of(s.examples[0])}")
            lib.save(s)
        kept = [k.solve_rate for k in result.kept if k.solve_rate is not None]
        world.learn(kept)
        m = result.metrics()
        m["competence"] = round(world.competence, 3)
        m["active_skills"] = len(lib)
        history.append(m)
        if printer:
            printer(m)
    (root / "simulation.json").write_text(json.dumps(history, indent=1))
    return history


def summarize(history: list[dict[str, Any]]) -> dict[str, Any]:
    last = history[-1]
    return {"rounds": len(history), "final_mean_solve_rate_routed": last["mean_solve_rate_routed"],
            "in_target": last["mean_solve_rate_routed"] is not None and 0.4 <= last["mean_solve_rate_routed"] <= 0.6,
            "pruned": sorted({s for h in history for s in h["pruned"]}),
            "induced": sorted({s for h in history for s in h["induced"]}),
            "refined": sorted({s for h in history for s in h["refined"]}),
            "refused": sorted({a for h in history for a, _ in h["refused"]}),
            "mean_routed_by_round": [h["mean_solve_rate_routed"] for h in history],
            "validity_by_round": [round(h["validity"], 3) for h in history],
            "median_reward": statistics.median([h["mean_proposer_reward"] for h in history])}

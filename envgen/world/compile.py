"""The world compiler: a world blueprint in, a full environment spec out (deterministic given the seed).

Steps: :func:`~envgen.world.normalize.to_world` (cross-references, defaults, the policy; every repair
recorded), :func:`~envgen.world.rows.fill_rows` (realistic related rows), the renderers of
:mod:`envgen.world.render` (DDL, seed rows, tools, tool code), then the task writer
(:mod:`envgen.world.tasks`), which runs its drafts on the rendered environment and derives every check
from the state the reference reaches. The policy is rendered into the spec's description, which the
solver's system prompt carries.

Contract: :func:`compile_world` returns a :class:`CompiledWorld` whose ``spec`` parses as an
:class:`~gym_envs.spec.EnvSpec`; it raises :class:`~envgen.errors.CompileError` (saying why) when the
world has nothing usable or fewer than three tasks could be written.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from envgen.errors import CompileError
from envgen.gate.antecedents import without_ambiguous_tasks
from envgen.world.blueprint import WorldBlueprint
from envgen.world.code import render_code
from envgen.world.compose import compose
from envgen.world.data import TODAY, Line, Pools, Vocabulary
from envgen.world.model import World
from envgen.world.normalize import to_world
from envgen.world.render import render_state, render_tools
from envgen.world.rows import apply_copies, fill_rows
from envgen.world.sim import Simulator
from envgen.world.tasks import write_tasks
from gym_envs.seeding import stable_seed
from gym_envs.spec import EnvSpec, SpecError, parse_spec

__all__ = ["CompiledWorld", "compile_world", "describe_world", "world_pools"]


@dataclass
class CompiledWorld:
    """A compiled world: the spec, the world model it came from, and what the compiler repaired."""

    spec: EnvSpec
    world: World
    repairs: list[str] = field(default_factory=list)
    families: list[str] = field(default_factory=list)  #: each task's family, in task order
    meta: dict[str, Any] = field(default_factory=dict)


def describe_world(world: World) -> str:
    """The spec's description: what the service is and who the user is (the policy is the spec's own field)."""
    who = "a member of staff" if world.operator else world.persona
    keys = ", ".join(sorted({e.key.name.replace("_", " ") for e in world.entities}))
    if world.parts:
        head = (f"{world.title}: one assistant for {len(world.parts)} services ("
                + "; ".join(f"{p.title}, {p.domain}, tools prefixed {p.prefix}_" for p in world.parts) + "). ")
    else:
        head = f"{world.title}: {world.domain}. "
    return (f"{head}You are the service's assistant; the user is {who}. Today is {TODAY:%A, %B} {TODAY.day}, "
            f"{TODAY.year}. Records are named by their keys ({keys}).")


def world_pools(bp: WorldBlueprint, world: World, rng: random.Random) -> Pools:
    """The value sources of a world's seed rows: the blueprint's vocabulary and currency, drawn with ``rng``."""
    lines = [Line(list(li.titles), list(li.adjectives), li.category, (li.price[0], li.price[1]) if li.price else None)
             for li in bp.vocabulary.lines]
    vocab = Vocabulary(titles=list(bp.vocabulary.titles), adjectives=list(bp.vocabulary.adjectives), lines=lines,
                       notes=list(bp.vocabulary.notes), categories=list(bp.vocabulary.categories),
                       prefixes={e.name: e.prefix for e in world.entities})
    return Pools(rng, vocab, bp.currency)


def compile_world(bp: WorldBlueprint | list[WorldBlueprint], *, env_id: str, seed: int = 0, n_tasks: int = 8,
                  source: dict[str, Any] | None = None, provenance: dict[str, Any] | None = None,
                  require_tasks: dict[str, int] | None = None) -> CompiledWorld:
    """Compile ``bp`` (or several, composed: :mod:`envgen.world.compose`) into a spec called ``env_id``.
    ``require_tasks`` (a routed skill's least task counts by kind) has the task writer draft those kinds first
    (:func:`envgen.world.tasks.write_tasks`), as far as the world's structure allows: the skill's check counts them."""
    try:
        return _compile(bp, env_id=env_id, seed=seed, n_tasks=n_tasks, source=source, provenance=provenance,
                        require_tasks=require_tasks)
    except (SpecError, ValueError) as e:
        if isinstance(e, CompileError):
            raise
        raise CompileError(f"the world does not compile: {e}") from None


def _compile(bp: WorldBlueprint | list[WorldBlueprint], *, env_id: str, seed: int, n_tasks: int,
             source: dict[str, Any] | None, provenance: dict[str, Any] | None,
             require_tasks: dict[str, int] | None = None) -> CompiledWorld:
    repairs: list[str] = []
    bps = bp if isinstance(bp, list) else [bp]
    world = compose(bps, repairs) if len(bps) > 1 else to_world(bps[0], repairs)
    parts = world.parts or [world]
    rng = random.Random(stable_seed("world-rows", env_id, seed))
    pools = [world_pools(b, p, rng) for b, p in zip(bps, parts, strict=True)]
    rows: dict[str, list[dict[str, Any]]] = {}
    for part, pool in zip(parts, pools, strict=True):
        rows.update(fill_rows(part, pool))
    apply_copies(world, rows)
    schema_sql, seed_sql = render_state(world, rows)
    base: dict[str, Any] = {
        "spec_version": 2, "policy": [{"text": r.text, "enforced": r.enforced} for r in world.policy],
        "id": env_id, "title": world.title, "description": describe_world(world),
        "state": {"schema_sql": schema_sql, "seed_sql": seed_sql},
        "tools": render_tools(world), "code": render_code(world),
        "tasks": [{"id": "placeholder", "kind": "read",
                   "turns": [{"instruction": "-", "checks": [{"kind": "unchanged", "tables": []}]}]}],
    }
    if source is not None:
        base["source"] = source
    if provenance is not None:
        base["provenance"] = provenance
    sim = Simulator(parse_spec(base, source=env_id))
    try:
        tasks, families = write_tasks(world, sim, pools, random.Random(stable_seed("world-tasks", env_id, seed)),
                                      n_tasks, require=require_tasks)
    finally:
        sim.close()
    if len(tasks) < 3:
        raise CompileError(f"only {len(tasks)} tasks could be written for this world (at least 3 are needed): "
                           f"give the main entity more operations that change it")
    spec = parse_spec({**base, "tasks": tasks}, source=env_id)
    kept = without_ambiguous_tasks(spec, repairs, least=3)
    if kept is not spec:
        ids = {t.id for t in kept.tasks}
        families = [f for t, f in zip(spec.tasks, families, strict=True) if t.id in ids]
        spec = kept
    return CompiledWorld(spec, world, repairs, families, {"tables": {t: len(r) for t, r in rows.items()}})

"""Composition: two or three worlds as one environment, with namespaced tools and one database.

Role: a real assistant serves several services at once, and most of the tools it sees are irrelevant to
any one request (BFCL offers about 28 tools a task). :func:`compose` joins the world models of several
blueprints: every tool is prefixed with its part's short name (``store_cancel_order``,
``clinic_book_appointment``), an entity whose name another part also uses is prefixed too (so tables
never collide), and the policies are kept per part, each rule tagged with its service. The task writer
then writes tasks part by part and tasks whose turns go to two parts
(:func:`envgen.world.tasks.write_tasks`).

Contract: the composed world's tool names are unique and each part's world model (``World.parts``) keeps
pointing to the same entity and operation objects as the composed one.
"""

from __future__ import annotations

import re

from envgen.world.blueprint import WorldBlueprint
from envgen.world.model import World
from envgen.world.normalize import to_world

__all__ = ["compose", "part_prefix"]


def part_prefix(bp: WorldBlueprint, taken: set[str]) -> str:
    """A short, unique snake_case name for a part (``store``, ``clinic``): its id's or title's first word."""
    words = re.findall(r"[a-z]+", (bp.id or bp.title).lower())
    base = next((w for w in words if len(w) >= 3), "part")[:12]
    name, n = base, 2
    while name in taken:
        name, n = f"{base}{n}", n + 1
    taken.add(name)
    return name


def compose(bps: list[WorldBlueprint], repairs: list[str]) -> World:
    """The composed world of ``bps`` (see the module docstring); ``World.parts`` holds each part."""
    if len(bps) < 2:
        raise ValueError("compose needs at least two worlds")
    taken: set[str] = set()
    parts: list[World] = []
    seen_entities: set[str] = set()
    for i, bp in enumerate(bps):
        mine: list[str] = []
        part = to_world(bp, mine)
        prefix = part_prefix(bp, taken)
        repairs += [f"part {prefix}: {r}" for r in mine]
        for ent in part.entities:
            if ent.name in seen_entities:
                ent.name = f"{prefix}_{ent.name}"
            seen_entities.add(ent.name)
        renamed = {}
        for op in part.ops:
            renamed[op.name] = f"{prefix}_{op.name}"
            op.name = renamed[op.name]
        for rule in part.policy:
            if rule.op is not None:
                rule.op = renamed.get(rule.op, rule.op)
            for old, new in renamed.items():
                rule.text = rule.text.replace(f"`{old}`", f"`{new}`")
            rule.text = f"[{part.title}] {rule.text}"
        part.prefix = prefix
        parts.append(part)
        del i
    world = World(
        title=" + ".join(p.title for p in parts),
        domain="; ".join(f"{p.title}: {p.domain}" for p in parts),
        persona=" / ".join(dict.fromkeys(p.persona for p in parts)),
        summary="one assistant for " + ", ".join(p.title for p in parts),
        entities=[e for p in parts for e in p.entities], ops=[o for p in parts for o in p.ops],
        policy=[r for p in parts for r in p.policy], currency=parts[0].currency,
        operator=all(p.operator for p in parts), words=sorted({w for p in parts for w in p.words}))
    world.parts = parts
    return world

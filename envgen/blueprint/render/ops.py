"""Tool names and the operations every main entity gets: the compiler's naming of tools.

Role: :func:`join_tool_name` joins a verb and nouns into a tool name (at most 64 characters),
:func:`free_tool_name` numbers a name that is taken, and :func:`complete_ops` adds the tools every
main entity needs (create, get, find, list, update) to the ones a blueprint or a document named.
The normalizer (:mod:`envgen.blueprint.normalize`) and the template proposer's design step
(:mod:`envgen.proposers.template.build`) both name tools through these.

Contract: deterministic for the same arguments and ``rng`` state; the five tools are always there,
a name already used getting a number.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Container

from envgen.blueprint.render.model import Entity, Op

__all__ = ["complete_ops", "free_tool_name", "join_tool_name"]


def join_tool_name(*parts: str) -> str:
    """``parts`` joined by ``_`` (empty ones left out), cut to 64 characters."""
    name = "_".join(p for p in parts if p)
    return name[:64].rstrip("_")


def free_tool_name(name: str, taken: Container[str], tries: int | None = None) -> str:
    """``name``, else the first of ``name_2``, ``name_3``, ... not in ``taken`` (at most ``tries - 2``
    numbers when ``tries`` is given: ValueError when they are all taken)."""
    if name not in taken:
        return name
    for k in itertools.count(2) if tries is None else range(2, tries):
        if (alt := f"{name[:60]}_{k}") not in taken:
            return alt
    raise ValueError(f"cannot find a free tool name for {name!r}")


def complete_ops(ent: Entity, ops: list[Op], rng: random.Random, taken: set[str] | frozenset[str] = frozenset()
                 ) -> list[Op]:
    """Add the tools every main entity needs: create, get, find, list, update. A name already used (by
    ``ops`` or in ``taken``: other entities' tools) gets a number, so the five are always there."""
    kinds = {o.kind for o in ops}
    names = {o.tool for o in ops} | set(taken)
    extra: list[Op] = []

    def add(kind: str, tool: str, **kw: object) -> None:
        free = free_tool_name(tool, names)
        names.add(free)
        extra.append(Op(kind, ent, free, "", **kw))  # type: ignore[arg-type]

    if "create" not in kinds:
        add("create", join_tool_name(rng.choice(["create", "add", "register", "new"]), ent.name))
    if "get" not in kinds:
        add("get", join_tool_name("get", ent.name))
    if "find" not in kinds:
        add("find", join_tool_name(rng.choice(["find", "lookup", "search"]), ent.name))
    if "list" not in kinds:
        add("list", join_tool_name("list", ent.table))
    if "update" not in kinds:
        cols = [c for c in ent.columns if c.sqltype != "BOOLEAN"] or ent.columns
        col = rng.choice(cols)
        add("update", join_tool_name(rng.choice(["update", "set", "change"]), ent.name, col.name), column=col)
    order = {"create": 0, "get": 1, "find": 2, "list": 3, "update": 4, "adjust": 5, "transfer": 6, "status": 7,
             "delete": 8}
    return sorted(ops + extra, key=lambda o: order[o.kind])

"""The ``world`` proposer: a service from the domain catalog running the document's own operations, no model.

Role: the default proposer of ``envwright generate``. For each document the AST world writer
(:func:`envgen.proposers.world.writer.write_world`) reads what the code does (a queue, a lock, a ledger...) and grafts
its operations onto a catalog domain that can host them; the world compiler
(:func:`envgen.world.compile.compile_world`) turns that into a spec (spec_version 2): four or more tables of
realistic related rows, tools named after the document's functions and the domain's records, a policy,
and tasks a person would ask, checked against the state their reference reaches.

``compose=2`` or ``3`` joins the document's world with one or two other catalog domains (drawn by the seed)
into one environment with namespaced tools (:mod:`envgen.world.compose`).

Contract: deterministic given ``(document, seed)`` except ``provenance.created_at``; never raises for a bad
document (the proposal carries the error); the spec id is ``world-<module-slug>-<first 8 hex of sha256>``
(``-c<N>`` when composed); ``meta`` records the domain, the document's pattern, the grafted tools, the
compiler's repairs and each task's family.
"""

from __future__ import annotations

import datetime
import hashlib
import random
import re
from dataclasses import dataclass
from typing import Any

from corpora.registry import build_config
from envgen.errors import CompileError, TemplateError
from envgen.proposers.base import Proposal, Proposer
from gym_envs.errors import exception_text
from gym_envs.seeding import stable_seed

__all__ = ["GENERATOR", "WorldOptions", "WorldProposer"]

GENERATOR = "template:world"


def _slug(module: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", module.lower()).strip("-")
    return slug[:50].strip("-") or "doc"


@dataclass(kw_only=True)
class WorldOptions:
    """Options of the ``world`` proposer."""

    max_tasks: int = 8  #: tasks of an environment (at least 3)
    compose: int = 1  #: worlds joined into one environment: 1, 2 or 3 (:mod:`envgen.world.compose`)

    def __post_init__(self) -> None:
        if int(self.max_tasks) < 3:
            raise ValueError(f"max_tasks must be at least 3, got {self.max_tasks}")
        if int(self.compose) not in (1, 2, 3):
            raise ValueError(f"compose must be 1 (one world), 2 or 3 (worlds joined into one), got {self.compose}")


class WorldProposer(Proposer):
    """Static-analysis proposer over the domain catalog (see the module docstring); ``options`` are
    :class:`WorldOptions`' fields."""

    name = "world"
    can_repair = False
    Options = WorldOptions

    def __init__(self, **options: Any):
        opts: WorldOptions = build_config(WorldOptions, options=options, owner="proposer 'world'")
        self.max_tasks = int(opts.max_tasks)
        self.compose = int(opts.compose)

    def derive(self, doc: Any, seed: int = 0, created_at: str | None = None) -> tuple[Any, dict[str, Any]]:
        """The compiled world of one document and its meta (raises TemplateError / CompileError)."""
        from envgen.proposers.world.writer import write_world
        from envgen.world.catalog import entries
        from envgen.world.compile import compile_world

        written = write_world(doc, seed)
        bps = [written.blueprint]
        if self.compose > 1:
            others = [e for e in entries() if e.id != written.domain]
            rng = random.Random(stable_seed("world-compose", getattr(doc, "id", ""), seed))
            bps += [e.blueprint for e in rng.sample(others, min(self.compose - 1, len(others)))]
        text = str(getattr(doc, "text", "") or "")
        sha = getattr(doc, "sha256", "") or hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        env_id = f"world-{_slug(written.module)}-{sha[:8]}" + (f"-c{self.compose}" if self.compose > 1 else "")
        source = {"corpus": str(getattr(doc, "corpus", "") or "unknown"), "doc_id": str(getattr(doc, "id", "")),
                  "path": getattr(doc, "path", None), "sha256": sha}
        provenance = {"generator": GENERATOR, "stream": "template", "seed": seed,
                      "created_at": created_at or datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}
        compiled = compile_world(bps if len(bps) > 1 else bps[0], env_id=env_id, seed=seed, n_tasks=self.max_tasks,
                                 source=source, provenance=provenance)
        meta = {"generator": GENERATOR, "structure": "world", "domain": written.domain, "pattern": written.pattern,
                "grafted": written.grafted, "composed": [b.id for b in bps], "repairs": compiled.repairs,
                "families": compiled.families, "tools": len(compiled.spec.tools), "tasks": len(compiled.spec.tasks),
                "tables": len(compiled.meta.get("tables", {})), "blueprint": written.blueprint.to_json()}
        return compiled.spec, meta

    def propose_batch(self, docs: list[Any], *, seed: int = 0, skills: list[Any] | None = None) -> list[Proposal]:
        out: list[Proposal] = []
        for doc in docs:
            doc_id = str(getattr(doc, "id", "") or "doc:unknown")
            try:
                spec, meta = self.derive(doc, seed)
            except (TemplateError, CompileError) as e:
                out.append(Proposal(doc_id, None, error=f"world: {e}"))
                continue
            except Exception as e:  # the boundary: a bad document is data, never a crash of the generator
                out.append(Proposal(doc_id, None, error=f"world: internal error {exception_text(e)}"))
                continue
            out.append(Proposal(doc_id, spec, meta=meta))
        return out

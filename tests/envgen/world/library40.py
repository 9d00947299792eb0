"""A library of 40 generated worlds for tests that read every world: each catalog domain compiled as it is, and
the rest written by the AST world writer from standard-library modules, as ``envwright generate --proposer world``
writes them (without the gate). Each comes with the blueprint it was compiled from."""

from __future__ import annotations

import functools
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from corpora.document import Document
from envgen.world.blueprint import WorldBlueprint
from gym_envs.spec import EnvSpec

SIZE = 40


@dataclass(frozen=True)
class Built:
    """One world of the library: its blueprint and its compiled spec."""

    blueprint: WorldBlueprint
    spec: EnvSpec


def _stdlib_docs() -> list[Document]:
    docs = []
    for p in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        text = p.read_text(encoding="utf-8", errors="replace")
        if "\nclass " in text and 2_000 < len(text) < 40_000:
            docs.append(Document.create(text, corpus="stdlib", path=p.name, language="python"))
    return docs


@functools.cache
def library40() -> tuple[Built, ...]:
    """The 40 worlds (built once per process)."""
    from envgen.errors import CompileError, TemplateError
    from envgen.proposers.world.proposer import WorldProposer
    from envgen.world.catalog import domains
    from envgen.world.compile import compile_world

    out = [Built(bp, compile_world(bp, env_id=f"lib-{bp.id.replace('_', '-')}", seed=1).spec) for bp in domains()]
    proposer = WorldProposer()
    for doc in _stdlib_docs():
        if len(out) == SIZE:
            break
        try:
            spec, meta = proposer.derive(doc, seed=0)
        except (TemplateError, CompileError):
            continue
        out.append(Built(WorldBlueprint.model_validate_json(meta["blueprint"]), spec))
    assert len(out) == SIZE
    return tuple(out)

"""The ``template`` proposer: environments from static analysis of a Python document, no model.

Its public names are importable from the package, :mod:`envgen.proposers.template`, too.

Role: the competence floor, the default proposer of ``envwright generate``,
and the model's teacher. For each document the AST writer
(:mod:`envgen.proposers.template.writer`) finds what the code manages (a class's
instances, the items a container class adds and removes, or what a module's
functions operate on) and writes it as a **blueprint**: one to three
entities, their fields, relations and lifecycle states, operations named
after the document's CRUD-like methods, and a task mix. The one compiler
(:mod:`envgen.blueprint.compiler`), the same one model-written blueprints go
through, turns it into tables, seed rows, tools, restricted code and tasks of
every kind whose checks pin the resulting state, about a third of them
scenario tasks (a simulated user the agent must ask, or whose approval it
needs, before it acts).

Analysis and design live in :mod:`~envgen.proposers.template.extract` and
:mod:`~envgen.proposers.template.build`, the blueprint writing in
:mod:`~envgen.proposers.template.writer`; everything after the blueprint (the
environment model, seed values, tools, code, SQL and tasks) is the compiler's,
in :mod:`envgen.blueprint`.

Contract:

* Deterministic: the same (document, seed) gives the same spec, byte for byte,
  except ``provenance.created_at`` (pass ``created_at=`` to pin it).
* Never raises for a bad document: :meth:`TemplateProposer.propose_batch`
  returns ``Proposal(spec=None, error=...)`` saying why (does not parse, no
  usable names, ...). :func:`derive_spec` raises :class:`TemplateError`.
* The spec id is ``tpl-<module-slug>-<first 8 hex of sha256>``; ``source``
  names the document; ``provenance.generator`` is ``template:ast``; the
  proposal's ``meta["blueprint"]`` is the blueprint it was compiled from and
  ``meta["repairs"]`` what the compiler changed (normally nothing).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from corpora.registry import build_config
from envgen.blueprint.compiler import Compiled, CompileError, CompileOptions, compile_blueprint
from envgen.errors import TemplateError
from envgen.proposers.base import Proposal, Proposer
from envgen.proposers.template.writer import write_blueprint
from gym_envs.errors import exception_text
from gym_envs.spec import TASK_KINDS, EnvSpec

__all__ = ["TemplateError", "TemplateOptions", "TemplateProposer", "derive_compiled", "derive_spec"]

GENERATOR = "template:ast"


def _slug(module: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", module.lower()).strip("-")
    return slug[:60].strip("-") or "doc"


def derive_compiled(doc: Any, seed: int = 0, *, max_tables: int = 3, max_tasks: int = 8,
                    rows: tuple[int, int] = (5, 20), created_at: str | None = None) -> Compiled:
    """The AST writer's blueprint of one document, compiled (raises :class:`TemplateError` when there is none)."""
    written = write_blueprint(doc, seed, max_tables=max_tables)
    text = doc.text
    sha = getattr(doc, "sha256", "") or hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    try:
        compiled = compile_blueprint(
            written.blueprint, doc, seed=seed, options=CompileOptions(max_tasks=max_tasks, rows=rows),
            generator=GENERATOR, stream="template", created_at=created_at,
            vocabulary=(written.words, written.literals), env_id=f"tpl-{_slug(written.module)}-{sha[:8]}")
    except CompileError as e:
        raise TemplateError(str(e)) from None
    tasks = compiled.spec.tasks
    kinds = {t.kind for t in tasks}
    wanted = set(TASK_KINDS) if max_tasks >= len(TASK_KINDS) else set(TASK_KINDS) - {"missing_parameter"}
    if len(tasks) < 4 or not wanted <= kinds:
        raise TemplateError(f"only {len(tasks)} tasks could be written (kinds {sorted(kinds)}; "
                            f"missing {sorted(wanted - kinds)})")
    return compiled


def derive_spec(doc: Any, seed: int = 0, *, max_tables: int = 3, max_tasks: int = 8,
                rows: tuple[int, int] = (5, 20), created_at: str | None = None) -> EnvSpec:
    """The environment of one document (raises :class:`TemplateError` when there is none)."""
    return derive_compiled(doc, seed, max_tables=max_tables, max_tasks=max_tasks, rows=rows,
                           created_at=created_at).spec


@dataclass(kw_only=True)
class TemplateOptions:
    """Options of the ``template`` proposer (the sizes of what it derives)."""

    max_tables: int = 3  #: entities of an environment (1, 2 or 3)
    max_tasks: int = 8  #: tasks of an environment (at least 4; 5 or more gives one task of every kind)
    rows: tuple[int, int] = (5, 20)  #: seed rows per table, (low, high) with 1 <= low <= high <= 200

    def __post_init__(self) -> None:
        if not 1 <= int(self.max_tables) <= 3:
            raise ValueError(f"max_tables must be 1, 2 or 3, got {self.max_tables}")
        if int(self.max_tasks) < 4:
            raise ValueError(f"max_tasks must be at least 4 (5 or more gives one task of every kind), "
                             f"got {self.max_tasks}")
        lo, hi = (int(self.rows[0]), int(self.rows[1]))
        if not 1 <= lo <= hi <= 200:
            raise ValueError(f"rows must be (low, high) with 1 <= low <= high <= 200, got {self.rows}")
        self.max_tables, self.max_tasks, self.rows = int(self.max_tables), int(self.max_tasks), (lo, hi)


class TemplateProposer(Proposer):
    """Static-analysis proposer (no model): see the module docstring; ``options`` are
    :class:`TemplateOptions`' fields."""

    name = "template"
    can_repair = False
    Options = TemplateOptions

    def __init__(self, **options: Any):
        opts: TemplateOptions = build_config(TemplateOptions, options=options, owner="proposer 'template'")
        self.max_tables = opts.max_tables
        self.max_tasks = opts.max_tasks
        self.rows = opts.rows

    def derive(self, doc: Any, seed: int = 0) -> EnvSpec:
        return self.derive_compiled(doc, seed).spec

    def derive_compiled(self, doc: Any, seed: int = 0) -> Compiled:
        return derive_compiled(doc, seed, max_tables=self.max_tables, max_tasks=self.max_tasks, rows=self.rows)

    def propose_batch(self, docs: list[Any], *, seed: int = 0, skills: list[Any] | None = None) -> list[Proposal]:
        out: list[Proposal] = []
        for doc in docs:
            doc_id = str(getattr(doc, "id", "") or "doc:unknown")
            try:
                compiled = self.derive_compiled(doc, seed)
            except TemplateError as e:
                out.append(Proposal(doc_id, None, error=f"template: {e}"))
                continue
            except Exception as e:  # the boundary: a bad document is data, never a crash of the generator
                out.append(Proposal(doc_id, None, error=f"template: internal error {exception_text(e)}"))
                continue
            spec = compiled.spec
            tables = spec.state.schema_sql.count("CREATE TABLE")
            out.append(Proposal(doc_id, spec, meta={"generator": GENERATOR, "tools": len(spec.tools),
                                                    "tasks": len(spec.tasks), "tables": tables,
                                                    "structure": "blueprint",
                                                    "blueprint": compiled.blueprint.to_json(),
                                                    "repairs": compiled.repairs,
                                                    "difficulty": compiled.difficulty}))
        return out

"""The ``template`` proposer: environments from static analysis of a Python document, no model.

Role: the competence floor and the default proposer of ``envwright
generate``. For each document it finds what the code manages (a class's
instances, the items a container class adds and removes, or what a module's
functions operate on), turns it into one to three SQLite tables, turns the
document's CRUD-named methods into tools over the ``db`` facade, and writes
tasks of every kind whose checks pin the resulting state.

Pipeline (one module each):

* :mod:`~envgen.proposers.template_extract` — ``ast`` analysis: classes,
  typed scalar fields, methods mapped to operations, vocabulary;
* :mod:`~envgen.proposers.template_build` — choose the entities, columns,
  operations and seed rows (:class:`~envgen.proposers.template_model.EnvModel`);
* :mod:`~envgen.proposers.template_tools` — tool schemas, restricted code, DDL
  and seed SQL;
* :mod:`~envgen.proposers.template_tasks` — instructions, references, checks;

with the shared model and naming rules in
:mod:`~envgen.proposers.template_model`, seeded values in
:mod:`~envgen.proposers.template_values` and word tables in
:mod:`~envgen.proposers.template_words`.

Contract:

* Deterministic: the same (document, seed) gives the same spec, byte for byte,
  except ``provenance.created_at`` (pass ``created_at=`` to pin it). Every
  draw comes from ``random.Random(seed ^ int(sha256[:16], 16))``.
* Never raises for a bad document: :meth:`TemplateProposer.propose_batch`
  returns ``Proposal(spec=None, error=...)`` saying why (does not parse, no
  usable names, ...). :func:`derive_spec` raises :class:`TemplateError`.
* The spec id is ``tpl-<module-slug>-<first 8 hex of sha256>``; ``source``
  names the document; ``provenance.generator`` is ``template:ast``.
"""

from __future__ import annotations

import datetime
import hashlib
import random
import re
from typing import Any

from envgen.proposers.base import Proposal, Proposer
from envgen.proposers.template_build import TemplateError, build_model
from envgen.proposers.template_extract import analyze_source
from envgen.proposers.template_model import EnvModel
from envgen.proposers.template_tasks import build_tasks
from envgen.proposers.template_tools import render_code, render_state, render_tools
from envgen.proposers.template_values import ValueMaker
from envgen.proposers.template_words import STOP_WORDS
from gym_envs.spec import TASK_KINDS, EnvSpec, SpecError, parse_spec

__all__ = ["TemplateError", "TemplateProposer", "derive_spec"]

GENERATOR = "template:ast"
MAX_DOC_CHARS = 1_500_000


def _doc_fields(doc: Any) -> tuple[str, str, str, str, str]:
    """``(text, doc_id, path, sha256, corpus)`` of a corpora Document or a look-alike."""
    text = getattr(doc, "text", None)
    if not isinstance(text, str):
        raise TemplateError(f"document has no text (got {type(doc).__name__})")
    doc_id = str(getattr(doc, "id", "") or "doc:unknown")
    path = str(getattr(doc, "path", "") or doc_id.split(":", 1)[-1])
    sha = getattr(doc, "sha256", "") or hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    corpus = getattr(doc, "corpus", None) or (doc_id.split(":", 1)[0] if ":" in doc_id else "unknown")
    return text, doc_id, path, sha, str(corpus)


def _module_name(doc: Any, path: str) -> str:
    meta = getattr(doc, "metadata", None) or {}
    module = meta.get("module") if hasattr(meta, "get") else None
    if isinstance(module, str) and module:
        return module
    stem = re.sub(r"\.py$", "", path).replace("/", ".")
    return stem.removesuffix(".__init__") or "module"


def _slug(module: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", module.lower()).strip("-")
    return slug[:60].strip("-") or "doc"


def _rng(seed: int, sha: str) -> random.Random:
    try:
        mix = int(sha[:16], 16)
    except ValueError:
        mix = int(hashlib.sha256(sha.encode()).hexdigest()[:16], 16)
    return random.Random(int(seed) ^ mix)


def _description(model: EnvModel) -> str:
    tables = ", ".join(f"{e.humans} ({e.key.human}, " + ", ".join(c.human for c in e.columns)
                       + (", status" if e.status else "") + ")" for e in model.entities)
    head = f"A simulated store of {tables}, modelled on `{model.entities[-1].origin or model.module}` in {model.path}."
    if model.summary:
        head += f" Source docstring: {model.summary}"
    return head


def derive_spec(doc: Any, seed: int = 0, *, max_tables: int = 3, max_tasks: int = 8,
                rows: tuple[int, int] = (5, 20), created_at: str | None = None) -> EnvSpec:
    """The environment of one document (raises :class:`TemplateError` when there is none)."""
    text, doc_id, path, sha, corpus = _doc_fields(doc)
    if len(text) > MAX_DOC_CHARS:
        raise TemplateError(f"document is too large ({len(text):,} characters > {MAX_DOC_CHARS:,})")
    module = _module_name(doc, path)
    info = analyze_source(text, module)
    if info is None:
        raise TemplateError("document is not parsable Python (syntax error or too deeply nested)")
    rng = _rng(seed, sha)
    maker = ValueMaker(rng, info.words, [s for s in info.literals if s.lower() not in STOP_WORDS])
    model = build_model(info, rng, maker, path=path, max_tables=max_tables, rows=rows)
    tasks = build_tasks(model, rng, maker, max_tasks=max_tasks)
    kinds = {t["kind"] for t in tasks}
    wanted = set(TASK_KINDS) if max_tasks >= len(TASK_KINDS) else set(TASK_KINDS) - {"missing_parameter"}
    if len(tasks) < 4 or not wanted <= kinds:
        raise TemplateError(f"only {len(tasks)} tasks could be written (kinds {sorted(kinds)}; "
                            f"missing {sorted(wanted - kinds)})")
    tools = render_tools(model)
    schema_sql, seed_sql = render_state(model)
    data = {
        "spec_version": 1,
        "id": f"tpl-{_slug(module)}-{sha[:8]}",
        "title": model.title,
        "description": _description(model),
        "source": {"corpus": corpus, "doc_id": doc_id, "path": path, "sha256": sha},
        "provenance": {"generator": GENERATOR, "skill_id": None, "stream": "template", "seed": int(seed),
                       "created_at": created_at or datetime.datetime.now(datetime.UTC).isoformat(
                           timespec="seconds"),
                       "prompt_sha256": None, "parents": []},
        "state": {"schema_sql": schema_sql, "seed_sql": seed_sql},
        "tools": tools,
        "code": render_code(model, tools),
        "tasks": tasks,
    }
    try:
        return parse_spec(data, source=doc_id)
    except SpecError as e:
        raise TemplateError(f"generated spec does not parse: {e}") from None


class TemplateProposer(Proposer):
    """Static-analysis proposer (no model): see the module docstring."""

    name = "template"
    can_repair = False

    def __init__(self, max_tables: int = 3, max_tasks: int = 8, rows: tuple[int, int] = (5, 20), **_: Any):
        if not 1 <= int(max_tables) <= 3:
            raise ValueError(f"max_tables must be 1, 2 or 3, got {max_tables}")
        if int(max_tasks) < 4:
            raise ValueError(f"max_tasks must be at least 4 (5 or more gives one task of every kind), got {max_tasks}")
        lo, hi = (int(rows[0]), int(rows[1]))
        if not 1 <= lo <= hi <= 200:
            raise ValueError(f"rows must be (low, high) with 1 <= low <= high <= 200, got {rows}")
        self.max_tables = int(max_tables)
        self.max_tasks = int(max_tasks)
        self.rows = (lo, hi)

    def derive(self, doc: Any, seed: int = 0) -> EnvSpec:
        return derive_spec(doc, seed, max_tables=self.max_tables, max_tasks=self.max_tasks, rows=self.rows)

    def propose_batch(self, docs: list[Any], *, seed: int = 0, skills: list[Any] | None = None) -> list[Proposal]:
        out: list[Proposal] = []
        for doc in docs:
            doc_id = str(getattr(doc, "id", "") or "doc:unknown")
            try:
                spec = self.derive(doc, seed)
            except TemplateError as e:
                out.append(Proposal(doc_id, None, error=f"template: {e}"))
                continue
            except Exception as e:  # the boundary: a bad document is data, never a crash of the generator
                out.append(Proposal(doc_id, None, error=f"template: internal error {type(e).__name__}: {e}"))
                continue
            tables = spec.state.schema_sql.count("CREATE TABLE")
            out.append(Proposal(doc_id, spec, meta={"generator": GENERATOR, "tools": len(spec.tools),
                                                    "tasks": len(spec.tasks), "tables": tables}))
        return out

"""The AST writer: a Python document's static analysis, written as a blueprint.

Role: one of the two writers of blueprints (the other is a model). It runs the
template proposer's analysis and design steps
(:func:`~envgen.proposers.template.extract.analyze_source`,
:func:`~envgen.proposers.template.build.build_model` without seed rows) and
writes what they chose, entities, fields, relations, lifecycle states,
operations named after the document's own methods, and a task mix, in the
blueprint format. Compiled by :func:`~envgen.blueprint.compiler.compile_blueprint`
this is the template proposer; paired with the document's excerpt it is a
training example for the model (the proposer warm start,
``envwright train proposer``).

Contract: deterministic for ``(document, seed)``; raises
:class:`~envgen.errors.TemplateError` when the document
yields nothing (not Python, nothing to model). Text fields are cut to the
schema's ASCII patterns, so every blueprint it writes validates.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from envgen.blueprint.render.model import Entity, EnvModel, Op, human
from envgen.blueprint.render.values import ValueMaker
from envgen.blueprint.render.words import STOP_WORDS
from envgen.blueprint.schema import MAX_OPERATIONS, Blueprint
from envgen.errors import TemplateError
from envgen.proposers.template.build import build_model
from envgen.proposers.template.deepen import deepen
from envgen.proposers.template.extract import DocInfo, analyze_source
from gym_envs.seeding import stable_seed

__all__ = ["Written", "ascii_text", "module_name", "write_blueprint"]

MAX_DOC_CHARS = 1_500_000
_TYPES = {"TEXT": "string", "INTEGER": "integer", "REAL": "number", "BOOLEAN": "boolean"}
_UNSAFE = re.compile(r"[^A-Za-z0-9 ,.;:()'/_-]+")


@dataclass
class Written:
    """A blueprint and what the compiler should draw seed values from (the document's words and literals)."""

    blueprint: Blueprint
    words: list[str]
    literals: list[str]
    module: str


def ascii_text(text: str, limit: int) -> str:
    """``text`` in the blueprint's prose alphabet, at most ``limit`` characters, cut at a word boundary."""
    s = re.sub(r"\s+", " ", _UNSAFE.sub(" ", text or "")).strip()
    if len(s) <= limit:
        return s
    cut = s[:limit + 1].rsplit(" ", 1)[0]
    return (cut if len(cut) >= limit // 2 else s[:limit]).rstrip(" ,;:-")


def module_name(doc: Any, path: str) -> str:
    """The dotted module name of a document: its ``module`` metadata, else derived from ``path``."""
    meta = getattr(doc, "metadata", None) or {}
    module = meta.get("module") if hasattr(meta, "get") else None
    if isinstance(module, str) and module:
        return module
    stem = re.sub(r"\.py$", "", path).replace("/", ".")
    return stem.removesuffix(".__init__") or "module"


def _rng(seed: int, sha: str) -> random.Random:
    """The draws of one ``(seed, document)``: the seed and the document's digest, through :func:`stable_seed`."""
    return random.Random(stable_seed(int(seed), sha))


def _entity(e: Entity) -> dict[str, Any]:
    fields = [{"name": c.name, "type": _TYPES[c.sqltype],
               "description": ascii_text(f"from {c.origin}" if c.origin else human(c.name), 60)}
              for c in e.all_columns()]
    desc = e.doc or (f"{e.humans} of {e.origin}" if e.origin else e.humans)
    return {"name": e.name, "description": ascii_text(desc, 60), "key": e.key.name, "fields": fields[:5],
            "parent": e.parent.name if e.parent is not None else None, "states": list(e.status or [])[:4]}


def _operation(op: Op) -> dict[str, Any]:
    return {"kind": op.kind, "entity": op.entity.name, "name": op.tool,
            "field": op.column.name if op.column is not None and op.kind in ("update", "adjust") else None,
            "target": op.target if op.kind == "status" else None,
            "description": ascii_text(f"from {op.origin}" if op.origin else "", 60)}


def _operations(model: EnvModel) -> list[dict[str, Any]]:
    """The tools worth stating: those modelled on the document's methods first, then the other writes."""
    ranked = sorted(model.ops, key=lambda o: (not o.origin, not o.writes, model.ops.index(o)))
    return [_operation(o) for o in ranked[:MAX_OPERATIONS]]


_COUNTS = ("count", "copies", "quantity", "qty", "stock", "balance", "amount", "cents", "capacity", "size", "limit",
           "total", "seats", "units")
_SCALES = ("priority", "level", "rank")


def _rules(main: Entity) -> list[dict[str, Any]]:
    """Rules the analysis can read off field names: counts never go negative, priorities are 1-9."""
    rules: list[dict[str, Any]] = []
    for c in main.columns:
        last = c.name.rsplit("_", 1)[-1]
        if c.sqltype not in ("INTEGER", "REAL"):
            continue
        if last in _COUNTS:
            rules.append({"kind": "non_negative", "entity": main.name, "field": c.name, "min": None, "max": None,
                          "values": []})
        elif last in _SCALES and c.sqltype == "INTEGER":
            rules.append({"kind": "range", "entity": main.name, "field": c.name, "min": 1, "max": 9, "values": []})
    return rules[:2]


def _mix(rng: random.Random) -> dict[str, int]:
    mix = {"execute": 1, "read": 1, "read_then_write": 1, "missing_parameter": 1, "decline": 1}
    mix["read"] += 1
    if rng.random() < 0.5:
        mix[rng.choice(["execute", "read_then_write", "missing_parameter"])] += 1
    return mix


def _blueprint(info: DocInfo, model: EnvModel, rng: random.Random, max_tables: int = 3) -> Blueprint:
    main = next(o.entity for o in model.ops if o.kind == "update")
    others = [e for e in model.entities if e is not main]
    summary = model.summary or f"{human(main.table).capitalize()} as managed by {info.module}"
    data = {
        "blueprint_version": 1,
        "title": ascii_text(model.title, 48),
        "summary": ascii_text(summary, 120),
        "entities": [_entity(e) for e in [main, *others]],
        "operations": _operations(model),
        "rules": _rules(main),
        "tasks": _mix(rng),
        "difficulty": None,
    }
    deepen(data, model, set(info.words), rng, max_tables)
    return Blueprint.model_validate(data)


def write_blueprint(doc: Any, seed: int = 0, *, max_tables: int = 3, text: str | None = None) -> Written:
    """The AST writer's blueprint of ``doc`` (raises :class:`TemplateError` when there is none)."""
    text = text if text is not None else getattr(doc, "text", None)
    if not isinstance(text, str):
        raise TemplateError(f"document has no text (got {type(doc).__name__})")
    if len(text) > MAX_DOC_CHARS:
        raise TemplateError(f"document is too large ({len(text):,} characters > {MAX_DOC_CHARS:,})")
    doc_id = str(getattr(doc, "id", "") or "doc:unknown")
    path = str(getattr(doc, "path", "") or doc_id.split(":", 1)[-1])
    sha = getattr(doc, "sha256", "") or hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    module = module_name(doc, path)
    info = analyze_source(text, module)
    if info is None:
        raise TemplateError("document is not parsable Python (syntax error or too deeply nested)")
    rng = _rng(seed, sha)
    literals = [s for s in info.literals if s.lower() not in STOP_WORDS]
    maker = ValueMaker(rng, info.words, literals)
    model = build_model(info, rng, maker, path=path, max_tables=max_tables, fill_rows=False)
    try:
        blueprint = _blueprint(info, model, rng, max_tables)
    except ValidationError as e:  # a writer bug: skip this document rather than end a long run
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise TemplateError(f"the AST writer made an invalid blueprint ({where}: {first['msg']}); "
                            "please report it with the document") from e
    return Written(blueprint, list(info.words), literals, module)

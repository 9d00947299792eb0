"""The one compiler: a blueprint (plus its source document and a seed) becomes a full environment spec.

Both writers of blueprints feed it: the AST writer (:mod:`envgen.proposers.template.writer`,
the template proposer and the model's teacher) and a model decoding under the
blueprint schema (:class:`envgen.proposers.llm.LLMProposer` with
``structure="blueprint"``). It is host code we ship, deterministic given
``(blueprint, document, seed)``:

1. :class:`~envgen.blueprint.normalize.Normalizer` makes the blueprint usable
   and records every repair;
2. seed rows are drawn from the document's own vocabulary (its words and
   short string literals: :func:`document_vocabulary`), within each column's
   rules;
3. the difficulty (the options', else the blueprint's, else ``medium``:
   :mod:`envgen.blueprint.render.difficulty`) adds its distractors (near-duplicate
   rows, sibling tools; each recorded with the repairs) and sets how deep the
   tasks go;
4. tools, restricted code, DDL and seed SQL come from the compiler's renderers
   (:mod:`envgen.blueprint.render.tools`), tasks with checks and reference
   trajectories from :mod:`envgen.blueprint.render.tasks`, by the blueprint's
   task mix and the difficulty; about a third of them are scenario tasks (a
   simulated user the agent must ask for a value or a record, or whose approval
   a change needs), which makes the spec ``spec_version`` 2;
5. the spec is parsed (:func:`gym_envs.spec.parse_spec`); the gate runs later.

:func:`compile_blueprint` raises :class:`CompileError` (saying why, with the
repairs so far) only when nothing usable is left: no entity, or fewer than
three tasks could be written.
"""

from __future__ import annotations

import datetime
import hashlib
import random
import re
from dataclasses import dataclass, field
from typing import Any

from envgen.blueprint.normalize import Normalizer
from envgen.blueprint.render.difficulty import add_distractors, profile_of
from envgen.blueprint.render.model import EnvModel, human
from envgen.blueprint.render.rows import fill_entity_rows
from envgen.blueprint.render.tasks import build_tasks
from envgen.blueprint.render.tools import render_code, render_state, render_tools
from envgen.blueprint.render.values import ValueMaker
from envgen.blueprint.render.words import STOP_WORDS
from envgen.blueprint.schema import Blueprint
from envgen.errors import CompileError
from envgen.gate.antecedents import without_ambiguous_tasks
from gym_envs.seeding import stable_seed
from gym_envs.spec import EnvSpec, SpecError, parse_spec

__all__ = ["CompileError", "CompileOptions", "Compiled", "compile_blueprint", "document_vocabulary"]

MIN_TASKS = 3
_DEFAULT_MIX = {"execute": 1, "read": 2, "read_then_write": 1, "missing_parameter": 1, "decline": 1}


@dataclass
class CompileOptions:
    """Compiler options: sizes, and what a routed skill requires (its ``blueprint`` section)."""

    max_tasks: int = 8
    rows: tuple[int, int] = (5, 20)
    require: dict[str, Any] = field(default_factory=dict)
    difficulty: str | None = None  #: easy / medium / hard: overrides the blueprint's (None: the blueprint's)

    def __post_init__(self) -> None:
        if self.difficulty is not None:
            profile_of(self.difficulty)  # an unknown level fails now, naming the levels
        if not MIN_TASKS <= int(self.max_tasks) <= 8:
            raise ValueError(f"max_tasks must be between {MIN_TASKS} and 8, got {self.max_tasks}")
        lo, hi = int(self.rows[0]), int(self.rows[1])
        if not 1 <= lo <= hi <= 200:
            raise ValueError(f"rows must be (low, high) with 1 <= low <= high <= 200, got {self.rows}")
        self.rows = (lo, hi)


@dataclass
class Compiled:
    """A compiled environment: the spec, the model it was rendered from, and every repair made."""

    spec: EnvSpec
    model: EnvModel
    repairs: list[str]
    blueprint: Blueprint
    difficulty: str = "medium"  #: the level the tasks were written at


@dataclass
class DocFields:
    """What the compiler needs of a document (a :class:`corpora.Document` or a look-alike)."""

    text: str
    doc_id: str
    path: str
    sha256: str
    corpus: str

    @classmethod
    def of(cls, doc: Any) -> DocFields:
        text = getattr(doc, "text", None)
        if not isinstance(text, str):
            raise CompileError(f"document has no text (got {type(doc).__name__})")
        doc_id = str(getattr(doc, "id", "") or "doc:unknown")
        path = str(getattr(doc, "path", "") or doc_id.split(":", 1)[-1])
        sha = getattr(doc, "sha256", "") or hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        corpus = getattr(doc, "corpus", None) or (doc_id.split(":", 1)[0] if ":" in doc_id else "unknown")
        return cls(text, doc_id, path, sha, str(corpus))


_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]{2,13}")
_LITERAL = re.compile(r"""["']([A-Za-z][A-Za-z0-9_-]{2,15})["']""")


def document_vocabulary(text: str, limit: int = 400) -> tuple[list[str], list[str]]:
    """``(words, literals)`` of any document: lower-case identifier words and short quoted strings, sorted.

    Language-neutral (a regex over the text), so it serves non-Python documents too; seed values mix
    these words with generic ones.
    """
    words: set[str] = set()
    for token in _WORD.findall(text[:400_000]):
        for part in re.split(r"(?<=[a-z0-9])(?=[A-Z])", token):
            w = part.lower()
            if 3 <= len(w) <= 10 and w.isalpha() and w not in STOP_WORDS:
                words.add(w)
    literals = {m for m in _LITERAL.findall(text[:400_000]) if m.lower() not in STOP_WORDS}
    return sorted(words)[:limit], sorted(literals)[:limit]


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:48].strip("-") or "env"


def _rng(seed: int, sha: str) -> random.Random:
    """The draws of one ``(seed, document)``: the seed and the document's digest, through :func:`stable_seed`."""
    return random.Random(stable_seed(int(seed), sha))


def _description(bp: Blueprint, model: EnvModel, path: str) -> str:
    """The spec's description: the blueprint's summary, then each table with its columns (key first)."""
    tables = ", ".join(f"{e.humans} (" + ", ".join([e.key.human, *(c.human for c in e.columns),
                                                     *(["status"] if e.status else [])]) + ")"
                       for e in model.entities)
    head = f"A simulated store of {tables}, modelled on {path}."
    summary = bp.summary.strip()
    return f"{summary.rstrip('.')}. {head}" if summary else head


def _mix(bp: Blueprint, require: dict[str, Any], repairs: list[str], max_tasks: int) -> dict[str, int]:
    mix = bp.tasks.counts()
    for kind, low in (require.get("tasks") or {}).items():
        if kind in mix and mix[kind] < int(low):
            repairs.append(f"tasks: the skill needs {low} {kind} task(s); raised from {mix[kind]}")
            mix[kind] = int(low)
    if sum(mix.values()) < 4:
        repairs.append(f"tasks: the mix asks for {sum(mix.values())} task(s); topped up to the default mix")
        for kind, n in _DEFAULT_MIX.items():
            mix[kind] = max(mix[kind], n)
    total = sum(mix.values())
    if total > max_tasks:
        repairs.append(f"tasks: the mix asks for {total} tasks; at most {max_tasks} are written")
    return mix


def compile_blueprint(bp: Blueprint, doc: Any, *, seed: int = 0, options: CompileOptions | None = None,
                      id_prefix: str = "bp", generator: str = "llm:unknown", stream: str = "explore",
                      skill_id: str | None = None, prompt_sha256: str | None = None,
                      created_at: str | None = None, vocabulary: tuple[list[str], list[str]] | None = None,
                      env_id: str | None = None) -> Compiled:
    """Compile ``bp`` for ``doc`` (see the module docstring); raises :class:`CompileError`."""
    opts = options or CompileOptions()
    d = DocFields.of(doc)
    rng = _rng(seed, hashlib.sha256((d.sha256 + bp.to_json()).encode()).hexdigest())
    norm = Normalizer(bp, rng, opts.require)
    norm.build_entities()
    if not norm.entities:
        raise CompileError("no usable entity: every entity name was invalid or repeated", norm.repairs)
    norm.apply_rules()
    main = next(iter(norm.entities.values()))
    ops = norm.build_ops(main)
    entities = norm.ordered()
    words, literals = vocabulary if vocabulary is not None else document_vocabulary(d.text)
    maker = ValueMaker(rng, words, [s for s in literals if s.lower() not in STOP_WORDS])
    fill_entity_rows(entities, rng, maker, opts.rows)
    title = (bp.title.strip() or f"{human(main.table).capitalize()}")[:60]
    model = EnvModel(entities, ops, d.path, d.path, title, bp.summary, words)
    profile = profile_of(opts.difficulty or bp.difficulty)
    norm.repairs += add_distractors(model, profile, rng, words, max_rows=opts.rows[1])
    mix = _mix(bp, opts.require, norm.repairs, opts.max_tasks)
    tasks = build_tasks(model, rng, maker, max_tasks=opts.max_tasks, mix=mix, profile=profile)
    if len(tasks) < MIN_TASKS:
        raise CompileError(f"only {len(tasks)} task(s) could be written (at least {MIN_TASKS} are needed)",
                           norm.repairs)
    tools = render_tools(model)
    schema_sql, seed_sql = render_state(model)
    digest = hashlib.sha256(f"{d.sha256}:{bp.to_json()}:{seed}".encode()).hexdigest()
    data: dict[str, Any] = {
        "spec_version": 2 if any("scenario" in t for t in tasks) else 1,
        "id": env_id or f"{id_prefix}-{_slug(title)}-{digest[:8]}",
        "title": title,
        "description": _description(bp, model, d.path),
        "source": {"corpus": d.corpus, "doc_id": d.doc_id, "path": d.path, "sha256": d.sha256},
        "provenance": {"generator": generator, "skill_id": skill_id, "stream": stream, "seed": int(seed),
                       "created_at": created_at or datetime.datetime.now(datetime.UTC).isoformat(
                           timespec="seconds"),
                       "prompt_sha256": prompt_sha256, "parents": []},
        "state": {"schema_sql": schema_sql, "seed_sql": seed_sql},
        "tools": tools,
        "code": render_code(model, tools),
        "tasks": tasks,
    }
    try:
        spec = parse_spec(data, source=d.doc_id)
    except SpecError as e:
        raise CompileError(f"the compiled spec does not parse (a compiler bug): {e}", norm.repairs) from None
    spec = without_ambiguous_tasks(spec, norm.repairs, MIN_TASKS)
    return Compiled(spec, model, list(norm.repairs), bp, profile.name)

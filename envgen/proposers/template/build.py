"""From a document's analysis to an environment model: which entities, columns, tools and rows.

Role: the template proposer's design step. Given a :class:`DocInfo`, pick the
thing the document manages and how it is operated on:

* **container** candidates: a class (or the module) whose methods share a
  noun, ``Inventory.add_item / remove_item / get_item`` → rows of ``item``
  (fields from those methods' parameters and from a class of that name), the
  container itself becoming a parent table;
* **class** candidates: a class whose instances are the rows
  (``Connection`` with ``close`` / ``set_timeout``), fields from its
  dataclass fields, ``__init__`` attributes and parameters; a class it
  mentions can become a child table;
* **module** candidates: a document with only functions, rows named after
  the module or its functions' common noun, fields from their parameters.

The best-scoring candidate wins (the seed may pick a close runner-up). Tools
come from the document's own CRUD-named methods, completed so that every
environment has create, update, get/find and list tools. Raises
:class:`TemplateError` when nothing usable is found.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from envgen.blueprint.render.model import (
    Column,
    Entity,
    EnvModel,
    Op,
    entity_word,
    human,
    plural,
    safe_name,
    singular,
    snake,
)
from envgen.blueprint.render.ops import complete_ops, join_tool_name
from envgen.blueprint.render.rows import fill_entity_rows
from envgen.blueprint.render.values import ValueMaker
from envgen.blueprint.render.words import STATUS_INITIAL, STATUS_TARGET, hint_type, word_set
from envgen.errors import TemplateError
from envgen.proposers.template.extract import ClassInfo, DocInfo, FieldInfo, MethodInfo

__all__ = ["build_model"]

_KEY_WORDS = ("name", "title", "label", "key", "filename", "path", "host", "hostname", "tag", "url", "ident",
              "identifier", "username", "user", "email", "address", "word", "command", "alias", "code")
_GENERIC_NOUNS = word_set("all data info value values help string bytes text to from up ok result args "
                           "error errors exception default defaults by with in on of for dict list set "
                           "state stats name names type line lines object objects file")
_FALLBACK_COLUMNS = (("priority", "INTEGER"), ("notes", "TEXT"), ("size", "INTEGER"), ("weight", "REAL"))


@dataclass
class Candidate:
    """A possible main entity."""

    score: float
    name: str
    origin: str
    fields: list[FieldInfo]
    methods: list[MethodInfo]
    owner: ClassInfo | None = None  #: the container class, becomes a parent table
    klass: ClassInfo | None = None  #: the class whose instances are the rows
    doc: str = ""
    lineno: int = 0
    extra: dict[str, object] = field(default_factory=dict)


# -- candidates ------------------------------------------------------------------------------------


def _entity_name(raw: str) -> str | None:
    words = [w for w in snake(raw).split("_") if w]
    while words and words[0].startswith("sqlite"):  # SQLite reserves table names starting with sqlite_
        words = words[1:]
    if not words:
        return None
    words[-1] = singular(words[-1])
    joined = "_".join(words[-3:])
    while len(joined) > 24 and "_" in joined:
        joined = joined.split("_", 1)[1]
    name = entity_word(joined[:24].strip("_"))
    if name is None or name in _GENERIC_NOUNS:
        return None
    return name


def _class_for(noun: str, classes: list[ClassInfo]) -> ClassInfo | None:
    for c in classes:
        s = c.snake
        if s == noun or s.endswith("_" + noun) or plural(s) == noun:
            return c
    return None


def _merge_fields(*groups: list[FieldInfo]) -> list[FieldInfo]:
    out: dict[str, FieldInfo] = {}
    for g in groups:
        for f in g:
            out.setdefault(f.name, f)
    return list(out.values())


def _container_candidates(owner: ClassInfo | None, methods: list[MethodInfo], classes: list[ClassInfo],
                          origin: str) -> list[Candidate]:
    groups: dict[str, list[MethodInfo]] = {}
    for m in methods:
        if m.kind is None or not m.noun:
            continue
        noun = singular(m.noun)
        groups.setdefault(noun, []).append(m)
    out = []
    for noun, ms in groups.items():
        kinds = {m.kind for m in ms}
        name = _entity_name(noun)
        if name is None or len(ms) < 2 or len(kinds) < 2 or (owner is not None and name == owner.snake):
            continue
        ms.sort(key=lambda m: (m.kind != "create", m.lineno))
        matched = _class_for(noun, classes)
        fields = _merge_fields(*[m.params for m in ms], matched.ranked_fields() if matched else [])
        score = 2.0 * len(kinds) + min(len(ms), 6) / 2 + 0.5 * min(len(fields), 4) + (1.0 if matched else 0.0)
        doc = matched.doc if matched else (owner.doc if owner else "")
        out.append(Candidate(score, name, f"{origin}.{ms[0].name}" if origin else ms[0].name, fields, ms, owner,
                             matched, doc, ms[0].lineno))
    return out


def _class_candidate(c: ClassInfo) -> Candidate | None:
    name = _entity_name(c.name)
    if name is None:
        return None
    fields = c.ranked_fields()
    own = []
    for m in c.methods:
        noun = singular(m.noun)
        if m.kind and (not m.noun or noun == name or name.endswith(noun) or noun in c.fields):
            own.append(m)
    kinds = {m.kind for m in own}
    score = 1.5 * len(kinds) + 0.75 * min(len(fields), 4) + min(len(own), 6) / 4
    if c.name.endswith(("Error", "Exception", "Warning", "Mixin", "Test", "Meta")):
        score -= 3
    score -= 0.5 if c.name.startswith("_") else 0.0
    if not fields and not own and not c.methods:
        return None
    return Candidate(score, name, c.name, fields, own, None, c, c.doc, c.lineno)


def _module_candidate(info: DocInfo) -> Candidate | None:
    if not info.functions:
        return None
    nouns: dict[str, int] = {}
    fields: dict[str, FieldInfo] = {}
    for fn in info.functions:
        if fn.noun and fn.kind:
            nouns[singular(fn.noun)] = nouns.get(singular(fn.noun), 0) + 1
        for p in fn.params:
            fields.setdefault(p.name, p)
    ranked = sorted(nouns.items(), key=lambda kv: (-kv[1], kv[0]))
    for noun, _ in ranked:
        name = _entity_name(noun)
        if name:
            break
    else:
        name = _entity_name(info.module.rsplit(".", 1)[-1]) or _entity_name(info.module.replace(".", "_"))
        name = name and (name if len(name) > 3 else f"{name}_entry")
    if not name:
        return None
    methods = [fn for fn in info.functions if fn.kind]
    return Candidate(0.5 + 0.25 * min(len(fields), 4), name, info.module, list(fields.values()), methods, None,
                     None, info.doc, 0)


def candidates(info: DocInfo) -> list[Candidate]:
    """Every possible main entity of a document, best first."""
    out: list[Candidate] = []
    for c in info.classes:
        out += _container_candidates(c, c.methods, info.classes, c.name)
        cand = _class_candidate(c)
        if cand is not None:
            out.append(cand)
    out += _container_candidates(None, info.functions, info.classes, "")
    mod = _module_candidate(info)
    if mod is not None:
        out.append(mod)
    out.sort(key=lambda c: (-c.score, c.lineno, c.name))
    return out


# -- entities --------------------------------------------------------------------------------------


def _is_key(f: FieldInfo) -> bool:
    return f.sqltype == "TEXT" and (f.name in _KEY_WORDS or f.name.endswith(("_name", "_path", "_title", "_key",
                                                                              "_label", "filename")))


def _columns(cand: Candidate, info: DocInfo, rng: random.Random, taken: set[str],
             fill: bool = True) -> tuple[Column, list[Column]]:
    fields = [f for f in cand.fields if f.name not in taken]
    keys = [f for f in fields if _is_key(f)]
    if keys:
        key = Column(keys[0].name, "TEXT", keys[0].origin)
    else:
        choice = rng.choice(["name", "name", "label", f"{cand.name.rsplit('_', 1)[-1]}_name"])
        key = Column(safe_name(choice) or "name", "TEXT", "")
    usable = [f for f in fields if f.name != key.name and not f.name.endswith("_id")]
    want = max(rng.randint(1, 3), min(2, len(usable))) if fill else 1
    values: list[Column] = []
    for f in fields:
        if len(values) >= want:
            break
        if f.name == key.name or f.name.endswith("_id"):
            continue
        values.append(Column(f.name, f.sqltype, f.origin))
    if fill:
        _fill_columns(values, key, info, rng, taken | {cand.name, plural(cand.name)}, want)
    for c in values:
        c.required = c.sqltype != "BOOLEAN"
    return key, values


def _fill_columns(values: list[Column], key: Column, info: DocInfo, rng: random.Random, taken: set[str],
                  want: int) -> None:
    """Top up the value columns from the document's typed words, then generic ones.

    Afterwards there are at least ``min(want, 2)`` value columns, one of them not BOOLEAN.
    """
    have = {c.name for c in values} | {key.name} | taken

    def enough() -> bool:
        return len(values) >= min(want, 2) and any(c.sqltype != "BOOLEAN" for c in values)

    if not enough():
        pool = [w for w in info.words if len(w) >= 4 and hint_type(w) in ("INTEGER", "REAL", "TEXT")
                and w not in have and safe_name(w) == w]
        rng.shuffle(pool)
        for w in pool:
            if enough():
                break
            values.append(Column(w, hint_type(w) or "TEXT", w))
            have.add(w)
    for name, kind in _FALLBACK_COLUMNS:
        if enough():
            break
        if name not in have:
            values.append(Column(name, kind, ""))
            have.add(name)


def _status_values(methods: list[MethodInfo]) -> list[str] | None:
    verbs = [m.verb for m in methods if m.kind == "status"]
    if not verbs:
        return None
    initial = STATUS_INITIAL.get(verbs[0], "active")
    values = [initial]
    for v in verbs:
        target = STATUS_TARGET[v]
        if target not in values:
            values.append(target)
    if len(values) < 2:
        return None
    return values


def _entity(cand: Candidate, info: DocInfo, rng: random.Random, taken: set[str] | None = None,
            fill: bool = True) -> Entity:
    taken = set(taken or ())
    taken.add(f"{cand.name}_id")
    key, values = _columns(cand, info, rng, taken, fill)
    ent = Entity(cand.name, key, values, cand.origin, cand.doc)
    ent.status = _status_values(cand.methods)
    return ent


# -- operations ------------------------------------------------------------------------------------


def _verb(m: MethodInfo) -> str:
    return {"del": "delete", "iter": "list", "items": "list", "keys": "list", "values": "list",
            "all": "list", "incr": "increment", "decr": "decrement", "config": "configure"}.get(m.verb, m.verb)


def _matches(noun: str, column: str) -> bool:
    if noun == column:
        return True
    short = min(len(noun), len(column))
    return short >= 4 and (noun.endswith("_" + column) or column.endswith("_" + noun) or noun.endswith(column))


def _setter_column(m: MethodInfo, ent: Entity) -> Column | None:
    """A new column for a setter of something the entity does not have yet (``set_debuglevel(level)``)."""
    name = safe_name(m.noun)
    typed = [p for p in m.params if p.sqltype != "BOOLEAN" or m.verb in ("set", "toggle")]
    if (name is None or len(typed) != 1 or len(ent.columns) >= 4 or name.endswith("_id")
            or ent.column(name) is not None or name in (ent.name, ent.id_param)):
        return None
    col = Column(name, typed[0].sqltype, m.name, required=typed[0].sqltype != "BOOLEAN")
    ent.columns.append(col)
    return col


def _update_column(m: MethodInfo, ent: Entity, used: set[str]) -> Column | None:
    """The column an update method writes, or ``None`` when it maps to none."""
    noun = snake(m.noun)
    if m.verb == "rename":
        return ent.key
    for c in ent.columns:
        if noun and _matches(noun, c.name):
            return c
    if m.verb in ("toggle", "mark"):
        flags = [c for c in ent.columns if c.sqltype == "BOOLEAN" and c.name not in used]
        if flags:
            return flags[0]
    if noun and ent.name not in (noun, singular(noun)):
        return _setter_column(m, ent)
    free = [c for c in ent.columns if c.name not in used and c.sqltype != "BOOLEAN"]
    return free[0] if free else None


def _ops_from_methods(ent: Entity, methods: list[MethodInfo], origin_of: str) -> list[Op]:
    ops: list[Op] = []
    seen: set[tuple[str, str]] = set()
    used_cols: set[str] = set()
    for m in methods:
        verb = _verb(m)
        kind = m.kind
        origin = f"{origin_of}.{m.name}" if origin_of else m.name
        op: Op | None = None
        if kind in ("create", "get", "find", "delete"):
            op = Op(kind, ent, join_tool_name(verb, ent.name), origin)
        elif kind == "list":
            op = Op("list", ent, join_tool_name("list", ent.table), origin)
        elif kind == "update":
            col = _update_column(m, ent, used_cols)
            if col is None:
                continue
            if col is ent.key:
                name = join_tool_name("rename", ent.name)
            else:
                name = join_tool_name(verb, ent.name, "" if col.name == ent.name else col.name)
            op = Op("update", ent, name, origin, column=col)
        elif kind == "status" and ent.status:
            op = Op("status", ent, join_tool_name(verb, ent.name), origin, target=STATUS_TARGET[m.verb])
        if op is None:
            continue
        ident = (op.kind, op.column.name if op.column else op.target or "")
        if ident in seen or any(o.tool == op.tool for o in ops):
            continue
        if op.kind == "update" and len([o for o in ops if o.kind == "update"]) >= 2:
            continue
        if op.kind == "status" and len([o for o in ops if o.kind == "status"]) >= 2:
            continue
        seen.add(ident)
        if op.column is not None:
            used_cols.add(op.column.name)
        ops.append(op)
    return ops


# -- assembly --------------------------------------------------------------------------------------


def _pick(cands: list[Candidate], rng: random.Random) -> Candidate:
    best = cands[0]
    close = [c for c in cands[1:3] if c.score >= 0.8 * best.score and c.name != best.name]
    if close and rng.random() < 0.25:
        return close[0]
    return best


def _parent_of(cand: Candidate, info: DocInfo, main: Entity, rng: random.Random) -> Entity | None:
    """The table main rows belong to: the container class, or (sometimes) a class that mentions main's class."""
    owner = cand.owner
    if owner is None and cand.klass is not None and rng.random() < 0.5:
        owner = next((c for c in info.classes if cand.klass.name in c.refs and c is not cand.klass), None)
    pc = _class_candidate(owner) if owner is not None else None
    if pc is None or pc.name in (main.name, f"{main.name}_id"):
        return None
    pc.methods = []
    return _entity(pc, info, rng, {main.id_param}, fill=False)


def _child_of(cand: Candidate, info: DocInfo, main: Entity, rng: random.Random, taken: set[str]) -> Entity | None:
    """A table of rows that belong to main rows: a class that main's class mentions."""
    if cand.klass is None:
        return None
    for ref in cand.klass.refs:
        other = next((c for c in info.classes if c.name == ref), None)
        oc = _class_candidate(other) if other is not None and other is not cand.owner else None
        if oc is not None and oc.name not in taken and oc.fields and oc.score > 0:
            oc.methods = []
            return _entity(oc, info, rng, {main.id_param})
    return None


def _relations(cand: Candidate, info: DocInfo, main: Entity, rng: random.Random,
               max_tables: int) -> tuple[Entity | None, Entity | None]:
    parent = _parent_of(cand, info, main, rng) if max_tables >= 2 else None
    if parent is not None:
        main.parent = parent
    left = max_tables - 1 - (parent is not None)
    taken = {main.name} | ({parent.name} if parent else set())
    child = _child_of(cand, info, main, rng, taken) if left >= 1 else None
    if child is not None:
        child.parent = main
    return parent, child


def build_model(info: DocInfo, rng: random.Random, maker: ValueMaker, *, path: str, max_tables: int = 3,
                rows: tuple[int, int] = (5, 20), fill_rows: bool = True) -> EnvModel:
    """Design the environment of a document (raises :class:`TemplateError` when there is nothing to model).

    With ``fill_rows=False`` the entities come back without seed rows (the AST blueprint writer's use).
    """
    cands = candidates(info)
    if not cands:
        named = [c.name for c in info.classes] + [f.name for f in info.functions]
        if named and not any(n.isascii() for n in named):
            raise TemplateError(f"nothing to model: the document's classes and functions ({', '.join(named[:3])}) "
                                "have non-ASCII names, and the template names tools, tables and columns after "
                                "them in ASCII; use --proposer llm, which names them itself")
        raise TemplateError("nothing to model: the document defines no class with fields or methods and no "
                            "function")
    cand = _pick(cands, rng)
    main = _entity(cand, info, rng)
    parent, child = _relations(cand, info, main, rng, max_tables)
    entities = [e for e in (parent, main, child) if e is not None]
    origin = cand.owner.name if cand.owner else (cand.klass.name if cand.klass else "")
    ops = complete_ops(main, _ops_from_methods(main, cand.methods, origin), rng)
    if parent is not None:
        ops.append(Op("find", parent, join_tool_name("find", parent.name), parent.origin))
    if child is not None:
        ops += [Op("create", child, join_tool_name("add", child.name), child.origin),
                Op("list", child, join_tool_name("list", child.table), child.origin)]
    if fill_rows:
        fill_entity_rows(entities, rng, maker, rows)
    title = f"{human(main.table).capitalize()} ({info.module})"
    summary = cand.doc or info.doc
    return EnvModel(entities, ops, info.module, path, title, summary)

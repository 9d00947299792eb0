"""Render a world as a spec's state (DDL and seed rows) and tool schemas (the tool code: :mod:`.code`).

Role: the code-generation step of the world compiler. Each :class:`~envgen.world.model.Entity` becomes a
``CREATE TABLE`` (integer ``id``, references as ``<name>_id``, the key ``UNIQUE``, a ``state`` column
with a ``CHECK`` when it has a lifecycle) and its seed ``INSERT``s; each :class:`~envgen.world.model.Op`
becomes one OpenAI-format tool and one ``def NAME(db, ...)``.

Contract (what the tasks and the validity gate rely on):

* Tools speak **keys**, never row ids: arguments name records by their key (``order_number``,
  ``email``), results show references as the referenced record's key. Key lookups are
  case-insensitive; an unknown key is a ``ToolError`` naming the key.
* Money is stored in cents and crosses the tool boundary as a number of currency units (``12.5``);
  booleans cross as JSON booleans.
* Every guard raises ``ToolError`` before anything is written, with a message that says what was
  refused and why (the document's own exception name and words where the condition came from it).
* A ``search`` returns one **page**: ``{"<table>": [records], "total": N, "next_offset": K}``, at most
  ``limit`` records (:data:`PAGE_SIZE` by default, at most :data:`MAX_PAGE_SIZE`) from ``offset`` (0 by
  default) in a fixed order; ``next_offset`` is the ``offset`` of the next page, ``null`` on the last. A
  listing never grows with the table, so no result outgrows a model's context.
* A ``lookup`` of a record with child records pages each list of them alike: ``"<child table>"`` holds one page
  (``limit`` records from ``offset``, the same defaults and bounds), beside ``"<child table>_total"`` and
  ``"<child table>_next_offset"``; no list is ever cut without its total saying so.
* The code uses only the ``db`` facade, ``ToolError`` and the sandbox's builtins; it keeps no state
  between calls (so the engine's cheap checkpoints apply).
"""

from __future__ import annotations

import re
from typing import Any

from envgen.world.model import LOCATOR_KINDS, Condition, Entity, Op, World, human
from envgen.world.rows import Rows, order_entities

__all__ = ["MAX_PAGE_SIZE", "PAGE_PARAMS", "PAGE_SIZE", "by_ref", "describe", "escalation_topics", "filter_fields",
           "holder_of", "params_of", "render_state", "render_tools", "sql_literal", "text_field"]

#: records a search returns when the call gives no ``limit``, and the most a call may ask for
PAGE_SIZE = 10
MAX_PAGE_SIZE = 50
#: the parameters that page a search (no field of an entity may take these names)
PAGE_PARAMS = ("limit", "offset")

_SQLTYPE = {"TEXT": "TEXT", "INTEGER": "INTEGER", "REAL": "REAL", "BOOLEAN": "INTEGER"}


def sql_literal(value: Any) -> str:
    """A SQL literal for a seed value."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


# -- state ----------------------------------------------------------------------------------------------


def render_state(world: World, rows: Rows) -> tuple[str, str]:
    """``(schema_sql, seed_sql)``: the tables, referenced ones first, and their rows (100 a statement)."""
    ddl: list[str] = []
    seed: list[str] = []
    for ent in order_entities(world):
        cols = ['"id" INTEGER PRIMARY KEY']
        for ref in ent.refs:
            null = "" if ref.nullable else " NOT NULL"
            cols.append(f'"{ref.column}" INTEGER{null} REFERENCES "{ref.entity.table}"("id")')
        cols.append(f'"{ent.key.name}" TEXT NOT NULL UNIQUE COLLATE NOCASE')
        for f in ent.fields:
            check = ""
            if f.enum:
                check = f' CHECK ("{f.name}" IN ({", ".join(sql_literal(v) for v in f.enum)}))'
            null = "" if f.nullable else " NOT NULL"
            cols.append(f'"{f.name}" {_SQLTYPE[f.sqltype]}{null}{check}')
        if ent.states:
            cols.append(f'"state" TEXT NOT NULL CHECK ("state" IN ({", ".join(sql_literal(s) for s in ent.states)}))')
        ddl.append(f'CREATE TABLE "{ent.table}" (\n  ' + ",\n  ".join(cols) + "\n);")
        for ref in ent.refs:
            ddl.append(f'CREATE INDEX "{ent.table}_{ref.column}" ON "{ent.table}"("{ref.column}");')
        names = ["id", *ent.columns()]
        table_rows = rows.get(ent.table, [])
        for start in range(0, len(table_rows), 100):
            chunk = table_rows[start:start + 100]
            values = ",\n  ".join("(" + ", ".join(sql_literal(r.get(n)) for n in names) + ")" for r in chunk)
            seed.append(f'INSERT INTO "{ent.table}" ({", ".join(chr(34) + n + chr(34) for n in names)}) VALUES\n  '
                        + values + ";")
    if any(o.kind == "escalate" for o in world.ops):
        ddl.append('CREATE TABLE "escalations" (\n  "id" INTEGER PRIMARY KEY,\n  "subject" TEXT NOT NULL,\n'
                   '  "topic" TEXT NOT NULL\n);')
    return "\n".join(ddl) + "\n", "\n".join(seed) + "\n"


# -- tool schemas ---------------------------------------------------------------------------------------


def _key_param(ent: Entity, role: str = "") -> dict[str, Any]:
    what = f"The {human(ent.key.name)} of the {ent.human}"
    return {"type": "string", "description": f"{what}{role}."}


def _field_param(ent: Entity, name: str) -> dict[str, Any]:
    f = ent.field(name)
    if f is None:
        raise KeyError(f"{ent.name} has no field {name!r}")
    s = dict(f.semantic.schema)
    s.pop("description", None)
    if f.kind == "money":
        s = {"type": "number", "minimum": 0}
        unit = " in the store's currency"
    else:
        unit = ""
    if f.enum:
        s["enum"] = list(f.enum)
    scale = 100 if f.kind == "money" else 1  # money bounds are stored in cents; the tool takes currency units
    if f.minimum is not None and s.get("type") in ("integer", "number"):
        s["minimum"] = f.minimum / scale
    if f.maximum is not None and s.get("type") in ("integer", "number"):
        s["maximum"] = f.maximum / scale
    hint = {"date": " (YYYY-MM-DD)", "datetime": " (YYYY-MM-DDTHH:MM)"}.get(f.kind, "")
    s["description"] = f"The {ent.human}'s {f.human}{unit}{hint}" + (f": {f.description}" if f.description else "")
    return s


class _Params:
    """A tool's parameters being built: properties in order, and which are required."""

    def __init__(self) -> None:
        self.props: dict[str, Any] = {}
        self.required: list[str] = []

    def need(self, name: str, schema: dict[str, Any]) -> None:
        self.props[name] = schema
        self.required.append(name)


def params_of(world: World, op: Op) -> tuple[dict[str, Any], list[str]]:
    """The tool's parameters (JSON Schema properties) and the required ones, by kind; a lookup of a record with
    child records pages their lists as a search pages its records (``limit``, ``offset``)."""
    ent = op.entity
    p = _Params()
    if op.kind in ("lookup", "transition", "delete", "update", "adjust", "move", "acquire", "release"):
        p.need(ent.key.name, _key_param(ent))
    fill = _KIND_PARAMS.get(op.kind)
    if fill is not None:
        fill(op, p)
    if op.kind == "lookup" and world.children(ent):
        _page_params(p, f"Records per page of each list of the {ent.human}'s records")
    return p.props, p.required


def _page_params(p: _Params, what: str) -> None:
    p.props["limit"] = {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE,
                        "description": f"{what} (default {PAGE_SIZE})."}
    p.props["offset"] = {"type": "integer", "minimum": 0,
                         "description": "The next_offset of the page before (default 0)."}


def _create_params(op: Op, p: _Params) -> None:
    ent = op.entity
    for ref in ent.refs:
        if ref.nullable:
            p.props[ref.param] = _key_param(ref.entity, " it is for (optional)")
        else:
            p.need(ref.param, _key_param(ref.entity, " it belongs to" if ref.owner else " it refers to"))
    if ent.key.kind != "code":
        p.need(ent.key.name, {"type": "string", "minLength": 1,
                              "description": f"The new {ent.human}'s {human(ent.key.name)} (unique)."})
    for name in op.fields:
        p.need(name, _field_param(ent, name))


def _update_params(op: Op, p: _Params) -> None:
    for name in op.fields:
        p.props[name] = _field_param(op.entity, name)


def _read_params(op: Op, p: _Params) -> None:
    ent, k = op.entity, op.kind
    by = by_ref(op)
    if by is not None:
        p.need(by.param, _key_param(by.entity, " whose records to read" if k != "take" else " to take from"))
    elif k == "search":
        p.props["query"] = {"type": "string", "description": f"Words of the {ent.human}'s "
                            f"{human(text_field(ent) or ent.key.name)} to look for (case-insensitive)."}
        for f in filter_fields(ent):
            p.props[f.name] = {"type": "string", "description": f"Only {ent.humans} of this {f.human}."}
            if f.enum:
                p.props[f.name]["enum"] = list(f.enum)
    if ent.states and k != "take":
        p.props["state"] = {"type": "string", "enum": list(ent.states),
                            "description": f"Only {ent.humans} in this state."}
    if k == "search":
        _page_params(p, "Records per page")



def _amount_type(op: Op) -> str:
    f = op.entity.field(op.fields[0]) if op.fields else None
    return "number" if f is not None and (f.sqltype != "INTEGER" or f.kind == "money") else "integer"


def _adjust_params(op: Op, p: _Params) -> None:
    p.need("amount", {"type": _amount_type(op),
                      "description": f"How much to add to the {human(op.fields[0])} (negative to take away)."})


def _transfer_params(op: Op, p: _Params) -> None:
    ent, key = op.entity, op.entity.key.name
    p.need(f"from_{key}", _key_param(ent, " the amount comes from"))
    p.need(f"to_{key}", _key_param(ent, " the amount goes to"))
    p.need("amount", {"type": _amount_type(op), "exclusiveMinimum": 0,
                      "description": f"How much {human(op.fields[0])} to move."})


def _move_params(op: Op, p: _Params) -> None:
    par = op.entity.parent
    assert par is not None
    p.need(f"to_{par.param}", _key_param(par.entity, " it moves to"))


def _acquire_params(op: Op, p: _Params) -> None:
    holder = holder_of(op)
    p.need(holder.param, _key_param(holder.entity, " who takes it"))


def _escalate_params(op: Op, p: _Params) -> None:
    p.need(op.entity.key.name, _key_param(op.entity, " the request is about"))
    p.need("topic", {"type": "string", "enum": escalation_topics(op),
                     "description": "Why a person must take over: the policy rule the request falls under."})


_KIND_PARAMS = {"create": _create_params, "update": _update_params, "search": _read_params, "count": _read_params,
                "total": _read_params, "take": _read_params, "adjust": _adjust_params, "transfer": _transfer_params,
                "move": _move_params, "acquire": _acquire_params, "escalate": _escalate_params}


def by_ref(op: Op) -> Any:
    """The reference a search, count, total or take filters by: ``by``, or the record's parent."""
    if op.by is None:
        return op.entity.parent if op.kind in ("take", "count", "total") else None
    return next(r for r in op.entity.refs if r.name == op.by)


def holder_of(op: Op) -> Any:
    """The reference an acquire or release sets or clears."""
    return next(r for r in op.entity.refs if r.name == op.holder)


def filter_fields(ent: Entity) -> list[Any]:
    """The fields a search without a parent filters on (exact match): those with a fixed set of values (a
    category), and a person's postcode or city (how a caller is found by name and where they live)."""
    return [f for f in ent.fields if (f.enum and f.sqltype == "TEXT") or f.kind in LOCATOR_KINDS][:2]


def text_field(ent: Entity) -> str | None:
    """The field a search's words match: a title or a name, else a description."""
    for kinds in (("title", "person_name", "company"), ("description",)):
        for f in ent.fields:
            if f.kind in kinds:
                return f.name
    return None


def render_tools(world: World) -> list[dict[str, Any]]:
    """One OpenAI-format tool per operation."""
    out = []
    for op in world.ops:
        props, required = params_of(world, op)
        params: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            params["required"] = required
        out.append({"name": op.name, "description": describe(op, world), "parameters": params})
    return out


def describe(op: Op, world: World | None = None) -> str:
    """What the tool does and every rule it enforces, in the service's words (never the code's: the document
    function an operation is modelled on, its ``origin``, stays in the blueprint); a lookup of a record with child
    records (in ``world``) says how their lists are paged."""
    ent = op.entity
    text = op.description.rstrip(".") + "." if op.description else _default_description(op)
    children = world.children(ent) if world is not None and op.kind == "lookup" else []
    if children:
        lists = " and ".join(c.humans for c in children)
        text += (f" Its {lists} come one page at a time, each list with its total and the offset of the next page "
                 f"({', '.join(f'{c.table}_total, {c.table}_next_offset' for c in children)}; null on the last).")
    rules = [_rule_text(c) for c in op.conditions if c.kind in ("compare", "ref_state")]
    if op.kind == "transition" and op.sources:
        kept = op.keeps_state or op.target in op.sources
        sources = " or ".join(human(s) for s in op.sources)
        rules.insert(0, f"the {ent.human} is not {sources}" if kept
                     else f"only {sources} {ent.humans} can be moved to {human(op.target or '')}")
    if rules:
        text += " Refused when: " + "; ".join(rules) + "."
    return text


def _rule_text(cond: Condition) -> str:
    """A guard's refusal as a rule: the placeholders its tool fills from the record at run time (``{state}``: the
    state the record is in) said for every record (not one of the states the guard allows)."""
    text = cond.message.rstrip(".")
    if "{state}" in text:
        states = [human(v) for v in cond.values]
        text = text.replace("{state}", f"not {' or '.join(states)}" if states else "in a state that does not allow it")
    return re.sub(r"\s*\{[a-z_]+\}", "", text)


def _a(noun: str) -> str:
    """``noun`` with its indefinite article: ``a ticket``, ``an insurance policy``."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _default_description(op: Op) -> str:
    e = op.entity
    by = by_ref(op)
    return {
        "lookup": f"Look up {_a(e.human)} by its {human(e.key.name)}; returns its details.",
        "search": (f"List the {e.humans} of {_a(by.entity.human)}." if by is not None else
                   f"Search {e.humans} by words of their {human(text_field(e) or e.key.name)}."),
        "create": f"Create {_a(e.human)}.",
        "update": f"Change details of {_a(e.human)}.",
        "transition": f"Set {_a(e.human)}'s state to {op.target}." if op.target is not None else
                      f"Act on {_a(e.human)} that is {' or '.join(op.sources)}; its state stays as it is.",
        "adjust": f"Add an amount to {_a(e.human)}'s {human(op.fields[0]) if op.fields else 'value'}.",
        "transfer": f"Move an amount of {human(op.fields[0]) if op.fields else 'value'} from one {e.human} to another.",
        "move": f"Move {_a(e.human)} to another {e.parent.entity.human if e.parent else 'place'}.",
        "delete": f"Delete {_a(e.human)}.",
        "take": f"Take the {'oldest' if op.order == 'first' else 'newest'} {op.sources[0] if op.sources else ''} "
                f"{e.human} of {_a(by.entity.human if by is not None else 'container')} and mark it {op.target}.",
        "count": f"Count the {e.humans} of {_a(by.entity.human if by is not None else 'container')}.",
        "total": f"The total {human(op.fields[0]) if op.fields else ''} of "
                 f"{_a(by.entity.human if by is not None else 'container')}'s {e.humans}.",
        "acquire": f"Assign {_a(e.human)} to someone.",
        "release": f"Free {_a(e.human)} that someone holds.",
        "escalate": "Hand the conversation to a human agent, with a short reason.",
    }[op.kind]


def escalation_topics(op: Op) -> list[str]:
    """The topics an escalate tool takes: its ``sources`` (the policy's reasons), or one general topic."""
    return list(op.sources) or ["policy_exception"]

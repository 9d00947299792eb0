"""Render a world's operations as restricted tool code: one ``def NAME(db, ...)`` per tool.

Role: the code-generation step of the world compiler, beside :mod:`envgen.world.render` (state and tool
schemas, whose parameters each function takes). The code begins with lookup tables (keys, nouns and each table's
``SELECT``: tuples of ``(table, value)`` pairs) and a few helpers (find a record by key; ``show`` a record, one dict
display a table, with its references as keys and money in currency units); each operation kind has one body
renderer.

Every statement that reads records a tool shows reads each reference's key in the same statement
(:func:`select_sql`: a scalar subquery per reference, ``"<column> key"``), so a list of records costs one query,
not one more per reference of each row.

Contract: the same as :mod:`envgen.world.render`'s: tools speak keys, money crosses as currency units,
every guard refuses before anything is written (a transition's source state is checked before its guards),
and the code keeps no state between calls.
"""

from __future__ import annotations

import json
from typing import Any

from envgen.world.model import Condition, Entity, Op, World, human
from envgen.world.render import PAGE_SIZE, by_ref, filter_fields, holder_of, params_of, sql_literal, text_field
from envgen.world.rows import NEW_CODE_BASE

__all__ = ["CODE_NAMES", "code_name", "keys_only", "render_code", "select_sql"]

#: the names the rendered code defines (its helpers) or assigns inside a tool (its locals); a tool, a parameter (a
#: field or a key) or a helper of that name would shadow one of them, so the normaliser renames or drops those
#: (:func:`code_name`); tests/envgen/world/test_code_names.py checks the list against the code of every domain
CODE_NAMES = frozenset({"entry", "cents", "find", "shift_days", "reload", "show", "day", "dest", "dst", "held", "key",
                        "made", "n", "new", "new_id", "other", "out", "owner", "params", "r", "rec", "rows", "sql",
                        "src", "start", "who"})


def code_name(name: str) -> bool:
    """Whether ``name`` is one the rendered code uses (:data:`CODE_NAMES`, ``ref_<entity>``, ``eff<i>``, ``src<i>``)."""
    return name in CODE_NAMES or name.startswith("ref_") or (name[:3] in ("eff", "src") and name[3:].isdigit())

_OPS = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "==", "!=": "!="}

_HELPERS = '''
def entry(pairs, name, default=None):
    return dict(pairs).get(name, default)


def cents(amount):
    return int(round(amount * 100))


def find(db, table, value):
    key = entry(KEYS, table)
    rows = db.query(entry(SELECTS, table) + ' WHERE "' + key + '" = ?', [str(value).strip()])
    if not rows:
        raise ToolError("No " + entry(NOUNS, table) + " with " + key.replace("_", " ") + " " + str(value) + ".")
    return rows[0]


def shift_days(value, days):
    import datetime
    start = value if value else TODAY
    day = datetime.date.fromisoformat(start[:10]) + datetime.timedelta(days=days)
    return day.isoformat() + start[10:]


def reload(db, table, row_id):
    return db.query(entry(SELECTS, table) + ' WHERE "id" = ?', [row_id])[0]
'''


def _show(world: World) -> str:
    """``show(table, row)``: a record as tools return it, one dict display a table: its columns in table order but
    ``id``, a reference as the referenced record's key (the ``"<column> key"`` its :func:`select_sql` reads) under
    the reference's parameter name, money in currency units, booleans as booleans (``None`` kept)."""
    lines = ["def show(table, row):"]
    for e in world.entities:
        refs = {r.column: r.param for r in e.refs}
        money = {f.name for f in e.fields if f.kind == "money"}
        bools = {f.name for f in e.fields if f.sqltype == "BOOLEAN"}
        items = []
        for name in e.columns():
            if name in refs:
                items.append(f"{refs[name]!r}: row[{name + ' key'!r}]")
            elif name in money:
                items.append(f"{name!r}: None if row[{name!r}] is None else row[{name!r}] / 100")
            elif name in bools:
                items.append(f"{name!r}: None if row[{name!r}] is None else bool(row[{name!r}])")
            else:
                items.append(f"{name!r}: row[{name!r}]")
        lines += [f"    if table == {e.table!r}:", "        return {" + ", ".join(items) + "}"]
    return "\n".join([*lines, "    return {}", ""])


def _tables(world: World) -> str:
    """The module-level tables the helpers read (keys, nouns and :func:`select_sql`), each a
    tuple of ``(table, value)`` pairs read through ``entry``: tuples of constants, so the module keeps no state a
    call could change (:func:`gym_envs.sandbox.purity.stateless`: the validity gate then judges wrong trajectories
    from checkpoints and in place instead of replaying each one)."""
    keys = {e.table: e.key.name for e in world.entities}
    nouns = {e.table: e.human for e in world.entities}
    selects = {e.table: select_sql(e) for e in world.entities}
    tables: tuple[tuple[str, dict[str, Any]], ...] = (("KEYS", keys), ("NOUNS", nouns), ("SELECTS", selects))
    lines = [f"{name} = {tuple(sorted(value.items()))!r}" for name, value in tables]
    return "\n".join([*lines, f"TODAY = {_today()!r}"])


def render_code(world: World) -> str:
    """The spec's ``code``: the lookup tables, the helpers and one function per operation."""
    parts = [f'"""{world.title}: {world.domain}. Tools take and return keys, never row ids."""', "",
             _tables(world), _HELPERS, _show(world)]
    for op in world.ops:
        parts.append(_function(world, op))
    return "\n".join(parts).rstrip() + "\n"


def _q(name: str) -> str:
    return '"' + name + '"'


def select_sql(ent: Entity) -> str:
    """The ``SELECT`` of an entity's records with each reference's key (``"<column> key"``: NULL when the column is
    NULL or names no record), to which a ``WHERE`` clause is added; the table is aliased ``_row``, so a reference
    to the same table reads the other record."""
    keys = "".join(f', (SELECT {_q(r.entity.key.name)} FROM {_q(r.entity.table)} WHERE "id" = "_row".{_q(r.column)})'
                   f' AS {_q(r.column + " key")}' for r in ent.refs)
    return f'SELECT "_row".*{keys} FROM {_q(ent.table)} AS "_row"'


def _signature(world: World, op: Op) -> str:
    props, required = params_of(world, op)
    args = [n for n in props if n in required] + [f"{n}=None" for n in props if n not in required]
    return f"def {op.name}(db" + "".join(f", {a}" for a in args) + "):"


def _function(world: World, op: Op) -> str:
    body = _BODIES[op.kind](world, op)
    return _signature(world, op) + "\n" + "\n".join("    " + line if line else "" for line in body) + "\n"


def _guard(cond: Condition, rec: str, ent: Entity) -> list[str]:
    """The lines of one condition on the record variable ``rec`` (its row)."""
    msg = json.dumps(cond.message)
    if cond.kind == "state_in":
        return [f"if {rec}[\"state\"] not in {tuple(cond.values)!r}:",
                f"    raise ToolError({msg}.replace(\"{{state}}\", {rec}[\"state\"]))"]
    if cond.kind == "compare":
        assert cond.field is not None
        left = f'{rec}["{cond.field}"]'
        f = ent.field(cond.field)
        if cond.arg is not None:
            right = f"cents({cond.arg})" if f is not None and f.kind == "money" else cond.arg
            guard = f"{cond.arg} is not None and not ({left} {_OPS[cond.op]} {right})"
        else:
            guard = f"not ({left} {_OPS[cond.op]} {cond.value!r})"
        return [f"if {guard}:", f"    raise ToolError({msg})"]
    if cond.kind == "ref_state":
        ref = next(r for r in ent.refs if r.name == cond.ref)
        return [f"other = reload(db, \"{ref.entity.table}\", {rec}[\"{ref.column}\"])",
                f"if other[\"state\"] not in {tuple(cond.values)!r}:",
                f"    raise ToolError({msg}.replace(\"{{state}}\", other[\"state\"]))"]
    raise ValueError(f"condition kind {cond.kind!r} is not rendered on a record")


def _room(child: Entity, parent_var: str, msg: str) -> list[str]:
    par = child.parent
    assert par is not None and par.entity.capacity is not None
    cap = par.entity.capacity
    states = child.active_states
    where = f' AND "state" IN ({", ".join(sql_literal(s) for s in states)})' if child.states else ""
    sql = f'SELECT count(*) AS n FROM "{child.table}" WHERE "{par.column}" = ?{where}'
    return [f"held = db.query({sql!r}, [{parent_var}[\"id\"]])[0][\"n\"]",
            f"if held >= {parent_var}[\"{cap}\"]:",
            f"    raise ToolError({json.dumps(msg)}.replace(\"{{key}}\", {parent_var}[\"{par.entity.key.name}\"]))"]


def _effects(op: Op, rec: str) -> list[str]:
    """The lines that apply the operation's extra effects to ``rec`` (or its referenced records)."""
    out: list[str] = []
    ent = op.entity
    for i, eff in enumerate(op.effects):
        if eff.kind == "copy" and eff.source:
            ref_name, fname = eff.source.split(".", 1)
            ref = next(r for r in ent.refs if r.name == ref_name)
            out += [f"src{i} = reload(db, \"{ref.entity.table}\", {rec}[\"{ref.column}\"])",
                    _set(ent.table, eff.field, f"src{i}[\"{fname}\"]", rec),
                    f"{rec} = reload(db, \"{ent.table}\", {rec}[\"id\"])"]
            continue
        target_ent, target = ent, rec
        if eff.ref is not None:
            ref = next(r for r in ent.refs if r.name == eff.ref)
            target_ent, target = ref.entity, f"eff{i}"
            out.append(f"{target} = reload(db, \"{ref.entity.table}\", {rec}[\"{ref.column}\"])")
        f = target_ent.field(eff.field)
        if eff.kind == "shift":
            out.append(_set(target_ent.table, eff.field,
                            f"shift_days({target}[\"{eff.field}\"], {int(eff.value) * eff.sign})", target))
            continue
        money = f is not None and f.kind == "money"
        if eff.arg is not None:
            amount = f"cents({eff.arg})" if money else eff.arg
        elif eff.value == "today":
            amount = repr(_today())
        else:
            amount = repr(eff.value)
        if eff.scale is not None:
            amount = f"{amount} * {rec}[\"{eff.scale}\"]"
        if eff.kind == "set":
            value = amount
        else:
            value = f"{target}[\"{eff.field}\"] {'+' if eff.sign > 0 else '-'} {amount}"
            if f is not None and (f.minimum is not None or f.kind in ("money", "count", "quantity")):
                floor = f.minimum if f.minimum is not None else 0
                out += [f"if {value} < {floor!r}:",
                        f"    raise ToolError(\"Not enough {human(eff.field)}: the {target_ent.human} "
                        f"has \" + str({target}[\"{eff.field}\"]{' / 100' if money else ''}) + \".\")"]
        out.append(_set(target_ent.table, eff.field, value, target))
    return out


def _today() -> str:
    from envgen.world.data import TODAY

    return TODAY.isoformat()


def _b_lookup(world: World, op: Op) -> list[str]:
    """The record, and one page of each list of its child records (render.py's contract): ``limit`` records from
    ``offset`` in a fixed order, with the list's ``<table>_total`` and ``<table>_next_offset`` (``None`` on the last
    page), so a record with more children than a page says so and the agent reads on with ``offset``."""
    ent = op.entity
    key = ent.key.name
    lines = [f"rec = find(db, \"{ent.table}\", {key})", f"out = show(\"{ent.table}\", rec)"]
    children = world.children(ent)
    if children:
        lines.append("start = offset or 0")
    for child in children:
        par = child.parent
        assert par is not None
        where = f' WHERE "{par.column}" = ?'
        page = ' ORDER BY "_row"."id" LIMIT ? OFFSET ?'
        args = f"[rec[\"id\"], {PAGE_SIZE} if limit is None else limit, start]"
        if keys_only(world, child):
            sql = f'SELECT "{child.key.name}" AS k FROM "{child.table}" AS "_row"{where}{page}'
            lines += [f"rows = db.query({sql!r}, {args})", f"out[\"{child.table}\"] = [r[\"k\"] for r in rows]"]
        else:
            lines += [f"rows = db.query({select_sql(child) + where + page!r}, {args})",
                      f"out[\"{child.table}\"] = [show(\"{child.table}\", r) for r in rows]"]
        count = f'SELECT count(*) AS n FROM "{child.table}"{where}'
        lines += [f"n = db.query({count!r}, [rec[\"id\"]])[0][\"n\"]",
                  f"out[\"{child.table}_total\"] = n",
                  f"out[\"{child.table}_next_offset\"] = start + len(rows) if start + len(rows) < n else None"]
    lines.append("return out")
    return lines


def keys_only(world: World, child: Entity) -> bool:
    """Whether a lookup lists a child entity's records by their keys only, not whole: a person's records, and a
    child with many records per parent (each is read with its own lookup or search)."""
    par = child.parent
    assert par is not None
    return par.entity.role == "person" or child.rows > 4 * max(1, par.entity.rows)


def _state_filter(ent: Entity, lines: list[str]) -> None:
    if ent.states:
        lines += ["if state is not None:", "    sql = sql + ' AND \"state\" = ?'", "    params.append(state)"]


def _b_search(world: World, op: Op) -> list[str]:
    """One page of the records (render.py's contract): ``sql`` is the ``WHERE`` clause, read once for the page and
    once for the total. A text query's pattern is made in SQL (``'%' || ? || '%'``): SQLite prepares a statement
    whose ``LIKE`` pattern is a bare parameter again each time the parameter's value changes (its plan may depend on
    the pattern), authorizer and all."""
    ent = op.entity
    by = by_ref(op)
    if by is not None:
        lines = [f"owner = find(db, \"{by.entity.table}\", {by.param})",
                 f"sql = {' WHERE ' + _q(by.column) + ' = ?'!r}", "params = [owner[\"id\"]]"]
    else:
        col = text_field(ent) or ent.key.name
        lines = ["sql = ' WHERE 1 = 1'", "params = []",
                 "if query is not None:", f"    sql = sql + ' AND lower(\"{col}\") LIKE \\'%\\' || ? || \\'%\\''",
                 "    params.append(query.strip().lower())"]
        for f in filter_fields(ent):
            lines += [f"if {f.name} is not None:", f"    sql = sql + ' AND \"{f.name}\" = ?'",
                      f"    params.append({f.name})"]
    _state_filter(ent, lines)
    count = f'SELECT count(*) AS n FROM {_q(ent.table)} AS "_row"'
    lines += ["start = offset or 0",
              f"rows = db.query({select_sql(ent)!r} + sql + ' ORDER BY \"_row\".\"id\" LIMIT ? OFFSET ?', "
              f"params + [{PAGE_SIZE} if limit is None else limit, start])",
              f"n = db.query({count!r} + sql, params)[0][\"n\"]",
              f"return {{\"{ent.table}\": [show(\"{ent.table}\", r) for r in rows], \"total\": n, "
              "\"next_offset\": start + len(rows) if start + len(rows) < n else None}"]
    return lines


def _b_count(world: World, op: Op, total: bool = False) -> list[str]:
    ent = op.entity
    by = by_ref(op)
    assert by is not None
    what = f'sum("{op.fields[0]}")' if total else "count(*)"
    lines = [f"owner = find(db, \"{by.entity.table}\", {by.param})",
             f"sql = 'SELECT {what} AS n FROM \"{ent.table}\" WHERE \"{by.column}\" = ?'", "params = [owner[\"id\"]]"]
    _state_filter(ent, lines)
    f = ent.field(op.fields[0]) if total and op.fields else None
    value = "(n or 0) / 100" if f is not None and f.kind == "money" else "n or 0"
    lines += ["n = db.query(sql, params)[0][\"n\"]",
              f"return {{\"{by.param}\": owner[\"{by.entity.key.name}\"], "
              f"\"{'total_' + op.fields[0] if total else 'count'}\": {value}}}"]
    return lines


def _b_total(world: World, op: Op) -> list[str]:
    return _b_count(world, op, total=True)


def _b_create(world: World, op: Op) -> list[str]:
    ent = op.entity
    lines: list[str] = []
    values: dict[str, str] = {}
    for ref in ent.refs:
        arg = ref.param
        var = f"ref_{ref.name}"
        if ref.nullable:
            lines += [f"{var} = find(db, \"{ref.entity.table}\", {arg}) if {arg} is not None else None"]
            values[ref.column] = f"{var}[\"id\"] if {var} is not None else None"
        else:
            lines.append(f"{var} = find(db, \"{ref.entity.table}\", {arg})")
            values[ref.column] = f"{var}[\"id\"]"
    for cond in op.conditions:
        if cond.kind == "room":
            par = ent.parent
            assert par is not None
            lines += _room(ent, f"ref_{par.name}", cond.message)
        elif cond.kind == "ref_state":
            lines += [f"if ref_{cond.ref}[\"state\"] not in {tuple(cond.values)!r}:",
                      f"    raise ToolError({json.dumps(cond.message)}"
                      f".replace(\"{{state}}\", ref_{cond.ref}[\"state\"]))"]
        elif cond.kind == "compare" and cond.field and "." in cond.field:
            ref_name, fname = cond.field.split(".", 1)
            ref = next(r for r in ent.refs if r.name == ref_name)
            fref = ref.entity.field(fname)
            left = f"ref_{ref_name}[\"{fname}\"]"
            right = (f"cents({cond.arg})" if fref is not None and fref.kind == "money" else cond.arg) \
                if cond.arg is not None else repr(cond.value)
            lines += [f"if not ({left} {_OPS[cond.op]} {right}):", f"    raise ToolError({json.dumps(cond.message)})"]
    key = ent.key.name
    if ent.key.kind != "code":
        lines += [f"if db.query('SELECT \"id\" FROM \"{ent.table}\" WHERE \"{key}\" = ?', [{key}.strip()]):",
                  f"    raise ToolError(\"A {ent.human} with {human(key)} \" + {key}.strip() + \" already exists.\")"]
        values[key] = f"{key}.strip()"
    else:
        lines.append(f"new_id = db.query('SELECT coalesce(max(\"id\"), 0) + 1 AS n FROM \"{ent.table}\"')[0][\"n\"]")
        values[key] = f"\"{ent.prefix}-\" + str({NEW_CODE_BASE} + new_id)"
    for f in ent.fields:
        if f.name in op.fields:
            if f.kind == "money":
                values[f.name] = f"cents({f.name})"
            elif f.sqltype == "BOOLEAN":
                values[f.name] = f"1 if {f.name} else 0"
            elif f.sqltype == "TEXT":
                values[f.name] = f"{f.name}.strip()"
            else:
                values[f.name] = f.name
        else:
            values[f.name] = _default_value(world, ent, f.name)
    if ent.states:
        values["state"] = repr(ent.states[0])
    cols = list(values)
    lines.append(f"made = db.execute('INSERT INTO \"{ent.table}\" ({', '.join(_q(c) for c in cols)}) VALUES "
                 f"({', '.join('?' for _ in cols)})', [{', '.join(values[c] for c in cols)}])")
    lines.append(f"rec = reload(db, \"{ent.table}\", made[\"lastrowid\"])")
    lines += _effects(op, "rec")
    lines.append(f"return show(\"{ent.table}\", reload(db, \"{ent.table}\", rec[\"id\"]))")
    return lines


def _default_value(world: World, ent: Entity, name: str) -> str:
    f = ent.field(name)
    assert f is not None
    if f.nullable:
        return "None"
    if f.kind in ("date", "datetime"):
        return repr(_today() + ("T09:00" if f.kind == "datetime" else ""))
    if f.sqltype in ("INTEGER", "REAL", "BOOLEAN"):
        if f.kind == "money" and any(ef.scale for o in world.ops for ef in o.effects):
            pass
        return repr(int(f.minimum) if f.minimum is not None else 0)
    if f.enum:
        return repr(f.enum[0])
    return "''"


def _set(table: str, column: str, value: str | None, row: str = "rec", expr: str = "?") -> str:
    """The line that sets ``column`` of the record in the variable ``row`` (a record of ``table``) to ``expr``, an
    SQL expression whose ``?`` is ``value`` (Python source); a ``value`` of None sets the column to NULL."""
    if value is None:
        return f"db.execute('UPDATE \"{table}\" SET \"{column}\" = NULL WHERE \"id\" = ?', [{row}[\"id\"]])"
    return f"db.execute('UPDATE \"{table}\" SET \"{column}\" = {expr} WHERE \"id\" = ?', [{value}, {row}[\"id\"]])"


def _load(op: Op, first: list[str] | None = None) -> list[str]:
    """Find the record by its key, run ``first`` (the source-state check of a transition), then the guards."""
    ent = op.entity
    lines = [f"rec = find(db, \"{ent.table}\", {ent.key.name})", *(first or [])]
    for cond in op.conditions:
        if cond.kind in ("state_in", "compare", "ref_state") and not (cond.field and "." in cond.field):
            lines += _guard(cond, "rec", ent)
    return lines


def _done(op: Op) -> list[str]:
    ent = op.entity
    return [*_effects(op, "rec"), f"return show(\"{ent.table}\", reload(db, \"{ent.table}\", rec[\"id\"]))"]


def _b_update(world: World, op: Op) -> list[str]:
    ent = op.entity
    lines = _load(op)
    given = " or ".join(f"{n} is not None" for n in op.fields)
    lines += [f"if not ({given}):",
              f"    raise ToolError(\"Nothing to change: give at least one of {', '.join(op.fields)}.\")"]
    for name in op.fields:
        f = ent.field(name)
        assert f is not None
        value = f"cents({name})" if f.kind == "money" else (f"1 if {name} else 0" if f.sqltype == "BOOLEAN" else
                                                            (f"{name}.strip()" if f.sqltype == "TEXT" else name))
        lines += [f"if {name} is not None:",
                  f"    {_set(ent.table, name, value)}"]
    return lines + _done(op)


def _b_transition(world: World, op: Op) -> list[str]:
    # The source state is checked before the guards, as a service says first that a record is in the wrong
    # state ("the loan is returned") and only then why a record in the right state is refused.
    # A transition without a target keeps the state whichever source state the record is in (gift-wrapping a
    # pending or a processing order); one whose target is among its sources moves every source state there.
    ent = op.entity
    lines: list[str] = []
    if op.sources:
        msg = (f"The {ent.human} \" + rec[\"{ent.key.name}\"] + \" is \" + rec[\"state\"] + \"; only "
               f"{' or '.join(op.sources)} {ent.humans} can be set to {op.target}.")
        if op.keeps_state:  # an operation whose effects are the point (a renewal, a gift wrap)
            msg = (f"The {ent.human} \" + rec[\"{ent.key.name}\"] + \" is \" + rec[\"state\"] + \"; "
                   f"{human(op.name)} applies only to {' or '.join(op.sources)} {ent.humans}.")
        lines += [f"if rec[\"state\"] not in {tuple(op.sources)!r}:", f"    raise ToolError(\"{msg}\")"]
    lines = _load(op, lines)
    if op.target is not None:
        lines.append(_set(ent.table, "state", repr(op.target)))
    return lines + _done(op)


def _b_adjust(world: World, op: Op) -> list[str]:
    ent = op.entity
    name = op.fields[0]
    f = ent.field(name)
    assert f is not None
    money = f.kind == "money"
    lines = _load(op)
    amount = "cents(amount)" if money else "amount"
    floor = f.minimum if f.minimum is not None else 0
    shown = f"str(rec[\"{name}\"]{' / 100' if money else ''})"
    lines += [f"new = rec[\"{name}\"] + {amount}",
              f"if new < {floor!r}:",
              f"    raise ToolError(\"The {ent.human}'s {f.human} would go below {floor}: it is \" + {shown} + \".\")"]
    if f.maximum is not None:
        lines += [f"if new > {f.maximum!r}:", f"    raise ToolError(\"The {f.human} may not exceed {f.maximum}.\")"]
    lines.append(_set(ent.table, name, "new"))
    return lines + _done(op)


def _b_transfer(world: World, op: Op) -> list[str]:
    ent = op.entity
    key = ent.key.name
    name = op.fields[0]
    f = ent.field(name)
    assert f is not None
    money = f.kind == "money"
    amount = "cents(amount)" if money else "amount"
    lines = [f"src = find(db, \"{ent.table}\", from_{key})", f"dst = find(db, \"{ent.table}\", to_{key})",
             "if src[\"id\"] == dst[\"id\"]:",
             f"    raise ToolError(\"The two {ent.humans} are the same; name two different ones.\")"]
    for cond in op.conditions:
        if cond.kind in ("state_in", "compare", "ref_state"):
            lines += _guard(cond, "src", ent) + _guard(cond, "dst", ent)
    lines += [f"if src[\"{name}\"] < {amount}:",
              f"    raise ToolError(\"Not enough {f.human}: \" + src[\"{key}\"] + \" has \" + "
              f"str(src[\"{name}\"]{' / 100' if money else ''}) + \".\")",
              _set(ent.table, name, amount, "src", f"\"{name}\" - ?"),
              _set(ent.table, name, amount, "dst", f"\"{name}\" + ?"),
              f"return {{\"from\": show(\"{ent.table}\", reload(db, \"{ent.table}\", src[\"id\"])), "
              f"\"to\": show(\"{ent.table}\", reload(db, \"{ent.table}\", dst[\"id\"]))}}"]
    return lines


def _b_move(world: World, op: Op) -> list[str]:
    ent = op.entity
    par = ent.parent
    assert par is not None
    lines = [*_load(op), f"dest = find(db, \"{par.entity.table}\", to_{par.param})",
                         f"if rec[\"{par.column}\"] == dest[\"id\"]:",
                         f"    raise ToolError(\"The {ent.human} is already with that {par.entity.human}.\")"]
    for cond in op.conditions:
        if cond.kind == "room":
            lines += _room(ent, "dest", cond.message)
    lines.append(_set(ent.table, par.column, "dest[\"id\"]"))
    return lines + _done(op)


def _b_delete(world: World, op: Op) -> list[str]:
    ent = op.entity
    lines = _load(op)
    for child in world.children(ent):
        par = child.parent
        assert par is not None
        lines += [f"if db.query('SELECT \"id\" FROM \"{child.table}\" WHERE \"{par.column}\" = ? LIMIT 1', "
                  "[rec[\"id\"]]):",
                  f"    raise ToolError(\"The {ent.human} still has {child.humans}; it is kept.\")"]
    lines += _effects(op, "rec")
    lines += [f"db.execute('DELETE FROM \"{ent.table}\" WHERE \"id\" = ?', [rec[\"id\"]])",
              f"return {{\"deleted\": rec[\"{ent.key.name}\"]}}"]
    return lines


def _b_take(world: World, op: Op) -> list[str]:
    ent = op.entity
    by = by_ref(op)
    assert by is not None and op.target is not None
    src = op.sources[0] if op.sources else ent.states[0]
    direction = "ASC" if op.order == "first" else "DESC"
    empty = next((c.message for c in op.conditions if c.kind == "not_empty"),
                 f"No {src} {ent.human} for {{key}}.")
    lines = [f"owner = find(db, \"{by.entity.table}\", {by.param})",
             f"rows = db.query('SELECT * FROM \"{ent.table}\" WHERE \"{by.column}\" = ? AND \"state\" = ? "
             f"ORDER BY \"id\" {direction} LIMIT 1', [owner[\"id\"], {src!r}])",
             "if not rows:",
             f"    raise ToolError({json.dumps(empty)}.replace(\"{{key}}\", owner[\"{by.entity.key.name}\"]))",
             "rec = rows[0]",
             _set(ent.table, "state", repr(op.target))]
    return lines + _done(op)


def _b_acquire(world: World, op: Op) -> list[str]:
    ent = op.entity
    holder = holder_of(op)
    taken = next((c.message for c in op.conditions if c.kind == "free"),
                 f"The {ent.human} is already held by someone else.")
    lines = [*_load(op), f"who = find(db, \"{holder.entity.table}\", {holder.param})",
                         f"if rec[\"{holder.column}\"] is not None:",
                         f"    raise ToolError({json.dumps(taken)})",
                         _set(ent.table, holder.column, "who[\"id\"]")]
    return lines + _done(op)


def _b_release(world: World, op: Op) -> list[str]:
    ent = op.entity
    holder = holder_of(op)
    free = next((c.message for c in op.conditions if c.kind == "held"), f"The {ent.human} is not held by anyone.")
    lines = [*_load(op), f"if rec[\"{holder.column}\"] is None:", f"    raise ToolError({json.dumps(free)})",
                         _set(ent.table, holder.column, None)]
    return lines + _done(op)




def _b_escalate(world: World, op: Op) -> list[str]:
    ent = op.entity
    return [f"rec = find(db, \"{ent.table}\", {ent.key.name})",
            "db.execute('INSERT INTO \"escalations\" (\"subject\", \"topic\") VALUES (?, ?)', "
            f"[rec[\"{ent.key.name}\"], topic])",
            f"return {{\"transferred\": True, \"{ent.key.name}\": rec[\"{ent.key.name}\"], \"topic\": topic, "
            "\"message\": \"A member of staff will take over this request.\"}"]


_BODIES: dict[str, Any] = {
    "lookup": _b_lookup, "search": _b_search, "count": _b_count, "total": _b_total, "create": _b_create,
    "update": _b_update, "transition": _b_transition, "adjust": _b_adjust, "transfer": _b_transfer,
    "move": _b_move, "delete": _b_delete, "take": _b_take, "acquire": _b_acquire, "release": _b_release,
    "escalate": _b_escalate,
}

"""Render the compiler's operations as tool schemas, restricted tool code and SQL.

Role: the code-generation step. Each :class:`~envgen.blueprint.render.model.Op`
becomes one OpenAI-format tool and one ``def NAME(db, ...)`` in the spec's
``code``; each :class:`~envgen.blueprint.render.model.Entity` becomes one
``CREATE TABLE`` and its seed ``INSERT`` statements.

Contract (what the validity gate and the near-miss rule rely on):

* Every write tool raises ``ToolError`` on an unknown id, a duplicate key or
  a blank string (types and ``minimum: 0`` are in the schema, which the
  runtime enforces before the call), so a perturbed argument either writes a
  different row / value or fails.
* Business rules refuse with a ``ToolError`` that says why and that nothing
  was changed: an adjust or a transfer past a column's range (an overdraft),
  a child row created in or moved to a full parent row (a ``capacity``), a
  status change out of a ``final`` state. Tool descriptions state each rule
  and never use the words a refusal reply is checked for ("cannot", ...).
* A tool's parameters are exactly its schema's properties; optional ones
  (booleans of a create, list filters) have defaults.
* The generated code uses only the ``db`` facade, ``ToolError`` and builtins
  allowed by :mod:`gym_envs.sandbox` (no imports, no ``_`` names).
"""

from __future__ import annotations

from typing import Any

from envgen.blueprint.render.model import Column, Entity, EnvModel, Op, human
from envgen.blueprint.render.values import sql_literal

__all__ = ["list_filter", "render_code", "render_state", "render_tools"]

_HELPERS: dict[str, str] = {
    "need_text": '''
def need_text(label, value):
    if not value.strip():
        raise ToolError(f"{label} must not be empty")
    if len(value) > 200:
        raise ToolError(f"{label} is too long (at most 200 characters)")
    return value
''',
    "as_record": '''
def as_record(table, found):
    record = dict(found)
    for name in dict(BOOLEAN_COLUMNS).get(table, ()):
        if record.get(name) is not None:
            record[name] = bool(record[name])
    return record
''',
    "load_row": '''
def load_row(db, table, noun, row_id):
    found = db.query(f'SELECT * FROM "{table}" WHERE "id" = ?', [row_id])
    if not found:
        raise ToolError(f"no {noun} with id {row_id}")
    return found[0]
''',
    "by_key": '''
def by_key(db, table, column, noun, value):
    found = db.query(f'SELECT * FROM "{table}" WHERE lower("{column}") = lower(?)', [value])
    if found:
        return found[0]
    close = db.query(f'SELECT "{column}" AS k FROM "{table}" WHERE "{column}" LIKE ? ORDER BY "id" LIMIT 5',
                     [f"%{value}%"])
    raise ToolError(f"no {noun} with {column} {value!r}" + (f"; similar: {[c['k'] for c in close]}" if close else ""))
''',
}
"""Helper functions of the generated code; only those a tool calls are emitted."""


def _booleans(ent: Entity) -> bool:
    return any(c.sqltype == "BOOLEAN" for c in ent.columns)


def _record(ent: Entity, expr: str) -> str:
    """``expr`` (one row) as the tool returns it: booleans as JSON booleans."""
    return f'as_record("{ent.table}", {expr})' if _booleans(ent) else expr


def _records(ent: Entity) -> str:
    return f'[as_record("{ent.table}", r) for r in found]' if _booleans(ent) else "found"


def _q(name: str) -> str:
    return f'"{name}"'


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


# -- schema ----------------------------------------------------------------------------------------


def _col_schema(c: Column, ent: Entity) -> dict[str, Any]:
    s: dict[str, Any] = {"type": c.json_type}
    if c is ent.key:
        s["description"] = f"{human(c.name).capitalize()} of the {ent.human} (unique)."
    elif c.description:
        s["description"] = f"The {ent.human}'s {c.human}: {c.description.rstrip('.')}" + (
            " (unique)." if c.unique else ".")
    else:
        s["description"] = f"The {ent.human}'s {c.human}" + (f" (from {c.origin})." if c.origin else ".")
    if c.sqltype in ("INTEGER", "REAL"):
        s["minimum"] = c.minimum if c.minimum is not None else 0
        if c.maximum is not None:
            s["maximum"] = c.maximum
    if c.sqltype == "TEXT":
        s["minLength"] = 1
        if c.enum:
            s["enum"] = list(c.enum)
    return s


def _id_schema(ent: Entity, how: str) -> dict[str, Any]:
    return {"type": "integer", "description": f"Id of the {ent.human}{how}."}


def list_filter(op: Op) -> tuple[str, dict[str, Any]] | None:
    """The optional filter parameter of a list tool: (name, schema), or None."""
    ent = op.entity
    if ent.parent is not None:
        return ent.parent.id_param, _id_schema(ent.parent, f" whose {ent.humans} to list")
    if ent.status:
        return "status", {"type": "string", "enum": list(ent.status),
                          "description": f"Only {ent.humans} with this status."}
    texts = [c for c in ent.columns if c.sqltype == "TEXT"]
    if texts:
        c = texts[0]
        return c.name, {"type": "string", "description": f"Only {ent.humans} whose {c.human} equals this."}
    return None


def _grounding(op: Op, model: EnvModel) -> str:
    origin = op.origin or op.entity.origin
    note = f" {op.note.rstrip('.')}." if op.note else ""
    return note + (f" Modelled on `{origin}` in {model.path}." if origin else "")


def _tool(op: Op, model: EnvModel) -> dict[str, Any]:
    ent = op.entity
    props: dict[str, Any] = {}
    required: list[str] = []
    finder = model.op("find", ent.parent) if ent.parent is not None else None
    if op.kind == "create":
        if ent.parent is not None:
            how = f" it belongs to (see {finder.tool})" if finder else " it belongs to"
            props[ent.parent.id_param] = _id_schema(ent.parent, how)
            required.append(ent.parent.id_param)
        for c in ent.all_columns():
            props[c.name] = _col_schema(c, ent)
            if c.required:
                required.append(c.name)
        cols = ", ".join(c.human for c in ent.all_columns())
        desc = (f"Create {_article(ent.human)} {ent.human} with its {cols}. Fails if {_article(ent.human)} "
                f"{ent.human} with that {ent.key.human} already exists{_full(ent)}.")
    elif op.kind == "find":
        props[ent.key.name] = {"type": "string", "description": f"The exact {ent.key.human} (case-insensitive)."}
        required.append(ent.key.name)
        desc = f"Find {_article(ent.human)} {ent.human} by its {ent.key.human}; returns the whole record with its id."
    elif op.kind == "list":
        filt = list_filter(op)
        if filt is not None:
            props[filt[0]] = filt[1]
            if ent.parent is not None:
                required.append(filt[0])
        desc = f"List {ent.humans} (ordered by id)" + (f", filtered by {human(filt[0])}." if filt else ".")
    elif op.kind == "transfer":
        desc = _transfer_schema(op, props, required)
    elif op.kind == "adjust" and op.column is not None:
        c = op.column
        props[ent.id_param] = _id_schema(ent, "")
        props["amount"] = {"type": c.json_type, "description": f"How much to add to the {c.human} (negative to "
                                                                f"take away)."}
        required += [ent.id_param, "amount"]
        limits = _limits(c)
        desc = (f"Add an amount to the {c.human} of {_article(ent.human)} {ent.human} (negative to take away); "
                f"returns the new {c.human}." + (f" Fails if the result would be {limits}." if limits else ""))
    else:
        props[ent.id_param] = _id_schema(ent, "")
        required.append(ent.id_param)
        desc = _write_description(op)
        if op.kind == "update" and op.column is not None:
            props[op.column.name] = _col_schema(op.column, ent)
            props[op.column.name]["description"] = f"The new {op.column.human}."
            required.append(op.column.name)
    params: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        params["required"] = required
    return {"name": op.tool, "description": desc + _grounding(op, model), "parameters": params}


def _transfer_schema(op: Op, props: dict[str, Any], required: list[str]) -> str:
    """The parameters of a transfer (into ``props``/``required``) and its description."""
    ent, c = op.entity, op.column
    if c is None:
        parent = ent.parent
        if parent is None:
            raise ValueError(f"transfer tool {op.tool!r} moves rows but {ent.name} has no parent")
        props[ent.id_param] = _id_schema(ent, " to move")
        props[parent.id_param] = _id_schema(parent, " it moves to")
        required += [ent.id_param, parent.id_param]
        return (f"Move {_article(ent.human)} {ent.human} to another {parent.human}. Fails if it already belongs to "
                f"that {parent.human}{_full(ent)}.")
    src, dst = f"from_{ent.id_param}", f"to_{ent.id_param}"
    props[src] = _id_schema(ent, f" whose {c.human} goes down")
    props[dst] = _id_schema(ent, f" whose {c.human} goes up")
    props["amount"] = {"type": c.json_type, "minimum": 1 if c.sqltype == "INTEGER" else 0,
                       "description": f"How much {c.human} to move (more than 0)."}
    required += [src, dst, "amount"]
    limits = _limits(c)
    return (f"Move an amount of {c.human} from one {ent.human} to another: the first one's {c.human} goes down "
            f"and the second one's goes up by the same amount, in one step; returns both new values."
            + (f" Fails if either would be {limits}." if limits else ""))


def _full(ent: Entity) -> str:
    """``", or if the group is full (at most 4 items)"``: the capacity rule a child's create or move meets."""
    parent = ent.parent
    if parent is None or not parent.limited:
        return ""
    most = (f"at most {parent.capacity} {ent.humans}" if parent.capacity is not None
            else f"its {parent.capacity_column.human} says how many {ent.humans} it holds"
            if parent.capacity_column is not None else "")
    return f", or if the {parent.human} is full ({most})"


def _limits(c: Column) -> str:
    """How an adjust can fail: ``below 0``, ``above 100`` or ``below 0 or above 100``; "" when unbounded."""
    parts = []
    if c.minimum is not None:
        parts.append(f"below {c.minimum:g}")
    if c.maximum is not None:
        parts.append(f"above {c.maximum:g}")
    return " or ".join(parts)


def _write_description(op: Op) -> str:
    ent = op.entity
    if op.kind == "get":
        return f"Get {_article(ent.human)} {ent.human} by id."
    if op.kind == "update" and op.column is not None:
        return f"Change the {op.column.human} of {_article(ent.human)} {ent.human}."
    if op.kind == "delete":
        return f"Delete {_article(ent.human)} {ent.human} (and everything that belongs to it)."
    final = [s for s in ent.final if s != op.target]
    also = (f" or if it is {' or '.join(human(s) for s in final)} (a final state, which never changes)"
            if final else "")
    return (f"Mark {_article(ent.human)} {ent.human} as {human(op.target or '')} (its status becomes "
            f"'{op.target}'). Fails if it already is{also}.")


def render_tools(model: EnvModel) -> list[dict[str, Any]]:
    """The OpenAI-format tool list."""
    return [_tool(op, model) for op in model.ops]


# -- code ------------------------------------------------------------------------------------------


def _validation(c: Column) -> str:
    """Checks beyond the schema (types and ``minimum: 0`` are enforced by the runtime before the call)."""
    if c.sqltype == "TEXT":
        return f'    need_text("{c.name}", {c.name})\n'
    return ""


def _stored(c: Column) -> str:
    return f"(1 if {c.name} else 0)" if c.sqltype == "BOOLEAN" else c.name


def _signature(op: Op, tool: dict[str, Any]) -> str:
    props = tool["parameters"]["properties"]
    required = set(tool["parameters"].get("required", []))
    parts = ["db"]
    parts += [p for p in props if p in required]
    for p in props:
        if p not in required:
            parts.append(f"{p}=False" if props[p].get("type") == "boolean" else f"{p}=None")
    return f"def {op.tool}({', '.join(parts)}):\n"


def _code_create(op: Op) -> str:
    ent = op.entity
    t = ent.table
    body = "".join(_validation(c) for c in ent.all_columns())
    cols = [c.name for c in ent.all_columns()]
    vals = [_stored(c) for c in ent.all_columns()]
    if ent.parent is not None:
        body += f'    parent_row = load_row(db, "{ent.parent.table}", "{ent.parent.human}", {ent.parent.id_param})\n'
        body += _room_check(ent)
        cols.insert(0, ent.parent.id_param)
        vals.insert(0, ent.parent.id_param)
    if ent.status:
        cols.append("status")
        vals.append(repr(ent.status[0]))
    k = ent.key.name
    body += (f'    if db.query(\'SELECT "id" FROM "{t}" WHERE lower("{k}") = lower(?)\', [{k}]):\n'
             f'        raise ToolError(f"{_article(ent.human)} {ent.human} with {ent.key.human} {{{k}!r}} '
             f'already exists")\n')
    body += "".join(_unique_check(ent, c, "") for c in ent.columns if c.unique)
    col_sql = ", ".join(_q(c) for c in cols)
    marks = ", ".join("?" for _ in cols)
    body += (f"    result = db.execute('INSERT INTO \"{t}\" ({col_sql}) VALUES ({marks})', "
             f"[{', '.join(vals)}])\n")
    shown = [*cols[:-1], vals[-1]] if ent.status else cols
    fields = ", ".join(f'"{c}": {v}' for c, v in zip(cols, shown, strict=True))
    body += f'    return {{"id": result["lastrowid"], {fields}}}\n'
    return body


def _code_update(op: Op) -> str:
    ent, c = op.entity, op.column or op.entity.key
    t = ent.table
    body = _validation(c)
    if c is ent.key:
        body += (f'    clash = db.query(\'SELECT "id" FROM "{t}" WHERE lower("{c.name}") = lower(?) AND "id" != ?\', '
                 f'[{c.name}, {ent.id_param}])\n'
                 f'    if clash:\n'
                 f'        raise ToolError(f"another {ent.human} already has {c.human} {{{c.name}!r}}")\n')
    if c.unique and c is not ent.key:
        body += _unique_check(ent, c, ent.id_param)
    body += (f"    done = db.execute('UPDATE \"{t}\" SET \"{c.name}\" = ? WHERE \"id\" = ?', "
             f"[{_stored(c)}, {ent.id_param}])\n")
    body += _missing(ent)
    return body + f'    return {{"id": {ent.id_param}, "{c.name}": {c.name}}}\n'


def _unique_check(ent: Entity, c: Column, exclude: str) -> str:
    """Refuse a value another row of a ``unique`` column already has (``exclude``: the row being updated)."""
    other = f' AND "id" != ?\', [{c.name}, {exclude}])' if exclude else f"', [{c.name}])"
    return (f'    if db.query(\'SELECT "id" FROM "{ent.table}" WHERE "{c.name}" = ?{other}:\n'
            f'        raise ToolError(f"another {ent.human} already has {c.human} {{{c.name}!r}}")\n')


def _room_check(ent: Entity) -> str:
    """Refuse a child row for a full parent row (``parent_row``: the parent row, loaded)."""
    parent = ent.parent
    if parent is None or not parent.limited:
        return ""
    pid = parent.id_param
    cap = (repr(parent.capacity) if parent.capacity is not None
           else f"parent_row['{parent.capacity_column.name}']" if parent.capacity_column is not None else "0")
    count = f"db.query('SELECT count(*) AS n FROM \"{ent.table}\" WHERE \"{pid}\" = ?', [{pid}])[0][\"n\"]"
    return (f"    held_count = {count}\n"
            f"    if held_count >= {cap}:\n"
            f'        raise ToolError(f"{parent.human} {{{pid}}} is full ({{held_count}} of {{{cap}}} {ent.humans}); '
            f'nothing was changed")\n')


def _code_transfer(op: Op) -> str:
    ent, c = op.entity, op.column
    t = ent.table
    if c is None:
        parent = ent.parent
        if parent is None:
            raise ValueError(f"transfer tool {op.tool!r} moves rows but {ent.name} has no parent")
        pid = parent.id_param
        return (f'    row = load_row(db, "{t}", "{ent.human}", {ent.id_param})\n'
                f'    parent_row = load_row(db, "{parent.table}", "{parent.human}", {pid})\n'
                f'    if row["{pid}"] == {pid}:\n'
                f'        raise ToolError(f"{ent.human} {{{ent.id_param}}} already belongs to {parent.human} '
                f'{{{pid}}}")\n'
                + _room_check(ent)
                + f"    db.execute('UPDATE \"{t}\" SET \"{pid}\" = ? WHERE \"id\" = ?', [{pid}, {ent.id_param}])\n"
                f'    return {{"id": {ent.id_param}, "{pid}": {pid}}}\n')
    src, dst = f"from_{ent.id_param}", f"to_{ent.id_param}"
    body = (f"    if {src} == {dst}:\n"
            f'        raise ToolError("pick two different {ent.humans}")\n'
            f"    if amount <= 0:\n"
            f'        raise ToolError("amount must be more than 0")\n'
            f'    source = load_row(db, "{t}", "{ent.human}", {src})\n'
            f'    target = load_row(db, "{t}", "{ent.human}", {dst})\n'
            f'    left = source["{c.name}"] - amount\n'
            f'    moved = target["{c.name}"] + amount\n')
    body += _bound_check(ent, c, "minimum", "left", "source", src)
    body += _bound_check(ent, c, "maximum", "moved", "target", dst)
    body += (f"    db.execute('UPDATE \"{t}\" SET \"{c.name}\" = ? WHERE \"id\" = ?', [left, {src}])\n"
             f"    db.execute('UPDATE \"{t}\" SET \"{c.name}\" = ? WHERE \"id\" = ?', [moved, {dst}])\n"
             f'    return {{"from": {{"id": {src}, "{c.name}": left}}, "to": {{"id": {dst}, "{c.name}": moved}}}}\n')
    return body


def _bound_check(ent: Entity, c: Column, bound: str, value: str, row: str, key: str) -> str:
    """The generated lines that refuse a new value of ``c`` past its ``minimum`` or ``maximum`` (none when
    it has no such bound): ``value`` holds the new value, ``row`` the record and ``key`` its id."""
    limit = getattr(c, bound)
    if limit is None:
        return ""
    op, word = ("<", "below") if bound == "minimum" else (">", "above")
    return (f"    if {value} {op} {limit!r}:\n"
            f'        raise ToolError(f"the {c.human} of {ent.human} {{{key}}} would go {word} {limit:g} '
            f'(it is {{{row}[\'{c.name}\']}}); nothing was changed")\n')


def _code_adjust(op: Op) -> str:
    ent, c = op.entity, op.column
    if c is None:
        raise ValueError(f"adjust tool {op.tool!r} has no column")
    t = ent.table
    body = (f'    row = load_row(db, "{t}", "{ent.human}", {ent.id_param})\n'
            f'    new = row["{c.name}"] + amount\n')
    body += _bound_check(ent, c, "minimum", "new", "row", ent.id_param)
    body += _bound_check(ent, c, "maximum", "new", "row", ent.id_param)
    body += (f"    db.execute('UPDATE \"{t}\" SET \"{c.name}\" = ? WHERE \"id\" = ?', [new, {ent.id_param}])\n"
             f'    return {{"id": {ent.id_param}, "{c.name}": new}}\n')
    return body


def _missing(ent: Entity) -> str:
    return (f'    if done["rowcount"] == 0:\n'
            f'        raise ToolError(f"no {ent.human} with id {{{ent.id_param}}}")\n')


def _code_delete(op: Op, model: EnvModel) -> str:
    ent = op.entity
    t = ent.table
    body = ""
    for child in model.entities:
        if child.parent is ent:
            body += f"    db.execute('DELETE FROM \"{child.table}\" WHERE \"{ent.id_param}\" = ?', [{ent.id_param}])\n"
    body += f"    done = db.execute('DELETE FROM \"{t}\" WHERE \"id\" = ?', [{ent.id_param}])\n"
    body += _missing(ent)
    return body + f'    return {{"deleted": {ent.id_param}}}\n'


def _code_status(op: Op) -> str:
    ent = op.entity
    t = ent.table
    target = op.target or ""
    final = [s for s in ent.final if s != target]
    if final:
        return (f'    row = load_row(db, "{t}", "{ent.human}", {ent.id_param})\n'
                f'    if row["status"] in {final!r}:\n'
                f'        raise ToolError(f"{ent.human} {{{ent.id_param}}} is {{row[\'status\']}}, a final state: '
                f'its status no longer changes; nothing was changed")\n'
                f'    if row["status"] == "{target}":\n'
                f'        raise ToolError(f"{ent.human} {{{ent.id_param}}} is already {human(target)}")\n'
                f"    db.execute('UPDATE \"{t}\" SET \"status\" = ? WHERE \"id\" = ?', "
                f"[\"{target}\", {ent.id_param}])\n"
                f'    return {{"id": {ent.id_param}, "status": "{target}"}}\n')
    return (f"    done = db.execute('UPDATE \"{t}\" SET \"status\" = ? WHERE \"id\" = ? AND \"status\" != ?', "
            f'["{target}", {ent.id_param}, "{target}"])\n'
            f'    if done["rowcount"] == 0:\n'
            f'        load_row(db, "{t}", "{ent.human}", {ent.id_param})\n'
            f'        raise ToolError(f"{ent.human} {{{ent.id_param}}} is already {human(target)}")\n'
            f'    return {{"id": {ent.id_param}, "status": "{target}"}}\n')


def _code_list(op: Op) -> str:
    ent = op.entity
    t = ent.table
    filt = list_filter(op)
    if filt is None:
        return (f"    found = db.query('SELECT * FROM \"{t}\" ORDER BY \"id\" LIMIT 200')\n"
                f"    return {_records(ent)}\n")
    name = filt[0]
    body = ""
    if ent.parent is not None:
        body += f'    load_row(db, "{ent.parent.table}", "{ent.parent.human}", {name})\n'
    body += (f"    if {name} is None:\n"
             f"        found = db.query('SELECT * FROM \"{t}\" ORDER BY \"id\" LIMIT 200')\n"
             f"    else:\n"
             f"        found = db.query('SELECT * FROM \"{t}\" WHERE \"{name}\" = ? ORDER BY \"id\" LIMIT 200', "
             f"[{name}])\n"
             f"    return {_records(ent)}\n")
    return body


def _code(op: Op, model: EnvModel) -> str:
    ent = op.entity
    t = ent.table
    if op.kind == "create":
        return _code_create(op)
    if op.kind == "get":
        return f'    return {_record(ent, f"load_row(db, {t!r}, {ent.human!r}, {ent.id_param})")}\n'
    if op.kind == "find":
        return (f'    need_text("{ent.key.name}", {ent.key.name})\n'
                f'    return {_record(ent, f"by_key(db, {t!r}, {ent.key.name!r}, {ent.human!r}, {ent.key.name})")}\n')
    if op.kind == "list":
        return _code_list(op)
    if op.kind == "update":
        return _code_update(op)
    if op.kind == "delete":
        return _code_delete(op, model)
    if op.kind == "adjust":
        return _code_adjust(op)
    if op.kind == "transfer":
        return _code_transfer(op)
    return _code_status(op)


def render_code(model: EnvModel, tools: list[dict[str, Any]]) -> str:
    """The restricted Python module defining every tool (and only the helpers they use)."""
    bodies = []
    for op, tool in zip(model.ops, tools, strict=True):
        comment = f'    # {tool["description"].split(". Modelled")[0].rstrip(".")}.\n'
        bodies.append("\n\n" + _signature(op, tool) + comment + _code(op, model))
    text = "".join(bodies)
    parts = [f'"""Tools of {model.title}, generated from {model.path} by the template proposer."""\n']
    booleans = tuple((e.table, tuple(c.name for c in e.columns if c.sqltype == "BOOLEAN")) for e in model.entities)
    booleans = tuple((t, names) for t, names in booleans if names)
    if "as_record(" in text:  # a tuple, not a dict: the module keeps no state a call could change
        parts.append(f"\nBOOLEAN_COLUMNS = {booleans!r}\n")
    parts += ["\n" + code for name, code in _HELPERS.items() if f"{name}(" in text]
    return "".join(parts) + text


# -- state -----------------------------------------------------------------------------------------


def _ddl(ent: Entity) -> str:
    lines = ['    "id" INTEGER PRIMARY KEY']
    if ent.parent is not None:
        lines.append(f'    "{ent.parent.id_param}" INTEGER NOT NULL REFERENCES "{ent.parent.table}"("id")')
    lines.append(f'    "{ent.key.name}" TEXT NOT NULL UNIQUE')
    for c in ent.columns:
        null = " NOT NULL" if c.sqltype != "BOOLEAN" else " NOT NULL DEFAULT 0"
        checks = [f'"{c.name}" >= {c.minimum!r}'] if c.minimum is not None else []
        checks += [f'"{c.name}" <= {c.maximum!r}'] if c.maximum is not None else []
        rule = (" UNIQUE" if c.unique else "") + (f" CHECK ({' AND '.join(checks)})" if checks else "")
        lines.append(f'    "{c.name}" {c.storage}{null}{rule}')
    if ent.status:
        lines.append(f'    "status" TEXT NOT NULL DEFAULT {sql_literal(ent.status[0])}')
    return f'CREATE TABLE "{ent.table}" (\n' + ",\n".join(lines) + "\n);"


def render_state(model: EnvModel) -> tuple[str, str]:
    """``(schema_sql, seed_sql)`` for the model's entities and rows."""
    schema = "\n\n".join(_ddl(e) for e in model.entities)
    inserts = []
    for e in model.entities:
        cols = ["id", *e.stored_columns()]
        col_sql = ", ".join(_q(c) for c in cols)
        for row in e.rows:
            vals = ", ".join(sql_literal(row[c]) for c in cols)
            inserts.append(f'INSERT INTO "{e.table}" ({col_sql}) VALUES ({vals});')
    return schema, "\n".join(inserts)

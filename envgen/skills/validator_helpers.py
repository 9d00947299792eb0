"""Helpers every skill validator can use: prepended to a validator's code before it runs.

Restricted Python (it runs in the sandbox with the validator; see gym_envs.sandbox). ``spec`` is an
environment spec as a plain JSON dict. Defined here: ``split_top``, ``tables`` (table -> columns and
constraints from ``state.schema_sql``), ``is_numeric``, ``functions`` (top-level function sources of
``code``), ``write_tools``, ``tasks_of_kind``, ``all_turns``, ``every_turn``, ``check_text``, ``checks_of``, ``called``.
"""

import re


def split_top(text, sep):
    """Split text at `sep` characters outside quotes and parentheses."""
    parts = []
    depth = 0
    quote = ""
    cur = ""
    for ch in text:
        if quote:
            cur += ch
            if ch == quote:
                quote = ""
            continue
        if ch == "'" or ch == '"':
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


TABLE_RE = r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?[\"`\[]?(\w+)[\"`\]]?\s*\((.*?)\)\s*(?:;|$)"


CONSTRAINT_WORDS = ("PRIMARY", "CHECK", "UNIQUE", "FOREIGN", "CONSTRAINT")


def tables(spec):
    """Table name -> {"columns": {column: declaration}, "constraints": [text]}, from state.schema_sql."""
    out = {}
    schema = (spec.get("state") or {}).get("schema_sql") or ""
    for m in re.finditer(TABLE_RE, schema, re.I | re.S):
        columns = {}
        constraints = []
        for part in split_top(m.group(2), ","):
            words = part.split(None, 1)
            if not words:
                continue
            if words[0].upper() in CONSTRAINT_WORDS:
                constraints.append(part)
            else:
                columns[words[0].strip('"`[]').lower()] = words[1] if len(words) > 1 else ""
        out[m.group(1).lower()] = {"columns": columns, "constraints": constraints}
    return out


def is_numeric(declaration):
    return re.match(r"\s*(INT|INTEGER|BIGINT|REAL|NUMERIC|DECIMAL|FLOAT|DOUBLE)\b", declaration, re.I) is not None


def functions(code):
    """Top-level function name -> its source text."""
    out = {}
    name = None
    lines = []
    for line in code.split("\n"):
        m = re.match(r"def\s+([A-Za-z]\w*)\s*\(", line)
        if m:
            if name:
                out[name] = "\n".join(lines)
            name = m.group(1)
            lines = [line]
        elif name and (line.startswith((" ", "\t")) or not line.strip()):
            lines.append(line)
        elif name:
            out[name] = "\n".join(lines)
            name = None
            lines = []
    if name:
        out[name] = "\n".join(lines)
    return out


def write_tools(spec):
    """Tools whose function, or a helper it calls, runs db.execute (they change state)."""
    funcs = functions(spec.get("code") or "")
    writes = set([n for n, body in funcs.items() if "db.execute(" in body])
    changed = True
    while changed:
        changed = False
        for n, body in funcs.items():
            if n not in writes and any(re.search(r"\b" + w + r"\s*\(", body) for w in writes):
                writes.add(n)
                changed = True
    return set([t["name"] for t in spec.get("tools", []) if t.get("name") in writes])


def tasks_of_kind(spec, kind):
    """The tasks of one kind ('execute', 'read', 'read_then_write', 'missing_parameter', 'decline')."""
    return [t for t in spec.get("tasks", []) if t.get("kind") == kind]


def all_turns(spec):
    """(task, turn index, turn) for every turn of every task."""
    out = []
    for task in spec.get("tasks", []):
        for i, turn in enumerate(task.get("turns", [])):
            out.append((task, i, turn))
    return out


def every_turn(spec):
    """Every turn of every task."""
    return [turn for task in spec.get("tasks", []) for turn in task.get("turns", [])]


def check_text(check):
    """The SQL or Python text of a check ('' for other kinds)."""
    return check.get("query") or check.get("code") or ""


def checks_of(turn, kinds):
    return [c for c in turn.get("checks", []) if c.get("kind") in kinds]


def called(turn):
    return [c.get("name") for c in turn.get("reference", [])]

"""Validator of the search-then-act skill.

Search then act: several tables, read tools that must be used to find the ids a write needs.

Runs sandboxed (restricted Python, see gym_envs.executor); `spec` is the environment
spec as a plain JSON dict. Returns a list of problems, each saying what to fix; an empty
list means the spec has the structure this skill is about.
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


def hidden_ids(turn, call):
    """Integer arguments of a call that the instruction does not spell out."""
    text = turn.get("instruction") or ""
    out = []
    for k, v in (call.get("arguments") or {}).items():
        if isinstance(v, bool) or not isinstance(v, int):
            continue
        if not re.search(r"(?<![0-9])" + str(v) + r"(?![0-9])", text):
            out.append(k)
    return out


def validate(spec):
    problems = []
    n_tables = len(tables(spec))
    if n_tables < 3:
        problems.append("only %d tables; a search-then-act world needs at least 3 related tables" % n_tables)
    writes = write_tools(spec)
    reads = [t["name"] for t in spec.get("tools", []) if t["name"] not in writes]
    if len(reads) < 2:
        problems.append("only %d read tools; give at least 2 ways to search or look things up" % len(reads))
    if not writes:
        problems.append("no state-changing tool to act with")
    found = False
    for turn in every_turn(spec):
        seen_read = False
        for c in turn.get("reference", []):
            if c.get("name") in writes:
                if seen_read and hidden_ids(turn, c):
                    found = True
            else:
                seen_read = True
    if not found:
        problems.append("no turn searches first and then acts on an id the instruction does not give: write a "
                        "read_then_write task that names things, not ids")
    if not [t for t in spec.get("tasks", []) if t.get("kind") == "read_then_write"]:
        problems.append("no read_then_write task")
    return problems

"""Validator of the records-crud skill.

Records CRUD: create, read, update and delete tools over keyed tables, each exercised by a task.

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

VERBS = {
    "create": ("create", "add", "register", "new", "insert", "open"),
    "update": ("update", "edit", "set", "change", "rename", "modify"),
    "delete": ("delete", "remove", "archive", "purge", "drop"),
}


def verb_of(name):
    first = name.lower().split("_")[0]
    for verb, words in VERBS.items():
        if first in words:
            return verb
    return None


def validate(spec):
    problems = []
    writes = write_tools(spec)
    names = [t["name"] for t in spec.get("tools", [])]
    by_verb = {}
    for n in names:
        v = verb_of(n)
        if v and n in writes:
            by_verb.setdefault(v, []).append(n)
    for verb in ("create", "update", "delete"):
        if verb not in by_verb:
            problems.append("no %s tool: add a state-changing tool named %s_<record> (e.g. %s_contact)" % (
                verb, VERBS[verb][0], VERBS[verb][0]))
    if not [n for n in names if n not in writes]:
        problems.append("no read tool: add a get_/find_/list_ tool that looks records up without changing them")
    for name, t in tables(spec).items():
        keyed = any("PRIMARY KEY" in d.upper() for d in t["columns"].values()) or any(
            c.upper().startswith("PRIMARY") for c in t["constraints"])
        if not keyed:
            problems.append("table %s has no PRIMARY KEY; records need a stable id" % name)
    used = set()
    for task, i, turn in all_turns(spec):
        for n in called(turn):
            v = verb_of(n or "")
            if v and n in writes:
                used.add(v)
                if v == "create" and not checks_of(turn, ("sql", "python")):
                    problems.append("task %s turn %d creates a record but no sql/python check pins the new row" % (
                        task.get("id"), i))
    for verb in ("create", "update", "delete"):
        if verb in by_verb and verb not in used:
            problems.append("no task's reference calls a %s tool (%s); add a task that exercises it" % (
                verb, ", ".join(by_verb[verb])))
    if not [t for t in spec.get("tasks", []) if t.get("kind") == "read"]:
        problems.append("add a read task whose answer comes from looking records up")
    return problems

"""Validator of the scheduling-conflicts skill.

Scheduling: intervals with start and end, a booking tool that refuses overlaps, an overlap check.

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

START = r"(^|_)(start|starts|begin|begins)(_|$)|^(valid_)?from(_|$)|^check_in$"
END = r"(^|_)(end|ends|finish|until)(_|$)|^(valid_)?to(_|$)|^check_out$"
CONFLICT = r"conflict|overlap|clash|taken|already booked|not free|double[- ]book"


def validate(spec):
    problems = []
    pairs = []
    for t in tables(spec).values():
        cols = list(t["columns"])
        starts = [c for c in cols if re.search(START, c)]
        ends = [c for c in cols if re.search(END, c) and not re.search(START, c)]
        if starts and ends:
            pairs.append((starts[0], ends[0]))
    if not pairs:
        problems.append("no table has both a start and an end column (e.g. start_time, end_time)")
    writes = write_tools(spec)
    bookers = [n for n in writes if re.search(r"book|schedule|reserve|create|add|move|reschedule", n)]
    if not bookers:
        problems.append("no booking tool: add a state-changing tool named like book_/schedule_/reserve_")
    raises = re.findall(r"ToolError\(([^\n]*)", spec.get("code") or "")
    if not [r for r in raises if re.search(CONFLICT, r, re.I)]:
        problems.append("the code never raises ToolError for a conflict; refuse overlapping bookings with a "
                        "message that names the clash")
    overlap_check = False
    exercised = False
    for turn in every_turn(spec):
        if [n for n in called(turn) if n in bookers]:
            exercised = True
        for c in checks_of(turn, ("sql", "python")):
            text = check_text(c).lower()
            for start, end in pairs:
                if start in text and end in text and "<" in text:
                    overlap_check = True
    if bookers and not exercised:
        problems.append("no task's reference books anything (%s)" % ", ".join(sorted(bookers)))
    if pairs and not overlap_check:
        problems.append("no sql or python check compares start and end times; add one that asserts no two "
                        "bookings of one resource overlap")
    return problems

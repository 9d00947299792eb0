"""Validator of the multi-turn-context skill.

Multi-turn context: later turns refer back to what earlier turns established.

Runs sandboxed (restricted Python, see gym_envs.executor); `spec` is the environment
spec as a plain JSON dict. Returns a list of problems, each saying what to fix; an empty
list means the spec has the structure this skill is about.
"""



import re


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


def from_context(turn):
    """The first reference call's argument values that the turn's own instruction does not give."""
    ref = turn.get("reference", [])
    if not ref:
        return []
    text = (turn.get("instruction") or "").lower()
    out = []
    for k, v in (ref[0].get("arguments") or {}).items():
        if isinstance(v, bool):
            continue
        if isinstance(v, (int, str)) and str(v).lower() not in text:
            out.append(k)
    return out


def validate(spec):
    problems = []
    writes = write_tools(spec)
    multi = [t for t in spec.get("tasks", []) if len(t.get("turns", [])) >= 2]
    if len(multi) < 2:
        problems.append("%d multi-turn tasks; add at least 2 tasks of 2+ turns" % len(multi))
    carried = 0
    mixed = False
    for task in multi:
        kinds = set()
        for i, turn in enumerate(task.get("turns", [])):
            kinds.add("write" if [n for n in called(turn) if n in writes] else "read")
            if i > 0 and from_context(turn):
                carried += 1
        if len(kinds) == 2:
            mixed = True
    if carried == 0:
        problems.append("no later turn needs something only an earlier turn established: make a follow-up refer "
                        "back ('it', 'that booking') so its first call uses an id the instruction does not repeat")
    if multi and not mixed:
        problems.append("no multi-turn task mixes a state change with a follow-up question")
    return problems

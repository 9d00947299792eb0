"""Validator of the missing-parameter skill.

Missing parameters: ask first (write tool forbidden, nothing changed), act after the answer.

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


def validate(spec):
    problems = []
    tasks = [t for t in spec.get("tasks", []) if t.get("kind") == "missing_parameter"]
    if not tasks:
        return ["no missing_parameter task: add one whose first instruction leaves out a value the write tool needs"]
    writes = write_tools(spec)
    complete = 0
    for task in tasks:
        tid = task.get("id")
        turns = task.get("turns", [])
        if len(turns) < 2:
            problems.append("task %s: a missing_parameter task needs a second turn that supplies the value" % tid)
            continue
        first = turns[0]
        forbidden = []
        for c in checks_of(first, ("calls",)):
            forbidden += c.get("forbid") or []
        if not [n for n in forbidden if n in writes]:
            problems.append("task %s turn 0: add a calls check that forbids the write tool until the user answers"
                            % tid)
        if not checks_of(first, ("unchanged",)):
            problems.append("task %s turn 0: add an unchanged check (asking must not change state)" % tid)
        early = [n for n in called(first) if n in writes]
        if early:
            problems.append("task %s turn 0: the reference already calls %s; it should only ask" % (tid, early[0]))
        later = False
        for turn in turns[1:]:
            if [n for n in called(turn) if n in forbidden] and checks_of(turn, ("sql", "python")):
                later = True
        if later and forbidden and not early:
            complete += 1
        elif forbidden:
            problems.append("task %s: no later turn calls the forbidden tool with an sql/python check on its "
                            "effect" % tid)
    if complete == 0 and not problems:
        problems.append("no missing_parameter task is complete (ask first, act after the answer)")
    return problems

"""Validator of the decline-unsupported skill.

Declining: several decline tasks whose turns change nothing and say so.

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
    tasks = [t for t in spec.get("tasks", []) if t.get("kind") == "decline"]
    if len(tasks) < 2:
        problems.append("%d decline tasks; add at least 2 requests the tools cannot serve" % len(tasks))
    writes = write_tools(spec)
    forbids = 0
    for task in tasks:
        for i, turn in enumerate(task.get("turns", [])):
            where = "task %s turn %d" % (task.get("id"), i)
            if not checks_of(turn, ("unchanged",)):
                problems.append(where + ": add an unchanged check (declining changes nothing)")
            if not checks_of(turn, ("reply_contains",)):
                problems.append(where + ": add a reply_contains check for the refusal (cannot, unable, sorry...)")
            bad = [n for n in called(turn) if n in writes]
            if bad:
                problems.append(where + ": the reference calls the write tool %s; a decline may only look things up"
                                % bad[0])
            for c in checks_of(turn, ("calls",)):
                if [n for n in c.get("forbid") or [] if n in writes]:
                    forbids += 1
    if tasks and forbids == 0:
        problems.append("no decline turn has a calls check that forbids the write tools")
    if not [t for t in spec.get("tasks", []) if t.get("kind") != "decline"]:
        problems.append("every task is a decline; add tasks the tools can serve so declining is a choice")
    return problems

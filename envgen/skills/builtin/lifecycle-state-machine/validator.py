"""Validator of the lifecycle-state-machine skill.

Lifecycles: a status column with a closed set of states, guarded transitions, multi-step tasks.

Runs sandboxed (restricted Python, see gym_envs.sandbox); `spec` is the environment
spec as a plain JSON dict. Returns a list of problems, each saying what to fix; an empty
list means the spec has the structure this skill is about. The helpers of
envgen/skills/validator_helpers.py (tables, functions, write_tools, checks_of, called, ...) are
prepended before it runs.
"""


import re

STATUS = r"^(status|state|stage|phase|lifecycle)$|_status$|_state$"


def validate(spec):
    problems = []
    machines = []
    for name, t in tables(spec).items():
        for col, decl in t["columns"].items():
            if re.search(STATUS, col):
                m = re.search(r"CHECK\s*\(\s*" + col + r"\s+IN\s*\(([^)]*)\)", decl, re.I)
                states = re.findall(r"'([^']*)'", m.group(1)) if m else []
                if len(states) >= 3:
                    machines.append((name, col, states))
    if not machines:
        problems.append("no status column with a closed set of at least 3 states, e.g. status TEXT NOT NULL "
                        "CHECK (status IN ('draft', 'submitted', 'approved'))")
        return problems
    code = spec.get("code") or ""
    raises = re.findall(r"ToolError\(([^\n]*)", code)
    if not [r for r in raises if re.search(r"status|state|cannot go|can only|already|is %s|final", r, re.I)]:
        problems.append("no ToolError refuses an illegal transition; guard transitions and say which are allowed")
    writes = write_tools(spec)
    longest = 0
    status_checked = False
    cols = [c for t, c, s in machines]
    for task in spec.get("tasks", []):
        steps = 0
        for turn in task.get("turns", []):
            steps += len([n for n in called(turn) if n in writes])
            for c in checks_of(turn, ("sql", "python")):
                if any(col in check_text(c).lower() for col in cols):
                    status_checked = True
        longest = max(longest, steps)
    if longest < 2:
        problems.append("no task moves an entity through two or more transitions; add a multi-step task")
    if not status_checked:
        problems.append("no sql or python check reads the status column (%s)" % ", ".join(cols))
    return problems

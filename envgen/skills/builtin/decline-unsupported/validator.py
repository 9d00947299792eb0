"""Validator of the decline-unsupported skill.

Declining: several decline tasks whose turns change nothing and say so.

Runs sandboxed (restricted Python, see gym_envs.sandbox); `spec` is the environment
spec as a plain JSON dict. Returns a list of problems, each saying what to fix; an empty
list means the spec has the structure this skill is about. The helpers of
envgen/skills/validator_helpers.py (tables, functions, write_tools, checks_of, called, ...) are
prepended before it runs.
"""


def validate(spec):
    problems = []
    tasks = tasks_of_kind(spec, "decline")
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

"""Validator of the missing-parameter skill.

Missing parameters: ask first (write tool forbidden, nothing changed), act after the answer.

Runs sandboxed (restricted Python, see gym_envs.sandbox); `spec` is the environment
spec as a plain JSON dict. Returns a list of problems, each saying what to fix; an empty
list means the spec has the structure this skill is about. The helpers of
envgen/skills/validator_helpers.py (tables, functions, write_tools, checks_of, called, ...) are
prepended before it runs.
"""


def validate(spec):
    problems = []
    tasks = tasks_of_kind(spec, "missing_parameter")
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

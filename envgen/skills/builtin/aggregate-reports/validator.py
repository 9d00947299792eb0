"""Validator of the aggregate-reports skill.

Aggregate reports: tools return raw rows, tasks ask for computed totals, counts and comparisons.

Runs sandboxed (restricted Python, see gym_envs.sandbox); `spec` is the environment
spec as a plain JSON dict. Returns a list of problems, each saying what to fix; an empty
list means the spec has the structure this skill is about. The helpers of
envgen/skills/validator_helpers.py (tables, functions, write_tools, checks_of, called, ...) are
prepended before it runs.
"""


import re

AGGREGATE_NAME = r"total|sum|average|avg|aggregate|stats|summary|count"


def numeric_answers(turn):
    """reply_contains checks whose strings carry a number."""
    out = []
    for c in checks_of(turn, ("reply_contains",)):
        if [s for s in c.get("any_of") or [] if re.search(r"[0-9]", s)]:
            out.append(c)
    return out


def validate(spec):
    problems = []
    writes = write_tools(spec)
    names = [t["name"] for t in spec.get("tools", [])]
    canned = [n for n in names if n not in writes and re.search(AGGREGATE_NAME, n)]
    if canned:
        problems.append("read tools %s hand out aggregates; return raw rows so the agent has to compute" % canned)
    seed = (spec.get("state") or {}).get("seed_sql") or ""
    reads = tasks_of_kind(spec, "read")
    if len(reads) < 3:
        problems.append("%d read tasks; add at least 3 questions whose answers are computed" % len(reads))
    computed = 0
    combined = False
    for task in reads:
        for i, turn in enumerate(task.get("turns", [])):
            if not checks_of(turn, ("unchanged",)):
                problems.append("task %s turn %d: add an unchanged check (a report changes nothing)" % (
                    task.get("id"), i))
            if len(turn.get("reference", [])) >= 2:
                combined = True
            for c in numeric_answers(turn):
                literal = [s for s in c.get("any_of") if re.search(r"[0-9]", s) and s in seed]
                if not literal:
                    computed += 1
    if computed < 2:
        problems.append("%d numeric answers are computed; at least 2 read answers must be numbers that do not "
                        "appear literally in seed_sql (sums, counts, differences)" % computed)
    if not combined:
        problems.append("no read turn combines 2+ tool calls; ask a question that needs several lookups")
    return problems

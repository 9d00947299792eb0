"""Validator of the search-then-act skill.

Search then act: several tables, read tools that must be used to find the ids a write needs.

Runs sandboxed (restricted Python, see gym_envs.sandbox); `spec` is the environment
spec as a plain JSON dict. Returns a list of problems, each saying what to fix; an empty
list means the spec has the structure this skill is about. The helpers of
envgen/skills/validator_helpers.py (tables, functions, write_tools, checks_of, called, ...) are
prepended before it runs.
"""


import re


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
    if not tasks_of_kind(spec, "read_then_write"):
        problems.append("no read_then_write task")
    return problems

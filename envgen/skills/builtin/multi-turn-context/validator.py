"""Validator of the multi-turn-context skill.

Multi-turn context: later turns refer back to what earlier turns established.

Runs sandboxed (restricted Python, see gym_envs.sandbox); `spec` is the environment
spec as a plain JSON dict. Returns a list of problems, each saying what to fix; an empty
list means the spec has the structure this skill is about. The helpers of
envgen/skills/validator_helpers.py (tables, functions, write_tools, checks_of, called, ...) are
prepended before it runs.
"""


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

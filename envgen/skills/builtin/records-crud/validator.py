"""Validator of the records-crud skill.

Records CRUD: create, read, update and delete tools over keyed tables, each exercised by a task.

Runs sandboxed (restricted Python, see gym_envs.sandbox); `spec` is the environment
spec as a plain JSON dict. Returns a list of problems, each saying what to fix; an empty
list means the spec has the structure this skill is about. The helpers of
envgen/skills/validator_helpers.py (tables, functions, write_tools, checks_of, called, ...) are
prepended before it runs.
"""


VERBS = {
    "create": ("create", "add", "register", "new", "insert", "open"),
    "update": ("update", "edit", "set", "change", "rename", "modify"),
    "delete": ("delete", "remove", "archive", "purge", "drop"),
}


def verb_of(name):
    first = name.lower().split("_")[0]
    for verb, words in VERBS.items():
        if first in words:
            return verb
    return None


def validate(spec):
    problems = []
    writes = write_tools(spec)
    names = [t["name"] for t in spec.get("tools", [])]
    by_verb = {}
    for n in names:
        v = verb_of(n)
        if v and n in writes:
            by_verb.setdefault(v, []).append(n)
    for verb in ("create", "update", "delete"):
        if verb not in by_verb:
            problems.append("no %s tool: add a state-changing tool named %s_<record> (e.g. %s_contact)" % (
                verb, VERBS[verb][0], VERBS[verb][0]))
    if not [n for n in names if n not in writes]:
        problems.append("no read tool: add a get_/find_/list_ tool that looks records up without changing them")
    for name, t in tables(spec).items():
        keyed = any("PRIMARY KEY" in d.upper() for d in t["columns"].values()) or any(
            c.upper().startswith("PRIMARY") for c in t["constraints"])
        if not keyed:
            problems.append("table %s has no PRIMARY KEY; records need a stable id" % name)
    used = set()
    for task, i, turn in all_turns(spec):
        for n in called(turn):
            v = verb_of(n or "")
            if v and n in writes:
                used.add(v)
                if v == "create" and not checks_of(turn, ("sql", "python")):
                    problems.append("task %s turn %d creates a record but no sql/python check pins the new row" % (
                        task.get("id"), i))
    for verb in ("create", "update", "delete"):
        if verb in by_verb and verb not in used:
            problems.append("no task's reference calls a %s tool (%s); add a task that exercises it" % (
                verb, ", ".join(by_verb[verb])))
    if not tasks_of_kind(spec, "read"):
        problems.append("add a read task whose answer comes from looking records up")
    return problems

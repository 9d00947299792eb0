"""Validator of the roles-permissions skill.

Permissions: grant tables, an acting-user argument, refusals that name the missing right.

Runs sandboxed (restricted Python, see gym_envs.sandbox); `spec` is the environment
spec as a plain JSON dict. Returns a list of problems, each saying what to fix; an empty
list means the spec has the structure this skill is about. The helpers of
envgen/skills/validator_helpers.py (tables, functions, write_tools, checks_of, called, ...) are
prepended before it runs.
"""


import re

GRANT = r"role|permission|grant|access|acl|privilege"
ACTOR = ("actor", "acting_user", "as_user", "requester", "caller", "by_user", "operator", "acting_as")
DENIED = r"permission|not allowed|denied|forbidden|unauthori[sz]ed|only an? |only the|lacks|may not|not permitted"


def validate(spec):
    problems = []
    grant_tables = [n for n, t in tables(spec).items()
                    if re.search(GRANT, n) or [c for c in t["columns"] if re.search(GRANT, c)]]
    if not grant_tables:
        problems.append("no table holds roles, permissions or grants (e.g. user_roles, access_grants)")
    writes = write_tools(spec)
    acted = []
    for t in spec.get("tools", []):
        props = (t.get("parameters") or {}).get("properties") or {}
        if t["name"] in writes and [p for p in props if p in ACTOR]:
            acted.append(t["name"])
    if not acted:
        problems.append("no state-changing tool takes the acting user (a parameter named actor) whose rights "
                        "are checked")
    raises = re.findall(r"ToolError\(([^\n]*)", spec.get("code") or "")
    if not [r for r in raises if re.search(DENIED, r, re.I)]:
        problems.append("the code never refuses for lack of rights; raise ToolError('permission denied: ...')")
    checked = False
    for turn in every_turn(spec):
        for c in checks_of(turn, ("sql", "python")):
            if any(g in check_text(c).lower() for g in grant_tables):
                checked = True
    if grant_tables and not checked:
        problems.append("no sql or python check reads the grant tables (%s)" % ", ".join(grant_tables))
    return problems

"""A skill's structural requirements (its ``blueprint`` section) as a validator that any spec can be judged by.

A skill states what it requires of a blueprint (:attr:`envgen.skills.skill.Skill.blueprint`):
operation kinds, rule kinds, a lifecycle, least task counts. :func:`requirements_validator`
turns that section into the source of an ordinary skill validator (restricted Python,
``def validate(spec) -> list[str]``, run in the sandbox by
:func:`~envgen.skills.skill.run_validator` with the shared helpers prepended), so the
requirements are checked on the *spec*, whoever wrote it (the compiler, a model writing
a whole spec, a person):

* ``tasks``: at least that many tasks of each kind;
* ``states``: a table has a status-like column (``status``, ``state``, ``*_status``...);
* ``operations``: a tool's code does it: ``create`` inserts, ``delete`` deletes,
  ``update`` updates, ``status`` sets a status-like column, ``adjust`` changes a number
  relative to itself (``SET x = x + ?``, ``row["x"] + amount``, or ``new = rec["x"] + amount`` stored
  back in ``x``), ``transfer`` takes an
  amount from one row's column and adds it to another's in two updates, or moves a row to
  another parent (sets an ``*_id`` column), ``get``/``find``/``list`` is a tool that only reads;
* ``rules``: the DDL has it: ``unique`` a ``UNIQUE``, ``required`` a ``NOT NULL`` beyond
  the primary key, ``non_negative`` a ``CHECK (x >= 0)``, ``range`` a bounded ``CHECK``,
  ``enum`` a ``CHECK (x IN (...))`` (or a tool parameter with an ``enum``: the values are
  checked where they come in), ``states`` a status-like column; or a tool's code
  enforces it: ``capacity`` counts rows and refuses past a limit, ``final`` refuses a record
  whose status is in a set of final states, ``non_negative`` refuses a value below 0 and
  ``range`` a value below one bound and above another (a world's ``adjust`` tool checks its
  field's ``min`` and ``max`` in code, not in the DDL).

:func:`structure_of` reports what a spec has in the same terms, by the same code: a skill
written from an example environment is decoded asking for no more than that.

Model-written skills (:mod:`envgen.skills.authoring`) carry this validator as their
``validator.py``; in the blueprint stream it also judges skill-routed proposals in place
of a hand-written validator meant for whole specs (:class:`envgen.skills.round.RoundConfig`
``skill_validators``).
"""

from __future__ import annotations

from typing import Any

from envgen.skills.skill import Skill, check_blueprint_requirements, run_validator
from gym_envs.spec import EnvSpec

__all__ = ["requirement_problems", "requirements_validator", "structure_of"]

_CHECK = r'''

import re

STATUS_COLUMN = r"^(status|state|stage|phase|lifecycle)$|_status$|_state$"


def status_columns(spec):
    return [c for t in tables(spec).values() for c in t["columns"] if re.search(STATUS_COLUMN, c)]


def tool_bodies(spec):
    """(tool name, its source plus the sources of the helpers it calls, transitively)."""
    funcs = functions(spec.get("code") or "")
    out = []
    for t in spec.get("tools", []):
        seen = [t.get("name")]
        i = 0
        while i < len(seen):
            body = funcs.get(seen[i], "")
            for other in funcs:
                if other not in seen and re.search(r"\b" + other + r"\s*\(", body):
                    seen.append(other)
            i += 1
        out.append((t.get("name"), "\n".join([funcs.get(n, "") for n in seen])))
    return out


def does(kind, spec):
    """Whether a tool of the spec does an operation of this kind (module docstring)."""
    bodies = tool_bodies(spec)
    if kind in ("get", "find", "list"):
        writes = write_tools(spec)
        return any(name not in writes and "db.query(" in body for name, body in bodies)
    for _, body in bodies:
        if kind == "create" and re.search(r"INSERT\s+INTO", body, re.I):
            return True
        if kind == "delete" and re.search(r"DELETE\s+FROM", body, re.I):
            return True
        if kind == "update" and re.search(r"UPDATE\s", body, re.I):
            return True
        if kind == "status" and re.search(r"UPDATE\s[^\n]*SET\s+[\"`]?(\w*status|\w*state)[\"`]?\s*=", body, re.I):
            return True
        if kind == "adjust" and (re.search(r"SET\s+[\"`]?(\w+)[\"`]?\s*=\s*[\"`]?\1[\"`]?\s*[-+]", body, re.I)
                                 or re.search(r"row\[[\"'](\w+)[\"']\]\s*[-+]\s*\w+", body)
                                 or stores_sum(body)):
            return True
        if kind == "transfer" and moves(body):
            return True
    return False


def stores_sum(body):
    """Whether a tool body computes a column plus or minus an amount into a name and stores it back in that
    column (``new = rec["points"] + amount`` ... ``SET "points" = ?``)."""
    for m in re.finditer(r"\b(\w+)\s*=\s*\w+\[[\"'](\w+)[\"']\]\s*[-+]\s*\w+", body):
        if re.search(r"SET\s+[\"`]?" + m.group(2) + r"[\"`]?\s*=\s*\?", body, re.I):
            return True
    return False


def refuses_below(body, zero):
    """Whether a tool body refuses (raises) when a value is below a bound (``zero``: the bound 0 only)."""
    bound = r"0(\.0*)?" if zero else r"-?\d+(\.\d*)?"
    return re.search(r"if\s+[^\n:]*<\s*" + bound + r"\s*:\s*\n\s*raise\b", body) is not None


def refuses_above(body):
    """Whether a tool body refuses (raises) when a value is above a constant bound."""
    return re.search(r"if\s+[^\n:]*>\s*-?\d+(\.\d*)?\s*:\s*\n\s*raise\b", body) is not None


def moves(body):
    """Whether a tool body transfers: takes an amount from one row's column and adds it to another row's
    (two updates), or moves a row to another parent (it sets a foreign key column)."""
    if re.search(r"UPDATE\s[^\n]*SET\s+[\"`]?\w+_id[\"`]?\s*=\s*\?", body, re.I):
        return True
    if len(re.findall(r"UPDATE\s", body, re.I)) < 2:
        return False
    taken = set(re.findall(r"\[[\"'](\w+)[\"']\]\s*-\s*\w+", body))
    taken |= set(re.findall(r"SET\s+[\"`]?(\w+)[\"`]?\s*=\s*[\"`]?\w+[\"`]?\s*-", body, re.I))
    given = set(re.findall(r"\[[\"'](\w+)[\"']\]\s*\+\s*\w+", body))
    given |= set(re.findall(r"SET\s+[\"`]?(\w+)[\"`]?\s*=\s*[\"`]?\w+[\"`]?\s*\+", body, re.I))
    return bool(taken & given)


def guards(kind, spec):
    """Whether a tool's code enforces a rule of this kind: ``capacity`` (it counts a parent's rows and refuses
    past a limit), ``final`` (it refuses to change a record whose status is in a set of final states),
    ``non_negative`` (it refuses a value below 0) or ``range`` (it refuses a value below one constant and above
    another)."""
    for _, body in tool_bodies(spec):
        if kind == "non_negative" and refuses_below(body, True):
            return True
        if kind == "range" and refuses_below(body, False) and refuses_above(body):
            return True
        if kind == "capacity" and re.search(r"count\s*\(", body, re.I) and re.search(r">=?", body) \
                and "raise" in body:
            return True
        if kind == "final" and re.search(r"\[[\"'](\w*status|\w*state)[\"']\]\s+(not\s+)?in\s*[\[(]", body) \
                and "raise" in body:
            return True
    return False


def has_rule(kind, spec):
    """Whether the DDL holds a rule of this kind (module docstring)."""
    ddl = (spec.get("state") or {}).get("schema_sql") or ""
    if kind == "unique":
        return re.search(r"\bUNIQUE\b", ddl, re.I) is not None
    if kind == "required":
        return any("NOT NULL" in decl.upper() and "PRIMARY" not in decl.upper()
                   for t in tables(spec).values() for decl in t["columns"].values())
    if kind == "non_negative":
        return re.search(r"CHECK\s*\(\s*[\"`]?\w+[\"`]?\s*>=\s*0\s*[)A]", ddl, re.I) is not None \
            or guards(kind, spec)
    if kind == "range":
        return re.search(r"CHECK\s*\([^)]*(<=|<|BETWEEN)", ddl, re.I) is not None or guards(kind, spec)
    if kind == "enum":
        return (re.search(r"CHECK\s*\(\s*[\"`]?\w+[\"`]?\s+IN\s*\(", ddl, re.I) is not None
                or any(isinstance(prm, dict) and prm.get("enum") for t in spec.get("tools", [])
                       for prm in ((t.get("parameters") or {}).get("properties") or {}).values()))
    if kind == "states":
        return bool(status_columns(spec))
    if kind in ("capacity", "final"):
        return guards(kind, spec)
    return False


def validate(spec):
    problems = []
    for kind, least in (REQUIRED.get("tasks") or {}).items():
        have = len(tasks_of_kind(spec, kind))
        if have < least:
            problems.append("the skill needs at least %d %s task(s); the environment has %d" % (least, kind, have))
    if REQUIRED.get("states") and not status_columns(spec):
        problems.append("the skill needs a lifecycle: no table has a status column")
    for kind in REQUIRED.get("operations") or []:
        if not does(kind, spec):
            problems.append("the skill needs a %s operation; no tool does one" % kind)
    for kind in REQUIRED.get("rules") or []:
        if not has_rule(kind, spec):
            problems.append("the skill needs a %s rule; the tables have none" % kind)
    return problems
'''


_HAS = r'''

def validate(spec):
    have = ["operation " + kind for kind in OPERATIONS if does(kind, spec)]
    have += ["rule " + kind for kind in RULES if has_rule(kind, spec)]
    if status_columns(spec):
        have.append("states")
    for kind in TASK_KINDS:
        have.append("tasks %s %d" % (kind, len(tasks_of_kind(spec, kind))))
    return have
'''


def structure_of(spec: EnvSpec | dict[str, Any], executor: Any = "worker") -> dict[str, Any] | None:
    """What ``spec`` has, in the terms of a skill's requirements (``operations``, ``rules``, ``states``, task
    counts in ``tasks``), judged in the sandbox by the same code as :func:`requirement_problems`: a skill that
    asks for no more than this holds on ``spec``. None when the check could not run."""
    from envgen.blueprint.schema import OP_KINDS, RULE_KINDS
    from gym_envs.spec import TASK_KINDS

    source = (f"REQUIRED = {{}}\nOPERATIONS = {list(OP_KINDS)!r}\nRULES = {list(RULE_KINDS)!r}\n"
              f"TASK_KINDS = {list(TASK_KINDS)!r}\n" + _CHECK + _HAS)
    probe = Skill(id="structure", name="structure", description="what a spec has", validator=source)
    out: dict[str, Any] = {"operations": [], "rules": [], "states": False, "tasks": {}}
    for line in run_validator(probe, spec, executor=executor):
        word, _, rest = line.partition(" ")
        if word == "operation":
            out["operations"].append(rest)
        elif word == "rule":
            out["rules"].append(rest)
        elif word == "states":
            out["states"] = True
        elif word == "tasks":
            kind, n = rest.split()
            out["tasks"][kind] = int(n)
        else:  # the validator did not run: "skill structure: ..."
            return None
    return out


def requirements_validator(requirements: dict[str, Any]) -> str:
    """The restricted-Python source of a validator that checks ``requirements`` (module docstring)."""
    req = check_blueprint_requirements(requirements, "requirements")
    return f'"""Checks the structure the skill requires: {req!r}."""\n\nREQUIRED = {req!r}\n' + _CHECK


def requirement_problems(requirements: dict[str, Any], spec: EnvSpec | dict[str, Any],
                         executor: Any = "worker") -> list[str]:
    """Problems of ``spec`` against ``requirements`` (empty when it has everything), checked in the sandbox."""
    if not requirements:
        return []
    probe = Skill(id="requirements", name="requirements", description="structural requirements",
                  validator=requirements_validator(requirements))
    return [p.replace("skill requirements: ", "") for p in run_validator(probe, spec, executor=executor)]

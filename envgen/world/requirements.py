"""A skill's structural requirements in world terms: what narrows the world grammar, what the prompt asks for.

Role: a skill states what it requires in the v1 blueprint's vocabulary (its ``blueprint:`` section,
:attr:`envgen.skills.skill.Skill.blueprint`: operation kinds, rule kinds, a lifecycle, least task counts;
:mod:`envgen.skills.requirements` checks them on any spec). :func:`world_needs` translates that section into
the world blueprint's own structure (:class:`WorldNeeds`); :func:`narrow_world_schema` writes it into the
world decoding schema (:func:`envgen.world.blueprint.world_json_schema`) and :func:`needs_text` says it in the
world prompt (:func:`envgen.proposers.world.prompt.build_world_messages`). So a skill supplies a world's
structure before the model writes it, as it does for blueprints; the skill's check still runs on the compiled
spec (:func:`envgen.skills.round.gate_validator`).

The counterparts (:data:`OPERATIONS`, and :func:`world_needs` for the rest):

* ``operations``: an operation of one of the world kinds that does it (``status`` is a ``transition`` or
  ``take``, ``transfer`` a ``transfer`` or ``move``, ``get`` a ``lookup``, ``find`` a ``search``, ``list`` a
  ``search``, ``count`` or ``total``); the schema makes the first operations these;
* ``states: true`` and the rule ``states``: the main entity, written first (``role: main``), has at least
  two lifecycle states; ``final``: it also has a final state, and an operation moves it (``transition`` or
  ``take``, whose source check is the refusal); ``enum``: its first field is a ``category`` with at least two
  ``values`` (a ``CHECK ... IN``);
* ``non_negative``: an ``adjust`` operation (the tool refuses a result below its field's ``min``, 0 by
  default); ``range``: an ``adjust`` operation, and the prompt asks for a ``min`` and a ``max`` on its field;
* ``tasks``: the world blueprint has no task mix (the task writer draws families), so the schema asks for the
  structure each kind's family needs: ``decline`` is a policy rule the refusal family tests (``forbid_state``
  or ``limit``, about a tool; one per decline task, at most two, the family's most), ``missing_parameter`` a
  self-service world with a person entity (a request that leaves out who is asking), ``read`` a ``count`` or
  ``total`` operation (the counting question), ``execute`` an operation staff act with (``take``,
  ``acquire``, ``release``, ``move``, ``transfer``); and the counts themselves go to the world compiler
  (``compile_world(require_tasks=...)``), whose task writer drafts those kinds first.

What the schema cannot say, the prompt asks for and the skill's check judges (:attr:`WorldNeeds.asked`):
``capacity`` (an integer field of one entity bounding its child records, with a ``room`` condition on the
child's ``create``: a cross-reference between two entities) and the bounds of ``range`` (the schema cannot tie
a field's ``min``/``max`` to the field an operation names). ``unique`` and ``required`` need nothing: every
world key is ``UNIQUE`` and every field not ``nullable`` is ``NOT NULL``. The task writer drafts a required kind
only as far as the world's structure lets its family write it: the check on the compiled spec counts the tasks.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from envgen.blueprint.schema import _require_first  # one prefix writer for both blueprint versions

__all__ = ["OPERATIONS", "WorldNeeds", "narrow_world_schema", "needs_text", "require_compilable", "world_needs"]

OPERATIONS: dict[str, tuple[str, ...]] = {
    "create": ("create",), "get": ("lookup",), "find": ("search",), "list": ("search", "count", "total"),
    "update": ("update",), "delete": ("delete",), "status": ("transition", "take"), "adjust": ("adjust",),
    "transfer": ("transfer", "move"),
}
"""A skill's operation kind (the v1 blueprint's :data:`envgen.blueprint.schema.OP_KINDS`) -> the world operation
kinds (:data:`envgen.world.model.OP_KINDS`) any one of which does it."""

_MOVES = ("transition", "take")
_EXECUTE = ("take", "acquire", "release", "move", "transfer")
_COUNTS = ("count", "total")
_REFUSALS = ("forbid_state", "limit")


@dataclass
class WorldNeeds:
    """A skill's requirements as world structure (module docstring); empty when the skill asks for nothing."""

    #: each entry: one operation whose kind is one of these, the first operations in this order
    operations: list[tuple[str, ...]] = field(default_factory=list)
    main_states: int = 0  #: least lifecycle states of the main entity (0: no main entity is required)
    main_final: bool = False  #: the main entity has a final state
    main_category: bool = False  #: the main entity's first field is a category with values
    person: bool = False  #: an entity of role person (written first)
    self_service: bool = False  #: ``operator`` is false: the user is the person acting on their own records
    #: each entry: one policy rule of one of these kinds about a tool (``op``), the first rules in this order
    policy: list[tuple[str, ...]] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)  #: what only the prompt asks for (the schema cannot say it)

    @property
    def main(self) -> bool:
        """Whether the main entity is required (written first, after a required person)."""
        return bool(self.main_states or self.main_final or self.main_category)


def world_needs(req: dict[str, Any] | None) -> WorldNeeds:
    """What a skill's ``blueprint`` section (checked by :func:`envgen.blueprint.schema.check_blueprint_requirements`)
    asks of a world (module docstring)."""
    from envgen.blueprint.schema import check_blueprint_requirements
    from envgen.world.tasks import _MAX_REFUSALS  # decline tasks the refusal family writes in one world at most

    r = check_blueprint_requirements(req or {}, "requirements")
    out = WorldNeeds()

    def op(kinds: tuple[str, ...]) -> None:
        if kinds not in out.operations:
            out.operations.append(kinds)

    for kind in r.get("operations", []):
        op(OPERATIONS[kind])
    rules = r.get("rules", [])
    if r.get("states") or {"states", "final"} & set(rules):
        out.main_states = 2
    if "final" in rules:
        out.main_final = True
        op(_MOVES)
    if "enum" in rules:
        out.main_category = True
    if {"non_negative", "range"} & set(rules):
        op(("adjust",))
    if "range" in rules:
        out.asked.append("the number field an adjust operation changes has both a min and a max")
    if "capacity" in rules:
        out.asked.append("an entity with an integer field named as its capacity, bounding how many child records "
                         "it holds, and a create of those children with a room condition")
    tasks = r.get("tasks", {})
    out.policy = [_REFUSALS] * min(tasks.get("decline", 0), _MAX_REFUSALS)
    if tasks.get("missing_parameter"):
        out.person = out.self_service = True
    if tasks.get("read"):
        op(_COUNTS)
    if tasks.get("execute"):
        op(_EXECUTE)
    return out


def _either(kinds: tuple[str, ...]) -> str:
    return kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + " or " + kinds[-1]


def needs_text(needs: WorldNeeds) -> str:
    """The world prompt's sentence of what the skill requires, in the order the schema requires it ("" when
    nothing)."""
    parts = []
    if needs.operations:
        parts.append("operations that begin with " + ", then ".join(f"one of kind {_either(k)}"
                                                                    for k in needs.operations))
    if needs.person:
        parts.append("a person entity (role person) written first")
    if needs.main:
        has = [f"at least {needs.main_states} lifecycle states"] if needs.main_states else []
        has += ["a final state"] if needs.main_final else []
        has += ["a category field with its values as its first field"] if needs.main_category else []
        parts.append(f"the main entity (role main) written {'next' if needs.person else 'first'}, with "
                     + " and ".join(has))
    if needs.self_service:
        parts.append("a self-service user (operator false) acting on their own records")
    for kinds, n in Counter(needs.policy).items():
        rules = "a policy rule" if n == 1 else f"{n} policy rules"
        parts.append(f"first {rules} of kind {_either(kinds)}, each about one of the operations (requests the agent "
                     "must refuse)")
    parts += needs.asked
    return ("The world must have " + "; ".join(parts) + ".") if parts else ""


def narrow_world_schema(schema: dict[str, Any], needs: WorldNeeds) -> None:
    """Write ``needs`` into the world decoding schema, in place (``prefixItems``, ``minItems``, ``enum``: what
    xgrammar, vLLM's structured outputs and OpenAI's strict ``json_schema`` all enforce)."""
    props = schema["properties"]
    ops = props["operations"]
    _require_first(ops, [_with_enum(ops["items"], "kind", kinds) for kinds in needs.operations])
    ents = props["entities"]
    firsts = []
    if needs.person:
        firsts.append(_with_enum(ents["items"], "role", ("person",)))
    if needs.main:
        firsts.append(_main(ents["items"], needs))
    _require_first(ents, firsts)
    if needs.self_service:
        props["operator"] = {"type": "boolean", "enum": [False]}  # or left out: False is its default
    pol = props["policy"]
    _require_first(pol, [_rule(pol["items"], kinds) for kinds in needs.policy])
    _require_nonempty(schema)


def require_compilable(schema: dict[str, Any]) -> None:
    """Require, in the world decoding schema, what every world needs to compile whatever the skill: at least one
    entity and one operation. Both lists have an empty default, so a compact world may leave them out, and a
    model decoding under the schema did (45 of 48 base SmolLM2 worlds had no operation); the compiler then
    refuses the world (``no operation changes anything``). Whether an operation writes, the prompt asks and
    the compiler judges: the schema cannot say "one of them" without fixing which."""
    props = schema["properties"]
    for key in ("entities", "operations"):
        props[key]["minItems"] = max(int(props[key].get("minItems", 0)), 1)
        _require(schema, key)


def _require(obj: dict[str, Any], key: str) -> None:
    """Make ``key`` a required property of the object schema ``obj`` (a key with a default may be left out)."""
    if key not in obj.get("required", []):
        obj["required"] = [k for k in obj["properties"] if k in {*obj.get("required", []), key}]


def _require_nonempty(node: Any) -> None:
    """Require every property narrowed to a non-empty list (``minItems``): left out, it would be its empty default."""
    if isinstance(node, list):
        for x in node:
            _require_nonempty(x)
        return
    if not isinstance(node, dict):
        return
    for key, sub in (node.get("properties") or {}).items():
        if isinstance(sub, dict) and int(sub.get("minItems", 0)) > 0:
            _require(node, key)
    for v in node.values():
        _require_nonempty(v)


def _with_enum(item: dict[str, Any], key: str, values: tuple[str, ...]) -> dict[str, Any]:
    out = copy.deepcopy(item)
    out["properties"][key] = {"type": "string", "enum": list(values)}
    return out


def _main(item: dict[str, Any], needs: WorldNeeds) -> dict[str, Any]:
    out = _with_enum(item, "role", ("main",))
    p = out["properties"]
    p["states"]["minItems"] = max(int(p["states"].get("minItems", 0)), needs.main_states)
    if needs.main_final:
        p["final"]["minItems"] = 1
    if needs.main_category:
        cat = _with_enum(p["fields"]["items"], "kind", ("category",))
        cat["properties"]["values"]["minItems"] = 2
        _require_first(p["fields"], [cat])
    return out


def _rule(item: dict[str, Any], kinds: tuple[str, ...]) -> dict[str, Any]:
    """A policy rule of one of ``kinds`` that names its tool (a rule about no tool is dropped by the compiler)."""
    out = _with_enum(item, "kind", kinds)
    op = out["properties"]["op"]
    out["properties"]["op"] = next(x for x in op["anyOf"] if x.get("type") == "string")
    _require(out, "op")
    return out

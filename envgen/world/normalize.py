"""From a world blueprint to the world model: cross-references checked, defaults filled, every repair recorded.

Role: :func:`to_world` is what the compiler runs first. The schema cannot say that an operation's entity
exists, that a transition's target is one of the entity's states or that a capacity field is an integer;
this module checks each, drops or fixes what does not hold and records every change as a *repair*
(``"operations[3]: unknown entity 'ticket': dropped"``), never silently.

It also fills what a world needs that a short blueprint may leave out, and records that too:

* each entity's row count (by role: 200 main records, 80 people, 60 catalog things, two lines a main
  record) and a code prefix;
* a lookup of every person, main and catalog entity, a search of the main records by their parent, and a
  search of the catalog (the tools a careful agent finds records with);
* a policy of at least five rules: the tool-enforced guards stated, identity verification and "your own
  records only" in a self-service world, no invented information; and an escalation tool when a rule
  sends requests over a limit to a person.

Contract: the result references only entities and fields that exist; :class:`~envgen.errors.CompileError`
is raised only when no entity is left, or no operation writes.
"""

from __future__ import annotations

from envgen.errors import CompileError
from envgen.world.blueprint import EntitySpec, OperationSpec, WorldBlueprint
from envgen.world.code import code_name
from envgen.world.model import LOCATOR_KINDS, Condition, Effect, Entity, Field, Op, PolicyRule, Ref, World, human
from envgen.world.render import PAGE_PARAMS

__all__ = ["to_world"]

_ROWS = {"main": 200, "person": 80, "catalog": 60, "container": 50, "child": 400, "record": 60}
_RESERVED = {"id", "state", "db", "self", *PAGE_PARAMS}  #: a search's own parameters are not names of fields


def _entity(spec: EntitySpec, repairs: list[str], where: str) -> Entity:
    fields: list[Field] = []
    seen = {spec.key.name}
    for i, f in enumerate(spec.fields):
        if f.name in seen or f.name in _RESERVED or f.name.endswith("_id") or code_name(f.name):
            repairs.append(f"{where}.fields[{i}]: name {f.name!r} is taken or reserved: dropped")
            continue
        seen.add(f.name)
        fields.append(Field(f.name, f.kind, f.description, list(f.values) or None,
                            None if f.min is None else float(f.min), None if f.max is None else float(f.max),
                            nullable=f.nullable))
    states = list(dict.fromkeys(spec.states))
    final = [s for s in spec.final if s in states]
    if len(final) < len(spec.final):
        repairs.append(f"{where}.final: states not in the lifecycle dropped")
    prefix = spec.prefix or "".join(c for c in spec.name.upper() if c.isalpha())[:3]
    rows = spec.rows if spec.rows is not None else _ROWS.get(spec.role, 60)
    key = spec.key.name
    if code_name(key) or key in _RESERVED:  # a parameter of that name would shadow a name of the tool code
        key = f"{spec.name}_{key}"
        repairs.append(f"{where}.key: name {spec.key.name!r} is reserved: renamed {key!r}")
    return Entity(spec.name, Field(key, spec.key.kind, unique=True), fields, [], states, final,
                  spec.description, rows, prefix, None, spec.role)


def _op(spec: OperationSpec, world_ents: dict[str, Entity], repairs: list[str], where: str) -> Op | None:
    ent = world_ents.get(spec.entity)
    if ent is None:
        repairs.append(f"{where}: unknown entity {spec.entity!r}: dropped")
        return None
    fields = [f for f in spec.fields if ent.field(f) is not None]
    if len(fields) < len(spec.fields):
        repairs.append(f"{where}: unknown fields {sorted(set(spec.fields) - set(fields))} dropped")
    conds = [Condition(c.kind, c.message, list(c.values), c.field, c.op, c.arg, c.value, c.ref)
             for c in spec.conditions]
    effs = [Effect(e.kind, e.field, e.arg, e.value, e.sign, e.ref, e.scale, e.source) for e in spec.effects]
    op = Op(spec.name, spec.kind, ent, spec.description, spec.origin, fields, spec.target, list(spec.sources),
            spec.order, spec.holder, spec.by, conds, effs, spec.phrase, list(spec.reasons))
    problem = _op_problem(op)
    if problem:
        repairs.append(f"{where} ({spec.name}): {problem}: dropped")
        return None
    return op


def _op_problem(op: Op) -> str | None:
    """Why an operation cannot be compiled as written (its kind's needs, its conditions, its effects), or None."""
    return _kind_problem(op) or _condition_problem(op) or _effect_problem(op)


def _kind_problem(op: Op) -> str | None:
    ent, k = op.entity, op.kind
    if k == "transition" and op.target is None and not op.sources:
        return "a transition that keeps the state (no target) needs the source states it accepts"
    if k in ("transition", "take") and (not ent.states or (op.target not in ent.states and
                                                           (k == "take" or op.target is not None))):
        return f"target state {op.target!r} is not one of {ent.name}'s states"
    if k in ("transition", "take", "count", "total") and any(s not in ent.states for s in op.sources):
        return f"source states {op.sources} are not all states of {ent.name}"
    number = ent.field(op.fields[0]) if op.fields else None
    if k in ("adjust", "transfer", "total") and (number is None or number.sqltype not in ("INTEGER", "REAL")):
        return f"{k} needs a number field of {ent.name}"
    if k == "update" and not op.fields:
        return "an update needs the fields it sets"
    if k in ("take", "count", "total", "move") and ent.parent is None:
        return f"{k} needs {ent.name} to belong to a parent record"
    holder = next((r for r in ent.refs if r.name == op.holder), None)
    if k in ("acquire", "release") and (holder is None or not holder.nullable):
        return f"{k} needs a nullable reference 'holder' of {ent.name}"
    if op.by is not None and op.by not in {r.name for r in ent.refs}:
        return f"'by' names {op.by!r}, not a reference of {ent.name}"
    return None


def _condition_problem(op: Op) -> str | None:
    ent = op.entity
    refs = {r.name for r in ent.refs}
    for c in op.conditions:
        if c.kind == "ref_state" and c.ref not in refs:
            return f"a condition reads the unknown reference {c.ref!r}"
        if c.kind == "compare" and c.field and "." not in c.field and ent.field(c.field) is None:
            return f"a condition reads the unknown field {c.field!r}"
        if c.kind == "room" and (ent.parent is None or ent.parent.entity.capacity is None):
            return "a 'room' condition needs a parent with a capacity field"
    return None


def _effect_problem(op: Op) -> str | None:
    ent = op.entity
    refs = {r.name for r in ent.refs}
    for e in op.effects:
        target = ent
        if e.ref is not None:
            ref = next((r for r in ent.refs if r.name == e.ref), None)
            if ref is None:
                return f"an effect changes the unknown reference {e.ref!r}"
            target = ref.entity
        f = target.field(e.field)
        if f is None:
            return f"an effect changes the unknown field {e.field!r} of {target.name}"
        if e.kind == "shift" and (f.kind not in ("date", "datetime") or not isinstance(e.value, int)
                                  or isinstance(e.value, bool) or e.value == 0):
            return (f"a shift effect needs a date or datetime field and a nonzero whole number of days as 'value', "
                    f"got {e.field!r} ({f.kind}) and {e.value!r}")
        if e.kind == "copy" and (not e.source or e.source.split(".")[0] not in refs):
            return f"a copy effect needs 'source' as ref.field, got {e.source!r}"
    return None


def to_world(bp: WorldBlueprint, repairs: list[str] | None = None) -> World:
    """The world model of ``bp`` (see the module docstring); repairs are appended to ``repairs``."""
    repairs = [] if repairs is None else repairs
    ents: dict[str, Entity] = {}
    for i, spec in enumerate(bp.entities):
        if spec.name in ents:
            repairs.append(f"entities[{i}]: duplicate entity {spec.name!r}: dropped")
            continue
        ents[spec.name] = _entity(spec, repairs, f"entities[{i}]")
    if not ents:
        raise CompileError("the world has no entity")
    for i, spec in enumerate(bp.entities):
        ent = ents[spec.name]
        owners = 0
        for j, r in enumerate(spec.refs):
            target = ents.get(r.entity)
            if target is None or target is ent:
                repairs.append(f"entities[{i}].refs[{j}]: unknown or self entity {r.entity!r}: dropped")
                continue
            owner = r.owner and owners == 0 and not r.nullable
            owners += int(owner)
            if r.owner and not owner:
                repairs.append(f"entities[{i}].refs[{j}]: a second (or nullable) owner is a plain reference")
            ent.refs.append(Ref(r.name, target, owner, r.nullable))
        if spec.capacity is not None:
            f = ent.field(spec.capacity)
            if f is None or f.sqltype != "INTEGER":
                repairs.append(f"entities[{i}].capacity: {spec.capacity!r} is not an integer field: dropped")
            else:
                ent.capacity = spec.capacity
    world_ents = list(ents.values())
    ops: list[Op] = []
    names: set[str] = set()
    for i, op_spec in enumerate(bp.operations):
        op = _op(op_spec, ents, repairs, f"operations[{i}]")
        if op is None:
            continue
        if code_name(op.name):  # a tool of that name would replace a helper of the tool code
            renamed = f"{op.name}_{op.entity.name}"
            repairs.append(f"operations[{i}]: tool name {op.name!r} is reserved: renamed {renamed!r}")
            op.name = renamed
        if op.name in names:
            repairs.append(f"operations[{i}]: duplicate tool name {op.name!r}: dropped")
            continue
        names.add(op.name)
        ops.append(op)
    world = World(bp.title, bp.domain, bp.persona, bp.domain, world_ents, ops, [], bp.currency, bp.operator)
    _essential_tools(world, names, repairs)
    if not any(o.writes and o.kind != "escalate" for o in world.ops):
        raise CompileError("no operation changes anything: a world needs at least one write")
    world.policy = _policy(bp, world, repairs)
    world.words = sorted({w for e in world_ents for w in e.name.split("_")} | set(bp.vocabulary.all_titles()[:20]))
    _check_lines(bp, world_ents, repairs)
    return world


def _check_lines(bp: WorldBlueprint, ents: list[Entity], repairs: list[str]) -> None:
    """A title line's category must be a value of a category field of an entity whose records have titles: else a
    record titled from it draws its category apart from its title (recorded, never silent)."""
    titled = [e for e in ents if any(f.kind == "title" for f in [e.key, *e.fields])]
    values = {v for e in titled for f in e.fields if f.kind == "category" for v in (f.enum or bp.vocabulary.categories)}
    for i, line in enumerate(bp.vocabulary.lines):
        if line.category is not None and line.category not in values:
            repairs.append(f"vocabulary.lines[{i}]: category {line.category!r} is no value of a category field of a "
                           f"titled entity ({', '.join(sorted(values)) or 'none has one'}): its records draw their "
                           f"category apart from their title")


def _essential_tools(world: World, names: set[str], repairs: list[str]) -> None:
    """The lookups and searches a careful agent finds records with, added where the blueprint lacks them; a
    person with a name but nothing else to be found by gets a postcode (a caller gives name and postcode)."""
    def add(op: Op, why: str) -> None:
        if op.name in names:
            return
        names.add(op.name)
        world.ops.append(op)
        repairs.append(f"added {op.kind} tool {op.name!r}: {why}")

    for ent in world.entities:
        named_only = any(f.kind == "person_name" for f in ent.fields) and \
            not any(f.kind in LOCATOR_KINDS for f in ent.fields)
        if ent.role == "person" and named_only and ent.field("postcode") is None:
            ent.fields.append(Field("postcode", "postcode", "where the person lives"))
            repairs.append(f"added field postcode to {ent.name}: a person is found by name and postcode")
        if ent.role in ("person", "main", "catalog", "container") and not world.ops_of("lookup", ent):
            verb = "find" if ent.role == "person" else "get"
            suffix = "_by_" + ent.key.name if ent.role == "person" else "_details"
            add(Op(f"{verb}_{ent.name}{suffix}", "lookup", ent), f"{ent.name} records need a lookup by key")
        par = ent.parent
        listed = par is not None and any(o.by in (None, par.name) for o in world.ops_of("search", ent))
        if ent.role == "main" and par is not None and not listed:
            add(Op(f"list_{par.name}_{ent.table}", "search", ent, by=par.name),
                f"{ent.humans} are found through their {par.entity.human}")
        if ent.role == "catalog" and not world.ops_of("search", ent):
            add(Op(f"search_{ent.table}", "search", ent), f"{ent.humans} are found by words of their title")
        where = any(f.kind in LOCATOR_KINDS for f in ent.fields)
        named = any(f.kind == "person_name" for f in ent.fields)
        if ent.role == "person" and where and named and not any(o.by is None for o in world.ops_of("search", ent)):
            add(Op(f"find_{ent.name}_by_name", "search", ent,
                   description=f"Find {ent.humans} by name, and by where they live when several share it"),
                f"a {ent.human} who does not give their {human(ent.key.name)} is found by name")


def _tool_rule(op: Op, c: Condition) -> str | None:
    """A guard as a policy sentence (the tool enforces it; the agent explains a refusal)."""
    noun = op.entity.humans
    if c.kind == "state_in":
        return f"`{op.name}` works only on {' or '.join(c.values)} {noun}; explain this when it refuses."
    if c.kind == "ref_state" and c.ref:
        return f"`{op.name}` needs the {human(c.ref)} to be {' or '.join(c.values)}; explain this when it refuses."
    if c.kind in ("compare", "room"):
        par = op.entity.parent
        whose = par.entity if c.kind == "room" and par is not None else op.entity  # whose key fills {key}
        named = f"<{human(whose.key.name)}>"  # "Queue <queue name> is at its ticket limit"
        return f"`{op.name}` refuses when: {c.message.rstrip('.').replace('{key}', named)}. Explain why to the user."
    return None


def _policy(bp: WorldBlueprint, world: World, repairs: list[str]) -> list[PolicyRule]:
    """The world's policy: the blueprint's rules that hold, an escalation tool for each limit, and defaults."""
    tools = {o.name: o for o in world.ops}
    rules = _stated_rules(bp, tools, repairs)
    _escalations(world, rules, tools, repairs)
    _default_rules(world, rules, repairs)
    return rules


def _stated_rules(bp: WorldBlueprint, tools: dict[str, Op], repairs: list[str]) -> list[PolicyRule]:
    rules: list[PolicyRule] = []
    for i, p in enumerate(bp.policy):
        if p.op is not None and p.op not in tools:
            repairs.append(f"policy[{i}]: unknown tool {p.op!r}: dropped")
        elif p.kind == "forbid_state" and p.op is not None and \
                any(s not in tools[p.op].entity.states for s in p.states):
            repairs.append(f"policy[{i}]: states {p.states} are not all states of {tools[p.op].entity.name}: dropped")
        elif p.kind in ("limit", "confirm", "forbid_state") and p.op is None:
            repairs.append(f"policy[{i}]: a {p.kind} rule needs the tool it is about: dropped")
        else:
            rules.append(PolicyRule(p.kind, p.text, p.op, p.field, p.value, list(p.states)))
    return rules


def _escalations(world: World, rules: list[PolicyRule], tools: dict[str, Op], repairs: list[str]) -> None:
    """Each limit rule sends what is over the limit to a person: an escalation tool taking its topic."""
    for r in rules:
        if r.kind != "limit" or r.op is None:
            continue
        ent = tools[r.op].entity
        if not world.ops_of("escalate", ent):
            name = "hand_over_to_human_agent" if "hand_over_to_human_agent" not in tools else f"escalate_{ent.name}"
            op = Op(name, "escalate", ent, sources=[])
            world.ops.append(op)
            tools[op.name] = op
            repairs.append(f"added escalation tool {op.name!r}: a limit rule sends requests to a person")
        esc = world.ops_of("escalate", ent)[0]
        r.field = r.field or "over_limit"
        if r.field not in esc.sources:
            esc.sources.append(r.field)


def _default_rules(world: World, rules: list[PolicyRule], repairs: list[str]) -> None:
    """What every world's policy says when the blueprint does not: who is served, the tools' own rules, conduct;
    at least five rules in all."""
    person = world.person
    have = {r.kind for r in rules}

    def default(rule: PolicyRule, why: str) -> None:
        rules.append(rule)
        repairs.append(f"policy: added a {rule.kind} rule ({why})")

    if person is not None and not world.operator and "verify" not in have:
        also = next((f for f in person.fields if f.kind in LOCATOR_KINDS), None)
        by = human(person.key.name) + (f", or by their name and {human(also.name)}" if also is not None else "")
        default(PolicyRule("verify", f"Before you read or change anything, identify the {person.human} by their "
                                     f"{by}, and look them up.", field=person.key.name),
                "a self-service world identifies who is asking")
    if person is not None and not world.operator and "own_records" not in have:
        default(PolicyRule("own_records", f"Act only on the records of the {person.human} you are talking to; "
                                          f"refuse requests about anyone else's, even on their behalf."),
                "a self-service world serves one person per conversation")
    for op in world.ops:
        for c in op.conditions:
            text = _tool_rule(op, c)
            if text and len(rules) < 10:
                rules.append(PolicyRule("tool", text, op=op.name))
    if "info" not in have:
        default(PolicyRule("info", "Never make up information: state only what the tools return, and ask when a "
                                   "detail you need is missing."), "conduct")
    fillers = ["Make one change at a time and tell the user what changed, in plain words.",
               "Do not share one person's details with another.",
               "When a request is outside what the tools can do, say so plainly instead of improvising."]
    while len(rules) < 5 and fillers:
        default(PolicyRule("info", fillers.pop(0)), "a policy has at least five rules")

"""The AST world writer: a document's own operations grafted onto a service from the domain catalog.

Role: the offline writer of world blueprints (the ``world`` proposer, and the model's teacher for the
world format). For one Python document it:

1. reads what the code does (:func:`envgen.proposers.template.semantics.analyze_semantics`): its
   pattern (a queue, a lock, a scheduler, a ledger...), its public operations with their roles, guards
   (``if self.full(): raise Full``) and target states;
2. picks a catalog domain that can host the pattern (:mod:`envgen.world.catalog`), preferring one that shares
   two or more words of its records and description with the code, the rest decided by the seed;
3. grafts the document's operations onto the domain's entities, where the function's name says what the
   service's operation does (:mod:`envgen.proposers.world.sense`): each becomes a tool named by the function's
   service verb and the domain's record (``put_print_job``, ``cancel_booking``, ``count_tickets``), doing what
   the code does (``add`` creates a record in its container and refuses when the container is full, with the
   code's exception name and message; ``take`` takes the oldest waiting one; a state change moves it to the
   domain's state its verb names); a plain verb (``remove``, ``add``) keeps the name of the domain tool it
   replaces (``DiGraph.remove_node`` cancels an order as ``cancel_order``). A function named for a code
   concept (``add_edges_from``, ``phase3``, ``set_isolation_level``) is not grafted, nor one whose state the
   domain lacks, nor a second function of an effect already grafted (``put_nowait`` beside ``put``). A graft
   replaces the domain tool of the same effect and takes over that tool's description, phrase, reasons,
   accepted states, fields and policy rules, with the code's guards in place of the domain's of the same kind,
   so the tool does what it says;
4. varies the domain (:func:`vary`): one to three of its own operations, reads and writes alike, are left out,
   by the seed.

The domain supplies everything a document cannot: people, realistic values, a policy. Contract:
deterministic given ``(document, seed)``; :func:`write_world` raises :class:`~envgen.errors.TemplateError`
only when the catalog is empty.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from envgen.errors import TemplateError
from envgen.proposers.world.sense import (
    GRAFT_VERBS,
    PLAIN_VERBS,
    graft_verb,
    name_words,
    same_state,
    update_field,
    verb_target,
)
from envgen.world.blueprint import MAX_OPERATIONS, ConditionSpec, OperationSpec, WorldBlueprint
from envgen.world.catalog import CatalogEntry, entries
from envgen.world.model import plural
from gym_envs.seeding import stable_seed

__all__ = ["WrittenWorld", "graft", "write_world"]

_MAX_GRAFTED = 6


@dataclass
class WrittenWorld:
    """A written world blueprint and how it was made."""

    blueprint: WorldBlueprint
    domain: str  #: the catalog domain's id
    pattern: str  #: the document's pattern
    grafted: list[str] = field(default_factory=list)  #: the tools named after the document's operations
    module: str = ""  #: the document's module name


def _snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name.strip("_")).lower()
    return re.sub(r"[^a-z0-9]+", "_", s).strip("_")


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]{3,}", _snake(text).replace("_", " "))}


def _choose(entries_: list[CatalogEntry], sem: Any, doc_key: str, seed: int) -> CatalogEntry:
    """The domain hosting a document: one that hosts its pattern, sharing the most words of its records and
    description with the document's code when it shares two or more (one word such as ``file`` or ``line`` is in
    most code), the rest by the seed."""
    pattern = getattr(sem, "pattern", "generic") if sem is not None else "generic"
    hosts = [e for e in entries_ if pattern in e.meta.patterns] or \
        [e for e in entries_ if "generic" in e.meta.patterns] or entries_
    words = set(getattr(sem, "words", []) or [])

    def score(e: CatalogEntry) -> tuple[int, int]:
        bp = e.blueprint
        shared = len(_words(" ".join([bp.title, bp.domain, *(x.name for x in bp.entities)])) & words)
        return shared if shared >= 2 else 0, stable_seed("world-domain", doc_key, seed, bp.id)

    return max(hosts, key=score)


def _tool_name(verb: str, noun: str, taken: set[str], free: str | None = None, kind: str = "") -> str | None:
    """The tool's name: the service verb of the document's function and the domain's record (``put_print_job``,
    ``cancel_booking``, ``count_tickets``); where another tool has that name, a take or a count says its kind
    (a queue's ``get`` beside the domain's ``get_ticket`` lookup is ``take_ticket``). None when the name is still
    taken: the graft is dropped rather than named in the code's words. ``free``: a taken name that may be reused
    (the domain tool this one replaces)."""
    said = plural(noun) if verb == "count" else noun
    tries = [f"{verb}_{said}"]
    if kind in ("take", "count") and kind != verb:
        tries.append(f"{kind}_{plural(noun) if kind == 'count' else noun}")
    for name in tries:
        name = re.sub(r"_+", "_", name)[:60].strip("_")
        if name not in taken or name == free:
            taken.add(name)
            return name
    return None


def _message(guard: Any, fallback: str) -> str:
    """A refusal's message: the code's exception and message (its characters kept to the format's prose, braces
    dropped), or ``fallback`` (the writer's own words, whose ``{key}`` names the record)."""
    def prose(s: Any) -> str:
        return re.sub(r"[^A-Za-z0-9 ,.;:()'/_%$&+=-]", "", str(s or "")).strip()

    exc, msg = prose(getattr(guard, "exception", "")), prose(getattr(guard, "message", ""))
    text = f"{exc}: {msg}" if exc and msg else (f"{exc}: {fallback}" if exc else (msg or fallback))
    return text[:150] or fallback


_ITEM_ROLE = {"queue": "item", "stack": "item", "lock": "resource", "scheduler": "event", "ledger": "entry",
              "archive": "member", "registry": "entry", "lifecycle": "record", "set": "member", "tree": "leaf"}
_CONTAINER_ROLE = {"queue": "container", "stack": "container", "scheduler": "calendar", "ledger": "account",
                   "archive": "archive", "set": "container", "tree": "branch"}


def _roles(pattern: str, host: dict[str, str], bp: WorldBlueprint) -> dict[str, Any]:
    """The domain's entities and states playing the graft's parts for ``pattern`` (:data:`PATTERN_ROLES`)."""
    ents = {e.name: e for e in bp.entities}
    item = ents.get(host.get(_ITEM_ROLE.get(pattern, ""), ""))
    if item is None:  # ledger without entries, generic: the main records
        item = next((e for e in bp.entities if e.role == "main"), None)
    container = ents.get(host.get(_CONTAINER_ROLE.get(pattern, ""), ""))
    if container is None and item is not None:
        owner = next((r for r in item.refs if r.owner), None)
        container = ents.get(owner.entity) if owner is not None else None
    account = ents.get(host.get("account", ""))
    balance = host.get("balance")
    return {"item": item, "container": container, "waiting": host.get("waiting"), "taken": host.get("taken"),
            "cancelled": host.get("cancelled"), "holder": host.get("holder"), "account": account,
            "balance": balance, "final": host.get("final"), "pattern": pattern}


def graft(entry: CatalogEntry, sem: Any, origin_module: str) -> tuple[WorldBlueprint, list[str]]:
    """The domain's blueprint with the document's operations grafted on (see the module docstring)."""
    bp = entry.blueprint.model_copy(deep=True)
    pattern = getattr(sem, "pattern", "generic") if sem is not None else "generic"
    host = entry.host(pattern)
    if host is None:
        host = {}
    roles = _roles(pattern, host, bp)
    item = roles["item"]
    if item is None or sem is None:
        return bp, []
    names = {o.name for o in bp.operations}
    grafted: list[OperationSpec] = []
    effects: set[tuple[Any, ...]] = set()
    renamed: dict[str, str] = {}  #: a replaced domain tool's name -> the grafted tool's
    for op in list(getattr(sem, "ops", []))[: 3 * _MAX_GRAFTED]:
        if len(grafted) >= _MAX_GRAFTED:
            break
        origin = re.sub(r"[^A-Za-z0-9_.]", "", f"{origin_module}.{getattr(op, 'origin', op.name)}")[:60]
        made = _grafted_op(op, list(getattr(op, "guards", []) or []), origin, roles)
        if made is None:
            continue
        spec, verb, said = made
        key = _effect(spec)
        if key in effects:  # one tool per effect: put and put_nowait are one operation of the service
            continue
        twin = next((o for o in bp.operations if _effect(o) == key and o.name not in renamed), None)
        name = twin.name if twin is not None and verb in PLAIN_VERBS else \
            _tool_name(verb, said, names, free=twin.name if twin is not None else None, kind=spec.kind)
        if name is None:
            continue
        if twin is not None:
            spec = _inherit(spec, twin)
            renamed[twin.name] = name
        spec.name = name
        effects.add(key)
        grafted.append(spec)
    kept = [o for o in bp.operations if o.name not in renamed]
    bp.operations = [*kept, *grafted][:MAX_OPERATIONS]
    tools = {o.name for o in bp.operations}
    for rule in bp.policy:
        if rule.op in renamed:
            rule.op = renamed[rule.op]
    bp.policy = [p for p in bp.policy if p.op is None or p.op in tools]
    return bp, [o.name for o in grafted if o.name in tools]


def _grafted_op(op: Any, guards: list[Any], origin: str, roles: dict[str, Any]
                ) -> tuple[OperationSpec, str, str] | None:
    """One document operation as an operation of the domain, with the service verb it is named by and the word it
    is named after (the record, or an update's field); None when the domain has no part for it or its name does
    not say what the service's operation does (:mod:`envgen.proposers.world.sense`)."""
    role = getattr(op, "role", "")
    item, container = roles["item"], roles["container"]
    parent_ref = next((r for r in item.refs if r.owner and container is not None and r.entity == container.name),
                      None) or next((r for r in item.refs if r.owner), None)
    states, finals, noun = list(item.states), list(item.final), item.name
    record = set(name_words(noun))

    def verb(slot: str) -> str | None:
        return graft_verb(op.name, slot, record, roles["pattern"])

    def guard(kind: str, fallback: str) -> str:
        return _message(next((g for g in guards if getattr(g, "kind", "") == kind), None), fallback)

    def made(spec: OperationSpec, v: str | None, said: str = noun) -> tuple[OperationSpec, str, str] | None:
        return (spec, v, said) if v else None

    cap_field = container.capacity if container is not None else None
    if role == "add" and container is not None and parent_ref is not None:
        conds = [ConditionSpec(kind="room", message=guard("full", f"the {container.name.replace('_', ' ')} {{key}} "
                                                                  f"is full"))] if cap_field is not None else []
        fields = [f.name for f in item.fields if not f.nullable and f.kind not in ("date", "datetime")][:2]
        return made(OperationSpec(name=_PENDING, kind="create", entity=noun, origin=origin, fields=fields,
                                  conditions=conds), verb("create"))
    waiting, taken = roles["waiting"], roles["taken"]
    if role == "take" and container is not None and parent_ref is not None and waiting in states and \
            taken in states:
        conds = [ConditionSpec(kind="not_empty", message=guard("empty", f"no {waiting} {noun.replace('_', ' ')} "
                                                                        f"for {{key}}"))]
        return made(OperationSpec(name=_PENDING, kind="take", entity=noun, origin=origin, target=taken,
                                  sources=[waiting], order="last" if getattr(op, "order", "") == "last" else "first",
                                  conditions=conds), verb("take"))
    if role == "count" and parent_ref is not None:
        return made(OperationSpec(name=_PENDING, kind="count", entity=noun, origin=origin,
                                  sources=[waiting] if waiting in states else []), verb("count"))
    if role in ("change_state", "remove") and states:
        v = verb("remove") if role == "remove" else verb("change_state") or verb("remove")
        target = _target(v, op, states, finals, roles) if v else None
        sources = [s for s in states if s != target and s not in finals]
        if target is None or not sources:
            return None
        return made(OperationSpec(name=_PENDING, kind="transition", entity=noun, origin=origin, target=target,
                                  sources=sources, phrase=f"{v} {{record}}"), v)
    if role in ("adjust", "add") and roles.get("account") is not None and roles.get("balance"):
        account = roles["account"]
        said = graft_verb(op.name, "adjust", set(name_words(account.name)), roles["pattern"])
        return made(OperationSpec(name=_PENDING, kind="adjust", entity=account.name, origin=origin,
                                  fields=[roles["balance"]]), said, account.name)
    if role in ("acquire", "release") and roles.get("holder"):
        return made(OperationSpec(name=_PENDING, kind="acquire" if role == "acquire" else "release", entity=noun,
                                  origin=origin, holder=roles["holder"]), verb(role))
    if role == "update":
        changes = update_field(op.name, [f.name for f in item.fields])
        if changes is None:
            return None
        return OperationSpec(name=_PENDING, kind="update", entity=noun, origin=origin, fields=[changes[1]]), \
            changes[0], changes[1]
    if role == "move" and parent_ref is not None:
        return made(OperationSpec(name=_PENDING, kind="move", entity=noun, origin=origin), verb("move"))
    return None


_PENDING = "pending_name"  #: a grafted operation's name until :func:`_tool_name` gives it one


def _target(verb: str, op: Any, states: list[str], finals: list[str], roles: dict[str, Any]) -> str | None:
    """The state a grafted state change moves a record to: the state its verb names (``close`` -> ``closed``) or
    the code's own target state, by the word; a removal (``remove``, ``delete``, ``cancel``) ends the record in
    the domain's cancelled state. None when the domain has no such state."""
    named = same_state(verb_target(verb), states) or same_state(getattr(op, "target_state", None), states)
    if named is not None or verb not in GRAFT_VERBS["remove"]:
        return named
    cancelled = roles.get("cancelled")
    if cancelled in states:
        return str(cancelled)
    return next((s for s in finals if s.startswith(("cancel", "remov", "delet", "withdr", "drop"))), None)


_READS = ("lookup", "search", "count", "total")


def _effect(op: OperationSpec) -> tuple[Any, ...]:
    """What an operation does, as a key: two operations with one key are the same operation of the service
    (its kind, record and target, the fields an update or adjust changes, a take's order, the holder)."""
    fields = tuple(op.fields) if op.kind in ("update", "adjust", "transfer") else ()
    return op.kind, op.entity, op.target, fields, op.order if op.kind == "take" else "", op.holder or ""


def _inherit(spec: OperationSpec, twin: OperationSpec) -> OperationSpec:
    """The domain's operation of the same effect as the grafted ``spec``, carrying the graft's origin and the
    code's guards: the service's description, phrase, reasons, accepted states, fields and effects, so what the
    tool says it does is what it does; a code guard replaces the domain's guard of the same kind."""
    mine = {c.kind for c in spec.conditions}
    conditions = [*spec.conditions, *(c for c in twin.conditions if c.kind not in mine)][:4]
    return twin.model_copy(deep=True, update={"origin": spec.origin, "conditions": conditions})


def _essential(bp: WorldBlueprint, op: OperationSpec) -> bool:
    """Whether the compiler would add a tool back if ``op`` were left out (a lookup of a main record, the
    catalog's search...): leaving it out would change nothing but the tool's name."""
    from envgen.world.normalize import to_world

    def added(ops: list[OperationSpec]) -> int:
        repairs: list[str] = []
        to_world(bp.model_copy(update={"operations": ops}), repairs)
        return sum(r.startswith("added ") and " tool " in r for r in repairs)

    return added([o for o in bp.operations if o is not op]) > added(list(bp.operations))


def vary(bp: WorldBlueprint, keep: list[str], rng: random.Random) -> None:
    """One service of a domain, not the domain's template: one to three of its own operations left out (never a
    grafted one, an escalation, or a read the compiler would add back; and a write only while four remain), and
    the policy rules about them with them; so two documents hosted by one domain get different tool sets, as two
    shops differ.

    Reads and writes are left out alike: each left-out operation is a read with the probability of the domain's
    share of reads. Leaving out only writes would tilt every varied world towards reads (lookups and listings),
    a mix its domain does not have; drawn this way a varied world keeps, on average, its domain's mix. When no read
    may be left out (the compiler would add each back) a write is, and the other way round, so a document always
    gets one to three left out while any may be: a draw that left out nothing gave the domain's own tool set, the
    same for every such document the domain hosts."""
    ops = [o for o in bp.operations if o.kind != "escalate"]
    reads_all = [o for o in ops if o.kind in _READS]
    writes = [o for o in ops if o.kind not in _READS and o.name not in keep]
    reads = [o for o in reads_all if o.name not in keep and not _essential(bp, o)]
    n_writes = len(ops) - len(reads_all)
    share = len(reads_all) / max(1, len(ops))
    drop: list[OperationSpec] = []
    for _ in range(rng.randint(1, 3)):
        writable = writes if n_writes - sum(o.kind not in _READS for o in drop) > 4 else []
        first, other = (reads, writable) if rng.random() < share else (writable, reads)
        pool = first or other  # a domain whose reads are all essential leaves out a write instead, and back
        if pool:
            drop.append(pool.pop(rng.randrange(len(pool))))
    if not drop:
        return
    gone = {o.name for o in drop}
    bp.operations = [o for o in bp.operations if o.name not in gone]
    bp.policy = [p for p in bp.policy if p.op not in gone]


def write_world(doc: Any, seed: int = 0) -> WrittenWorld:
    """The world blueprint of one document (see the module docstring)."""
    from envgen.proposers.template.semantics import analyze_semantics

    pool = entries()
    if not pool:
        raise TemplateError("the domain catalog is empty")
    text = str(getattr(doc, "text", "") or "")
    path = str(getattr(doc, "path", "") or getattr(doc, "id", "") or "")
    sem = analyze_semantics(text, path)
    key = str(getattr(doc, "id", "") or path)
    entry = _choose(pool, sem, key, seed)
    module = re.sub(r"\.py$", "", path.rsplit("/", 1)[-1]) or "doc"
    bp, grafted = graft(entry, sem, module)
    vary(bp, grafted, random.Random(stable_seed("world-vary", key, seed)))
    pattern = getattr(sem, "pattern", "generic") if sem is not None else "generic"
    return WrittenWorld(bp, entry.blueprint.id, pattern, grafted, module)

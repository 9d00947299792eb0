"""The AST world writer: a document's own operations grafted onto a service from the domain catalog.

Role: the offline writer of world blueprints (the ``world`` proposer, and the model's teacher for the
world format). For one Python document it:

1. reads what the code does (:func:`envgen.proposers.template.semantics.analyze_semantics`): its
   pattern (a queue, a lock, a scheduler, a ledger...), its public operations with their roles, guards
   (``if self.full(): raise Full``) and target states;
2. picks a catalog domain that can host the pattern (:mod:`envgen.world.catalog`), preferring one whose
   words the document shares, the rest decided by the seed;
3. grafts the document's operations onto the domain's entities: each becomes a tool named after the
   document's function and the domain's record (``put_print_job``, ``task_done``), doing what the code does
   (``add`` creates a record in its container and refuses when the container is full, with the code's
   exception name and message; ``take`` takes the oldest waiting one; ``change_state`` moves it to the
   domain's state closest to the code's), and replaces a domain tool of the same effect.

4. varies the domain (:func:`vary`): one to three of its own operations, reads and writes alike, are left out,
   by the seed.

The domain supplies everything a document cannot: people, realistic values, a policy. Contract:
deterministic given ``(document, seed)``; :func:`write_world` raises :class:`~envgen.errors.TemplateError`
only when the catalog is empty.
"""

from __future__ import annotations

import difflib
import random
import re
from dataclasses import dataclass, field
from typing import Any

from envgen.errors import TemplateError
from envgen.world.blueprint import ConditionSpec, OperationSpec, WorldBlueprint
from envgen.world.catalog import CatalogEntry, entries
from envgen.world.phrase import verb_words
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
    pattern = getattr(sem, "pattern", "generic") if sem is not None else "generic"
    hosts = [e for e in entries_ if pattern in e.meta.patterns] or \
        [e for e in entries_ if "generic" in e.meta.patterns] or entries_
    words = set(getattr(sem, "words", []) or [])

    def score(e: CatalogEntry) -> tuple[int, int]:
        bp = e.blueprint
        mine = _words(" ".join([bp.title, bp.domain, *(x.name for x in bp.entities), *bp.vocabulary.titles]))
        return len(mine & words), stable_seed("world-domain", doc_key, seed, bp.id)

    return max(hosts, key=score)


def _tool_name(doc_name: str, noun: str, taken: set[str], free: str | None = None, kind: str = "act") -> str:
    """The tool's name: the document's function from its verb on (``after_cancel`` is ``cancel``) and the domain's
    record (``put_print_job``); where another tool has that name, the function's whole name
    (``after_cancel_subscription`` beside the domain's ``cancel_subscription``), then the operation's ``kind``
    (a ``get`` that takes the next record, beside the domain's ``get`` lookup, is ``take_subscription``); a
    special method (``__len__``) says its kind (``count_application``). ``free``: a taken name that may be
    reused (the domain tool this one replaces)."""
    whole = [w for w in _snake(doc_name).split("_") if w]
    words = verb_words(whole) if not doc_name.startswith("__") else [kind]
    tries = [words, whole, [kind]] if not doc_name.startswith("__") else [[kind]]
    out = ""
    for ws in tries:
        base = "_".join(ws) or "act"
        name = base if noun in base else f"{base}_{noun}"
        name = re.sub(r"_+", "_", name)[:60].strip("_")
        if not re.match(r"^[a-z][a-z0-9_]{1,63}$", name):
            name = f"do_{name}"[:60]
        out = name
        if name not in taken or name == free:
            taken.add(name)
            return name
    n = 2
    name = out
    while out in taken:
        out, n = f"{name}_{n}", n + 1
    taken.add(out)
    return out


def _message(guard: Any, fallback: str) -> str:
    """A refusal's message: the code's exception and message (its characters kept to the format's prose, braces
    dropped), or ``fallback`` (the writer's own words, whose ``{key}`` names the record)."""
    def prose(s: Any) -> str:
        return re.sub(r"[^A-Za-z0-9 ,.;:()'/_%$&+=-]", "", str(s or "")).strip()

    exc, msg = prose(getattr(guard, "exception", "")), prose(getattr(guard, "message", ""))
    text = f"{exc}: {msg}" if exc and msg else (f"{exc}: {fallback}" if exc else (msg or fallback))
    return text[:150] or fallback


def _closest_state(target: str | None, states: list[str]) -> str | None:
    if not target or not states:
        return None
    if target in states:
        return target
    close = difflib.get_close_matches(target, states, n=1, cutoff=0.5)
    return close[0] if close else None


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
            "balance": balance, "final": host.get("final")}


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
    container = roles["container"]
    parent_ref = next((r for r in item.refs if r.owner and container is not None and r.entity == container.name),
                      None) or next((r for r in item.refs if r.owner), None)
    states = list(item.states)
    finals = list(item.final)
    waiting = roles["waiting"] or (states[0] if states else None)
    taken_state = roles["taken"] or next((s for s in states[1:] if s not in finals), None)
    noun = item.name
    names = {o.name for o in bp.operations}
    grafted: list[OperationSpec] = []
    replaced: set[tuple[str, str, str | None]] = set()
    cap_field = container.capacity if container is not None else None
    for op in list(getattr(sem, "ops", []))[: 3 * _MAX_GRAFTED]:
        if len(grafted) >= _MAX_GRAFTED:
            break
        role = getattr(op, "role", "")
        origin = re.sub(r"[^A-Za-z0-9_.]", "", f"{origin_module}.{getattr(op, 'origin', op.name)}")[:60]
        guards = list(getattr(op, "guards", []) or [])
        spec = _grafted_op(role, op, guards, origin, roles, item, container, parent_ref, states, finals,
                           waiting, taken_state, cap_field, noun, names, bp.operations)
        if spec is None:
            continue
        spec.description = _service_description(spec, bp)
        grafted.append(spec)
        replaced.add((spec.kind, spec.entity, spec.target))
    kept = [o for o in bp.operations if (o.kind, o.entity, o.target) not in replaced
            or o.kind in ("lookup", "search")]
    bp.operations = [*kept, *grafted][:18]
    policy_tools = {o.name for o in bp.operations}
    bp.policy = [p for p in bp.policy if p.op is None or p.op in policy_tools]
    return bp, [o.name for o in grafted]


def _grafted_op(role: str, op: Any, guards: list[Any], origin: str, roles: dict[str, Any], item: Any,
                container: Any, parent_ref: Any, states: list[str], finals: list[str], waiting: str | None,
                taken_state: str | None, cap_field: str | None, noun: str, names: set[str],
                ops: list[OperationSpec]) -> OperationSpec | None:
    """One document operation as a tool of the domain, or None when the domain has no part for it."""
    def name(n: str = noun) -> str:
        return _tool_name(op.name, n, names, free=_twin_name(role, n, ops), kind=_ROLE_KINDS.get(role, "act"))

    def guard(kind: str, fallback: str) -> str:
        return _message(next((g for g in guards if getattr(g, "kind", "") == kind), None), fallback)

    if role == "add" and container is not None and parent_ref is not None:
        conds = [ConditionSpec(kind="room", message=guard("full", f"the {container.name.replace('_', ' ')} {{key}} "
                                                                  f"is full"))] if cap_field is not None else []
        fields = [f.name for f in item.fields if not f.nullable and f.kind not in ("date", "datetime")][:2]
        return OperationSpec(name=name(), kind="create", entity=item.name, origin=origin,
                             fields=fields, conditions=conds)
    if role == "take" and container is not None and waiting and taken_state and parent_ref is not None:
        conds = [ConditionSpec(kind="not_empty", message=guard("empty", f"no {waiting} {noun.replace('_', ' ')} "
                                                                        f"for {{key}}"))]
        return OperationSpec(name=name(), kind="take", entity=item.name, origin=origin,
                             target=taken_state, sources=[waiting],
                             order="last" if getattr(op, "order", "") == "last" else "first", conditions=conds)
    if role == "count" and parent_ref is not None:
        return OperationSpec(name=name(), kind="count", entity=item.name, origin=origin,
                             sources=[waiting] if waiting else [])
    if role in ("change_state", "remove") and states:
        target = _closest_state(getattr(op, "target_state", None), states)
        if target is None and role == "remove":
            target = roles.get("cancelled") or next((s for s in finals if any(w in s for w in ("cancel", "remov",
                                                                                               "clos", "delet"))), None)
        sources = [s for s in states if s != target and s not in finals]
        if target is None or not sources:
            return None
        return OperationSpec(name=name(), kind="transition", entity=item.name, origin=origin,
                             target=target, sources=sources,
                             phrase=f"{' '.join(verb_words(_snake(op.name).split('_')))} {{record}}"[:80])
    if role in ("adjust", "add") and roles.get("account") is not None and roles.get("balance"):
        account = roles["account"]
        return OperationSpec(name=name(account.name), kind="adjust", entity=account.name,
                             origin=origin, fields=[roles["balance"]])
    if role in ("acquire", "release") and roles.get("holder"):
        return OperationSpec(name=name(), kind="acquire" if role == "acquire" else "release", entity=item.name,
                             origin=origin, holder=roles["holder"])
    if role == "update":
        text = next((f for f in item.fields if f.kind in ("description", "street_address", "title", "category")), None)
        if text is None:
            return None
        return OperationSpec(name=name(), kind="update", entity=item.name, origin=origin,
                             fields=[text.name])
    if role == "move" and parent_ref is not None:
        return OperationSpec(name=name(), kind="move", entity=item.name, origin=origin)
    return None


_READS = ("lookup", "search", "count", "total")

#: the domain operation kind a document role becomes (for the name of the domain tool it replaces)
_ROLE_KINDS = {"add": "create", "take": "take", "count": "count", "change_state": "transition", "remove": "transition",
               "adjust": "adjust", "acquire": "acquire", "release": "release", "update": "update", "move": "move"}

def _twin_name(role: str, noun: str, ops: list[OperationSpec]) -> str | None:
    """The name of the domain tool of the same effect on ``noun`` (the one a grafted tool replaces), if any."""
    kind = _ROLE_KINDS.get(role)
    twin = next((o for o in ops if o.kind == kind and o.entity == noun), None)
    return twin.name if twin is not None else None


def _service_description(spec: OperationSpec, bp: WorldBlueprint) -> str:
    """A grafted tool's description: what it does in the service, in the words of the domain tool of the same
    effect, or "" (the renderer then says it from the operation's kind and rules, and names the document's
    function it is modelled on). The document's own docstring speaks of the code ("Partitions of nodes from
    subgraph and graph"), not of the service, so it is not the tool's description."""
    twin = next((o for o in bp.operations if (o.kind, o.entity, o.target) == (spec.kind, spec.entity, spec.target)
                 and o.description), None)
    return twin.description if twin is not None else ""


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
    a mix its domain does not have; drawn this way a varied world keeps, on average, its domain's mix."""
    ops = [o for o in bp.operations if o.kind != "escalate"]
    reads_all = [o for o in ops if o.kind in _READS]
    writes = [o for o in ops if o.kind not in _READS and o.name not in keep]
    reads = [o for o in reads_all if o.name not in keep and not _essential(bp, o)]
    n_writes = len(ops) - len(reads_all)
    share = len(reads_all) / max(1, len(ops))
    drop: list[OperationSpec] = []
    for _ in range(rng.randint(1, 3)):
        pool = reads if rng.random() < share else writes
        if pool is writes and n_writes - sum(o.kind not in _READS for o in drop) <= 4:
            continue
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
    if grafted:
        bp.title = bp.title[:48]
        extra = f", run like {getattr(sem, 'main_class', None) or module} in {module}.py"
        bp.domain = (bp.domain + extra)[:80] if len(bp.domain + extra) <= 80 else bp.domain
    return WrittenWorld(bp, entry.blueprint.id, pattern, grafted, module)

"""Where a task's record comes from: the scope a conversation is about, its target, and how a person names it.

Role: the base of every task-family class (:class:`~envgen.world.tasks.families.Families` and its mixins
:mod:`.operations`, :mod:`.catalog`, :mod:`.withheld`). A *scope* is the record a conversation is about: the
customer who speaks (a person row, in a self-service world) or the container the staff member names (in an
operator world); the *target* is one of the scope's main records, named the way a person names it: by its
number, by its date, by a thing it contains, or by a filter ("my most recent pending order").

:meth:`Targets.targets` is the one search for a target: it yields the candidate records for an operation that
a predicate accepts, in the seeded draw order, each with who asks, the reads that reach it and the operation's
arguments; a family takes the first its own checks accept (the tool accepts the call, or refuses it), and
:meth:`Targets.doable` keeps those the policy allows and the tool accepts. The policy helpers
(:meth:`Targets.rules`, :meth:`Targets.allowed`, :meth:`Targets.confirm`...) say what the part's policy lets a
family ask for.

Contract: every draw comes from the writer's seeded ``rng``, so one world and seed give the same targets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from envgen.world.data import Pools
from envgen.world.model import LOCATOR_KINDS, Entity, Op, World, in_state
from envgen.world.phrase import Voice, lowers
from envgen.world.tasks.base import Call, Row, Writer

__all__ = ["CHANGES", "Said", "Target", "Targets"]

CHANGES = ("transition", "update", "adjust", "delete")
"""The kinds of operation a request to change one of the scope's records asks for (:meth:`Targets.act` gives their
arguments; the change and withheld-tool families draw from them)."""

_DATE_KINDS = ("date", "datetime")


class Said(NamedTuple):
    """How a person names a target record (:meth:`Families.describe`)."""

    words: str  #: ``order ORD-20417``, ``my order from March 3``, ``Ada Byrne's print job for printer PRN-1``
    hops: int  #: the dependency depth the naming adds (0: named by its key)
    choose: bool  #: the agent picks it among the scope's records by a filter (the latest, the oldest)
    reads: list[Call]  #: the reads that resolve the words once the scope's records are listed


class Target(NamedTuple):
    """A candidate target of a family (:meth:`Targets.targets`) with what asking about it takes."""

    scope: Row  #: the record the conversation is about (the customer who speaks, the container staff name)
    cands: list[Row]  #: the scope's main records (``said`` tells the target apart from the others)
    row: Row  #: the target
    voice: Voice  #: who asks
    find: list[Call]  #: the reads that reach the scope's records (:meth:`Targets.find_scope`)
    named: str  #: how the user names the scope ("" when they speak for themselves)
    said: Said  #: how the user names the target among ``cands``
    args: dict[str, Any]  #: the operation's arguments on the target (empty without an operation)
    value: str  #: the words for the operation's ``{value}``


class Targets:
    """Scopes, targets and the policy of one part of a world (see the module docstring)."""

    def __init__(self, w: Writer, pools: Pools, part: World | None = None):
        self.w = w
        self.world = w.world
        self.rng = w.rng
        self.pools = pools
        part = part or self.world  # a composed world's tasks are written one part at a time
        self.part = part
        self.operator = part.operator
        self.person = part.person
        self.main = next((e for e in part.entities if e.role == "main"), part.entities[0])
        self.scope_ent = self.main.parent.entity if self.main.parent is not None else None
        self.pin: Row | None = None  #: while set, the families act for this scope record only (a session)

    # -- policy ---------------------------------------------------------------------------------------
    def rules(self, kind: str, op: Op | None = None) -> list[Any]:
        """This part's policy rules of ``kind`` (about ``op``, or about no tool, when given)."""
        return [r for r in self.part.policy if r.kind == kind and (op is None or r.op in (None, op.name))]

    def allowed(self, op: Op, target: Row) -> bool:
        """Whether the policy lets ``op`` act on ``target`` (its state is not one a rule forbids)."""
        return not any(target.get("state") in r.states for r in self.rules("forbid_state", op) if r.op == op.name)

    def confirm(self, op: Op) -> bool:
        return any(r.op == op.name for r in self.rules("confirm"))

    def confirm_rules(self, op: Op) -> list[Any]:
        return [r for r in self.rules("confirm") if r.op == op.name]

    def confirm_rules_by_name(self, tool: str) -> list[Any]:
        """The confirmation rules about the tool called ``tool`` (any part's: a tool belongs to one)."""
        return [r for r in self.world.policy if r.kind == "confirm" and r.op == tool]

    def limit(self, op: Op) -> Any:
        return next((r for r in self.rules("limit") if r.op == op.name), None)

    @property
    def self_service(self) -> bool:
        """Whether the people who own the scope records ask themselves (else a member of staff asks)."""
        return not self.operator and self.person is not None and self.scope_ent is self.person

    def speaker(self, scope: Row) -> Voice:
        """Who asks about ``scope``'s records: that person (self-service), else a member of staff."""
        own = self.self_service
        return self.w.voice(scope if own else None, self.person if own else None)

    # -- scopes and targets ---------------------------------------------------------------------------
    def part_entities(self) -> list[Entity]:
        """The entities of this part (all of the world's when it is not composed)."""
        for part in self.world.parts:
            if self.main in part.entities:
                return list(part.entities)
        return list(self.world.entities)

    def fresh(self, row: Row) -> bool:
        """Whether a main record is in the state a new one starts in (any record, without a lifecycle)."""
        return row.get("state") == (self.main.states[0] if self.main.states else None)

    def scopes(self, least: int = 2) -> list[Row]:
        """The scope records (customers, accounts) owning at least ``least`` main records, shuffled; only the
        pinned one while a session is written."""
        if self.scope_ent is None:
            return []
        if self.pin is not None:
            return [self.pin] if len(self.w.owned(self.main, self.pin)) >= least else []
        out = [s for s in self.w.rows(self.scope_ent) if len(self.w.owned(self.main, s)) >= least]
        self.rng.shuffle(out)
        return out

    def targets(self, op: Op | None, keep: Callable[[Row], bool], *, least: int = 2, scopes: int = 6,
                each: int = 4) -> Iterator[Target]:
        """The candidate targets of ``op``, in the seeded draw order: for each of the first ``scopes`` scopes that
        own at least ``least`` main records (:meth:`scopes`), up to ``each`` of its records that ``keep`` accepts,
        shuffled, skipping those ``op`` cannot act on (:meth:`act`; none is skipped when ``op`` is None). Each
        comes with its speaker, the reads that reach its scope and how the person names it; the caller takes the
        first its own checks accept."""
        for scope in self.scopes(least)[:scopes]:
            cands = self.w.owned(self.main, scope)
            rows = [t for t in cands if keep(t)]
            self.rng.shuffle(rows)
            for row in rows[:each]:
                acted = self.act(op, row) if op is not None else ({}, "")
                if acted is None:
                    continue
                voice = self.speaker(scope)
                find, named = self.find_scope(voice, scope)
                yield Target(scope, cands, row, voice, find, named, self.describe(row, cands, named), *acted)

    def doable(self, op: Op) -> Iterator[tuple[Target, Call]]:
        """The candidate targets (:meth:`targets`) the policy lets ``op`` act on and whose call the tool makes
        after the reads that reach the scope, each with that call."""
        for t in self.targets(op, lambda r: self.allowed(op, r)):
            call = {"name": op.name, "arguments": t.args}
            if self.w.attempt(t.find, call)[0]:
                yield t, call

    def find_scope(self, voice: Voice, scope: Row) -> tuple[list[dict[str, Any]], str]:
        """The reference calls that reach the scope's records, and how the user names the scope."""
        s = self.scope_ent
        assert s is not None
        key = scope[s.key.name]
        calls: list[dict[str, Any]] = self.locate(voice, scope)
        look = self.w.tool("lookup", s)
        if look is not None:
            calls.append({"name": look.name, "arguments": {s.key.name: key}})
        search = self.w.tool("search", self.main, by=self.main.parent.name if self.main.parent else None)
        if search is not None and self.main.parent is not None:
            calls.append({"name": search.name, "arguments": {self.main.parent.param: key}})
        named = "" if not self.operator else s.named(key)
        return calls, named

    def locate(self, voice: Voice, person: Row) -> list[dict[str, Any]]:
        """Most of the time a caller gives their name and where they live, not their key: the agent finds them
        with the person search first (the key it then uses comes from that result)."""
        p = self.person
        if self.operator or p is None or self.scope_ent is not p or voice.key is None or self.rng.random() < 0.1:
            return []
        search = next((o for o in self.world.ops_of("search", p) if o.by is None), None)
        name = next((f for f in p.fields if f.kind == "person_name"), None)
        where = next((f for f in p.fields if f.kind in LOCATOR_KINDS), None)
        if search is None or name is None or where is None:
            return []
        same = [r for r in self.w.rows(p) if r[name.name] == person[name.name] and r[where.name] == person[where.name]]
        if len(same) != 1:
            return []
        voice.locator = (where.kind, str(person[where.name]))
        return [{"name": search.name, "arguments": {"query": person[name.name], where.name: person[where.name]}}]

    def reach(self, find: list[Call], target: Row, said: Said) -> list[Call]:
        """The reads a careful agent makes to find ``target`` named as ``said``, after the scope's ``find``.

        A record named by its key in an operator world is looked up directly: the staff member did not name
        its container, so the reference does not read it either."""
        if said.hops == 0 and self.operator:
            return self.details(target)
        if said.choose and target.get("state") is not None:
            find = self.in_state(find, target["state"])
        return [*find, *said.reads]

    def in_state(self, find: list[Call], state: str) -> list[Call]:
        """``find`` with its listing of the scope's main records narrowed to ``state``: a careful agent picks "my
        most recent pending order" among the pending ones, and counts them by the listing's total."""
        listings = {o.name for o in self.world.ops_of("search", self.main)} if self.main.states else set()
        return [{**c, "arguments": {**c["arguments"], "state": state}} if c["name"] in listings else c for c in find]

    def by_key(self, find: list[Call], target: Row) -> list[Call]:
        """The reads before acting on ``target`` named by its key (see :meth:`reach`)."""
        return self.reach(find, target, Said("", 0, False, []))

    def describe(self, target: Row, cands: list[Row], scope_named: str) -> Said:
        """How a person names ``target`` among ``cands`` (the scope's records): see :class:`Said`."""
        m = self.main
        mine = "my " if not self.operator else "the "
        where = f" for {scope_named}" if scope_named else ""
        details = self.details(target)
        options: list[Said] = [Said(m.named(target[m.key.name]), 0, False, [])]
        for f in m.fields:
            if f.kind in _DATE_KINDS and sum(1 for c in cands if c[f.name] == target[f.name]) == 1:
                said = f.semantic.say(target[f.name], self.world.currency)
                when = "placed" in f.name or "created" in f.name or "on" in f.name.split("_")
                at = f.name.endswith("_at")  # a moment (starts_at, sent_at): "on March 3 at 10:15"
                options.append(Said(f"{mine}{m.human}{where} from {said}" if when else
                                    f"{mine}{m.human}{where} on {said}" if at else
                                    f"{mine}{m.human}{where} with the {f.human} {said}", 1, False, details))
        thing = self.child_title(target, cands)
        if thing is not None:
            options.append(Said(f"{mine}{m.human}{where} with the {thing}", 1, False, details))
        sender = self.sender(target, cands) if self.operator else None
        if sender is not None:
            name, search = sender
            options.append(Said(f"{name}'s {m.human}{where}", 2, False, [search, *details]))
        date = next((f for f in m.fields if f.kind in _DATE_KINDS), None)
        if date is not None and m.states:
            same = [c for c in cands if c.get("state") == target.get("state")]
            if len(same) >= 2:
                latest = max(same, key=lambda c: (c[date.name], c["id"]))
                oldest = min(same, key=lambda c: (c[date.name], c["id"]))
                if latest is target and sum(1 for c in same if c[date.name] == target[date.name]) == 1:
                    options.append(Said(f"{mine}most recent {in_state(target['state'], m.human)}{where}", 1, True, []))
                elif oldest is target and sum(1 for c in same if c[date.name] == target[date.name]) == 1:
                    options.append(Said(f"{mine}oldest {in_state(target['state'], m.human)}{where}", 1, True, []))
        weights = [1] + [5] * (len(options) - 1)
        return self.rng.choices(options, weights=weights)[0]

    def sender(self, target: Row, cands: list[Row]) -> tuple[str, Call] | None:
        """In an operator world, the name of the person ``target`` is for, when no other of ``cands`` is theirs
        and no other person has that name, with the search that finds their key (``Ada Byrne``)."""
        person = self.person
        ref = next((r for r in self.main.refs if not r.owner and r.entity is person), None)
        search = next((o for o in self.world.ops_of("search", person) if o.by is None), None) if person else None
        name_field = next((f.name for f in person.fields if f.kind == "person_name"), None) if person else None
        if person is None or ref is None or search is None or name_field is None or target[ref.column] is None:
            return None
        if sum(1 for c in cands if c[ref.column] == target[ref.column]) != 1:
            return None
        who = self.w.row(person, target[ref.column])
        if who is None or sum(1 for p in self.w.rows(person) if p[name_field] == who[name_field]) != 1:
            return None
        return str(who[name_field]), {"name": search.name, "arguments": {"query": who[name_field]}}

    def child_title(self, target: Row, cands: list[Row]) -> str | None:
        """The title of a catalog thing only ``target`` among ``cands`` holds (``the Oak Desk Lamp``)."""
        for child in self.world.children(self.main):
            cat = next((r for r in child.refs if not r.owner), None)
            title = next((f for f in cat.entity.fields if f.kind == "title"), None) if cat else None
            if cat is None or title is None:
                continue
            holders: dict[str, set[int]] = {}
            for c in cands:
                for line in self.w.owned(child, c):
                    thing = self.w.row(cat.entity, line[cat.column])
                    if thing is not None:
                        holders.setdefault(thing[title.name], set()).add(c["id"])
            mine = [t for t, ids in holders.items() if ids == {target["id"]}]
            if mine:
                return self.rng.choice(sorted(mine))
        return None

    def details(self, target: Row) -> list[dict[str, Any]]:
        look = self.w.tool("lookup", self.main)
        key = self.main.key.name
        return [] if look is None else [{"name": look.name, "arguments": {key: target[key]}}]

    # -- the operation's arguments and words ----------------------------------------------------------
    def act(self, op: Op, target: Row) -> tuple[dict[str, Any], str] | None:
        """The call's arguments on ``target`` and the words for its ``{value}``."""
        ent = op.entity
        args: dict[str, Any] = {ent.key.name: target[ent.key.name]}
        value = ""
        if op.kind == "update" and op.fields:
            f = ent.field(op.fields[0])
            if f is None:
                return None
            new = f.semantic.draw(self.pools, {"field": f, "row": {}, "prefix": ent.prefix})
            if new == target.get(f.name):
                return None
            args[f.name] = new / 100 if f.kind == "money" else (bool(new) if f.sqltype == "BOOLEAN" else new)
            value = f.semantic.say(new, self.world.currency)
        elif op.kind == "adjust" and op.fields:
            f = ent.field(op.fields[0])
            if f is None:
                return None
            lim = self.limit(op)
            cap = int(lim.value) if lim is not None and lim.value is not None else None
            sign = -1 if lowers(op) else 1  # "take $15 off the balance": the amount comes off
            if f.kind == "money":
                cents = self.rng.choice([500, 1000, 1500, 2000, 2500, 5000, 7500])
                if cap is not None and cents / 100 > cap:
                    cents = max(100, int(cap * 100) // 2)
                args["amount"] = sign * cents / 100
                value = f.semantic.say(cents, self.world.currency)
            else:
                n = self.rng.randint(1, 20)
                if cap is not None:
                    n = min(n, max(1, cap))
                args["amount"] = sign * n
                value = str(n)
        elif op.kind in ("create", "count", "total", "search", "take", "transfer", "acquire", "escalate"):
            return None
        return args, value

    def total_of(self, target: Row) -> tuple[Row, int] | None:
        """A main record's computed total (quantity times price of its lines), if it has lines."""
        for child in self.world.children(self.main):
            q = next((f for f in child.fields if f.kind == "quantity"), None)
            p = next((f for f in child.fields if f.kind == "money"), None)
            lines = self.w.owned(child, target)
            if q is not None and p is not None and lines:
                return target, sum(int(r[q.name]) * int(r[p.name]) for r in lines)
        return None

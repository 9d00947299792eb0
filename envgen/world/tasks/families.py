"""Task families: what a person asks a service for, and the trajectory a careful agent takes.

Role: each method of :class:`Families` writes one :class:`~envgen.world.tasks.base.Draft` or ``None``
(when the world or the draw does not allow it). A *scope* is the record a conversation is about: the
customer who speaks (a person row, in a self-service world) or the container the staff member names (in
an operator world); the *target* is one of the scope's main records, named the way a person names it:
by its number, by its date, by a thing it contains, or by a filter ("my most recent pending order").

* :meth:`write_goal`: a change to a target found through its scope (two hops when named by description);
  a rule that asks for confirmation makes it two turns (the request, nothing changes; "yes", the change);
* :meth:`add_line`: a new child record that refers to a catalog record found by its title;
* :meth:`read_question`: a question whose answer the agent reads or computes (counts, totals, the latest);
* :meth:`policy_refusal`: a request only the policy forbids (a state, another person's record, an amount
  over the limit, which goes to a person through the escalation tool);
* :meth:`tool_refusal`: a request a tool refuses (its guard), then the allowed alternative;
* :meth:`missing_identity`: a request without who is asking; the agent must ask first;
* :meth:`~envgen.world.tasks.withheld.Withheld.withheld_tool`: a request whose tool is offered only once the
  user says the service can do it now.

Every family respects the policy in its normal path (amounts under a limit, states a rule allows, the
speaker's own records), so an agent that follows the policy can pass every task.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from envgen.world.data import Pools
from envgen.world.model import LOCATOR_KINDS, Op, World, human
from envgen.world.phrase import Voice, sentence, verb_phrase
from envgen.world.tasks.base import Draft, DraftTurn, Row, Writer, money_answers, number_answers
from envgen.world.tasks.catalog import Catalog
from envgen.world.tasks.operations import Operations
from envgen.world.tasks.withheld import Withheld

__all__ = ["Families"]

_DATE_KINDS = ("date", "datetime")
_COUNT_WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}
Call = dict[str, Any]


class Said(NamedTuple):
    """How a person names a target record (:meth:`Families.describe`)."""

    words: str  #: ``order ORD-20417``, ``my order from March 3``, ``Ada Byrne's print job for printer PRN-1``
    hops: int  #: the dependency depth the naming adds (0: named by its key)
    choose: bool  #: the agent picks it among the scope's records by a filter (the latest, the oldest)
    reads: list[Call]  #: the reads that resolve the words once the scope's records are listed


class Families(Operations, Catalog, Withheld):
    """The task families over one world (see the module docstring)."""

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
        named = "" if not self.operator else f"{s.human} {key}"
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
        return [*find, *said.reads]

    def by_key(self, find: list[Call], target: Row) -> list[Call]:
        """The reads before acting on ``target`` named by its key (see :meth:`reach`)."""
        return self.reach(find, target, Said("", 0, False, []))

    def describe(self, target: Row, cands: list[Row], scope_named: str) -> Said | None:
        """How a person names ``target`` among ``cands`` (the scope's records): see :class:`Said`."""
        m = self.main
        mine = "my " if not self.operator else "the "
        where = f" for {scope_named}" if scope_named else ""
        details = self.details(target)
        options: list[Said] = [Said(f"{m.human} {target[m.key.name]}", 0, False, [])]
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
                    options.append(Said(f"{mine}most recent {human(target['state'])} {m.human}{where}", 1, True, []))
                elif oldest is target and sum(1 for c in same if c[date.name] == target[date.name]) == 1:
                    options.append(Said(f"{mine}oldest {human(target['state'])} {m.human}{where}", 1, True, []))
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
            if f.kind == "money":
                cents = self.rng.choice([500, 1000, 1500, 2000, 2500, 5000, 7500])
                if cap is not None and cents / 100 > cap:
                    cents = max(100, int(cap * 100) // 2)
                args["amount"] = cents / 100
                value = f.semantic.say(cents, self.world.currency)
            else:
                n = self.rng.randint(1, 20)
                if cap is not None:
                    n = min(n, max(1, cap))
                args["amount"] = n
                value = str(n)
        elif op.kind in ("create", "count", "total", "search", "take", "transfer", "acquire", "escalate"):
            return None
        return args, value

    # -- families -------------------------------------------------------------------------------------
    def write_goal(self, missing: bool = False) -> Draft | None:
        ops = [o for o in self.world.ops if o.entity is self.main and o.kind in ("transition", "update", "adjust",
                                                                                 "delete")]
        if not ops:
            return None
        op = self.rng.choice(ops)
        for scope in self.scopes()[:6]:
            cands = self.w.owned(self.main, scope)
            targets = [t for t in cands if self.allowed(op, t)]
            self.rng.shuffle(targets)
            for target in targets[:4]:
                acted = self.act(op, target)
                if acted is None:
                    continue
                args, value = acted
                voice = self.speaker(scope)
                find, named = self.find_scope(voice, scope)
                call = {"name": op.name, "arguments": args}
                ok, _ = self.w.attempt(find, call)
                if not ok:
                    continue
                said = self.describe(target, cands, named)
                if said is None:
                    continue
                words, hops, choose, _ = said
                looks = self.reach(find, target, said)
                goal = verb_phrase(op).format(record=words, value=value)
                body = voice.ask(goal, voice.reason(op))
                request = sentence(voice.opener(identify=not missing), body)
                if missing:
                    if self.confirm(op):
                        continue
                    answer = self.rng.choice([f"Sure, it's {voice.key}.", f"Of course: {voice.key}.",
                                              f"Yes - my email is {voice.key}.", f"It's {voice.key}.",
                                              f"Oh, sorry! It's {voice.key}.", f"My account is {voice.key}.",
                                              f"Sure thing, {voice.key}.", f"Right, I forgot: {voice.key}."])
                    if voice.locator is not None:
                        answer = f"{self.rng.choice(['Sure.', 'Oh, sorry!', 'Of course.', 'Right.'])} " \
                                 f"{voice.identity()}"
                    return Draft("missing_parameter", "missing_identity",
                                 [DraftTurn(request, [], kind="ask", forbid=[op.name]),
                                  DraftTurn(answer, [*looks, call])], hops=hops + 1, choose=choose,
                                 rules=self.rules("verify"))
                if self.confirm(op):
                    turns = [DraftTurn(request, looks, kind="ask", forbid=[op.name], body=body),
                             DraftTurn(voice.yes(), [call])]
                else:
                    turns = [DraftTurn(request, [*looks, call], body=body)]
                return Draft("read_then_write", f"{op.kind}_{op.name}"[:40], turns, hops=hops + 1, choose=choose,
                             rules=self.confirm_rules(op), scope=scope["id"], voice=voice)
        return None

    def read_question(self) -> Draft | None:
        m = self.main
        for scope in self.scopes()[:6]:
            cands = self.w.owned(m, scope)
            voice = self.speaker(scope)
            find, named = self.find_scope(voice, scope)
            where = f" for {named}" if named else ""
            mine = "I have" if not self.operator else "there are"
            options = []
            if m.states:
                state = self.rng.choice(sorted({c["state"] for c in cands}))
                n = sum(1 for c in cands if c["state"] == state)
                options.append((f"how many {human(state)} {m.humans} {mine}{where}", [number_answers(n)], find, True))
            total = self.total_of(self.rng.choice(cands))
            if total is not None:
                target, cents = total
                said = self.describe(target, cands, named)
                if said is not None:
                    reads = self.reach(find, target, said)
                    reads += [c for c in self.details(target) if c not in reads]
                    options.append((f"what the total of {said.words} comes to",
                                    [money_answers(cents, self.world.currency)], reads, said.choose))
            if not options:
                continue
            question, answers, calls, choose = self.rng.choice(options)
            body = voice.question(question)
            text = sentence(voice.opener(), body)
            return Draft("read", "read_question", [DraftTurn(text, calls, kind="read", answers=answers, body=body)],
                         hops=1, choose=choose, scope=scope["id"], voice=voice)
        return None

    def total_of(self, target: Row) -> tuple[Row, int] | None:
        """A main record's computed total (quantity times price of its lines), if it has lines."""
        for child in self.world.children(self.main):
            q = next((f for f in child.fields if f.kind == "quantity"), None)
            p = next((f for f in child.fields if f.kind == "money"), None)
            lines = self.w.owned(child, target)
            if q is not None and p is not None and lines:
                return target, sum(int(r[q.name]) * int(r[p.name]) for r in lines)
        return None

    def policy_refusal(self) -> Draft | None:
        options = []
        for rule in self.rules("forbid_state"):
            op = next((o for o in self.world.ops if o.name == rule.op), None)
            if op is not None and op.entity is self.main:
                options.append(("state", rule, op))
        for rule in self.rules("own_records"):
            ops = [o for o in self.world.ops if o.entity is self.main and o.kind in ("transition", "update")]
            if ops:
                options.append(("own", rule, self.rng.choice(ops)))
        for rule in self.rules("limit"):
            op = next((o for o in self.world.ops if o.name == rule.op), None)
            if op is not None and op.kind == "adjust" and self.w.tool("escalate", op.entity) is not None:
                options.append(("limit", rule, op))
        self.rng.shuffle(options)
        for how, rule, op in options:
            draft = getattr(self, f"_refuse_{how}")(rule, op)
            if draft is not None:
                return draft
        return None

    def _refuse_state(self, rule: Any, op: Op) -> Draft | None:
        for scope in self.scopes()[:8]:
            cands = self.w.owned(self.main, scope)
            stuck = [t for t in cands if t.get("state") in rule.states]
            for target in stuck[:3]:
                acted = self.act(op, target)
                if acted is None:
                    continue
                args, value = acted
                voice = self.speaker(scope)
                scope_find, named = self.find_scope(voice, scope)
                said = self.describe(target, cands, named)
                if said is None:
                    continue
                find = self.reach(scope_find, target, said)
                ok, _ = self.w.attempt(find, {"name": op.name, "arguments": args})
                if not ok:  # the tool refuses it too: not a rule only the policy enforces
                    continue
                goal = verb_phrase(op).format(record=said.words, value=value)
                body = voice.ask(goal, voice.reason(op))
                text = sentence(voice.opener(), body)
                return Draft("decline", f"policy_state_{op.name}"[:40],
                             [DraftTurn(text, find, kind="refuse", forbid=[op.name], body=body)], rules=[rule],
                             hops=said.hops, choose=said.choose, scope=scope["id"])
        return None

    def _refuse_own(self, rule: Any, op: Op) -> Draft | None:
        scopes = self.scopes(1)
        if len(scopes) < 2 or self.operator:
            return None
        me, other = scopes[0], scopes[1]
        theirs = [t for t in self.w.owned(self.main, other) if self.allowed(op, t)]
        for target in theirs[:3]:
            acted = self.act(op, target)
            if acted is None:
                continue
            args, value = acted
            voice = self.speaker(me)
            find, _ = self.find_scope(voice, me)
            ok, _ = self.w.attempt(find, {"name": op.name, "arguments": args})
            if not ok:
                continue
            who = self.rng.choice(["my neighbour", "my brother", "a friend of mine", "my colleague", "my sister"])
            words = f"{self.main.human} {target[self.main.key.name]}"
            goal = verb_phrase(op).format(record=words, value=value)
            body = f"It's not mine, it belongs to {who}, but they asked me to handle it. {voice.ask(goal)}"
            return Draft("decline", f"policy_own_{op.name}"[:40],
                         [DraftTurn(sentence(voice.opener(), body), find, kind="refuse", forbid=[op.name], body=body)],
                         rules=[rule], scope=me["id"])
        return None

    def _refuse_limit(self, rule: Any, op: Op) -> Draft | None:
        esc = self.w.tool("escalate", op.entity)
        f = op.entity.field(op.fields[0]) if op.fields else None
        if esc is None or f is None or rule.value is None:
            return None
        subjects = self.w.rows(op.entity) if op.entity is not self.main else None
        if op.entity is self.person and not self.operator:
            if self.pin is not None and self.scope_ent is not self.person:
                return None
            scope = self.pin if self.pin is not None else self.rng.choice(self.w.rows(op.entity))
            voice = self.w.voice(scope, self.person)
            target = scope
            find = [*self.locate(voice, scope),
                    *([{"name": self.w.tool("lookup", op.entity).name,  # type: ignore[union-attr]
                        "arguments": {op.entity.key.name: scope[op.entity.key.name]}}]
                      if self.w.tool("lookup", op.entity) else [])]
            words = "my account"
            owner = scope["id"] if self.scope_ent is self.person else None
        elif op.entity is not self.main:  # staff name any record by its key; a customer only their own
            look = self.w.tool("lookup", op.entity)
            if not self.world.operator or look is None or not self.w.rows(op.entity) or self.pin is not None:
                return None
            target = self.rng.choice(self.w.rows(op.entity))
            voice = self.w.voice(None)
            find = [{"name": look.name, "arguments": {op.entity.key.name: target[op.entity.key.name]}}]
            words = f"{op.entity.human} {target[op.entity.key.name]}"
            owner = None
        else:
            scopes = self.scopes()
            if not scopes:
                return None
            scope = scopes[0]
            voice = self.speaker(scope)
            cands = self.w.owned(self.main, scope)
            target = self.rng.choice(cands)
            scope_find, named = self.find_scope(voice, scope)
            said = self.describe(target, cands, named)
            if said is None:
                return None
            find = self.reach(scope_find, target, said)
            words = said.words
            owner = scope["id"]
        del subjects
        cap = int(rule.value)
        if f.kind == "money":  # a sum a person would ask for: a multiple of the limit, rounded
            amount = cap * self.rng.choice([2, 3, 4]) + self.rng.choice([0, 15, 40])
        else:  # a count just over the limit (3 high chairs over a limit of 2), not tens over it
            amount = cap + self.rng.randint(1, max(1, min(cap, 5) if cap < 100 else cap // 2))
        cents = amount * 100
        value = f.semantic.say(cents, self.world.currency) if f.kind == "money" else str(amount)
        topic = rule.field or "policy_exception"
        esc_call = {"name": esc.name, "arguments": {op.entity.key.name: target[op.entity.key.name], "topic": topic}}
        goal = verb_phrase(op).format(record=words, value=value)
        body = voice.ask(goal, voice.reason(op))
        return Draft("decline", f"policy_limit_{op.name}"[:40],
                     [DraftTurn(sentence(voice.opener(), body), [*find, esc_call], forbid=[op.name], body=body)],
                     rules=[rule], scope=owner, staff=owner is None and voice.operator)

    def tool_refusal(self) -> Draft | None:
        ops = [o for o in self.world.ops if o.entity is self.main and o.kind == "transition" and o.sources]
        if not ops:
            return None
        op = self.rng.choice(ops)
        for scope in self.scopes(3)[:8]:
            cands = self.w.owned(self.main, scope)
            stuck = [t for t in cands if t.get("state") not in op.sources and self.allowed(op, t)]
            free = [t for t in cands if t.get("state") in op.sources and self.allowed(op, t)]
            if not stuck or not free:
                continue
            bad, good = self.rng.choice(stuck), self.rng.choice(free)
            voice = self.speaker(scope)
            scope_find, named = self.find_scope(voice, scope)
            said = self.describe(bad, cands, named)
            if said is None:
                continue
            find = self.reach(scope_find, bad, said)
            ok, _ = self.w.attempt(find, {"name": op.name, "arguments": {self.main.key.name: bad[self.main.key.name]}})
            if ok:
                continue
            first_body = voice.ask(verb_phrase(op).format(record=said.words, value=""))
            first = sentence(voice.opener(), first_body)
            said_good = self.describe(good, cands, named)
            if said_good is None:
                continue
            other, reads = said_good.words, [c for c in self.reach([], good, said_good) if c not in find]
            opener = self.rng.choice(["I see.", "Oh, okay.", "Fair enough.", "Ah, that's a shame.", "Understood.",
                                      "Hm, I didn't know that.", "Right, makes sense.", "Okay then."])
            ask = self.rng.choice([f"In that case please do it for {other} instead.",
                                   f"Then {verb_phrase(op).format(record=other, value='')} instead, please.",
                                   f"What about {other}? Please go ahead with that one.",
                                   f"Could you do {other} instead?",
                                   f"Let's do {other} then.",
                                   f"Can we at least do it for {other}?"])
            second_say = f"{opener} {ask}"
            call = {"name": op.name, "arguments": {self.main.key.name: good[self.main.key.name]}}
            turns = [DraftTurn(first, find, kind="refuse", body=first_body)]
            if self.confirm(op):
                turns += [DraftTurn(second_say, reads, kind="ask", forbid=[op.name]), DraftTurn(voice.yes(), [call])]
            else:
                turns.append(DraftTurn(second_say, [*reads, call]))
            return Draft("read_then_write", f"refuse_{op.name}"[:40], turns, hops=said_good.hops + 1,
                         choose=said.choose or said_good.choose, rules=self.confirm_rules(op), scope=scope["id"])
        return None

    def missing_identity(self) -> Draft | None:
        """A change asked for without saying who is asking: the agent asks, then the user answers."""
        if self.operator or self.scope_ent is None or self.person is not self.scope_ent:
            return None
        return self.write_goal(missing=True)

    def add_line(self) -> Draft | None:
        children = self.world.children(self.main)
        for child in children:
            create = self.w.tool("create", child)
            cat = next((r for r in child.refs if not r.owner), None)
            if create is None or cat is None:
                continue
            search = self.w.tool("search", cat.entity)
            title = next((f for f in cat.entity.fields if f.kind == "title"), None)
            if search is None or title is None:
                continue
            things = [t for t in self.w.rows(cat.entity)
                      if sum(1 for x in self.w.rows(cat.entity) if x[title.name] == t[title.name]) == 1]
            self.rng.shuffle(things)
            for scope in self.scopes()[:5]:
                cands = self.w.owned(self.main, scope)
                targets = [t for t in cands if t.get("state") == (self.main.states[0] if self.main.states else None)]
                if not targets or not things:
                    continue
                target = self.rng.choice(targets)
                thing = things[0]
                voice = self.speaker(scope)
                find, named = self.find_scope(voice, scope)
                said = self.describe(target, cands, named)
                if said is not None and str(thing[title.name]) in said.words:  # not "add X to my order with the X"
                    said = Said(f"{self.main.human} {target[self.main.key.name]}", 0, False, [])
                if said is None:
                    continue
                qty = self.rng.randint(1, 3)
                args = {child.parent.param: target[self.main.key.name],  # type: ignore[union-attr]
                        cat.param: thing[cat.entity.key.name]}
                for fname in create.fields:
                    f = child.field(fname)
                    if f is not None and f.kind == "quantity":
                        args[fname] = qty
                look = {"name": search.name, "arguments": {"query": thing[title.name]}}
                call = {"name": create.name, "arguments": args}
                reads = self.reach(find, target, said)
                ok, _ = self.w.attempt([*reads, look], call)
                if not ok:
                    continue
                # a count as a person says it ("two of the Oak Desk Lamp"), never "order 2 x ..." (a row id to a reader)
                things_said = f"{_COUNT_WORDS.get(qty, str(qty))} of the {thing[title.name]}" if qty > 1 \
                    else f"the {thing[title.name]}"
                # the create's own words when it has them ("redeem {value} with {record}"), else "add ... to ..."
                goal = (create.phrase.format(record=said.words, value=things_said) if create.phrase else
                        f"add {things_said} to {said.words}")
                body = voice.ask(goal, voice.reason(create))
                text = sentence(voice.opener(), body)
                return Draft("read_then_write", f"add_{child.name}"[:40],
                             [DraftTurn(text, [*reads, look, call], body=body)], hops=2, choose=said.choose,
                             scope=scope["id"], voice=voice)
        return None

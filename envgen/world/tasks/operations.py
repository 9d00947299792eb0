"""Task families for the operations a document contributes: take the next, add to a container, hold and free,
move, count and transfer.

Role: a mixin of :class:`~envgen.world.tasks.families.Families` (on :class:`~envgen.world.tasks.targets.Targets`).
The AST world writer grafts a document's own operations onto a domain (a queue's ``put`` and ``get``, a lock's
``acquire`` and ``release``); these families make sure the tasks use them, including the guards the code raises:

* :meth:`take_next`: "the printer is free, start the next job" (``take``; the answer says which one);
* :meth:`take_empty`: the same on a container with nothing waiting: the tool refuses with the document's own
  message (``Empty: ...``), then the staff member names one that has work;
* :meth:`add_to_container`: a new record in a named container for a named person (``create``); when the
  container is full the tool refuses with the document's message (``Full: ...``) and the user picks another;
* :meth:`hold_resource` / :meth:`free_resource`: ``acquire`` for the speaker (or a named person), ``release``;
* :meth:`move_record`: a record moved to another container (``move``, refused when the other is full);
* :meth:`count_question`: how many records of a state a container holds (``count``);
* :meth:`transfer_amount`: an amount moved between two of the speaker's records (``transfer``).

Each but the transfer asks in the operation's ``phrase`` when the blueprint gives one ("unassign ticket TCK-1",
"unload the last shipment from trailer TRL-4", "charge report EXP-1 to cost center CC-2 instead"), else in
general words; each returns ``None`` when the world has no such operation or no rows that allow it.
"""

from __future__ import annotations

from typing import Any

from envgen.world.model import Entity, Op, Ref, in_state, with_value
from envgen.world.phrase import Voice, sentence
from envgen.world.tasks.base import Call, Draft, DraftTurn, Row, number_answers
from envgen.world.tasks.targets import Targets

__all__ = ["Operations"]


class Operations(Targets):
    """The document-operation families (a mixin: see the module docstring)."""

    # -- shared ---------------------------------------------------------------------------------------
    def _op(self, kind: str, ent: Entity | None = None) -> Op | None:
        ops = [o for o in self.world.ops_of(kind, ent) if ent is not None or o.entity in self.part_entities()]
        return self.rng.choice(ops) if ops else None

    def _person_ref(self, ent: Entity) -> Ref | None:
        return next((r for r in ent.refs if not r.owner and self.person is not None and r.entity is self.person),
                    None)

    def _named_person(self, who: Row, ent: Entity | None = None) -> tuple[str, list[Call]] | None:
        """A person (a row of ``ent``, the world's person by default) named by their name (unique), with the
        search that finds their key."""
        p = ent or self.person
        if p is None:
            return None
        name = next((f.name for f in p.fields if f.kind == "person_name"), None)
        search = next((o for o in self.world.ops_of("search", p) if o.by is None), None)
        if name is None or search is None or sum(1 for r in self.w.rows(p) if r[name] == who[name]) != 1:
            return None
        return str(who[name]), [{"name": search.name, "arguments": {"query": who[name]}}]

    def _staff(self) -> Voice:
        return self.w.voice(None)

    def _waiting(self, op: Op, container: Row, state: str) -> list[Row]:
        par = op.entity.parent
        assert par is not None
        return [r for r in self.w.rows(op.entity) if r[par.column] == container["id"] and r.get("state") == state]

    # -- take -----------------------------------------------------------------------------------------
    def _take(self) -> tuple[Op, Ref, str, list[Row], list[Row]] | None:
        """A take operation, its container reference, the state it takes from, and the containers with records
        waiting in that state and those with none (None without a take)."""
        op = self._op("take")
        if op is None or op.entity.parent is None or op.target is None:
            return None
        par = op.entity.parent
        src = op.sources[0] if op.sources else op.entity.states[0]
        busy: list[Row] = []
        idle: list[Row] = []
        for c in self.w.rows(par.entity):
            (busy if self._waiting(op, c, src) else idle).append(c)
        return op, par, src, busy, idle

    def take_next(self) -> Draft | None:
        found = self._take()
        if found is None or not found[3]:
            return None
        op, par, src, busy, _ = found
        c = self.rng.choice(busy)
        waiting = sorted(self._waiting(op, c, src), key=lambda r: r["id"])
        taken = waiting[0] if op.order == "first" else waiting[-1]
        voice = self._staff()
        where = par.entity.named(c[par.entity.key.name])
        goal = op.phrase.format(record=where, value="") if op.phrase else self.rng.choice(
            [f"start the next {in_state(src, op.entity.human)} for {where}",
             f"take the next {op.entity.human} waiting at {where}",
             f"pull the next {op.entity.human} off the queue of {where}"])
        tail = self.rng.choice([" and tell me which one it is", " and tell me which one comes up",
                                " and let me know its number"])
        body = voice.ask(goal + tail)
        call = {"name": op.name, "arguments": {par.param: c[par.entity.key.name]}}
        return Draft("execute", f"take_{op.name}"[:40],
                     [DraftTurn(sentence(voice.opener(), body), [call], answers=[[str(taken[op.entity.key.name])]],
                                body=body)], staff=True, voice=voice)

    def take_empty(self) -> Draft | None:
        found = self._take()
        if found is None or not found[3] or not found[4]:
            return None
        op, par, _, busy, empty = found
        e, b = self.rng.choice(empty), self.rng.choice(busy)
        voice = self._staff()
        empty_one = par.entity.named(e[par.entity.key.name])
        first = sentence(voice.opener(), voice.ask(op.phrase.format(record=empty_one, value="") if op.phrase else
                                                   f"take the next {op.entity.human} from {empty_one}"))
        second = self.rng.choice([f"Oh, nothing there? Then take the next one from {b[par.entity.key.name]}.",
                                  f"Hm. Try {par.entity.named(b[par.entity.key.name])} instead, please.",
                                  f"Okay, then the next one from {b[par.entity.key.name]}."])
        call = {"name": op.name, "arguments": {par.param: b[par.entity.key.name]}}
        return Draft("read_then_write", f"take_empty_{op.name}"[:40],
                     [DraftTurn(first, [], kind="refuse"), DraftTurn(second, [call])])

    # -- add to a container ---------------------------------------------------------------------------
    def _create_args(self, op: Op, container: Row, who: Row | None) -> dict[str, Any] | None:
        ent = op.entity
        par = ent.parent
        assert par is not None
        args: dict[str, Any] = {par.param: container[par.entity.key.name]}
        for ref in ent.refs:
            if ref is par:
                continue
            if self.person is not None and ref.entity is self.person and who is not None:
                args[ref.param] = who[self.person.key.name]
            elif not ref.nullable:
                return None
        if ent.key.kind != "code":
            return None
        for name in op.fields:
            f = ent.field(name)
            if f is None:
                return None
            v = f.semantic.draw(self.pools, {"field": f, "row": {}, "prefix": ent.prefix})
            args[name] = v / 100 if f.kind == "money" else (bool(v) if f.sqltype == "BOOLEAN" else v)
        return args

    def _said_fields(self, op: Op, args: dict[str, Any]) -> str:
        parts = []
        for name in op.fields:
            f = op.entity.field(name)
            if f is not None:
                v = args[name] * 100 if f.kind == "money" else args[name]
                parts.append(with_value(f.name, f.semantic.say(v, self.world.currency)))
        return (" with " + " and ".join(parts)) if parts else ""

    def add_to_container(self) -> Draft | None:
        op = next((o for o in self.world.ops_of("create") if o.entity.parent is not None and
                   o.entity.parent.entity.role == "container" and o.entity in self.part_entities()), None)
        if op is None:
            return None
        ent, par = op.entity, op.entity.parent
        assert par is not None
        cap = par.entity.capacity
        rows = self.w.rows(par.entity)
        active = set(ent.active_states) if ent.states else None

        def held(c: Row) -> int:
            return sum(1 for r in self.w.rows(ent) if r[par.column] == c["id"]
                       and (active is None or r.get("state") in active))

        room = [c for c in rows if cap is None or held(c) < c[cap]]
        full = [c for c in rows if cap is not None and held(c) >= c[cap]]
        if not room:
            return None
        pref = self._person_ref(ent)
        who = self.rng.choice(self.w.rows(self.person)) if pref is not None and self.person is not None else None
        named: tuple[str, list[Call]] | None = self._named_person(who) if who is not None else None
        if pref is not None and named is None:
            return None
        to = self.rng.choice(room)
        args = self._create_args(op, to, who)
        if args is None:
            return None
        call = {"name": op.name, "arguments": args}
        looks = named[1] if named is not None else []
        ok, _ = self.w.attempt(looks, call)
        if not ok:
            return None
        voice = self._staff() if self.operator or named is not None else self.w.voice(None)
        for_whom = f" for {named[0]}" if named is not None else ""
        thing = f"a new {ent.human}{for_whom}{self._said_fields(op, args)}"
        if full and self.rng.random() < 0.5:  # the document's capacity guard, then the allowed path
            f = self.rng.choice(full)
            first = sentence(voice.opener(), voice.ask(f"add {thing} to {par.entity.named(f[par.entity.key.name])}"))
            second = self.rng.choice([f"It's full? Then put it on {to[par.entity.key.name]}.",
                                      f"Okay, use {par.entity.named(to[par.entity.key.name])} instead.",
                                      f"Fine - {to[par.entity.key.name]} then, please."])
            return Draft("read_then_write", f"full_{op.name}"[:40],
                         [DraftTurn(first, looks, kind="refuse"), DraftTurn(second, [call])], hops=1)
        body = voice.ask(f"add {thing} to {par.entity.named(to[par.entity.key.name])}")
        return Draft("execute", f"add_{op.name}"[:40], [DraftTurn(sentence(voice.opener(), body), [*looks, call],
                                                                   body=body)], hops=1, staff=voice.operator,
                     voice=voice)

    # -- hold and free --------------------------------------------------------------------------------
    def _holder(self, op: Op) -> Ref | None:
        return next((r for r in op.entity.refs if r.name == op.holder), None)

    def hold_resource(self) -> Draft | None:
        op = self._op("acquire")
        hold = self._holder(op) if op is not None else None
        if op is None or hold is None:
            return None
        free = [r for r in self.w.rows(op.entity) if r[hold.column] is None]
        people = self.w.rows(hold.entity)
        if not free or not people:
            return None
        res, who = self.rng.choice(free), self.rng.choice(people)
        key = res[op.entity.key.name]
        args = {op.entity.key.name: key, hold.param: who[hold.entity.key.name]}
        call = {"name": op.name, "arguments": args}
        if not self.operator and self.person is hold.entity:
            voice = self.w.voice(who, self.person)
            looks = self.locate(voice, who)
            goal = op.phrase.format(record=op.entity.named(key), value="me") if op.phrase else self.rng.choice(
                [f"take {op.entity.named(key)} for myself", f"check out {op.entity.named(key)}",
                 f"reserve {op.entity.named(key)} under my name"])
        else:
            named = self._named_person(who, hold.entity)
            if named is None:
                return None
            voice, looks = self._staff(), named[1]
            goal = op.phrase.format(record=op.entity.named(key), value=named[0]) if op.phrase else self.rng.choice(
                [f"assign {op.entity.named(key)} to {named[0]}", f"check {op.entity.named(key)} out to {named[0]}"])
        ok, _ = self.w.attempt(looks, call)
        if not ok:
            return None
        body = voice.ask(goal, voice.reason(op))
        return Draft("execute", f"hold_{op.name}"[:40], [DraftTurn(sentence(voice.opener(), body), [*looks, call],
                                                                    body=body)], hops=1, staff=voice.operator,
                     voice=voice)

    def free_resource(self) -> Draft | None:
        op = self._op("release")
        hold = self._holder(op) if op is not None else None
        if op is None or hold is None:
            return None
        held = [r for r in self.w.rows(op.entity) if r[hold.column] is not None]
        if not held:
            return None
        res = self.rng.choice(held)
        key = res[op.entity.key.name]
        call = {"name": op.name, "arguments": {op.entity.key.name: key}}
        who = self.w.row(hold.entity, res[hold.column])
        if not self.operator and self.person is hold.entity and who is not None:
            voice = self.w.voice(who, self.person)
            goal = self.rng.choice([f"return {op.entity.named(key)}", f"hand back {op.entity.named(key)}",
                                    f"release {op.entity.named(key)}, I'm done with it"])
        else:
            voice = self._staff()
            goal = self.rng.choice([f"free {op.entity.named(key)}", f"release {op.entity.named(key)}"])
        if op.phrase:
            goal = op.phrase.format(record=op.entity.named(key), value="")
        body = voice.ask(goal, voice.reason(op))
        return Draft("execute", f"free_{op.name}"[:40], [DraftTurn(sentence(voice.opener(), body), [call], body=body)],
                     staff=voice.operator, voice=voice)

    # -- move, count, transfer ------------------------------------------------------------------------
    def move_record(self) -> Draft | None:
        op = self._op("move")
        if op is None or op.entity.parent is None:
            return None
        par = op.entity.parent
        rows = [r for r in self.w.rows(op.entity) if not op.entity.final or r.get("state") not in op.entity.final]
        others = self.w.rows(par.entity)
        self.rng.shuffle(rows)
        for rec in rows[:6]:
            dest = [c for c in others if c["id"] != rec[par.column]]
            if not dest:
                continue
            to = self.rng.choice(dest)
            call = {"name": op.name, "arguments": {op.entity.key.name: rec[op.entity.key.name],
                                                   f"to_{par.param}": to[par.entity.key.name]}}
            ok, _ = self.w.attempt([], call)
            if not ok:
                continue
            voice = self._staff() if self.operator else self.w.voice(None)
            moved, into = op.entity.named(rec[op.entity.key.name]), par.entity.named(to[par.entity.key.name])
            goal = op.phrase.format(record=moved, value=into) if op.phrase else \
                self.rng.choice([f"move {moved} to {into}", f"put {moved} under {into} instead"])
            body = voice.ask(goal, voice.reason(op))
            return Draft("execute", f"move_{op.name}"[:40], [DraftTurn(sentence(voice.opener(), body), [call],
                                                                        body=body)], staff=voice.operator, voice=voice)
        return None

    def count_question(self) -> Draft | None:
        op = self._op("count")
        if op is None or op.entity.parent is None:
            return None
        par = op.entity.parent
        state = op.sources[0] if op.sources else None
        c = self.rng.choice(self.w.rows(par.entity))
        n = sum(1 for r in self.w.rows(op.entity) if r[par.column] == c["id"]
                and (state is None or r.get("state") == state))
        if n < 2:
            return None
        args: dict[str, Any] = {par.param: c[par.entity.key.name]}
        if state is not None and op.entity.states:
            args["state"] = state
        what = in_state(state, op.entity.humans) if state else op.entity.humans
        voice = self._staff() if self.operator else self.w.voice(None)
        body = voice.question(f"how many {what} {par.entity.named(c[par.entity.key.name])} has right now")
        return Draft("read", f"count_{op.name}"[:40], [DraftTurn(sentence(voice.opener(), body),
                                                                  [{"name": op.name, "arguments": args}], kind="read",
                                                                  answers=[number_answers(n)], body=body)],
                     staff=voice.operator, voice=voice)

    def transfer_amount(self) -> Draft | None:
        op = self._op("transfer")
        if op is None or not op.fields:
            return None
        ent = op.entity
        f = ent.field(op.fields[0])
        par = ent.parent
        if f is None:
            return None
        owners = [s for s in (self.w.rows(par.entity) if par is not None else [])
                  if len([r for r in self.w.rows(ent) if r[par.column] == s["id"]]) >= 2] if par else []
        if not owners:
            return None
        owner = self.rng.choice(owners)
        mine = [r for r in self.w.rows(ent) if par is not None and r[par.column] == owner["id"]]
        src, dst = self.rng.sample(mine, 2)
        have = int(src[f.name])
        if have <= 100:
            return None
        amount = max(1, have // 4) if f.kind != "money" else max(100, (have // 4) // 100 * 100)
        key = ent.key.name
        args = {f"from_{key}": src[key], f"to_{key}": dst[key], "amount": amount / 100 if f.kind == "money" else amount}
        call = {"name": op.name, "arguments": args}
        ok, _ = self.w.attempt([], call)
        if not ok:
            return None
        voice = self.speaker(owner) if self.scope_ent is not None and par is not None and \
            par.entity is self.scope_ent else self._staff()
        said = f.semantic.say(amount, self.world.currency)
        goal = f"move {said} of {f.human} from {ent.named(src[key])} to {ent.named(dst[key])}"
        body = voice.ask(goal, voice.reason(op))
        return Draft("execute", f"transfer_{op.name}"[:40], [DraftTurn(sentence(voice.opener(), body), [call],
                                                                        body=body)], rules=self.confirm_rules(op),
                     staff=voice.operator, voice=voice, scope=owner["id"] if not voice.operator else None)

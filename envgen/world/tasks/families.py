"""Task families: what a person asks a service for, and the trajectory a careful agent takes.

Role: each method of :class:`Families` writes one :class:`~envgen.world.tasks.base.Draft` or ``None``
(when the world or the draw does not allow it). Scopes and targets (the record a conversation is about, and
the one of its records a request acts on) come from :mod:`.targets`; every family that acts on a target takes
it from the one search, :meth:`~envgen.world.tasks.targets.Targets.targets`.

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

from typing import Any

from envgen.world.model import Op, in_state
from envgen.world.phrase import sentence, verb_phrase
from envgen.world.tasks.base import Draft, DraftTurn, money_answers, number_answers
from envgen.world.tasks.catalog import Catalog
from envgen.world.tasks.operations import Operations
from envgen.world.tasks.targets import CHANGES, Said
from envgen.world.tasks.withheld import Withheld

__all__ = ["Families"]

_GOAL_TRIES = 3
"""Operations :meth:`Families.write_goal` tries before it gives up on a scope (each search runs the tool)."""

_COUNT_WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}


class Families(Operations, Catalog, Withheld):
    """The task families over one world (see the module docstring; the scope and target helpers are
    :class:`~envgen.world.tasks.targets.Targets`)."""

    # -- families -------------------------------------------------------------------------------------
    def write_goal(self, missing: bool = False) -> Draft | None:
        """A change to one of the scope's main records; the change is drawn from the main entity's operations, and
        when none of the scope's records allows the one drawn (a replacement only of a delivered order, a gift wrap
        only of one not yet wrapped) the next is tried, up to :data:`_GOAL_TRIES`."""
        ops = [o for o in self.world.ops if o.entity is self.main and o.kind in CHANGES]
        for op in self.rng.sample(ops, k=len(ops))[:_GOAL_TRIES]:
            draft = self._write_goal(op, missing)
            if draft is not None:
                return draft
        return None

    def _write_goal(self, op: Op, missing: bool) -> Draft | None:
        for t, call in self.doable(op):
            voice, said = t.voice, t.said
            looks = self.reach(t.find, t.row, said)
            goal = verb_phrase(op).format(record=said.words, value=t.value)
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
                              DraftTurn(answer, [*looks, call])], hops=said.hops + 1, choose=said.choose,
                             rules=self.rules("verify"))
            if self.confirm(op):
                turns = [DraftTurn(request, looks, kind="ask", forbid=[op.name], body=body),
                         DraftTurn(voice.yes(), [call])]
            else:
                turns = [DraftTurn(request, [*looks, call], body=body)]
            return Draft("read_then_write", f"{op.kind}_{op.name}"[:40], turns, hops=said.hops + 1,
                         choose=said.choose, rules=self.confirm_rules(op), scope=t.scope["id"], voice=voice)
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
                options.append((f"how many {in_state(state, m.humans)} {mine}{where}", [number_answers(n)],
                                self.in_state(find, state), True, False))
            total = self.total_of(self.rng.choice(cands))
            if total is not None:
                target, cents = total
                said = self.describe(target, cands, named)
                reads = self.reach(find, target, said)
                reads += [c for c in self.details(target) if c not in reads]
                options.append((f"what the total of {said.words} comes to",
                                [money_answers(cents, self.world.currency)], reads, said.choose, True))
            if not options:
                continue
            question, answers, calls, choose, sums = self.rng.choice(options)
            body = voice.question(question)
            text = sentence(voice.opener(), body)
            return Draft("read", "read_question", [DraftTurn(text, calls, kind="read", answers=answers, body=body,
                                                             sums=sums)],
                         hops=1, choose=choose, scope=scope["id"], voice=voice)
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
        for t in self.targets(op, lambda r: r.get("state") in rule.states, scopes=8, each=3):
            find = self.reach(t.find, t.row, t.said)
            ok, _ = self.w.attempt(find, {"name": op.name, "arguments": t.args})
            if not ok:  # the tool refuses it too: not a rule only the policy enforces
                continue
            goal = verb_phrase(op).format(record=t.said.words, value=t.value)
            body = t.voice.ask(goal, t.voice.reason(op))
            text = sentence(t.voice.opener(), body)
            return Draft("decline", f"policy_state_{op.name}"[:40],
                         [DraftTurn(text, find, kind="refuse", forbid=[op.name], body=body)], rules=[rule],
                         hops=t.said.hops, choose=t.said.choose, scope=t.scope["id"])
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
            words = self.main.named(target[self.main.key.name])
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
            words = op.entity.named(target[op.entity.key.name])
            owner = None
        else:
            t = next(self.targets(None, lambda r: True, scopes=1, each=1), None)
            if t is None:
                return None
            voice, target, words, owner = t.voice, t.row, t.said.words, t.scope["id"]
            find = self.reach(t.find, target, t.said)
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
        for t in self.targets(op, lambda r: r.get("state") not in op.sources and self.allowed(op, r), least=3,
                              scopes=8, each=1):
            free = [r for r in t.cands if r.get("state") in op.sources and self.allowed(op, r)]
            if not free:
                continue
            voice, said = t.voice, t.said
            find = self.reach(t.find, t.row, said)
            ok, _ = self.w.attempt(find, {"name": op.name, "arguments": t.args})
            if ok:
                continue
            first_body = voice.ask(verb_phrase(op).format(record=said.words, value=""))
            first = sentence(voice.opener(), first_body)
            good = self.rng.choice(free)
            said_good = self.describe(good, t.cands, t.named)
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
                         choose=said.choose or said_good.choose, rules=self.confirm_rules(op), scope=t.scope["id"])
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
            if not things:
                continue
            self.rng.shuffle(things)
            thing = things[0]
            for t in self.targets(None, self.fresh, scopes=5, each=1):
                target, voice, said = t.row, t.voice, t.said
                if str(thing[title.name]) in said.words:  # not "add X to my order with the X"
                    said = Said(self.main.named(target[self.main.key.name]), 0, False, [])
                qty = self.rng.randint(1, 3)
                args = {child.parent.param: target[self.main.key.name],  # type: ignore[union-attr]
                        cat.param: thing[cat.entity.key.name]}
                for fname in create.fields:
                    f = child.field(fname)
                    if f is not None and f.kind == "quantity":
                        args[fname] = qty
                look = {"name": search.name, "arguments": {"query": thing[title.name]}}
                call = {"name": create.name, "arguments": args}
                reads = self.reach(t.find, target, said)
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
                             scope=t.scope["id"], voice=voice)
        return None

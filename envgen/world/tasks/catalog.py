"""Task families over the catalog and the speaker's own account: filter and choose, follow up, adjust.

Role: a mixin of :class:`~envgen.world.tasks.families.Families` (its targets come from
:meth:`~envgen.world.tasks.targets.Targets.targets`):

* :meth:`catalog_choice`: a question that needs a search, a filter and a choice (the cheapest available thing
  of a kind, named by a title no other title contains, with its price);
* :meth:`catalog_goal`: a change that needs a choice in the catalog (add the cheapest thing of a kind to a
  record the user names);
* :meth:`followup`: a change, then a question about the same record ("and what does it come to?");
* :meth:`account_adjust`: a change to the speaker's own account within the policy's limit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from envgen.world.model import Entity, Op
from envgen.world.phrase import sentence, verb_phrase
from envgen.world.tasks.base import Call, Draft, DraftTurn, Row, money_answers
from envgen.world.tasks.targets import Targets

__all__ = ["Catalog", "Choice"]


class Choice(NamedTuple):
    """The cheapest available thing of a kind in the catalog (:meth:`Catalog._choice`)."""

    ent: Entity  #: the catalog entity
    title: Any  #: its title field
    price: Any  #: its price field
    kind: str  #: the kind (the category field's value)
    best: Row  #: the one cheapest available thing of that kind
    look: Call  #: the search that lists the available things of that kind


class Catalog(Targets):
    """The catalog and account families (a mixin: see the module docstring)."""

    if TYPE_CHECKING:  # a family of Families that :meth:`followup` builds on
        def write_goal(self, missing: bool = False) -> Draft | None: ...

    # -- the catalog: filter and choose ---------------------------------------------------------------
    def _catalog(self) -> tuple[Entity, Op, Any, Any, Any] | None:
        """A catalog entity with a search tool, its title, price and category fields (None when missing)."""
        for ent in self.world.entities:
            if ent.role != "catalog" or (self.person is not None and ent not in self.part_entities()):
                continue
            search = next((o for o in self.world.ops_of("search", ent) if o.by is None), None)
            title = next((f for f in ent.fields if f.kind == "title"), None)
            price = next((f for f in ent.fields if f.kind == "money"), None)
            cat = next((f for f in ent.fields if f.enum and f.sqltype == "TEXT"), None)
            if search is not None and title is not None and price is not None and cat is not None:
                return ent, search, title, price, cat
        return None

    def _cheapest(self, ent: Entity, title: Any, price: Any, cat: Any) -> tuple[str, Row] | None:
        """A category and its cheapest available thing, when exactly one is cheapest."""
        rows = [r for r in self.w.rows(ent) if not ent.states or r.get("state") == ent.states[0]]
        cats = sorted({r[cat.name] for r in rows})
        self.rng.shuffle(cats)
        for c in cats:
            mine = [r for r in rows if r[cat.name] == c]
            if len(mine) < 3:
                continue
            low = min(r[price.name] for r in mine)
            best = [r for r in mine if r[price.name] == low]
            name = str(best[0][title.name]).lower()
            rivals = [r for r in self.w.rows(ent) if r is not best[0] and name in str(r[title.name]).lower()]
            if len(best) == 1 and not rivals:  # a title no other title contains: the answer names one thing
                return c, best[0]
        return None

    def _choice(self) -> Choice | None:
        """The cheapest available thing of a kind, with the search that lists that kind (None when the world has
        no such catalog or no kind with one cheapest thing)."""
        found = self._catalog()
        if found is None:
            return None
        ent, search, title, price, cat = found
        pick = self._cheapest(ent, title, price, cat)
        if pick is None:
            return None
        kind, best = pick
        args: dict[str, Any] = {cat.name: kind}
        if ent.states:
            args["state"] = ent.states[0]
        return Choice(ent, title, price, kind, best, {"name": search.name, "arguments": args})

    def catalog_choice(self) -> Draft | None:
        """A question that needs a search, a filter and a choice: the cheapest available thing of a kind."""
        ch = self._choice()
        if ch is None:
            return None
        ent, c, best = ch.ent, ch.kind, ch.best
        scopes = self.scopes(1)
        voice = self.speaker(scopes[0]) if scopes else self.w.voice(None)
        question = self.rng.choice([
            f"which {c} {ent.human} is the cheapest one you have right now, and what does it cost",
            f"what the least expensive {c} {ent.human} is at the moment",
            f"which of your {c} {ent.humans} costs the least today"])
        text = sentence(voice.opener(identify=False), voice.question(question))
        answers = [[str(best[ch.title.name])], money_answers(int(best[ch.price.name]), self.world.currency)]
        return Draft("read", "catalog_choice", [DraftTurn(text, [ch.look], kind="read", answers=answers)], hops=1,
                     choose=True)

    def catalog_goal(self) -> Draft | None:
        """A change that needs a choice in the catalog: add the cheapest thing of a kind to a named record."""
        ch = self._choice()
        if ch is None:
            return None
        ent, c, best, look = ch.ent, ch.kind, ch.best, ch.look
        child = next((c for c in self.world.children(self.main)
                      if any(r.entity is ent and not r.owner for r in c.refs)), None)
        create = self.w.tool("create", child) if child is not None else None
        if child is None or create is None:
            return None
        ref = next(r for r in child.refs if r.entity is ent)
        for t in self.targets(None, self.fresh, scopes=5, each=1):
            target, voice, find, said = t.row, t.voice, t.find, t.said
            args: dict[str, Any] = {child.parent.param: target[self.main.key.name],  # type: ignore[union-attr]
                                    ref.param: best[ent.key.name]}
            for fname in create.fields:
                f = child.field(fname)
                if f is not None and f.kind == "quantity":
                    args[fname] = 1
            call = {"name": create.name, "arguments": args}
            ok, _ = self.w.attempt([*find, look], call)
            if not ok:
                continue
            goal = self.rng.choice([f"add the cheapest {c} {ent.human} you have to {said.words}",
                                    f"put your least expensive {c} {ent.human} on {said.words}",
                                    f"add one {c} {ent.human}, whichever costs least, to {said.words}"])
            body = voice.ask(goal, voice.reason(create))
            return Draft("read_then_write", f"catalog_{create.name}"[:40],
                         [DraftTurn(sentence(voice.opener(), body), [*find, look, call], body=body)], hops=2,
                         choose=True, scope=t.scope["id"], voice=voice)
        return None

    def followup(self) -> Draft | None:
        """A change, then a question about the same record ("and what does it come to?")."""
        base = self.write_goal()
        if base is None or len(base.turns) != 1 or base.turns[0].kind != "write":
            return None
        call = base.turns[0].calls[-1]
        key = call["arguments"].get(self.main.key.name)
        target = next((r for r in self.w.rows(self.main) if r[self.main.key.name] == key), None)
        total = self.total_of(target) if target is not None else None
        if total is None:
            return None
        _, cents = total
        ask = self.rng.choice(["And how much does it come to in total?", "One more thing: what is its total?",
                               "Thanks. Remind me, what was its total?", "And what did it cost me altogether?",
                               "Great. Out of curiosity, how much was that order in total?",
                               "Perfect. What's the total on it, by the way?",
                               "Thanks! Can you also tell me its total amount?",
                               "Nice. And the total for it was how much again?"])
        turn = DraftTurn(ask, self.details(target), kind="read",  # type: ignore[arg-type]
                         answers=[money_answers(cents, self.world.currency)], sums=True)
        return Draft("read_then_write", f"followup_{base.family}"[:40], [*base.turns, turn], hops=base.hops,
                     choose=base.choose, rules=base.rules)

    def account_adjust(self) -> Draft | None:
        """A change to the speaker's own account (store credit, points) within the policy's limit."""
        if self.operator or self.person is None:
            return None
        ops = [o for o in self.world.ops_of("adjust", self.person)]
        look = self.w.tool("lookup", self.person)
        if not ops or look is None:
            return None
        op = self.rng.choice(ops)
        person = self.rng.choice(self.w.rows(self.person))
        acted = self.act(op, person)
        if acted is None:
            return None
        args, value = acted
        voice = self.speaker(person) if self.scope_ent is self.person else self.w.voice(person, self.person)
        found = self.locate(voice, person) if self.scope_ent is self.person else []
        goal = verb_phrase(op).format(record="my account", value=value)
        body = voice.ask(goal, voice.reason(op))
        calls = [*found, {"name": look.name, "arguments": {self.person.key.name: person[self.person.key.name]}},
                 {"name": op.name, "arguments": args}]
        return Draft("read_then_write", f"account_{op.name}"[:40], [DraftTurn(sentence(voice.opener(), body), calls,
                                                                                body=body)], hops=1,
                     scope=person["id"] if self.scope_ent is self.person else None, voice=voice)

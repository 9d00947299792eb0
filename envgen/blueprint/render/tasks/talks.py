"""Longer conversations: 3-5 turns in which later turns refer back and depend on earlier state.

Role: shapes whose turns are tied together by the conversation, each turn with
its own checks.

* **talk_list** (``read_then_write``): how many records a parent record (or a
  status) has, then act on "the second one" and "the last one" of that list.
* **talk_refer** (``read_then_write``): ask about a record, change "it", do
  "the same for" another record, "undo that".
* **create_talk** (``execute``): create a record, then change "it" and ask
  about it.
* **missing_deep** (``missing_parameter``): a request that lacks a value (the
  right move is to ask; the write tools are forbidden and nothing changes),
  the value, then "the same for" another record.
* **decline_deep** (``decline``): a change, a request no tool can serve (say
  so and change nothing), then another change.
"""

from __future__ import annotations

from envgen.blueprint.render.model import Column, Entity
from envgen.blueprint.render.tasks.base import DECLINE_WORDS, ORDINALS, Row, Task, Turn, call, say
from envgen.blueprint.render.tasks.rules import Rules

__all__ = ["Talks"]


class Talks(Rules):
    """The conversation shapes."""

    def listed(self) -> tuple[list[Row], str, list[dict[str, object]]] | None:
        """A list the conversation refers back to: the main records of a parent record looked up by key, or
        those with one status; ``(rows in id order, how the user names the list, the calls that list it)``."""
        ent = self.main
        listing = self.model.op("list", ent)
        if listing is None:
            return None
        if ent.parent is not None:
            holder = self.pick(ent.parent, lambda p: len(self.held(ent, p)) >= 3)
            look = self.lookup(ent.parent, holder) if holder is not None else None
            if holder is None or look is None:
                return None
            name = self.by_name(holder, ent.parent)
            return self.held(ent, holder), name, [look, call(listing, **{ent.parent.id_param: holder["id"]})]
        if ent.status:
            states = [s for s in ent.status if len([r for r in self.rows(ent) if r["status"] == s]) >= 3]
            if not states:
                return None
            state = self.rng.choice(states)
            rows = [r for r in self.rows(ent) if r["status"] == state]
            return rows, f"'{state}'", [call(listing, status=state)]
        return None

    def talk_list(self) -> Task | None:
        got = self.listed()
        ops = [o for o in self.write_ops(self.main, ("update", "status", "adjust")) if o.column is not self.main.key]
        if got is None or not ops:
            return None
        rows, name, calls = got
        ent = self.main
        n = len(rows)
        holder = self.main.parent
        if holder is not None:
            text = self.choose(f"How many {ent.humans} does {name} have?", f"Count the {ent.humans} of {name}.")
            rivals = [len(self.held(ent, p)) for p in self.rows(holder) if p["id"] != rows[0][holder.id_param]]
        else:
            text = self.choose(f"How many {ent.humans} are {name} right now?",
                               f"Count the {ent.humans} whose status is {name}.")
            rivals = [len([r for r in self.rows(ent) if r["status"] == s]) for s in ent.status or []]
            rivals = [x for x in rivals if x != n]
        if not self.distinct_answer(str(n), text, rivals):
            return None
        turns: list[Turn] = [self.answer_turn(text, str(n), str(calls[-1]["name"]), list(calls))]
        want = self.goal
        picks = [(1, ORDINALS[1]), (n - 1, "last")] + ([(0, ORDINALS[0])] if n > 3 else [])
        op = self.rng.choice(ops)
        for index, word in picks:
            if len(turns) >= want:
                break
            row = rows[index]
            if not self.allowed(op, row):
                continue
            turn = self.act(op, row, f"the {word} one")
            if turn is None:
                continue
            if len(turns) > 1:
                turn["instruction"] = turn["instruction"].rstrip(".") + self.choose(" too.", ", as well.")
            else:
                turn["instruction"] = f"In that list (by id), {turn['instruction'][0].lower()}{turn['instruction'][1:]}"
            turns.append(turn)
        return {"kind": "read_then_write", "turns": turns} if len(turns) >= 2 else None

    def talk_refer(self) -> Task | None:
        ent = self.main
        ops = [o for o in self.model.ops_of("update", ent) if o.column is not ent.key]
        if not ops or self.model.op("find", ent) is None:
            return None
        op = self.rng.choice(ops)
        c = op.column or ent.key
        row = self.pick(ent)
        other = self.pick(ent, lambda r: r is not row)
        if row is None or other is None:
            return None
        ask = self.ask_value(ent, row, c, "key") if c.sqltype != "BOOLEAN" else None
        if ask is None:
            return None
        change = self.update_turn(op, row, "it")
        change["instruction"] = self.choose(f"Change it to {say(c, row[c.name])}.",
                                            f"Please set its {c.human} to {say(c, row[c.name])}.")
        turns = [ask, change]
        want = self.goal
        again = self.same_again(op, change, other, True) if len(turns) < want else None
        if again is not None:
            turns.append(again[0])
            back = self.undo(op, other, again[1], None) if len(turns) < want else None
            turns += [back] if back is not None else []
        return {"kind": "read_then_write", "turns": turns}

    def create_talk(self) -> Task | None:
        task = self.exec_create()
        return self.create_more(task) if task is not None else None

    def create_more(self, task: Task) -> Task:
        """After a create (``task``'s turn, the main record just created): change "it", then ask about it, up to
        the task's turn goal."""
        ent = self.main
        row = self.rows(ent)[-1]
        want = self.goal
        ups = [o for o in self.model.ops_of("update", ent) if o.column is not ent.key]
        if ups and len(task["turns"]) < want:
            turn = self.update_turn(self.rng.choice(ups), row, "it", follow=True)
            turn["instruction"] = turn["instruction"].replace("Also change its", "Now change its")
            task["turns"].append(turn)
        if len(task["turns"]) < want:
            t = self.ask_after(ent, row)
            task["turns"] += [t] if t is not None else []
        return task

    # -- asking back, declining ------------------------------------------------------------------------
    def ask_back(self, text: str, tools: list[str]) -> Turn:
        return {"instruction": text, "checks": [{"kind": "calls", "forbid": tools}, *self.nothing_changed()],
                "reference": []}

    def missing_create(self) -> Task | None:
        ent, op = self.main, self.model.op("create", self.main)
        options = [c for c in ent.columns if c.required]
        if op is None or not options:
            return None
        task = self.exec_create()
        if task is None:
            return None
        row = self.rows(ent)[-1]
        gone: Column = self.rng.choice(options)
        parent = ent.parent
        holder = self.row_by_id(parent, row[parent.id_param]) if parent is not None else None
        look = self.lookup(parent, holder) if parent is not None and holder is not None else None
        phrase = f" for {self.by_name(holder, parent)}" if look is not None and parent is not None \
            and holder is not None else None
        first = self.ask_back(self.create_sentence(ent, row, skip=gone.name, parent_phrase=phrase), [op.tool])
        second = task["turns"][0]
        if look is not None:  # the holder is named by its key: its id comes from a lookup
            second["reference"].insert(0, look)
        second["instruction"] = self.choose(f"Sorry, I forgot: its {gone.human} should be {say(gone, row[gone.name])}.",
                                            f"The {gone.human} is {say(gone, row[gone.name])}.",
                                            f"Use {say(gone, row[gone.name])} as the {gone.human}.")
        turns = [first, second]
        ups = [o for o in self.model.ops_of("update", ent) if o.column is not ent.key and o.column is not gone]
        if ups and len(turns) < self.goal:
            turn = self.update_turn(self.rng.choice(ups), row, "it", follow=True)
            turn["instruction"] = turn["instruction"].replace("Also change its", "Now change its")
            turns.append(turn)
        return {"kind": "missing_parameter", "turns": turns}

    def missing_update(self) -> Task | None:
        ent = self.main
        ops = [o for o in self.model.ops_of("update", ent) if o.column is not ent.key]
        row = self.pick(ent)
        if not ops or row is None:
            return None
        op = self.rng.choice(ops)
        c = op.column or ent.key
        keyed = self.model.op("find", ent) is not None and self.rng.random() < 0.8
        name, looks = self.named(ent, row, keyed)
        first = self.ask_back(self.choose(f"Please change the {c.human} of {name}.",
                                          f"The {c.human} of {name} needs to be updated."), [op.tool])
        second = self.update_turn(op, row, name)
        second["instruction"] = self.choose(f"Make it {say(c, row[c.name])}.",
                                            f"The new {c.human} is {say(c, row[c.name])}.")
        second["reference"][:0] = looks
        turns = [first, second]
        other = self.pick(ent, lambda r: r is not row)
        if other is not None and len(turns) < self.goal:
            again = self.same_again(op, second, other, keyed)
            turns += [again[0]] if again is not None else []
        return {"kind": "missing_parameter", "turns": turns}

    def unsupported(self, ent: Entity, row: Row) -> str:
        k = row[ent.key.name]
        e, es = ent.human, ent.humans
        asks = [f"Export every {e} to a CSV file and email it to {self.maker.word()}@example.com.",
                f"Restore the {e} '{k}' from last week's backup.",
                f"Print the full list of {es} on the office printer.",
                f"Send a text message to whoever is responsible for the {e} '{k}'.",
                f"Show me the full edit history of the {e} '{k}', including who changed it and when.",
                f"Schedule the {e} '{k}' to be removed automatically next Monday at 9am."]
        if self.model.op("delete", ent) is None:
            asks.append(f"Permanently delete the {e} '{k}' and everything linked to it.")
        return self.rng.choice(asks)

    def decline_turn(self, text: str) -> Turn:
        return {"instruction": text,
                "checks": [{"kind": "unchanged", "tables": []},
                           {"kind": "calls", "forbid": list(self.model.write_tools)},
                           {"kind": "reply_contains", "any_of": list(DECLINE_WORDS)}],
                "reference": []}

    def decline(self) -> Task | None:
        row = self.pick(self.main)
        if row is None:
            return None
        return {"kind": "decline", "turns": [self.decline_turn(self.unsupported(self.main, row))]}

    def decline_deep(self) -> Task | None:
        """Changes (a transfer, a move, a decision or a lookup and an act), a request no tool serves in the
        middle, then the rest of the changes."""
        done = None
        for build in [*self.rng.sample([self.chain_transfer, self.chain_move, self.chain_decide], 3), self.chain_key]:
            self.reset()
            done = build()
            if done is not None:
                break
        if done is None:
            return None
        writes = [t for t in done["turns"] if not any(c["kind"] == "reply_contains" for c in t["checks"])]
        if not writes or writes[0] is not done["turns"][0]:
            return None
        row = self.pick(self.main)
        if row is None:
            return None
        turns = [writes[0], self.decline_turn(self.unsupported(self.main, row))]
        later = writes[1:len(done["turns"])]
        if any(t is not done["turns"][i + 1] for i, t in enumerate(later)):
            return None  # a question came between two changes: keep the changes in their order only
        turns += later[:max(1, self.goal - 2)]
        if len(turns) < 3:
            extra = self.another_change([r for _, r in self.recent])
            turns += [extra] if extra is not None else []
        return {"kind": "decline", "turns": turns}

    def another_change(self, avoid: list[Row]) -> Turn | None:
        """A change of a record the task has not touched, named by its key: "Also set the price of 'B' to 5"."""
        ent = self.main
        ops = [o for o in self.write_ops(ent, ("update", "status", "adjust")) if o.column is not ent.key]
        made = self.keyed_change(ops, lambda r: not any(r is a for a in avoid))
        if made is None:
            return None
        turn = made[3]
        turn["instruction"] = "Also: " + turn["instruction"][0].lower() + turn["instruction"][1:]
        return turn

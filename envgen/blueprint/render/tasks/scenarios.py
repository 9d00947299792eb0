"""Scenario tasks of a compiled environment: a simulated user the agent must ask before it acts (gym_envs/ENVSPEC.md,
"Conversations with a simulated user").

Role: the shapes the plan (:mod:`.plan`) writes for a share of each environment's tasks. Each is one request whose
turn the agent cannot finish from the instruction alone:

* **scenario_value** (``read_then_write``): a change of a record named by its key, without the new value ("I'd like
  to change the price of the book 'Dune'."). The value is a fact of the scenario; the reference asks for it first.
* **scenario_record** (``read_then_write``): a change of "one of the books", without saying which. The record's key
  is a fact; the reference asks for it, then looks the record up by it.
* **scenario_confirm** (``read_then_write``): a change of a record named by its key, where the user asks to approve
  it first ("Please check with me before you change anything.").
* **scenario_batch** (``execute``): the same change to several records named by id, the new value withheld or the
  batch to be approved (one approval before the first write covers the batch).
* **scenario_create** (``execute``): a new record, one of its values withheld or the creation to be approved; then
  a change of it and a question about it.
* **scenario_read** (``read``): a question about "one of the books"; the reference asks which, then reads it; more
  questions about it follow (:meth:`~.reads.Reads.more_reads`).

A change goes on as a dependent chain does (:meth:`~.chains.Chains.follow_ups`: "the same for" another record,
"undo that", a question about the result); the simulated user is asked in its first turn. A change may be withheld
*and* need approval (the value asked first, the change stated and approved right before the
write). A change to approve gets a ``confirmed`` check on its tool: writing before the user said yes fails the turn,
as guessing a withheld value or record fails its state checks. The agent's messages, the scenario and the check are
written by :mod:`envgen.scenario` (shared with the world compiler), which refuses a task whose questions the
scripted user would not answer; the shape then gives None and the plan writes the slot another way.
"""

from __future__ import annotations

from typing import Any

from envgen.blueprint.render.model import Column, Entity, Op
from envgen.blueprint.render.tasks.base import Task, article, join, say
from envgen.blueprint.render.tasks.talks import Talks
from envgen.scenario import Ask, ask_confirm, ask_record, ask_value, make_scenario_task

__all__ = ["Scenarios"]

_CONFIRM_ODDS = 0.5
"""The chance a change whose value or record is withheld must also be approved before it is made."""

_APPROVE = ("Please check with me before you change anything.", "Ask me before you make the change, please.",
            "Confirm the change with me first.")


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


class Scenarios(Talks):
    """The scenario shapes (module docstring)."""

    def scenario_builders(self) -> dict[str, list[Any]]:
        """Per task kind, the scenario shapes that write a task of that kind."""
        return {"execute": [self.scenario_batch, self.scenario_create],
                "read": [self.scenario_read],
                "read_then_write": [self.scenario_value, self.scenario_record, self.scenario_confirm]}

    # -- shapes ------------------------------------------------------------------------------------
    def scenario_value(self) -> Task | None:
        return self._change("value")

    def scenario_record(self) -> Task | None:
        return self._change("record")

    def scenario_confirm(self) -> Task | None:
        return self._change("approve")

    def scenario_batch(self) -> Task | None:
        """The same change to several records named by id (:meth:`~.writes.Writes.exec_batch`), its new value
        withheld or the batch to be approved."""
        task = self.exec_batch()
        op = self.batch_op_of(task)
        if task is None or op is None:
            return None
        first = task["turns"][0]
        writes = first["reference"]
        ent = op.entity
        subject = f"the {ent.humans} " + join([f"#{w['arguments'][ent.id_param]}" for w in writes])
        goal = f"{_capital(self._change_text(op, writes[0], subject))}."
        c = op.column
        withhold = op.kind == "update" and c is not None and c.sqltype != "BOOLEAN" and self.rng.random() < 0.5
        facts: dict[str, Any] = {}
        asks: list[Ask] = []
        text = first["instruction"]
        if withhold and c is not None:
            fact = f"new {c.human}|{c.human}"
            facts[fact] = writes[0]["arguments"][c.name]
            text = self.choose(f"The {c.human} of {subject} should all change to one new value.",
                               f"Please give {subject} the same new {c.human}.")
            asks.append(Ask(0, ask_value(self.rng, fact)))
        approve = not withhold or self.rng.random() < _CONFIRM_ODDS
        if approve:
            asks.append(Ask(0, ask_confirm(self.rng, self._change_text(op, writes[0], subject)), confirms=True))
            text = f"{text} {self.choose(*_APPROVE)}"
        return self._scenario(task, asks, facts, [op.tool] if approve else [], text, goal, approve)

    def batch_op_of(self, task: Task | None) -> Op | None:
        """The operation of a batch task's first turn (its calls are all of one tool)."""
        if task is None:
            return None
        tool = task["turns"][0]["reference"][0]["name"]
        return next((o for o in self.model.ops if o.tool == tool), None)

    def scenario_create(self) -> Task | None:
        """A new record (:meth:`~.writes.Writes.exec_create`, then :meth:`~.talks.Talks.create_more`), one of its
        values withheld or the creation to be approved."""
        ent, op = self.main, self.model.op("create", self.main)
        task = self.exec_create()
        if task is None or op is None:
            return None
        (turn,) = task["turns"]
        row = dict(self.rows(ent)[-1])  # as created (a later turn may change it)
        subject = f"the {ent.human} '{row[ent.key.name]}'"
        goal = turn["instruction"]
        options = [c for c in ent.columns if c.sqltype != "BOOLEAN"]
        gone: Column | None = self.rng.choice(options) if options and self.rng.random() < 0.5 else None
        facts: dict[str, Any] = {}
        asks: list[Ask] = []
        text = goal
        if gone is not None:
            fact = gone.human
            facts[fact] = row[gone.name]
            text = self.create_sentence(ent, row, skip=gone.name)
            asks.append(Ask(0, ask_value(self.rng, fact)))
        approve = gone is None or self.rng.random() < _CONFIRM_ODDS
        if approve:
            asks.append(Ask(0, ask_confirm(self.rng, f"add {subject}"), confirms=True))
            text = f"{text} {self.choose(*_APPROVE)}"
        task = self.create_more(task)
        return self._scenario(task, asks, facts, [op.tool] if approve else [], text, goal, approve)

    def scenario_read(self) -> Task | None:
        ent = self.main
        if self.model.op("find", ent) is None:
            return None
        cols = [c for c in self.readable(ent) if c is not ent.key]
        fact = self._key_fact(ent)
        for _ in range(6):
            row = self.pick(ent)
            if row is None or not cols:
                return None
            c = self.rng.choice(cols)
            text = self.choose(f"What's the {c.human} of one of the {ent.humans}?",
                               f"I need to know the {c.human} of {article(ent.human)}.",
                               f"Could you look up the {c.human} of {article(ent.human)} for me?")
            turn = self.ask_value(ent, row, c, "key", text=text)
            if turn is None or str(row[ent.key.name]) in text:
                continue
            others = [x for x in cols if x is not c]
            task: Task = {"kind": "read", "turns": self.more_reads(row, [turn], self.rng.sample(others, len(others)))}
            goal = f"Find out the {c.human} of the {ent.human} '{row[ent.key.name]}'."
            asks = [Ask(0, ask_record(self.rng, ent.human, fact))]
            done = self._scenario(task, asks, {fact: row[ent.key.name]}, [], text, goal, False)
            if done is not None:
                return done
        return None

    # -- one change ----------------------------------------------------------------------------------
    def _change(self, withhold: str) -> Task | None:
        """One change of a main record named by its key: ``withhold`` is ``value`` (the new value), ``record``
        (which record) or ``approve`` (nothing: the user wants to approve the change); a withheld one may need
        approval too."""
        ent = self.main
        kinds = ("update",) if withhold == "value" else ("update", "status", "adjust", "delete")
        made = self.keyed_change([o for o in self.write_ops(ent, kinds) if o.column is not ent.key and not (
            withhold == "value" and (o.column is None or o.column.sqltype == "BOOLEAN"))])
        if made is None:
            return None
        op, row, name, turn = made
        write = turn["reference"][-1]
        goal = f"{_capital(self._change_text(op, write, name))}."
        facts: dict[str, Any] = {}
        asks: list[Ask] = []
        text = turn["instruction"]
        if withhold == "value" and op.column is not None:
            c = op.column
            fact = f"new {c.human}|{c.human}"
            facts[fact] = write["arguments"][c.name]
            text = self.choose(f"I'd like to change the {c.human} of {name}.",
                               f"The {c.human} of {name} needs updating.",
                               f"Can you update the {c.human} of {name} for me?")
            asks.append(Ask(0, ask_value(self.rng, fact)))
        elif withhold == "record":
            fact = self._key_fact(ent)
            facts[fact] = row[ent.key.name]
            text = f"{_capital(self._change_text(op, write, f'one of the {ent.humans}'))}."
            asks.append(Ask(0, ask_record(self.rng, ent.human, fact)))
        approve = withhold == "approve" or self.rng.random() < _CONFIRM_ODDS
        if approve:
            action = self._change_text(op, write, name)
            asks.append(Ask(len(turn["reference"]) - 1, ask_confirm(self.rng, action), confirms=True))
            text = f"{text} {self.choose(*_APPROVE)}"
        task = {"kind": "read_then_write", "turns": [turn, *self.follow_ups(op, row, turn, keyed=True)]}
        return self._scenario(task, asks, facts, [op.tool] if approve else [], text, goal, approve)

    def _change_text(self, op: Op, write: dict[str, Any], subject: str) -> str:
        """The change ``write`` (a call of ``op``) makes to ``subject``, as the agent states it ("set the price of
        the book 'Dune' to 12")."""
        args = write["arguments"]
        c = op.column
        if op.kind == "update" and c is not None:
            return f"set the {c.human} of {subject} to {say(c, args[c.name])}"
        if op.kind == "adjust" and c is not None:
            amount = args["amount"]
            return f"add {say(c, amount)} to the {c.human} of {subject}" if amount > 0 else \
                f"take {say(c, -amount)} off the {c.human} of {subject}"
        if op.kind == "status":
            return f"{op.tool.split('_', 1)[0]} {subject}"
        return f"delete {subject}"

    def _key_fact(self, ent: Entity) -> str:
        """The fact naming a record of ``ent`` by its key (``book title|title``)."""
        return f"{ent.human} {ent.key.human}|{ent.key.human}"

    def _scenario(self, task: Task, asks: list[Ask], facts: dict[str, Any], confirm: list[str], text: str,
                  goal: str, approve: bool) -> Task | None:
        """``task`` played against a user of this environment (:func:`envgen.scenario.make_scenario_task`)."""
        goal = f"{goal} Answer what the agent asks" + (" and agree when asked to confirm." if approve else ".")
        persona = f"someone who uses {self.model.title}"
        return make_scenario_task(task, asks=asks, facts=facts, confirm=confirm, instruction=text, goal=goal,
                                  persona=persona)


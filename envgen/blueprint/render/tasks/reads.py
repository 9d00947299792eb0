"""Read turns and the ``read`` shape: a conversation of questions that refer back.

Role: each ``ask_*`` method writes one read turn whose answer is a distinct
value (:meth:`Base.distinct_answer`): a field of a record named by its key
(a lookup) or by "it" (the record of the turn before, read by id), the record
with the highest value of a field (a list, then a pick by that rule), how
many child records a record holds and the total of a child field over them
(an aggregate over the relation: a lookup, then a list of its children). The
``read`` shape chains them into a 2-5 turn conversation (the profile's turn
range) about one record and its relations; every turn checks its answer,
that the read tool was used, and that nothing changed.
"""

from __future__ import annotations

from typing import Any

from envgen.blueprint.render.model import Column, Entity
from envgen.blueprint.render.tasks.base import Row, Task, Turn, call, join
from envgen.blueprint.render.tasks.writes import Writes

__all__ = ["Reads"]


class Reads(Writes):
    """Read turns and the ``read`` conversation."""

    def ask_value(self, ent: Entity, row: Row, c: Column, how: str, text: str | None = None) -> Turn | None:
        """The value of ``c`` of ``row``: named by key (``how="key"``: a lookup), by id (``"id"``) or as
        "it" (``"its"``: the record the conversation is about, read by id); ``text``: the question's words."""
        if how == "key":
            op, ref = self.model.op("find", ent), {ent.key.name: row[ent.key.name]}
        else:
            op, ref = self.model.op("get", ent), {ent.id_param: row["id"]}
        if op is None or (c is ent.key and how == "key"):
            return None
        e, k = ent.human, row[ent.key.name]
        if text is not None:
            pass
        elif how == "key":
            text = self.choose(f"What's the {c.human} of the {e} with {ent.key.human} '{k}'?",
                               f"Find the {e} '{k}' and tell me its {c.human}.",
                               f"Could you check which {c.human} the {e} '{k}' has?")
        elif how == "id":
            text = self.choose(f"What is the {c.human} of {e} #{row['id']}?",
                               f"Look up {e} {row['id']} and tell me its {c.human}.",
                               f"I need the {c.human} recorded for the {e} with id {row['id']}.")
        else:
            text = self.choose(f"And what is its {c.human}?", f"Thanks. What {c.human} does it have?",
                               f"Also tell me its {c.human}.")
        answer = self.value_answer(ent, row, c, text)
        if answer is None:
            return None
        return self.answer_turn(text, answer, op.tool, [call(op, **ref)])

    def ask_compare(self, ent: Entity, rows: list[Row], c: Column | None = None, now: bool = False) -> Turn | None:
        """Of ``rows`` (named by key: one lookup each), the highest (or lowest) value of a number field.

        The lookups, then the comparison; the answer is the value (the keys are in the question)."""
        find = self.model.op("find", ent)
        nums = [x for x in ent.columns if x.sqltype in ("INTEGER", "REAL")] if c is None else [c]
        if find is None or not nums or len(rows) < 2:
            return None
        c = self.rng.choice(nums)
        high = self.rng.random() < 0.5
        best = max(r[c.name] for r in rows) if high else min(r[c.name] for r in rows)
        hits = [r for r in rows if r[c.name] == best]
        if len(hits) != 1:
            return None
        names = [f"'{r[ent.key.name]}'" for r in rows]
        which = join(names)
        word = "highest" if high else "lowest"
        text = self.choose(f"Look up the {ent.humans} {which}: which has the {word} {c.human}{' now' if now else ''}, "
                           f"and what is it?",
                           f"Of the {ent.humans} {which}, tell me the {word} {c.human}{' now' if now else ''}.")
        answer = self.value_answer(ent, hits[0], c, text)
        if answer is None:
            return None
        return self.answer_turn(text, answer, find.tool, [call(find, **{ent.key.name: r[ent.key.name]}) for r in rows])

    def ask_max(self, ent: Entity) -> tuple[Turn, Row] | None:
        """Which record has the highest value of a number field (a list, then the pick)."""
        op = self.model.op("list", ent)
        nums = [c for c in ent.columns if c.sqltype in ("INTEGER", "REAL")]
        if op is None or not nums or ent.parent is not None:
            return None
        c = self.rng.choice(nums)
        rows = self.rows(ent)
        top = max(r[c.name] for r in rows)
        best = [r for r in rows if r[c.name] == top]
        if len(best) != 1:
            return None
        key = ent.key.name
        text = self.choose(f"Which {ent.human} has the highest {c.human}? Tell me its {ent.key.human}.",
                           f"Among all {ent.humans}, which one has the largest {c.human}?")
        answer = best[0][key]
        if not self.distinct_answer(answer, text, [r[key] for r in rows if r is not best[0]]):
            return None
        return self.answer_turn(text, answer, op.tool, [call(op)]), best[0]

    def holder_calls(self, parent: Entity, prow: Row, child: Entity, keyed: bool) -> list[dict[str, Any]] | None:
        """The calls that list ``prow``'s child rows (a lookup of ``prow`` first when ``keyed``)."""
        listing = self.model.op("list", child)
        if listing is None:
            return None
        look = self.lookup(parent, prow) if keyed else None
        if keyed and look is None:
            return None
        return ([look] if look else []) + [call(listing, **{parent.id_param: prow["id"]})]

    def ask_count(self, parent: Entity, prow: Row, keyed: bool, name: str | None = None) -> Turn | None:
        """How many child rows ``prow`` holds."""
        child = next(iter(self.children(parent)), None)
        calls = self.holder_calls(parent, prow, child, keyed) if child is not None else None
        if child is None or calls is None:
            return None
        counts = {r["id"]: len(self.held(child, r)) for r in self.rows(parent)}
        n = counts[prow["id"]]
        who = name or (self.by_name(prow, parent) if keyed else "it")
        text = self.choose(f"How many {child.humans} does {who} have?",
                           f"Count the {child.humans} that belong to {who}.")
        if not self.distinct_answer(str(n), text, [m for rid, m in counts.items() if rid != prow["id"]]):
            return None
        return self.answer_turn(text, str(n), calls[-1]["name"], calls)

    def ask_total(self, parent: Entity, prow: Row, keyed: bool, name: str | None = None) -> Turn | None:
        """The total of an integer field of ``prow``'s child rows (an aggregate over the relation)."""
        child = next(iter(self.children(parent)), None)
        if child is None:
            return None
        ints = [c for c in child.columns if c.sqltype == "INTEGER"]
        calls = self.holder_calls(parent, prow, child, keyed)
        mine = self.held(child, prow)
        if not ints or calls is None or len(mine) < 2:
            return None
        c = self.rng.choice(ints)
        totals = {r["id"]: sum(x[c.name] for x in self.held(child, r)) for r in self.rows(parent)}
        answer = str(totals[prow["id"]])
        who = name or (self.by_name(prow, parent) if keyed else "it")
        text = self.choose(f"What is the total {c.human} of all the {child.humans} of {who}?",
                           f"Add up the {c.human} over the {child.humans} that belong to {who}: what do you get?")
        rivals = [v for rid, v in totals.items() if rid != prow["id"]] + [x[c.name] for x in self.rows(child)]
        if not self.distinct_answer(answer, text, rivals):
            return None
        return self.answer_turn(text, answer, calls[-1]["name"], calls)

    def ask_child_max(self, parent: Entity, prow: Row, name: str) -> tuple[Turn, Row] | None:
        """Which of ``prow``'s child rows has the highest value of a number field (list, pick by the rule)."""
        child = next(iter(self.children(parent)), None)
        if child is None:
            return None
        nums = [c for c in child.columns if c.sqltype in ("INTEGER", "REAL")]
        calls = self.holder_calls(parent, prow, child, keyed=False)
        mine = self.held(child, prow)
        if not nums or calls is None or len(mine) < 2:
            return None
        c = self.rng.choice(nums)
        top = max(r[c.name] for r in mine)
        best = [r for r in mine if r[c.name] == top]
        if len(best) != 1:
            return None
        text = self.choose(f"Which of the {child.humans} of {name} has the highest {c.human}? Give me its "
                           f"{child.key.human}.", f"Of {name}'s {child.humans}, which one has the largest {c.human}?")
        answer = best[0][child.key.name]
        if not self.distinct_answer(answer, text, [r[child.key.name] for r in self.rows(child) if r is not best[0]]):
            return None
        return self.answer_turn(text, answer, calls[-1]["name"], calls), best[0]

    # -- the read conversation ---------------------------------------------------------------------
    def read_talk(self) -> Task | None:
        """2-5 questions about one record and its relations, later ones referring back to earlier ones."""
        ent = self.main
        turns: list[Turn] = []
        row = self.pick(ent)
        if row is None:
            return None
        cols = self.readable(ent)
        self.rng.shuffle(cols)
        others = self.pick_many(ent, 2 if self.goal > 1 else 1, lambda r: r is not row)
        first = self.ask_compare(ent, [row, *others]) if others and self.rng.random() < 0.8 else None
        first = first or next((t for c in cols if (t := self.ask_value(ent, row, c, "key")) is not None), None)
        if first is None:
            return None
        turns.append(first)
        return {"kind": "read", "turns": self.more_reads(row, turns, cols)}

    def more_reads(self, row: Row, turns: list[Turn], cols: list[Column]) -> list[Turn]:
        """``turns`` (questions about the main record ``row``) and more, up to the task's turn goal: a question over
        its relation, its other fields of ``cols`` ("and its price?"), then more over the relation."""
        want = self.goal
        ent = self.main
        parent = ent if self.children(ent) else (ent.parent if ent.parent is not None else None)
        asked = {t["checks"][0]["any_of"][0] for t in turns}
        for t in self.relation_reads(parent, row)[:1]:  # a question over the relation (a lookup and a list)
            turns.append(t)
            asked.add(t["checks"][0]["any_of"][0])
        for c in cols:
            if len(turns) >= min(want, 3):
                break
            q = self.ask_value(ent, row, c, "key")
            if q is not None and q["checks"][0]["any_of"][0] not in asked:
                t = q
                t["instruction"] = self.choose(f"And its {c.human}?", f"What {c.human} does it have, then?",
                                               f"Also tell me the {c.human} of the {ent.human} "
                                               f"'{row[ent.key.name]}'.")
                if self.value_answer(ent, row, c, t["instruction"]) is not None:
                    turns.append(t)
                    asked.add(t["checks"][0]["any_of"][0])
        for r in self.relation_reads(parent, row)[1:]:
            if len(turns) >= want:
                break
            if r["checks"][0]["any_of"][0] not in asked:
                turns.append(r)
        return turns

    def relation_reads(self, parent: Entity | None, row: Row) -> list[Turn]:
        """Follow-up reads: the top record by a field and questions about it, or about the holder of ``row``."""
        out: list[Turn] = []
        ent = self.main
        if parent is ent:
            t = self.ask_total(ent, row, keyed=True) or self.ask_count(ent, row, keyed=True)
            out += [t] if t is not None else []
            picked = self.ask_child_max(ent, row, "it")
            if picked is not None:
                out.append(picked[0])
        top = self.ask_max(ent)
        if top is not None:
            out.append(top[0])
            best = top[1]
            for c in self.readable(ent):
                t = self.ask_value(ent, best, c, "its")
                if t is not None:
                    out.append(t)
                    break
        if parent is not None and parent is not ent:
            holder = self.row_by_id(parent, row[parent.id_param])
            t = (self.ask_total(parent, holder, keyed=True) or self.ask_count(parent, holder, keyed=True)) \
                if holder is not None else None
            if t is not None:
                out.insert(0, t)
        return out

    def read_fallback(self) -> Task | None:
        """A single read: a field of a record named by id (for models too small for a conversation)."""
        row = self.pick(self.main)
        if row is None:
            return None
        for c in [*self.readable(self.main), self.main.key]:
            t = self.ask_value(self.main, row, c, "id")
            if t is not None:
                return {"kind": "read", "turns": [t]}
        return None

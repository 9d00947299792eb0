"""Dependent chains and cross-entity tasks: the answer of one call is needed by the next.

Role: the ``read_then_write`` shapes.

* **chain_key**: look a record up by its key, act on the id the lookup
  returns; then "the same for" a second record, "undo that", or a question
  about the result (each a turn with its own checks: :meth:`Chains.follow_ups`,
  which the scenario shapes share).
* **chain_pick**: list records (all, or those of a parent record looked up by
  key), pick the one a rule selects (the highest or lowest value of a field),
  act on it.
* **chain_transfer**: move an amount between two records looked up by key,
  both sides checked; the decision variant reads the giver's value first
  ("if it has less, move all it has"); a follow-up asks the result or undoes
  the transfer.
* **chain_move**: move a record to another parent record, both looked up; the
  decision variant reads the first parent's records to see it is full and
  takes the second ("or to 'B' if that one is full").
* **cascade**: delete a parent record with everything that belongs to it and
  say how many went with it (the list before the delete).
* **chain_decide**: read a balance, then take an amount off the record that
  can give it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from envgen.blueprint.render.model import Column, Entity, Op
from envgen.blueprint.render.tasks.base import Row, Task, Turn, call, say
from envgen.blueprint.render.tasks.reads import Reads

__all__ = ["Chains"]


class Chains(Reads):
    """The dependent-chain and cross-entity shapes."""

    def write_ops(self, ent: Entity, kinds: tuple[str, ...] = ("update", "status", "adjust", "delete")) -> list[Op]:
        return [o for o in self.model.ops if o.entity is ent and o.kind in kinds]

    def allowed(self, op: Op, row: Row) -> bool:
        """Whether ``op`` can act on ``row`` (a status change that is allowed, an adjust that fits)."""
        if op.kind == "status":
            return self.can_move(op, row)
        if op.kind == "adjust" and op.column is not None:
            return self.amount_for(op.column, row[op.column.name]) is not None
        return True

    def act(self, op: Op, row: Row, subject: str, *, new: Any = None, amount: Any = None) -> Turn | None:
        """One change of ``row`` by ``op``, phrased with ``subject``."""
        if op.kind == "update":
            return self.update_turn(op, row, subject, new=new)
        if op.kind == "status":
            return self.status_turn(op, row, subject) if self.can_move(op, row) else None
        if op.kind == "adjust":
            return self.adjust_turn(op, row, subject, amount=amount)
        if op.kind == "delete":
            return self.delete_turn(op, row, subject)
        return None

    def keyed_change(self, ops: list[Op],
                     keep: Callable[[Row], bool] | None = None) -> tuple[Op, Row, str, Turn] | None:
        """A change by one of ``ops`` (drawn) of a main record it can act on (and ``keep`` accepts), named by its
        key, its turn's reference opening with the reads that find the record: ``(op, row, name, turn)``, or
        None."""
        ent = self.main
        if not ops or self.model.op("find", ent) is None:
            return None
        op = self.rng.choice(ops)
        row = self.pick(ent, lambda r: (keep is None or keep(r)) and self.allowed(op, r))
        if row is None:
            return None
        name, looks = self.named(ent, row, True)
        turn = self.act(op, row, name)
        if turn is None:
            return None
        turn["reference"][:0] = looks
        return op, row, name, turn

    def same_again(self, op: Op, first: Turn, row: Row, keyed: bool) -> tuple[Turn, Any] | None:
        """"The same for" another record: ``op`` with the first turn's value or amount on ``row``."""
        ent = op.entity
        ref = first["reference"][-1]["arguments"]
        c = op.column or ent.key
        value = ref.get(c.name) if op.kind == "update" else ref.get("amount")
        if op.kind == "update" and (c is ent.key or row[c.name] == value):
            return None
        if op.kind == "adjust" and op.column is not None:
            lo, hi = self.bounds(op.column)
            new = row[op.column.name] + value
            if new < lo or (hi is not None and new > hi):
                return None
        old = row[c.name] if op.kind in ("update", "adjust") else None
        name, looks = self.named(ent, row, keyed)
        turn = self.act(op, row, name, new=value, amount=value)
        if turn is None:
            return None
        turn["instruction"] = self.choose(f"Now do the same for {name}.", f"And the same for {name}, please.",
                                          f"Great. Do that for {name} too.")
        turn["reference"][:0] = looks
        return turn, old

    def undo(self, op: Op, row: Row, old: Any, value: Any) -> Turn | None:
        """"Undo that": put ``row`` back as it was before ``op`` (an update or an adjust)."""
        text = self.choose("Actually, undo that last change.", "Hmm, undo that, please.",
                           "Sorry, revert the last change.")
        turn: Turn | None
        if op.kind == "update":
            turn = self.update_turn(op, row, "", new=old)
        elif op.kind == "adjust":
            turn = self.adjust_turn(op, row, "", amount=-value)
        else:
            return None
        if turn is not None:
            turn["instruction"] = text
        return turn

    def ask_after(self, ent: Entity, row: Row, c: Column | None = None) -> Turn | None:
        """A question about ``row`` after it changed ("its"), read by id."""
        cols = [c] if c is not None else self.readable(ent)
        for col in cols:
            t = self.ask_value(ent, row, col, "its")
            if t is not None:
                return t
        return None

    # -- look up, then act ---------------------------------------------------------------------------
    def chain_key(self) -> Task | None:
        ent = self.main
        made = self.keyed_change([o for o in self.write_ops(ent) if o.kind != "update" or o.column is not ent.key])
        if made is None:
            return None
        op, row, _, first = made
        return {"kind": "read_then_write", "turns": [first, *self.follow_ups(op, row, first, keyed=True)]}

    def follow_ups(self, op: Op, row: Row, first: Turn, *, keyed: bool) -> list[Turn]:
        """The turns after ``first`` (``op`` on ``row``), up to the task's turn goal: "the same for" another record
        (named by key when ``keyed``), "undo that", then a question about the record changed last."""
        ent = op.entity
        turns = [first]
        want = self.goal
        other = self.pick(ent, lambda r: r is not row and self.allowed(op, r))
        again = self.same_again(op, first, other, keyed) if other is not None and len(turns) < want else None
        if again is not None and other is not None:
            turns.append(again[0])
            if len(turns) < want and op.kind in ("update", "adjust"):
                value = again[0]["reference"][-1]["arguments"].get("amount")
                back = self.undo(op, other, again[1], value)
                turns += [back] if back is not None else []
        if len(turns) < want and op.kind != "delete":
            t = self.ask_after(ent, other if again is not None and other is not None else row, op.column)
            turns += [t] if t is not None else []
        return turns[1:]

    def chain_pick(self) -> Task | None:
        """List records (of a parent looked up by key, when they belong to one), pick one by a rule, act."""
        ent = self.main
        ops = [o for o in self.write_ops(ent, ("update", "status", "adjust")) if o.column is not ent.key]
        listing = self.model.op("list", ent)
        nums = [c for c in ent.columns if c.sqltype in ("INTEGER", "REAL")]
        if not ops or listing is None or not nums:
            return None
        op, c = self.rng.choice(ops), self.rng.choice(nums)
        high = self.rng.random() < 0.5
        holder, calls = None, [call(listing)]
        pool = self.rows(ent)
        if ent.parent is not None:
            holder = self.pick(ent.parent, lambda p: len(self.held(ent, p)) >= 2)
            if holder is None:
                return None
            pool = self.held(ent, holder)
            look = self.lookup(ent.parent, holder)
            calls = [*([look] if look else []), call(listing, **{ent.parent.id_param: holder["id"]})]
        best = max(r[c.name] for r in pool) if high else min(r[c.name] for r in pool)
        hits = [r for r in pool if r[c.name] == best]
        if len(hits) != 1 or not self.allowed(op, hits[0]):
            return None
        row = hits[0]
        subject = f"that {ent.human}"
        turn = self.act(op, row, subject)
        if turn is None:
            return None
        where = f" of {self.by_name(holder, ent.parent)}" if holder is not None and ent.parent is not None else ""
        which = f"the one with the {'highest' if high else 'lowest'} {c.human}"
        turn["instruction"] = self.choose(f"Look through the {ent.humans}{where} and find {which}. ",
                                          f"Among the {ent.humans}{where}, take {which}. ") + turn["instruction"]
        turn["reference"][:0] = calls
        turns = [turn]
        if self.goal > 1:
            t = self.ask_after(ent, row, ent.key) or self.ask_after(ent, row)
            turns += [t] if t is not None else []
        return {"kind": "read_then_write", "turns": turns}

    # -- across records --------------------------------------------------------------------------------
    def chain_transfer(self) -> Task | None:
        op = next((o for o in self.model.ops_of("transfer") if o.column is not None), None)
        if op is None or op.column is None or self.model.op("find", op.entity) is None:
            return None
        ent, c = op.entity, op.column
        pair = self.pick_many(ent, 2)
        if len(pair) < 2:
            return None
        src, dst = pair if self.rng.random() < 0.5 else pair[::-1]
        lo, hi = self.bounds(c)
        has = src[c.name] - lo
        decide = has > 0 and (hi is None or dst[c.name] + has <= hi) and self.rng.random() < 0.5
        amount = has if decide else self.transfer_amount(op, src, dst)
        if amount is None or amount <= 0:
            return None
        if c.sqltype == "INTEGER":
            amount = int(amount)
        names = (self.by_name(src, ent), self.by_name(dst, ent))
        asked = amount + (self.maker.different(c, 0) if decide else 0)
        turn = self.transfer_turn(op, src, dst, names, amount)
        if decide:
            turn["instruction"] = (f"Move {say(c, asked)} of {c.human} from {names[0]} to {names[1]}. If the first "
                                   f"has less than that, move all the {c.human} it has.")
            if lo:
                turn["instruction"] = turn["instruction"][:-1] + f" above {lo:g}."
        turn["reference"][:0] = [self.lookup(ent, src), self.lookup(ent, dst)]
        turns = [turn]
        want = self.goal
        if len(turns) < want:
            text = self.choose(f"How much {c.human} does the second one have now?",
                               f"What is the {c.human} of {names[1]} now?")
            t = self.ask_value(ent, dst, c, "its", text=text)
            turns += [t] if t is not None else []
        if len(turns) < want:
            back = self.transfer_turn(op, dst, src, ("it", names[0]), amount)
            back["instruction"] = self.choose("Undo that transfer, please.", "On second thought, move it back.")
            turns.append(back)
        return {"kind": "read_then_write", "turns": turns}

    def move_target(self, ent: Entity, row: Row, full: bool) -> Row | None:
        parent = ent.parent
        if parent is None:
            return None
        return self.pick(parent, lambda p: p["id"] != row[parent.id_param] and self.has_room(parent, p) != full)

    def chain_move(self) -> Task | None:
        op = next((o for o in self.model.ops_of("transfer") if o.moves), None)
        if op is None or op.entity.parent is None:
            return None
        ent, parent = op.entity, op.entity.parent
        row = self.pick(ent)
        if row is None or self.model.op("find", ent) is None or self.model.op("find", parent) is None:
            return None
        full = self.move_target(ent, row, full=True) if parent.limited else None
        target = self.move_target(ent, row, full=False)
        if target is None:
            return None
        names = (self.by_name(row, ent), self.by_name(target, parent))
        turn = self.move_turn(op, row, target, names)
        looks = [self.lookup(ent, row), self.lookup(parent, target)]
        if full is not None and self.rng.random() < 0.7:
            listing = self.model.op("list", ent)
            if listing is not None:
                alt = self.by_name(full, parent)
                turn["instruction"] = (f"Move {names[0]} to {alt}, or to {names[1]} if that one is full.")
                looks = [self.lookup(ent, row), self.lookup(parent, full),
                         call(listing, **{parent.id_param: full["id"]}), self.lookup(parent, target)]
        turn["reference"][:0] = looks
        turns = [turn]
        if self.goal > 1:
            t = self.ask_count(parent, target, keyed=False, name=names[1])
            turns += [t] if t is not None else []
        return {"kind": "read_then_write", "turns": turns}

    def cascade(self) -> Task | None:
        """Delete a record with what belongs to it; say how many went with it (list, then delete)."""
        ent = self.main
        op, child = self.model.op("delete", ent), next(iter(self.children(ent)), None)
        if op is None or child is None:
            return None
        prow = self.pick(ent, lambda p: len(self.held(child, p)) >= 1)
        if prow is None:
            return None
        calls = self.holder_calls(ent, prow, child, keyed=True)
        if calls is None:
            return None
        counts = {p["id"]: len(self.held(child, p)) for p in self.rows(ent)}
        n = str(counts[prow["id"]])
        name = self.by_name(prow, ent)
        turn = self.delete_turn(op, prow, name)
        turn["instruction"] = self.choose(f"Delete {name} together with all its {child.humans}, and tell me how many "
                                          f"{child.humans} were removed with it.",
                                          f"Remove {name} and everything in it. How many {child.humans} did it have?")
        if not self.distinct_answer(n, turn["instruction"], [v for k, v in counts.items() if k != prow["id"]]):
            return None
        turn["checks"].insert(0, {"kind": "reply_contains", "any_of": [n]})
        turn["reference"][:0] = calls
        return {"kind": "read_then_write", "turns": [turn]}

    def chain_decide(self) -> Task | None:
        """Read a balance first: take an amount off one record, or off another when the first has too little."""
        ops = [o for o in self.model.ops_of("adjust") if o.column is not None and o.column.minimum is not None]
        if not ops:
            return None
        op = self.rng.choice(ops)
        ent, c = op.entity, op.column
        if c is None:
            return None
        lo = self.bounds(c)[0]
        low = self.pick(ent, lambda r: r[c.name] - lo < max(r2[c.name] for r2 in self.rows(ent)) - lo)
        if low is None:
            return None
        need = None
        for _ in range(12):
            amount = self.maker.different(c, 0)
            amount = int(amount) if c.sqltype == "INTEGER" else amount
            if amount > low[c.name] - lo:
                need = amount
                break
        if need is None:
            return None
        rich = self.pick(ent, lambda r: r is not low and r[c.name] - need >= lo)
        if rich is None or self.lookup(ent, low) is None:
            return None
        names = (self.by_name(low, ent), self.by_name(rich, ent))
        turn = self.adjust_turn(op, rich, names[1], amount=-need)
        if turn is None:
            return None
        turn["instruction"] = (f"Take {say(c, need)} off the {c.human} of {names[0]}. If it does not have that much, "
                               f"take it off {names[1]} instead.")
        turn["reference"][:0] = [self.lookup(ent, low), self.lookup(ent, rich)]
        turns = [turn]
        if self.goal > 1:
            text = self.choose(f"How much {c.human} is left on the one you used?",
                               f"And what is the {c.human} of the one you took it from now?")
            t = self.ask_value(ent, rich, c, "its", text=text)
            turns += [t] if t is not None else []
        return {"kind": "read_then_write", "turns": turns}

"""Write turns (one change of one record) and the ``execute`` shapes built from them.

Role: each ``*_turn`` method writes one turn that makes one change (an
update, a status change, a delete with its cascade, an adjust, a transfer of
an amount between two records, a move of a record to another parent),
applies it to the task's world and pins it with checks (:meth:`Base.touched`).
The chains and conversations reuse them, prefixing lookups to the reference.
The ``exec_*`` shapes are ``execute`` tasks that name records by id: a batch
of the same change to several records (order-free, every effect checked),
followed by a turn that refers back to it.
"""

from __future__ import annotations

from typing import Any

from envgen.blueprint.render.model import Column, Entity, Op, human
from envgen.blueprint.render.tasks.base import (
    Base,
    Row,
    Task,
    Turn,
    arg,
    call,
    count_check,
    join,
    others_check,
    say,
)

__all__ = ["Writes"]


class Writes(Base):
    """One-change turns and the ``execute`` shapes."""

    # -- one change --------------------------------------------------------------------------------
    def new_value(self, op: Op, row: Row, avoid: tuple[Any, ...] = ()) -> Any:
        """A value for ``op``'s column that differs from ``row``'s (and from the seed's, and ``avoid``)."""
        ent, c = op.entity, op.column or op.entity.key
        if c is ent.key:
            return self.maker.key(c, ent, {r[c.name] for r in self.rows(ent)} | {r[c.name] for r in ent.rows})
        seed = next((r[c.name] for r in ent.rows if r["id"] == row["id"]), None)
        for _ in range(8):
            new = self.maker.different(c, row[c.name], avoid=seed)
            if new not in avoid:
                return new
        return new

    def update_turn(self, op: Op, row: Row, subject: str, follow: bool = False, new: Any = None) -> Turn:
        ent, c = op.entity, op.column or op.entity.key
        new = self.new_value(op, row) if new is None else new
        row[c.name] = new
        if c is ent.key and not follow:
            text = self.choose(f"Rename {subject} to '{new}'.", f"{subject[0].upper()}{subject[1:]} should be "
                               f"renamed to '{new}'.")
        elif follow:
            text = self.choose(f"Also change its {c.human} to {say(c, new)}.",
                               f"One more thing: set its {c.human} to {say(c, new)}.")
        else:
            text = self.choose(f"Set the {c.human} of {subject} to {say(c, new)}.",
                               f"Change the {c.human} of {subject} to {say(c, new)}, please.",
                               f"Please update {subject}: its {c.human} should now be {say(c, new)}.",
                               f"The {c.human} of {subject} is now {say(c, new)}; record that.")
        return {"instruction": text, "checks": self.write_checks(ent, row),
                "reference": [call(op, **{ent.id_param: row["id"], c.name: arg(c, new)})]}

    def delete_turn(self, op: Op, row: Row, subject: str) -> Turn:
        ent = op.entity
        self.rows(ent).remove(row)
        self.last = None
        checks = [count_check(ent, 0, f'"id" = {row["id"]}'), others_check(ent, self.rows(ent), "")]
        children = self.children(ent)
        for child in children:  # the tool deletes what belongs to the row
            self.world[child.table] = [r for r in self.rows(child) if r[ent.id_param] != row["id"]]
            checks.append(others_check(child, self.rows(child), ""))
        text = self.choose(f"Delete {subject}.", f"Please remove {subject}.",
                           f"{subject[0].upper()}{subject[1:]} is no longer needed; delete it.")
        return {"instruction": text, "checks": checks + self.rest_unchanged(ent, *children),
                "reference": [call(op, **{ent.id_param: row["id"]})]}

    def status_turn(self, op: Op, row: Row, subject: str) -> Turn:
        ent = op.entity
        row["status"] = op.target
        verb = op.tool.split("_", 1)[0]
        text = self.choose(f"{verb.capitalize()} {subject}.", f"Please {verb} {subject}.",
                           f"Mark {subject} as {human(op.target or '')}.")
        return {"instruction": text, "checks": self.write_checks(ent, row),
                "reference": [call(op, **{ent.id_param: row["id"]})]}

    def can_move(self, op: Op, row: Row) -> bool:
        """Whether a status change ``op`` is allowed for ``row`` (not already there, not in a final state)."""
        return row.get("status") != op.target and row.get("status") not in op.entity.final

    def bounds(self, c: Column) -> tuple[float, float | None]:
        return (c.minimum if c.minimum is not None else 0), c.maximum

    def amount_for(self, c: Column, cur: Any, down: bool | None = None) -> Any:
        """A non-zero amount that keeps ``cur`` inside the column's range (``down``: its sign; None: any)."""
        lo, hi = self.bounds(c)
        for _ in range(20):
            amount = self.maker.different(c, 0)
            if down or (down is None and self.rng.random() >= 0.6):
                amount = -amount
            if c.sqltype == "INTEGER":
                amount = int(amount)
            new = cur + amount
            if amount and new >= lo and (hi is None or new <= hi):
                return amount
        return None

    def adjust_turn(self, op: Op, row: Row, subject: str, amount: Any = None) -> Turn | None:
        """Add (or take away) an amount that keeps the column inside its range."""
        ent, c = op.entity, op.column
        if c is None:
            raise ValueError(f"adjust tool {op.tool!r} has no column")
        amount = self.amount_for(c, row[c.name]) if amount is None else amount
        if amount is None:
            return None
        row[c.name] = row[c.name] + amount
        how = f"Add {say(c, amount)} to" if amount > 0 else f"Take {say(c, -amount)} off"
        text = self.choose(f"{how} the {c.human} of {subject}.",
                           f"Please {'increase' if amount > 0 else 'decrease'} the {c.human} of {subject} by "
                           f"{say(c, abs(amount))}.")
        return {"instruction": text, "checks": self.write_checks(ent, row),
                "reference": [call(op, **{ent.id_param: row["id"], "amount": amount})]}

    def transfer_amount(self, op: Op, src: Row, dst: Row) -> Any:
        """An amount ``src`` can give and ``dst`` can take (None when there is none)."""
        c = op.column
        if c is None:
            return None
        lo, hi = self.bounds(c)
        for _ in range(20):
            amount = self.maker.different(c, 0)
            if c.sqltype == "INTEGER":
                amount = int(amount)
            if amount > 0 and src[c.name] - amount >= lo and (hi is None or dst[c.name] + amount <= hi):
                return amount
        return None

    def transfer_turn(self, op: Op, src: Row, dst: Row, names: tuple[str, str], amount: Any) -> Turn:
        """Move ``amount`` of the column from ``src`` to ``dst`` (both sides checked)."""
        ent, c = op.entity, op.column
        if c is None:
            raise ValueError(f"transfer tool {op.tool!r} moves rows, not an amount")
        src[c.name] = src[c.name] - amount
        dst[c.name] = dst[c.name] + amount
        a, b = names
        text = self.choose(f"Move {say(c, amount)} of {c.human} from {a} to {b}.",
                           f"Transfer {say(c, amount)} {c.human} from {a} to {b}, please.",
                           f"{b[0].upper()}{b[1:]} needs {say(c, amount)} more {c.human}: take it from {a}.")
        self.note(ent, src, dst)
        return {"instruction": text, "checks": self.touched((ent, [src, dst])),
                "reference": [call(op, **{f"from_{ent.id_param}": src["id"], f"to_{ent.id_param}": dst["id"],
                                          "amount": amount})]}

    def move_turn(self, op: Op, row: Row, target: Row, names: tuple[str, str]) -> Turn:
        """Move ``row`` to the parent row ``target``."""
        ent = op.entity
        parent = ent.parent
        if parent is None:
            raise ValueError(f"move tool {op.tool!r} needs a parent")
        row[parent.id_param] = target["id"]
        a, b = names
        text = self.choose(f"Move {a} to {b}.", f"{a[0].upper()}{a[1:]} now belongs to {b}; move it there.",
                           f"Please reassign {a} to {b}.")
        self.note(ent, row)
        return {"instruction": text, "checks": self.touched((ent, [row])),
                "reference": [call(op, **{ent.id_param: row["id"], parent.id_param: target["id"]})]}

    def has_room(self, parent: Entity, prow: Row) -> bool:
        room = parent.room(prow)
        return room is None or all(len(self.held(ch, prow)) < room for ch in self.children(parent))

    # -- execute shapes ----------------------------------------------------------------------------
    def exec_create(self) -> Task | None:
        ent, op = self.main, self.model.op("create", self.main)
        if op is None:
            return None
        row = self.new_row(ent)
        if ent.parent is not None:
            open_rows = [p for p in self.rows(ent.parent) if self.has_room(ent.parent, p)]
            if not open_rows:
                return None
            row[ent.parent.id_param] = self.rng.choice(open_rows)["id"]
        turn = {"instruction": self.create_sentence(ent, row), "checks": self.created(ent, row),
                "reference": [call(op, **self.create_args(ent, row))]}
        return {"kind": "execute", "turns": [turn]}

    def batch_turn(self, op: Op, rows: list[Row], keyed: bool) -> Turn | None:
        """The same change to every row of ``rows`` in one request (any order; every row checked)."""
        ent = op.entity
        names: list[str] = []
        looks: list[dict[str, Any]] = []
        for r in rows:
            look = self.lookup(ent, r) if keyed else None
            names.append(f"'{r[ent.key.name]}'" if look is not None else f"#{r['id']}")
            looks += [look] if look is not None else []
        who = f"the {ent.humans} {join(names)}"
        refs: list[dict[str, Any]] = []
        if op.kind == "update":
            c = op.column or ent.key
            if c is ent.key:
                return None
            new = self.new_value(op, rows[0], avoid=tuple(r[c.name] for r in rows))
            if any(r[c.name] == new for r in rows):
                return None
            for r in rows:
                r[c.name] = new
                refs.append(call(op, **{ent.id_param: r["id"], c.name: arg(c, new)}))
            text = self.choose(f"Set the {c.human} of {who} to {say(c, new)}.",
                               f"For each of {who}, change the {c.human} to {say(c, new)}.")
        elif op.kind == "status":
            if not all(self.can_move(op, r) for r in rows):
                return None
            for r in rows:
                r["status"] = op.target
                refs.append(call(op, **{ent.id_param: r["id"]}))
            verb = op.tool.split("_", 1)[0]
            text = self.choose(f"{verb.capitalize()} all of these: {who}.",
                               f"Please mark {who} as {human(op.target or '')}, all of them.")
        else:
            return None
        self.note(ent, *rows)
        return {"instruction": text, "checks": self.touched((ent, rows)), "reference": looks + refs}

    def batch_op(self) -> Op | None:
        """A status change when there is one (one argument per call), else an update."""
        ops = self.model.ops_of("status", self.main)
        ops = ops or [o for o in self.model.ops_of("update", self.main) if o.column is not self.main.key]
        return self.rng.choice(ops) if ops else None

    def exec_batch(self) -> Task | None:
        """A batch of one change to several records named by id, then undo one of them by id."""
        op = self.batch_op()
        if op is None:
            return None
        rows = self.pick_many(self.main, self.profile.batch,
                              (lambda r: self.can_move(op, r)) if op.kind == "status" else None)
        if len(rows) < 2:
            return None
        before = {r["id"]: dict(r) for r in rows}
        first = self.batch_turn(op, rows, keyed=False)
        if first is None:
            return None
        turns = [first]
        if op.kind == "update" and self.profile.turns[1] >= 2:
            c = op.column or self.main.key
            back = rows[self.rng.randrange(len(rows))]
            which = ("the " + ("first", "second", "third")[rows.index(back)] + " one") if len(rows) <= 3 else \
                f"#{back['id']}"
            undo = self.update_turn(op, back, "", new=before[back["id"]][c.name])
            undo["instruction"] = self.choose(f"Wait, undo that for {which}: put its {c.human} back.",
                                              f"Actually, {which} should keep its old {c.human}. Revert it.")
            turns.append(undo)
        return {"kind": "execute", "turns": turns}

    def exec_transfer(self) -> Task | None:
        """Move an amount between two records named by id, then ask for the giver's new value."""
        op = next((o for o in self.model.ops_of("transfer") if o.column is not None), None)
        if op is None:
            return None
        ent = op.entity
        pair = self.pick_many(ent, 2)
        if len(pair) < 2:
            return None
        src, dst = pair if self.rng.random() < 0.5 else pair[::-1]
        amount = self.transfer_amount(op, src, dst)
        if amount is None:
            return None
        turn = self.transfer_turn(op, src, dst, (self.by_id(src, ent), self.by_id(dst, ent)), amount)
        turns = [turn]
        get = self.model.op("get", ent)
        c = op.column
        if get is not None and c is not None:
            text = self.choose(f"What is the {c.human} of #{src['id']} now?", f"How much {c.human} does "
                               f"#{src['id']} have left?")
            answer = self.value_answer(ent, src, c, text)
            if answer is not None:
                turns.append(self.answer_turn(text, answer, get.tool, [call(get, **{ent.id_param: src["id"]})]))
        return {"kind": "execute", "turns": turns}

    def exec_child(self) -> Task | None:
        side = next((e for e in self.children(self.main)), None)
        op = self.model.op("create", side) if side else None
        if side is None or op is None:
            return None
        row = self.new_row(side)
        open_rows = [p for p in self.rows(self.main) if self.has_room(self.main, p)]
        if not open_rows:
            return None
        row[self.main.id_param] = self.rng.choice(open_rows)["id"]
        turn = {"instruction": self.create_sentence(side, row), "checks": self.created(side, row),
                "reference": [call(op, **self.create_args(side, row))]}
        return {"kind": "execute", "turns": [turn]}

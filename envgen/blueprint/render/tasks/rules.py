"""Business rules that refuse: the agent reads the error and takes the allowed path or says why not.

Role: ``read_then_write`` shapes over the tools' refusals
(:mod:`envgen.blueprint.render.tools`): each first turn asks for what a rule
forbids, so the tool raises a ``ToolError`` and changes nothing; its checks
pin that nothing was written (``unchanged`` on every table) and that the
reply gives the reason (the value that is too low) or refuses. The next turn
takes the allowed path, checked like any write.

* **refuse_overdraft**: take (or move) more than a record has above its
  minimum; the reply must give what it has; then "take all it has".
* **refuse_capacity**: add a record to a full parent record; the reply
  refuses; then "add it to the other one instead".
* **refuse_transition**: change the status of a record in a ``final`` state;
  the reply refuses; then "do it for the other one instead".
"""

from __future__ import annotations

from envgen.blueprint.render.model import Op, human
from envgen.blueprint.render.tasks.base import DECLINE_WORDS, Task, Turn, say
from envgen.blueprint.render.tasks.chains import Chains

__all__ = ["Rules"]


class Rules(Chains):
    """The refusal shapes."""

    def refusal(self, text: str, reference: list[dict[str, object]]) -> Turn | None:
        """A turn whose request a rule refuses: nothing changes, and the reply refuses."""
        if not self.refusal_ok(text):
            return None
        return {"instruction": text,
                "checks": [{"kind": "reply_contains", "any_of": list(DECLINE_WORDS)}, *self.nothing_changed()],
                "reference": reference}

    def refuse_overdraft(self) -> Task | None:
        ops = [o for o in self.model.ops if o.kind in ("adjust", "transfer") and o.column is not None
               and o.column.minimum is not None and self.model.op("find", o.entity) is not None]
        if not ops:
            return None
        op = self.rng.choice(ops)
        ent, c = op.entity, op.column
        if c is None:
            return None
        lo, hi = self.bounds(c)
        row = self.pick(ent, lambda r: r[c.name] - lo > 0)
        other = self.pick(ent, lambda r: r is not row)
        if row is None or (op.kind == "transfer" and other is None):
            return None
        has = row[c.name] - lo
        need = has + self.maker.different(c, 0)
        need = int(need) if c.sqltype == "INTEGER" else need
        name = self.by_name(row, ent)
        looks = [self.lookup(ent, row)]
        if op.kind == "transfer" and other is not None:
            if hi is not None and other[c.name] + has > hi:
                return None
            to = self.by_name(other, ent)
            text = f"Move {say(c, need)} of {c.human} from {name} to {to}."
            looks.append(self.lookup(ent, other))
        else:
            to = ""
            text = self.choose(f"Take {say(c, need)} off the {c.human} of {name}.",
                               f"Please reduce the {c.human} of {name} by {say(c, need)}.")
        answer = self.value_answer(ent, row, c, text)
        if answer is None:
            return None
        first = {"instruction": text,
                 "checks": [{"kind": "reply_contains", "any_of": [answer]}, *self.nothing_changed()],
                 "reference": looks}
        second: Turn | None
        if op.kind == "transfer" and other is not None:
            second = self.transfer_turn(op, row, other, ("it", to), has)
        else:
            second = self.adjust_turn(op, row, "it", amount=-has)
        if second is None:
            return None
        above = f" above {lo:g}" if lo else ""
        second["instruction"] = self.choose(f"I see. Then take all {name} has{above}.",
                                            f"OK, then use everything {name} has{above}.")
        if op.kind == "transfer":
            second["instruction"] = self.choose(f"I see. Then move all {name} has{above}.",
                                                f"OK, then move everything {name} has{above} to {to}.")
        return {"kind": "read_then_write", "turns": [first, second]}

    def refuse_capacity(self) -> Task | None:
        child = next((e for e in self.model.entities if e.parent is not None and e.parent.limited), None)
        if child is None or child.parent is None:
            return None
        parent = child.parent
        create = self.model.op("create", child)
        full = self.pick(parent, lambda p: not self.has_room(parent, p))
        room = self.pick(parent, lambda p: self.has_room(parent, p))
        if create is None or full is None or room is None or self.model.op("find", parent) is None:
            return None
        row = self.new_row(child)
        row[parent.id_param] = room["id"]
        text = self.create_sentence(child, row, parent_phrase=f" for {self.by_name(full, parent)}")
        look = self.lookup(parent, full)
        first = self.refusal(text, [look]) if look is not None else None
        if first is None:
            return None
        second = {"instruction": self.choose(f"Then put it under {self.by_name(room, parent)} instead.",
                                             f"All right, add it to {self.by_name(room, parent)} then."),
                  "checks": self.created(child, row),
                  "reference": [self.lookup(parent, room), {"name": create.tool, "arguments": self.create_args(child,
                                                                                                                row)}]}
        return {"kind": "read_then_write", "turns": [first, second]}

    def refuse_transition(self) -> Task | None:
        ops = [o for o in self.model.ops_of("status", self.main) if self.main.final]
        if not ops or self.model.op("find", self.main) is None:
            return None
        op: Op = self.rng.choice(ops)
        ent = self.main
        stuck = self.pick(ent, lambda r: r["status"] in ent.final and r["status"] != op.target)
        free = self.pick(ent, lambda r: self.can_move(op, r))
        if stuck is None or free is None:
            return None
        verb = op.tool.split("_", 1)[0]
        text = self.choose(f"{verb.capitalize()} {self.by_name(stuck, ent)}.",
                           f"Please mark {self.by_name(stuck, ent)} as {human(op.target or '')}.")
        look = self.lookup(ent, stuck)
        first = self.refusal(text, [look]) if look is not None else None
        if first is None:
            return None
        name = self.by_name(free, ent)
        second = self.status_turn(op, free, name)
        second["instruction"] = self.choose(f"I see. Then {verb} {name} instead.",
                                            f"OK, do it for {name} then.")
        second["reference"].insert(0, self.lookup(ent, free))
        return {"kind": "read_then_write", "turns": [first, second]}

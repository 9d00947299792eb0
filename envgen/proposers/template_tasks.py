"""Tasks of a template environment: instructions, reference calls and state-pinning checks.

Role: given an :class:`~envgen.proposers.template_model.EnvModel` (entities
with seed rows, operations), write 4-8 tasks covering every task kind of
gym_envs/ENVSPEC.md: ``execute``, ``read``, ``read_then_write``, ``missing_parameter``
and ``decline``.

Contract (what the validity gate checks):

* Each instruction states every value its reference passes (ids, keys, new
  values); values are drawn from the seeded :class:`ValueMaker`, and a new
  value always differs from the current one.
* Every turn that writes has ``sql`` checks that pin each written column of
  the written row with exact values, and that every other row of the written
  table is as it was (``_others_check``; a delete's cascaded child rows too),
  plus an ``unchanged`` check on every other table: doing nothing, dropping the
  write, aiming it at another row, perturbing any argument or writing anywhere
  else fails (validity rules 4, 5 and 7).
* Reads check the exact value with ``reply_contains``, require the read tool and
  check that nothing changed. The value asked for is distinctive
  (:func:`envgen.gate.adequacy.answer_problem`: not in the instruction, a tool
  description or a generic reply) and no other entity's value (another row of
  its column, another parent's count) contains it, so a reply with the wrong
  entity's value fails. ``missing_parameter`` turn 1 and ``decline`` forbid the
  write tools and check that nothing changed; ``decline`` also wants a refusal
  in the reply.
* Each task starts from the seed rows; multi-turn tasks track their own
  changes between turns.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

from envgen.gate.adequacy import GENERIC_REPLIES, answer_problem, tool_texts
from envgen.gate.values import answer_text, same_answer
from envgen.proposers.template_model import Column, Entity, EnvModel, Op, human
from envgen.proposers.template_tools import render_tools
from envgen.proposers.template_values import ValueMaker, sql_literal

__all__ = ["DECLINE_WORDS", "build_tasks"]

DECLINE_WORDS = ["cannot", "can't", "unable", "not able", "not possible", "sorry", "not supported"]

Task = dict[str, Any]
Turn = dict[str, Any]
Picked = tuple[dict[str, Any], Column, str, str]  #: a row, a column, the question, its answer


def _a(word: str) -> str:
    return ("an " if word[:1] in "aeiou" else "a ") + word


def _say(c: Column, v: Any) -> str:
    """A value as the instruction states it."""
    if c.sqltype == "TEXT":
        return f"'{v}'"
    if c.sqltype == "BOOLEAN":
        return "true" if v else "false"
    return repr(v)


def _reply(v: Any) -> str:
    return repr(v) if isinstance(v, float) else str(v)


def _arg(c: Column, v: Any) -> Any:
    return bool(v) if c.sqltype == "BOOLEAN" else v


def _join(parts: list[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def _row_check(ent: Entity, row: dict[str, Any], by_key: bool = False) -> dict[str, Any]:
    cols = ent.stored_columns()
    where = (f'"{ent.key.name}" = {sql_literal(row[ent.key.name])}' if by_key else f'"id" = {row["id"]}')
    query = f'SELECT {", ".join(chr(34) + c + chr(34) for c in cols)} FROM "{ent.table}" WHERE {where}'
    return {"kind": "sql", "query": query, "expect": [[row[c] for c in cols]]}


def _others_check(ent: Entity, rows: list[dict[str, Any]], where: str) -> dict[str, Any]:
    """The rows of ``ent``'s table matching ``where`` (all but the written one) are exactly ``rows``."""
    cols = ["id", *ent.stored_columns()]
    query = (f'SELECT {", ".join(chr(34) + c + chr(34) for c in cols)} FROM "{ent.table}"'
             + (f" WHERE {where}" if where else "") + ' ORDER BY "id"')
    expect = [[r[c] for c in cols] for r in sorted(rows, key=lambda r: r["id"])]
    return {"kind": "sql", "query": query, "expect": expect, "ordered": True}


def _count_check(ent: Entity, n: int, where: str = "") -> dict[str, Any]:
    query = f'SELECT count(*) FROM "{ent.table}"' + (f" WHERE {where}" if where else "")
    return {"kind": "sql", "query": query, "expect": [[n]]}


def _call(op: Op, **arguments: Any) -> dict[str, Any]:
    return {"name": op.tool, "arguments": arguments}


class TaskMaker:
    """Writes tasks for one model; every choice comes from ``rng``."""

    def __init__(self, model: EnvModel, rng: random.Random, maker: ValueMaker):
        self.model = model
        self.rng = rng
        self.maker = maker
        self.main = next(o.entity for o in model.ops if o.kind == "update")
        self.world: dict[str, list[dict[str, Any]]] = {}
        self.tool_texts = tool_texts(render_tools(model))
        self.reset()

    # -- world -----------------------------------------------------------------------------------
    def reset(self) -> None:
        self.world = {e.table: copy.deepcopy(e.rows) for e in self.model.entities}

    def rows(self, ent: Entity) -> list[dict[str, Any]]:
        return self.world[ent.table]

    def pick(self, ent: Entity, where: Callable[[dict[str, Any]], bool] | None = None) -> dict[str, Any] | None:
        rows = [r for r in self.rows(ent) if where is None or where(r)]
        return self.rng.choice(rows) if rows else None

    def new_row(self, ent: Entity) -> dict[str, Any]:
        used = {r[ent.key.name] for r in self.rows(ent)}
        row: dict[str, Any] = {"id": max([r["id"] for r in self.rows(ent)], default=0) + 1}
        if ent.parent is not None:
            row[ent.parent.id_param] = self.rng.choice(self.rows(ent.parent))["id"]
        row[ent.key.name] = self.maker.key(ent.key, ent, used)
        for c in ent.columns:
            row[c.name] = self.maker.value(c)
        if ent.status:
            row["status"] = ent.status[0]
        return row

    def choose(self, *options: str) -> str:
        return self.rng.choice(options)

    # -- state checks ----------------------------------------------------------------------------
    def rest_unchanged(self, *written: Entity) -> list[dict[str, Any]]:
        """An ``unchanged`` check on every table the turn does not write (none when it writes them all)."""
        names = {e.table for e in written}
        rest = [e.table for e in self.model.entities if e.table not in names]
        return [{"kind": "unchanged", "tables": rest}] if rest else []

    def write_checks(self, ent: Entity, row: dict[str, Any], *, by_key: bool = False) -> list[dict[str, Any]]:
        """After a create or update of ``row`` (already in the world): the row, every other row of its
        table, and every other table unchanged."""
        if by_key:
            where = f'"{ent.key.name}" != {sql_literal(row[ent.key.name])}'
            others = [r for r in self.rows(ent) if r[ent.key.name] != row[ent.key.name]]
        else:
            where = f'"id" != {row["id"]}'
            others = [r for r in self.rows(ent) if r["id"] != row["id"]]
        return [_row_check(ent, row, by_key=by_key), _others_check(ent, others, where), *self.rest_unchanged(ent)]

    def created(self, ent: Entity, row: dict[str, Any]) -> list[dict[str, Any]]:
        """Add a created row to the world; the checks of its turn."""
        self.rows(ent).append(row)
        return self.write_checks(ent, row, by_key=True)

    # -- phrasing --------------------------------------------------------------------------------
    def describe_values(self, ent: Entity, row: dict[str, Any], skip: str | None = None) -> str:
        parts = [f"{c.human} {_say(c, row[c.name])}" for c in ent.columns if c.name != skip]
        return _join(parts)

    def create_args(self, ent: Entity, row: dict[str, Any]) -> dict[str, Any]:
        args: dict[str, Any] = {}
        if ent.parent is not None:
            args[ent.parent.id_param] = row[ent.parent.id_param]
        for c in ent.all_columns():
            args[c.name] = _arg(c, row[c.name])
        return args

    def create_sentence(self, ent: Entity, row: dict[str, Any], skip: str | None = None,
                        parent_phrase: str | None = None) -> str:
        k = f"{ent.key.human} '{row[ent.key.name]}'"
        vals = self.describe_values(ent, row, skip)
        with_vals = f" with {vals}" if vals else ""
        under = ""
        if ent.parent is not None:
            under = parent_phrase or f" under {ent.parent.human} #{row[ent.parent.id_param]}"
        return self.choose(
            f"Add a new {ent.human} with {k}{with_vals}{under}.",
            f"Please create {_a(ent.human)}{under}: {k}{', ' + vals if vals else ''}.",
            f"I need a new {ent.human} record{under}. Use {k}{with_vals}.",
            f"Register {_a(ent.human)} ({k}){under}{with_vals}.",
        )

    # -- execute ---------------------------------------------------------------------------------
    def exec_create(self) -> Task | None:
        ent, op = self.main, self.model.op("create", self.main)
        if op is None:
            return None
        row = self.new_row(ent)
        turn = {"instruction": self.create_sentence(ent, row), "checks": self.created(ent, row),
                "reference": [_call(op, **self.create_args(ent, row))]}
        return {"kind": "execute", "turns": [turn]}

    def update_turn(self, op: Op, row: dict[str, Any], subject: str, follow: bool = False) -> Turn:
        ent, c = op.entity, op.column or op.entity.key
        if c is ent.key:
            new = self.maker.key(c, ent, {r[c.name] for r in self.rows(ent)} | {r[c.name] for r in ent.rows})
        else:
            seed = next((r[c.name] for r in ent.rows if r["id"] == row["id"]), None)
            new = self.maker.different(c, row[c.name], avoid=seed)
        row[c.name] = new
        if c is ent.key and not follow:
            text = self.choose(f"Rename {subject} to '{new}'.", f"{subject[0].upper()}{subject[1:]} should be "
                               f"renamed to '{new}'.")
        elif follow:
            text = self.choose(f"Also change its {c.human} to {_say(c, new)}.",
                               f"One more thing: set its {c.human} to {_say(c, new)}.")
        else:
            text = self.choose(f"Set the {c.human} of {subject} to {_say(c, new)}.",
                               f"Change the {c.human} of {subject} to {_say(c, new)}, please.",
                               f"Please update {subject}: its {c.human} should now be {_say(c, new)}.",
                               f"The {c.human} of {subject} is now {_say(c, new)}; record that.")
        return {"instruction": text, "checks": self.write_checks(ent, row),
                "reference": [_call(op, **{ent.id_param: row["id"], c.name: _arg(c, new)})]}

    def exec_update(self) -> Task | None:
        ops = self.model.ops_of("update", self.main)
        row = self.pick(self.main)
        if not ops or row is None:
            return None
        op = self.rng.choice(ops)
        subject = self.choose(f"{self.main.human} #{row['id']}", f"the {self.main.human} with id {row['id']}")
        return {"kind": "execute", "turns": [self.update_turn(op, row, subject)]}

    def delete_turn(self, op: Op, row: dict[str, Any], subject: str) -> Turn:
        ent = op.entity
        self.rows(ent).remove(row)
        checks = [_count_check(ent, 0, f'"id" = {row["id"]}'), _others_check(ent, self.rows(ent), "")]
        children = [e for e in self.model.entities if e.parent is ent]
        for child in children:  # the tool deletes what belongs to the row
            self.world[child.table] = [r for r in self.rows(child) if r[ent.id_param] != row["id"]]
            checks.append(_others_check(child, self.rows(child), ""))
        text = self.choose(f"Delete {subject}.", f"Please remove {subject}.",
                           f"{subject[0].upper()}{subject[1:]} is no longer needed; delete it.")
        return {"instruction": text, "checks": checks + self.rest_unchanged(ent, *children),
                "reference": [_call(op, **{ent.id_param: row["id"]})]}

    def exec_delete(self) -> Task | None:
        op, row = self.model.op("delete", self.main), self.pick(self.main)
        if op is None or row is None:
            return None
        subject = self.choose(f"{self.main.human} #{row['id']}", f"the {self.main.human} with id {row['id']}")
        return {"kind": "execute", "turns": [self.delete_turn(op, row, subject)]}

    def status_turn(self, op: Op, row: dict[str, Any], subject: str) -> Turn:
        ent = op.entity
        row["status"] = op.target
        verb = op.tool.split("_", 1)[0]
        text = self.choose(f"{verb.capitalize()} {subject}.", f"Please {verb} {subject}.",
                           f"Mark {subject} as {human(op.target or '')}.")
        return {"instruction": text, "checks": self.write_checks(ent, row),
                "reference": [_call(op, **{ent.id_param: row["id"]})]}

    def status_pick(self) -> tuple[Op, dict[str, Any]] | None:
        ops = self.model.ops_of("status", self.main)
        if not ops:
            return None
        op = self.rng.choice(ops)
        row = self.pick(self.main, lambda r: r["status"] != op.target)
        return (op, row) if row is not None else None

    def exec_status(self) -> Task | None:
        picked = self.status_pick()
        if picked is None:
            return None
        op, row = picked
        subject = f"{self.main.human} #{row['id']}"
        return {"kind": "execute", "turns": [self.status_turn(op, row, subject)]}

    def adjust_turn(self, op: Op, row: dict[str, Any], subject: str) -> Turn:
        """Add (or take away) an amount that keeps the column inside its range."""
        ent, c = op.entity, op.column
        if c is None:
            raise ValueError(f"adjust tool {op.tool!r} has no column")
        lo = c.minimum if c.minimum is not None else 0
        hi = c.maximum
        cur = row[c.name]
        for _ in range(20):
            amount = self.maker.different(c, 0) if self.rng.random() < 0.6 else -self.maker.different(c, 0)
            if c.sqltype == "INTEGER":
                amount = int(amount)
            new = cur + amount
            if amount and new >= lo and (hi is None or new <= hi):
                break
        else:
            amount = 1 if c.sqltype == "INTEGER" else 0.25
            new = cur + amount
        row[c.name] = new
        how = (f"Add {_say(c, amount)} to" if amount > 0 else f"Take {_say(c, -amount)} off")
        text = self.choose(f"{how} the {c.human} of {subject}.",
                           f"Please {'increase' if amount > 0 else 'decrease'} the {c.human} of {subject} by "
                           f"{_say(c, abs(amount))}.")
        return {"instruction": text, "checks": [_row_check(ent, row)],
                "reference": [_call(op, **{ent.id_param: row["id"], "amount": amount})]}

    def exec_adjust(self) -> Task | None:
        ops = self.model.ops_of("adjust", self.main)
        row = self.pick(self.main)
        if not ops or row is None:
            return None
        op = self.rng.choice(ops)
        subject = self.choose(f"{self.main.human} #{row['id']}", f"the {self.main.human} with id {row['id']}")
        return {"kind": "execute", "turns": [self.adjust_turn(op, row, subject)]}

    def exec_child(self) -> Task | None:
        side = next((e for e in self.model.entities if e.parent is self.main), None)
        op = self.model.op("create", side) if side else None
        if side is None or op is None:
            return None
        row = self.new_row(side)
        turn = {"instruction": self.create_sentence(side, row), "checks": self.created(side, row),
                "reference": [_call(op, **self.create_args(side, row))]}
        return {"kind": "execute", "turns": [turn]}

    # -- read ------------------------------------------------------------------------------------
    def readable(self, ent: Entity) -> list[Column]:
        cols = [c for c in ent.columns if c.sqltype != "BOOLEAN"]
        return cols or [ent.key]

    def distinct_answer(self, answer: str, instruction: str, rivals: list[Any]) -> bool:
        """Whether ``answer`` makes a good ``reply_contains`` string for ``instruction``: distinctive
        (the gate's rule), and contained in no other entity's value (``rivals``)."""
        if answer_problem(answer, instruction, self.tool_texts, GENERIC_REPLIES) is not None:
            return False
        low = answer.strip().lower()
        return not any(low in answer_text(v).lower() for v in rivals if not same_answer(answer_text(v), answer))

    def answer_turn(self, text: str, answer: str, tool: str, reference: list[dict[str, Any]]) -> Turn:
        return {"instruction": text,
                "checks": [{"kind": "reply_contains", "any_of": [answer]}, {"kind": "calls", "require": [tool]},
                           {"kind": "unchanged", "tables": []}],
                "reference": reference}

    def pick_read(self, ent: Entity, cols: list[Column], ask: Callable[[dict[str, Any], Column], str],
                  fallback: list[Column] | None = None, tries: int = 12) -> Picked | None:
        """A row, a column of it and the question ``ask(row, column)`` whose answer is a distinct value
        (from ``cols``, else from ``fallback``)."""
        rows = list(self.rows(ent))
        pairs: list[tuple[dict[str, Any], Column]] = []
        for group in (cols, [c for c in fallback or [] if c not in cols]):
            some = [(r, c) for r in rows for c in group]
            self.rng.shuffle(some)
            pairs += some[:tries]
        for row, c in pairs:
            text = ask(row, c)
            answer = _reply(row[c.name])
            if self.distinct_answer(answer, text, [r[c.name] for r in rows if r is not row]):
                return row, c, text, answer
        return None

    def read_by_id(self) -> Task | None:
        op = self.model.op("get", self.main)
        if op is None or not self.rows(self.main):
            return None
        e = self.main.human

        def ask(row: dict[str, Any], c: Column) -> str:
            return self.choose(f"What is the {c.human} of {e} #{row['id']}?",
                               f"Look up {e} {row['id']} and tell me its {c.human}.",
                               f"I need the {c.human} recorded for the {e} with id {row['id']}.")

        picked = self.pick_read(self.main, self.readable(self.main), ask, fallback=[self.main.key])
        if picked is None:
            return None
        row, _, text, answer = picked
        turn = self.answer_turn(text, answer, op.tool, [_call(op, **{self.main.id_param: row["id"]})])
        return {"kind": "read", "turns": [turn]}

    def read_by_key(self) -> Task | None:
        op = self.model.op("find", self.main)
        if op is None or not self.rows(self.main):
            return None
        cols = self.readable(self.main)
        e = self.main.human

        def ask(row: dict[str, Any], c: Column) -> str:
            k = row[self.main.key.name]
            return self.choose(f"What's the {c.human} of the {e} with {self.main.key.human} '{k}'?",
                               f"Find the {e} '{k}' and tell me its {c.human}.",
                               f"Could you check which {c.human} the {e} '{k}' has?")

        picked = self.pick_read(self.main, [x for x in cols if x is not self.main.key] or cols, ask)
        if picked is None:
            return None
        row, _, text, answer = picked
        turn = self.answer_turn(text, answer, op.tool, [_call(op, **{self.main.key.name: row[self.main.key.name]})])
        return {"kind": "read", "turns": [turn]}

    def read_max(self) -> Task | None:
        op = self.model.op("list", self.main)
        nums = [c for c in self.main.columns if c.sqltype in ("INTEGER", "REAL")]
        if op is None or not nums or self.main.parent is not None:
            return None
        c = self.rng.choice(nums)
        rows = self.rows(self.main)
        top = max(r[c.name] for r in rows)
        best = [r for r in rows if r[c.name] == top]
        if len(best) != 1:
            return None
        e, key = self.main.human, self.main.key.name
        text = self.choose(f"Which {e} has the highest {c.human}? Tell me its {self.main.key.human}.",
                           f"Among all {self.main.humans}, which one has the largest {c.human}?")
        answer = best[0][key]
        if not self.distinct_answer(answer, text, [r[key] for r in rows if r is not best[0]]):
            return None
        return {"kind": "read", "turns": [self.answer_turn(text, answer, op.tool, [_call(op)])]}

    def read_children(self) -> Task | None:
        """How many rows of the child table belong to a main row named by its key."""
        child = next((e for e in self.model.entities if e.parent is self.main), None)
        find = self.model.op("find", self.main)
        listing = self.model.op("list", child) if child is not None else None
        row = self.pick(self.main)
        if child is None or find is None or listing is None or row is None:
            return None
        counts = {r["id"]: sum(1 for x in self.rows(child) if x[self.main.id_param] == r["id"])
                  for r in self.rows(self.main)}
        n = counts[row["id"]]
        name = self.by_name(row, self.main)
        text = self.choose(f"How many {child.humans} does {name} have?",
                           f"Count the {child.humans} that belong to {name}.")
        if not self.distinct_answer(str(n), text, [m for rid, m in counts.items() if rid != row["id"]]):
            return None
        return {"kind": "read", "turns": [self.answer_turn(text, str(n), listing.tool, [
            _call(find, **{self.main.key.name: row[self.main.key.name]}),
            _call(listing, **{self.main.id_param: row["id"]})])]}

    # -- read then write -------------------------------------------------------------------------
    def by_name(self, row: dict[str, Any], ent: Entity) -> str:
        k = row[ent.key.name]
        return self.choose(f"the {ent.human} named '{k}'", f"the {ent.human} '{k}'",
                           f"the {ent.human} whose {ent.key.human} is '{k}'")

    def rtw_write(self) -> Task | None:
        find = self.model.op("find", self.main)
        if find is None:
            return None
        writes = self.model.ops_of("update", self.main) + self.model.ops_of("status", self.main)
        writes += self.model.ops_of("delete", self.main)
        op = self.rng.choice(writes)
        row = self.pick(self.main, lambda r: op.kind != "status" or r["status"] != op.target)
        if row is None:
            return None
        lookup = _call(find, **{self.main.key.name: row[self.main.key.name]})
        subject = self.by_name(row, self.main)
        if op.kind == "update":
            turn = self.update_turn(op, row, subject)
        elif op.kind == "status":
            turn = self.status_turn(op, row, subject)
        else:
            turn = self.delete_turn(op, row, subject)
        turn["reference"].insert(0, lookup)
        turns = [turn]
        if op.kind != "delete" and self.rng.random() < 0.4:
            follow = self.follow_up(row, op)
            if follow is not None:
                turns.append(follow)
        return {"kind": "read_then_write", "turns": turns}

    def follow_up(self, row: dict[str, Any], first: Op) -> Turn | None:
        ops = [o for o in self.model.ops_of("update", self.main)
               if o.column is not self.main.key and o.column is not first.column]
        if ops and self.rng.random() < 0.5:
            return self.update_turn(self.rng.choice(ops), row, "", follow=True)
        get = self.model.op("get", self.main)
        if get is None:
            return None
        c = self.rng.choice(self.readable(self.main))
        text = self.choose(f"Thanks. What is its {c.human}?", f"And what {c.human} does it have?")
        answer = _reply(row[c.name])
        if not self.distinct_answer(answer, text, [r[c.name] for r in self.rows(self.main) if r is not row]):
            return None
        return self.answer_turn(text, answer, get.tool, [_call(get, **{self.main.id_param: row["id"]})])

    def rtw_related(self) -> Task | None:
        """Create a row of the table that points at a row named by its key (parent or child relation)."""
        children = [e for e in self.model.entities if e.parent is not None]
        child = self.rng.choice(children) if children else None
        parent = child.parent if child is not None else None
        if child is None or parent is None:
            return None
        find, create = self.model.op("find", parent), self.model.op("create", child)
        prow = self.pick(parent)
        if find is None or create is None or prow is None:
            return None
        row = self.new_row(child)
        row[parent.id_param] = prow["id"]
        phrase = f" for {self.by_name(prow, parent)}"
        turn = {"instruction": self.create_sentence(child, row, parent_phrase=phrase),
                "checks": self.created(child, row),
                "reference": [_call(find, **{parent.key.name: prow[parent.key.name]}),
                              _call(create, **self.create_args(child, row))]}
        return {"kind": "read_then_write", "turns": [turn]}

    # -- missing parameter -----------------------------------------------------------------------
    def missing_create(self) -> Task | None:
        ent, op = self.main, self.model.op("create", self.main)
        options = [c for c in ent.columns if c.required]
        if op is None or not options:
            return None
        gone = self.rng.choice(options)
        row = self.new_row(ent)
        first = {"instruction": self.create_sentence(ent, row, skip=gone.name),
                 "checks": [{"kind": "calls", "forbid": [op.tool]}, {"kind": "unchanged", "tables": []}],
                 "reference": []}
        text = self.choose(f"Sorry, I forgot: its {gone.human} should be {_say(gone, row[gone.name])}.",
                           f"The {gone.human} is {_say(gone, row[gone.name])}.",
                           f"Use {_say(gone, row[gone.name])} as the {gone.human}.")
        second = {"instruction": text, "checks": self.created(ent, row),
                  "reference": [_call(op, **self.create_args(ent, row))]}
        return {"kind": "missing_parameter", "turns": [first, second]}

    def missing_update(self) -> Task | None:
        ops = [o for o in self.model.ops_of("update", self.main) if o.column is not self.main.key]
        row = self.pick(self.main)
        if not ops or row is None:
            return None
        op = self.rng.choice(ops)
        c = op.column or self.main.key
        subject = f"{self.main.human} #{row['id']}"
        first = {"instruction": self.choose(f"Please change the {c.human} of {subject}.",
                                            f"The {c.human} of {subject} needs to be updated."),
                 "checks": [{"kind": "calls", "forbid": [op.tool]}, {"kind": "unchanged", "tables": []}],
                 "reference": []}
        second = self.update_turn(op, row, subject)
        second["instruction"] = self.choose(f"Make it {_say(c, row[c.name])}.",
                                            f"The new {c.human} is {_say(c, row[c.name])}.")
        return {"kind": "missing_parameter", "turns": [first, second]}

    # -- decline ---------------------------------------------------------------------------------
    def decline(self) -> Task | None:
        ent = self.main
        row = self.pick(ent)
        if row is None:
            return None
        k = row[ent.key.name]
        e, es = ent.human, ent.humans
        asks = [f"Export every {e} to a CSV file and email it to {self.maker.word()}@example.com.",
                f"Undo the last change that was made to the {e} '{k}'.",
                f"Restore the {e} '{k}' from last week's backup.",
                f"Print the full list of {es} on the office printer.",
                f"Send a text message to whoever is responsible for the {e} '{k}'.",
                f"Show me the full edit history of the {e} '{k}', including who changed it and when.",
                f"Schedule the {e} '{k}' to be removed automatically next Monday at 9am."]
        if self.model.op("delete", ent) is None:
            asks.append(f"Permanently delete the {e} '{k}' and everything linked to it.")
        text = self.rng.choice(asks)
        turn = {"instruction": text,
                "checks": [{"kind": "unchanged", "tables": []},
                           {"kind": "calls", "forbid": list(self.model.write_tools)},
                           {"kind": "reply_contains", "any_of": list(DECLINE_WORDS)}],
                "reference": []}
        return {"kind": "decline", "turns": [turn]}

    # -- plan ------------------------------------------------------------------------------------
    def builders(self) -> dict[str, list[Callable[[], Task | None]]]:
        return {
            "execute": [self.exec_create, self.exec_update, self.exec_delete, self.exec_status, self.exec_child,
                        self.exec_adjust],
            "read": [self.read_by_id, self.read_by_key, self.read_max, self.read_children],
            "read_then_write": [self.rtw_write, self.rtw_related],
            "missing_parameter": [self.missing_create, self.missing_update],
            "decline": [self.decline],
        }


def _first_feasible(tm: TaskMaker, options: list[Callable[[], Task | None]]) -> Task | None:
    for build in options:
        tm.reset()
        task = build()
        if task is not None:
            return task
    return None


def _mixed(tm: TaskMaker, plan: dict[str, list[Callable[[], Task | None]]], mix: dict[str, int],
           max_tasks: int) -> list[Task]:
    """Tasks by a blueprint's task mix: one of each wanted kind first, then the rest in rotation."""
    # missing_parameter (two turns, the costliest to validate) goes last, so a small max_tasks drops it first
    order = sorted((k for k, n in mix.items() if n > 0 and k in plan), key=lambda k: k == "missing_parameter")
    left = {k: mix[k] for k in order}
    tasks: list[Task] = []
    while left and len(tasks) < max_tasks:
        for kind in list(left):
            if len(tasks) >= max_tasks:
                break
            task = _first_feasible(tm, plan[kind])
            plan[kind] = plan[kind][1:] + plan[kind][:1]
            left[kind] -= 1
            if left[kind] <= 0:
                del left[kind]
            if task is not None:
                tasks.append(task)
    return tasks


def build_tasks(model: EnvModel, rng: random.Random, maker: ValueMaker, max_tasks: int = 8,
                mix: dict[str, int] | None = None) -> list[Task]:
    """4-8 tasks (at most ``max_tasks``), one of every kind first, then extra ones of varied kinds.

    With ``mix`` (task kind → how many, a blueprint's task mix) the tasks follow it instead.
    """
    tm = TaskMaker(model, rng, maker)
    plan = tm.builders()
    for options in plan.values():
        rng.shuffle(options)
    if mix is not None:
        tasks = _mixed(tm, plan, mix, max_tasks)
        for i, task in enumerate(tasks):
            task["id"] = f"t{i}_{task['kind']}"
        return tasks
    tasks: list[Task] = []
    for options in plan.values():
        task = _first_feasible(tm, options)
        if task is not None:
            tasks.append(task)
        options[:] = options[1:] + options[:1]
    # Extra tasks are mostly reads: they are cheap to validate (3 trajectories, against 5-9 for a write).
    want = min(max_tasks, max(len(tasks), rng.choice((5, 5, 6, 6))))
    extra_kinds = ["execute", "read_then_write", "missing_parameter"]
    rng.shuffle(extra_kinds)
    extra_kinds = ["read", *extra_kinds[:1], "read", *extra_kinds[1:]]
    for kind in extra_kinds:
        if len(tasks) >= want:
            break
        task = _first_feasible(tm, plan[kind])
        plan[kind] = plan[kind][1:] + plan[kind][:1]
        if task is not None:
            tasks.append(task)
    if len(tasks) > max_tasks:  # fewer than five allowed: keep the others, drop missing_parameter first
        tasks.sort(key=lambda t: t["kind"] == "missing_parameter")
        tasks = tasks[:max_tasks]
    for i, task in enumerate(tasks):
        task["id"] = f"t{i}_{task['kind']}"
    return tasks

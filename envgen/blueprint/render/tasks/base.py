"""The task writer's world, checks and phrasing: what every task shape builds on.

Role: :class:`Base` holds the rows a task sees (the seed rows, changed by the
task's earlier turns), picks rows and values from the seeded random source,
writes the ``sql``/``unchanged`` checks that pin a turn's state and the
``reply_contains`` checks that pin its answer, and phrases records, values and
requests. The shapes (:mod:`.writes`, :mod:`.reads`, :mod:`.chains`,
:mod:`.rules`, :mod:`.talks`) are mixins over it.

Contract (what the validity gate relies on, rules 4, 5 and 7):

* :meth:`Base.touched` pins every written row with exact values, every other
  row of each written table, and every other table (``unchanged``), so
  doing nothing, dropping a write, aiming it at another row, perturbing any
  argument or writing anywhere else fails.
* :meth:`Base.distinct_answer` accepts a ``reply_contains`` string only when
  the gate's distinctiveness rule holds (not in the instruction, a tool
  description or a generic reply) and no rival value (another row's value of
  the same column) contains it.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

from envgen.blueprint.render.difficulty import Profile
from envgen.blueprint.render.model import Column, Entity, EnvModel, Op
from envgen.blueprint.render.tools import render_tools
from envgen.blueprint.render.values import ValueMaker, sql_literal
from envgen.gate.replies import GENERIC_REPLIES, answer_problem, tool_texts
from envgen.gate.values import answer_text, same_answer

__all__ = ["DECLINE_WORDS", "Base", "Picked", "Task", "Turn", "call", "count_check", "others_check", "row_check",
           "say"]

DECLINE_WORDS = ["cannot", "can't", "unable", "not able", "not possible", "sorry", "not supported"]
"""What a refusal says: a decline turn's, or a business rule's refusal, reply contains one of them."""

Task = dict[str, Any]
Turn = dict[str, Any]
Row = dict[str, Any]
Check = dict[str, Any]
Picked = tuple[Row, Column, str, str]  #: a row, a column, the question, its answer
ORDINALS = ("first", "second", "third", "fourth", "fifth")


def article(word: str) -> str:
    return ("an " if word[:1] in "aeiou" else "a ") + word


def say(c: Column, v: Any) -> str:
    """A value as an instruction states it."""
    if c.sqltype == "TEXT":
        return f"'{v}'"
    if c.sqltype == "BOOLEAN":
        return "true" if v else "false"
    return repr(v)


def reply_text(v: Any) -> str:
    return repr(v) if isinstance(v, float) else str(v)


def arg(c: Column, v: Any) -> Any:
    return bool(v) if c.sqltype == "BOOLEAN" else v


def join(parts: list[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def _cols(names: list[str]) -> str:
    return ", ".join(f'"{c}"' for c in names)


def row_check(ent: Entity, row: Row, by_key: bool = False) -> Check:
    """The row (by id, or by key for a created row) holds exactly these values."""
    cols = ent.stored_columns()
    where = f'"{ent.key.name}" = {sql_literal(row[ent.key.name])}' if by_key else f'"id" = {row["id"]}'
    return {"kind": "sql", "query": f'SELECT {_cols(cols)} FROM "{ent.table}" WHERE {where}',
            "expect": [[row[c] for c in cols]]}


def others_check(ent: Entity, rows: list[Row], where: str) -> Check:
    """The rows of ``ent``'s table matching ``where`` (all but the written ones) are exactly ``rows``."""
    cols = ["id", *ent.stored_columns()]
    query = f'SELECT {_cols(cols)} FROM "{ent.table}"' + (f" WHERE {where}" if where else "") + ' ORDER BY "id"'
    expect = [[r[c] for c in cols] for r in sorted(rows, key=lambda r: r["id"])]
    return {"kind": "sql", "query": query, "expect": expect, "ordered": True}


def count_check(ent: Entity, n: int, where: str = "") -> Check:
    """The table of ``ent`` has ``n`` rows matching ``where`` (all rows without one)."""
    query = f'SELECT count(*) FROM "{ent.table}"' + (f" WHERE {where}" if where else "")
    return {"kind": "sql", "query": query, "expect": [[n]]}


def call(op: Op, **arguments: Any) -> dict[str, Any]:
    """A reference call of ``op``'s tool."""
    return {"name": op.tool, "arguments": arguments}


class Base:
    """The world of one task and the helpers every shape uses; every choice comes from ``rng``."""

    def __init__(self, model: EnvModel, rng: random.Random, maker: ValueMaker, profile: Profile):
        self.model = model
        self.rng = rng
        self.maker = maker
        self.profile = profile
        self.main = next(o.entity for o in model.ops if o.kind == "update")
        self.world: dict[str, list[Row]] = {}
        self.tool_texts = tool_texts(render_tools(model))
        self.goal = 1  #: how many turns the task being written aims at (the profile's range)
        self.last: tuple[Entity, Row] | None = None  #: the record the task changed last
        self.reset()

    # -- world -----------------------------------------------------------------------------------
    def reset(self) -> None:
        """Back to the seed rows, for the next task (which draws its turn goal)."""
        self.world = {e.table: copy.deepcopy(e.rows) for e in self.model.entities}
        self.goal = self.rng.randint(*self.profile.turns)
        self.last = None
        self.recent: list[tuple[Entity, Row]] = []  #: the records the task changed, in order

    def note(self, ent: Entity, *rows: Row) -> None:
        """Remember the records a turn changed (the last one last)."""
        for row in rows:
            self.recent = [(e, r) for e, r in self.recent if r is not row] + [(ent, row)]
            self.last = (ent, row)

    def rows(self, ent: Entity) -> list[Row]:
        return self.world[ent.table]

    def pick(self, ent: Entity, where: Callable[[Row], bool] | None = None) -> Row | None:
        rows = [r for r in self.rows(ent) if where is None or where(r)]
        return self.rng.choice(rows) if rows else None

    def pick_many(self, ent: Entity, n: int, where: Callable[[Row], bool] | None = None) -> list[Row]:
        """``n`` distinct rows (fewer when fewer qualify), in id order."""
        rows = [r for r in self.rows(ent) if where is None or where(r)]
        return sorted(self.rng.sample(rows, min(n, len(rows))), key=lambda r: r["id"])

    def row_by_id(self, ent: Entity, rid: int) -> Row | None:
        return next((r for r in self.rows(ent) if r["id"] == rid), None)

    def children(self, parent: Entity) -> list[Entity]:
        return [e for e in self.model.entities if e.parent is parent]

    def held(self, child: Entity, prow: Row) -> list[Row]:
        """The rows of ``child`` that belong to the parent row ``prow`` (id order)."""
        pid = child.parent.id_param if child.parent is not None else ""
        return [r for r in self.rows(child) if r.get(pid) == prow["id"]]

    def new_row(self, ent: Entity) -> Row:
        used = {r[ent.key.name] for r in self.rows(ent)}
        row: Row = {"id": max([r["id"] for r in self.rows(ent)], default=0) + 1}
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

    def key(self, row: Row, ent: Entity) -> str:
        return str(row[ent.key.name])

    # -- state checks ----------------------------------------------------------------------------
    def rest_unchanged(self, *written: Entity) -> list[Check]:
        """An ``unchanged`` check on every table the turn does not write (none when it writes them all)."""
        names = {e.table for e in written}
        rest = [e.table for e in self.model.entities if e.table not in names]
        return [{"kind": "unchanged", "tables": rest}] if rest else []

    def touched(self, *groups: tuple[Entity, list[Row]], created: tuple[Row, ...] = ()) -> list[Check]:
        """After writes to ``rows`` of each ``(entity, rows)`` (already in the world): each row exactly
        (a ``created`` one by its key), every other row of its table, and every other table unchanged."""
        checks: list[Check] = []
        ents: list[Entity] = []
        for ent, rows in groups:
            ents.append(ent)
            made = [r for r in rows if any(r is c for c in created)]
            kept = [r for r in rows if not any(r is c for c in created)]
            checks += [row_check(ent, r, by_key=True) for r in made] + [row_check(ent, r) for r in kept]
            keys = {r[ent.key.name] for r in made}
            ids = {r["id"] for r in kept}
            others = [r for r in self.rows(ent) if r["id"] not in ids and r[ent.key.name] not in keys]
            parts = []
            if keys:
                parts.append(f'"{ent.key.name}" NOT IN ({", ".join(sql_literal(k) for k in sorted(keys))})')
            if ids:
                parts.append(f'"id" NOT IN ({", ".join(str(i) for i in sorted(ids))})')
            checks.append(others_check(ent, others, " AND ".join(parts)))
        return checks + self.rest_unchanged(*ents)

    def write_checks(self, ent: Entity, row: Row, *, by_key: bool = False) -> list[Check]:
        """After a create or update of ``row`` (already in the world)."""
        self.note(ent, row)
        return self.touched((ent, [row]), created=(row,) if by_key else ())

    def created(self, ent: Entity, row: Row) -> list[Check]:
        """Add a created row to the world; the checks of its turn."""
        self.rows(ent).append(row)
        return self.write_checks(ent, row, by_key=True)

    def nothing_changed(self) -> list[Check]:
        return [{"kind": "unchanged", "tables": []}]

    # -- phrasing --------------------------------------------------------------------------------
    def describe_values(self, ent: Entity, row: Row, skip: str | None = None) -> str:
        return join([f"{c.human} {say(c, row[c.name])}" for c in ent.columns if c.name != skip])

    def create_args(self, ent: Entity, row: Row) -> dict[str, Any]:
        args: dict[str, Any] = {}
        if ent.parent is not None:
            args[ent.parent.id_param] = row[ent.parent.id_param]
        for c in ent.all_columns():
            args[c.name] = arg(c, row[c.name])
        return args

    def create_sentence(self, ent: Entity, row: Row, skip: str | None = None, parent_phrase: str | None = None) -> str:
        k = f"{ent.key.human} '{row[ent.key.name]}'"
        vals = self.describe_values(ent, row, skip)
        with_vals = f" with {vals}" if vals else ""
        under = ""
        if ent.parent is not None:
            under = parent_phrase or f" under {ent.parent.human} #{row[ent.parent.id_param]}"
        return self.choose(
            f"Add a new {ent.human} with {k}{with_vals}{under}.",
            f"Please create {article(ent.human)}{under}: {k}{', ' + vals if vals else ''}.",
            f"I need a new {ent.human} record{under}. Use {k}{with_vals}.",
            f"Register {article(ent.human)} ({k}){under}{with_vals}.",
        )

    def by_name(self, row: Row, ent: Entity) -> str:
        k = row[ent.key.name]
        return self.choose(f"the {ent.human} named '{k}'", f"the {ent.human} '{k}'",
                           f"the {ent.human} whose {ent.key.human} is '{k}'")

    def by_id(self, row: Row, ent: Entity) -> str:
        return self.choose(f"{ent.human} #{row['id']}", f"the {ent.human} with id {row['id']}")

    def lookup(self, ent: Entity, row: Row) -> dict[str, Any] | None:
        """The call that finds ``row`` by its key (None without a find tool)."""
        find = self.model.op("find", ent)
        return call(find, **{ent.key.name: row[ent.key.name]}) if find is not None else None

    def named(self, ent: Entity, row: Row, keyed: bool) -> tuple[str, list[dict[str, Any]]]:
        """How a turn names ``row``: by key with the lookup it needs (``keyed`` and a find tool), else by id."""
        look = self.lookup(ent, row) if keyed else None
        if look is not None:
            return self.by_name(row, ent), [look]
        return self.by_id(row, ent), []

    # -- answers ---------------------------------------------------------------------------------
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

    def refusal_ok(self, instruction: str) -> bool:
        """Whether every refusal word is distinctive for ``instruction`` (a business-rule refusal's check)."""
        return all(answer_problem(w, instruction, self.tool_texts, GENERIC_REPLIES) is None for w in DECLINE_WORDS)

    def answer_turn(self, text: str, answer: str, tool: str, reference: list[dict[str, Any]]) -> Turn:
        return {"instruction": text,
                "checks": [{"kind": "reply_contains", "any_of": [answer]}, {"kind": "calls", "require": [tool]},
                           *self.nothing_changed()],
                "reference": reference}

    def value_answer(self, ent: Entity, row: Row, c: Column, text: str) -> str | None:
        """``row``'s value of ``c`` as a distinct answer to ``text``, or None."""
        answer = reply_text(row[c.name])
        rivals = [r[c.name] for r in self.rows(ent) if r is not row]
        return answer if self.distinct_answer(answer, text, rivals) else None

    def pick_read(self, ent: Entity, cols: list[Column], ask: Callable[[Row, Column], str],
                  fallback: list[Column] | None = None, tries: int = 12,
                  where: Callable[[Row], bool] | None = None) -> Picked | None:
        """A row, a column of it and the question ``ask(row, column)`` whose answer is a distinct value
        (from ``cols``, else from ``fallback``)."""
        rows = [r for r in self.rows(ent) if where is None or where(r)]
        pairs: list[tuple[Row, Column]] = []
        for group in (cols, [c for c in fallback or [] if c not in cols]):
            some = [(r, c) for r in rows for c in group]
            self.rng.shuffle(some)
            pairs += some[:tries]
        for row, c in pairs:
            text = ask(row, c)
            answer = self.value_answer(ent, row, c, text)
            if answer is not None:
                return row, c, text, answer
        return None

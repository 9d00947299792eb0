"""The task writer's ground: the seed state, the simulator, drafts, and checks derived from what happens.

Role: a task family (:mod:`envgen.world.tasks.families`) writes a :class:`Draft`: turns, each with what
the user says, the reference calls a careful agent makes, and what the turn is (a write, a read with
answers, a refusal). :meth:`Writer.finish` then **runs** the draft on the simulator, turn by turn, and
derives each turn's checks from the state the reference reaches:

* a write turn: each row it changed or inserted, pinned by its key with every value (``sql``), each row
  it deleted counted (``sql``), and the digest of every table (``state``), so nothing else may change;
* a read turn: nothing changes (``unchanged``) and the reply gives each answer (``reply_contains``, with
  the answer's other spellings: ``$1,250.00`` and ``1250.00``; ``3`` and ``three``);
* a refusal: nothing changes (``unchanged``), and for a rule only the policy enforces, the forbidden
  tool was not even tried (``calls`` with ``forbid``); it ``expects`` a ``decline``, and a turn that asks back
  (for a yes before a write, for who is asking) an ``ask``. Its reference holds the reads that find that out.

A search returns a page (:mod:`envgen.world.render`), and so does a lookup's list of a record's child records: the
reference reads on to the page that holds the record it acts on or answers with, and every page when the task
chooses among the records or sums them (:meth:`Writer._pages`).

A draft may withhold tools (``withheld``) until a turn reveals them (``reveal``): the task's ``withheld_tools``
and that turn's ``reveal_tools`` (:mod:`envgen.world.tasks.withheld`).

Contract: a draft whose reference call fails, or whose write turn changes nothing, is dropped (the
family's own bug, never the agent's); :meth:`Writer.finish` returns ``None`` for it.
"""

from __future__ import annotations

import copy
import dataclasses
import random
from dataclasses import dataclass
from typing import Any

from envgen.gate.replies import GENERIC_REPLIES, answer_problem, tool_texts
from envgen.world.kinds import say_money
from envgen.world.model import Entity, Op, World
from envgen.world.phrase import Voice
from envgen.world.sim import Run, Simulator

__all__ = ["Draft", "DraftTurn", "Writer", "number_answers"]

Row = dict[str, Any]
Call = dict[str, Any]
_EXPECTS = {"ask": "ask", "refuse": "decline"}
"""A draft turn's kind -> the spec turn's ``expects`` (a turn that changes nothing and has no answer to give)."""


def number_answers(n: Any) -> list[str]:
    """A count as a ``reply_contains`` string: the runtime also finds it written as a word (``three``)."""
    return [str(n)]


def money_answers(cents: int, currency: str) -> list[str]:
    """``$1,250.00``, ``1,250.00`` and ``1250.00`` (and ``1250`` for a whole amount)."""
    text = say_money(cents, currency)
    plain = f"{cents / 100:.2f}"
    out = [text.lstrip("$€£").split(" ")[0], plain]
    return list(dict.fromkeys(out))


@dataclass
class DraftTurn:
    """One turn of a draft."""

    say: str
    calls: list[Call] = dataclasses.field(default_factory=list)
    kind: str = "write"  #: ``write``, ``read``, ``refuse``, ``ask`` (the agent must ask, nothing changes)
    answers: list[list[str]] = dataclasses.field(default_factory=list)  #: read: each answer's spellings
    forbid: list[str] = dataclasses.field(default_factory=list)  #: tools the turn must not even try
    body: str = ""  #: the request without its opener (to ask it mid-conversation)
    reveal: list[str] = dataclasses.field(default_factory=list)  #: tools of the draft's ``withheld`` offered from here
    sums: bool = False  #: its answer sums a looked-up record's child records (a total): every page of them is read


@dataclass
class Draft:
    """A task before its checks: a kind (gym_envs' task kinds), a family name and turns."""

    kind: str
    family: str
    turns: list[DraftTurn]
    hops: int = 0  #: the dependency depth of its writes (what the family built it to need)
    choose: bool = False  #: it needs a filter-and-choose step
    rules: list[Any] = dataclasses.field(default_factory=list)  #: the policy rules it tests
    scope: Any = None  #: the id of the scope record whose owner asks (a session adds requests of the same one)
    staff: bool = False  #: a member of staff asks about no one record of theirs (a session adds more staff requests)
    voice: Any = None  #: who asks (:class:`~envgen.world.phrase.Voice`), where a scenario task may withhold who
    withheld: list[str] = dataclasses.field(default_factory=list)  #: tools not offered until a turn reveals them

    @property
    def policy(self) -> bool:
        return bool(self.rules)


class Writer:
    """Everything a family needs: the world, the seed rows, the simulator, the seeded choices."""

    def __init__(self, world: World, sim: Simulator, rng: random.Random):
        self.world = world
        self.sim = sim
        self.rng = rng
        run = sim.run()
        self.tables = run.tables()
        run.close()
        self.by_id = {t: {r["id"]: r for r in rows} for t, rows in self.tables.items()}
        self.tool_texts = tool_texts(sim.spec.tools)
        #: each search tool's table and key: a search returns one page (:mod:`envgen.world.render`)
        self.listings = {o.name: (o.entity.table, o.entity.key.name) for o in world.ops if o.kind == "search"}
        #: each lookup's lists of child records, paged alike
        self.child_lists = {o.name: world.children(o.entity) for o in world.ops if o.kind == "lookup"}
        self.main_tables = {e.table for e in world.entities if e.role == "main"}
        self.base: list[Call] = []  #: calls every attempt runs first (a session's earlier requests)

    def after(self, calls: list[Call]) -> Writer | None:
        """This writer as the world stands after ``calls`` (run from its own state), or None when one fails.

        A session's next request is drawn on it, so what that request says ("my most recent pending order"),
        the answers it expects and the refusals it meets hold after the earlier requests were served."""
        run = self.sim.run()
        try:
            if any(not r.ok for r in run.calls([*self.base, *calls])):
                return None
            tables = run.tables()
        finally:
            run.close()
        w = copy.copy(self)
        w.base = [*self.base, *calls]
        w.tables = tables
        w.by_id = {t: {r["id"]: r for r in rows} for t, rows in tables.items()}
        return w

    # -- reading the seed state -----------------------------------------------------------------------
    def rows(self, ent: Entity) -> list[Row]:
        return self.tables.get(ent.table, [])

    def row(self, ent: Entity, row_id: Any) -> Row | None:
        return self.by_id.get(ent.table, {}).get(row_id)

    def owned(self, ent: Entity, owner: Row) -> list[Row]:
        """The records of ``ent`` that belong to ``owner`` (through ``ent``'s parent reference)."""
        par = ent.parent
        if par is None:
            return []
        return [r for r in self.rows(ent) if r[par.column] == owner["id"]]

    def ref_row(self, ent: Entity, row: Row, ref_name: str) -> Row | None:
        ref = next((r for r in ent.refs if r.name == ref_name), None)
        return None if ref is None else self.row(ref.entity, row[ref.column])

    def voice(self, person: Row | None, p: Entity | None = None) -> Voice:
        """The speaker: ``person`` (a row of the person entity ``p``), or a member of staff when None."""
        if person is not None and p is not None:
            name_field = next((f.name for f in p.fields if f.kind == "person_name"), None)
            name = person[name_field] if name_field else person[p.key.name]
            return Voice(self.rng, str(name), str(person[p.key.name]), operator=False)
        from envgen.world.data import faker_pool

        name = f"{self.rng.choice(faker_pool('first_name'))} {self.rng.choice(faker_pool('last_name'))}"
        return Voice(self.rng, name, None, operator=True)

    def tool(self, kind: str, ent: Entity, by: str | None = None) -> Op | None:
        for op in self.world.ops_of(kind, ent):
            if by is None or op.by == by or (op.by is None and ent.parent is not None and ent.parent.name == by):
                return op
        return None

    # -- running drafts -------------------------------------------------------------------------------
    def attempt(self, prefix: list[Call], call: Call) -> tuple[bool, Any]:
        """Whether ``call`` succeeds after ``prefix`` (run from the seed), and its result or error."""
        run = self.sim.run()
        try:
            failed = next((r for r in run.calls([*self.base, *prefix]) if not r.ok), None)
            if failed is not None:
                return False, f"the reference's own {failed.name} failed: {failed.error}"
            res = run.call(call["name"], call["arguments"])
            return res.ok, (res.result if res.ok else res.error)
        finally:
            run.close()

    def finish(self, draft: Draft, index: int) -> dict[str, Any] | None:
        """The task of a draft, with checks from running it (see the module docstring), or None.

        Each turn's reference is the calls its draft turn makes, no more and no fewer: a turn that asks back or
        declines keeps the reads that find out it must (the record's state, whose record it is), and the turn after
        it holds only what it needs itself. Such a turn's ``expects`` (``ask`` or ``decline``) tells the gate that
        its reads lead to no answer, so no reply check is wanted for them. A search's reference reads on to the
        pages it needs (:meth:`_pages`)."""
        used = _used_values(draft)
        run = self.sim.run()
        try:
            turns = []
            for t in draft.turns:
                before = run.digests()
                start = run.tables()
                calls: list[Call] = []
                whole = self._whole(draft, t)
                for c in t.calls:
                    r = run.call(c["name"], c["arguments"])
                    if not r.ok:
                        return None
                    calls += [c, *self._pages(run, c, r.result, used, whole, self._covered(t.calls, c))]
                checks = self._checks(t, start, run, before)
                if checks is None or not self._distinct(t, checks):
                    return None
                turns.append({"instruction": t.say, "checks": checks, "reference": calls})
                if t.kind in _EXPECTS and not t.answers:
                    turns[-1]["expects"] = _EXPECTS[t.kind]
                if t.reveal:
                    turns[-1]["reveal_tools"] = list(t.reveal)
        finally:
            run.close()
        task: dict[str, Any] = {"id": f"t{index}_{draft.family}", "kind": draft.kind, "turns": turns}
        if draft.withheld:
            task["withheld_tools"] = list(draft.withheld)
        numbers = sorted({i + 1 for i, r in enumerate(self.world.policy) if any(r is x for x in draft.rules)})
        if numbers:
            task["policy"] = numbers
        return task

    def _pages(self, run: Run, call: Call, result: Any, used: tuple[set[str], set[str]],
               whole: set[str], covered: set[str]) -> list[Call]:
        """The calls that read on after the first page ``result`` of a listing (``call``: a search, or a lookup with
        lists of child records), as a careful agent does: every page of a list whose table is in ``whole`` (the task
        chooses among its records, or sums them), else up to the last page that holds a record the task needs: one
        whose key it uses (``used[0]``: the values its calls pass, its answers) or that shows one of its answers as
        text (``used[1]``). A lookup's list of a table in ``covered`` (another call of the turn searches the same
        records) is not read on; no call reads on after a page it asked for."""
        lists = [(t, k, nxt) for t, k, nxt in self._lists(call["name"]) if t not in covered]
        if not lists or "offset" in call["arguments"] or not isinstance(result, dict):
            return []
        pages: list[Call] = []
        keep = 0
        offset = _next_offset(result, lists)
        while offset is not None:
            page = {"name": call["name"], "arguments": {**call["arguments"], "offset": offset}}
            r = run.call(page["name"], page["arguments"])
            if not r.ok or not isinstance(r.result, dict):
                break
            pages.append(page)
            for table, key, _ in lists:
                rows = r.result.get(table) or []
                if rows and (table in whole or any(_needed(row, key, used) for row in rows)):
                    keep = len(pages)
            offset = _next_offset(r.result, lists)
        return pages[:keep]

    def _whole(self, draft: Draft, t: DraftTurn) -> set[str]:
        """The tables whose every page a turn's reference reads: every search's and the main records' when the task
        chooses among records (a search's listing, or a container lookup's list of its main records), and a looked-up
        record's child lists when the turn's answer sums them (``t.sums``)."""
        out = {table for table, _ in self.listings.values()} | self.main_tables if draft.choose else set()
        if t.sums:
            out |= {c.table for children in self.child_lists.values() for c in children}
        return out

    def _lists(self, tool: str) -> list[tuple[str, str, str]]:
        """The paged lists a tool's result holds: ``(table, key, next-offset field)`` of a search's records, or of
        each child list of a lookup."""
        if tool in self.listings:
            table, key = self.listings[tool]
            return [(table, key, "next_offset")]
        return [(c.table, c.key.name, f"{c.table}_next_offset") for c in self.child_lists.get(tool, [])]

    def _covered(self, calls: list[Call], call: Call) -> set[str]:
        """The tables a search among ``calls`` lists for a record ``call`` names (the same key value): a lookup need
        not read on through its list of those records."""
        if call["name"] not in self.child_lists:
            return set()
        named = {str(v) for v in call["arguments"].values()}
        return {self.listings[c["name"]][0] for c in calls if c is not call and c["name"] in self.listings
                and named & {str(v) for v in c["arguments"].values()}}

    def _distinct(self, t: DraftTurn, checks: list[dict[str, Any]]) -> bool:
        """Keep only the answer spellings the gate finds distinctive; False when an answer keeps none."""
        for c in checks:
            if c["kind"] == "reply_contains":
                c["any_of"] = [a for a in c["any_of"]
                               if answer_problem(a, t.say, self.tool_texts, GENERIC_REPLIES) is None]
                if not c["any_of"]:
                    return False
        return True

    def _checks(self, t: DraftTurn, start: dict[str, list[Row]], run: Run,
                before: dict[str, str]) -> list[dict[str, Any]] | None:
        after = run.digests()
        changed = [name for name, d in after.items() if before.get(name) != d]
        if t.kind != "write":
            if changed:
                return None
            checks: list[dict[str, Any]] = [{"kind": "unchanged", "tables": []}]
            checks += [{"kind": "reply_contains", "any_of": a} for a in t.answers]
            if t.forbid:
                checks.append({"kind": "calls", "forbid": list(t.forbid)})
            return checks
        if not changed:
            return None
        now = run.tables()
        checks = []
        for table in changed:
            checks += self._row_checks(table, start.get(table, []), now.get(table, []))
        checks.append({"kind": "state", "digests": {name: after[name] for name in sorted(after)}})
        checks += [{"kind": "reply_contains", "any_of": a} for a in t.answers]
        return checks

    def _row_checks(self, table: str, old: list[Row], new: list[Row]) -> list[dict[str, Any]]:
        ent = next((e for e in self.world.entities if e.table == table), None)
        key = ent.key.name if ent is not None else "id"
        olds = {r["id"]: r for r in old}
        news = {r["id"]: r for r in new}
        out = []
        for rid, row in news.items():
            prev = olds.get(rid)
            if prev == row:
                continue
            cols = [c for c in row if c != "id" and (prev is None or prev.get(c) != row[c])]
            shown = [c for c in row if c not in ("id", key)]
            cols = cols if prev is not None else shown
            where = f'"{key}" = ' + _lit(row[key])
            out.append({"kind": "sql", "query": f'SELECT {", ".join(_q(c) for c in cols)} FROM "{table}" WHERE {where}',
                        "expect": [[row[c] for c in cols]]})
        for rid, row in olds.items():
            if rid not in news:
                out.append({"kind": "sql", "query": f'SELECT count(*) FROM "{table}" WHERE "{key}" = {_lit(row[key])}',
                            "expect": [[0]]})
        return out


def _next_offset(result: dict[str, Any], lists: list[tuple[str, str, str]]) -> Any:
    """The offset of the next page of any of ``lists`` in a result (a lookup pages its lists together), or None."""
    return min((o for _, _, nxt in lists if (o := result.get(nxt)) is not None), default=None)


def _needed(row: Any, key: str, used: tuple[set[str], set[str]]) -> bool:
    """Whether a listed record (a dict, or a key a lookup lists) is one a task needs (:meth:`Writer._pages`)."""
    values, answers = used
    if not isinstance(row, dict):
        return str(row) in values or str(row) in answers
    return str(row.get(key)) in values or any(isinstance(v, str) and v in answers for v in row.values())


def _used_values(draft: Draft) -> tuple[set[str], set[str]]:
    """Every value a draft's calls pass (at any depth) and every answer it expects, as text; and its answers."""
    answers = {a for t in draft.turns for answer in t.answers for a in answer}
    out = set(answers)
    stack: list[Any] = [c["arguments"] for t in draft.turns for c in t.calls]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack += list(v.values())
        elif isinstance(v, list):
            stack += v
        elif v is not None:
            out.add(str(v))
    return out, answers


def _q(name: str) -> str:
    return f'"{name}"'


def _lit(v: Any) -> str:
    if isinstance(v, int | float):
        return repr(v)
    return "'" + str(v).replace("'", "''") + "'"

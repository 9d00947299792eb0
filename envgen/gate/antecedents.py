"""The antecedent rule: a turn that says "it", "its" or "the same" must leave one record it can mean.

Role: a validity rule of the gate (gym_envs/ENVSPEC.md, rule 9). A later turn of a conversation often refers
back ("and what is its total now?"). When the turn before it named two records, or changed two, a person
could not tell which one "it" is, and a reference that picks one of them teaches a guess. The rule finds,
for every turn after the first whose instruction holds such a word, the records it could mean:

* the records the same instruction names by a key before the word (a value of a table's unique text
  column: ``ORD-20417``), when it names any: the nearest antecedent;
* else the records the previous turn's instruction names by a key, and the records the previous turn's
  reference changed (rows inserted, updated or deleted, found by running the reference), each counted once.

"It" never means a person: records of a table whose unique column holds email addresses are not counted.

More than one is an ambiguous antecedent: the spec is rejected with a reason naming the turn, the word and
the candidates. :func:`scan` counts the ambiguous turns of any set of specs (``envwright stats``).

Contract: never raises for a spec whose state builds; a reference call that fails is ignored here (rule 3
reports it).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from typing import Any

from gym_envs.sandbox import Executor
from gym_envs.sandbox.inprocess import InProcessExecutor
from gym_envs.spec import EnvSpec

__all__ = ["PRONOUN", "antecedent_problems", "scan"]

PRONOUN = re.compile(r"\b(it|its|it's|the same one|the same|that one)\b", re.IGNORECASE)
_MIN_KEY = 4  # shorter key values (a "1", "ok") are too common to be a mention


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$", re.IGNORECASE)


def _keys(spec: EnvSpec) -> tuple[dict[str, tuple[str, Any]], set[str]]:
    """Each key value of the seed state (lowercased) -> (table, the row's id) over unique text columns, and the
    tables of people (a unique column of email addresses)."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(spec.state.schema_sql)
        conn.executescript(spec.state.seed_sql)
        out: dict[str, tuple[str, Any]] = {}
        people: set[str] = set()
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for t in tables:
            q = t.replace('"', '""')
            unique = {r[2] for idx in conn.execute(f'PRAGMA index_list("{q}")') if idx[2]
                      for r in conn.execute(f'PRAGMA index_info("{idx[1]}")')}
            types = {r[1]: (r[2] or "").upper() for r in conn.execute(f'PRAGMA table_info("{q}")')}
            for col in sorted(c for c in unique if c and "TEXT" in types.get(c, "")):
                c = col.replace('"', '""')
                for rowid, value in conn.execute(f'SELECT rowid, "{c}" FROM "{q}"'):
                    if isinstance(value, str) and len(value) >= _MIN_KEY:
                        out.setdefault(value.lower(), (t, rowid))
                        if _EMAIL.match(value):
                            people.add(t)
        return out, people
    except sqlite3.Error:
        return {}, set()
    finally:
        conn.close()


def _named(text: str, keys: dict[str, tuple[str, Any]]) -> set[tuple[str, Any]]:
    low = text.lower()
    return {rec for k, rec in keys.items() if k in low and re.search(rf"(?<![\w-]){re.escape(k)}(?![\w-])", low)}


def _changed(before: dict[str, Any], after: dict[str, Any]) -> set[tuple[str, Any]]:
    """Records (table, row key) that differ between two dumps."""
    out: set[tuple[str, Any]] = set()
    for t in set(before) | set(after):
        old = {next(iter(r)): tuple(r) for r in before.get(t, {}).get("rows", [])}
        new = {next(iter(r)): tuple(r) for r in after.get(t, {}).get("rows", [])}
        out |= {(t, k) for k in set(old) | set(new) if old.get(k) != new.get(k)}
    return out


def antecedent_problems(spec: EnvSpec, executor: Executor | None = None) -> list[str]:
    """Why turns of ``spec`` refer back ambiguously (empty when none does); see the module docstring."""
    keys, people = _keys(spec)
    own = executor is None
    ex = executor or InProcessExecutor()
    problems: list[str] = []
    try:
        for task in spec.tasks:
            if len(task.turns) < 2 or not any(PRONOUN.search(t.instruction) for t in task.turns[1:]):
                continue
            session = ex.session(spec, 0, start=False)
            session.setup = tuple(task.setup_sql)  # the task's own starting state
            session.open(0)
            try:
                previous: set[tuple[str, Any]] = set()
                for i, turn in enumerate(task.turns):
                    match = PRONOUN.search(turn.instruction) if i > 0 else None
                    if match is not None:
                        here = {r for r in _named(turn.instruction[:match.start()], keys) if r[0] not in people}
                        could = here or {r for r in previous if r[0] not in people}
                        if len(could) > 1:
                            shown = sorted(f"{t}#{k}" for t, k in could)[:4]
                            problems.append(f"task {task.id!r} turn {i + 1}: {match.group(0)!r} could mean any of "
                                            f"{len(could)} records ({', '.join(shown)}): the turn named, or the turn "
                                            "before named or changed, more than one; name the record instead")
                    before = session.dump(None, limit=100_000)
                    for call in turn.reference:
                        session.call(call.name, dict(call.arguments))
                    after = session.dump(None, limit=100_000)
                    previous = _named(turn.instruction, keys) | _changed(before, after)
            finally:
                session.close()
    finally:
        if own:
            ex.close()
    return problems


def scan(specs: Iterable[EnvSpec]) -> tuple[int, int, list[str]]:
    """``(turns that refer back, ambiguous ones, the first problems)`` over ``specs``."""
    ex = InProcessExecutor()
    refer = ambiguous = 0
    shown: list[str] = []
    try:
        for spec in specs:
            refer += sum(1 for t in spec.tasks for u in t.turns[1:] if PRONOUN.search(u.instruction))
            found = antecedent_problems(spec, ex)
            ambiguous += len(found)
            shown += [f"{spec.id}: {p}" for p in found][: max(0, 10 - len(shown))]
    finally:
        ex.close()
    return refer, ambiguous, shown

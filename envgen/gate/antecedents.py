"""The antecedent rule: a turn that says "it", "its" or "the same" must leave one record it can mean.

Role: a validity rule of the gate (gym_envs/ENVSPEC.md, rule 9). A later turn of a conversation often refers
back ("and what is its total now?"). When the turn before it named two records, or changed two, a person
could not tell which one "it" is, and a reference that picks one of them teaches a guess. The rule finds,
for every turn after the first whose instruction holds such a word, the records it could mean:

* the records the same instruction names by a key before the word (a value of a table's unique text
  column: ``ORD-20417``), when it names any: the nearest antecedent;
* else the records the previous turn's instruction names by a key, and the records the previous turn's
  reference changed (rows inserted, updated or deleted, found by running the reference) in tables whose
  records have a key (a log row a tool writes on the side is nothing a person calls "it"), each counted once.

"It" never means a person: records of a table whose unique column holds email addresses are not counted.

An ordinal or a description before the word ("the second one", "the one you took it from") picks one record,
and an "it" that stands for a value asked about ("and what is it?") is no reference. Of the records left,
only those of the tables the turn's reference acts on are rivals. Two or more of one kind (two accounts, two
orders: records of one table) is an ambiguous antecedent when the turn's reference acts or its checks ask for
an answer (a turn that only refuses depends on no record): the spec is rejected with a reason naming the
turn, the word and the candidates. :func:`scan` counts the ambiguous turns of any set of specs (``envwright stats``).

Contract: never raises for a spec whose state builds; a reference call that fails is ignored here (rule 3
reports it).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import sqlite3
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from gym_envs.sandbox import Executor, program_request
from gym_envs.sandbox.inprocess import InProcessExecutor
from gym_envs.spec import EnvSpec

__all__ = ["PRONOUN", "antecedent_problems", "scan", "without_ambiguous_tasks"]

PRONOUN = re.compile(r"\b(it|its|it's|the same one|the same|that one)\b", re.IGNORECASE)
#: an ordinal or a description that picks the record before the word refers back ("undo that for the second one:
#: put its ... back", "the one you took it from")
_ORDINAL = re.compile(r"\b(the|that) (first|second|third|fourth|last|other|former|latter)( one)?\b"
                      r"|\bthe one (you|that|which|whose|with)\b", re.IGNORECASE)
#: "it" that stands for a value asked about, not a record ("which has the lowest limit, and what is it?")
_VALUE_IT = re.compile(r"\b(what|how much|how many|which)( \w+)? (is|was) it\b|\bwhat it (is|was)\b", re.IGNORECASE)
_MIN_KEY = 4  # shorter key values (a "1", "ok") are too common to be a mention
_ALL = 100_000  # rows of a table dumped (all of them: the limits keep tables far smaller)


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$", re.IGNORECASE)


def _keys(spec: EnvSpec) -> tuple[dict[str, tuple[str, Any]], set[str]]:
    """Each key value of the seed state (lowercased) -> (table, the row's id) over unique text columns, and the
    tables of people (a unique column of email addresses). Shared by the calls on one schema and seed (the
    compiler's pass and the gate's): read them, never change them."""
    return _seed_keys(spec.state.schema_sql, spec.state.seed_sql)


@functools.lru_cache(maxsize=8)
def _seed_keys(schema_sql: str, seed_sql: str) -> tuple[dict[str, tuple[str, Any]], set[str]]:
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(schema_sql)
        conn.executescript(seed_sql)
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


def _pronoun(text: str) -> re.Match[str] | None:
    """The first word of the text that refers back to a record (not an "it" that stands for a value)."""
    values = [m.span(0) for m in _VALUE_IT.finditer(text)]
    for m in PRONOUN.finditer(text):
        if not any(a <= m.start() < b for a, b in values):
            return m
    return None


def _key_columns(spec: EnvSpec) -> dict[str, list[int]]:
    """Each table's unique text columns, by position (what a person names a record by); shared as :func:`_keys`."""
    return _schema_key_columns(spec.state.schema_sql)


@functools.lru_cache(maxsize=8)
def _schema_key_columns(schema_sql: str) -> dict[str, list[int]]:
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(schema_sql)
        out: dict[str, list[int]] = {}
        for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            q = t.replace('"', '""')
            info = conn.execute(f'PRAGMA table_info("{q}")').fetchall()
            unique = {r[2] for idx in conn.execute(f'PRAGMA index_list("{q}")') if idx[2]
                      for r in conn.execute(f'PRAGMA index_info("{idx[1]}")')}
            out[t] = [r[0] for r in info if r[1] in unique and "TEXT" in (r[2] or "").upper()]
        return out
    except sqlite3.Error:
        return {}
    finally:
        conn.close()


def _dump_keys(dump: dict[str, Any], columns: dict[str, list[int]],
               tables: dict[int, tuple[Any, dict[str, tuple[str, Any]]]] | None = None) -> dict[str, tuple[str, Any]]:
    """Key values (lowercased) -> (table, row id) of the records a dump holds (new records included). ``tables``:
    each table dump's own keys, by the dump's identity (read and filled: a table dump met again is not read)."""
    out: dict[str, tuple[str, Any]] = {}
    for t, d in dump.items():
        held = tables.get(id(d)) if tables is not None else None
        if held is None:
            own: dict[str, tuple[str, Any]] = {}
            for row in d.get("rows", []):
                for i in columns.get(t, []):
                    v = row[i] if i < len(row) else None
                    if isinstance(v, str) and len(v) >= _MIN_KEY:
                        own.setdefault(v.lower(), (t, row[0]))
            if tables is not None:
                tables[id(d)] = (d, own)  # the dump is held, so its identity is not reused
        else:
            own = held[1]
        for k, rec in own.items():
            out.setdefault(k, rec)
    return out


def _named(text: str, keys: dict[str, tuple[str, Any]]) -> set[tuple[str, Any]]:
    low = text.lower()
    return {rec for k, rec in keys.items() if k in low and re.search(rf"(?<![\w-]){re.escape(k)}(?![\w-])", low)}


def _changed(before: dict[str, Any], after: dict[str, Any]) -> set[tuple[str, Any]]:
    """Records (table, row key) that differ between two dumps (a table whose dump is the same object in both has
    none)."""
    out: set[tuple[str, Any]] = set()
    for t in set(before) | set(after):
        if before.get(t) is not None and before.get(t) is after.get(t):
            continue
        old = {next(iter(r)): tuple(r) for r in before.get(t, {}).get("rows", [])}
        new = {next(iter(r)): tuple(r) for r in after.get(t, {}).get("rows", [])}
        out |= {(t, k) for k in set(old) | set(new) if old.get(k) != new.get(k)}
    return out


def _dump_again(session: Any, before: dict[str, Any]) -> dict[str, Any]:
    """The state's dump, each table whose content is still the one ``before`` holds (by digest) taken from it."""
    after = session.dump(None, limit=_ALL, unless={t: d["digest"] for t, d in before.items() if d.get("digest")})
    return {t: before[t] if d.get("same") else d for t, d in after.items()}


def antecedent_problems(spec: EnvSpec, executor: Executor | None = None) -> list[str]:
    """Why turns of ``spec`` refer back ambiguously (empty when none does); see the module docstring. What it finds
    for a spec is kept for the last :data:`KEPT` specs of the process, by all it reads of them (the state, the
    program, the tasks): a compiler's pass over a spec, then the gate's, runs it once."""
    key = _spec_key(spec)
    found = _FOUND.get(key)
    if found is None:
        found = _FOUND[key] = _antecedent_problems(spec, executor)
        while len(_FOUND) > KEPT:
            _FOUND.popitem(last=False)
    else:
        _FOUND.move_to_end(key)
    return list(found)


KEPT = 8  #: specs whose antecedent problems a process keeps
_FOUND: OrderedDict[str, list[str]] = OrderedDict()


def _spec_key(spec: EnvSpec) -> str:
    """A hash of what the rule reads of a spec: its program (code, tools, schema and seed) and its tasks."""
    tasks = json.dumps([t.model_dump(mode="json") for t in spec.tasks], sort_keys=True, default=str)
    return hashlib.sha256((program_request(spec)["key"] + tasks).encode()).hexdigest()


def _antecedent_problems(spec: EnvSpec, executor: Executor | None) -> list[str]:
    _, people = _keys(spec)
    columns = _key_columns(spec)
    own = executor is None
    ex = executor or InProcessExecutor()
    problems: list[str] = []
    starts: dict[tuple[str, ...], dict[str, Any]] = {}  # setup statements -> the dump of the state they make
    seen: dict[int, tuple[Any, dict[str, tuple[str, Any]]]] = {}  # each table dump's keys (_dump_keys)
    session: Any = None  # one session, an episode a task
    try:
        for task in spec.tasks:
            if len(task.turns) < 2 or not any(_pronoun(t.instruction) for t in task.turns[1:]):
                continue
            if session is None:
                session = ex.session(spec, 0, start=False)
            session.setup = tuple(task.setup_sql)  # the task's own starting state
            session.open(0)
            previous: set[tuple[str, Any]] = set()
            before = starts.get(session.setup) or session.dump(None, limit=_ALL, unless={})
            starts[session.setup] = before
            keys = _dump_keys(before, columns, seen)
            for i, turn in enumerate(task.turns):
                for call in turn.calls():
                    session.call(call.name, dict(call.arguments))
                after = _dump_again(session, before)  # the next turn's start: nothing runs in between
                after_keys = _dump_keys(after, columns, seen)
                differ = _changed(before, after)
                match = _pronoun(turn.instruction) if i > 0 else None
                if match is not None:
                    problem = _ambiguity(turn, match, keys, previous, people, differ)
                    if problem:
                        problems.append(f"task {task.id!r} turn {i + 1}: {problem}")
                changed = {r for r in differ if columns.get(r[0])}
                previous = _named(turn.instruction, after_keys) | changed
                before, keys = after, after_keys
    finally:
        if session is not None:
            session.close()
        if own:
            ex.close()
    return problems


def _ambiguity(turn: Any, match: re.Match[str], keys: dict[str, tuple[str, Any]], previous: set[tuple[str, Any]],
               people: set[str], changed: set[tuple[str, Any]]) -> str | None:
    """Why the word ``match`` of ``turn`` refers back ambiguously, or None.

    An ordinal before the word ("the second one") picks one record. Else the records it could mean are those
    the turn names before the word, else the previous turn's; of those,
    only records of the tables the turn's own reference acts on (records it names in its arguments, or
    changes) are rivals, when it acts on any: "its handle" after a branch and an account were named means the
    account the turn then reads."""
    before = turn.instruction[:match.start()]
    if _ORDINAL.search(before):  # "the second one" picks one of the records the word could mean
        return None
    answers = [a.lower() for c in turn.checks for a in c.answers()]
    if not turn.calls() and not any(a in keys for a in answers):
        return None  # nothing the turn checks depends on which record the word means (a refusal)
    here = {r for r in _named(before, keys) if r[0] not in people}
    could = here or {r for r in previous if r[0] not in people}
    acted = {r[0] for r in changed}
    tables = {t for t, _ in keys.values()} | {r[0] for r in previous}
    for call in turn.calls():
        for name, v in call.arguments.items():
            if isinstance(v, str) and v.lower() in keys:
                acted.add(keys[v.lower()][0])
            elif isinstance(v, int) and name.endswith("_id"):  # a row id: the table its name names
                acted |= {t for t in tables if t.startswith(name[:-3].split("_")[-1])}
    if acted:  # the word means a record of a kind the turn acts on: records of other kinds are no rivals
        could = {r for r in could if r[0] in acted}
    by_table: dict[str, list[Any]] = {}
    for t, k in could:
        by_table.setdefault(t, []).append(k)
    rivals = next(((t, sorted(ks, key=str)) for t, ks in sorted(by_table.items()) if len(ks) > 1), None)
    if rivals is None:
        return None  # one record of each kind: "its best seller" after a store and its report is the pair's
    shown = [f"{rivals[0]}#{k}" for k in rivals[1][:4]]
    return (f"{match.group(0)!r} could mean any of {len(rivals[1])} records of {rivals[0]} ({', '.join(shown)}): the "
            "turn named, or the turn before named or changed, more than one; name the record instead")


def scan(specs: Iterable[EnvSpec]) -> tuple[int, int, list[str]]:
    """``(turns that refer back, ambiguous ones, the first problems)`` over ``specs``."""
    ex = InProcessExecutor()
    refer = ambiguous = 0
    shown: list[str] = []
    try:
        for spec in specs:
            refer += sum(1 for t in spec.tasks for u in t.turns[1:] if _pronoun(u.instruction))
            found = antecedent_problems(spec, ex)
            ambiguous += len(found)
            shown += [f"{spec.id}: {p}" for p in found][: max(0, 10 - len(shown))]
    finally:
        ex.close()
    return refer, ambiguous, shown


def without_ambiguous_tasks(spec: EnvSpec, repairs: list[str], least: int) -> EnvSpec:
    """``spec`` without the tasks whose turns refer back ambiguously, each dropped task recorded in ``repairs``
    (what a compiler runs before the gate, so a task writer's pronoun never costs the whole environment). A task
    that is the only one of its kind stays, and when fewer than ``least`` tasks would be left ``spec`` comes back
    unchanged: the gate then says why."""
    problems = antecedent_problems(spec)
    bad = {p.split("'")[1] for p in problems}
    kinds = {t.kind for t in spec.tasks}
    keep = [t for t in spec.tasks if t.id not in bad]
    for t in spec.tasks:  # a task that is its kind's only one stays (the gate then says why)
        if t.id in bad and t.kind not in {k.kind for k in keep} and t.kind in kinds:
            keep.append(t)
    dropped = sorted({t.id for t in spec.tasks} - {t.id for t in keep})
    if not dropped or len(keep) < least:
        return spec
    repairs += [f"task {t!r} dropped: a turn refers back ambiguously" for t in dropped]
    order = {t.id: i for i, t in enumerate(spec.tasks)}
    return spec.model_copy(update={"tasks": sorted(keep, key=lambda t: order[t.id])})

"""What the realism measures read: a :class:`World` (tables, tools, tasks with their reference calls and
results), built from an :class:`~gym_envs.spec.EnvSpec` here and from a benchmark's data elsewhere
(:mod:`envgen.realism.tau2`, :mod:`eval.bfcl.realism`).

Role: one neutral form, so every measure of :mod:`envgen.realism.measures` is one pure function that
judges our environments and the anchors alike.

Contract of :func:`world_of_spec`:

* The state is built from ``schema_sql`` and ``seed_sql`` in a :class:`~gym_envs.sandbox.StateDB` (the
  sandbox's SQL policy, as every episode's state is built) and read by introspection: columns, the integer
  primary key, single-column unique keys, foreign keys, ``CHECK (col IN (...))`` enums, row counts and the
  text values of each column (at most :data:`MAX_ROWS` rows a table).
* The reference runs through a sandbox executor (``"worker"``: isolated processes, for untrusted specs;
  ``"inprocess"``: for trusted or already validated ones): each task in a fresh episode from seed 0, its
  turns' calls in order, each recorded with its result and whether it wrote.
* A spec whose state does not build, or whose code does not load, is still measured on what it has (tools,
  texts; without results, its hops are not traced); :attr:`World.problem` says what could not be read.
  Nothing here raises for a bad spec.
* The policy is read defensively (``getattr``): a spec without a ``policy`` field has 0 rules and 0 policy
  tasks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from envgen.realism.text import Vocabulary
from gym_envs.errors import LoadFailure, StateError, exception_text
from gym_envs.sandbox import Executor, StateDB, make_executor
from gym_envs.sandbox.sqlpolicy import quote_identifier
from gym_envs.spec import EnvSpec

__all__ = ["MAX_ROWS", "Call", "Table", "TaskRecord", "Turn", "World", "count_policy_rules", "is_normative",
           "world_of_spec", "worlds_of_specs"]

MAX_ROWS = 5000  #: rows of a table whose text values are read (the row count is always exact)


@dataclass(frozen=True)
class Table:
    """One table (or a benchmark's collection) as the measures see it."""

    name: str
    rows: int
    columns: tuple[str, ...] = ()
    text_values: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  #: column -> its text values
    primary_key: str | None = None  #: the single-column primary key, if any
    key_columns: frozenset[str] = frozenset()  #: the primary key and single-column unique columns
    int_key_values: frozenset[int] = frozenset()  #: values of an integer primary key (empty: none)
    enums: Mapping[str, frozenset[str]] = field(default_factory=dict)  #: column -> values a CHECK allows
    references: frozenset[str] = frozenset()  #: tables this one points to by foreign key

    @property
    def surrogate_key(self) -> bool:
        """Its integer primary key is a surrogate: another column is unique, so people name rows by that."""
        return bool(self.int_key_values) and len(self.key_columns) > 1


@dataclass(frozen=True)
class Call:
    """One reference call and what it returned (``result`` None when the source gives no results)."""

    name: str
    arguments: Mapping[str, Any]
    result: Any = None
    ok: bool = True
    writes: bool = False


@dataclass(frozen=True)
class Turn:
    """One user turn: its text and the reference calls that answer it."""

    text: str
    calls: tuple[Call, ...] = ()


@dataclass(frozen=True)
class TaskRecord:
    """One task: its turns, the tools offered, and whether it tests the policy."""

    id: str
    turns: tuple[Turn, ...]
    tools_in_scope: int
    policy: bool = False
    scenario: bool = False  #: a simulated user answers the agent (the task has a ``scenario``)


@dataclass(frozen=True)
class World:
    """An environment (or a benchmark domain) as the realism measures read it."""

    name: str
    tools: tuple[str, ...]
    tables: tuple[Table, ...] = ()
    tasks: tuple[TaskRecord, ...] = ()
    vocab: Vocabulary = field(default_factory=Vocabulary)
    policy_rules: int | None = 0  #: None: the source has policies that are not counted
    policy_tasks: int | None = 0  #: None: the source does not mark which tasks test the policy
    has_results: bool = True  #: calls carry their results (the hop and filter-and-choose measures need them)
    read_tools: frozenset[str] | None = None  #: tools known to only read (None: judge each call by ``writes``)
    problem: str | None = None  #: what could not be read


_NORMATIVE = re.compile(r"\b(must|should|cannot|can ?not|can only|never|do not|don't|not allowed|only if|need to|"
                        r"needs to|has to|have to|required|prohibited|forbidden|refuse|deny)\b", re.I)


def is_normative(text: str) -> bool:
    """Whether a sentence or bullet states a rule (says must, should, cannot, never, only if, ...)."""
    return _NORMATIVE.search(text) is not None


def count_policy_rules(policy: Any) -> int:
    """The rules of a policy: a list's items, a ``rules`` attribute's or key's items, or the normative
    sentences and bullets of a text (those that say must, should, cannot, never, only if, ...); 0 for none."""
    if policy is None:
        return 0
    rules = policy.get("rules") if isinstance(policy, Mapping) else getattr(policy, "rules", None)
    if rules is not None:
        return count_policy_rules(rules)
    if isinstance(policy, str):
        parts = re.split(r"(?<=[.!?])\s+|\n\s*[-*\d.]+\s+|\n{2,}", policy)
        return sum(1 for p in parts if is_normative(p))
    if isinstance(policy, Iterable):
        return sum(1 for _ in policy)
    return 0


def _policy_task(task: Any) -> bool:
    return "policy" in str(getattr(task, "kind", "")) or bool(getattr(task, "policy", None))


_CHECK_IN = re.compile(r"CHECK\s*\(\s*[\"`\[]?(\w+)[\"`\]]?\s+IN\s*\(([^()]*)\)\s*\)", re.I)
_SQL_STRING = re.compile(r"'((?:[^']|'')*)'")


def _table(db: StateDB, name: str, create_sql: str) -> Table:
    q = quote_identifier(name)
    info = db.host("SELECT name, type, pk FROM pragma_table_info(?)", (name,))
    columns = tuple(r[0] for r in info)
    pks = [r for r in info if r[2]]
    keys = {r[0] for r in pks} if len(pks) == 1 else set()
    for idx, unique, _origin in db.host("SELECT name, \"unique\", origin FROM pragma_index_list(?)", (name,)):
        cols = [r[0] for r in db.host("SELECT name FROM pragma_index_info(?)", (idx,))]
        if unique and len(cols) == 1 and cols[0] is not None:
            keys.add(cols[0])
    int_keys: frozenset[int] = frozenset()
    if len(pks) == 1 and "INT" in str(pks[0][1]).upper():
        int_keys = frozenset(r[0] for r in db.host(f"SELECT {quote_identifier(pks[0][0])} FROM {q}")
                             if isinstance(r[0], int))
    refs = frozenset(r[0] for r in db.host("SELECT \"table\" FROM pragma_foreign_key_list(?)", (name,)))
    enums = {m.group(1): frozenset(v.replace("''", "'") for v in _SQL_STRING.findall(m.group(2)))
             for m in _CHECK_IN.finditer(create_sql or "")}
    rows = db.host(f"SELECT count(*) FROM {q}")[0][0]
    texts: dict[str, list[str]] = {c: [] for c in columns}
    for row in db.host(f"SELECT * FROM {q} LIMIT ?", (MAX_ROWS,)):
        for c, v in zip(columns, row, strict=True):
            if isinstance(v, str):
                texts[c].append(v)
    return Table(name, rows, columns, {c: tuple(v) for c, v in texts.items() if v}, pks[0][0] if len(pks) == 1
                 else None, frozenset(keys), int_keys, enums, refs)


def _tables(spec: EnvSpec) -> tuple[tuple[Table, ...], str | None]:
    db = StateDB()
    try:
        db.script(spec.state.schema_sql, mode="setup")
        db.script(spec.state.seed_sql, mode="rw")
        sql = dict(db.host("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"))
        return tuple(_table(db, name, sql.get(name) or "") for name in db.tables()), None
    except StateError as e:
        return (), f"the state does not build: {e}"
    finally:
        db.close()


def _run_references(spec: EnvSpec, ex: Executor) -> tuple[list[list[list[Call]]], str | None]:
    """The reference calls of every task's turns with their results (``[task][turn][call]``)."""
    out: list[list[list[Call]]] = []
    try:
        session = ex.session(spec, seed=0, start=False)
    except LoadFailure as e:
        return [[[Call(c.name, c.arguments, None, False) for c in turn.calls()] for turn in task.turns]
                for task in spec.tasks], f"the code does not load: {e}"
    try:
        for task in spec.tasks:
            session.setup = tuple(task.setup_sql)  # the task's own starting state
            session.open(0)
            turns = []
            for turn in task.turns:
                calls = []
                for ref in turn.calls():
                    r = session.call(ref.name, dict(ref.arguments))
                    calls.append(Call(ref.name, ref.arguments, r.result if r.ok else None, r.ok, r.changes > 0))
                turns.append(calls)
            out.append(turns)
    except LoadFailure as e:
        return out + [[[Call(c.name, c.arguments, None, False) for c in turn.calls()] for turn in task.turns]
                      for task in spec.tasks[len(out):]], f"an episode does not open: {e}"
    finally:
        session.close()
    return out, None


def world_of_spec(spec: EnvSpec, executor: Executor | str = "worker") -> World:
    """The :class:`World` of one environment spec (see the module docstring)."""
    tables, problem = _tables(spec)
    ex = make_executor(executor) if isinstance(executor, str) else executor
    try:
        runs, run_problem = _run_references(spec, ex)
    except Exception as e:  # the measures' boundary: a spec that breaks the executor is measured without results
        runs, run_problem = [[[Call(c.name, c.arguments, None, False) for c in t.calls()] for t in task.turns]
                             for task in spec.tasks], f"the reference does not run: {exception_text(e)}"
    finally:
        if isinstance(executor, str):
            ex.close()
    keys = [v for t in tables for c in t.key_columns for v in t.text_values.get(c, ())]
    vocab = Vocabulary.of([t.name for t in tables], [c for t in tables for c in t.columns], keys)
    tasks = tuple(TaskRecord(task.id, tuple(Turn(turn.instruction, tuple(calls))
                                            for turn, calls in zip(task.turns, run, strict=True)),
                             len(spec.tools), _policy_task(task), getattr(task, "scenario", None) is not None)
                  for task, run in zip(spec.tasks, runs, strict=True))
    policy = getattr(spec, "policy", None)
    return World(spec.id, tuple(t.name for t in spec.tools), tables, tasks, vocab,
                 policy_rules=count_policy_rules(policy), policy_tasks=sum(1 for t in tasks if t.policy),
                 has_results=run_problem is None, problem="; ".join(p for p in (problem, run_problem) if p) or None)


def worlds_of_specs(specs: Iterable[EnvSpec], executor: Executor | str = "worker") -> list[World]:
    """The worlds of several specs, through one executor (made and closed here when named by mode)."""
    ex = make_executor(executor) if isinstance(executor, str) else executor
    try:
        return [world_of_spec(s, ex) for s in specs]
    finally:
        if isinstance(executor, str):
            ex.close()

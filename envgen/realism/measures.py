"""The realism measures of one :class:`~envgen.realism.world.World` and of a set of them.

Role: pure functions; the definitions (each stated once, here or in :mod:`envgen.realism.text`):

* **CRUD tools**: the share of tools whose name :func:`~envgen.realism.text.is_crud_tool` judges CRUD
  (pooled over every tool of the set).
* **Slug strings**: the share of human-facing strings that :func:`~envgen.realism.text.is_slug` judges slugs.
  Human-facing strings are (1) the text values of the seed rows in columns that are neither key-like by name
  (ids, codes, SKUs, slugs, paths, URLs, emails, phones, usernames, hashes, tokens) nor categorical (a
  ``CHECK (col IN (...))`` enum, or a column of at least 4 values of which at most half are distinct: a status,
  a zone), and (2) the values task turns quote, less those that are such a category value or a table or
  field name (``'color'``).
* **Tables**: tables per environment; rows per table (each environment's mean, then the mean over
  environments); the main table's rows (the table with the most rows); each over the environments that
  have tables (a benchmark whose state is not tables has none, a spec whose state does not build is named
  in the problems).
* **Generic parents**: the share of environments with an invented ``<x>_groups(label, max_<x>)`` parent: a
  table another table points to by foreign key whose only columns besides its primary key are one label
  (``label``, ``name`` or ``title``) and one or more ``max_*`` capacities.
* **Tools in scope**: the tools offered to a task, averaged over tasks.
* **Row ids in user text**: the share of user turns (and of tasks) that
  :func:`~envgen.realism.text.names_row_id`.
* **Words**: the median words of a task's first turn; the mean words of a user turn.
* **Skeletons**: the distinct :func:`~envgen.realism.text.skeleton` of every user turn of the set, and the
  share of turns whose skeleton is one of the 20 most common.
* **Hop depth**, **filter and choose** and **repeated identical reads**: the rules of
  :mod:`envgen.realism.trace`; reported: the mean hop depth, the share of tasks of 2 hops or more, the share
  of filter-and-choose tasks, and the share of read calls that repeat an earlier identical read.
* **Policy**: rules per environment and policy tasks per environment (0 where the spec has no policy).
* **Scenario tasks**: the share of tasks with a simulated user (a ``scenario``: the user answers the agent).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from envgen.realism.text import (
    is_crud_tool,
    is_slug,
    name_words,
    names_row_id,
    quoted_values,
    singular,
    skeleton,
    word_count,
)
from envgen.realism.trace import repeated_reads, trace_task
from envgen.realism.world import Table, World

__all__ = ["EnvRealism", "Realism", "env_realism", "is_generic_parent", "realism", "slug_counts"]

TOP_SKELETONS = 20

_KEY_LIKE = frozenset({"id", "ids", "key", "code", "slug", "sku", "uuid", "guid", "hash", "token", "username",
                       "handle", "path", "url", "uri", "email", "phone", "login", "password", "sha", "md5", "isbn",
                       "iban", "zip", "postcode"})
_LABELS = frozenset({"label", "name", "title"})


def _key_like(column: str) -> bool:
    return any(w in _KEY_LIKE for w in name_words(column.rsplit(".", 1)[-1]))


def _categorical(table: Table, column: str, values: Sequence[str]) -> bool:
    if column in table.enums:
        return True
    filled = [v for v in values if v.strip()]
    return len(filled) >= 4 and len(set(filled)) * 2 <= len(filled)


def _names_data(value: str, words: frozenset[str]) -> bool:
    """A quoted table or field name (``'color'``): it names the data, it is not a value."""
    parts = name_words(value)
    return bool(parts) and all(singular(w) in words for w in parts)


def slug_counts(world: World) -> tuple[int, int]:
    """``(slugs, human-facing strings)`` of a world (the rule in the module docstring)."""
    categories: set[str] = set()
    strings = slugs = 0
    for t in world.tables:
        categories |= {v for vals in t.enums.values() for v in vals}
        for col, values in t.text_values.items():
            if _categorical(t, col, values):
                categories |= set(values)
                continue
            if _key_like(col):
                continue
            for v in values:
                if v.strip():
                    strings += 1
                    slugs += is_slug(v)
    names = world.vocab.words
    for task in world.tasks:
        for turn in task.turns:
            for v in quoted_values(turn.text):
                if v.strip() and v not in categories and not _names_data(v, names):
                    strings += 1
                    slugs += is_slug(v)
    return slugs, strings


def is_generic_parent(table: Table, tables: Iterable[Table]) -> bool:
    """Whether ``table`` is an invented ``<x>_groups(label, max_<x>)`` parent (the rule in the module docstring)."""
    if not any(table.name in t.references for t in tables if t is not table):
        return False
    rest = [c for c in table.columns if c != table.primary_key]
    labels = [c for c in rest if c.lower() in _LABELS]
    caps = [c for c in rest if c.lower().startswith("max_")]
    return len(labels) == 1 and bool(caps) and len(labels) + len(caps) == len(rest)


@dataclass
class EnvRealism:
    """The raw counts of one world, from which :func:`realism` pools a set's figures."""

    name: str
    tools: int
    crud_tools: int
    tables: int
    rows: list[int]  #: rows of each table
    slugs: int
    strings: int
    generic_parents: int
    tools_in_scope: list[int]  #: per task
    turns_naming_ids: int
    tasks_naming_ids: int
    first_turn_words: list[int]  #: per task
    turn_words: list[int]  #: per turn
    skeletons: list[str]  #: per turn
    hops: list[int] | None  #: per task (None: no results to trace)
    filter_choose: int | None
    reads: int
    repeated_reads: int
    policy_rules: int | None
    policy_tasks: int | None
    scenario_tasks: int = 0
    problem: str | None = None


def _surrogate_keys(world: World) -> dict[str, frozenset[int]]:
    out: dict[str, set[int]] = {}
    for t in world.tables:
        if t.surrogate_key:
            for w in name_words(t.name):
                out.setdefault(singular(w), set()).update(t.int_key_values)
    return {k: frozenset(v) for k, v in out.items()}


def env_realism(world: World) -> EnvRealism:
    """The counts of one world."""
    keys = _surrogate_keys(world)
    ids = frozenset(i for t in world.tables for i in t.int_key_values) if world.tables else None
    slugs, strings = slug_counts(world)
    turns = [turn for task in world.tasks for turn in task.turns]
    repeats = [repeated_reads(t, world.read_tools) for t in world.tasks]
    traces = [trace_task(t) for t in world.tasks] if world.has_results else None
    return EnvRealism(
        name=world.name, tools=len(world.tools), crud_tools=sum(is_crud_tool(t, world.vocab) for t in world.tools),
        tables=len(world.tables), rows=[t.rows for t in world.tables], slugs=slugs, strings=strings,
        generic_parents=sum(is_generic_parent(t, world.tables) for t in world.tables),
        tools_in_scope=[t.tools_in_scope for t in world.tasks],
        turns_naming_ids=sum(names_row_id(turn.text, ids, keys) for turn in turns),
        tasks_naming_ids=sum(any(names_row_id(turn.text, ids, keys) for turn in t.turns) for t in world.tasks),
        first_turn_words=[word_count(t.turns[0].text) for t in world.tasks if t.turns],
        turn_words=[word_count(turn.text) for turn in turns],
        skeletons=[skeleton(turn.text, world.vocab) for turn in turns],
        hops=[t.hop_depth for t in traces] if traces is not None else None,
        filter_choose=sum(t.filter_and_choose for t in traces) if traces is not None else None,
        reads=sum(r for _, r in repeats), repeated_reads=sum(k for k, _ in repeats),
        policy_rules=world.policy_rules, policy_tasks=world.policy_tasks,
        scenario_tasks=sum(t.scenario for t in world.tasks), problem=world.problem)


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _share(k: int, n: int) -> float | None:
    return k / n if n else None


@dataclass(frozen=True)
class Realism:
    """The realism figures of a set of environments (the definitions in the module docstring; None: nothing
    to measure, such as hops of a benchmark whose calls carry no results)."""

    envs: int
    tasks: int
    turns: int
    tools_per_env: float | None
    crud_share: float | None
    slug_share: float | None
    strings: int  #: human-facing strings the slug share is over
    tables_per_env: float | None
    rows_per_table: float | None
    main_table_rows: float | None
    generic_parent_share: float | None
    tools_in_scope: float | None
    row_id_turn_share: float | None
    row_id_task_share: float | None
    first_turn_words: float | None  #: median
    words_per_turn: float | None
    skeletons: int
    top20_coverage: float | None
    hop_depth: float | None
    hop2_share: float | None
    filter_choose_share: float | None
    repeated_read_share: float | None
    policy_rules_per_env: float | None
    policy_tasks_per_env: float | None
    scenario_share: float | None = None  #: tasks with a simulated user (a ``scenario``)
    problems: list[str] = field(default_factory=list)  #: what could not be read, per environment

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def realism(worlds: Iterable[World | EnvRealism]) -> Realism:
    """The figures of a set of worlds (or of their :func:`env_realism` counts), pooled as documented."""
    envs = [w if isinstance(w, EnvRealism) else env_realism(w) for w in worlds]
    with_tables = [e for e in envs if e.tables]
    turns = [s for e in envs for s in e.skeletons]
    top = Counter(turns).most_common(TOP_SKELETONS)
    hops = [h for e in envs if e.hops is not None for h in e.hops]
    traced = [e for e in envs if e.filter_choose is not None]
    rules = [e.policy_rules for e in envs if e.policy_rules is not None]
    ptasks = [e.policy_tasks for e in envs if e.policy_tasks is not None]
    first = [w for e in envs for w in e.first_turn_words]
    return Realism(
        envs=len(envs), tasks=sum(len(e.tools_in_scope) for e in envs), turns=len(turns),
        tools_per_env=_mean([e.tools for e in envs]),
        crud_share=_share(sum(e.crud_tools for e in envs), sum(e.tools for e in envs)),
        slug_share=_share(sum(e.slugs for e in envs), sum(e.strings for e in envs)),
        strings=sum(e.strings for e in envs),
        tables_per_env=_mean([e.tables for e in with_tables]),
        rows_per_table=_mean([sum(e.rows) / len(e.rows) for e in with_tables]),
        main_table_rows=_mean([max(e.rows) for e in with_tables]),
        generic_parent_share=_share(sum(e.generic_parents > 0 for e in with_tables), len(with_tables)),
        tools_in_scope=_mean([n for e in envs for n in e.tools_in_scope]),
        row_id_turn_share=_share(sum(e.turns_naming_ids for e in envs), len(turns)),
        row_id_task_share=_share(sum(e.tasks_naming_ids for e in envs), sum(len(e.tools_in_scope) for e in envs)),
        first_turn_words=float(statistics.median(first)) if first else None,
        words_per_turn=_mean([w for e in envs for w in e.turn_words]),
        skeletons=len(set(turns)), top20_coverage=_share(sum(k for _, k in top), len(turns)),
        hop_depth=_mean(hops), hop2_share=_share(sum(h >= 2 for h in hops), len(hops)),
        filter_choose_share=_share(sum(e.filter_choose or 0 for e in traced), sum(len(e.hops or ()) for e in traced))
        if traced else None,
        repeated_read_share=_share(sum(e.repeated_reads for e in envs), sum(e.reads for e in envs)),
        policy_rules_per_env=_mean(rules), policy_tasks_per_env=_mean(ptasks),
        scenario_share=_share(sum(e.scenario_tasks for e in envs), sum(len(e.tools_in_scope) for e in envs)),
        problems=[f"{e.name}: {e.problem}" for e in envs if e.problem])

"""Where a reference call's arguments come from: hop depth, filter-and-choose and repeated reads of a task.

Role: the measures that read a task's reference calls *with their results* (:class:`~envgen.realism.world.Call`).

* A **traced value** is an argument leaf that is not too common to trace (booleans, None, 0 and strings
  under two characters are skipped) and that the user has not said in a turn so far (a number as a whole
  number, a string as a whole word, case-insensitively): the agent had to get it from a result. Arguments that
  page a listing (:data:`PAGE_ARGUMENTS`: ``offset``, ``cursor``...) are not traced: the next page of a list is
  the same read, not a hop through a record.
* Its **source** is the shallowest earlier call of the task (any turn; the earliest among equals) whose
  result holds the value under a field that shares a word with the argument's name (``pdb_group_id`` takes an
  ``id`` or a ``pdb_group_id``; ``item_ids`` an ``item_id``; a bare result, such as a returned key, matches any
  argument).
* **Hop depth**: a call's depth is 0 when it traces no value, else one more than its deepest source's; a task's
  is its deepest call's. ``find(name) -> id``, then ``update(id)`` is 1 hop; a write whose argument comes from
  a record reached through another record is 2 hops.
* **Filter and choose**: a traced value whose source holds it in one item of a list of at least 2 records, or
  of at least 2 distinct values (ids, names), and not in every item of that list (a list or search, then a call
  on one of the records it returned).
* **Repeated identical reads**: a read call (a tool known to only read, or a call that wrote no row) with the
  same tool and arguments as an earlier read of the same task.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from envgen.realism.text import name_words, singular
from envgen.realism.world import Call, TaskRecord

__all__ = ["PAGE_ARGUMENTS", "TaskTrace", "hop_depth", "is_filter_and_choose", "repeated_reads", "trace_task"]

#: argument names that position or size a page of a listing (the world compiler's ``limit`` and ``offset``, and
#: the other names listing APIs use)
PAGE_ARGUMENTS = frozenset({"offset", "limit", "cursor", "page", "page_size", "per_page", "page_token"})


def _norm(v: Any) -> Any:
    """A value as traced: None for values too common to trace, numbers as floats, strings lowercased."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return None if v == 0 or (isinstance(v, float) and not math.isfinite(v)) else float(v)
    if isinstance(v, str):
        s = v.strip().lower()
        return s if len(s) >= 2 else None
    return None


def _leaves(value: Any, key: str | None = None) -> Iterator[tuple[str | None, Any]]:
    """``(nearest field name, traced value)`` of every leaf (a list's items keep the list's field name)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, str(k))
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _leaves(v, key)
    else:
        n = _norm(value)
        if n is not None:
            yield key, n


def _words(name: str | None) -> frozenset[str]:
    return frozenset(singular(w) for w in name_words(name)) if name else frozenset()


def _said(v: Any, text: str) -> bool:
    if isinstance(v, float):
        forms = {repr(v), str(int(v))} if v.is_integer() else {repr(v)}
        return any(re.search(rf"(?<![\d.]){re.escape(f)}(?![\d])", text) for f in forms)
    return re.search(rf"(?<!\w){re.escape(v)}(?!\w)", text, re.I) is not None


def _choices(value: Any) -> Iterator[list[set[Any]]]:
    """Every list inside a result that offers a choice, as each item's traced values: a list of at least 2
    records (dicts), or of at least 2 distinct values (ids, names)."""
    if isinstance(value, dict):
        for v in value.values():
            yield from _choices(v)
    elif isinstance(value, list):
        records = [v for v in value if isinstance(v, dict)]
        if len(records) >= 2:
            yield [{v for _, v in _leaves(r)} for r in records]
        items = [n for n in map(_norm, value) if n is not None] if not records else []
        if len(set(items)) >= 2:
            yield [{n} for n in items]
        for v in value:
            yield from _choices(v)


@dataclass
class _Source:
    depth: int
    fields: dict[Any, set[frozenset[str]]] = field(default_factory=dict)  #: value -> field-name words holding it
    lists: list[list[set[Any]]] = field(default_factory=list)  #: per list offering a choice: each item's values

    @classmethod
    def of(cls, result: Any, depth: int) -> _Source:
        src = cls(depth)
        for key, v in _leaves(result):
            src.fields.setdefault(v, set()).add(_words(key))
        src.lists = list(_choices(result))
        return src

    def holds(self, value: Any, arg_words: frozenset[str]) -> bool:
        return any(not w or not arg_words or w & arg_words for w in self.fields.get(value, ()))

    def chosen(self, value: Any) -> bool:
        return any(0 < sum(value in r for r in records) < len(records) for records in self.lists)


@dataclass(frozen=True)
class TaskTrace:
    """What tracing a task's reference found."""

    hop_depth: int
    filter_and_choose: bool


def trace_task(task: TaskRecord) -> TaskTrace:
    """Trace every reference call's arguments to their sources (the rules in the module docstring)."""
    said = ""
    sources: list[_Source] = []
    deepest, chose = 0, False
    for turn in task.turns:
        said += "\n" + turn.text
        for call in turn.calls:
            depth = 0
            for key, v in _leaves({k: a for k, a in call.arguments.items() if k not in PAGE_ARGUMENTS}):
                if _said(v, said):
                    continue
                words = _words(key)
                holding = [s for s in sources if s.holds(v, words)]
                if holding:
                    src = min(holding, key=lambda s: s.depth)  # min keeps the earliest among equals
                    depth = max(depth, src.depth + 1)
                    chose = chose or src.chosen(v)
            deepest = max(deepest, depth)
            sources.append(_Source.of(call.result, depth))
    return TaskTrace(deepest, chose)


def hop_depth(task: TaskRecord) -> int:
    """The hop depth of a task's reference (module docstring)."""
    return trace_task(task).hop_depth


def is_filter_and_choose(task: TaskRecord) -> bool:
    """Whether a call of the task picks one of several records an earlier call returned (module docstring)."""
    return trace_task(task).filter_and_choose


def repeated_reads(task: TaskRecord, read_tools: frozenset[str] | None = None) -> tuple[int, int]:
    """``(repeated reads, reads)`` of a task's reference (module docstring)."""
    seen: set[tuple[str, str]] = set()
    reads = repeats = 0
    for turn in task.turns:
        for call in turn.calls:
            if not _is_read(call, read_tools):
                continue
            reads += 1
            key = (call.name, json.dumps(dict(call.arguments), sort_keys=True, default=str))
            repeats += key in seen
            seen.add(key)
    return repeats, reads


def _is_read(call: Call, read_tools: frozenset[str] | None) -> bool:
    return call.name in read_tools if read_tools is not None else (call.ok and not call.writes)

"""The realism figures of a BFCL multi-turn category (:mod:`envgen.realism`), beside our libraries'.

Role: turn each BFCL entry into a realism :class:`~envgen.realism.World` (one environment per entry: the
functions of its involved classes are its tools in scope, its user turns its texts) and pool them.

Contract:

- **Tools**: the functions offered at the entry's first turn; the vocabulary a CRUD tool name may use is the
  words of the involved classes' names and of the functions' parameter names.
- **Texts**: a turn's user messages joined; BFCL's state is Python objects, not tables, so there are no
  tables, rows, seed strings or surrogate keys: every ``#7`` or ``id 8`` counts as a row id
  (:func:`envgen.realism.names_row_id`).
- **Results**: with ``results=True`` the ground truth is replayed through :class:`~eval.bfcl.episode.BfclEpisode`
  (BFCL's own backends) and each call's result string is read as JSON or a Python literal where it is one,
  so hop depth and filter-and-choose are traced as for our environments; an entry whose replay fails is
  measured without results. BFCL does not say which functions only read: repeated reads are not counted.
- Raises :class:`~eval.errors.BfclNotInstalledError` without ``bfcl-eval``.
"""

from __future__ import annotations

import ast
import functools
import json
from typing import Any

from envgen.realism import Call, Realism, TaskRecord, Turn, Vocabulary, World, realism
from eval.bfcl.agreement import reference_trajectory, run_trajectory
from eval.bfcl.data import BfclEntry, load_entries
from eval.errors import BfclError

__all__ = ["bfcl_realism", "bfcl_world"]


def _value(text: str) -> Any:
    """A result string as data: JSON, else a Python literal, else the string itself."""
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def _results(entry: BfclEntry) -> list[list[Any]] | None:
    """The result of every ground-truth call, per turn (None when the replay fails)."""
    try:
        episode = run_trajectory(entry, reference_trajectory(entry))
    except (BfclError, ValueError, RuntimeError):  # an entry BFCL cannot replay is measured without results
        return None
    out: list[list[Any]] = [[] for _ in range(entry.num_turns)]
    for record in episode.calls:
        out[record.turn].append(_value(record.result))
    return out


def bfcl_world(entry: BfclEntry, *, results: bool = True) -> World:
    """One BFCL entry as a realism :class:`~envgen.realism.World` (see the module docstring)."""
    tools = [doc["name"] for doc in entry.functions_for_turn(0)]
    params = [p for doc in entry.functions for p in ((doc.get("parameters") or {}).get("properties") or {})]
    replayed = _results(entry) if results else None
    trajectory = reference_trajectory(entry)
    turns = []
    for i, messages in enumerate(entry.turns):
        text = "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")
        got = replayed[i] if replayed is not None else []
        calls = tuple(Call(c.name, c.arguments, got[j] if j < len(got) else None)
                      for j, c in enumerate(trajectory[i]))
        turns.append(Turn(text, calls))
    task = TaskRecord(entry.id, tuple(turns), len(tools))
    return World(entry.id, tuple(tools), (), (task,), Vocabulary.of(entry.involved_classes, params),
                 policy_rules=None, policy_tasks=None, has_results=replayed is not None, read_tools=frozenset())


@functools.lru_cache(maxsize=8)
def bfcl_realism(category: str = "multi_turn_base", *, results: bool = True) -> Realism:
    """The realism figures of one BFCL multi-turn category (every entry)."""
    return realism(bfcl_world(e, results=results) for e in load_entries(category))

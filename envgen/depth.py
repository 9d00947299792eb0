"""Depth figures of a set of tasks: how much work a task's reference trajectory takes.

Role: one definition of depth, for our environments and for any benchmark whose
ground truth gives the calls of each turn (the BFCL suite computes its own with
:func:`depth_of`, :mod:`eval.bfcl.depth`), so the two sit in one table.

* **calls per task**: reference tool calls over all turns of a task, averaged
  over tasks;
* **tasks with >= 3 calls**: the share of tasks whose reference makes at least
  three calls;
* **turns per task**: user turns of a task, averaged. A scenario task's user also answers the agent's questions
  (its reference's ``say`` items): each answer is a user turn, and the calls after it belong to that turn;
* **tables per environment**: tables of an environment's state, averaged over
  environments (None when the set has no tables to count, as a benchmark
  whose state is not a database).

:func:`spec_depth` measures environment specs; ``envwright stats`` and
``envwright bench generate`` print it beside BFCL multi-turn base.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["Depth", "depth_of", "spec_depth"]

_TABLE = re.compile(r"\bCREATE\s+TABLE\b", re.I)


@dataclass(frozen=True)
class Depth:
    """The depth figures of a set of tasks (see the module docstring)."""

    tasks: int
    envs: int
    calls_per_task: float
    share_3_calls: float  #: share of tasks whose reference makes at least three calls
    turns_per_task: float
    tables_per_env: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def depth_of(tasks: Iterable[Sequence[int]], tables: Iterable[int] | None = None, envs: int | None = None) -> Depth:
    """The depth of tasks given as their calls per turn (one sequence per task, one count per turn) and,
    optionally, the table count of each environment (``envs`` defaults to how many counts there are)."""
    per_task = [list(t) for t in tasks]
    counts = list(tables) if tables is not None else None
    n = len(per_task)
    calls = [sum(t) for t in per_task]
    return Depth(
        tasks=n,
        envs=envs if envs is not None else (len(counts) if counts is not None else 0),
        calls_per_task=sum(calls) / n if n else float("nan"),
        share_3_calls=sum(1 for c in calls if c >= 3) / n if n else float("nan"),
        turns_per_task=sum(len(t) for t in per_task) / n if n else float("nan"),
        tables_per_env=sum(counts) / len(counts) if counts else None,
    )


def spec_depth(specs: Iterable[Any]) -> Depth:
    """The depth of environment specs (:class:`gym_envs.spec.EnvSpec` objects or their dicts)."""
    tasks: list[list[int]] = []
    tables: list[int] = []
    for spec in specs:
        data = spec if isinstance(spec, dict) else spec.model_dump()
        tables.append(len(_TABLE.findall(str((data.get("state") or {}).get("schema_sql", "")))))
        for task in data.get("tasks") or []:
            tasks.append([n for turn in task.get("turns") or [] for n in _user_turns(turn.get("reference") or [])])
    return depth_of(tasks, tables)


def _user_turns(reference: Sequence[Any]) -> list[int]:
    """The calls of each user turn of one spec turn: the instruction's, then one per ``say`` item (the user answers
    it) holding the calls that follow it."""
    counts = [0]
    for item in reference:
        if isinstance(item, dict) and "say" in item:
            counts.append(0)
        else:
            counts[-1] += 1
    return counts

"""The world compiler's task writer: families of requests a person makes, run to derive their checks.

:func:`write_tasks` draws a mix of families (:mod:`.families`) for one world, finishes each draft on the
simulator (:mod:`.base`) and returns the tasks with their family names. The mix aims at what the targets
of a realistic library ask for: writes found through another record (two hops), filter-and-choose steps,
at least two policy tasks, a refusal by a tool, a question, and a request that first needs the user's
identity.
"""

from __future__ import annotations

import random
from typing import Any

from envgen.world.data import Pools
from envgen.world.model import World
from envgen.world.sim import Simulator
from envgen.world.tasks.base import Draft, Writer
from envgen.world.tasks.families import Families

__all__ = ["write_tasks"]

_PLAN = ["write_goal", "policy_refusal", "add_line", "read_question", "tool_refusal", "policy_refusal",
         "write_goal", "missing_identity", "read_question", "write_goal", "add_line", "policy_refusal"]


def write_tasks(world: World, sim: Simulator, pools: Pools, rng: random.Random,
                n: int) -> tuple[list[dict[str, Any]], list[str]]:
    """Up to ``n`` tasks over ``world`` and each one's family (see the module docstring)."""
    writer = Writer(world, sim, rng)
    fam = Families(writer, pools)
    tasks: list[dict[str, Any]] = []
    names: list[str] = []
    seen: set[str] = set()
    plan = list(_PLAN)
    attempts = 0
    while len(tasks) < n and attempts < 3 * len(_PLAN):
        name = plan[attempts % len(plan)]
        attempts += 1
        draft: Draft | None = getattr(fam, name)()
        if draft is None:
            continue
        text = draft.turns[0].say
        if text in seen:
            continue
        task = writer.finish(draft, len(tasks))
        if task is None:
            continue
        seen.add(text)
        tasks.append(task)
        names.append(name)
    return tasks, names

"""The plan: which task shapes a compiled environment gets, by its task mix and its difficulty.

Role: :func:`build_tasks` writes the tasks of one environment with a
:class:`TaskMaker` (every shape of the package). For each task of the mix it
tries the shapes of that task kind in order and keeps the first that can be
written for this model (its tools, relations and rules); the deep shapes come
first, the rarer ones (those that need a transfer, a capacity, a final state)
before the common ones, and a kind's order rotates so that several tasks of a
kind take different shapes. A shallow single-turn shape is the fallback of
each kind, so a model too small for the deep shapes still gets every kind.

About a third of the tasks (:data:`SCENARIO_SHARE` of an environment's
task slots, at least one) are **scenario tasks** (:mod:`.scenarios`): the
slots are drawn among the kinds that have scenario shapes (``execute``,
``read``, ``read_then_write``), and a drawn slot whose scenario shapes cannot
be written for this model gets its kind's ordinary shapes instead.

Each task starts from the seed rows (:meth:`Base.reset`); its id is
``t<i>_<shape>``, the shape's builder (``t2_chain_transfer``).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from envgen.blueprint.render.difficulty import PROFILES, Profile
from envgen.blueprint.render.model import EnvModel
from envgen.blueprint.render.tasks.base import Task
from envgen.blueprint.render.tasks.scenarios import Scenarios
from envgen.blueprint.render.values import ValueMaker

__all__ = ["TaskMaker", "build_tasks"]

Builder = Callable[[], Task | None]


SCENARIO_SHARE = 1 / 3
"""The share of an environment's task slots written as scenario tasks (a simulated user the agent must ask)."""


class TaskMaker(Scenarios):
    """Every task shape over one model (see the package docstring)."""

    def pad(self, task: Task) -> None:
        """Questions about the record the task changed last (by its key), up to the task's turn goal (at
        most two): "what is its price now?" reads the result of the conversation."""
        if task["kind"] == "decline" or self.last is None:
            return
        ent, row = self.last
        if not any(r is row for r in self.rows(ent)):
            return
        alive = [r for e, r in self.recent if e is ent and any(r is x for x in self.rows(ent))]
        if len(alive) >= 2 and len(task["turns"]) < self.goal:  # the records it changed, compared
            turn = self.ask_compare(ent, alive[-3:], now=True)
            if turn is not None:
                task["turns"].append(turn)
                return
        how = "key" if self.model.op("find", ent) is not None else "id"
        asked = {c["any_of"][0] for t in task["turns"] for c in t["checks"] if c["kind"] == "reply_contains"}
        cols = self.readable(ent)
        self.rng.shuffle(cols)
        added = 0
        for c in cols:
            if len(task["turns"]) >= self.goal or added >= 2:
                break
            turn = self.ask_value(ent, row, c, how)
            if turn is not None and turn["checks"][0]["any_of"][0] not in asked:
                turn["instruction"] = turn["instruction"].rstrip("?.") + " now?"
                task["turns"].append(turn)
                added += 1

    def builders(self) -> dict[str, tuple[list[Builder], list[Builder], list[Builder]]]:
        """Per task kind: (rare deep shapes, common deep shapes, shallow fallbacks)."""
        return {
            "execute": ([self.exec_transfer, self.exec_batch], [self.create_talk], [self.exec_child, self.exec_create]),
            "read": ([], [self.read_talk], [self.read_fallback]),
            "read_then_write": ([self.refuse_overdraft, self.refuse_capacity, self.refuse_transition,
                                 self.chain_transfer, self.chain_move, self.cascade, self.chain_decide],
                                [self.chain_key, self.chain_pick, self.talk_list, self.talk_refer], []),
            "missing_parameter": ([self.missing_update], [self.missing_create], []),
            "decline": ([], [self.decline_deep], [self.decline]),
        }


Plan = tuple[list[Builder], list[Builder]]  #: a kind's deep shapes (rotating) and its shallow fallbacks


def _plans(tm: TaskMaker, rng: random.Random) -> dict[str, Plan]:
    plans: dict[str, Plan] = {}
    for kind, (rare, common, shallow) in tm.builders().items():
        rng.shuffle(rare)
        rng.shuffle(common)
        plans[kind] = ([*rare, *common], shallow)
    return plans


def _first_feasible(tm: TaskMaker, options: list[Builder]) -> tuple[int, Task] | None:
    for i, build in enumerate(options):
        tm.reset()
        task = build()
        if task is not None and task["turns"]:
            task["shape"] = build.__name__
            tm.pad(task)
            return i, task
    return None


def _take(tm: TaskMaker, plans: dict[str, Plan], kind: str) -> Task | None:
    """The first feasible deep shape of ``kind`` (the one used moves to the back of the kind's order), else
    the first feasible fallback."""
    deep, shallow = plans[kind]
    found = _first_feasible(tm, deep)
    if found is not None:
        i, task = found
        deep.append(deep.pop(i))
        return task
    found = _first_feasible(tm, shallow)
    return found[1] if found is not None else None


def _slots(mix: dict[str, int], kinds: list[str]) -> list[str]:
    """The kind of each task the plan tries, in order: one of each wanted kind, then the rest in rotation
    (``missing_parameter`` last, so a small ``max_tasks`` drops it first)."""
    order = sorted((k for k, n in mix.items() if n > 0 and k in kinds), key=lambda k: k == "missing_parameter")
    left = {k: mix[k] for k in order}
    slots: list[str] = []
    while left:
        for kind in list(left):
            slots.append(kind)
            left[kind] -= 1
            if left[kind] <= 0:
                del left[kind]
    return slots


def _scenario_slots(slots: list[str], kinds: set[str], max_tasks: int, rng: random.Random) -> set[int]:
    """The slots written as scenario tasks: :data:`SCENARIO_SHARE` of the first ``max_tasks`` (at least one), drawn
    among those of a kind in ``kinds``."""
    first = slots[:max_tasks]
    can = [i for i, kind in enumerate(first) if kind in kinds]
    want = min(len(can), max(1, round(SCENARIO_SHARE * len(first))))
    return set(rng.sample(can, want))


def build_tasks(model: EnvModel, rng: random.Random, maker: ValueMaker, max_tasks: int = 8,
                mix: dict[str, int] | None = None, profile: Profile | None = None) -> list[Task]:
    """At most ``max_tasks`` tasks by ``mix`` (task kind -> how many; default one of each kind), one of each
    wanted kind first, then the rest in rotation, a share of them scenario tasks (module docstring); ``profile``
    is the difficulty (default ``medium``)."""
    tm = TaskMaker(model, rng, maker, profile or PROFILES["medium"])
    plans = _plans(tm, rng)
    scenarios: dict[str, Plan] = {kind: (builders, []) for kind, builders in tm.scenario_builders().items()}
    for deep, _ in scenarios.values():
        rng.shuffle(deep)
    mix = dict(mix) if mix is not None else {k: 1 for k in plans}
    slots = _slots(mix, list(plans))
    chosen = _scenario_slots(slots, set(scenarios), max_tasks, rng)
    tasks: list[Task] = []
    for i, kind in enumerate(slots):
        if len(tasks) >= max_tasks:
            break
        task = _take(tm, scenarios, kind) if i in chosen else None
        task = task if task is not None else _take(tm, plans, kind)
        if task is not None:
            tasks.append(task)
    for i, task in enumerate(tasks):
        task["id"] = f"t{i}_{task.pop('shape')}"
    return tasks

"""A reference turn's views of its turn (:class:`envgen.gate.mutants.RefTurn`): made once a run, each the same as
reading the turn afresh, and each property a list of its caller's own."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from envgen.gate.mutants import RefTurn
from envgen.gate.values import Snapshot
from gym_envs.examples import example_path
from gym_envs.spec import Say, ToolCall, as_spec


def _pool() -> tuple[list[Any], list[Any]]:
    """Every reference item and check of the shop example's turns (what a drawn turn is made of)."""
    spec = json.loads(example_path("shop-support").read_text())
    turns = [u for t in spec["tasks"] for u in t["turns"]]
    return [i for u in turns for i in u["reference"]], [c for u in turns for c in u["checks"]]


ITEMS, CHECKS = _pool()


def _spec(turns: list[tuple[list[int], list[int]]]) -> Any:
    """The shop example with its first task's turns replaced by ``turns`` (indexes into :data:`ITEMS`, :data:`CHECKS`:
    a turn's reference and its checks, a scored one first)."""
    spec = json.loads(example_path("shop-support").read_text())
    scored = next(c for c in CHECKS if c["kind"] == "sql")
    spec["tasks"][0]["turns"] = [{"instruction": f"Do step {i + 1}.", "reference": [ITEMS[j] for j in ref],
                                  "checks": [scored, *(CHECKS[j] for j in checks)]}
                                 for i, (ref, checks) in enumerate(turns)]
    return as_spec(spec)


_turn = st.tuples(st.lists(st.integers(0, len(ITEMS) - 1), max_size=8),
                  st.lists(st.integers(0, len(CHECKS) - 1), max_size=5))


@settings(max_examples=60, deadline=None)
@given(st.lists(_turn, min_size=1, max_size=3), st.data())
def test_the_turns_views_are_those_read_afresh_and_lists_of_the_callers_own(turns: Any, data: Any) -> None:
    spec = _spec(turns)
    task = spec.tasks[0]
    index = data.draw(st.integers(0, len(task.turns) - 1))
    ref = RefTurn(task, index, Snapshot({}))
    turn = task.turns[index]
    for _ in range(2):  # made on the first read, kept for the second
        assert ref.turn is turn
        assert ref.calls == [c for c in turn.reference if isinstance(c, ToolCall)]
        assert ref.says == [i for i in turn.reference if isinstance(i, Say)]
        assert ref.answers == [a[0] for c in turn.checks if (a := c.answers())]
        mine = ref.calls, ref.says, ref.answers
        for got in mine:
            got.append(None)  # a caller changes its own list
        assert (ref.calls, ref.says, ref.answers) == tuple(x[:-1] for x in mine)
        assert ref.calls is not ref.calls

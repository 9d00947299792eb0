"""``gym_envs.sandbox.content``: the columns of a table holding a text are those a loop over every row and column
finds, whatever the values' types."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gym_envs.sandbox import SqlLimits, StateDB
from gym_envs.sandbox.content import Holding
from tests.gym_envs.sandbox.store import state_image

_SCHEMA = "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b, c REAL);"
_STATE = StateDB(SqlLimits())
_STATE.load_image(state_image(_SCHEMA, "", SqlLimits()))

_CELL = st.one_of(st.none(), st.integers(-3, 3), st.floats(allow_nan=False), st.binary(max_size=3),
                  st.sampled_from(["Pear", " pear ", "PEAR", "apple pear", "", "e", "Ä", "ä"]))


def _by_loop(rows: list[tuple[Any, ...]], text: str, limit: int) -> Holding:
    want = text.strip().lower()
    equal: list[tuple[str, list[str]]] = []
    within: list[tuple[str, list[str]]] = []
    names = ["id", "a", "b", "c"]
    for i, name in enumerate(names if rows else []):
        values = [r[i] for r in rows[:limit] if isinstance(r[i], str)]
        lows = [v.strip().lower() for v in values]
        if want in lows:
            equal.append((f"t.{name}", list(dict.fromkeys(values))))
        elif want and any(want in v for v in lows):
            within.append((f"t.{name}", list(dict.fromkeys(values))))
    return equal, within


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(), _CELL, _CELL, _CELL), max_size=8),
       st.sampled_from(["pear", " PEAR", "e", "", "zz", "ä"]), st.integers(1, 9))
def test_the_columns_holding_a_text_are_those_a_loop_finds(rows: list[tuple[Any, ...]], text: str, limit: int) -> None:
    assert _STATE.table_holding("t", text, limit, rows) == _by_loop(rows, text, limit)

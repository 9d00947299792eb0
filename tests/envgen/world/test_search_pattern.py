"""A search tool's text query is matched as the pattern ``'%' || query || '%'`` made in SQL: the same matches as the
pattern made in Python and bound whole, and a statement SQLite prepares once however the query changes (a bare
bound ``LIKE`` pattern is prepared, and authorized, again for every new value)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envgen.world.compile import CompiledWorld
from envgen.world.sim import Simulator
from gym_envs.sandbox.db import StateDB
from tests.envgen.world.store_world import simulated, store_world

_TEXT = st.text(alphabet="aBc%_ \\xyzÉé", max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TEXT, min_size=1, max_size=6), _TEXT)
def test_the_pattern_made_in_sql_matches_as_the_one_made_in_python(values: list[str], query: str) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
    conn.executemany("INSERT INTO t (name) VALUES (?)", [(v,) for v in values])
    q = query.strip().lower()
    bound = conn.execute("SELECT id FROM t WHERE lower(name) LIKE ? ORDER BY id", ("%" + q + "%",)).fetchall()
    made = conn.execute("SELECT id FROM t WHERE lower(name) LIKE '%' || ? || '%' ORDER BY id", (q,)).fetchall()
    assert made == bound


@pytest.fixture(scope="module")
def shop() -> Iterator[tuple[CompiledWorld, Simulator]]:
    yield from simulated(store_world(), "test-search-pattern", 3)


def test_a_search_is_prepared_once_whatever_its_query(shop: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The statements of a search with a text query are authorized when first prepared, never again for another
    query (the authorizer runs only while SQLite prepares a statement)."""
    cw, _ = shop
    selects: list[str | None] = []
    authorize = StateDB._authorize

    def counting(self: StateDB, action: int, *args: Any) -> int:
        if action == sqlite3.SQLITE_SELECT and self.guard.mode != "host":
            selects.append(self.guard.current)
        return authorize(self, action, *args)

    monkeypatch.setattr(StateDB, "_authorize", counting)  # before the simulator's connections are made
    sim = Simulator(cw.spec)
    try:
        run = sim.run()
        first = run.call("search_products", {"query": "tea"})
        assert first.ok, first.error
        prepared = len(selects)
        assert prepared > 0
        found = [run.call("search_products", {"query": q}) for q in ("bean", "Oat", "x%y", "", "CHOC")]
        assert all(r.ok for r in found)
        assert len(selects) == prepared
    finally:
        sim.close()

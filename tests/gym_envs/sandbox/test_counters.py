"""``StateDB.counters``: the connection's ``last_insert_rowid()`` and ``changes()``, which it gives unread while no row
changed since they were zeroed, are what SQL reads, across every event of a random history."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings

from gym_envs.sandbox import StateDB
from gym_envs.sandbox.db import _COUNTERS
from tests.gym_envs.sandbox.histories import histories, run
from tests.gym_envs.sandbox.histories import play as play_history
from tests.gym_envs.sandbox.test_digests import STATEMENTS, episode

#: the digest tests' statements, and those that change no row but may move a counter: an ignored insert, an update
#: and a delete of no row, a failed insert, one that fails after inserting a row (its rowid stays
#: ``last_insert_rowid()``, the change count does not move), an insert that takes a new rowid
FAILS_AFTER_AN_INSERT = "INSERT INTO p VALUES (60 + ?, 'new', 0), (1, 'dup', 0)"
MORE = [*STATEMENTS, "INSERT OR IGNORE INTO p VALUES (?, 'a', 0)", "UPDATE p SET v = v WHERE id = -?",
        "DELETE FROM g WHERE id = -?", "INSERT INTO p VALUES (1, 'k' || ?, 0)", FAILS_AFTER_AN_INSERT,
        "INSERT INTO lone VALUES (?)"]


def _check(state: StateDB) -> None:
    assert state.counters() == state._host.execute(_COUNTERS).fetchone()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(len(MORE), 4))
def test_the_counters_given_are_those_sql_reads(ops: list[tuple[int, int, bool]]) -> None:
    state = episode()
    _check(state)
    play_history(state, [(op, arg, True) for op, arg, _ in ops], MORE, digests=lambda s: s.table_digests(),
                 trusted="UPDATE lone SET v = ?", check=_check)


def test_a_statement_that_failed_after_an_insert_leaves_no_rowid_to_the_next_episode() -> None:
    state = episode()
    assert state.counters() == (0, 0)
    assert run(state, FAILS_AFTER_AN_INSERT, 1).startswith("error:")
    assert state.counters() == state._host.execute(_COUNTERS).fetchone() == (61, 0)
    state.reset_episode()  # a fresh connection's counters again, though no row changed
    assert state._host.execute(_COUNTERS).fetchone() == (0, 0) == state.counters()


def test_a_checkpoint_made_at_zero_gives_zero_again_unread(monkeypatch: Any) -> None:
    state = episode()
    saved = state.fork(1)
    assert saved is not None and saved[:2] == (0, 0)
    state.run("INSERT INTO lone VALUES (?)", (5,), mode="rw", fetch=False)
    assert state.counters() != (0, 0)
    assert state.back_to(1, saved)
    read: list[str] = []
    monkeypatch.setattr(state, "_host", _Counting(state._host, read))
    assert state.counters() == (0, 0) and read == []


class _Counting:
    """A cursor that notes the statements it runs."""

    def __init__(self, cursor: Any, read: list[str]):
        self.cursor, self.read = cursor, read

    def execute(self, sql: str, *args: Any) -> Any:
        self.read.append(sql)
        return self.cursor.execute(sql, *args)

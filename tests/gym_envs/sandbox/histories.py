"""Random histories of a :class:`~gym_envs.sandbox.StateDB`, played by the digest tests (``test_digests``,
``test_rereads``): statements, digests, checkpoints and their restores, call savepoints kept or undone, resets and
trusted writes, with a check of the digests wherever an item asks and at the end."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import strategies as st

from gym_envs.errors import StateError
from gym_envs.sandbox import StateDB

#: what an item of a history may be after the statements (its index past the last statement's)
EVENTS = ("digests", "checkpoint", "restore", "call savepoint", "reset", "trusted write")


def histories(statements: int, args: int) -> Any:
    """A hypothesis strategy of histories: (a statement's index or an event's after them, an argument in
    ``0..args``, whether to check the digests after it)."""
    return st.lists(st.tuples(st.integers(0, statements + len(EVENTS) - 1), st.integers(0, args), st.booleans()),
                    min_size=10, max_size=60)


def run(state: StateDB, sql: str, *params: Any) -> Any:
    """A statement as tool code runs it (its failures, a constraint for one, are results)."""
    try:
        return state.run(sql, params, mode="rw", fetch=sql.startswith("SELECT") or "RETURNING" in sql)
    except StateError as e:
        return f"error: {e}"


def play(state: StateDB, ops: Sequence[tuple[int, int, bool]], statements: Sequence[str], *,
         digests: Callable[[StateDB], Any], trusted: str, check: Callable[[StateDB], None]) -> None:
    """Play ``ops`` (:func:`histories`) on ``state``: a statement (with the argument), ``digests(state)``, a
    checkpoint numbered by the argument, a restore of one, a call savepoint opened or ended (kept for an even
    argument), a reset, or the ``trusted`` statement (one ``?``, the argument) on the host connection; ``check``
    where an item asks and at the end; then closes the state."""
    forks: dict[int, tuple[Any, ...]] = {}
    for op, arg, digest in ops:
        event = EVENTS[op - len(statements)] if op >= len(statements) else "statement"
        if event == "statement":
            run(state, statements[op], arg)
        elif event == "digests":
            digests(state)
        elif event == "checkpoint":
            saved = state.fork(arg)
            if saved is not None:
                forks[arg] = saved
        elif event == "restore" and forks:
            n = sorted(forks)[arg % len(forks)]
            if not state.back_to(n, forks[n]):
                del forks[n]
        elif event == "call savepoint":
            if state._savepoint:
                state.release(commit=arg % 2 == 0)
            else:
                state.savepoint()
        elif event == "reset":
            state.reset_episode()
        elif event == "trusted write":
            state.host(trusted, (arg,))
        if digest:
            check(state)
    check(state)
    state.close()

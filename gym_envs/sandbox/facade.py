"""The ``db`` object tool and check code receive (:class:`DbFacade`), and how its functions are named.

Role: the only handle spec code gets on an episode's :class:`~gym_envs.sandbox.db.StateDB`; its statements are the
StateDB's own (:meth:`~gym_envs.sandbox.db.StateDB.statement`), held in closures.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gym_envs.errors import StateError

__all__ = ["DbFacade", "named"]

_RENAMED: dict[tuple[Any, str], Any] = {}  #: (code object, name) -> the code object renamed (made once)


def named(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``fn`` named ``db.<name>`` for the messages tool code sees (``db.query() takes from 1 to 2
    positional arguments ...``); Python words those from the code object (renamed once per name, as every
    episode's facade makes its functions afresh)."""
    key = (fn.__code__, name)
    code = _RENAMED.get(key)
    if code is None:
        code = _RENAMED[key] = fn.__code__.replace(co_name=name, co_qualname=f"db.{name}")
    fn.__code__ = code
    fn.__name__, fn.__qualname__ = name, f"db.{name}"
    return fn


class DbFacade:
    """The ``db`` object that tool and check code receive.

    It holds its :class:`StateDB` in closures, not attributes, so restricted code (which cannot touch
    ``_``-names anyway) has nothing to reach through. Its statements run only while ``owner`` is the
    connection's owner token: the engine installs it for the duration of each call of the facade's episode.
    """

    __slots__ = ("execute", "query")

    # ``state`` is the episode's StateDB (typed Any: gym_envs.sandbox.db imports this module)

    def __init__(self, state: Any, *, read_only: bool, timeout_s: float, owner: object):
        self.query = state.statement("ro" if read_only else "rw", fetch=True, timeout_s=timeout_s, owner=owner)
        if read_only:
            def execute(sql: str, params: Any = ()) -> dict[str, Any]:
                """Refused: checks read the state, they never write it."""
                raise StateError("this database view is read-only")

            self.execute = named(execute, "execute")
        else:
            self.execute = state.statement("rw", fetch=False, timeout_s=timeout_s, owner=owner)

    def __repr__(self) -> str:
        return "<db>"

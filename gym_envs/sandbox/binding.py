"""Values into and out of a statement of untrusted code: bound parameters and result rows.

Parameters (:func:`bind_params`): a list, tuple or dict of at most ``max_variables`` values, each a
``str``, ``int``, ``float``, ``bool``, ``bytes`` or ``None``; a subclass of one is stripped to the plain
type (its overrides never reach SQLite), anything else is refused with a :class:`~gym_envs.errors.StateError`.
Rows (:func:`row_builder`): a result row becomes a dict keyed by the statement's column names. Used by
the statement functions of :class:`gym_envs.sandbox.db.StateDB`, the hot path of every ``db`` call.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from gym_envs.errors import StateError

__all__ = ["EXACT_TYPES", "bind_params", "plain_param", "row_builder"]

EXACT_TYPES = frozenset({str, int, float, bytes, bool, type(None)})  #: the values bound as they are


@functools.lru_cache(maxsize=1024)
def row_builder(cols: tuple[str, ...]) -> Callable[[tuple[Any, ...]], dict[str, Any]]:
    """A function from a result row to its dict keyed by ``cols``: a dict display, several times faster
    than ``dict(zip(cols, row))`` and equal to it (a repeated name keeps its last value). Only indices are
    in the generated text; the column names are values in its globals. Cached per column list, so SQL
    texts that differ only in their constants share one."""
    names: dict[str, Any] = {f"c{i}": c for i, c in enumerate(cols)}
    items = ", ".join(f"c{i}: row[{i}]" for i in range(len(cols)))
    exec(f"def build(row):\n    return {{{items}}}\n", names)  # the text holds indices only
    return names["build"]  # type: ignore[no-any-return]


def bind_params(params: Any, max_vars: int) -> Any:
    """``params`` as SQLite binds them: a tuple of plain values, or a dict of them by name (or ``StateError``)."""
    cls = params.__class__
    if cls is list or cls is tuple:
        if len(params) > max_vars:
            raise StateError(f"too many parameters ({len(params)} > {max_vars})")
        for v in params:
            if v.__class__ not in EXACT_TYPES:
                break
        else:
            return params if cls is tuple else tuple(params)
        return tuple(plain_param(v) for v in params)
    if params is None:
        return ()
    if isinstance(params, dict):
        if len(params) > max_vars:
            raise StateError(f"too many parameters ({len(params)} > {max_vars})")
        return {str(k): plain_param(v) for k, v in params.items()}
    if isinstance(params, list | tuple):
        return bind_params(list(params), max_vars)
    raise StateError("params must be a list, tuple or dict of values")


def plain_param(v: Any) -> Any:
    """A bindable value, subclasses stripped (a ``str`` subclass becomes a plain str)."""
    if v.__class__ in EXACT_TYPES:
        return v
    for base in (bool, int, float, str, bytes):
        if isinstance(v, base):
            return base(v)  # type: ignore[arg-type]
    raise StateError(f"parameter values must be str, int, float, bool, bytes or None, not {type(v).__name__}")

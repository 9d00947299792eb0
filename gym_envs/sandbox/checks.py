"""The reads of the state a check asks for (probes), answered inside the engine's call scope.

A check kind (:mod:`gym_envs.checks`) judges on the host; what it must read of the episode's state it asks the
engine for as probes (``Engine._op_probe``), and :func:`probe` answers one: ``{"sql": query}`` runs the query in the
read-only mode and gives its rows as plain JSON (:func:`json_rows`); ``{"python": code}`` runs a ``check(db)``
function on the read-only facade and gives its verdict (:func:`python_verdict`: it passes only when the function
returned the real ``True``); ``{"digests": tables or None}`` and ``{"marks": None}`` give table digests now and at the
turn's mark; ``{"columns": text}`` the columns holding a text, with their distinct values. Untrusted SQL and Python
run only here, in the call scope the engine gives them, and only JSON crosses back: ``{"ok": True, "value": ...}`` or
``{"ok": False, "error": ...}`` (a timeout is ``"check timed out"``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from gym_envs.errors import CallTimeout, cap_text
from gym_envs.sandbox.reprs import described

__all__ = ["PROBES", "Readers", "json_rows", "probe", "python_verdict"]

_SCALARS = (bool, int, float, str, type(None))
PROBES = ("sql", "python", "digests", "marks", "columns")  #: the probe kinds the engine answers

#: how the engine reads its episode for each probe kind (each runs untrusted code only inside the call scope)
Readers = dict[str, Callable[[Any], Any]]


def json_rows(rows: list[dict[str, Any]]) -> list[list[Any]]:
    """A query's rows as lists of plain JSON values (bytes and the like as their JSON text, ``repr``)."""
    got: Any = [list(r.values()) for r in rows]
    plain = all(r.__class__ is list and all(v.__class__ in _SCALARS for v in r) for r in got)
    return got if plain else json.loads(json.dumps(got, default=repr))  # type: ignore[no-any-return]


def probe(request: Any, readers: Readers) -> dict[str, Any]:
    """One probe's answer (module docstring); a failure is an answer with ``ok`` false, never an exception."""
    if not isinstance(request, dict) or len(request) != 1 or next(iter(request)) not in readers:
        return {"ok": False, "error": cap_text(f"unknown probe {request!r}; probes are {list(PROBES)}", 200)}
    (kind, arg), = request.items()
    try:
        return {"ok": True, "value": readers[kind](arg)}
    except CallTimeout:
        return {"ok": False, "error": "check timed out"}
    except Exception as e:  # the boundary: a probe whose SQL or code raises fails the checks that asked for it
        return {"ok": False, "error": described(e, 500)["error"]}


def python_verdict(value: Any) -> dict[str, Any]:
    """The verdict of a ``python`` check whose ``check(db)`` returned ``value``."""
    if value is True:
        return {"passed": True, "detail": "check(db) returned True"}
    shown = repr(value) if type(value) in _SCALARS else type(value).__name__
    return {"passed": False, "detail": f"check(db) returned {cap_text(shown, 100)}, not True"}

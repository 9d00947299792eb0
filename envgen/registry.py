"""A small registry keyed by short names (proposers, backends, ...).

Names are validated, duplicates refused, and a lookup typo gets a close-match
suggestion, as in Gymnasium's ``register``/``make``.
"""

from __future__ import annotations

import difflib
import importlib
import re
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")
_NAME = re.compile(r"^[a-z][a-z0-9_.-]{0,40}$")


class Registry(Generic[T]):
    """Maps a short name to a factory; entries may be lazy ``"module:attr"`` strings."""

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, T | str] = {}

    def register(self, name: str, obj: T | str | None = None) -> Callable[[T], T] | None:
        """Register ``obj`` under ``name`` (or use as a decorator when ``obj`` is omitted)."""
        if not _NAME.match(name):
            raise ValueError(f"invalid {self.kind} name {name!r}: use lowercase letters, digits, '_', '-', '.'")

        def add(o: T | str) -> T | str:
            if name in self._entries and self._entries[name] is not o:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            self._entries[name] = o
            return o

        if obj is None:
            return add  # type: ignore[return-value]
        add(obj)
        return None

    def get(self, name: str) -> T:
        """The entry for ``name``; ``KeyError`` with a suggestion when unknown."""
        if name not in self._entries:
            close = difflib.get_close_matches(name, list(self._entries), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise KeyError(f"unknown {self.kind} {name!r}{hint} (known: {', '.join(sorted(self._entries))})")
        entry = self._entries[name]
        if isinstance(entry, str):
            module, _, attr = entry.partition(":")
            entry = getattr(importlib.import_module(module), attr)
            self._entries[name] = entry
        return entry  # type: ignore[return-value]

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

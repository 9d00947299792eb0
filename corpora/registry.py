"""The project's one registry and its name helpers: the base layer every package may import.

Role: :class:`Registry` is what every registry of the project is (corpus loaders in
:mod:`corpora.loaders.registry`; proposers, model backends, evaluation policies and suites in the
packages above): names validated, duplicates refused, a typo answered with the closest names, as in
Gymnasium's ``register``/``make``. An entry is an object or a lazy ``"module:attr"`` entry point,
imported on first :meth:`Registry.get`, so a registry can list what it offers without importing it
(and without import cycles). :func:`entry_point` resolves one such reference.

Layer: this module and :mod:`corpora.errors` (the errors it raises, and the one "did you mean",
:func:`~corpora.errors.did_you_mean`) import only the standard library. They are the base layer:
``gym_envs`` (which otherwise imports nothing of ours) and every package above may import them
(``tests/test_layout.py`` holds the rule).

Contract:

* Names match ``[a-z][a-z0-9_-]+`` (2 to 40 characters); a malformed name or one registered twice
  raises :class:`~corpora.errors.RegistryError`; an entry point that does not import raises it too,
  naming the entry point.
* Looking up an unknown name raises :class:`~corpora.errors.UnknownNameError` (a ``KeyError`` and a
  ``ValueError``, through :class:`~corpora.errors.CorpusError`) with close matches and the registered names.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

from corpora.errors import RegistryError, UnknownNameError, did_you_mean

__all__ = ["Registry", "entry_point"]

T = TypeVar("T")
_NAME_RE = re.compile(r"^[a-z][a-z0-9_-]{1,39}$")
_ENTRY_POINT_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def entry_point(ref: str) -> Any:
    """The object an entry point ``"package.module:attr"`` names (``attr`` may be dotted).

    Raises:
        RegistryError: ``ref`` is not of that form, or its module or attribute does not load.
    """
    if not _ENTRY_POINT_RE.match(ref):
        raise RegistryError(f"entry point {ref!r} must look like 'package.module:attr'")
    module_name, _, attr = ref.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as e:
        raise RegistryError(f"entry point {ref!r}: module {module_name!r} does not import ({e})") from e
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise RegistryError(f"entry point {ref!r}: {module_name!r} has no attribute {attr!r}") from None
    return obj


class Registry(Generic[T]):
    """Entries of one ``kind`` (``"corpus loader"``, ``"backend"``, ...) keyed by short names.

    An entry is an object or a lazy ``"module:attr"`` entry point, imported by the first :meth:`get`.
    """

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, T | str] = {}

    @overload
    def register(self, name: str) -> Callable[[T], T]: ...

    @overload
    def register(self, name: str, entry: T | str) -> None: ...

    def register(self, name: str, entry: T | str | None = None) -> Callable[[T], T] | None:
        """Register ``entry`` (an object or a ``"module:attr"`` entry point) under ``name``.

        Without ``entry`` this is a decorator registering what it decorates. Registering the same
        object again under its name is allowed (a module imported twice).

        Raises:
            RegistryError: ``name`` is malformed or already registered.
        """
        self.check_name(name)

        def add(obj: T) -> T:
            if name in self._entries and self._entries[name] is not obj:
                raise RegistryError(f"{self.kind} {name!r} is already registered; pick another name")
            self._entries[name] = obj
            return obj

        if entry is None:
            return add
        if isinstance(entry, str) and not _ENTRY_POINT_RE.match(entry):
            raise RegistryError(f"{self.kind} {name!r}: entry point {entry!r} must look like 'package.module:attr'")
        add(entry)  # type: ignore[arg-type]  # a str entry is an entry point, resolved by get()
        return None

    def check_name(self, name: object) -> None:
        """Raise :class:`~corpora.errors.RegistryError` unless ``name`` is a well-formed entry name."""
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise RegistryError(f"{self.kind} name {name!r} must match [a-z][a-z0-9_-]+ (2 to 40 characters, "
                                "e.g. 'jsonl', 'my-corpus')")

    def get(self, name: str) -> T:
        """The entry registered under ``name`` (an entry point is imported on first use).

        Raises:
            UnknownNameError: no such entry; the message suggests close matches and lists the names.
            RegistryError: the entry point does not import.
        """
        try:
            entry = self._entries[name]
        except (KeyError, TypeError):
            raise UnknownNameError(f"unknown {self.kind} {name!r}{did_you_mean(name, self._entries)} "
                                   f"(registered: {', '.join(self.names())})") from None
        if isinstance(entry, str):
            entry = self._entries[name] = entry_point(entry)
        return entry

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(self._entries)

    def unregister(self, name: str) -> None:
        """Remove ``name`` (a test's own entries); :class:`~corpora.errors.UnknownNameError` if absent."""
        if name not in self._entries:
            self.get(name)
        del self._entries[name]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self.names())})"

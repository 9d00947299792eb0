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
* :func:`build_config` turns keyword options into a component's typed options dataclass (a proposer's, a
  model backend's, a policy's, a suite's; a corpus loader's config through
  :func:`corpora.loaders.registry.loader_config`) and refuses an unknown option with a close-match
  suggestion, or a value of the wrong kind, so no package lets a misspelt option pass in silence.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar, overload

from corpora.errors import OptionError, RegistryError, UnknownNameError, did_you_mean

__all__ = ["Registry", "build_config", "check_options", "entry_point", "option_names"]

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


# -- typed options ------------------------------------------------------------------------------------------
_SCALARS: dict[type, str] = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def option_names(config_type: type) -> list[str]:
    """The options an options dataclass accepts (its init fields), in declaration order."""
    return [f.name for f in dataclasses.fields(config_type) if f.init]


def _check_type(config_type: type, owner: str, key: str, value: Any) -> None:
    """Refuse a value of the wrong kind for an option whose default is a bool, int, float or string
    (``None`` passes where the field's annotation allows it), naming the option and what it takes."""
    f = next(f for f in dataclasses.fields(config_type) if f.name == key)
    default = f.default
    kind = type(default)
    if default is dataclasses.MISSING or default is None or kind not in _SCALARS:
        return
    annotated = {part.strip() for part in str(getattr(f.type, "__name__", f.type)).split("|")}
    if annotated - {"None"} != {kind.__name__}:  # an option that takes other kinds too (``Any``, a union)
        return
    if value is None and "None" in annotated:
        return
    ok = isinstance(value, kind) and (kind is bool or not isinstance(value, bool))
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        ok = True
    if not ok:
        raise OptionError(f"option {key!r} of {owner} must be {_SCALARS[kind]}, got {value!r} "
                          f"(e.g. {key}={default!r})")


def check_options(config_type: type, owner: str, options: Mapping[str, Any]) -> None:
    """Refuse an option ``config_type`` does not take (naming the closest ones) or a value of the wrong kind."""
    allowed = option_names(config_type)
    for key, value in options.items():
        if key not in allowed:
            raise UnknownNameError(f"unknown option {key!r} for {owner}{did_you_mean(key, allowed)} "
                                   f"(accepted: {', '.join(allowed) or 'none'})")
        _check_type(config_type, owner, key, value)


def build_config(config: type[T], options: Mapping[str, Any] | None = None, *, owner: str | None = None) -> T:
    """Build an options dataclass from keyword ``options``, refusing unknown ones with a close-match suggestion.

    ``owner`` names what the options are for in messages (``"backend 'scripted'"``).

    Raises:
        UnknownNameError: an option is not a field of the config (with a suggestion and the accepted ones).
        OptionError: an option's value is not of the kind its default is (a bool, an integer, a number,
            a string).
    """
    if not (isinstance(config, type) and dataclasses.is_dataclass(config)):
        raise TypeError(f"build_config takes an options dataclass, not {config!r}")
    opts = dict(options or {})
    check_options(config, owner or config.__name__, opts)
    return config(**opts)

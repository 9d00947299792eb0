"""Registries keyed by short names: the project's one implementation, and the corpus loader registry.

Role: :class:`Registry` is what every registry of the project is (corpus loaders here; proposers,
model backends, evaluation policies and suites in the packages above): names validated, duplicates
refused, a typo answered with the closest names, as in Gymnasium's ``register``/``make``. An entry
is an object or a lazy ``"module:attr"`` entry point, imported on first :meth:`Registry.get`, so a
registry can list what it offers without importing it (and without import cycles).

Contract:

* Names match ``[a-z][a-z0-9_-]+`` (2 to 40 characters); a malformed name or one registered twice
  raises :class:`~corpora.errors.RegistryError`; an entry point that does not import raises it too,
  naming the entry point.
* Looking up an unknown name raises :class:`~corpora.errors.UnknownNameError` (a ``KeyError`` and a
  ``CorpusError``) with close matches and the registered names.
* Corpus loaders: a loader is a function ``fn(config) -> Iterable[Document]`` together with its config
  dataclass; register it with ``@register_loader(name, config=Cls)`` (or ``@register_loader(name)``,
  and ``fn`` gets a :class:`LoaderOptions`). The built-in loaders are entry points listed in one
  module, :mod:`corpora.builtin` (data only); their modules are imported when first used.
* :func:`build_config` turns keyword options into a typed config and refuses unknown options with a
  close-match suggestion: a loader's config (with the spec's source), and the options class of every
  other registered component (a proposer, a model backend, an evaluation suite), so no package lets a
  misspelt option pass in silence.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Generic, Protocol, TypeVar, overload

from corpora.builtin import BUILTIN_LOADERS
from corpora.document import Document
from corpora.errors import CorpusError, OptionError, RegistryError, UnknownNameError, did_you_mean

__all__ = [
    "LOADERS",
    "LoaderConfig",
    "LoaderEntry",
    "LoaderOptions",
    "Registry",
    "build_config",
    "entry_point",
    "get_loader",
    "loader_names",
    "option_names",
    "register_loader",
]

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


# ================================================================================================
# Corpus loaders
# ================================================================================================
class LoaderConfig(Protocol):
    """What a loader config class provides: a dataclass naming its source field.

    ``source_field`` is the name of the field that receives the spec's source
    (the path, directory or dataset name); ``None`` when the loader takes no
    source (``stdlib``).
    """

    source_field: ClassVar[str | None]


@dataclass(kw_only=True)
class LoaderOptions:
    """The config of a loader registered without a config class: the source and free options.

    Attributes:
        source: The spec's source (``"x"`` in ``"name:x"``), or ``None``.
        options: The keyword options given to ``load_corpus``, unchecked.
    """

    source_field: ClassVar[str | None] = "source"

    source: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


LoaderFn = Callable[[Any], Iterable[Document]]
F = TypeVar("F", bound=LoaderFn)


def _check_config(name: str, config: Any) -> type:
    if not dataclasses.is_dataclass(config) or not isinstance(config, type) or not hasattr(config, "source_field"):
        raise RegistryError(f"loader {name!r}: config must be a dataclass class with a 'source_field' attribute")
    return config


@dataclass(frozen=True)
class LoaderEntry:
    """A registered loader: its name, function and config class (each may be a ``"module:attr"`` entry point).

    A built-in loader's module is imported when its :attr:`fn`, :attr:`config_type` or :attr:`summary`
    is first read.
    """

    name: str
    target: LoaderFn | str
    config: type | str = LoaderOptions

    @cached_property
    def fn(self) -> LoaderFn:
        """The loader function."""
        return entry_point(self.target) if isinstance(self.target, str) else self.target

    @cached_property
    def config_type(self) -> type:
        """The loader's config dataclass."""
        return _check_config(self.name, entry_point(self.config) if isinstance(self.config, str) else self.config)

    @property
    def summary(self) -> str:
        """The first line of the loader function's docstring."""
        doc = (self.fn.__doc__ or "").strip().splitlines()
        return doc[0] if doc else ""

    def options(self) -> list[str]:
        """Return the names of the options (config fields) the loader accepts."""
        return [f.name for f in dataclasses.fields(self.config_type)]


LOADERS: Registry[LoaderEntry] = Registry("corpus loader")
"""The corpus loaders by name; the built-ins (:data:`corpora.builtin.BUILTIN_LOADERS`) are entry points."""
for _name, (_fn, _config) in BUILTIN_LOADERS.items():
    LOADERS.register(_name, LoaderEntry(_name, _fn, _config))


def register_loader(name: str, *, config: type = LoaderOptions) -> Callable[[F], F]:
    """Decorator registering ``fn(config) -> Iterable[Document]`` under ``name``.

    Args:
        name: Short name of two characters or more, matching ``[a-z][a-z0-9_-]+``.
        config: The loader's config dataclass; it must define the class
            attribute ``source_field`` (a field name or ``None``). Without
            one, the loader receives a :class:`LoaderOptions` holding the
            source and the options as given.

    Raises:
        RegistryError: the name is malformed or already registered, or
            ``config`` is not a dataclass with ``source_field``.
    """
    LOADERS.check_name(name)
    _check_config(name, config)

    def decorator(fn: F) -> F:
        LOADERS.register(name, LoaderEntry(name, fn, config))
        return fn

    return decorator


def get_loader(name: str) -> LoaderEntry:
    """Return the loader registered under ``name``.

    Raises:
        UnknownNameError: no such loader; the message suggests close matches.
    """
    return LOADERS.get(name)


def loader_names() -> list[str]:
    """Return the registered loader names, sorted."""
    return LOADERS.names()


def _required(config_type: type, name: str) -> bool:
    for f in dataclasses.fields(config_type):
        if f.name == name:
            return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    return False


_SCALARS: dict[type, str] = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


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


def option_names(config_type: type) -> list[str]:
    """The options an options dataclass accepts (its init fields), in declaration order."""
    return [f.name for f in dataclasses.fields(config_type) if f.init]


def build_config(config: LoaderEntry | type[T], source: str | None = None,
                 options: Mapping[str, Any] | None = None, *, owner: str | None = None) -> Any:
    """Build a typed config from keyword ``options``, refusing unknown ones with a close-match suggestion.

    ``config`` is a corpus loader's entry (its config gets the spec's ``source`` too) or any options
    dataclass: the options class of a proposer, a model backend, an evaluation suite. ``owner`` names
    what the options are for in messages (``"backend 'scripted'"``; a loader names itself).

    Raises:
        UnknownNameError: an option is not a field of the config (with a suggestion and the accepted ones).
        OptionError: an option's value is not of the kind its default is (a bool, an integer, a number,
            a string).
        CorpusError: a loader needs a source and none was given, or its config rejected a value.
    """
    options = dict(options or {})
    if isinstance(config, LoaderEntry):
        return _loader_config(config, source, options)
    if not (isinstance(config, type) and dataclasses.is_dataclass(config)):
        raise TypeError(f"build_config takes a loader entry or an options dataclass, not {config!r}")
    what = owner or config.__name__
    _check_options(config, what, options)
    return config(**options)


def _check_options(config_type: type, owner: str, options: Mapping[str, Any]) -> None:
    allowed = option_names(config_type)
    for key, value in options.items():
        if key not in allowed:
            raise UnknownNameError(f"unknown option {key!r} for {owner}{did_you_mean(key, allowed)} "
                                   f"(accepted: {', '.join(allowed) or 'none'})")
        _check_type(config_type, owner, key, value)


def _loader_config(entry: LoaderEntry, source: str | None, options: dict[str, Any]) -> Any:
    if entry.config_type is LoaderOptions:
        return LoaderOptions(source=source, options=dict(options))
    _check_options(entry.config_type, f"corpus loader {entry.name!r}", options)
    kwargs = dict(options)
    source_field: str | None = entry.config_type.source_field  # type: ignore[attr-defined]
    if source is not None:
        if source_field is None:
            raise CorpusError(f"corpus loader {entry.name!r} takes no source, got {source!r}")
        if source_field in kwargs:
            raise CorpusError(f"{source_field!r} given twice: in the spec ({source!r}) and as an option")
        kwargs[source_field] = source
    elif (
        source_field is not None and source_field not in kwargs and _required(entry.config_type, source_field)
    ):
        raise CorpusError(
            f"corpus loader {entry.name!r} needs a source: use the spec '{entry.name}:<{source_field}>'"
        )
    try:
        return entry.config_type(**kwargs)
    except TypeError as exc:
        raise CorpusError(f"corpus loader {entry.name!r}: {exc}") from None

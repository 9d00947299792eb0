"""The corpus loader registry: loaders by short name, their config classes, and building a config.

Role: a loader is a function ``fn(config) -> Iterable[Document]`` together with its config
dataclass; :data:`LOADERS` (a :class:`~corpora.registry.Registry`) holds them by name.

Contract:

* Register a loader with ``@register_loader(name, config=Cls)`` (or ``@register_loader(name)``,
  and ``fn`` gets a :class:`LoaderOptions`). The built-in loaders are entry points listed in one
  module, :mod:`corpora.builtin` (data only); their modules are imported when first used.
* :func:`get_loader` raises :class:`~corpora.errors.UnknownNameError` with close matches.
* :func:`loader_config` turns ``(source, **options)`` into the loader's config and refuses unknown
  options with a close-match suggestion.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Protocol, TypeVar

from corpora.builtin import BUILTIN_LOADERS
from corpora.document import Document
from corpora.errors import CorpusError, RegistryError
from corpora.registry import Registry, check_options, entry_point

__all__ = [
    "LOADERS",
    "LoaderConfig",
    "LoaderEntry",
    "LoaderOptions",
    "get_loader",
    "loader_config",
    "loader_names",
    "register_loader",
]


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


def loader_config(entry: LoaderEntry, source: str | None, options: Mapping[str, Any]) -> Any:
    """Build ``entry``'s config from the spec's ``source`` and keyword ``options``.

    Raises:
        UnknownNameError: an option is not a field of the config (with a suggestion).
        OptionError: an option's value is not of the kind its default is (a bool, an integer, a number, a string).
        CorpusError: the loader needs a source and none was given, or the config rejected a value.
    """
    if entry.config_type is LoaderOptions:
        return LoaderOptions(source=source, options=dict(options))
    check_options(entry.config_type, f"corpus loader {entry.name!r}", options)
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

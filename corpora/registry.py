"""The loader registry: corpus loaders keyed by a short name.

Role: let ``load_corpus`` and the CLI find a loader by name (``"tree"``,
``"jsonl"``, ``"parquet"``, ``"hf"``, ``"stdlib"``) and build its typed config
from keyword options.

Contract:

* A loader is a function ``fn(config) -> Iterable[Document]`` together with
  its config dataclass; register it with ``@register_loader(name, config=Cls)``
  (or ``@register_loader(name)``, and ``fn`` gets a :class:`LoaderOptions`).
* Names match ``[a-z][a-z0-9_-]+``; registering a name twice raises
  :class:`~corpora.errors.CorpusError`.
* Looking up an unknown name raises :class:`~corpora.errors.UnknownNameError`
  with close matches (``difflib``) and the registered names.
* The built-in loaders are registered in one module, :mod:`corpora.builtin`,
  imported lazily on first use of the registry (no import-time side effects).
* :func:`build_config` turns ``(source, **options)`` into the loader's config
  and refuses unknown options with a close-match suggestion.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar

from corpora.document import Document
from corpora.errors import CorpusError, UnknownNameError

__all__ = [
    "LoaderConfig",
    "LoaderEntry",
    "LoaderOptions",
    "build_config",
    "get_loader",
    "loader_names",
    "register_loader",
    "suggest",
]

_NAME_RE = re.compile(r"^[a-z][a-z0-9_-]+$")


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


@dataclass(frozen=True)
class LoaderEntry:
    """A registered loader: its name, function, config class and one-line summary."""

    name: str
    fn: LoaderFn
    config_type: type
    summary: str

    def options(self) -> list[str]:
        """Return the names of the options (config fields) the loader accepts."""
        return [f.name for f in dataclasses.fields(self.config_type)]


_REGISTRY: dict[str, LoaderEntry] = {}
_BUILTINS_LOADED = False


def _ensure_builtins() -> None:
    global _BUILTINS_LOADED
    if not _BUILTINS_LOADED:
        _BUILTINS_LOADED = True
        from corpora import builtin

        builtin.register_builtins()


def suggest(name: str, known: Iterable[str]) -> str:
    """Return a ``"; did you mean 'x'?"`` hint for ``name`` among ``known``, or ``""``."""
    matches = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.6)
    if not matches:
        return ""
    return "; did you mean " + " or ".join(repr(m) for m in matches) + "?"


def register_loader(name: str, *, config: type = LoaderOptions) -> Callable[[F], F]:
    """Decorator registering ``fn(config) -> Iterable[Document]`` under ``name``.

    Args:
        name: Short name of two characters or more, matching ``[a-z][a-z0-9_-]+``.
        config: The loader's config dataclass; it must define the class
            attribute ``source_field`` (a field name or ``None``). Without
            one, the loader receives a :class:`LoaderOptions` holding the
            source and the options as given.

    Raises:
        CorpusError: the name is malformed or already registered, or
            ``config`` is not a dataclass with ``source_field``.
    """
    if not _NAME_RE.match(name):
        raise CorpusError(f"loader name {name!r} must match [a-z][a-z0-9_-]+ (e.g. 'jsonl', 'my-corpus')")
    if not dataclasses.is_dataclass(config) or not hasattr(config, "source_field"):
        raise CorpusError(
            f"loader {name!r}: config must be a dataclass class with a 'source_field' attribute"
        )
    _ensure_builtins()

    def decorator(fn: F) -> F:
        if name in _REGISTRY:
            raise CorpusError(f"loader {name!r} is already registered; pick another name")
        doc = (fn.__doc__ or "").strip().splitlines()
        _REGISTRY[name] = LoaderEntry(name=name, fn=fn, config_type=config, summary=doc[0] if doc else "")
        return fn

    return decorator


def get_loader(name: str) -> LoaderEntry:
    """Return the loader registered under ``name``.

    Raises:
        UnknownNameError: no such loader; the message suggests close matches.
    """
    _ensure_builtins()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownNameError(
            f"unknown corpus loader {name!r}{suggest(name, _REGISTRY)} "
            f"(registered: {', '.join(sorted(_REGISTRY))})"
        ) from None


def loader_names() -> list[str]:
    """Return the registered loader names, sorted."""
    _ensure_builtins()
    return sorted(_REGISTRY)


def _required(config_type: type, name: str) -> bool:
    for f in dataclasses.fields(config_type):
        if f.name == name:
            return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    return False


def build_config(entry: LoaderEntry, source: str | None, options: Mapping[str, Any]) -> Any:
    """Build ``entry``'s config from the spec's ``source`` and keyword ``options``.

    Raises:
        UnknownNameError: an option is not a field of the config (with a suggestion).
        CorpusError: the loader needs a source and none was given, or the
            config rejected a value.
    """
    if entry.config_type is LoaderOptions:
        return LoaderOptions(source=source, options=dict(options))
    allowed = entry.options()
    for key in options:
        if key not in allowed:
            raise UnknownNameError(
                f"unknown option {key!r} for corpus loader {entry.name!r}{suggest(key, allowed)} "
                f"(accepted: {', '.join(allowed)})"
            )
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

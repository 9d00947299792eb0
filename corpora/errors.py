"""Errors raised by :mod:`corpora`.

Role: the one place where the package's exception types live, so callers can
catch corpus problems without catching everything.

Contract:

* Every configuration or data problem is a :class:`CorpusError`, which is a
  :class:`ValueError` whose message names what to fix (the option, the field,
  the file and line). A message that asks for a loader option names it as a
  keyword and as ``envwright generate``'s ``--corpus-option`` (:func:`option_hint`).
* A missing optional dependency (``pyarrow``, ``datasets``) is a
  :class:`MissingDependencyError`, an :class:`ImportError` whose message gives
  the ``pip install`` line.
* A name that is not known (a loader, an option, a split, any :class:`~corpora.registry.Registry`
  entry) is an :class:`UnknownNameError`: a ``CorpusError`` that is also a ``KeyError``, so callers
  that look names up catch it either way. Its message ends with :func:`did_you_mean`'s suggestion.
* Per-file problems inside a loader (undecodable bytes, a syntax error in a
  source file) are not errors: the file is skipped or analysed as text, and the
  skip is logged at DEBUG level on the ``corpora`` logger.

:func:`did_you_mean` is the project's one "did you mean" (``difflib``'s close matches). This module and
:mod:`corpora.registry` import only the standard library: they are the base layer that ``gym_envs`` and
every package above may import (see :mod:`corpora.registry`).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable

__all__ = ["CorpusError", "MissingDependencyError", "OptionError", "RecordFieldError", "RegistryError",
           "UnknownNameError", "did_you_mean", "option_hint"]


def did_you_mean(name: object, known: Iterable[object], *, n: int = 3, cutoff: float = 0.6,
                 show: Callable[[str], str] = repr) -> str:
    """``"; did you mean 'a' or 'b'?"`` naming the known names closest to ``name``, or ``""`` when none is.

    The candidates are :func:`difflib.get_close_matches`'s (``n`` and ``cutoff`` are its own), then the
    known names that start with ``name``, at most ``n`` in all; ``show`` writes one name (``repr``).
    """
    typed, names = str(name), sorted({str(k) for k in known})
    close = difflib.get_close_matches(typed, names, n=n, cutoff=cutoff)
    if typed:
        close += [k for k in names if k.startswith(typed) and k not in close]
    return f"; did you mean {' or '.join(show(c) for c in close[:n])}?" if close else ""


def option_hint(name: str, value: str = "VALUE") -> str:
    """How to set a loader option, in both spellings: ``"text_field=VALUE (command line: --corpus-option
    text_field=VALUE)"``; messages that tell the user to set an option use it, so every one names the flag."""
    return f"{name}={value} (command line: --corpus-option {name}={value})"


class CorpusError(ValueError):
    """A corpus specification, option or record is invalid; the message says how to fix it."""


class UnknownNameError(CorpusError, KeyError):
    """A name (loader, option, split, registry entry) is not known; the message suggests the closest ones."""

    def __str__(self) -> str:  # KeyError's own __str__ would quote the message
        return str(self.args[0]) if self.args else ""


class OptionError(CorpusError):
    """An option's value is not of the kind the option takes (:func:`corpora.registry.build_config`: a
    loader's, a proposer's, a backend's or a suite's option); the message names the option and an example."""


class RegistryError(CorpusError):
    """A registry refused a name: malformed, already registered, or an entry point that does not load."""


class RecordFieldError(CorpusError):
    """A record (JSONL line, Parquet row, dataset row) lacks a configured field.

    The message names the field, the record's location and the keys the record has.
    """


class MissingDependencyError(ImportError):
    """An optional dependency is not installed; the message gives the ``pip install`` line."""

    def __init__(self, package: str, feature: str, extra: str | None = None) -> None:
        hint = f"pip install {package}" if extra is None else f"pip install {package} (or envwright[{extra}])"
        super().__init__(f"{feature} needs the optional package {package!r}: {hint}")
        self.package = package
        self.feature = feature

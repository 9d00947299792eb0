"""Errors raised by :mod:`corpora`.

Role: the one place where the package's exception types live, so callers can
catch corpus problems without catching everything.

Contract:

* Every configuration or data problem is a :class:`CorpusError`, which is a
  :class:`ValueError` whose message names what to fix (the option, the field,
  the file and line).
* A missing optional dependency (``pyarrow``, ``datasets``) is a
  :class:`MissingDependencyError`, an :class:`ImportError` whose message gives
  the ``pip install`` line.
* Per-file problems inside a loader (undecodable bytes, a syntax error in a
  source file) are not errors: the file is skipped or analysed as text, and the
  skip is logged at DEBUG level on the ``corpora`` logger.
"""

from __future__ import annotations

__all__ = ["CorpusError", "MissingDependencyError", "RecordFieldError", "UnknownNameError"]


class CorpusError(ValueError):
    """A corpus specification, option or record is invalid; the message says how to fix it."""


class UnknownNameError(CorpusError):
    """A name (loader, option, split) is not known; the message suggests the closest known names."""


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

"""Load the Python standard library of the running interpreter.

Role: the offline default corpus. It needs nothing but the interpreter and
holds a few thousand real, well-written modules, many of which define
stateful classes (queues, caches, mailboxes, registries, parsers).

Contract:

* The root is ``sysconfig.get_paths()["stdlib"]`` unless ``root`` is given.
* Only ``*.py`` files are loaded; test packages (``test``, ``tests``,
  ``idle_test``, ``test_*.py``), ``site-packages``, ``turtledemo``, caches and
  build directories are skipped (see :data:`STDLIB_EXCLUDE`).
* Iteration is lazy and in sorted path order; ids are
  ``"stdlib:<relative path>"`` (``"stdlib:json/decoder.py"``).
* ``metadata`` holds ``module`` (the dotted module name) and
  ``python_version`` (``"3.11"``).
"""

from __future__ import annotations

import sys
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from corpora.document import Document
from corpora.errors import CorpusError
from corpora.loaders.tree import _as_tuple, iter_tree_files, read_source

__all__ = ["STDLIB_EXCLUDE", "StdlibConfig", "load_stdlib", "module_name", "stdlib_root"]

STDLIB_EXCLUDE: tuple[str, ...] = (
    "test",
    "tests",
    "idle_test",
    "test_*.py",
    "site-packages",
    "dist-packages",
    "turtledemo",
    "__pycache__",
    "lib-dynload",
    "config-*",
    "__phello__",
    "ensurepip/_bundled",
)
"""Names and paths under the standard library root that the loader skips."""


def stdlib_root() -> Path:
    """Return the running interpreter's standard library directory."""
    return Path(sysconfig.get_paths()["stdlib"])


def module_name(rel: str) -> str:
    """Return the dotted module name of a standard library path (``"json/__init__.py"`` → ``"json"``)."""
    parts = rel[: -len(".py")].split("/") if rel.endswith(".py") else rel.split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


@dataclass(kw_only=True)
class StdlibConfig:
    """Options of the ``stdlib`` loader.

    Attributes:
        root: The standard library directory; ``None`` for the running interpreter's.
        exclude: Glob patterns (as in the ``tree`` loader) of files and
            directories to skip.
        include_private: Keep modules whose own name starts with ``_``
            (``_pyio``, ``_collections_abc``); packages are always kept.
        max_bytes: Skip files larger than this many bytes.
        corpus: The id prefix.
    """

    source_field: ClassVar[str | None] = None

    root: str | Path | None = None
    exclude: tuple[str, ...] = STDLIB_EXCLUDE
    include_private: bool = True
    max_bytes: int = 2_000_000
    corpus: str = "stdlib"

    def __post_init__(self) -> None:
        self.root = stdlib_root() if self.root is None else Path(self.root).expanduser()
        if not self.root.is_dir():
            raise CorpusError(f"stdlib root {str(self.root)!r} is not a directory; leave root=None")
        self.exclude = _as_tuple(self.exclude, "exclude") or ()
        if self.max_bytes <= 0:
            raise CorpusError(f"max_bytes must be positive, got {self.max_bytes}")


def _is_private(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return name.startswith("_") and name != "__init__.py"


def load_stdlib(config: StdlibConfig) -> Iterator[Document]:
    """Yield the standard library's Python modules, lazily and in sorted path order."""
    root = Path(config.root)  # type: ignore[arg-type]
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    files = iter_tree_files(root, include=None, exclude=tuple(config.exclude), suffixes=frozenset({".py"}))
    for full, rel in files:
        if not config.include_private and _is_private(rel):
            continue
        text = read_source(full, max_bytes=config.max_bytes)
        if text is None:
            continue
        yield Document.create(
            text,
            corpus=config.corpus,
            path=rel,
            language="python",
            metadata={"module": module_name(rel), "python_version": version},
        )

r"""Load a source tree on disk.

Role: walk a directory and yield one :class:`~corpora.document.Document` per
text file, with the language inferred from the extension.

Contract:

* Order is deterministic: directories and files are visited in sorted order
  (a directory's files before its sub-directories).
* Glob patterns (``include``, ``exclude``) use POSIX relative paths. A pattern
  without ``/`` matches a file or directory *name* at any depth
  (``"*.py"``, ``"__pycache__"``); a pattern with ``/`` matches the whole
  relative path, where ``**`` spans directories (``"src/**/*.py"``).
* Excluded directories are not descended into.
* Anything that is not a regular file (a named pipe, a socket, a device) is
  skipped without being read, so a FIFO in a tree never blocks a walk. Binary
  files (a NUL byte in the first 8 KiB), undecodable files and files larger
  than ``max_bytes`` are skipped too (logged at DEBUG). Python files are
  decoded with their PEP 263 coding cookie; line endings become ``\n``.
* Ids are ``"<corpus>:<relative path>"``; ``corpus`` defaults to the
  directory's name.
"""

from __future__ import annotations

import io
import logging
import os
import re
import stat
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from corpora.document import Document
from corpora.errors import CorpusError
from corpora.languages import UNKNOWN, known_source_suffixes, language_from_path, normalize_language

__all__ = [
    "DEFAULT_EXCLUDE",
    "TreeConfig",
    "compile_glob",
    "explain_tree",
    "iter_tree_files",
    "load_tree",
    "read_source",
    "skip_reason",
]

log = logging.getLogger("corpora")

DEFAULT_EXCLUDE: tuple[str, ...] = (
    ".git",
    ".hg",
    ".svn",
    "__pycache__",
    "node_modules",
    ".venv",
    "venv",
    ".tox",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    "*.egg-info",
)
"""Directory and file names a tree walk skips unless told otherwise."""

_BINARY_PROBE = 8192


def _as_tuple(value: str | tuple[str, ...] | list[str] | None, name: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    if not all(isinstance(v, str) for v in value):
        raise CorpusError(f"{name} must be a string or a sequence of strings, got {value!r}")
    return tuple(value)


def _glob_class(pattern: str, start: int) -> tuple[str, int]:
    """Translate a ``[...]`` class starting at ``start``; return (regex, next index)."""
    end = pattern.find("]", start + 2 if pattern[start + 1 : start + 2] in ("!", "^") else start + 1)
    if end < 0:
        return re.escape("["), start + 1
    body = pattern[start + 1 : end]
    if body[:1] in ("!", "^"):
        body = "^" + body[1:]
    return "[" + body.replace("\\", "\\\\") + "]", end + 1


def _glob_regex(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            piece, i = _glob_class(pattern, i)
            out.append(piece)
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def compile_glob(pattern: str) -> Callable[[str], bool]:
    """Return a predicate on POSIX relative paths for a glob ``pattern``.

    A pattern without ``/`` is matched against the last path component; one
    with ``/`` against the whole path, ``**`` spanning directories.

    >>> compile_glob("*.py")("pkg/mod.py"), compile_glob("pkg/**/*.py")("pkg/a/b/mod.py")
    (True, True)
    """
    pattern = pattern.strip("/")
    regex = _glob_regex(pattern)
    if "/" in pattern:
        return lambda rel: regex.match(rel) is not None
    return lambda rel: regex.match(rel.rsplit("/", 1)[-1]) is not None


def _any(predicates: list[Callable[[str], bool]], rel: str) -> bool:
    return any(p(rel) for p in predicates)


def iter_tree_files(
    root: Path,
    *,
    include: tuple[str, ...] | None,
    exclude: tuple[str, ...],
    suffixes: frozenset[str] | None = None,
    follow_symlinks: bool = False,
) -> Iterator[tuple[Path, str]]:
    """Yield ``(absolute path, POSIX relative path)`` of the files under ``root``, sorted.

    A file is yielded when it matches one of ``include`` (every file when
    ``include`` is ``None`` but ``suffixes`` is given, then restricted to those
    suffixes) and none of ``exclude``; excluded directories are pruned. Every entry that is not a
    directory is yielded, named pipes and sockets included: :func:`read_source` skips those unopened.
    """
    inc = [compile_glob(p) for p in include] if include is not None else None
    exc = [compile_glob(p) for p in exclude]
    for dirpath, dirnames, filenames in os.walk(root, followlinks=follow_symlinks):
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        prefix = "" if rel_dir == "." else rel_dir + "/"
        dirnames[:] = sorted(d for d in dirnames if not _any(exc, prefix + d))
        for name in sorted(filenames):
            rel = prefix + name
            if _any(exc, rel):
                continue
            if suffixes is not None and Path(name).suffix.lower() not in suffixes:
                continue
            if inc is not None and not _any(inc, rel):
                continue
            full = Path(dirpath, name)
            if not follow_symlinks and full.is_symlink():
                continue
            yield full, rel


def _decode(data: bytes, is_python: bool) -> str:
    encoding = "utf-8-sig"
    if is_python:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


_KINDS = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"))


def _not_regular(mode: int) -> str | None:
    """Why a file of this ``st_mode`` is not read (None: a regular file)."""
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "a special file")
    return f"not a regular file ({kind})"


def _read(path: Path, max_bytes: int) -> tuple[str | None, str | None]:
    """``(text, None)``, or ``(None, why it was skipped)``.

    Only regular files are opened; the open is non-blocking and the opened file is checked again, so
    a named pipe (or a file swapped for one) is skipped instead of blocking the read forever.
    """
    try:
        why = _not_regular(os.stat(path).st_mode)
        if why is not None:
            return None, why
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            why = _not_regular(info.st_mode)
            if why is not None:
                return None, why
            if info.st_size > max_bytes:
                return None, f"larger than max_bytes={max_bytes:,} ({info.st_size:,} bytes)"
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        return None, f"unreadable ({exc})"
    if len(data) > max_bytes:
        return None, f"larger than max_bytes={max_bytes:,} (it grew while being read)"
    if b"\0" in data[:_BINARY_PROBE]:
        return None, "binary"
    try:
        return _decode(data, path.suffix.lower() in (".py", ".pyw", ".pyi")), None
    except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
        return None, f"cannot be decoded ({exc})"


def read_source(path: Path, *, max_bytes: int) -> str | None:
    """Read a text file, or return ``None`` when it is not a regular file, too large, binary or undecodable."""
    text, why = _read(path, max_bytes)
    if why is not None:
        log.debug("skip %s: %s", path, why)
    return text


def skip_reason(path: Path, *, max_bytes: int) -> str | None:
    """Why :func:`read_source` would skip ``path`` (None: it would read it)."""
    return _read(path, max_bytes)[1]


def explain_tree(config: TreeConfig, *, examples: int = 3) -> str:
    """What a walk of ``config.root`` found and skipped, in one sentence (for "no usable documents" errors).

    Counts the files the walk saw, those whose extension no language claims (or outside
    ``languages``), and those :func:`read_source` skips (not a regular file, too large, binary,
    undecodable), naming up to
    ``examples`` of each.
    """
    root = Path(config.root)
    files = list(iter_tree_files(root, include=config.include, exclude=tuple(config.exclude),
                                 follow_symlinks=config.follow_symlinks))
    if not files:
        return f"{root} holds no files (after excluding {', '.join(config.exclude) or 'nothing'})"
    suffixes = known_source_suffixes(config.languages) if config.include is None else None
    groups: dict[str, list[str]] = {}
    for full, rel in files:
        language = language_from_path(rel)
        if (suffixes is not None and full.suffix.lower() not in suffixes) or (
                config.languages is not None and language not in config.languages):
            groups.setdefault("not a source file of a known language", []).append(rel)
            continue
        why = skip_reason(full, max_bytes=config.max_bytes)
        if why is not None:
            key, _, detail = why.partition(" (")
            detailed = key.startswith(("larger", "not a regular"))
            groups.setdefault(key, []).append(f"{rel} ({detail}" if detailed else rel)
    parts = [f"{root} holds {len(files)} file{'' if len(files) == 1 else 's'}"]
    for why, rels in groups.items():
        named = ", ".join(rels[:examples]) + (f" and {len(rels) - examples} more" if len(rels) > examples else "")
        parts.append(f"{len(rels)} skipped as {why}: {named}")
    return "; ".join(parts)


@dataclass(kw_only=True)
class TreeConfig:
    """Options of the ``tree`` loader.

    Attributes:
        root: The directory to walk (the spec's source).
        include: Glob patterns of files to keep; ``None`` keeps every file
            whose extension has a known language (see ``languages``).
        exclude: Glob patterns of files and directories to skip.
        languages: Keep only these languages (canonical or free-form names);
            ``None`` keeps all.
        max_bytes: Skip files larger than this many bytes.
        corpus: The id prefix; defaults to the directory's name.
        follow_symlinks: Follow symbolic links to files and directories.
    """

    source_field: ClassVar[str | None] = "root"

    root: str | Path
    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = field(default=DEFAULT_EXCLUDE)
    languages: tuple[str, ...] | None = None
    max_bytes: int = 1_000_000
    corpus: str | None = None
    follow_symlinks: bool = False

    def __post_init__(self) -> None:
        self.root = Path(self.root).expanduser()
        try:
            if not self.root.is_dir():
                raise CorpusError(f"tree root {str(self.root)!r} is not a directory; pass an existing directory")
            with os.scandir(self.root):  # an unreadable root would otherwise walk as an empty tree
                pass
        except OSError as exc:
            raise CorpusError(f"tree root {str(self.root)!r} cannot be read ({exc.strerror or exc}); fix its "
                              "permissions, or pass another directory") from None
        self.include = _as_tuple(self.include, "include")
        self.exclude = _as_tuple(self.exclude, "exclude") or ()
        langs = _as_tuple(self.languages, "languages")
        self.languages = None if langs is None else tuple(normalize_language(x) for x in langs)
        if self.max_bytes <= 0:
            raise CorpusError(f"max_bytes must be positive, got {self.max_bytes}")
        if self.corpus is None:
            self.corpus = self.root.resolve().name or "tree"


def load_tree(config: TreeConfig) -> Iterator[Document]:
    """Yield the text files of a directory tree as documents, in sorted path order."""
    root = Path(config.root)
    suffixes = known_source_suffixes(config.languages) if config.include is None else None
    files = iter_tree_files(
        root,
        include=config.include,
        exclude=tuple(config.exclude),
        suffixes=suffixes,
        follow_symlinks=config.follow_symlinks,
    )
    for full, rel in files:
        language = language_from_path(rel)
        if config.languages is not None and language not in config.languages:
            continue
        text = read_source(full, max_bytes=config.max_bytes)
        if text is None:
            continue
        yield Document.create(text, corpus=str(config.corpus), path=rel, language=language or UNKNOWN)

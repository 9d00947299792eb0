"""What a library folder may be, and the errors of one that cannot be used, each in one line that says the fix.

:func:`is_library` (a folder with ``specs/`` or ``catalog.sqlite``), :func:`check_library_folder` (what
``generate`` may write into: a new path, an empty folder, or a library; a generate run's lock file does
not count as content), :class:`LibraryNotWritable` and :class:`LibraryReadOnly`, and the helpers
:mod:`envgen.library` turns file system and database errors into messages with: :func:`not_a_library`,
:func:`os_problem`, :func:`catalog_problem`, :func:`file_in_the_way`, :func:`needs_recovery` and
:func:`file_name` (a catalog key that can name a file inside the library, or ``ValueError``).
"""

from __future__ import annotations

import os
from pathlib import Path

import sqlalchemy as sa

from envgen.errors import NotALibrary
from envgen.library_lock import LOCK_NAME

__all__ = ["LibraryNotWritable", "LibraryReadOnly", "catalog_problem", "check_library_folder", "file_in_the_way",
           "file_name", "is_library", "needs_recovery", "not_a_library", "os_problem"]


def is_library(root: str | Path) -> bool:
    """Whether ``root`` looks like a library folder."""
    root = Path(root)
    return (root / "specs").is_dir() or (root / "catalog.sqlite").is_file()


class LibraryNotWritable(ValueError):
    """The library folder, a file in it or its catalog cannot be written; the message names the path and the fix."""


class LibraryReadOnly(LibraryNotWritable):
    """A write asked of a library opened with ``readonly=True``."""


def not_a_library(root: Path) -> NotALibrary:
    """Why ``root`` cannot be opened read-only, in one line that says what to pass instead."""
    if not root.exists():
        why = "does not exist"
    elif not root.is_dir():
        why = "is a file, not a folder"
    else:
        why = "is not an envwright library (it has no specs/ folder and no catalog.sqlite)"
    return NotALibrary(f"{root} {why}; pass a library folder (the folder envwright generate --out wrote)")


def needs_recovery(catalog: Path) -> bool:
    """Whether reading the SQLite file ``catalog`` read-only in place would need a file it lacks or would
    change one: a rollback journal left by a killed writer, or a WAL without its ``-shm`` index (which no
    connected writer lacks, and which SQLite would create)."""
    def beside(suffix: str) -> bool:
        return catalog.with_name(catalog.name + suffix).exists()

    return beside("-journal") or (beside("-wal") and not beside("-shm"))


def file_in_the_way(root: Path) -> str | None:
    """Why ``root`` cannot be (or become) a folder: it, or a folder above it, is a file (None: it can). One
    ``stat`` per path: another process may create the folder between two looks (``is_dir`` false, then
    ``exists`` true), which two calls took for a file."""
    import stat

    for p in (root, *root.parents):
        try:
            mode = p.stat().st_mode
        except FileNotFoundError:
            if p.is_symlink():  # a dangling link: no folder can be made there
                return "it is a file, not a folder" if p == root else f"{p} is a file, not a folder"
            continue
        except NotADirectoryError:  # a path below a file: the file is found further up
            continue
        if stat.S_ISDIR(mode):
            return None
        return "it is a file, not a folder" if p == root else f"{p} is a file, not a folder"
    return None


def check_library_folder(root: str | Path) -> None:
    """Raise :class:`NotALibrary` unless ``root`` can hold a library this run may write: a path that
    does not exist yet, an empty folder, or an existing library.

    A file (or a path below one) is refused, and so is a non-empty folder that is not a library: a
    run writes ``specs/``, ``rejected/`` and ``catalog.sqlite`` into its library, and must not take
    over a folder that holds something else.
    """
    root = Path(root)
    problem = file_in_the_way(root)
    if problem is not None:
        raise NotALibrary(f"cannot use {root} as a library folder: {problem}; give a new folder, an empty one, "
                          "or an existing library")
    if root.is_dir() and not is_library(root):
        try:  # a generate run's lock (and the file it is written from) marks a library being made
            entries = sorted(p.name for p in root.iterdir()
                             if p.name != LOCK_NAME and not p.name.startswith(f".{LOCK_NAME}."))
        except OSError as e:
            raise LibraryNotWritable(f"cannot read the library folder {root}: {e.strerror or e}; choose a folder "
                                     "you can read and write, or fix its permissions") from None
        if entries:
            shown = ", ".join(entries[:3]) + (f" and {len(entries) - 3} more" if len(entries) > 3 else "")
            raise NotALibrary(f"{root} is a folder that holds other files ({shown}) and is not an envwright "
                              "library; give a new or empty folder, or an existing library, so that nothing "
                              "in it is overwritten")


def os_problem(root: Path, e: OSError) -> LibraryNotWritable:
    """A file system error while writing the library, as a message that names the path and the fix."""
    where = e.filename or root
    if isinstance(e, PermissionError):
        return LibraryNotWritable(f"cannot write the library {root}: permission denied on {where}; choose a "
                                  "folder you can write to, or fix its permissions")
    return LibraryNotWritable(f"cannot write the library {root}: {e.strerror or e} ({where}); choose another "
                              "library folder, or fix this one")


_ACCESS_WORDS = ("readonly", "read-only", "read only", "unable to open", "permission denied", "access denied")


def catalog_problem(root: Path, url: str, e: sa.exc.DBAPIError) -> LibraryNotWritable | None:
    """A catalog that cannot be opened or written, as a message that names it and the fix (None: another error)."""
    why = str(e.orig) if e.orig is not None else str(e)
    if not any(w in why.lower() for w in _ACCESS_WORDS):
        return None
    u = sa.engine.make_url(url)
    if u.get_backend_name() == "sqlite":
        where = u.database or url
        hint = (f"make {where} and its folder writable (SQLite writes its journal beside the file), or choose "
                "another library folder")
    else:
        where = u.render_as_string(hide_password=True)
        hint = "grant this database user write access to the catalog's tables, or choose another --catalog-url"
    return LibraryNotWritable(f"cannot write the catalog {where} of the library {root}: {why}; {hint}")


def file_name(key: str, what: str) -> str:
    """``key`` when it can be a file name inside a library folder (no separator, not ``.`` or ``..``)."""
    if not key or key in (".", "..") or "/" in key or "\\" in key or "\0" in key or (os.altsep and os.altsep in key):
        raise ValueError(f"{what} {key!r} cannot name a file of the library (a path separator or '..'): the "
                         "catalog was changed by hand, or is not this library's")
    return key

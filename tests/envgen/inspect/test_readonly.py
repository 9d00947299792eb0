"""``envwright inspect`` only reads what it inspects: the library's files, the catalog's bytes and mtime stay
as they were, whatever part of a library the folder holds, and a folder that is not one gets nothing."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from envgen.cli import cli
from envgen.inspect import build_site
from tests.envgen.test_library_readonly import _make_library, _tree

_WATCHED: list[tuple[Path, list[str]]] = []  #: (folder, what was done to it) while a `_watching` block runs
_HOOKED: list[bool] = []

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_ONE_PATH = ("os.mkdir", "os.remove", "os.rmdir", "os.chmod", "os.chown", "os.utime", "os.truncate")
_TWO_PATHS = ("os.rename", "os.replace", "os.link", "os.symlink", "shutil.copyfile", "shutil.copymode",
              "shutil.copystat")


def _inside(path: Any, root: Path) -> bool:
    try:
        return Path(os.fsdecode(path)).resolve().is_relative_to(root)
    except (TypeError, ValueError, OSError):
        return False  # a file descriptor, not a path


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """Record every write Python asks of the file system inside the watched folder, and every SQLite opening."""
    if not _WATCHED:
        return
    root, seen = _WATCHED[-1]
    if event == "open":
        path, mode, flags = args
        writing = any(c in mode for c in "wax+") if isinstance(mode, str) else bool((flags or 0) & _WRITE_FLAGS)
        if writing and _inside(path, root):
            seen.append(f"open {path} {mode or flags}")
    elif event in _ONE_PATH and args and _inside(args[0], root):
        seen.append(f"{event} {args[0]}")
    elif event in _TWO_PATHS and len(args) > 1 and (_inside(args[1], root) or
                                                    (event in ("os.rename", "os.replace") and _inside(args[0], root))):
        seen.append(f"{event} {args[0]} {args[1]}")
    elif event == "sqlite3.connect":
        seen.append(f"sqlite3.connect {args[0]}")


@contextmanager
def _watching(root: Path) -> Iterator[list[str]]:
    """What this process asks of the file system in ``root`` (root may write anywhere: this is what is checked)."""
    if not _HOOKED:
        sys.addaudithook(_audit)  # for the rest of the session, idle outside this block
        _HOOKED.append(True)
    seen: list[str] = []
    _WATCHED.append((root.resolve(), seen))
    try:
        yield seen
    finally:
        _WATCHED.pop()


@pytest.fixture
def library(tmp_path: Path) -> Path:
    return _make_library(tmp_path / "lib")


def test_inspecting_a_library_leaves_its_files_and_the_catalogs_bytes_and_mtime_unchanged(library: Path,
                                                                                          tmp_path: Path) -> None:
    before = _tree(library)
    catalog = library / "catalog.sqlite"
    stamp = (catalog.read_bytes(), catalog.stat().st_mtime_ns)
    result = CliRunner().invoke(cli, ["inspect", str(library), "--out", str(tmp_path / "site"),
                                      "--executor", "inprocess"])
    assert result.exit_code == 0, result.output
    assert "wrote 2 environment pages, 1 rejected proposals" in result.output
    assert "env-a" in (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert _tree(library) == before and (catalog.read_bytes(), catalog.stat().st_mtime_ns) == stamp
    assert not any(p.name.startswith("catalog.sqlite-") for p in library.iterdir())  # no -wal, -shm, -journal


def test_inspecting_asks_for_no_write_in_the_library_and_opens_sqlite_read_only(library: Path,
                                                                               tmp_path: Path) -> None:
    with _watching(library) as seen:
        summary = build_site(str(library), tmp_path / "site", executor="inprocess", gate="stored")
    assert summary.envs == 2
    writes = [s for s in seen if not s.startswith("sqlite3.connect ")]
    catalog = (library / "catalog.sqlite").resolve().as_uri()  # (environments' own databases are in memory)
    connects = [s for s in seen if s.startswith("sqlite3.connect ") and "memory" not in s]
    assert writes == []
    assert connects and all(s.startswith(f"sqlite3.connect {catalog}?mode=ro") for s in connects), connects


@pytest.mark.parametrize("part", ["specs", "catalog.sqlite"])
def test_a_folder_with_only_part_of_a_library_gets_nothing_added(library: Path, tmp_path: Path, part: str) -> None:
    partial = tmp_path / "partial"  # the folders inspect used to complete (a catalog beside specs/, or specs/)
    partial.mkdir()
    if part == "specs":
        shutil.copytree(library / "specs", partial / "specs")
    else:
        shutil.copy2(library / "catalog.sqlite", partial / "catalog.sqlite")
    before = _tree(partial)
    with _watching(partial) as seen:
        summary = build_site(str(partial), tmp_path / "site", executor="inprocess", gate="off")
    assert summary.envs == (2 if part == "specs" else 0)  # catalog rows without spec files are noted, not shown
    assert [s for s in seen if not s.startswith("sqlite3.connect ")] == []
    assert _tree(partial) == before and sorted(p.name for p in partial.iterdir()) == [part]


def test_a_folder_that_is_not_a_library_says_what_to_pass_and_gets_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "readme.txt").write_text("not a library\n")
    before = _tree(folder)
    result = CliRunner().invoke(cli, ["inspect", str(folder), "--out", str(tmp_path / "site")])
    assert result.exit_code == 1 and f"{folder} is neither a library" in result.output
    assert "pass a library folder (the folder envwright generate --out wrote)" in result.output
    assert _tree(folder) == before and not (tmp_path / "site").exists()

"""``Library.open_readonly`` (``readonly=True``): reading a library writes nothing, into its folder or beside
its catalog, in every state the catalog can be in; writes are refused; a folder that is not a library is
refused in one line; and the commands that only read (``list``, ``stats``, ``export``) open it so."""

from __future__ import annotations

import copy
import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from envgen.catalog import ENVS, AttemptRecord, PreparedEnv
from envgen.cli import cli
from envgen.library import Library, LibraryNotWritable, LibraryReadOnly, NotALibrary
from gym_envs.spec import EnvSpec, parse_spec
from tests.fixtures.library_spec import SPEC

ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _spec(env_id: str, words: str = "") -> EnvSpec:
    data: dict[str, Any] = copy.deepcopy(SPEC)
    data["id"] = env_id
    if words:  # other task texts: not a near-duplicate of the others
        for i, turn in enumerate(data["tasks"][0]["turns"]):
            turn["instruction"] = f"{words} {i} {turn['instruction']}"
    return parse_spec(data)


def _make_library(root: Path) -> Path:
    """A closed library with every part: specs, a gate report, a rejected candidate, attempts, statistics."""
    from envgen.gate import validate_spec

    with Library(root) as lib:
        lib.add(_spec("env-a"), model="m", run_id="r1")
        lib.add(_spec("env-b", "Quite different words about borrowing, for the second environment."), run_id="r1")
        lib.write_gate_report("env-a", validate_spec(_spec("env-a"), executor="inprocess").to_dict())
        lib.record_attempt(attempt_id="a1", run_id="r1", doc_id="d1", proposer="fixture", accepted=True,
                           env_id="env-a")
        lib.record_attempt(attempt_id="a2", run_id="r1", doc_id="d2", proposer="fixture", accepted=False,
                           reasons=["no"], codes=["schema"], rejected_spec={"id": "bad"})
        lib.record_task_result("env-a", "t0", "m", n=2, passes=1)
    return root


def _tree(root: Path) -> dict[str, tuple[str, int, int]]:
    """Every file and folder under ``root`` (itself included): its content's hash, mtime and mode."""
    out = {}
    for p in [root, *sorted(root.rglob("*"))]:
        st = p.lstat()
        digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "folder"
        out[p.relative_to(root).as_posix()] = (digest, st.st_mtime_ns, st.st_mode)
    return out


def _read_everything(lib: Library) -> dict[str, Any]:
    return {"len": len(lib), "rows": [r["id"] for r in lib.rows(sort="id")], "specs": sorted(s.id for s in lib),
            "row": lib.get_row("env-a"), "attempts": [a["attempt_id"] for a in lib.attempts()],
            "stats": lib.task_stats(), "history": len(lib.solve_history()), "suspicious": lib.suspicious_tasks(),
            "gate": lib.gate_report("env-a"), "duplicate": lib.find_duplicate(_spec("env-c")),
            "runs": lib.run_env_ids("r1")}


@pytest.fixture
def library(tmp_path: Path) -> Path:
    return _make_library(tmp_path / "lib")


def test_reading_leaves_the_tree_the_catalog_bytes_and_its_mtime_unchanged(library: Path) -> None:
    with Library(library, create=False) as writer_view:  # what the opening these commands used reads
        expected = _read_everything(writer_view)
    before = _tree(library)
    with Library.open_readonly(library) as lib:
        got = _read_everything(lib)
        assert lib.readonly and not (library / "catalog.sqlite-wal").exists()
    assert got == expected and got["rows"] == ["env-a", "env-b"] and got["gate"]["accepted"]
    assert got["duplicate"] == "env-a" and got["history"] == 1 and got["attempts"] == ["a1", "a2"]
    assert _tree(library) == before
    assert sorted(p.name for p in library.iterdir()) == ["catalog.sqlite", "gate", "rejected", "specs"]


def test_the_catalog_is_opened_read_only_by_sqlite_itself(library: Path) -> None:
    with Library.open_readonly(library) as lib, pytest.raises(sa.exc.OperationalError, match="readonly"), \
            lib.engine.begin() as c:  # even a write that bypasses the library's methods is refused
        c.execute(sa.delete(ENVS))
    with Library.open_readonly(library) as lib:
        assert len(lib) == 2


WRITES = {
    "add": lambda lib: lib.add(_spec("env-new", "Entirely new words so that this is not a near-duplicate.")),
    "remove": lambda lib: lib.remove(["env-a"]),
    "record_batch": lambda lib: lib.record_batch([AttemptRecord(attempt_id="x", run_id="r", doc_id="d",
                                                                proposer="p", accepted=False)]),
    "restore": lambda lib: lib.restore([(PreparedEnv.of(_spec("env-z", "Other words again, for a restore.")), {})]),
    "write_gate_report": lambda lib: lib.write_gate_report("env-a", {}),
    "record_attempt": lambda lib: lib.record_attempt(attempt_id="x", run_id="r", doc_id="d", proposer="p",
                                                     accepted=False, rejected_spec={"id": "x"}),
    "reindex": lambda lib: lib.reindex(),
    "record_task_result": lambda lib: lib.record_task_result("env-a", "t0", "m", n=1, passes=1),
    "set_split": lambda lib: lib.set_split("env-a", "train"),
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_every_write_method_of_a_read_only_library_raises(library: Path, write: str) -> None:
    before = _tree(library)
    with Library.open_readonly(library) as lib:
        with pytest.raises(LibraryReadOnly) as err:
            WRITES[write](lib)
        assert isinstance(err.value, LibraryNotWritable)  # what callers of a writing library already catch
        message = str(err.value)
        assert "\n" not in message and str(library) in message and "opened read-only" in message
        assert len(lib) == 2
    assert _tree(library) == before


@pytest.mark.parametrize("kind", ["empty", "other files", "missing", "a file"])
def test_a_folder_that_is_not_a_library_is_refused_in_one_line_and_nothing_is_created(tmp_path: Path,
                                                                                      kind: str) -> None:
    target = tmp_path / "target"
    if kind == "empty":
        target.mkdir()
    elif kind == "other files":
        target.mkdir()
        (target / "main.py").write_text("x = 1\n")
    elif kind == "a file":
        target.write_text("x")
    before = _tree(tmp_path)
    with pytest.raises(NotALibrary) as err:
        Library.open_readonly(target)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{target} ")
    assert "pass a library folder (the folder envwright generate --out wrote)" in message
    assert {"missing": "does not exist", "a file": "is a file, not a folder"}.get(kind, "is not an envwright "
                                                                                      "library") in message
    assert _tree(tmp_path) == before
    with pytest.raises(NotALibrary, match="is not an envwright library"):  # readonly=True spells the same
        Library(tmp_path, readonly=True)


def test_a_library_of_spec_files_only_is_indexed_privately_and_gets_no_catalog(library: Path, tmp_path: Path) -> None:
    specs_only = tmp_path / "specs-only"
    shutil.copytree(library / "specs", specs_only / "specs")
    before = _tree(specs_only)
    with Library.open_readonly(specs_only) as lib:
        assert [r["id"] for r in lib.rows(sort="id")] == ["env-a", "env-b"] and lib.attempts() == []
        scratch = Path(str(lib.engine.url.database)).parent
        assert scratch.is_dir() and not scratch.is_relative_to(specs_only)
    assert not scratch.exists()  # the private catalog goes with close()
    assert _tree(specs_only) == before and not (specs_only / "catalog.sqlite").exists()


def test_a_catalog_without_a_specs_folder_gets_none(library: Path, tmp_path: Path) -> None:
    catalog_only = tmp_path / "catalog-only"
    catalog_only.mkdir()
    shutil.copy2(library / "catalog.sqlite", catalog_only / "catalog.sqlite")
    before = _tree(catalog_only)
    with Library.open_readonly(catalog_only) as lib:
        assert len(lib) == 2
    assert _tree(catalog_only) == before and not (catalog_only / "specs").exists()


def test_an_older_catalog_is_read_through_an_upgraded_private_copy_not_upgraded_in_place(library: Path) -> None:
    con = sqlite3.connect(library / "catalog.sqlite")  # what an older version wrote: a column and a table less
    con.execute("ALTER TABLE envs DROP COLUMN difficulty")
    con.execute("DROP TABLE solve_history")
    con.commit()
    con.close()
    before = _tree(library)
    with Library.open_readonly(library) as lib:
        rows = lib.rows(sort="id")
        assert [r["id"] for r in rows] == ["env-a", "env-b"] and rows[0]["difficulty"] is None
        assert lib.solve_history() == [] and lib.task_stats()[0]["passes"] == 1 and len(lib.attempts()) == 2
    assert _tree(library) == before
    con = sqlite3.connect(f"file:{library / 'catalog.sqlite'}?mode=ro", uri=True)
    assert "difficulty" not in {r[1] for r in con.execute("PRAGMA table_info(envs)")}  # still the old one
    con.close()


@pytest.fixture
def live_writer(library: Path) -> Iterator[Library]:
    """A writing opening of the library with a connection held, as a running ``generate`` has: the catalog's
    ``-wal`` and ``-shm`` files exist and hold commits not yet checkpointed into the main file."""
    with Library(library) as writer, writer.engine.connect():
        writer.add(_spec("env-c", "Some third set of words, about returning a book late."))
        yield writer


def test_a_library_being_written_is_read_with_the_writers_uncheckpointed_commits(library: Path,
                                                                                 live_writer: Library) -> None:
    catalog = library / "catalog.sqlite"
    assert (library / "catalog.sqlite-wal").stat().st_size > 0 and (library / "catalog.sqlite-shm").exists()
    names, main = sorted(p.name for p in library.iterdir()), (catalog.read_bytes(), catalog.stat().st_mtime_ns)
    with Library.open_readonly(library) as lib:
        assert [r["id"] for r in lib.rows(sort="id")] == ["env-a", "env-b", "env-c"]  # env-c is only in the WAL
        live_writer.add(_spec("env-d", "A fourth and last set of words, about fines."))
        assert len(lib) == 4  # a later commit is seen by the next query
    assert sorted(p.name for p in library.iterdir()) == names
    assert (catalog.read_bytes(), catalog.stat().st_mtime_ns) == main


def test_a_killed_writers_wal_without_its_index_is_read_from_a_private_copy(library: Path, live_writer: Library,
                                                                           tmp_path: Path) -> None:
    killed = tmp_path / "killed"  # what a writer killed mid-run leaves when the -shm is gone (another machine)
    shutil.copytree(library / "specs", killed / "specs")
    for name in ("catalog.sqlite", "catalog.sqlite-wal"):
        shutil.copy2(library / name, killed / name)
    before = _tree(killed)
    with Library.open_readonly(killed) as lib:
        assert [r["id"] for r in lib.rows(sort="id")] == ["env-a", "env-b", "env-c"]
    assert _tree(killed) == before and not (killed / "catalog.sqlite-shm").exists()


def test_a_read_only_folder_can_be_read(library: Path) -> None:
    if ROOT:
        pytest.skip("root writes through permissions: the read-only mount test and the SQLite mode=ro test "
                    "cover this")
    paths = [library, *library.rglob("*")]
    modes = {p: p.stat().st_mode for p in paths}
    try:
        for p in paths:
            p.chmod(0o555 if p.is_dir() else 0o444)
        before = _tree(library)
        with Library.open_readonly(library) as lib:
            assert [r["id"] for r in lib.rows(sort="id")] == ["env-a", "env-b"]
        result = CliRunner().invoke(cli, ["list", str(library), "--json"])
        assert result.exit_code == 0, result.output
        assert _tree(library) == before
    finally:
        for p in sorted(paths, key=lambda p: -len(p.parts)):
            p.chmod(modes[p])


@pytest.mark.skipif(not ROOT or shutil.which("unshare") is None, reason="needs root and `unshare -m` to mount")
def test_a_library_on_a_read_only_mount_can_be_listed_and_inspected(library: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    python = sys.executable
    # in a mount namespace of its own (private: nothing leaks out), the library bind-mounted read-only over itself
    script = (f"mount --bind '{library}' '{library}' && mount -o remount,bind,ro '{library}' || exit 77; set -e; "
              f"touch '{library}/probe' 2>/dev/null && exit 3; "  # the mount really is read-only
              f"'{python}' -m envgen list '{library}' --json; "
              f"'{python}' -m envgen stats '{library}' --json > /dev/null; "
              f"'{python}' -m envgen inspect '{library}' --out '{site}' --executor inprocess --gate stored")
    before = _tree(library)
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, text=True, check=False, timeout=60)
    if probe.returncode != 0:  # root in a container without the right to make a mount namespace
        pytest.skip(f"cannot make a mount namespace here: {probe.stderr.strip()}")
    result = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, check=False,
                            cwd=Path(__file__).resolve().parents[2], timeout=300)
    if result.returncode == 77:
        pytest.skip(f"cannot bind-mount read-only here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert '"id": "env-a"' in result.stdout and "wrote 2 environment pages" in result.stdout
    assert (site / "envs" / "env-a.html").is_file()
    assert _tree(library) == before


def test_list_stats_and_export_leave_the_library_unchanged(library: Path, tmp_path: Path) -> None:
    before = _tree(library)
    for args in (["list", str(library)], ["stats", str(library), "--json"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
    pytest.importorskip("pyarrow")
    result = CliRunner().invoke(cli, ["export", str(library), "--out", str(tmp_path / "export")])
    assert result.exit_code == 0, result.output
    assert "exported 2 environments" in result.output
    assert _tree(library) == before


def test_list_of_a_folder_that_is_not_a_library_says_so_and_creates_nothing(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["list", str(tmp_path)])
    assert result.exit_code == 1 and "is not an envwright library" in result.output
    assert "pass a library folder" in result.output and list(tmp_path.iterdir()) == []


def test_a_writing_opening_is_unchanged(library: Path) -> None:
    shutil.rmtree(library / "rejected")
    with Library(library) as lib:  # still creates what is missing, probes and writes
        assert not lib.readonly
        lib.set_split("env-a", "train")
        assert (lib.get_row("env-a") or {})["split"] == "train"
    assert (library / "rejected").is_dir()

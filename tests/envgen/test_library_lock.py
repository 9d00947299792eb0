"""One ``generate`` run writes a library at a time: a second run into a library another live process is
writing is refused, naming it, and does nothing; a lock left by a process that is gone is taken over."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from envgen.cli import cli
from envgen.generate import GenerateConfig, run_generate
from envgen.library_lock import LOCK_NAME, LibraryBusy, library_lock, lock_holder
from tests.envgen.test_generate import FixtureProposer, _docs

ROOT = Path(__file__).resolve().parents[2]


def _holder(folder: Path) -> subprocess.Popen[str]:
    """Another process that takes the library's lock (as a generate run does) and keeps it until killed."""
    code = textwrap.dedent(f"""
        import sys, time
        from envgen.library_lock import library_lock
        with library_lock({str(folder)!r}, "run abc (fixture, corpus mem)"):
            print("locked", flush=True)
            time.sleep(60)
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def _cfg(out: Path) -> GenerateConfig:
    return GenerateConfig(proposer="fixture", out=out, n=3, max_retries=0, validation="inprocess")


@pytest.mark.parametrize("new", [True, False], ids=["new library", "existing library"])
def test_a_second_run_into_a_library_being_written_is_refused_and_writes_nothing(tmp_path: Path, new: bool) -> None:
    out = tmp_path / "lib"
    if not new:
        run_generate(_cfg(out), progress=False, proposer=FixtureProposer(), docs=_docs(1))
    out.mkdir(exist_ok=True)
    before = sorted(p.name for p in out.iterdir())
    proc = _holder(out)
    try:
        with pytest.raises(LibraryBusy, match=rf"being written by another envwright generate run \(pid {proc.pid} "
                                              rf"on {socket.gethostname()}, started .*run abc"):
            run_generate(_cfg(out), progress=False, proposer=FixtureProposer(), docs=_docs(3))
        assert sorted(p.name for p in out.iterdir()) == sorted([*before, LOCK_NAME])  # nothing of it written
        corpus = tmp_path / "src"
        corpus.mkdir(exist_ok=True)
        (corpus / "queue.py").write_text("class Queue:\n    def push(self, x):\n        self.items.append(x)\n")
        result = CliRunner().invoke(cli, ["generate", "--corpus", str(corpus), "--n", "1", "--out", str(out)])
        assert result.exit_code == 1 and "one run writes a library at a time" in result.output
    finally:
        proc.kill()
        proc.wait()
    summary = run_generate(_cfg(out), progress=False, proposer=FixtureProposer(), docs=_docs(3))  # holder gone
    assert summary.accepted == (3 if new else 2) and not (out / LOCK_NAME).exists()


def test_a_stale_lock_of_a_dead_process_is_taken_over(tmp_path: Path) -> None:
    out = tmp_path / "lib"
    out.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (out / LOCK_NAME).write_text(json.dumps({"pid": int(dead.stdout), "host": socket.gethostname(),
                                             "started": "1", "at": "earlier", "what": "run gone"}))
    summary = run_generate(_cfg(out), progress=False, proposer=FixtureProposer(), docs=_docs(2))
    assert summary.accepted == 2 and not (out / LOCK_NAME).exists()


def test_a_lock_whose_pid_was_reused_by_a_later_process_is_stale(tmp_path: Path) -> None:
    (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": os.getppid(), "host": socket.gethostname(),
                                                  "started": "0", "at": "earlier"}))  # same pid, another start
    with library_lock(tmp_path, "me"):
        assert lock_holder(tmp_path)["pid"] == os.getpid()


def test_a_lock_from_another_host_is_not_taken_and_the_message_says_how_to_clear_it(tmp_path: Path) -> None:
    (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": 1, "host": "elsewhere.example", "at": "earlier"}))
    busy = rf"cannot be checked from here: once that run is over, delete .*{LOCK_NAME}"
    with pytest.raises(LibraryBusy, match=busy), library_lock(tmp_path):
        pass
    assert lock_holder(tmp_path)["host"] == "elsewhere.example"


def test_a_garbled_lock_is_stale_only_once_it_is_old(tmp_path: Path) -> None:
    path = tmp_path / LOCK_NAME
    path.write_text("")
    with pytest.raises(LibraryBusy), library_lock(tmp_path):
        pass
    old = time.time() - 60
    os.utime(path, (old, old))
    with library_lock(tmp_path):
        assert lock_holder(tmp_path)["pid"] == os.getpid()
    assert not path.exists()

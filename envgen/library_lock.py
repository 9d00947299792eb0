"""One ``generate`` run writes a library at a time: the lock file ``LIBRARY/generate.lock``.

Two runs into one library would both see the same documents as not yet attempted and both redo every one
of them. :func:`library_lock` takes the lock for the length of a run, or refuses at once with
:class:`LibraryBusy` naming the run that holds it (its pid, host, start time and what it runs): refusing,
not waiting, so a second command never looks like a hang, and never overwrites the other's work.

The lock file is created whole or not at all (written beside it, then hard-linked into place, which fails
when it exists). A lock is **stale**, and taken over, when its holder is gone: on this host, no process
has its pid, or the pid now belongs to a process that started later (Linux: ``/proc/PID/stat``'s start
time is recorded). A lock from another host cannot be checked from here: the message says to remove the
file once that run is known to be over. A lock file that cannot be read as one (empty, garbled) is stale
too, once it is older than a few seconds (a holder writes it whole before linking it).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["LOCK_NAME", "LibraryBusy", "library_lock", "lock_holder"]

LOCK_NAME = "generate.lock"
_GARBLED_GRACE_S = 5.0  #: how old an unreadable lock file must be to count as stale


class LibraryBusy(ValueError):
    """Another run holds the library's lock; the message names it and what to do."""


def _start_time(pid: int) -> str | None:
    """A process's start time since boot (Linux ``/proc``; None elsewhere or when it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[19]  # field 22 overall; fields after the command's ")" start at 3


def _alive(pid: int, started: str | None) -> bool:
    """Whether process ``pid`` on this host is the one that took the lock."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, owned by someone else
    now = _start_time(pid)
    return started is None or now is None or now == started


def lock_holder(root: str | Path) -> dict[str, Any] | None:
    """What the lock file of ``root`` says about its holder (None: no lock file, or not readable as one)."""
    try:
        data = json.loads((Path(root) / LOCK_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("pid"), int) else None


def _stale(path: Path, holder: dict[str, Any] | None) -> bool:
    if holder is None:
        try:
            return time.time() - path.stat().st_mtime > _GARBLED_GRACE_S
        except FileNotFoundError:
            return True
    if holder.get("host") != socket.gethostname():
        return False
    return not _alive(int(holder["pid"]), holder.get("started"))


def _busy(root: Path, holder: dict[str, Any] | None) -> LibraryBusy:
    path = root / LOCK_NAME
    if holder is None:
        return LibraryBusy(f"{root} is being written by another envwright generate run (its lock file {path} is "
                           "being written); wait for that run to finish, or give another --out")
    who = (f"pid {holder['pid']} on {holder.get('host', '?')}, started {holder.get('at', '?')}"
           + (f", {holder['what']}" if holder.get("what") else ""))
    local = holder.get("host") == socket.gethostname()
    after = ("" if local else f"; that host cannot be checked from here: once that run is over, delete {path}")
    return LibraryBusy(f"{root} is being written by another envwright generate run ({who}): one run writes a "
                       f"library at a time. Wait for it to finish (re-running this command then resumes where it "
                       f"stopped), or give another --out{after}")


@contextmanager
def library_lock(root: str | Path, what: str = "") -> Iterator[Path]:
    """Hold ``root``'s lock for the ``with`` block (``root`` must exist); :class:`LibraryBusy` when another
    live run holds it. ``what`` is shown to a run refused by this one (e.g. the run id)."""
    root = Path(root)
    path = root / LOCK_NAME
    me = {"pid": os.getpid(), "host": socket.gethostname(), "started": _start_time(os.getpid()),
          "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "what": what}
    tmp = root / f".{LOCK_NAME}.{os.getpid()}.{time.time_ns()}"
    tmp.write_text(json.dumps(me), encoding="utf-8")
    try:
        for _ in range(3):  # a stale lock is removed, then the link is tried again
            try:
                os.link(tmp, path)
                break
            except FileExistsError:
                holder = lock_holder(root)
                if not _stale(path, holder):
                    raise _busy(root, holder) from None
                _remove_stale(path, holder)
        else:
            raise _busy(root, lock_holder(root))
    finally:
        tmp.unlink(missing_ok=True)
    try:
        yield path
    finally:
        if lock_holder(root) == me:
            path.unlink(missing_ok=True)


def _remove_stale(path: Path, holder: dict[str, Any] | None) -> None:
    """Remove a stale lock, unless another run replaced it meanwhile (then the next link attempt sees it)."""
    if lock_holder(path.parent) == holder:
        path.unlink(missing_ok=True)

"""Phases of a benchmark run in child processes: a lane of jobs each, lanes side by side on one device.

``envwright bench selfplay`` runs a phase in a process of its own for two reasons: seeds side by side
(``--parallel``, a lane per seed), and an engine's memory (vLLM never gives an engine's GPU memory back inside
a process, so each phase that builds one runs in a child whose exit returns it to the driver).
:func:`run_lanes` is its one launcher:

* a **lane** is a list of jobs run one after another, each in a fresh ``python -c`` process calling the entry
  point (``module:function``) with the job as JSON; a lane stops at its first failed job;
* lanes run at once, each with its own rendezvous port and the one engine-start lock
  (:func:`training.parallel.side_by_side_env`); each job is told how many lanes share the device
  (``processes``, which :func:`share_device` caps its memory by);
* one lane: the child's output goes to the terminal as it comes (its progress bars move there) and to
  ``work/<lane>.log``; several lanes: each writes ``work/<lane>.log`` and the driver draws one bar over
  ``progress()`` (rounds logged so far, say);
* a child dies with the driver (Linux: ``PR_SET_PDEATHSIG``), so a killed driver leaves no phase running
  beside the run that resumes it;
* a failure raises :class:`SystemExit` naming each failed job's lane, exit status and log, and how to resume.

The child records its own results (the entry point writes the run's state under its lock), so a phase run
here leaves the same state as one run in the driver's process.
"""

from __future__ import annotations

import codecs
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from training.parallel import side_by_side_env

__all__ = ["run_lanes", "share_device"]


def share_device(processes: int, *, headroom: float = 0.95) -> float | None:
    """Cap this process's share of each GPU's memory at ``headroom / processes`` (side-by-side seeds); returns
    the fraction, None where there is no GPU or one process. On the H200 two seeds' caching allocators grew to
    138 of 141 GB between them in their first round (selfplay-v4); with a cap each frees its cached blocks
    before it takes the other's share."""
    if processes < 2:
        return None
    import torch

    if not torch.cuda.is_available():
        return None
    fraction = headroom / processes
    for device in range(torch.cuda.device_count()):
        torch.cuda.set_per_process_memory_fraction(fraction, device)
    return fraction


def _die_with(parent: int) -> Callable[[], None] | None:
    """A ``preexec_fn`` under which the child gets SIGTERM when ``parent`` dies (Linux; elsewhere None). The C
    library is loaded here, in the parent: the function runs between fork and exec, where nothing may import."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None).prctl
    except (OSError, AttributeError):
        return None

    def preexec() -> None:
        prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the driver died before the call above
            os._exit(1)

    return preexec


def _exit_status(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit {code}"


class _Job:
    """One child process of a lane: started, and (with ``tee``) its output copied to the terminal and the log."""

    def __init__(self, entry: str, args: dict[str, Any], env: Mapping[str, str], log: Path, tee: bool) -> None:
        module, func = entry.split(":")
        self.log = log
        self.fh: IO[bytes] = open(log, "ab")  # noqa: SIM115 -- closed in wait()
        self.tee = tee
        self.proc = subprocess.Popen(
            [sys.executable, "-c", f"import sys; from {module} import {func}; {func}(sys.argv[1])", json.dumps(args)],
            stdout=subprocess.PIPE if tee else self.fh, stderr=subprocess.STDOUT, env=dict(env),
            preexec_fn=_die_with(os.getpid()))

    def wait(self) -> int:
        """The child's exit status, once it ended (copying its output meanwhile where it tees)."""
        try:
            if self.tee and self.proc.stdout is not None:
                text = codecs.getincrementaldecoder("utf-8")(errors="replace")
                fd = self.proc.stdout.fileno()
                while chunk := os.read(fd, 1 << 16):
                    self.fh.write(chunk)
                    self.fh.flush()
                    sys.stdout.write(text.decode(chunk))
                    sys.stdout.flush()
                self.proc.stdout.close()
            return self.proc.wait()
        finally:
            self.fh.close()


def run_lanes(entry: str, lanes: Mapping[str, list[dict[str, Any]]], work: Path, *, resume: str,
              progress: Callable[[], int] | None = None, total: int = 0, desc: str = "",
              tag: str = "bench selfplay") -> None:
    """Run each lane's jobs one after another, the lanes at once (module docstring), each job as
    ``entry(json)`` with ``processes`` added; raise :class:`SystemExit` naming what failed and ``resume``."""
    from tqdm.auto import tqdm

    names = list(lanes)
    envs = dict(zip(names, side_by_side_env(len(names), work / ".engine-start.lock"), strict=True))
    queued = {name: list(jobs) for name, jobs in lanes.items()}
    tee = len(names) == 1
    failed: list[str] = []

    def start(name: str) -> _Job:
        log = work / f"{name}.log"
        job = _Job(entry, {**queued[name].pop(0), "processes": len(names)}, envs[name], log, tee)
        print(f"[{tag}] {name}: started in process {job.proc.pid} (log: {log})", flush=True)
        return job

    def ended(name: str, job: _Job) -> bool:
        code = job.wait()
        print(f"[{tag}] {name}: {_exit_status(code)}", flush=True)
        if code != 0:
            failed.append(f"{name} ({_exit_status(code)}, log {job.log})")
            queued[name].clear()
        return code == 0

    if tee:
        name = names[0]
        while queued[name] and ended(name, start(name)):
            pass
    else:
        running = {name: start(name) for name in names if queued[name]}
        with tqdm(total=total, desc=desc, unit="round") as bar:
            while running:
                time.sleep(2.0)
                for name, job in list(running.items()):
                    if job.proc.poll() is not None:
                        del running[name]
                        if ended(name, job) and queued[name]:
                            running[name] = start(name)
                if progress is not None:
                    bar.n = min(total, progress())
                    bar.refresh()
    if failed:
        raise SystemExit(f"failed: {'; '.join(failed)}. Resume with: {resume}")

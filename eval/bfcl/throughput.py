"""Throughput of the BFCL episode runner: reference replays per second.

Role: measure how many full episodes (fresh backends, every ground-truth call executed through
the structured-call path, ground truth run in lockstep, BFCL-style scoring) the runner completes
per second, sequentially or with a thread or process pool. No model is involved, so this is the
ceiling the environment side imposes on evaluation/RL rollouts.

Contract: :func:`replay_throughput` loads entries before starting the clock (process workers
load their own share, inside the clock), counts episodes that scored valid, and returns a
:class:`ThroughputResult`. Threads are correct (episodes are isolated) but mostly serialised
by the GIL; processes (``fork`` where available) scale with cores.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from eval.bfcl.agreement import reference_trajectory, run_trajectory
from eval.bfcl.data import BfclEntry, check_category, load_entries

Executor = Literal["serial", "thread", "process"]


@dataclass(frozen=True)
class ThroughputResult:
    """One throughput measurement: a category replayed with an executor and a number of workers."""
    category: str
    executor: str
    workers: int
    episodes: int
    valid: int
    seconds: float

    @property
    def episodes_per_second(self) -> float:
        return self.episodes / self.seconds if self.seconds > 0 else float("inf")


def replay_entry(entry: BfclEntry) -> bool:
    """Replay ``entry``'s ground truth as one episode and return whether it scored valid."""
    return run_trajectory(entry, reference_trajectory(entry)).score().valid


def _replay_ids(category: str, ids: Sequence[str]) -> tuple[int, int]:
    by_id = {entry.id: entry for entry in load_entries(category, ids=set(ids))}
    return len(ids), sum(replay_entry(by_id[entry_id]) for entry_id in ids)


def replay_throughput(
    category: str = "multi_turn_base",
    *,
    limit: int | None = None,
    workers: int = 1,
    executor: Executor = "serial",
    repeats: int = 1,
) -> ThroughputResult:
    """Replay the references of ``category`` ``repeats`` times; episodes/s in the result."""
    check_category(category)
    if workers < 1 or repeats < 1:
        raise ValueError(f"workers and repeats must be >= 1 (got {workers}, {repeats})")
    if executor not in ("serial", "thread", "process"):
        raise ValueError(f"executor must be 'serial', 'thread' or 'process', got {executor!r}")
    entries = load_entries(category, limit=limit) * repeats
    start = time.perf_counter()
    if executor == "serial" or workers == 1:
        episodes, valid = len(entries), sum(replay_entry(e) for e in entries)
    elif executor == "thread":
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            flags = list(pool.map(replay_entry, entries))
        episodes, valid = len(flags), sum(flags)
    else:
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        ids = [e.id for e in entries]
        chunks = [ids[i::workers] for i in range(workers) if ids[i::workers]]
        with concurrent.futures.ProcessPoolExecutor(
            len(chunks), mp_context=multiprocessing.get_context(method)
        ) as pool:
            counts = list(pool.map(_replay_ids, [category] * len(chunks), chunks))
        episodes, valid = sum(c[0] for c in counts), sum(c[1] for c in counts)
    seconds = time.perf_counter() - start
    used = 1 if executor == "serial" else workers
    return ThroughputResult(category, executor if used > 1 else "serial", used, episodes, valid, seconds)

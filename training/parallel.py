"""Training processes and their shares: the world a config is written for, each process's sandbox workers.

Two layouts use two GPUs (envgen/GUIDE.md, "Two GPUs"; bundled configs ``*-2gpu-server`` and ``*-2gpu-ddp``):

* **server** -- vLLM on its own GPU (``trl vllm-serve``), one training process on the other
  (``generation.vllm_mode: server``); the trainer pushes its weights to the server over an NCCL group after
  every update. ``train solver`` (TRL's loop) and ``train selfplay`` (our loop, through
  :class:`~training.vllm_generator.VLLMGenerator` and TRL's client) both run so.
* **ddp** -- ``accelerate launch --num_processes N``: every process trains a replica of the policy on its own
  GPU with a colocated vLLM engine. ``train solver`` only: self-play's loop runs in one process.

``run.num_processes`` is the world a config is written for (None: any); :func:`check_world` refuses to start in
another (a DDP config run as a plain command is a world of 1, where it would train on half the data it was tuned
for), and refuses a self-play run of several processes.
``rollout.sandbox_workers`` counts the sandbox worker processes of the whole run; :func:`rank_share` gives
each training process its share, and :func:`rollout_executor` is the process's executor of that many workers.

Seeds: the solver's rollout seeds each process's sampling with its rank (:func:`training.solver.make_rollout_func`),
so the episodes of one GRPO group that TRL splits over two processes do not sample the same tokens; the
environment seed of a task is its key's and the step's, the same on every process (one task instance a group).

Side by side: several independent training processes on one GPU (``envwright bench selfplay --parallel``, a seed
each) each get :func:`side_by_side_env`: a rendezvous port of their own (a colocated vLLM engine opens a process
group of one at ``MASTER_PORT``, which accelerate sets to 29500 when unset, so a second process died with
EADDRINUSE) and a lock under which they start their engines one at a time (:func:`engine_start`: vLLM measures the
GPU's free memory while it starts and refuses to start when a neighbour frees memory meanwhile).
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator, Mapping
from pathlib import Path

from gym_envs.sandbox import Executor, default_executor, make_executor
from training.config import RolloutConfig, TrainConfig
from training.errors import ConfigError

__all__ = ["ENGINE_START_LOCK", "check_world", "engine_start", "file_lock", "free_ports", "launched_world",
           "rank_share", "rollout_executor", "side_by_side_env"]

#: the environment variable naming the lock file side-by-side processes start their engines under
ENGINE_START_LOCK = "ENVWRIGHT_ENGINE_START_LOCK"


def launched_world(environ: Mapping[str, str] | None = None) -> tuple[int, int]:
    """``(rank, world_size)`` of this process as the launcher set them (``RANK``, ``WORLD_SIZE``: accelerate and
    torchrun); ``(0, 1)`` for a plain command."""
    env = os.environ if environ is None else environ
    try:
        rank, world = int(env.get("RANK", "0")), int(env.get("WORLD_SIZE", "1"))
    except ValueError:
        raise ConfigError(f"RANK={env.get('RANK')!r} and WORLD_SIZE={env.get('WORLD_SIZE')!r} must be whole "
                          "numbers (the launcher sets them)") from None
    if world < 1 or not 0 <= rank < world:
        raise ConfigError(f"RANK={rank} is not a process of WORLD_SIZE={world}")
    return rank, world


def check_world(cfg: TrainConfig, trainer: str, environ: Mapping[str, str] | None = None) -> tuple[int, int]:
    """``(rank, world_size)``, after checking that the launcher started ``run.num_processes`` processes and that
    ``trainer`` (``solver`` or ``selfplay``) runs in that many; raises :class:`ConfigError` saying what to run."""
    rank, world = launched_world(environ)
    want = cfg.run.num_processes
    if trainer != "solver" and max(want or 1, world) > 1:
        raise ConfigError(f"train {trainer} runs in one process (run.num_processes={want}, {world} launched): on "
                          "two GPUs run it in server mode (generation.vllm_mode=server, vLLM on the other GPU: the "
                          "smollm2-2gpu-server config) as a plain command, with run.num_processes=1")
    if want is not None and world != want:
        how = (f"accelerate launch --num_processes {want} -m envgen train {trainer} ..." if want > 1
               else f"envwright train {trainer} ... (no launcher)")
        raise ConfigError(f"run.num_processes is {want} but this run has {world} process(es): start it with "
                          f"`{how}`, or set run.num_processes={world}")
    return rank, world


def rank_share(total: int, world: int, rank: int) -> int:
    """Process ``rank``'s share of ``total`` workers over ``world`` processes: an even split, the first
    ``total % world`` processes one more (every process at least one)."""
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"rank {rank} is not a process of a world of {world}")
    if total < world:
        raise ValueError(f"{total} workers cannot give each of {world} processes one")
    return total // world + (rank < total % world)


_EXECUTORS: dict[tuple[int, str, int], Executor] = {}


def rollout_executor(cfg: RolloutConfig, rank: int = 0, world: int = 1) -> Executor:
    """This process's executor for the rollout: ``rollout.executor`` with its share of ``rollout.sandbox_workers``
    (made once per process and kept; None: the process-wide default executor of one worker)."""
    if cfg.sandbox_workers is None or cfg.executor != "worker":
        return default_executor(cfg.executor)
    n = rank_share(cfg.sandbox_workers, world, rank)
    key = (os.getpid(), cfg.executor, n)
    if key not in _EXECUTORS:
        _EXECUTORS[key] = make_executor(cfg.executor, workers=n)
    return _EXECUTORS[key]


@contextlib.contextmanager
def file_lock(path: str | Path, *, wait: bool = True) -> Iterator[bool]:
    """An exclusive ``flock`` on ``path`` (created); yields False if ``wait`` is off and another process holds it.
    The lock goes with the process: one that dies never leaves it held."""
    import fcntl

    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """``n`` distinct TCP ports free on ``host`` now (all bound at once while they are chosen, so none repeats)."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(n):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((host, 0))
            ports.append(sock.getsockname()[1])
        return ports


def side_by_side_env(n: int, lock: str | Path, environ: Mapping[str, str] | None = None) -> list[dict[str, str]]:
    """The environments of ``n`` training processes started at once on one host (module docstring): each its own
    ``MASTER_PORT`` (on ``MASTER_ADDR`` 127.0.0.1), all the one engine-start ``lock``."""
    base = dict(os.environ if environ is None else environ)
    return [{**base, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), ENGINE_START_LOCK: str(lock)}
            for port in free_ports(n)]


@contextlib.contextmanager
def engine_start(environ: Mapping[str, str] | None = None) -> Iterator[None]:
    """Held while this process builds a generation engine: the launcher's engine-start lock where it named one
    (:func:`side_by_side_env`), else nothing."""
    path = (os.environ if environ is None else environ).get(ENGINE_START_LOCK)
    if not path:
        yield
        return
    with file_lock(path):
        yield

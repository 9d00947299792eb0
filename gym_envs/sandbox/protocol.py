"""The worker protocol: length-prefixed JSON frames over pipes, and the worker process's main loop.

A frame is a 4-byte big-endian length and that many bytes of ASCII JSON. The host writes one request
frame (a request, or ``{"op": "batch", "reqs": [...]}``) and reads one reply frame. A call's result is
spliced into the reply as raw JSON, never encoded twice (:func:`encode_response`). :func:`worker_main`
runs in the worker: it moves the protocol pipes off fd 0/1, applies the rlimits, installs the soft
deadline's signal handler and serves requests with an in-worker :class:`~gym_envs.sandbox.engine.Engine`
until EOF. The worker imports only :mod:`gym_envs.errors` and this package (:data:`WORKER_BOOT`).
"""

from __future__ import annotations

import json
import os
import select
import signal
import struct
import sys
import time
from typing import Any

from gym_envs.errors import ErrorKind, error_response
from gym_envs.sandbox.db import StateDB
from gym_envs.sandbox.engine import Engine
from gym_envs.sandbox.limits import Limits
from gym_envs.sandbox.scope import alarm_handler
from gym_envs.sandbox.values import dumps, loads

__all__ = ["MAX_FRAME", "WORKER_BOOT", "FrameReader", "encode_response", "worker_main", "write_frame"]

_HEADER = struct.Struct(">I")
MAX_FRAME = 64 << 20  #: the largest frame either side accepts

# The worker imports only gym_envs.errors and gym_envs.sandbox: a stub package stands in for gym_envs, so its
# __init__ (gymnasium, numpy, pydantic) is not imported; -S skips site (PYTHONPATH carries the parent's
# sys.path). A cold worker starts in a fraction of the time and address space.
WORKER_BOOT = (
    "import sys, types\n"
    "pkg = types.ModuleType('gym_envs'); pkg.__path__ = [sys.argv[1]]; sys.modules['gym_envs'] = pkg\n"
    "from gym_envs.sandbox.protocol import worker_main\n"
    "worker_main(sys.argv[2])\n"
)


def write_frame(fd: int, payload: bytes) -> None:
    """Write one frame (``payload`` with its length header)."""
    header = _HEADER.pack(len(payload))
    n = os.writev(fd, [header, payload])
    if n == len(header) + len(payload):
        return
    view = memoryview(header + payload)[n:]
    while view:
        view = view[os.write(fd, view):]


class FrameReader:
    """Buffered reader of length-prefixed frames (one ``read`` per frame when it fits)."""

    def __init__(self, fd: int, max_frame: int = MAX_FRAME):
        self.fd = fd
        self.max_frame = max_frame
        self.buf = bytearray()
        self.poll = select.poll()
        self.poll.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)

    def _wait(self, deadline: float | None) -> None:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self.poll.poll(max(1, int(remaining * 1000) + 1)):
                raise TimeoutError

    def read(self, deadline: float | None = None) -> bytes:
        """The next frame; ``TimeoutError`` after ``deadline`` (monotonic), ``EOFError`` on close."""
        buf = self.buf
        if not buf:  # the common case: one read brings exactly one whole frame
            self._wait(deadline)
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                raise EOFError("the other side closed its pipe")
            if len(chunk) >= 4 and _HEADER.unpack_from(chunk)[0] == len(chunk) - 4:
                return chunk[4:]
            buf += chunk
        while True:
            if len(buf) >= 4:
                (n,) = _HEADER.unpack_from(buf)
                if n > self.max_frame:
                    raise EOFError("oversized frame")
                if len(buf) >= 4 + n:
                    frame = bytes(buf[4:4 + n])
                    del buf[:4 + n]
                    return frame
                want = 4 + n - len(buf)
            else:
                want = 4 - len(buf)
            self._wait(deadline)
            chunk = os.read(self.fd, max(want, 1 << 16))
            if not chunk:
                raise EOFError("the other side closed its pipe")
            buf += chunk


def encode_response(resp: dict[str, Any] | str) -> bytes:
    """JSON of a response with call results spliced in raw (``result_json`` becomes ``result``; a response
    that is already text, from :meth:`~gym_envs.sandbox.engine.Engine.call_text`, goes as it is)."""
    return (resp if resp.__class__ is str else splice(resp)).encode()  # type: ignore[union-attr, arg-type]


def splice(resp: dict[str, Any]) -> str:
    """:func:`encode_response` as text."""
    if resp.__class__ is str:
        return resp  # type: ignore[return-value]
    text = resp.get("result_json")
    if text is not None and len(resp) == 3 and resp.get("ok") is True and resp.get("changes").__class__ is int:
        return f'{{"ok":true,"changes":{resp["changes"]},"result":{text}}}'
    if text is not None:
        head = dumps({k: v for k, v in resp.items() if k != "result_json"})
        return head[:-1] + ("," if len(head) > 2 else "") + '"result":' + text + "}"
    results = resp.get("results")
    if results.__class__ is list and len(resp) == 2 and resp.get("ok") is True:  # a batch's answers
        return '{"ok":true,"results":[' + ",".join(
            r if r.__class__ is str else splice(r) if r.__class__ is dict else dumps(r) for r in results) + "]}"
    return dumps(resp)


def _apply_rlimits(limits: Limits) -> None:
    import resource

    def setlim(which: int, soft: int, hard: int | None = None) -> None:
        try:
            _, cur_hard = resource.getrlimit(which)
            h = cur_hard if hard is None else hard
            if cur_hard != resource.RLIM_INFINITY:
                h = min(h, cur_hard) if h != resource.RLIM_INFINITY else cur_hard
            resource.setrlimit(which, (min(soft, h) if h != resource.RLIM_INFINITY else soft, h))
        except (ValueError, OSError):
            pass

    setlim(resource.RLIMIT_CORE, 0, 0)
    setlim(resource.RLIMIT_FSIZE, 0, 0)
    setlim(resource.RLIMIT_NOFILE, limits.max_open_files, limits.max_open_files)
    setlim(resource.RLIMIT_NPROC, 0, 0)
    setlim(resource.RLIMIT_AS, limits.memory_bytes, limits.memory_bytes)


class _CpuBudget:
    """RLIMIT_CPU so each request has at least ``cpu_seconds`` of CPU.

    The soft limit is set one second beyond ``used + cpu_seconds`` and moved on when less than
    ``cpu_seconds`` remains. CPU time cannot grow faster than wall time, so the CPU clock (a syscall) is
    read only every half second of wall time.
    """

    def __init__(self, seconds: int):
        import resource

        self.resource = resource
        self.seconds = max(1, int(seconds))
        self.limit = -1.0
        self.next_check = 0.0

    def refresh(self) -> None:
        now = time.monotonic()
        if now < self.next_check:
            return
        self.next_check = now + 0.5
        used = time.process_time()
        if self.limit - used >= self.seconds + 0.5:
            return
        self.limit = float(int(used) + self.seconds + 2)
        try:
            self.resource.setrlimit(self.resource.RLIMIT_CPU, (int(self.limit), self.resource.RLIM_INFINITY))
        except (ValueError, OSError):
            pass


def worker_main(limits_json: str) -> None:
    """Serve engine requests on the inherited stdin/stdout pipes until EOF."""
    limits = Limits.from_dict(json.loads(limits_json))
    # keep the protocol pipes on private descriptors; fd 0/1 become /dev/null so nothing
    # (a C library, a stray print) can read from or write into the protocol
    rfd, wfd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    signal.signal(signal.SIGALRM, alarm_handler)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    engine = Engine(limits, in_worker=True)
    guard = StateDB(limits.sql)
    guard.host(f"PRAGMA hard_heap_limit = {int(limits.memory_bytes // 2)}")  # SQLite fails with NOMEM first
    guard.close()
    _apply_rlimits(limits)
    sys.setrecursionlimit(limits.recursion_limit + 100)
    cpu = _CpuBudget(limits.cpu_seconds)
    reader = FrameReader(rfd)
    while True:
        try:
            frame = reader.read()
        except EOFError:
            return
        try:
            req = loads(frame)
        except (ValueError, RecursionError) as e:
            resp = error_response(ErrorKind.PROTOCOL_ERROR, f"malformed request: {type(e).__name__}", 200)
        else:
            cpu.refresh()
            resp = engine.handle(req)
        try:
            payload = encode_response(resp)
        except (TypeError, ValueError, RecursionError) as e:
            payload = dumps(error_response(ErrorKind.INTERNAL_ERROR, f"unserialisable response: {e}", 200)).encode()
        write_frame(wfd, payload)

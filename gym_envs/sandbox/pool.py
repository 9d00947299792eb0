"""The worker executor: warm, rlimited worker processes that run the engine for untrusted specs.

Episodes are pinned to a worker. When a request times out or kills its worker, the worker is replaced and
the other episodes it held are rebuilt by replaying their logged requests; the request itself gets a
typed error (``Timeout`` / ``WorkerCrashed``) and its own episode is rebuilt too, so the agent can carry
on. A worker that died between requests is found when the next request cannot be written; it is replaced
and that request sent again. Liveness is never polled, so a request costs one write, one poll and one
read. :meth:`WorkerExecutor.call_many` and :meth:`WorkerExecutor.open_many` send several episodes' requests
in one round trip per worker, to every worker at once (one thread a worker, each under that worker's lock), so
the environment side of a batch of episodes runs on as many cores as there are workers; when a worker dies or
hangs during such a batch, the batch is sent again one request at a time, so only the culprit gets the error.
"""

from __future__ import annotations

import atexit
import collections
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from gym_envs.errors import ErrorKind, LoadFailure, error_response
from gym_envs.sandbox.host import CallResult, Executor, Session, call_result, not_an_object, program_request
from gym_envs.sandbox.limits import Limits
from gym_envs.sandbox.protocol import WORKER_BOOT, FrameReader, write_frame
from gym_envs.sandbox.values import dumps, json_str, loads, plain_json

__all__ = ["WorkerExecutor"]

_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the gym_envs directory


class _NotDelivered(OSError):
    """A request could not be written: the worker died before it (replace it and send again)."""


_TRANSPORT_ERRORS = (EOFError, OSError, ValueError, KeyError, TypeError)


def _batch_frame(frames: list[bytes]) -> bytes:
    return b'{"op":"batch","reqs":[' + b",".join(frames) + b"]}"


def _call_frame(ep: str, name: str, args: dict[str, Any]) -> bytes:
    """The ``call`` request of episode ``ep`` as JSON: the arguments as plain JSON (``ValueError`` /
    ``TypeError`` where they are not), exactly as the in-process engine copies them."""
    return (f'{{"op":"call","ep":{json_str(ep)},"name":{json_str(name)},'
            f'"arguments":{dumps(plain_json(args)[0])}}}').encode()


class _Worker:
    """One worker process and its pipes."""

    def __init__(self, limits: Limits):
        env = {"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "PATH": os.environ.get("PATH", ""),
               "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        if "TZ" in os.environ:  # the host's time zone, so code that reads it agrees in both modes
            env["TZ"] = os.environ["TZ"]
        self.proc = subprocess.Popen(
            [sys.executable, "-S", "-c", WORKER_BOOT, _PACKAGE_PARENT, json.dumps(limits.to_dict())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0,
            env=env, close_fds=True, start_new_session=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.wfd = self.proc.stdin.fileno()
        self.reader = FrameReader(self.proc.stdout.fileno())
        self.loaded: set[str] = set()
        self.sessions: dict[str, Session] = {}
        self.lock = threading.Lock()

    def roundtrip(self, payload: bytes, timeout_s: float) -> dict[str, Any]:
        """Send one request frame and parse the reply; any malformed reply is ``EOFError``, a
        request that could not be written (the worker was already gone) ``_NotDelivered``."""
        deadline = time.monotonic() + timeout_s
        try:
            write_frame(self.wfd, payload)
        except OSError as e:
            raise _NotDelivered(str(e)) from None
        frame = self.reader.read(deadline)
        try:
            resp = loads(frame)
        except (ValueError, RecursionError) as e:
            raise EOFError(f"the worker sent a malformed reply ({type(e).__name__})") from None
        if resp.__class__ is not dict:
            raise EOFError("the worker sent a malformed reply")
        return resp  # type: ignore[no-any-return]

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()  # type: ignore[union-attr]
            except OSError:
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass

    def alive(self) -> bool:
        return self.proc.poll() is None


def _logworthy(resp: dict[str, Any]) -> bool:
    """Whether a call's response means the call must be replayed to rebuild its episode."""
    return bool(resp.get("ok") or resp.get("replay"))


class WorkerExecutor(Executor):
    """Runs the engine in warm, rlimited worker processes (the default, for untrusted specs); see the module
    docstring for how failures are contained."""

    mode = "worker"

    def __init__(self, n_workers: int = 1, limits: Limits | None = None):
        if n_workers < 1:
            raise ValueError("n_workers must be >= 1")
        self.limits = limits or Limits()
        self.workers: list[_Worker | None] = [None] * n_workers
        self._specs: dict[str, bytes] = {}
        self._rr = itertools.count()
        self._closed = False
        self.restarts = 0
        self._restarts_lock = threading.Lock()
        self._threads: ThreadPoolExecutor | None = None  #: round trips to several workers at once
        _LIVE.add(self)

    # -- worker management ---------------------------------------------------------------------
    def _worker(self, i: int) -> _Worker:
        w = self.workers[i]
        if w is None:  # a worker that died in between is found when a request cannot be written
            w = self.workers[i] = _Worker(self.limits)
        return w

    def _pick(self) -> int:
        return next(self._rr) % len(self.workers)

    def _ensure_loaded(self, w: _Worker, key: str) -> dict[str, Any]:
        if key in w.loaded:
            return {"ok": True, "cached": True}
        resp = w.roundtrip(self._specs[key], self.limits.call_timeout_s * 5 + 5)
        if resp.get("ok"):
            w.loaded.add(key)
        return resp

    def _timeout_for(self, req: dict[str, Any]) -> float:
        base = self.limits.call_timeout_s
        op = req.get("op")
        if op == "probe":
            return base * max(1, len(req.get("probes") or ())) + 1.0
        if op == "batch":
            return base * max(1, len(req["reqs"])) + 1.0
        return base + 1.0

    # -- public --------------------------------------------------------------------------------
    def _register(self, spec: Any) -> str:
        req = program_request(spec)
        self._specs[req["key"]] = dumps(req).encode()
        return str(req["key"])

    def load(self, spec: Any) -> dict[str, Any]:
        key = self._register(spec)
        i = self._pick()
        for attempt in (1, 2):
            w = self._worker(i)
            with w.lock:
                try:
                    return self._ensure_loaded(w, key)
                except _NotDelivered:
                    self._replace(i, w)
                    if attempt == 1:
                        continue
                    return error_response(ErrorKind.LOAD_ERROR, "the worker could not be restarted", 500)
                except (TimeoutError, *_TRANSPORT_ERRORS) as e:
                    self._replace(i, w)
                    return error_response(ErrorKind.LOAD_ERROR, f"the worker died while loading the spec: "
                                          f"{type(e).__name__}", 500)
        raise AssertionError("unreachable")

    def session(self, spec: Any, seed: int = 0, *, start: bool = True) -> Session:
        key = self._register(spec)
        s = Session(self, key, seed)
        s.worker_index = self._pick()
        if start:
            s.open(seed)
        return s

    def request(self, session: Session, req: dict[str, Any], *, log: bool = False,
                _retry: bool = True) -> dict[str, Any]:
        op = req["op"]
        try:
            payload = self._encode(req)
        except (TypeError, ValueError, RecursionError) as e:
            kind = ErrorKind.INVALID_ARGUMENTS if op == "call" else ErrorKind.PROTOCOL_ERROR
            what = "arguments are" if op == "call" else "the request is"
            return error_response(kind, f"{what} not JSON: {e}", self.limits.max_output_chars)
        i = session.worker_index
        w = self._worker(i)
        with w.lock:
            try:
                if op == "open":
                    w.sessions[session.id] = session
                    loaded = self._ensure_loaded(w, session.key)
                    if not loaded.get("ok"):
                        w.sessions.pop(session.id, None)
                        return loaded
                elif op == "close":
                    w.sessions.pop(session.id, None)
                elif session.id not in w.sessions:
                    # the worker was replaced since: rebuild this episode first
                    w.sessions[session.id] = session
                    self._restore(w, session)
                resp = w.roundtrip(payload, self._timeout_for(req))
            except _NotDelivered:
                self._replace(i, w)
                if _retry:
                    return self.request(session, req, log=log, _retry=False)
                return error_response(ErrorKind.WORKER_CRASHED, "the worker could not be restarted", 500)
            except TimeoutError:
                self._replace(i, w)
                return self._timed_out()
            except _TRANSPORT_ERRORS:
                self._replace(i, w)
                return self._crashed()
        if log and _logworthy(resp):
            session.log.append(payload)
        elif op == "open" and not resp.get("ok"):
            w.sessions.pop(session.id, None)
        return resp

    def _timed_out(self) -> dict[str, Any]:
        return error_response(ErrorKind.TIMEOUT, f"the call exceeded {self.limits.call_timeout_s:g} s; the worker "
                              "was stopped and replaced", 500)

    @staticmethod
    def _crashed() -> dict[str, Any]:
        return error_response(ErrorKind.WORKER_CRASHED, "the worker process died during the call (a resource "
                              "limit was hit) and was replaced", 500)

    def _encode(self, req: dict[str, Any]) -> bytes:
        if req["op"] == "call":  # the arguments as plain JSON, exactly as the in-process engine sees them
            args = req.get("arguments")
            if args.__class__ is dict:
                ep, name = req["ep"], req["name"]
                if name.__class__ is str and ep.__class__ is str and len(req) == 4:
                    return _call_frame(ep, name, args)
                req = {**req, "arguments": plain_json(args)[0]}
        return dumps(req).encode()

    def _replace(self, i: int, w: _Worker) -> None:
        w.kill()
        with self._restarts_lock:
            self.restarts += 1
        if self.workers[i] is w:
            self.workers[i] = None
        if self._closed:
            return
        new = self._worker(i)
        for sid, s in list(w.sessions.items()):
            if not new.alive():
                s.lost = "the episode could not be rebuilt after a worker crash"
                continue
            new.sessions[sid] = s
            self._restore(new, s)

    def _restore(self, w: _Worker, s: Session) -> None:
        """Rebuild session ``s`` on worker ``w``: open it again and replay its log in one batch."""
        try:
            loaded = self._ensure_loaded(w, s.key)
            if loaded.get("ok"):
                frames = [dumps(s.open_body()).encode()]
                frames += [f if isinstance(f, bytes) else dumps(f).encode() for f in s.log]
                resp = w.roundtrip(_batch_frame(frames), self.limits.call_timeout_s * len(frames) + 5)
                if resp["results"][0].get("ok"):
                    return
        except (TimeoutError, *_TRANSPORT_ERRORS):
            w.kill()  # the next request finds it dead and replaces it
        w.sessions.pop(s.id, None)
        s.lost = "the episode could not be rebuilt after a worker crash"

    def call_many(self, items: Iterable[tuple[Session, str, dict[str, Any] | None]]) -> list[CallResult]:
        """Several sessions' calls with one round trip per worker, in order (see :meth:`Executor.call_many`)."""
        items = list(items)
        cap = self.limits.max_output_chars
        out: list[CallResult | None] = [None] * len(items)
        by_worker: dict[int, list[tuple[int, bytes]]] = collections.defaultdict(list)
        for j, (s, name, args) in enumerate(items):
            if args is None:
                args = {}
            elif not isinstance(args, dict):
                out[j] = not_an_object(name)
                continue
            try:
                payload = _call_frame(s.id, name, args) if name.__class__ is str else \
                    self._encode({"op": "call", "ep": s.id, "name": name, "arguments": args})
            except (TypeError, ValueError, RecursionError) as e:
                out[j] = call_result(name, args, error_response(ErrorKind.INVALID_ARGUMENTS,
                                                                f"arguments are not JSON: {e}", cap))
                continue
            by_worker[s.worker_index].append((j, payload))
        answers = self._each_worker(by_worker, lambda i, entries: self._batch(
            i, [items[j][0] for j, _ in entries], [p for _, p in entries]))
        for i, entries in by_worker.items():
            for (j, _), r in zip(entries, answers[i], strict=True):  # _batch logged them
                s, name, args = items[j]
                out[j] = s._result(name, {} if args is None else args, r)
        return out  # type: ignore[return-value]

    def open_many(self, items: Iterable[tuple[Session, int]]) -> list[LoadFailure | None]:
        """Fresh episodes for several sessions with one round trip per worker (see
        :meth:`Executor.open_many`)."""
        items = list(items)
        out: list[LoadFailure | None] = [None] * len(items)
        by_worker: dict[int, list[tuple[int, bytes]]] = collections.defaultdict(list)
        for j, (s, seed) in enumerate(items):
            try:
                payload = dumps(s._open_request(seed)).encode()
            except (TypeError, ValueError, RecursionError) as e:  # as request() answers it
                out[j] = LoadFailure(error_response(ErrorKind.PROTOCOL_ERROR, f"the request is not JSON: {e}",
                                                    self.limits.max_output_chars))
                continue
            by_worker[s.worker_index].append((j, payload))
        answers = self._each_worker(by_worker, lambda i, entries: self._batch(
            i, [items[j][0] for j, _ in entries], [p for _, p in entries], opening=True))
        for i, entries in by_worker.items():
            for (j, _), r in zip(entries, answers[i], strict=True):
                try:
                    items[j][0]._opened(r)
                except LoadFailure as e:
                    out[j] = e
        return out

    def _each_worker(self, by_worker: dict[int, list[tuple[int, bytes]]],
                     trip: Callable[[int, list[tuple[int, bytes]]], list[dict[str, Any]]]
                     ) -> dict[int, list[dict[str, Any]]]:
        """``trip(i, entries)`` for every worker ``i`` of ``by_worker``, the workers' round trips at the same time
        (a worker's own requests stay in order, under its lock); the answers by worker."""
        if len(by_worker) <= 1:
            return {i: trip(i, entries) for i, entries in by_worker.items()}
        if self._threads is None:
            self._threads = ThreadPoolExecutor(len(self.workers), thread_name_prefix="sandbox-worker")
        futures = {i: self._threads.submit(trip, i, entries) for i, entries in by_worker.items()}
        return {i: f.result() for i, f in futures.items()}

    def _batch(self, i: int, sessions: list[Session], payloads: list[bytes], *,
               opening: bool = False) -> list[dict[str, Any]]:
        """One ``batch`` round trip to worker ``i``, answering each request as :meth:`request` would.

        When the worker dies or hangs during a batch of several requests, the worker is replaced (its
        episodes rebuilt without the batch) and the requests are sent again one by one, so only the
        request that caused it gets the ``Timeout`` or ``WorkerCrashed`` error; the others' episodes
        are not charged for a neighbour. ``opening``: the requests open fresh episodes (see
        :meth:`_batch_trip`)."""
        for attempt in (1, 2):
            w = self._worker(i)
            with w.lock:
                try:
                    return self._batch_trip(w, sessions, payloads, opening)
                except _NotDelivered:
                    self._replace(i, w)
                    if attempt == 1:
                        continue
                    return [error_response(ErrorKind.WORKER_CRASHED, "the worker could not be restarted", 500)
                            ] * len(payloads)
                except TimeoutError:
                    self._replace(i, w)
                    failure = self._timed_out()
                except _TRANSPORT_ERRORS:
                    self._replace(i, w)
                    failure = self._crashed()
            if len(payloads) == 1:
                return [failure]
            return [self._batch(i, [s], [p], opening=opening)[0] for s, p in zip(sessions, payloads, strict=True)]
        raise AssertionError("unreachable")

    def _batch_trip(self, w: _Worker, sessions: list[Session], payloads: list[bytes],
                    opening: bool) -> list[dict[str, Any]]:
        """:meth:`_batch`'s round trip, under the worker's lock; logs each call that must be replayed.
        With ``opening``, each session's program is loaded on the worker first (not its old episode
        rebuilt), and a session whose program or open fails is left unregistered."""
        refused: dict[int, dict[str, Any]] = {}
        for k, s in enumerate(sessions):
            if opening:
                loaded = self._ensure_loaded(w, s.key)
                if loaded.get("ok"):
                    w.sessions[s.id] = s
                else:
                    refused[k] = loaded
            elif s.id not in w.sessions:
                w.sessions[s.id] = s
                self._restore(w, s)
        send = [p for k, p in enumerate(payloads) if k not in refused]
        results: list[dict[str, Any]] = []
        if send:
            results = w.roundtrip(_batch_frame(send), self.limits.call_timeout_s * len(send) + 1)["results"]
            if results.__class__ is not list or len(results) != len(send):
                raise EOFError("the worker answered a different number of requests")
        answers = iter(results)
        out = [refused[k] if k in refused else next(answers) for k in range(len(sessions))]
        for s, p, r in zip(sessions, payloads, out, strict=True):
            if opening:
                if not r.get("ok"):
                    w.sessions.pop(s.id, None)
            elif _logworthy(r):  # logged at once: a later replacement rebuilds the episode with it
                s.log.append(p)
        return out

    def close(self) -> None:
        self._closed = True
        if self._threads is not None:
            self._threads.shutdown(wait=False)
            self._threads = None
        for w in self.workers:
            if w is not None:
                w.kill()
        self.workers = [None] * len(self.workers)


_LIVE: set[WorkerExecutor] = set()


@atexit.register
def _shutdown() -> None:
    for ex in list(_LIVE):
        ex.close()

"""The host's side of the sandbox: call and check results, episode sessions, and the executor interface.

An :class:`Executor` answers engine requests for :class:`Session` objects (one per episode):
:class:`~gym_envs.sandbox.inprocess.InProcessExecutor` in this process,
:class:`~gym_envs.sandbox.pool.WorkerExecutor` in isolated worker processes. :meth:`Executor.call_many` and
:meth:`Executor.open_many` make several episodes' calls and resets together (one round trip per worker).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gym_envs.errors import ErrorKind, LoadFailure

__all__ = ["CallResult", "CheckResult", "Executor", "Session", "call_result", "not_an_object", "program_request"]


@dataclass(slots=True)
class CallResult:
    """The outcome of one tool call, as the agent will see it."""

    name: str
    arguments: dict[str, Any]
    ok: bool
    result: Any = None
    error: str | None = None
    error_type: str | None = None  #: an :class:`~gym_envs.errors.ErrorKind` value when the call failed
    changes: int = 0  #: rows the call inserted, updated or deleted (a failed call: those it kept, ``failed_calls``)

    def observation(self) -> str:
        """The JSON text shown to the agent."""
        if self.ok:
            return json.dumps(self.result, ensure_ascii=False)
        return json.dumps({"error": self.error, "type": self.error_type}, ensure_ascii=False)

    def to_dict(self) -> dict[str, Any]:
        """A plain dict (shallow: ``arguments`` and ``result`` are shared, they came from JSON)."""
        return {"name": self.name, "arguments": self.arguments, "ok": self.ok, "result": self.result,
                "error": self.error, "error_type": self.error_type, "changes": self.changes}


@dataclass
class CheckResult:
    """One check's verdict after a turn."""

    index: int
    kind: str
    passed: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        """A plain dict."""
        return {"index": self.index, "kind": self.kind, "passed": self.passed, "detail": self.detail}


def program_request(spec: Any) -> dict[str, Any]:
    """The ``load`` request for an :class:`~gym_envs.spec.EnvSpec` (keyed by a hash of what the engine needs)."""
    tools = {t.name: t.parameters for t in spec.tools}
    body = {"code": spec.code, "schema_sql": spec.state.schema_sql, "seed_sql": spec.state.seed_sql,
            "tools": tools, "failed_calls": spec.failed_calls}
    key = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    return {"op": "load", "key": key, **body}


def call_result(name: str, args: dict[str, Any], resp: dict[str, Any]) -> CallResult:
    """The :class:`CallResult` of an engine response to a call."""
    if resp.get("ok"):
        result = resp["result"] if "result" in resp else json.loads(resp["result_json"])
        return CallResult(name, args, True, result, None, None, resp.get("changes", 0))
    return CallResult(name, args, False, None, str(resp.get("error")), resp.get("error_type"), resp.get("changes", 0))


def not_an_object(name: str) -> CallResult:
    """The result of a call whose arguments are not a JSON object."""
    return CallResult(name, {}, False, error="arguments must be a JSON object",
                      error_type=ErrorKind.INVALID_ARGUMENTS.value)


class Executor:
    """Base class: something that can answer engine requests for sessions."""

    mode = "abstract"

    def request(self, session: Session, req: dict[str, Any], *, log: bool = False) -> dict[str, Any]:
        """Answer ``req`` for ``session``; with ``log``, record it for replay if it changed state."""
        raise NotImplementedError

    def call(self, session: Session, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """One tool call of ``session`` (the engine's response)."""
        return self.request(session, {"op": "call", "ep": session.id, "name": name, "arguments": arguments},
                            log=True)

    def call_result(self, session: Session, name: str, arguments: dict[str, Any]) -> CallResult:
        """One tool call of ``session`` as a :class:`CallResult` (what :meth:`Session.call` returns)."""
        return session._result(name, arguments, self.call(session, name, arguments))

    def load(self, spec: Any) -> dict[str, Any]:
        """Compile a spec and build its template database; returns the load response."""
        raise NotImplementedError

    def session(self, spec: Any, seed: int = 0, *, start: bool = True) -> Session:
        """A session of ``spec`` (loading it first if needed), with a fresh episode open; with
        ``start=False`` no episode is open yet: open it with :meth:`Session.open` or :meth:`open_many`."""
        raise NotImplementedError

    def call_many(self, items: Iterable[tuple[Session, str, dict[str, Any] | None]]) -> list[CallResult]:
        """Several sessions' tool calls, in order: the same results as ``session.call(name, arguments)``
        for each in turn. Here they are made one by one; the worker executor carries each worker's share
        in one round trip."""
        return [s.call(name, args) for s, name, args in items]

    def open_many(self, items: Iterable[tuple[Session, int]]) -> list[LoadFailure | None]:
        """Open a fresh episode for each ``(session, seed)``, as ``session.open(seed)`` does, in order;
        each entry of the answer is ``None`` (opened) or the :class:`~gym_envs.errors.LoadFailure` that
        ``open`` would raise. The worker executor carries each worker's share in one round trip."""
        out: list[LoadFailure | None] = []
        for s, seed in items:
            try:
                s.open(seed)
            except LoadFailure as e:
                out.append(e)
            else:
                out.append(None)
        return out

    def close(self) -> None:
        """Release resources."""


_EP_COUNTER = itertools.count(1)


class Session:
    """One episode's handle: tool calls, turn marks, checks and state digests."""

    def __init__(self, executor: Executor, key: str, seed: int):
        self.executor = executor
        self.key = key
        self.seed = seed
        self.id = f"{os.getpid()}-{next(_EP_COUNTER)}"
        # state-changing requests (dicts or encoded frames), for a worker that must replay the episode after
        # a crash; an in-process engine keeps its own log and leaves this empty
        self.log: list[Any] = []
        self.lost: str | None = None
        self.worker_index = 0  #: the worker this session's episode lives on (worker executors)
        #: the statements each episode opens with after the seed (its task's ``setup_sql``); set before opening
        self.setup: tuple[str, ...] = ()
        #: the episodes opened from now on may be answered, for a call of code that keeps no state and that changes
        #: nothing, the result the same call gave on the same content (:mod:`~gym_envs.sandbox.recall`; in process)
        self.recall = False

    def _send(self, req: dict[str, Any], *, logged: bool) -> dict[str, Any]:
        req["ep"] = self.id
        return self.executor.request(self, req, log=logged)

    def open(self, seed: int) -> None:
        """Start a fresh episode with ``seed``: the template state, then :attr:`setup`'s statements;
        :class:`~gym_envs.errors.LoadFailure` if it fails (a setup statement that fails included)."""
        self._opened(self._send(self._open_request(seed), logged=False))

    def _open_request(self, seed: int) -> dict[str, Any]:
        self.seed = seed
        self.log = []
        return self.open_body()

    def open_body(self) -> dict[str, Any]:
        """The ``open`` request of this session's current episode (its seed and setup)."""
        req: dict[str, Any] = {"op": "open", "key": self.key, "seed": self.seed, "ep": self.id}
        if self.setup:
            req["setup"] = list(self.setup)
        if self.recall:
            req["recall"] = True
        return req

    def _opened(self, resp: dict[str, Any]) -> None:
        if not resp.get("ok"):
            raise LoadFailure(resp)
        self.lost = None

    def call(self, name: str, arguments: dict[str, Any] | None) -> CallResult:
        """One tool call; a failure is a :class:`CallResult` with ``ok`` false, never an exception."""
        if arguments is None:
            arguments = {}
        elif not isinstance(arguments, dict):
            return not_an_object(name)
        return self.executor.call_result(self, name, arguments)

    def _result(self, name: str, arguments: dict[str, Any], resp: dict[str, Any]) -> CallResult:
        if resp.get("ok"):  # call_result's first case, without the call
            result = resp["result"] if "result" in resp else json.loads(resp["result_json"])
            return CallResult(name, arguments, True, result, None, None, resp.get("changes", 0))
        if resp.get("error_type") == ErrorKind.EPISODE_LOST:
            self.lost = str(resp.get("error"))
        return call_result(name, arguments, resp)

    def mark(self) -> None:
        """Record table digests at the start of a turn (for ``unchanged`` checks)."""
        self._send({"op": "mark"}, logged=True)

    def probe(self, probes: list[dict[str, Any]]) -> dict[str, Any]:
        """Read the current state for checks (:mod:`gym_envs.sandbox.checks`): ``{"ok": True, "results": [...]}``,
        one answer per probe, or the engine's error response. :func:`gym_envs.checks.judge` scores checks with it."""
        return self._send({"op": "probe", "probes": probes}, logged=False)

    def fork(self) -> int | None:
        """A checkpoint of the episode as it is now (between calls), for :meth:`restore`; None when there is
        no cheap one (the program keeps state of its own, or the executor runs in worker processes, whose
        crash recovery replays a log a checkpoint would not cut): replay instead."""
        if self.executor.mode != "inprocess":
            return None
        resp = self._send({"op": "fork"}, logged=False)
        token = resp.get("fork") if resp.get("ok") else None
        return token if isinstance(token, int) else None

    def restore(self, token: int) -> bool:
        """Put the episode back at checkpoint ``token`` (:meth:`fork`). True when the checkpoint is still
        there for another restore; False when the episode was rebuilt from its log instead (the state is the
        checkpoint's all the same). :class:`~gym_envs.errors.LoadFailure` if the episode is gone."""
        resp = self._send({"op": "restore", "fork": token}, logged=False)
        if not resp.get("ok"):
            raise LoadFailure(resp)
        return bool(resp.get("kept"))

    def digest(self, *, fresh: bool = False) -> dict[str, Any]:
        """The state's digest and each table's (``{"digest", "tables"}``); ``fresh``: every table whose digest
        the engine's cache does not hold is read, none taken from what it remembers of the same calls
        (:mod:`~gym_envs.sandbox.recall`)."""
        return self._send({"op": "digest", "fresh": True} if fresh else {"op": "digest"}, logged=False)

    def dump(self, tables: list[str] | None = None, limit: int = 50, *,
             unless: dict[str, str] | None = None) -> dict[str, Any]:
        """Columns, row counts and up to ``limit`` rows of each table (or of ``tables``). ``unless`` (table -> the
        digest of a dump of it the caller holds, made with the same ``limit``): each table comes with its
        ``digest`` (None when the engine knows none without reading the table), and one whose content is that
        digest's comes as ``{"same": true, "digest": ...}`` instead of its rows (:mod:`~gym_envs.sandbox.recall`)."""
        req: dict[str, Any] = {"op": "dump", "tables": tables, "limit": limit}
        if unless is not None:
            req["unless"] = unless
        return self._send(req, logged=False).get("tables", {})

    def close(self) -> None:
        """End the episode (its connection goes back to the pool)."""
        try:
            self._send({"op": "close"}, logged=False)
        except Exception:  # kept broad: closing never raises (the executor may be shut or its worker gone,
            pass  # and then the worker holds no connection to give back)

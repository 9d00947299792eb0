"""The in-process executor: the engine in this process, with the same guards and no process boundary.

For trusted or already-validated specs only (the package docstring says what it does not defend). One lock
serialises the engine; the engine keeps each episode's replay log itself, so sessions log nothing.
"""

from __future__ import annotations

import threading
from typing import Any

from gym_envs.errors import CallTimeout, ErrorKind, LoadFailure, error_response, exception_text
from gym_envs.sandbox.engine import Engine
from gym_envs.sandbox.host import CallResult, Executor, Session, program_request
from gym_envs.sandbox.limits import Limits

__all__ = ["InProcessExecutor"]


class InProcessExecutor(Executor):
    """Runs the engine in this process: same guards, no process boundary (trusted specs only)."""

    mode = "inprocess"

    def __init__(self, limits: Limits | None = None):
        self.engine = Engine(limits)
        self._lock = threading.Lock()

    def load(self, spec: Any) -> dict[str, Any]:
        return self._load(program_request(spec))

    def _load(self, req: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            return self.engine.handle(req)

    def session(self, spec: Any, seed: int = 0, *, start: bool = True) -> Session:
        req = program_request(spec)  # hashes the whole spec: once per session, not per use
        load = self._load(req)
        if not load.get("ok"):
            raise LoadFailure(load)
        s = Session(self, req["key"], seed)
        if start:
            s.open(seed)
        return s

    def request(self, session: Session, req: dict[str, Any], *, log: bool = False) -> dict[str, Any]:
        # No session log: the engine lives as long as this executor and replays its own episode log.
        with self._lock:  # the engine copies arguments into plain JSON values, as the pipe does
            return self.engine.handle(req)

    def call_result(self, session: Session, name: str, arguments: dict[str, Any]) -> CallResult:
        # Executor.call without a response dict when the call succeeds (Engine.call_plain), and without
        # Engine.handle's dispatch (the same error boundary)
        self._lock.acquire()  # `with`, without building a bound __enter__ and __exit__ per call
        try:
            out = self.engine.call_plain(session.id, name, arguments) if arguments.__class__ is dict else \
                self.engine.call(session.id, name, arguments)
        except CallTimeout:
            out = error_response(ErrorKind.TIMEOUT, "the request took too long and was stopped", 500)
        except Exception as e:  # the engine's boundary (Engine.handle), for this direct call
            out = error_response(ErrorKind.INTERNAL_ERROR, exception_text(e), 2000)
        finally:
            self._lock.release()
        if out.__class__ is tuple:
            return CallResult(name, arguments, True, out[0], None, None, out[1])
        return session._result(name, arguments, out)  # type: ignore[arg-type]

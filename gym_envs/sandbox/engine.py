"""The engine: compiled programs, template images and live episodes, answering JSON requests.

Both executors drive one :class:`Engine` with the same requests (``load``, ``open``, ``call``, ``mark``,
``probe`` (what a turn's checks read of the state), ``digest``, ``dump``, ``close``, ``fork``, ``restore``,
``batch``, ``ping``), so they give identical results on the same trajectory; :meth:`Engine.handle` never raises (a
failure is a typed error response).
A ``load`` compiles the program and builds its template database (:mod:`~gym_envs.sandbox.program`); the
globals spec code starts from are :func:`gym_envs.sandbox.modules.spec_globals`.

Checkpoints (``fork``, ``restore``): when the code keeps no state between calls (:mod:`~gym_envs.sandbox.purity`)
a checkpoint is a savepoint plus the connection's counters; restoring it gives the state a replay of the
log up to it gives (a checkpoint a reset removed is replayed). Other programs get none: the caller replays.

The call scope (:class:`gym_envs.sandbox.scope.CallScope`). Spec code (a program's module level, a tool call, a
``python`` check) runs only inside the scope, entered and left around it: the connection's owner token is the
running facade's (no ``db`` works outside its own call), an episode that imported ``decimal`` computes in its own
decimal context (never the host thread's), and in a worker the soft deadline is armed. The generic path
(:meth:`Engine._run_spec`) and the hot paths (:meth:`Engine.call_plain` in process, :meth:`Engine.call_text` in a
worker) all enter it through that one context manager; each episode keeps its own for its calls. Spec code's
failures become error text without memory addresses (:func:`gym_envs.sandbox.reprs.described`). Episodes get
fresh globals over shared builtins, a connection reset to the template, their own ``random`` and their own facades;
the state always equals the template, then the ``setup`` statements the ``open`` request carried (a task's own
starting state, run in ``rw`` mode as the seed is), then the replay of the episode's logged calls. A failed call
leaves no writes unless its program keeps them (``failed_calls: "keep"``, :attr:`.program.Program.keep_failed`) and
a replay reproduces the failure (not a timeout or running out of memory; an aborted transaction is always undone).
Table digests (``mark``, ``digest``, the ``state`` and ``unchanged`` checks' probes) come from the connection's
exact digest cache (:mod:`~gym_envs.sandbox.digests`), seeded with the template's when an image loads, or, for code
that keeps no state, from an earlier episode's same changing calls on the same setup (:mod:`~.recall`). An episode
opened with ``recall`` (the validity gate's) may have a call of such code that changes nothing answered, in process,
with the result the same call gave on the same content and counters (:meth:`~.recall.Recall.asked`).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from typing import Any

from gym_envs.errors import (
    CallTimeout,
    ErrorKind,
    StateError,
    cap_text,
    error_response,
    exception_text,
    unknown_tool_message,
)
from gym_envs.sandbox.arguments import validate_arguments
from gym_envs.sandbox.checks import json_rows, probe, python_verdict
from gym_envs.sandbox.db import StateDB, digest_of
from gym_envs.sandbox.facade import DbFacade
from gym_envs.sandbox.guards import compile_code
from gym_envs.sandbox.limits import Limits
from gym_envs.sandbox.modules import SEED_KEY, spec_globals
from gym_envs.sandbox.program import Episode, Program, build_program
from gym_envs.sandbox.recall import RECALLS, Recall, call_key
from gym_envs.sandbox.reprs import described, scrub
from gym_envs.sandbox.scope import CallScope, disarm
from gym_envs.sandbox.values import IMMUTABLE, dumps, plain_json

__all__ = ["Engine"]


class Engine:
    """Holds compiled programs, template images and live episodes; answers JSON requests.

    ``in_worker`` engines arm the soft deadline and trust that requests were just decoded from JSON
    (arguments are already private plain values); an in-process engine copies arguments into plain JSON
    values itself.
    """

    pool_size = 16  #: idle connections kept (all programs together) for new episodes

    def __init__(self, limits: Limits | None = None, *, in_worker: bool = False):
        self.limits = limits or Limits()
        self.in_worker = in_worker
        self.programs: dict[str, Program] = {}
        self.episodes: dict[str, Episode] = {}
        self._base_globals = spec_globals(self.limits)  # copied per episode (see _globals)
        cap = self.limits.max_output_chars
        self._deadline_s = self.limits.call_timeout_s if in_worker else 0.0
        #: in a worker, spec code always starts with exactly this many frames of recursion left, whatever path
        #: called it (a single call, a batch, a check): it cannot tell how it was called, or by whom
        self._headroom = self.limits.recursion_limit if in_worker else 0
        self._cap = cap
        self._max_result = self.limits.max_result_bytes
        self._sql_timeout = self.limits.sql.statement_timeout_s
        self._pooled = 0
        self._ops: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "load": self._op_load, "open": self._op_open, "close": self._op_close,
            "call": self._op_call_text if in_worker and self._deadline_s else self._op_call,
            "mark": self._op_mark, "probe": self._op_probe, "digest": self._op_digest,
            "dump": self._op_dump, "ping": self._op_ping, "fork": self._op_fork, "restore": self._op_restore,
        }
        self._fork_ids = itertools.count(1)
        self._recall_limits = repr(self.limits)  #: what the engine remembers is kept apart by limits too

    # -- dispatch ------------------------------------------------------------------------------
    def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        """Answer one request; never raises (a failure is a typed error response). An in-worker engine may
        answer a call (or a batch's) with the response already encoded as JSON text (:meth:`call_text`)."""
        if req.__class__ is not dict:
            return error_response(ErrorKind.PROTOCOL_ERROR, "a request must be a JSON object", 200)
        op = req.get("op")
        try:
            if op == "batch":
                return {"ok": True, "results": self._batch(req["reqs"])}
            fn = self._ops.get(op)  # type: ignore[arg-type]
            if fn is None:
                return error_response(ErrorKind.PROTOCOL_ERROR, f"unknown op {op!r}", 500)
            return fn(req)
        except CallTimeout:
            disarm()
            return error_response(ErrorKind.TIMEOUT, "the request took too long and was stopped", 500)
        except Exception as e:  # the boundary: an engine bug must not kill the worker
            return error_response(ErrorKind.INTERNAL_ERROR, exception_text(e), 2000)

    def _batch(self, reqs: list[Any]) -> list[Any]:
        """A batch's answers, in order; its calls go straight to the call path (the same error boundary)."""
        out: list[Any] = []
        call = self._ops["call"]
        for r in reqs:
            if r.__class__ is dict and r.get("op") == "call":
                try:
                    out.append(call(r))
                except CallTimeout:
                    disarm()
                    out.append(error_response(ErrorKind.TIMEOUT, "the request took too long and was stopped", 500))
                except Exception as e:  # the boundary, as in handle(): one request's engine bug
                    out.append(error_response(ErrorKind.INTERNAL_ERROR, exception_text(e), 2000))
            else:
                out.append(self.handle(r))
        return out

    # -- the call scope ------------------------------------------------------------------------
    def _run_spec(self, state: StateDB, owner: object | None, glb: dict[str, Any], fn: Callable[..., Any],
                  args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None, /) -> Any:
        """``fn(*args, **kwargs)``, spec code of the episode whose globals are ``glb``, inside the call scope
        (:class:`~gym_envs.sandbox.scope.CallScope`)."""
        with CallScope(state.guard, owner, glb, self._deadline_s, self._headroom):
            return fn(*args, **(kwargs or {}))

    # -- load ----------------------------------------------------------------------------------
    def _op_load(self, req: dict[str, Any]) -> dict[str, Any]:
        key = req["key"]
        if key in self.programs:
            return {"ok": True, "cached": True}
        cap = self._cap
        built = build_program(req, self.limits.sql, cap)
        if isinstance(built, dict):
            return built
        prog, db = built
        counts = db.row_counts()
        db.open_episode()
        try:
            ep = self._new_episode(prog, db, seed=0)
            missing = [n for n in prog.tool_schemas if not callable(ep.tools.get(n))]
        except BaseException as e:  # the boundary: the module-level code's failure (CallTimeout too) is a LoadError
            disarm()
            db.close()
            return described(e, cap) | {"error_type": ErrorKind.LOAD_ERROR.value, "replay": False}
        if missing:
            db.close()
            return error_response(ErrorKind.LOAD_ERROR, f"the code defines no function for tools {missing}", cap)
        self.programs[key] = prog
        self._pool_put(prog, db)
        return {"ok": True, "cached": False, "tables": counts, "image_bytes": len(prog.image)}

    # -- episodes ------------------------------------------------------------------------------
    def _globals(self, seed: int) -> dict[str, Any]:
        glb = self._base_globals.copy()
        glb[SEED_KEY] = seed
        return glb

    def _new_episode(self, prog: Program, state: StateDB, seed: int) -> Episode:
        """Fresh globals for ``prog`` on ``state``: its module level runs (in the call scope, with no ``db``)."""
        glb = self._globals(seed)
        self._run_spec(state, None, glb, exec, (prog.code, glb))  # a restricted code object with guarded globals
        tools = {name: glb.get(name) for name in prog.tool_schemas}
        token = object()
        db = DbFacade(state, read_only=False, timeout_s=self._sql_timeout, owner=token)
        scope = CallScope(state.guard, token, glb, self._deadline_s, self._headroom)
        return Episode(prog, state, seed, tools, db, token, glb, {}, [], scope)  # type: ignore[arg-type]

    def _pool_get(self, prog: Program) -> StateDB:
        while prog.pool:
            state = prog.pool.pop()
            self._pooled -= 1
            if not state.lost:
                state.reset_episode()
                return state
            state.close()
        state = StateDB(self.limits.sql)
        state.load_image(prog.image, prog.digests)
        state.open_episode()
        return state

    def _pool_put(self, prog: Program, state: StateDB) -> None:
        if self._pooled >= self.pool_size or state.lost:
            state.close()
            return
        prog.pool.append(state)
        self._pooled += 1

    def _op_open(self, req: dict[str, Any]) -> dict[str, Any]:
        prog = self.programs.get(req["key"])
        if prog is None:
            return error_response(ErrorKind.PROTOCOL_ERROR, "program not loaded", 200)
        ep_id = req["ep"]
        old = self.episodes.pop(ep_id, None)
        if old is not None and old.program is prog and not old.state.lost:
            state = old.state
            state.reset_episode()
        else:
            if old is not None:
                self._pool_put(old.program, old.state)
            state = self._pool_get(prog)
        try:
            ep = self._new_episode(prog, state, int(req.get("seed") or 0))
        except BaseException:
            disarm()
            self._pool_put(prog, state)
            raise
        ep.setup = tuple(req.get("setup") or ())
        ep.recall = ep.program.pure and req.get("recall") is True
        failure = self._apply_setup(ep)
        if failure is not None:
            self._pool_put(prog, state)
            return error_response(ErrorKind.SCHEMA_ERROR, failure, self._cap)
        self.episodes[ep_id] = ep
        return {"ok": True}

    @staticmethod
    def _apply_setup(ep: Episode) -> str | None:
        """Run the episode's setup statements (its task's ``setup_sql``) in ``rw`` mode, as the seed runs;
        why one failed, or None."""
        for i, stmt in enumerate(ep.setup):
            try:
                ep.state.run(stmt, (), mode="rw", fetch=False)
            except StateError as e:
                return f"task setup statement {i + 1} ({str(stmt)[:60]!r}...): {e}"
        return None

    def _op_close(self, req: dict[str, Any]) -> dict[str, Any]:
        ep = self.episodes.pop(req["ep"], None)
        if ep is not None:
            self._pool_put(ep.program, ep.state)
        return {"ok": True}

    def _episode(self, req: dict[str, Any]) -> Episode:
        ep = self.episodes.get(req["ep"])
        if ep is None:
            raise KeyError(f"no open episode {req['ep']!r}")
        return ep

    # -- calls ---------------------------------------------------------------------------------
    def _op_call(self, req: dict[str, Any]) -> dict[str, Any]:
        return self.call(req["ep"], req["name"], req.get("arguments"))

    def _op_call_text(self, req: dict[str, Any]) -> Any:
        return self.call_text(req["ep"], req["name"], req.get("arguments"))

    def call_text(self, ep_id: str, name: str, args: Any) -> str | dict[str, Any]:
        """:meth:`call` for an in-worker engine: a successful call with valid flat arguments is answered with
        its response already encoded (``{"ok":true,"changes":N,"result":...}``), anything else as :meth:`call`
        answers. The worker's hot path."""
        ep = self.episodes.get(ep_id)
        admit = ep.program.arguments.get(name) if ep is not None and ep.lost is None else None
        logged = admit(args) if admit is not None and args.__class__ is dict else None
        if logged is None:
            return self.call(ep_id, name, args)
        state = ep.state  # type: ignore[union-attr]
        conn = state.conn
        before = conn.total_changes
        failure: BaseException | None = None
        try:
            with ep.scope:  # type: ignore[union-attr]
                value = ep.tools[name](ep.db, **logged)  # type: ignore[union-attr]
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # the boundary: spec code's failure (CallTimeout too) becomes described()'s response
            disarm()
            failure = e
        if failure is not None:
            return self._settled(ep, name, logged, before, described(failure, self._cap))  # type: ignore[arg-type]
        try:
            value, bound = plain_json(value)
            text = dumps(value)
        except (TypeError, ValueError, RecursionError) as e:
            return self._settled(ep, name, logged, before, self._not_json(e))  # type: ignore[arg-type]
        if len(text) <= self._max_result and conn.in_transaction:
            ep.log.append((name, logged))  # type: ignore[union-attr]
            changes = conn.total_changes - before
            if changes and ep.program.pure:  # type: ignore[union-attr]
                ep.content += (call_key(name, logged),)  # type: ignore[union-attr]
            return f'{{"ok":true,"changes":{changes},"result":{text}}}'
        return self._settled(ep, name, logged, before, self._result(ep, value, bound, before))  # type: ignore[arg-type]

    def call(self, ep_id: str, name: str, args: Any) -> dict[str, Any]:
        """The ``call`` request: one tool call of episode ``ep_id``."""
        ep = self.episodes.get(ep_id)
        if ep is not None and ep.lost is None and args.__class__ is dict:
            admit = ep.program.arguments.get(name)
            logged = admit(args) if admit is not None else None  # a private copy of valid flat arguments
            if logged is not None:
                return self._call(ep, name, logged, logged)  # the tool may share it: it holds scalars only
        return self._call_slow(ep_id, ep, name, args)

    def _call_slow(self, ep_id: str, ep: Episode | None, name: str, args: Any) -> dict[str, Any]:
        """:meth:`call` for everything but valid flat arguments: refusals, and arguments to copy."""
        cap = self._cap
        if ep is None:
            return error_response(ErrorKind.PROTOCOL_ERROR, f"no open episode {ep_id!r}", cap)
        if ep.lost:
            return error_response(ErrorKind.EPISODE_LOST, ep.lost, cap)
        admit = ep.program.arguments.get(name)
        if admit is None:
            return error_response(ErrorKind.UNKNOWN_TOOL, unknown_tool_message(name, ep.program.tool_schemas), cap)
        if args is None:
            args = {}
        elif args.__class__ is not dict:
            return error_response(ErrorKind.INVALID_ARGUMENTS, "arguments must be a JSON object", cap)
        logged = admit(args)
        if logged is not None:
            return self._call(ep, name, logged, logged)
        try:  # the tool gets a private plain copy; the log shares it unless the tool could change it
            if not self.in_worker:  # a worker's arguments were just decoded: they are private already
                args = plain_json(args)[0]
            logged = args if IMMUTABLE.issuperset(map(type, args.values())) else plain_json(args)[0]
        except (TypeError, ValueError, RecursionError) as e:
            return error_response(ErrorKind.INVALID_ARGUMENTS, f"arguments are not JSON: {e}", cap)
        problems = validate_arguments(ep.program.tool_schemas[name], args)
        if problems:
            return error_response(ErrorKind.INVALID_ARGUMENTS, "; ".join(problems), cap)
        return self._call(ep, name, args, logged)

    def call_plain(self, ep_id: str, name: str, args: dict[str, Any]) -> tuple[Any, int] | dict[str, Any]:
        """:meth:`call` for an in-process engine and an exact ``dict`` of arguments, without building a
        response for the common case: ``(result, changes)`` when the call succeeded, else the same
        error response :meth:`call` gives. The in-process executor's hot path."""
        ep = self.episodes.get(ep_id)
        if ep is not None and ep.lost is None and not self.in_worker:
            admit = ep.program.arguments.get(name)
            logged = admit(args) if admit is not None else None
            if logged is not None:
                state = ep.state
                conn = state.conn
                known = self._recall(ep).asked(state, ep.setup, ep.content, ep.glb, name, logged) if ep.recall else None
                if known is not None and known.found:
                    ep.log.append((name, logged))
                    return known.result, 0
                before = conn.total_changes
                failure: BaseException | None = None
                try:
                    with ep.scope:
                        value = ep.tools[name](ep.db, **logged)
                except (KeyboardInterrupt, SystemExit):
                    raise
                except BaseException as e:  # the boundary, as above (the batched path)
                    failure = e
                if failure is not None:  # (the name let go first: its traceback holds this frame, which held it)
                    resp, failure = described(failure, self._cap), None
                    return self._settled(ep, name, logged, before, resp)
                try:
                    value, bound = plain_json(value)
                    fits = bound <= self._max_result or len(dumps(value)) <= self._max_result
                except (TypeError, ValueError, RecursionError) as e:
                    return self._settled(ep, name, logged, before, self._not_json(e))
                if fits and conn.in_transaction:
                    ep.log.append((name, logged))
                    changes = conn.total_changes - before
                    if changes and ep.program.pure:
                        ep.content += (call_key(name, logged),)
                    elif known is not None:
                        self._recall(ep).answered(known, state, ep.glb, value)
                    return value, changes
                return self._settled(ep, name, logged, before, self._result(ep, value, bound, before))
        return self.call(ep_id, name, args)

    def _call(self, ep: Episode, name: str, args: dict[str, Any], logged: dict[str, Any]) -> dict[str, Any]:
        """Run a call with valid arguments and keep the episode equal to the replay of its log."""
        before = ep.state.conn.total_changes
        return self._settled(ep, name, logged, before, self._invoke(ep, name, args, before))

    def _settled(self, ep: Episode, name: str, logged: dict[str, Any], before: int,
                 resp: dict[str, Any]) -> dict[str, Any]:
        """After a call: log it for replay, or undo it (an aborted transaction; a failure after writes, unless the
        program keeps failed calls' writes and a replay reproduces the failure: the response then carries the rows
        it changed); a logged call that moved the change count joins a pure program's content key."""
        conn, size = ep.state.conn, len(ep.log)
        if not conn.in_transaction:  # SQLite aborted the episode's transaction: undo the call, rebuild
            if resp["ok"] or resp.get("replay"):
                resp = error_response(ErrorKind.SQL_ERROR, "the database aborted the call's transaction; the "
                                      "call had no effect", self._cap)
            resp.pop("replay", None)
            self._rebuild(ep, reload=True)
        else:
            if resp["ok"] or resp.get("replay"):
                ep.log.append((name, logged))
            changes = conn.total_changes - before
            if not resp["ok"] and changes:  # it failed after writing: its writes stay, or are undone by replay
                if resp.get("replay") and ep.program.keep_failed:
                    resp["changes"] = changes
                else:
                    self._rebuild(ep, reload=False)
        if len(ep.log) > size and ep.program.pure and ep.state.conn.total_changes != before:
            ep.content += (call_key(name, logged),)
        return resp

    def _invoke(self, ep: Episode, name: str, args: dict[str, Any], before: int) -> dict[str, Any]:
        """Run one tool call in the call scope (no savepoint: see :meth:`_rebuild`); a typed response.
        ``before``: the connection's ``total_changes`` before the call."""
        try:
            with ep.scope:
                value = ep.tools[name](ep.db, **args)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # the boundary: spec code's failure (CallTimeout too) becomes described()'s response
            disarm()
            return described(e, self._cap)
        try:
            value, bound = plain_json(value)
            return self._result(ep, value, bound, before)
        except (TypeError, ValueError, RecursionError) as e:
            return self._not_json(e)

    def _result(self, ep: Episode, value: Any, bound: int, before: int) -> dict[str, Any]:
        """The response for a tool's result, already copied into plain JSON (``bound``: an upper
        bound of its JSON length); ``ValueError`` if it cannot be written as JSON."""
        limit = self._max_result
        if self.in_worker:
            text = dumps(value)
            if len(text) <= limit:
                return {"ok": True, "changes": ep.state.conn.total_changes - before, "result_json": text}
        elif bound <= limit or len(dumps(value)) <= limit:
            return {"ok": True, "changes": ep.state.conn.total_changes - before, "result": value}
        return error_response(ErrorKind.RESOURCE_LIMIT, f"the tool result is too large (more than {limit:,} "
                              "characters of JSON)", self._cap) | {"replay": True}

    def _not_json(self, e: BaseException) -> dict[str, Any]:
        return error_response(ErrorKind.NOT_JSON, f"the tool returned a value that is not plain JSON "
                              f"({type(e).__name__}: {cap_text(scrub(str(e)), 200)})", self._cap) | {"replay": True}

    def _rebuild(self, ep: Episode, *, reload: bool) -> None:
        """Bring an episode back to "template + its setup statements + its logged calls": after a call failed
        after writing, and (``reload`` the image) after SQLite aborted the transaction. Fresh globals and the
        episode's seed make the replay deterministic; each replayed call runs in a savepoint, so a call that
        failed fails again leaving no writes (or, ``keep_failed``, the writes it left the first time). The
        episode keeps its facades (and their tokens)."""
        state = ep.state
        try:
            if reload or state.lost:
                state.load_image(ep.program.image, ep.program.digests)
                state.open_episode()
            else:
                state.reset_episode()
            fresh = self._new_episode(ep.program, state, ep.seed)
            ep.tools, ep.db, ep.token, ep.glb, ep.scope = fresh.tools, fresh.db, fresh.token, fresh.glb, fresh.scope
            failure = self._apply_setup(ep)
            if failure is not None:
                raise StateError(failure)
            ep.ro_db = ep.ro_token = None
            keep = ep.program.keep_failed
            for name, args in ep.log:
                state.savepoint()
                resp = self._invoke(ep, name, plain_json(args)[0], state.conn.total_changes)
                state.release(commit=bool(resp["ok"] or (keep and resp.get("replay"))))
                if state.lost:
                    raise StateError("the replay aborted again", transient=True)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # the boundary: a replay that fails loses the episode, typed as EpisodeLost
            disarm()
            ep.lost = f"the episode could not be rebuilt ({type(e).__name__}: {cap_text(str(e), 200)})"

    # -- state and checks ----------------------------------------------------------------------
    def _memo(self, ep: Episode) -> dict[str, str] | None:
        """The digests known of the episode's content by its key (a pure program's; :mod:`~.recall`), or None."""
        return self._recall(ep).digests((ep.setup, ep.content)) if ep.program.pure and ep.lost is None else None

    def _recall(self, ep: Episode) -> Recall:
        """What this process remembers of the episode's program (:data:`~.recall.RECALLS`), under these limits (kept by
        the episode once asked for)."""
        memos = ep.memos
        if memos is None:
            memos = ep.memos = RECALLS.of((ep.program.key, self._recall_limits))
        return memos

    def _op_mark(self, req: dict[str, Any]) -> dict[str, Any]:
        ep = self._episode(req)
        ep.marks = ep.state.table_digests(memo=self._memo(ep))
        return {"ok": True}

    def _op_digest(self, req: dict[str, Any]) -> dict[str, Any]:
        """The state's digest and its tables'; ``fresh``: none from what :mod:`~.recall` remembers."""
        ep = self._episode(req)
        tables = ep.state.table_digests(memo=None if req.get("fresh") else self._memo(ep))
        return {"ok": True, "digest": digest_of(tables), "tables": tables}

    def _op_fork(self, req: dict[str, Any]) -> dict[str, Any]:
        """A checkpoint of the episode: ``{"fork": id}``, or ``{"fork": None}`` (replay instead)."""
        ep = self._episode(req)
        if not ep.program.pure or ep.lost is not None:
            return {"ok": True, "fork": None}
        n = next(self._fork_ids)
        saved = ep.state.fork(n)
        if saved is None:
            return {"ok": True, "fork": None}
        if ep.forks is None:
            ep.forks = {}
        ep.forks[n] = (len(ep.log), dict(ep.marks), saved, ep.content)
        return {"ok": True, "fork": n}

    def _op_restore(self, req: dict[str, Any]) -> dict[str, Any]:
        """Back to checkpoint ``fork`` (log cut, marks restored); ``kept`` False: rebuilt from the log instead."""
        ep = self._episode(req)
        n = req.get("fork")
        forks = ep.forks or {}
        entry = forks.get(n) if isinstance(n, int) else None
        if entry is None or not isinstance(n, int):
            return error_response(ErrorKind.PROTOCOL_ERROR, f"no checkpoint {n!r} in this episode", 200)
        size, marks, saved, content = entry
        del ep.log[size:]
        ep.content = content
        kept = ep.state.back_to(n, saved)
        if not kept:
            del forks[n]
            self._rebuild(ep, reload=ep.state.lost)
        ep.marks = dict(marks)
        return {"ok": True, "kept": kept}

    def _op_dump(self, req: dict[str, Any]) -> dict[str, Any]:
        """Columns, row count and first rows of each table; ``unless``: see :meth:`~.recall.Recall.dump`."""
        ep = self._episode(req)
        tables, limit, unless = req.get("tables"), int(req.get("limit", 50)), req.get("unless")
        if unless.__class__ is not dict:
            return {"ok": True, "tables": ep.state.dump(tables, limit)}
        return {"ok": True, "tables": self._recall(ep).dump(ep.state, tables, limit, self._memo(ep), unless)}

    def _op_probe(self, req: dict[str, Any]) -> dict[str, Any]:
        """What the checks of a turn read of the state (:mod:`gym_envs.sandbox.checks`): each probe answered in
        order, SQL and ``check(db)`` code run inside the call scope on the read-only view."""
        ep = self._episode(req)
        state = ep.state

        def sql(query: Any) -> list[list[Any]]:
            return json_rows(self._run_spec(state, None, {}, state.run, (query, ()), {"mode": "ro", "fetch": True}))

        def digests(tables: Any) -> dict[str, str]:
            return state.table_digests(list(tables) if tables else None, memo=self._memo(ep))

        readers = {"sql": sql, "python": lambda code: self._check_python(ep, code), "digests": digests,
                   "marks": lambda _: dict(ep.marks or {}),
                   "columns": lambda text: self._recall(ep).columns_holding(state, str(text), self.limits.sql.max_rows,
                                                                             self._memo(ep))}
        results = [probe(p, readers) for p in req.get("probes") or []]
        if state.lost:
            self._rebuild(ep, reload=True)
        return {"ok": True, "results": results}

    def _check_python(self, ep: Episode, code: str) -> dict[str, Any]:
        compiled = ep.program.check_code.get(code)
        if compiled is None:
            res = compile_code(code, filename="<check>")
            if res.errors:
                return {"passed": False, "detail": "; ".join(res.errors)[:300]}
            compiled = ep.program.check_code[code] = res.code
        glb = self._globals(0)
        if ep.ro_db is None:
            ep.ro_token = object()
            ep.ro_db = DbFacade(ep.state, read_only=True, timeout_s=self._sql_timeout, owner=ep.ro_token)

        def run() -> dict[str, Any]:
            exec(compiled, glb)  # a restricted code object with guarded globals
            fn = glb.get("check")
            if not callable(fn):
                return {"passed": False, "detail": "the check code defines no check(db)"}
            return python_verdict(fn(ep.ro_db))

        try:
            return self._run_spec(ep.state, ep.ro_token, glb, run)  # type: ignore[no-any-return]
        except BaseException:
            disarm()
            raise

    def _op_ping(self, req: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "pid": os.getpid()}


"""A program: a spec's code compiled under the sandbox's guards, and its template database; and the record of one
live episode of it (:class:`Episode`, the engine's).

:func:`build_program` answers the engine's ``load`` request up to running the code: it compiles the
code (:func:`gym_envs.sandbox.guards.compile_code`; a ``compile_error`` response lists the reasons), runs
``schema_sql`` in the ``setup`` mode (tables and indexes only; anything else, or a failing statement, is
a ``schema_error``) and ``seed_sql`` in ``rw``, and keeps the result as the template image every episode
of the program starts from. The engine then runs the module level once to check that every tool is
defined (:meth:`gym_envs.sandbox.engine.Engine._op_load`). The request's ``failed_calls`` (one of
:data:`FAILED_CALLS`, default ``rollback``) says what a failed call leaves of its writes (:attr:`Program.keep_failed`);
another value is a ``load_error``. A process keeps its last builds (:data:`KEPT`), so the same request loaded by
another engine is not compiled nor seeded again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gym_envs.errors import ErrorKind, StateError, error_response
from gym_envs.sandbox.arguments import compile_arguments
from gym_envs.sandbox.db import StateDB
from gym_envs.sandbox.facade import DbFacade
from gym_envs.sandbox.guards import compile_code
from gym_envs.sandbox.limits import SqlLimits
from gym_envs.sandbox.purity import stateless
from gym_envs.sandbox.recall import Recall
from gym_envs.sandbox.scope import CallScope

__all__ = ["FAILED_CALLS", "Episode", "Program", "build_program"]

#: what a failed tool call leaves of its writes: ``rollback`` (nothing: the default) or ``keep`` (the writes it made
#: before it failed, as tools that change their state in place leave them); an EnvSpec's ``failed_calls``
FAILED_CALLS = ("rollback", "keep")


@dataclass
class Program:
    """A loaded program: its code, tools and template image, and what the engine keeps for it."""

    key: str
    code: Any
    tool_schemas: dict[str, dict[str, Any]]
    arguments: dict[str, Callable[[dict[str, Any]], dict[str, Any] | None]]  #: see compile_arguments
    image: bytes
    check_code: dict[str, Any] = field(default_factory=dict)
    pool: list[StateDB] = field(default_factory=list)
    digests: dict[str, str] = field(default_factory=dict)  #: the template's table digests
    pure: bool = False  #: the code keeps no state between calls (checkpoints are savepoints)
    keep_failed: bool = False  #: a failed call's writes stay (``failed_calls: "keep"``; see the engine's docstring)


def build_program(req: dict[str, Any], limits: SqlLimits, cap: int) -> tuple[Program, StateDB] | dict[str, Any]:
    """The program of a ``load`` request and its connection (holding the template), or the error response. What
    a build makes of a request is kept for the last :data:`KEPT` programs of the process (:func:`_built`): loading
    one of them again (in another engine: a compiler's own check of a spec, then the gate's) compiles nothing and
    loads the template image."""
    key = req["key"]
    failed_calls = req.get("failed_calls", "rollback")
    if failed_calls not in FAILED_CALLS:
        return error_response(ErrorKind.LOAD_ERROR, f"failed_calls must be one of {', '.join(FAILED_CALLS)}; got "
                              f"{failed_calls!r}", cap)
    memo = (key, repr(limits), cap)
    kept = _BUILT.get(memo)
    if kept is not None:
        _BUILT.move_to_end(memo)
        return _built(req, limits, *kept)
    result = compile_code(req["code"], filename=f"<envspec {key[:12]}>")
    if result.errors:
        return {"ok": False, "error_type": ErrorKind.COMPILE_ERROR.value, "error": "; ".join(result.errors)[:cap],
                "reasons": list(result.errors)}
    db = StateDB(limits)
    try:
        db.script(req.get("schema_sql", ""), mode="setup")
        for kind in _ddl_kinds(db):
            if kind not in ("table", "index"):
                db.close()
                return error_response(ErrorKind.SCHEMA_ERROR, f"schema_sql may only create tables and "
                                      f"indexes, found a {kind}", cap)
        db.script(req.get("seed_sql", ""), mode="rw")
    except StateError as e:
        db.close()
        return error_response(ErrorKind.SCHEMA_ERROR, str(e), cap)
    tools = req.get("tools", {})
    prog = Program(key=key, code=result.code, tool_schemas=tools, image=db.image(),
                   arguments={n: compile_arguments(s) for n, s in tools.items()}, pure=stateless(req["code"]),
                   keep_failed=failed_calls == "keep")
    prog.digests = db.table_digests()
    _BUILT[memo] = (prog.code, prog.image, dict(prog.digests), prog.pure, prog.arguments)
    while len(_BUILT) > KEPT:
        _BUILT.popitem(last=False)
    return prog, db


KEPT = 8  #: programs whose build a process keeps
#: (request key, SQL limits, cap) -> compiled code, template image, its digests, purity, argument checkers: all
#: immutable, so engines share them
_BUILT: OrderedDict[tuple[str, str, int], tuple[Any, bytes, dict[str, str], bool, dict[str, Any]]] = OrderedDict()


def _built(req: dict[str, Any], limits: SqlLimits, code: Any, image: bytes, digests: dict[str, str], pure: bool,
           arguments: dict[str, Any]) -> tuple[Program, StateDB]:
    """A program built before, with a connection holding its template."""
    prog = Program(key=req["key"], code=code, tool_schemas=req.get("tools", {}), image=image, arguments=arguments,
                   pure=pure, digests=dict(digests), keep_failed=req.get("failed_calls", "rollback") == "keep")
    db = StateDB(limits)
    db.load_image(image, digests)
    return prog, db


def _ddl_kinds(db: StateDB) -> list[str]:
    return [r[0] for r in db.host("SELECT type FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")]


@dataclass(slots=True)
class Episode:
    """A live episode of a program: its connection, globals, tools and facades, and what the engine keeps of it."""

    program: Program
    state: StateDB
    seed: int
    tools: dict[str, Callable[..., Any]]
    db: DbFacade
    token: object  #: the owner token of ``db``
    glb: dict[str, Any]  #: the episode's globals
    marks: dict[str, str]
    log: list[tuple[str, dict[str, Any]]]  #: calls to replay on a rebuild
    scope: CallScope  #: the call scope of its tool calls (its facade's token, its globals)
    lost: str | None = None
    ro_db: DbFacade | None = None  #: the read-only facade of ``python`` checks, made on first use
    ro_token: object | None = None  #: its owner token
    forks: dict[int, tuple[Any, ...]] | None = None  #: id -> log size, marks, counters, content key
    setup: tuple[str, ...] = ()  #: the statements the episode opened with after the template (its task's setup_sql)
    #: pure programs: the logged calls that changed rows (:func:`~.recall.call_key`), the content's key with setup
    content: tuple[tuple[str, str], ...] = ()
    recall: bool = False  #: a pure program's calls that change nothing may be answered from :mod:`~.recall`
    memos: Recall | None = None  #: what the process remembers of its program (:meth:`~.engine.Engine._recall`)

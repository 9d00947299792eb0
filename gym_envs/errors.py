"""Typed failures of the runtime: the kinds of error a tool call can end in, and the exceptions behind them.

A failure is data (a design principle of the project). Tool code, SQL, the sandbox's guards and the worker
protocol raise the exceptions defined here; one boundary, :func:`describe` (called by the sandbox engine
around every piece of spec code), turns any exception into a typed response::

    {"ok": False, "error_type": "<ErrorKind value>", "error": "<text for the agent>"}

Responses hold the kind's plain string value, so they cross the worker pipe as JSON unchanged and
compare equal to :class:`ErrorKind` members (``ErrorKind(resp["error_type"])`` reads one back). Call
sites name kinds with :class:`ErrorKind`, never with bare strings.

Where else an exception becomes a result, and only there (each such ``except Exception`` says so): the
engine's request dispatch (a bug of the engine becomes ``InternalError``, the worker lives on), the
in-process executor's mirror of it, check evaluation (a check that raises fails), :func:`parse_action`
(never raises), :func:`reset_many` / :func:`step_many` with ``return_exceptions`` (one env's failure is
its entry) and the MCP server (a request that fails is an error result; the server stays up). They
write the exception with :func:`exception_text`.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Any

__all__ = [
    "CallTimeout",
    "ErrorKind",
    "LoadFailure",
    "ResourceLimit",
    "SandboxViolation",
    "StateError",
    "ToolError",
    "cap_text",
    "describe",
    "error_response",
    "exception_text",
    "unknown_tool_message",
]


class ErrorKind(StrEnum):
    """What went wrong, as ``CallResult.error_type`` and the observation's ``"type"`` report it."""

    TOOL_ERROR = "ToolError"  #: the tool raised ToolError: a message meant for the agent
    SQL_ERROR = "SQLError"  #: a statement was refused or failed
    TIMEOUT = "Timeout"  #: the call or request ran past its deadline and was stopped
    SANDBOX_VIOLATION = "SandboxViolation"  #: the code tried something the sandbox forbids
    RESOURCE_LIMIT = "ResourceLimit"  #: a size, recursion or memory limit was hit
    RUNTIME_ERROR = "RuntimeError"  #: any other exception of the tool code
    NOT_JSON = "NotJSON"  #: the tool returned something that is not plain JSON
    INVALID_ARGUMENTS = "InvalidArguments"  #: the call's arguments do not match the tool's schema
    UNKNOWN_TOOL = "UnknownTool"  #: no tool of that name
    EPISODE_LOST = "EpisodeLost"  #: the episode could not be rebuilt; open a new one
    WORKER_CRASHED = "WorkerCrashed"  #: the worker process died during the request and was replaced
    COMPILE_ERROR = "CompileError"  #: the spec's code does not compile under the sandbox's policy
    SCHEMA_ERROR = "SchemaError"  #: schema_sql or seed_sql failed or did something not allowed
    LOAD_ERROR = "LoadError"  #: the code failed at module level or defines no function for a tool
    PROTOCOL_ERROR = "ProtocolError"  #: a malformed request (host bug or unknown episode)
    INTERNAL_ERROR = "InternalError"  #: a bug of the engine itself, caught at its boundary
    PARSE_ERROR = "ParseError"  #: an action (the model's text) that could not be parsed
    EPISODE_OVER = "EpisodeOver"  #: a tool was called after the episode ended
    EPISODE_CONTROL = "EpisodeControl"  #: an episode control request (MCP ``envwright_*``) was refused
    SERVER_ERROR = "ServerError"  #: a server adapter (MCP) failed on a request; it stays up


class ToolError(Exception):
    """Raised by tool code to return an agent-visible error message."""


class SandboxViolation(Exception):
    """Code tried something the sandbox forbids."""


class ResourceLimit(Exception):
    """An operation would exceed a resource limit."""


class StateError(Exception):
    """A statement was refused or failed; the message is safe to show to the agent.

    ``transient`` marks failures that depend on timing or memory (an interrupted statement, an aborted
    transaction), which a replay cannot be expected to repeat.
    """

    def __init__(self, message: str, *, transient: bool = False):
        super().__init__(message)
        self.transient = transient


class CallTimeout(BaseException):
    """Raised inside a worker when a call passes its soft deadline (tool code cannot catch it)."""


class LoadFailure(Exception):
    """A spec's code or state could not be loaded, or an episode not opened; ``response`` is the typed error."""

    def __init__(self, response: dict[str, Any]):
        self.response = response
        super().__init__(f"{response.get('error_type')}: {response.get('error')}")


def cap_text(text: str, n: int) -> str:
    """``text``, cut to ``n`` characters with a note of how many were cut."""
    return text if len(text) <= n else text[:n] + f"...[{len(text) - n} more characters]"


def unknown_tool_message(name: str, offered: Iterable[str]) -> str:
    """The error text of a call to a tool that is not offered: a name no tool has, or one a task withholds
    until a later turn (the agent cannot tell them apart). ``offered``: the tools it may call now."""
    return f"no tool named {name!r}; available tools: {sorted(offered)}"


def error_response(kind: ErrorKind, message: str, cap: int) -> dict[str, Any]:
    """The typed failure response ``{"ok": False, "error_type", "error"}`` (message capped)."""
    return {"ok": False, "error_type": kind.value, "error": cap_text(message, cap)}


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # kept broad: a rigged __str__ (an argument whose str fails) may raise anything
        return "<unprintable>"


def exception_text(exc: BaseException, cap: int | None = None) -> str:
    """``"TypeName: message"``: an exception as the text a result records (every package's boundary
    writes caught exceptions with it; a rigged ``__str__`` is survived; cut to ``cap`` characters)."""
    text = f"{type(exc).__name__}: {_text(exc)}"
    return text if cap is None else cap_text(text, cap)


def describe(exc: BaseException, cap: int) -> dict[str, Any]:
    """The typed response for an exception raised by spec code.

    ``replay`` marks failures that replaying the call reproduces (its inputs decide them), so the call
    belongs in the episode's log; a timeout or an out-of-memory does not.
    """
    if isinstance(exc, ToolError):
        try:
            msg = str(exc.args[0]) if exc.args else "tool error"
        except Exception:  # kept broad: a rigged __str__, as in _text
            msg = "<unprintable>"
        return error_response(ErrorKind.TOOL_ERROR, msg, cap) | {"replay": True}
    if isinstance(exc, StateError):
        return error_response(ErrorKind.SQL_ERROR, _text(exc), cap) | {"replay": not exc.transient}
    if isinstance(exc, CallTimeout):
        return error_response(ErrorKind.TIMEOUT, "the call took too long and was stopped", cap)
    if isinstance(exc, SandboxViolation):
        return error_response(ErrorKind.SANDBOX_VIOLATION, _text(exc), cap) | {"replay": True}
    if isinstance(exc, ResourceLimit):
        return error_response(ErrorKind.RESOURCE_LIMIT, f"ResourceLimit: {_text(exc)}", cap) | {"replay": True}
    if isinstance(exc, MemoryError | RecursionError):
        return error_response(ErrorKind.RESOURCE_LIMIT, f"{type(exc).__name__}: {cap_text(_text(exc), 200)}", cap)
    return error_response(ErrorKind.RUNTIME_ERROR, f"{type(exc).__name__}: {cap_text(_text(exc), cap)}",
                          cap) | {"replay": True}

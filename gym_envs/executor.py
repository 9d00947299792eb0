"""The restricted executor: runs a spec's tool code and checks, in-process or in isolated workers.

Threat model
============
The ``code`` of an :class:`~gym_envs.spec.EnvSpec` and its ``python`` checks are
written by a model and are **untrusted**; so are the agent's tool-call
arguments. The host (trainer, generator, evaluator) is trusted, and so is what
it passes in; a worker's replies are treated as untrusted (size-capped, parsed
as plain JSON, any failure is a crashed worker). We defend:

1. **Confidentiality and integrity of the host.** Code is compiled with
   RestrictedPython under a policy that rejects ``_``-names (also as
   positional-only, keyword-only and ``*`` parameters), ``except*``, class
   statements (there is no ``__build_class__``) and the frame/code/traceback
   attributes (``gi_frame``, ``f_back``, ``tb_frame``...). At run time
   ``_getattr_`` refuses ``_``-names, those attributes, ``format`` and
   ``format_map`` on anything, every attribute of an exception but ``args`` (so
   ``AttributeError.obj`` leaks nothing) and ``register`` on ABCs; a missing
   attribute raises ``AttributeError``. Builtins are a curated set without
   ``type``, ``globals``, ``vars``, ``eval``, ``exec``, ``compile``, ``open``,
   ``getattr``, ``setattr``, ``id`` or ``hash``. ``import`` is an allow-list that
   hands out read-only **views** of pure modules (``json``, ``math``, ``re``,
   ``datetime``, ``collections``, ``itertools``, ``statistics``, ``functools``,
   ``operator``, ``string``, ``decimal``, ``fractions``, ``bisect``, ``heapq``,
   ``hashlib``, ``random``; ``time`` offers only ``strftime`` and
   ``struct_time``, which ``datetime`` needs). A view holds only classes,
   functions and immutable constants: never a module (``statistics.sys``,
   ``re.enum``, ``fractions.sys`` would reach ``sys.modules``), a mutable
   module-level container (copied frozen) or shared mutable state
   (``decimal.getcontext``/``setcontext``/``localcontext`` and the context
   templates are left out). Functions that would bypass the guards are
   replaced by guarded versions: ``operator.attrgetter``/``methodcaller``/
   ``itemgetter``/``getitem``/``setitem``/``delitem`` go through the same
   guards as ``a.b``/``a[b]``/``a[b] = c``, ``operator.mul``/``pow``/``lshift``
   through the size guard, and ``functools.wraps``/``update_wrapper`` (which
   can assign ``__code__`` of a shared function) copy nothing. Views cannot be
   written (``_write_`` refuses attribute writes on anything but the code's own
   dicts and lists).
2. **Isolation between episodes.** Every episode re-executes the compiled
   module in fresh globals (over builtins it cannot reach), gets its database back in the
   template's exact state (connections are pooled per program; a reset is a
   rollback to the episode savepoint, which restores the template page for
   page) with the connection's ``last_insert_rowid()``/``changes()`` reset and
   ``total_changes()`` refused, and its own ``random`` (a ``random.Random``
   seeded from the episode seed, created on first import), so ``random.seed(0)``,
   module-level caches, connection history or a mutated argument never reach
   another episode. Arguments enter and results
   leave as plain JSON values (copied, subclasses stripped, nesting depth
   capped), so a ``str`` subclass or an object with a rigged ``__eq__`` becomes
   plain data or an error, and a ``python`` check passes only when it returns
   the real ``True``.
3. **Availability.** In **worker** mode (the default) code runs in a separate
   process (which imports only this module and :mod:`gym_envs.state`) with
   rlimits (CPU seconds per request, address space, open files, processes,
   file size 0, no core dumps, an SQLite heap limit), a per-request wall-clock
   timeout enforced by the parent (which kills the worker, starts a fresh one
   and replays the surviving episodes' logged calls, so they continue), an
   in-worker timer for cheap recovery from Python loops (it re-fires, so a
   ``finally:`` loop is interrupted too; C code that ignores signals, such as
   ``hashlib.pbkdf2_hmac``, is left to the parent's timeout or RLIMIT_CPU), a
   low recursion limit, capped ``print`` output, capped result and exception
   text, and its stdin/stdout moved off the protocol pipes. SQL runs through
   :mod:`gym_envs.state` (authorizer, progress deadline, length, row and
   result-size limits, capped ``printf`` widths and LIKE patterns).
   Arithmetic that could allocate without bound (``'a' * 10**10``, ``[0] *
   10**9``, ``10**10**8``, products of huge integers, huge shifts, powers of
   fractions) is checked before it runs, in both modes.
4. **Reward integrity.** Checks run on a read-only view after the turn
   (authorizer in ``ro`` mode plus ``PRAGMA query_only``, so even a statement
   the tool prepared cannot write) and never see the agent's objects; only JSON
   crosses back. The state always equals the replay of the episode's logged
   calls (successes, and failures that a replay reproduces): a call that fails
   after writing is undone by rolling back to the episode start and replaying
   the log (each replayed call in its own savepoint), and an episode whose
   transaction SQLite aborted (an interrupted write, out of memory) is rebuilt
   from the image the same way. Successful calls pay for no savepoint.

Not defended: the **in-process** mode has the same guards minus the process
boundary, so an infinite loop, a catastrophic regular expression, a C-level
CPU burner (``math.factorial(10**8)``, ``hashlib.pbkdf2_hmac`` with 10**9
rounds, one SQLite function call over a megabyte such as a LIKE with a
100-character pattern) or a memory bomb that evades the arithmetic guard
(``'x'.ljust(10**10)``, a long-running SQL statement materialising data until
its deadline) can stall or exhaust the host. Use it only for trusted or
already-validated specs. The worker mode's limits are per request, so a
worker's own memory is shared by the episodes it holds (up to
``Engine.pool_size`` idle connections are kept as well). A tool that writes exactly the
rows a check looks for is judged by state: that is correct (the checks define
the task), not a hack. Set iteration order of strings depends on the process's
hash seed; workers run with ``PYTHONHASHSEED=0``. Timing (a call that times out
in one run may not in another) is not deterministic.

Protocol
========
Both modes drive the same :class:`Engine` with JSON requests (``load``,
``open``, ``call``, ``mark``, ``check``, ``digest``, ``dump``, ``close``,
``batch``, ``ping``), so they give identical results on the same trajectory. A
worker speaks length-prefixed JSON frames over its pipes; a call's result is
spliced into the reply as raw JSON (never encoded twice), and
:meth:`Executor.call_many` and :meth:`Executor.open_many` carry the calls and
resets of several episodes in one round trip per worker
(:func:`gym_envs.env.step_many` and :func:`gym_envs.env.reset_many` use them).
"""

from __future__ import annotations

import _strptime  # noqa: F401 - imported here so datetime.strptime finds it without importing
import abc
import ast
import atexit
import bisect
import collections
import datetime
import decimal
import fractions
import functools
import hashlib
import heapq
import itertools
import json
import math
import operator
import os
import random
import re
import select
import signal
import statistics
import string
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from types import BuiltinFunctionType, FunctionType, MappingProxyType, ModuleType, SimpleNamespace
from typing import Any

from RestrictedPython import RestrictingNodeTransformer, compile_restricted_exec
from RestrictedPython.Guards import full_write_guard, guarded_iter_unpack_sequence, guarded_unpack_sequence
from RestrictedPython.transformer import INSPECT_ATTRIBUTES

from gym_envs import state as _state
from gym_envs.state import DbFacade, SqlLimits, StateDB, StateError, quote_identifier

__all__ = [
    "CallResult",
    "CheckResult",
    "Engine",
    "Executor",
    "InProcessExecutor",
    "Limits",
    "LoadFailure",
    "Session",
    "ToolError",
    "WorkerExecutor",
    "compile_code",
    "default_executor",
    "make_executor",
    "plain_json",
]


class ToolError(Exception):
    """Raised by tool code to return an agent-visible error message."""


class _Timeout(BaseException):
    """Raised inside a worker when a call exceeds its soft deadline (not catchable by tool code)."""


class SandboxViolation(Exception):
    """Code tried something the sandbox forbids."""


class ResourceLimit(Exception):
    """An operation would exceed a resource limit."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of the executor; every field is per call unless it says otherwise."""

    call_timeout_s: float = 2.0  #: wall clock per request, enforced by the parent (worker mode)
    cpu_seconds: int = 10  #: CPU seconds per request (RLIMIT_CPU, worker mode)
    memory_bytes: int = 1 << 30  #: address space of a worker (RLIMIT_AS)
    max_open_files: int = 64  #: RLIMIT_NOFILE of a worker
    max_output_chars: int = 2_000  #: printed output and exception text kept
    max_result_bytes: int = 65_536  #: size of a tool result as compact JSON
    max_sequence: int = 10_000_000  #: elements a guarded `*`, `range`, `bytes` may create
    max_int_bits: int = 100_000  #: bits of an integer produced by `*`, `**` or `<<`
    recursion_limit: int = 300  #: Python frames available to untrusted code (worker mode)
    sql: SqlLimits = field(default_factory=SqlLimits)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Limits:
        d = dict(d)
        sql = SqlLimits(**d.pop("sql", {}))
        return cls(sql=sql, **d)


# ============================================================================================
# Plain JSON values (what crosses every boundary)
# ============================================================================================

_MAX_DEPTH = 64
# Integers longer than this are converted once to learn whether json.dumps could write them: Python refuses
# to convert more than sys.get_int_max_str_digits() digits (4300 by default, never fewer than 640 when set).
_INT_CHECK_BITS = 2_000
_INT64 = 1 << 64


def plain_json(value: Any, max_depth: int = _MAX_DEPTH) -> tuple[Any, int]:
    """A JSON round trip of ``value`` without the text: ``(copy, size_bound)``.

    The copy holds only ``dict`` (str keys), ``list``, ``str``, ``int``, ``float``,
    ``bool`` and ``None``, exactly as ``json.loads(json.dumps(value))`` would
    (tuples become lists, int/float/bool/None keys become strings, subclasses
    become their base type); ``size_bound`` is an upper bound of the length of
    its compact JSON text. Raises ``TypeError`` / ``ValueError`` (with the
    ``json`` module's messages) where ``json.dumps(..., allow_nan=False)``
    would, and ``ValueError`` when nesting exceeds ``max_depth``.
    """
    if value.__class__ is dict:  # fast path: a flat object of str keys and str/int/bool/None values
        chars = 0  # characters of the keys and the string values
        for k, v in value.items():
            if k.__class__ is not str:
                break
            c = v.__class__
            if c is int:
                if not -_INT64 < v < _INT64:
                    break
                chars += len(k)
            elif c is str:
                chars += len(k) + len(v)
            elif c is bool or v is None:
                chars += len(k)
            else:
                break
        else:
            # an item is at most 12 characters per character (escapes), 2 quotes, ':' and ',', and its
            # value's quotes or up to 21 characters of a number, true, false or null
            return value.copy(), 12 * chars + 27 * len(value) + 2
    return _plain(value, max_depth)


_plain_json_py = plain_json  #: the reference implementation, which the C twin is tested against
#: ``plain_json(value)`` at the default depth, as the engine calls it: the C twin when it is built
_copy_json: Callable[[Any], tuple[Any, int]] = plain_json if _state.speedups is None else _state.speedups.plain_json


def _int_bound(v: int) -> int:
    """An upper bound of the length of ``v`` in JSON; ``ValueError`` where ``json.dumps`` would refuse it."""
    bits = v.bit_length()
    if bits > _INT_CHECK_BITS:
        int.__repr__(v)  # raises the json module's ValueError past the interpreter's digit limit
    return bits // 3 + 3


def _plain(v: Any, depth: int) -> tuple[Any, int]:
    cls = v.__class__
    if cls is str:
        return v, 12 * len(v) + 2
    if cls is int:
        return v, _int_bound(v)
    if cls is bool or v is None:
        return v, 5
    if cls is float:
        if v != v or v in (math.inf, -math.inf):
            raise ValueError("Out of range float values are not JSON compliant")
        return v, 25
    if depth <= 0:
        raise ValueError(f"nested deeper than {_MAX_DEPTH} levels")
    if cls is dict or isinstance(v, dict):
        out: dict[str, Any] = {}
        size = 2
        for k, item in dict.items(v):
            if k.__class__ is not str:
                k = _json_key(k)
            out[k], n = _plain(item, depth - 1)
            size += n + 12 * len(k) + 4
        return out, size
    if cls is list or cls is tuple or isinstance(v, list | tuple):
        items = []
        size = 2
        if cls is not list and cls is not tuple:  # a subclass: its real items, whatever its __iter__ says
            v = list.__iter__(v) if isinstance(v, list) else tuple.__iter__(v)
        for item in v:
            c, n = _plain(item, depth - 1)
            items.append(c)
            size += n + 1
        return items, size
    return _plain_subclass(v, depth)


def _plain_subclass(v: Any, depth: int) -> tuple[Any, int]:
    if isinstance(v, str):
        c = str.__str__(v)  # the real text; sized by it, not by an overridden __len__
        return c, 12 * len(c) + 2
    if isinstance(v, bool):
        return bool(v), 5
    if isinstance(v, int):
        c = int.__int__(v)
        return c, _int_bound(c)
    if isinstance(v, float):
        return _plain(float.__float__(v), depth)
    raise TypeError(f"Object of type {v.__class__.__name__} is not JSON serializable")


def _json_key(k: Any) -> str:
    if isinstance(k, str):
        return str.__str__(k)
    if k is True:
        return "true"
    if k is False:
        return "false"
    if k is None:
        return "null"
    if isinstance(k, int):
        return int.__repr__(k)
    if isinstance(k, float):
        k = float.__float__(k)  # the real value: a subclass's __eq__ must not decide
        if k != k or k in (math.inf, -math.inf):
            raise ValueError("Out of range float values are not JSON compliant")
        return float.__repr__(k)
    raise TypeError(f"keys must be str, int, float, bool or None, not {k.__class__.__name__}")


_INF = (math.inf, -math.inf)
_IMMUTABLE = frozenset({str, int, float, bool, type(None)})  #: JSON values a tool cannot change


def _json_default(o: Any) -> Any:
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


# One C encoder for the whole protocol: what json.dumps(v, separators=(",", ":"), allow_nan=False)
# writes (ASCII only, so lone surrogates survive the pipe), without building an encoder per call.
# It keeps no cycle markers: protocol values are trees (plain_json output or host-built requests);
# a cycle fails with RecursionError instead of ValueError.
_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
_C_ENCODE = _c_make_encoder(None, _json_default, getattr(json.encoder, "c_encode_basestring_ascii", None),
                            None, ":", ",", False, False, False) if _c_make_encoder is not None else None
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _dumps(value: Any) -> str:
    """Compact, ASCII-only JSON."""
    if _C_ENCODE is None:
        return json.dumps(value, separators=(",", ":"), allow_nan=False)
    return "".join(_C_ENCODE(value, 0))


_JSON_STRS: dict[str, str] = {}  #: episode ids and tool names as JSON (a call frame names both)


def _json_str(text: str) -> str:
    """``_dumps(text)`` for an exact ``str``, remembered for the first 4,096 distinct strings."""
    out = _JSON_STRS.get(text)
    if out is None:
        out = _dumps(text)
        if len(_JSON_STRS) < 4096:
            _JSON_STRS[text] = out
    return out


def _loads(frame: bytes) -> Any:
    """Parse one ASCII JSON frame (``ValueError`` on anything else, trailing data included)."""
    text = frame.decode("ascii")
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        raise ValueError("not a JSON document") from None
    if end != len(text):
        raise ValueError("extra data after the JSON document")
    return value


# ============================================================================================
# Restricted compilation
# ============================================================================================

_BLOCKED_ATTRS = frozenset({
    "format", "format_map", "mro", "gi_frame", "gi_code", "gi_yieldfrom", "gi_running",
    "cr_frame", "cr_code", "cr_await", "cr_origin", "ag_frame", "ag_code", "ag_await", "f_back",
    "f_globals", "f_locals", "f_builtins", "f_code", "f_trace", "f_generator", "tb_frame", "tb_next",
    "co_code", "func_globals", "func_code", "im_func", "im_self", "with_traceback",
}) | INSPECT_ATTRIBUTES
_MISSING = object()


def _public(t: type) -> frozenset[str]:
    return frozenset(n for n in dir(t) if not n.startswith("_") and n not in _BLOCKED_ATTRS)


# attribute names that need no further checks on objects of exactly these types
_FAST_ATTRS: dict[type, frozenset[str]] = {
    t: _public(t) for t in (dict, list, str, tuple, set, frozenset, int, float, bytes, bool)
}
_FAST_ATTRS[DbFacade] = frozenset({"query", "execute"})


class _Policy(RestrictingNodeTransformer):
    """RestrictedPython's policy plus size guards on ``*``, ``**``, ``<<`` and ``except:``."""

    _GUARDED = {ast.Mult: "mul", ast.Pow: "pow", ast.LShift: "lshift"}

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        node = self.node_contents_visit(node)
        op = self._GUARDED.get(type(node.op))
        if op is None:
            return node
        call = ast.Call(func=ast.Name("_binop_", ast.Load()),
                        args=[ast.Constant(op), node.left, node.right], keywords=[])  # type: ignore[attr-defined]
        return ast.fix_missing_locations(ast.copy_location(call, node))

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        op = self._GUARDED.get(type(node.op))
        if op is None or not isinstance(node.target, ast.Name):
            return super().visit_AugAssign(node)  # type: ignore[return-value]
        target = node.target.id
        node = self.node_contents_visit(node)
        value = ast.Call(func=ast.Name("_binop_", ast.Load()),
                         args=[ast.Constant(op), ast.Name(target, ast.Load()), node.value],  # type: ignore[attr-defined]
                         keywords=[])
        assign = ast.Assign(targets=[ast.Name(target, ast.Store())], value=value)
        return ast.fix_missing_locations(ast.copy_location(assign, node))

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        # `x[0]`, `row["name"]`: a constant index that _guarded_getitem lets through (it refuses
        # '__' strings and looks at nothing else) needs no call at run time.
        index = node.slice
        if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub) \
                and isinstance(index.operand, ast.Constant) and index.operand.value.__class__ in (int, float):
            plain = True  # x[-1]
        else:
            plain = isinstance(index, ast.Constant) and _constant_index_ok(index.value)
        if plain and isinstance(node.ctx, ast.Load):
            return self.node_contents_visit(node)  # type: ignore[no-any-return]
        return super().visit_Subscript(node)  # type: ignore[return-value]

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        # A bare `except:` would swallow the sandbox's own timeout; narrow it to Exception.
        if node.type is None:
            node.type = ast.copy_location(ast.Name("Exception", ast.Load()), node)
        return super().visit_ExceptHandler(node)  # type: ignore[return-value]


def compile_code(source: str, filename: str = "<envspec>") -> Any:
    """Compile restricted source; the result has ``.code`` (None on failure) and ``.errors``."""
    return compile_restricted_exec(source, filename=filename, policy=_Policy)


def _guarded_getattr(obj: Any, name: str, default: Any = _MISSING) -> Any:
    fast = _FAST_ATTRS.get(obj.__class__)
    if fast is not None and name in fast:  # a public method of a builtin type or the db facade
        return getattr(obj, name)
    if name.__class__ is not str:
        raise SandboxViolation("attribute names must be str")
    if name[:1] == "_" or name in _BLOCKED_ATTRS:
        raise SandboxViolation(f"attribute {name!r} is not allowed")
    if isinstance(obj, BaseException) and name != "args":
        raise SandboxViolation(f"only '.args' of an exception may be read, not {name!r}")
    if isinstance(obj, type):
        if issubclass(obj, BaseException):
            raise SandboxViolation("attributes of exception classes may not be read")
        if name == "register" and isinstance(obj, abc.ABCMeta):
            raise SandboxViolation("registering virtual subclasses of shared ABCs is not allowed")
    if default is _MISSING:
        return getattr(obj, name)
    return getattr(obj, name, default)


#: the ``_getattr_`` of tool code: :func:`_guarded_getattr`, its fast path in C when available
_GETATTR: Callable[..., Any] = _guarded_getattr if _state.speedups is None \
    else _state.speedups.GetAttr(_FAST_ATTRS, _guarded_getattr)


def _guarded_getitem(obj: Any, index: Any) -> Any:
    """``obj[index]`` unless ``index`` is a string starting with ``__``. The check reads only the index:
    a subscript by a constant it would let through is compiled to a plain one (``_constant_index_ok``),
    so a check on ``obj`` added here must end that shortcut too."""
    if index.__class__ is str and index[:1] == "_" and index[:2] == "__":
        raise SandboxViolation(f"item {index!r} is not allowed")
    return obj[index]


def _constant_index_ok(value: Any) -> bool:
    """Whether :func:`_guarded_getitem` lets the constant index ``value`` through, whatever the object."""
    return not (value.__class__ is str and value[:2] == "__")


def _make_binop(limits: Limits) -> Callable[[str, Any, Any], Any]:
    max_seq, max_bits = limits.max_sequence, limits.max_int_bits
    seq_types = (str, bytes, bytearray, list, tuple)

    def binop(op: str, a: Any, b: Any) -> Any:
        if op == "mul":
            if isinstance(a, int) and isinstance(b, int):
                if a.bit_length() + b.bit_length() > max_bits:
                    raise ResourceLimit(f"integer product would exceed {max_bits:,} bits")
            elif isinstance(a, seq_types) and isinstance(b, int):
                if len(a) * b > max_seq:
                    raise ResourceLimit(f"sequence repetition would create {len(a) * b:,} elements "
                                        f"(limit {max_seq:,})")
            elif isinstance(b, seq_types) and isinstance(a, int) and len(b) * a > max_seq:
                raise ResourceLimit(f"sequence repetition would create {len(b) * a:,} elements "
                                    f"(limit {max_seq:,})")
            return a * b
        if op == "pow":
            if isinstance(b, int) and b > 0:
                if isinstance(a, int) and abs(a) > 1:
                    bits = abs(a).bit_length()
                elif isinstance(a, fractions.Fraction):
                    bits = max(abs(a.numerator).bit_length(), a.denominator.bit_length())
                else:
                    bits = 0
                if bits > 1 and b * bits > max_bits:
                    raise ResourceLimit(f"power would exceed {max_bits:,} bits")
            return a**b
        if isinstance(a, int) and isinstance(b, int) and b > 0 and a and a.bit_length() + b > max_bits:
            raise ResourceLimit(f"shift by {b} exceeds {max_bits:,} bits")
        return a << b

    return binop


def _inplacevar(binop: Callable[[str, Any, Any], Any]) -> Callable[[str, Any, Any], Any]:
    ops = {"+=": operator.iadd, "-=": operator.isub, "/=": operator.itruediv,
           "//=": operator.ifloordiv, "%=": operator.imod, "|=": operator.ior, "&=": operator.iand,
           "^=": operator.ixor, ">>=": operator.irshift, "@=": operator.imatmul}
    guarded = {"*=": "mul", "**=": "pow", "<<=": "lshift"}

    def inplace(op: str, x: Any, y: Any) -> Any:
        if op in guarded:
            return binop(guarded[op], x, y)
        fn = ops.get(op)
        if fn is None:
            raise SandboxViolation(f"operator {op} is not allowed")
        return fn(x, y)

    return inplace


class _PrintCollector:
    """RestrictedPython's ``_print_`` target, capped."""

    def __init__(self, cap: int, _getattr_: Any = None):
        self.parts: list[str] = []
        self.size = 0
        self.cap = cap

    def write(self, text: str) -> None:
        if self.size < self.cap:
            self.parts.append(text[: self.cap - self.size])
        self.size += len(text)

    def __call__(self) -> str:
        out = "".join(self.parts)
        return out + ("...[output truncated]" if self.size > self.cap else "")

    def _call_print(self, *objects: Any, **kwargs: Any) -> None:
        sep = kwargs.get("sep", " ")
        end = kwargs.get("end", "\n")
        self.write(str(sep).join(str(o) for o in objects) + str(end))


# -- module views --------------------------------------------------------------------------------

_IMPORT_ALLOW = {
    "json": json, "math": math, "re": re, "datetime": datetime, "collections": collections,
    "itertools": itertools, "statistics": statistics, "functools": functools,
    "operator": operator, "string": string, "decimal": decimal, "fractions": fractions,
    "bisect": bisect, "heapq": heapq, "hashlib": hashlib,
}
_VIEW_DROP = {
    "string": {"Formatter", "Template"},
    "decimal": {"getcontext", "setcontext", "localcontext", "DefaultContext", "BasicContext",
                "ExtendedContext"},
}
_VIEW_TYPES = (type, BuiltinFunctionType, FunctionType, int, float, complex, str, bytes, tuple, frozenset,
               type(None), datetime.timezone)


def _guarded_attrgetter(*names: str) -> Callable[[Any], Any]:
    paths = [str(n).split(".") for n in names]

    def get(obj: Any) -> Any:
        values = []
        for path in paths:
            v = obj
            for part in path:
                v = _guarded_getattr(v, part)
            values.append(v)
        return values[0] if len(values) == 1 else tuple(values)

    return get


def _guarded_methodcaller(name: str, /, *args: Any, **kwargs: Any) -> Callable[[Any], Any]:
    def call(obj: Any) -> Any:
        return _guarded_getattr(obj, name)(*args, **kwargs)

    return call


def _guarded_itemgetter(*items: Any) -> Callable[[Any], Any]:
    def get(obj: Any) -> Any:
        if len(items) == 1:
            return _guarded_getitem(obj, items[0])
        return tuple(_guarded_getitem(obj, i) for i in items)

    return get


def _guarded_setitem(obj: Any, key: Any, value: Any) -> None:
    full_write_guard(obj)[key] = value


def _guarded_delitem(obj: Any, key: Any) -> None:
    del full_write_guard(obj)[key]


def _no_wraps(wrapped: Any, assigned: Any = (), updated: Any = ()) -> Callable[[Any], Any]:
    """``functools.wraps`` for sandboxed code: returns the wrapper unchanged."""
    return lambda wrapper: wrapper


def _no_update_wrapper(wrapper: Any, wrapped: Any, assigned: Any = (), updated: Any = ()) -> Any:
    return wrapper


def _module_view(name: str, mod: ModuleType, overrides: dict[str, Any] | None = None) -> SimpleNamespace:
    """A read-only namespace of ``mod``'s public classes, functions and immutable constants."""
    drop = _VIEW_DROP.get(name, set())
    names: dict[str, Any] = {}
    for k in dir(mod):
        if k.startswith("_") or k in drop:
            continue
        v = getattr(mod, k)
        if isinstance(v, set | frozenset):
            v = frozenset(v)
        elif isinstance(v, list):
            v = tuple(v)
        elif isinstance(v, dict):
            v = MappingProxyType(dict(v))
        elif isinstance(v, ModuleType) or not isinstance(v, _VIEW_TYPES):
            continue
        names[k] = v
    names.update(overrides or {})
    return SimpleNamespace(**names)


def _views(binop: Callable[[str, Any, Any], Any]) -> dict[str, SimpleNamespace]:
    def guarded(op: str) -> Callable[[Any, Any], Any]:
        return lambda a, b: binop(op, a, b)

    overrides: dict[str, dict[str, Any]] = {
        "operator": {"attrgetter": _guarded_attrgetter, "methodcaller": _guarded_methodcaller,
                     "itemgetter": _guarded_itemgetter, "getitem": _guarded_getitem,
                     "setitem": _guarded_setitem, "delitem": _guarded_delitem,
                     "mul": guarded("mul"), "imul": guarded("mul"), "pow": guarded("pow"),
                     "ipow": guarded("pow"), "lshift": guarded("lshift"), "ilshift": guarded("lshift")},
        "functools": {"wraps": _no_wraps, "update_wrapper": _no_update_wrapper},
    }
    views = {name: _module_view(name, mod, overrides.get(name)) for name, mod in _IMPORT_ALLOW.items()}
    views["time"] = SimpleNamespace(strftime=time.strftime, struct_time=time.struct_time)
    return views


_RANDOM_NAMES = ("random", "randint", "randrange", "choice", "choices", "shuffle", "sample", "uniform",
                 "gauss", "normalvariate", "lognormvariate", "triangular", "betavariate", "expovariate",
                 "gammavariate", "paretovariate", "weibullvariate", "vonmisesvariate", "seed", "getrandbits",
                 "randbytes")


def _random_module(rng: random.Random) -> SimpleNamespace:
    def make_random(seed: Any = None) -> random.Random:
        """A new generator; without a seed it is seeded from the episode's generator."""
        return random.Random(rng.getrandbits(64) if seed is None else seed)

    return SimpleNamespace(**{n: getattr(rng, n) for n in _RANDOM_NAMES}, Random=make_random)


def _builtins_template(limits: Limits, binop: Callable[[str, Any, Any], Any]) -> dict[str, Any]:
    """The builtins of episode code (:class:`Engine` adds ``__import__``); shared by every episode, which
    cannot reach the dict: ``__builtins__`` is a name tool code may not use."""
    max_seq = limits.max_sequence

    def safe_range(*args: int) -> range:
        r = range(*args)
        if len(r) > max_seq:
            raise ResourceLimit(f"range of {len(r):,} elements exceeds {max_seq:,}")
        return r

    def safe_bytes(*args: Any) -> bytes:
        if args and isinstance(args[0], int) and args[0] > max_seq:
            raise ResourceLimit(f"bytes({args[0]:,}) exceeds {max_seq:,}")
        return bytes(*args)

    def safe_pow(a: Any, b: Any, m: Any = None) -> Any:
        return pow(a, b, m) if m is not None else binop("pow", a, b)

    b: dict[str, Any] = {
        "None": None, "True": True, "False": False,
        "abs": abs, "all": all, "any": any, "bool": bool, "callable": callable, "chr": chr,
        "divmod": divmod, "enumerate": enumerate, "filter": filter, "float": float,
        "frozenset": frozenset, "int": int, "isinstance": isinstance, "len": len, "list": list,
        "map": map, "max": max, "min": min, "next": next, "ord": ord, "range": safe_range,
        "repr": repr, "reversed": reversed, "round": round, "set": set, "sorted": sorted,
        "str": str, "sum": sum, "tuple": tuple, "zip": zip, "dict": dict, "bytes": safe_bytes,
        "hex": hex, "oct": oct, "bin": bin, "slice": slice, "iter": iter, "complex": complex,
        "pow": safe_pow, "ToolError": ToolError,
    }
    for exc in (Exception, ValueError, KeyError, TypeError, IndexError, ZeroDivisionError,
                ArithmeticError, LookupError, RuntimeError, StopIteration, AttributeError,
                NotImplementedError, OverflowError, AssertionError, NameError):
        b[exc.__name__] = exc
    return b


_SEED_KEY = "__envwright_seed__"  #: in an episode's globals: its seed (tool code cannot name it)
_RANDOM_KEY = "__envwright_random__"  #: in an episode's globals: its ``random``, made on first import


def _make_import(views: dict[str, SimpleNamespace]) -> Callable[..., Any]:
    """The ``__import__`` of the shared builtins: module views, and each episode's own ``random``, kept in
    the globals of the importing code (the interpreter passes them; tool code cannot call ``__import__``
    itself, nor name either key)."""

    def guarded_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (),
                       level: int = 0) -> Any:
        if level != 0:
            raise SandboxViolation("relative imports are not allowed")
        view = views.get(name)
        if view is not None:
            return view
        if name == "random":
            if globals.__class__ is not dict or _SEED_KEY not in globals:
                raise SandboxViolation("random can only be imported by episode code")
            rng = globals.get(_RANDOM_KEY)
            if rng is None:
                rng = globals[_RANDOM_KEY] = _random_module(random.Random(globals[_SEED_KEY]))
            return rng
        if name == "_strptime":  # datetime.strptime imports it from C; code cannot name it
            return sys.modules["_strptime"]
        allowed = sorted(n for n in [*views, "random"] if n != "time")
        raise SandboxViolation(f"import of {name!r} is not allowed; allowed modules: {allowed}")

    return guarded_import


# ============================================================================================
# JSON Schema argument validation (the subset tool schemas use)
# ============================================================================================

_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}
_EXACT_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "array": (list,), "object": (dict,), "null": (type(None),),
}
_ANNOTATION_KEYS = frozenset({"type", "description", "title", "default", "examples"})


def validate_value(schema: dict[str, Any], value: Any, where: str) -> list[str]:
    """Errors of ``value`` against a JSON Schema subset (type, enum, bounds, items, properties)."""
    errors: list[str] = []
    typ = schema.get("type")
    if typ is not None:
        types = typ if isinstance(typ, list) else [typ]
        if not any(_JSON_TYPES.get(t, lambda v: True)(value) for t in types):
            return [f"{where} must be of type {' or '.join(types)}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where} must be one of {schema['enum']}, got {value!r}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{where} must be >= {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{where} must be <= {schema['maximum']}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(f"{where} must have at least {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{where} must have at most {schema['maxLength']} characters")
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value[:1000]):
            errors += validate_value(schema["items"], item, f"{where}[{i}]")
    if isinstance(value, dict) and "properties" in schema:
        errors += validate_arguments(schema, value, where=where + ".")
    return errors


def validate_arguments(schema: dict[str, Any], args: dict[str, Any], where: str = "") -> list[str]:
    """Errors of a call's arguments against its tool's ``parameters`` schema."""
    props = schema.get("properties", {})
    errors = [f"missing required argument '{where}{r}'" for r in schema.get("required", []) if r not in args]
    for k, v in args.items():
        if k not in props:
            if schema.get("additionalProperties", False) is False:
                errors.append(f"unexpected argument '{where}{k}'; expected {sorted(props)}")
            continue
        errors += validate_value(props[k], v, f"argument '{where}{k}'")
    return errors


def _compile_arguments(schema: Any) -> Callable[[dict[str, Any]], dict[str, Any] | None]:
    """The fast path of argument checking for one tool's ``parameters`` schema.

    The function returns a private copy of ``args`` when every argument is declared with a plain scalar
    type (and nothing but annotations), has exactly that type (a finite float for ``number``) and every
    required argument is present: such arguments are valid and already plain JSON. Otherwise it
    returns ``None`` and the caller copies them with :func:`plain_json` and words the errors with
    :func:`validate_arguments`.
    """
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    required = schema.get("required", ()) if isinstance(schema, dict) else ()
    if not isinstance(props, dict) or not isinstance(required, list | tuple) \
            or not all(r.__class__ is str for r in required):
        return lambda args: None
    need = frozenset(required)
    simple: dict[str, tuple[type, ...]] = {}
    for k, sub in props.items():
        typ = sub.get("type") if isinstance(sub, dict) else None
        if isinstance(sub, dict) and set(sub) <= _ANNOTATION_KEYS and isinstance(typ, str) \
                and typ in _EXACT_TYPES and typ not in ("array", "object"):
            simple[k] = _EXACT_TYPES[typ]

    def admit(args: dict[str, Any]) -> dict[str, Any] | None:
        for k, v in args.items():
            c = v.__class__
            if k.__class__ is not str or c not in simple.get(k, ()) or (c is float and (v != v or v in _INF)):
                return None
        if not args.keys() >= need:
            return None
        return args.copy()

    if _state.speedups is not None:  # the same function, in C
        return _state.speedups.Admit(simple, tuple(need))  # type: ignore[no-any-return]
    return admit


# ============================================================================================
# The engine: the same code in both modes
# ============================================================================================


@dataclass
class _Program:
    key: str
    code: Any
    tool_schemas: dict[str, dict[str, Any]]
    arguments: dict[str, Callable[[dict[str, Any]], dict[str, Any] | None]]  #: see _compile_arguments
    image: bytes
    check_code: dict[str, Any] = field(default_factory=dict)
    pool: list[StateDB] = field(default_factory=list)


@dataclass(slots=True)
class _Episode:
    program: _Program
    state: StateDB
    seed: int
    tools: dict[str, Callable[..., Any]]
    db: DbFacade
    ro_db: DbFacade
    marks: dict[str, str]
    log: list[tuple[str, dict[str, Any]]]  #: calls to replay on a rebuild
    lost: str | None = None


def _cap(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n] + f"...[{len(text) - n} more characters]"


def _error(kind: str, message: str, cap: int) -> dict[str, Any]:
    return {"ok": False, "error_type": kind, "error": _cap(message, cap)}


def _describe(exc: BaseException, cap: int) -> dict[str, Any]:
    """A typed error response; ``replay`` marks failures a replay would reproduce."""
    if isinstance(exc, ToolError):
        try:
            msg = str(exc.args[0]) if exc.args else "tool error"
        except Exception:
            msg = "<unprintable>"
        return _error("ToolError", msg, cap) | {"replay": True}
    if isinstance(exc, StateError):
        return _error("SQLError", str(exc), cap) | {"replay": not exc.transient}
    if isinstance(exc, _Timeout):
        return _error("Timeout", "the call took too long and was stopped", cap)
    if isinstance(exc, SandboxViolation):
        return _error("SandboxViolation", str(exc), cap) | {"replay": True}
    if isinstance(exc, ResourceLimit):
        return _error("ResourceLimit", f"ResourceLimit: {exc}", cap) | {"replay": True}
    if isinstance(exc, MemoryError | RecursionError):
        return _error("ResourceLimit", f"{type(exc).__name__}: {_cap(str(exc), 200)}", cap)
    try:
        msg = str(exc)
    except Exception:  # a rigged __str__
        msg = "<unprintable>"
    return _error("RuntimeError", f"{type(exc).__name__}: {_cap(msg, cap)}", cap) | {"replay": True}


class _SoftDeadline:
    """In a worker: a timer that raises :class:`_Timeout` in the running code.

    After the deadline it re-fires every 50 ms while still armed, so code that
    survives the first signal (a loop in a ``finally:``) is interrupted again.
    Leaving the deadline only disarms it (one syscall per call, not two): a
    timer that fires later finds it disarmed and does nothing. Nesting is a no-op.
    """

    __slots__ = ("depth", "seconds")

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.depth = 0

    def __enter__(self) -> None:
        self.depth += 1
        if self.seconds > 0 and self.depth == 1:
            _ALARM[0] = True
            signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc: Any) -> None:
        self.depth -= 1
        if self.depth == 0:
            _ALARM[0] = False


_ALARM = [False]  # armed: a SIGALRM raises _Timeout only inside a deadline


def _alarm(signum: int, frame: Any) -> None:
    if _ALARM[0]:
        signal.setitimer(signal.ITIMER_REAL, 0.05)  # again, should the code survive this one
        raise _Timeout()


class Engine:
    """Holds compiled programs, template images and live episodes; answers JSON requests.

    ``in_worker`` engines arm the soft deadline and trust that requests were
    just decoded from JSON (arguments are already private plain values); an
    in-process engine copies arguments into plain JSON values itself.
    """

    pool_size = 16  #: idle connections kept (all programs together) for new episodes

    def __init__(self, limits: Limits | None = None, *, in_worker: bool = False):
        self.limits = limits or Limits()
        self.in_worker = in_worker
        self.programs: dict[str, _Program] = {}
        self.episodes: dict[str, _Episode] = {}
        self._binop = _make_binop(self.limits)
        self._inplace = _inplacevar(self._binop)
        self._views = _views(self._binop)
        self._builtins = _builtins_template(self.limits, self._binop)
        self._builtins["__import__"] = _make_import(self._views)
        cap = self.limits.max_output_chars
        self._base_globals = {
            "__builtins__": self._builtins,  # shared: episode code cannot reach the dict (see _builtins_template)
            "__name__": "envspec",
            "__metaclass__": type,
            "_getattr_": _GETATTR,
            "_getitem_": _guarded_getitem,
            "_getiter_": iter,
            "_write_": full_write_guard,
            "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
            "_unpack_sequence_": guarded_unpack_sequence,
            "_inplacevar_": self._inplace,
            "_binop_": self._binop,
            "_print_": lambda _getattr_=None: _PrintCollector(cap),
            "_apply_": lambda f, *a, **kw: f(*a, **kw),
        }
        self._deadline = _SoftDeadline(self.limits.call_timeout_s if in_worker else 0.0)
        self._cap = self.limits.max_output_chars
        self._max_result = self.limits.max_result_bytes
        self._sql_timeout = self.limits.sql.statement_timeout_s
        self._pooled = 0
        self._ops: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "load": self._op_load, "open": self._op_open, "close": self._op_close, "call": self._op_call,
            "mark": self._op_mark, "check": self._op_check, "digest": self._op_digest,
            "dump": self._op_dump, "ping": self._op_ping,
        }

    # -- dispatch ------------------------------------------------------------------------------
    def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        """Answer one request; never raises (a failure is a typed error response)."""
        op = req.get("op")
        try:
            if op == "batch":
                return {"ok": True, "results": [self.handle(r) for r in req["reqs"]]}
            fn = self._ops.get(op)  # type: ignore[arg-type]
            if fn is None:
                return _error("ProtocolError", f"unknown op {op!r}", 500)
            return fn(req)
        except _Timeout:
            return _error("Timeout", "the request took too long and was stopped", 500)
        except Exception as e:  # an engine bug must not kill the worker
            return _error("InternalError", f"{type(e).__name__}: {e}", 2000)

    # -- load ----------------------------------------------------------------------------------
    def _op_load(self, req: dict[str, Any]) -> dict[str, Any]:
        key = req["key"]
        if key in self.programs:
            return {"ok": True, "cached": True}
        cap = self.limits.max_output_chars
        result = compile_code(req["code"], filename=f"<envspec {key[:12]}>")
        if result.errors:
            return {"ok": False, "error_type": "CompileError", "error": "; ".join(result.errors)[:cap],
                    "reasons": list(result.errors)}
        db = StateDB(self.limits.sql)
        try:
            db.script(req.get("schema_sql", ""), mode="setup")
            for stmt_kw in _ddl_keywords(db):
                if stmt_kw not in ("table", "index"):
                    db.close()
                    return _error("SchemaError", f"schema_sql may only create tables and indexes, "
                                  f"found a {stmt_kw}", cap)
            db.script(req.get("seed_sql", ""), mode="rw")
        except StateError as e:
            db.close()
            return _error("SchemaError", str(e), cap)
        tools = req.get("tools", {})
        prog = _Program(key=key, code=result.code, tool_schemas=tools, image=db.image(),
                        arguments={n: _compile_arguments(s) for n, s in tools.items()})
        counts = db.row_counts()
        db.open_episode()
        try:
            with self._deadline:
                ep = self._new_episode(prog, db, seed=0)
            missing = [n for n in prog.tool_schemas if not callable(ep.tools.get(n))]
        except BaseException as e:
            db.close()
            return _describe(e, cap) | {"error_type": "LoadError", "replay": False}
        if missing:
            db.close()
            return _error("LoadError", f"the code defines no function for tools {missing}", cap)
        self.programs[key] = prog
        self._pool_put(prog, db)
        return {"ok": True, "cached": False, "tables": counts, "image_bytes": len(prog.image)}

    # -- episodes ------------------------------------------------------------------------------
    def _globals(self, seed: int) -> dict[str, Any]:
        glb = self._base_globals.copy()
        glb[_SEED_KEY] = seed
        return glb

    def _new_episode(self, prog: _Program, state: StateDB, seed: int) -> _Episode:
        glb = self._globals(seed)
        exec(prog.code, glb)  # a restricted code object with guarded globals
        tools = {name: glb.get(name) for name in prog.tool_schemas}
        db, ro_db = state.facades(self._sql_timeout)  # stateless and unwritable: reused per connection
        return _Episode(prog, state, seed, tools, db, ro_db, {}, [])  # type: ignore[arg-type]

    def _pool_get(self, prog: _Program) -> StateDB:
        while prog.pool:
            state = prog.pool.pop()
            self._pooled -= 1
            if not state.lost:
                state.reset_episode()
                return state
            state.close()
        state = StateDB(self.limits.sql)
        state.load_image(prog.image)
        state.open_episode()
        return state

    def _pool_put(self, prog: _Program, state: StateDB) -> None:
        if self._pooled >= self.pool_size or state.lost:
            state.close()
            return
        prog.pool.append(state)
        self._pooled += 1

    def _op_open(self, req: dict[str, Any]) -> dict[str, Any]:
        prog = self.programs.get(req["key"])
        if prog is None:
            return _error("ProtocolError", "program not loaded", 200)
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
            with self._deadline:
                self.episodes[ep_id] = self._new_episode(prog, state, int(req.get("seed") or 0))
        except BaseException:
            self._pool_put(prog, state)
            raise
        return {"ok": True}

    def _op_close(self, req: dict[str, Any]) -> dict[str, Any]:
        ep = self.episodes.pop(req["ep"], None)
        if ep is not None:
            self._pool_put(ep.program, ep.state)
        return {"ok": True}

    def _episode(self, req: dict[str, Any]) -> _Episode:
        ep = self.episodes.get(req["ep"])
        if ep is None:
            raise KeyError(f"no open episode {req['ep']!r}")
        return ep

    # -- calls ---------------------------------------------------------------------------------
    def _op_call(self, req: dict[str, Any]) -> dict[str, Any]:
        return self.call(req["ep"], req["name"], req.get("arguments"))

    def call(self, ep_id: str, name: str, args: Any) -> dict[str, Any]:
        """The ``call`` request: one tool call of episode ``ep_id``."""
        ep = self.episodes.get(ep_id)
        if ep is not None and ep.lost is None and args.__class__ is dict:
            admit = ep.program.arguments.get(name)
            logged = admit(args) if admit is not None else None  # a private copy of valid flat arguments
            if logged is not None:
                return self._call(ep, name, logged, logged)  # the tool may share it: it holds scalars only
        return self._call_slow(ep_id, ep, name, args)

    def _call_slow(self, ep_id: str, ep: _Episode | None, name: str, args: Any) -> dict[str, Any]:
        """:meth:`call` for everything but valid flat arguments: refusals, and arguments to copy."""
        cap = self._cap
        if ep is None:
            return _error("ProtocolError", f"no open episode {ep_id!r}", cap)
        if ep.lost:
            return _error("EpisodeLost", ep.lost, cap)
        admit = ep.program.arguments.get(name)
        if admit is None:
            return _error("UnknownTool", f"no tool named {name!r}; available tools: "
                          f"{sorted(ep.program.tool_schemas)}", cap)
        if args is None:
            args = {}
        elif args.__class__ is not dict:
            return _error("InvalidArguments", "arguments must be a JSON object", cap)
        logged = admit(args)
        if logged is not None:
            return self._call(ep, name, logged, logged)
        try:  # the tool gets a private plain copy; the log shares it unless the tool could change it
            if not self.in_worker:  # a worker's arguments were just decoded: they are private already
                args = _copy_json(args)[0]
            logged = args if _IMMUTABLE.issuperset(map(type, args.values())) else _copy_json(args)[0]
        except (TypeError, ValueError) as e:
            return _error("InvalidArguments", f"arguments are not JSON: {e}", cap)
        problems = validate_arguments(ep.program.tool_schemas[name], args)
        if problems:
            return _error("InvalidArguments", "; ".join(problems), cap)
        return self._call(ep, name, args, logged)

    def call_plain(self, ep_id: str, name: str, args: dict[str, Any]) -> tuple[Any, int] | dict[str, Any]:
        """:meth:`call` for an in-process engine and an exact ``dict`` of arguments, without building a
        response for the common case: ``(result, changes)`` when the call succeeded, else the same
        error response :meth:`call` gives. The executor's hot path (:meth:`InProcessExecutor.call_result`).

        (A C twin of this method saved about 0.2 us of the 1 us it adds over the tool itself, most of
        which is the argument and result copies; it was not kept.)"""
        ep = self.episodes.get(ep_id)
        if ep is not None and ep.lost is None and not self.in_worker:
            admit = ep.program.arguments.get(name)
            logged = admit(args) if admit is not None else None
            if logged is not None:
                conn = ep.state.conn
                before = conn.total_changes
                try:
                    value = ep.tools[name](ep.db, **logged)
                except (KeyboardInterrupt, SystemExit):
                    raise
                except BaseException as e:
                    return self._settle(ep, name, logged, before, _describe(e, self._cap))
                try:
                    value, bound = _copy_json(value)
                    fits = bound <= self._max_result or len(_dumps(value)) <= self._max_result
                except (TypeError, ValueError, RecursionError) as e:
                    return self._settle(ep, name, logged, before, self._not_json(e))
                if fits and conn.in_transaction:
                    ep.log.append((name, logged))
                    return value, conn.total_changes - before
                return self._settle(ep, name, logged, before, self._result(ep, value, bound, before))
        return self.call(ep_id, name, args)

    def _call(self, ep: _Episode, name: str, args: dict[str, Any], logged: dict[str, Any]) -> dict[str, Any]:
        """Run a call with valid arguments and keep the episode equal to the replay of its log."""
        before = ep.state.conn.total_changes
        return self._settle(ep, name, logged, before, self._invoke(ep, name, args, before))

    def _settle(self, ep: _Episode, name: str, logged: dict[str, Any], before: int,
                resp: dict[str, Any]) -> dict[str, Any]:
        """After a call: log it for replay, or undo it (a failure after writes, an aborted transaction)."""
        conn = ep.state.conn
        if not conn.in_transaction:  # SQLite aborted the episode's transaction: undo the call, rebuild
            if resp["ok"] or resp.get("replay"):
                resp = _error("SQLError", "the database aborted the call's transaction; the call had no "
                              "effect", self._cap)
            resp.pop("replay", None)
            self._rebuild(ep, reload=True)
        elif resp["ok"]:
            ep.log.append((name, logged))
        else:
            if resp.get("replay"):
                ep.log.append((name, logged))
            if conn.total_changes != before:  # it failed after writing: undo by replay
                self._rebuild(ep, reload=False)
        return resp

    def _invoke(self, ep: _Episode, name: str, args: dict[str, Any], before: int) -> dict[str, Any]:
        """Run one tool call (no savepoint: see :meth:`_rebuild`); a typed response. ``before``: the
        connection's ``total_changes`` before the call."""
        try:
            if self.in_worker:
                with self._deadline:
                    value = ep.tools[name](ep.db, **args)
            else:
                value = ep.tools[name](ep.db, **args)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:
            return _describe(e, self._cap)
        try:
            value, bound = _copy_json(value)
            return self._result(ep, value, bound, before)
        except (TypeError, ValueError, RecursionError) as e:
            return self._not_json(e)

    def _result(self, ep: _Episode, value: Any, bound: int, before: int) -> dict[str, Any]:
        """The response for a tool's result, already copied into plain JSON (``bound``: an upper
        bound of its JSON length); ``ValueError`` if it cannot be written as JSON."""
        limit = self._max_result
        if self.in_worker:
            text = _dumps(value)
            if len(text) <= limit:
                return {"ok": True, "changes": ep.state.conn.total_changes - before, "result_json": text}
        elif bound <= limit or len(_dumps(value)) <= limit:
            return {"ok": True, "changes": ep.state.conn.total_changes - before, "result": value}
        return _error("ResourceLimit", f"the tool result is too large (more than {limit:,} characters of "
                      "JSON)", self._cap) | {"replay": True}

    def _not_json(self, e: BaseException) -> dict[str, Any]:
        return _error("NotJSON", f"the tool returned a value that is not plain JSON "
                      f"({type(e).__name__}: {_cap(str(e), 200)})", self._cap) | {"replay": True}

    def _rebuild(self, ep: _Episode, *, reload: bool) -> None:
        """Bring an episode back to "template + its logged calls".

        Used when a call failed after writing (its writes must not stay: roll back to the
        episode start) and when SQLite aborted the transaction (``reload`` the image). Fresh
        globals and the episode's seed make the replay deterministic; each replayed call runs
        in a savepoint, so calls that failed the first time fail again without leaving writes.
        """
        state = ep.state
        try:
            if reload or state.lost:
                state.load_image(ep.program.image)
                state.open_episode()
            else:
                state.reset_episode()
            with self._deadline:
                fresh = self._new_episode(ep.program, state, ep.seed)
            ep.tools = fresh.tools
            for name, args in ep.log:
                state.savepoint()
                resp = self._invoke(ep, name, _copy_json(args)[0], state.conn.total_changes)
                state.release(commit=bool(resp.get("ok")))
                if state.lost:
                    raise StateError("the replay aborted again", transient=True)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:
            ep.lost = f"the episode could not be rebuilt ({type(e).__name__}: {_cap(str(e), 200)})"

    # -- state and checks ----------------------------------------------------------------------
    def _op_mark(self, req: dict[str, Any]) -> dict[str, Any]:
        ep = self._episode(req)
        ep.marks = ep.state.table_digests()
        return {"ok": True}

    def _op_digest(self, req: dict[str, Any]) -> dict[str, Any]:
        ep = self._episode(req)
        tables = ep.state.table_digests()
        blob = json.dumps(sorted(tables.items()))
        return {"ok": True, "digest": hashlib.sha256(blob.encode()).hexdigest(), "tables": tables}

    def _op_dump(self, req: dict[str, Any]) -> dict[str, Any]:
        ep = self._episode(req)
        known = ep.state.tables()
        names = req.get("tables") or known
        limit = int(req.get("limit", 50))
        counts = ep.state.row_counts()
        out = {}
        for t in names:
            if t in known:
                rows = ep.state.host(f"SELECT * FROM {quote_identifier(t)} LIMIT ?", (limit,))
                out[t] = {"columns": ep.state.columns(t), "rows": [list(r) for r in rows], "count": counts[t]}
        return {"ok": True, "tables": json.loads(json.dumps(out, default=repr))}

    def _op_check(self, req: dict[str, Any]) -> dict[str, Any]:
        ep = self._episode(req)
        reply = req.get("reply") or ""
        calls = req.get("calls") or []
        attempted = req.get("attempted") or calls
        results = [self._check(ep, c, reply, calls, attempted) for c in req["checks"]]
        if ep.state.lost:
            self._rebuild(ep, reload=True)
        return {"ok": True, "results": results}

    def _check(self, ep: _Episode, check: dict[str, Any], reply: str, calls: list[str],
               attempted: list[str]) -> dict[str, Any]:
        kind = check.get("kind")
        try:
            if kind == "sql":
                return self._check_sql(ep, check)
            if kind == "python":
                return self._check_python(ep, check)
            if kind == "reply_contains":
                low = reply.lower()
                hit = [s for s in check["any_of"] if s.lower() in low]
                return {"passed": bool(hit), "detail": f"found {hit[0]!r}" if hit else
                        f"the reply contains none of {check['any_of']}"}
            if kind == "unchanged":
                now = ep.state.table_digests(check.get("tables") or None)
                before = ep.marks or {}
                changed = [t for t, d in now.items() if before.get(t) != d]
                if not check.get("tables"):
                    changed += [t for t in before if t not in now]
                return {"passed": not changed,
                        "detail": f"changed: {sorted(changed)}" if changed else "unchanged"}
            if kind == "calls":
                missing = [n for n in check.get("require", []) if n not in calls]
                bad = [n for n in check.get("forbid", []) if n in attempted]
                detail = "; ".join(filter(None, [f"missing calls {missing}" if missing else "",
                                                 f"forbidden calls {bad}" if bad else ""]))
                return {"passed": not missing and not bad, "detail": detail or "ok"}
            return {"passed": False, "detail": f"unknown check kind {kind!r}"}
        except _Timeout:
            return {"passed": False, "detail": "check timed out"}
        except Exception as e:
            return {"passed": False, "detail": _describe(e, 500)["error"]}

    def _check_sql(self, ep: _Episode, check: dict[str, Any]) -> dict[str, Any]:
        with self._deadline:
            rows = ep.state.run(check["query"], (), mode="ro", fetch=True)
        got = [list(r.values()) for r in rows]
        want = json.loads(json.dumps(check["expect"]))
        got = json.loads(json.dumps(got, default=repr))
        if not check.get("ordered", False):
            key = functools.partial(json.dumps, sort_keys=True)
            ok = sorted(got, key=key) == sorted(want, key=key)
        else:
            ok = got == want
        return {"passed": ok, "detail": "rows match" if ok else
                _cap(f"expected {json.dumps(want)}, got {json.dumps(got)}", 300)}

    def _check_python(self, ep: _Episode, check: dict[str, Any]) -> dict[str, Any]:
        code = check["code"]
        compiled = ep.program.check_code.get(code)
        if compiled is None:
            res = compile_code(code, filename="<check>")
            if res.errors:
                return {"passed": False, "detail": "; ".join(res.errors)[:300]}
            compiled = ep.program.check_code[code] = res.code
        glb = self._globals(0)
        with self._deadline:
            exec(compiled, glb)  # a restricted code object with guarded globals
            fn = glb.get("check")
            if not callable(fn):
                return {"passed": False, "detail": "the check code defines no check(db)"}
            value = fn(ep.ro_db)
        if value is True:
            return {"passed": True, "detail": "check(db) returned True"}
        shown = repr(value) if type(value) in (bool, int, float, str, type(None)) else type(value).__name__
        return {"passed": False, "detail": f"check(db) returned {_cap(shown, 100)}, not True"}

    def _op_ping(self, req: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "pid": os.getpid()}


def _ddl_keywords(db: StateDB) -> list[str]:
    return [r[0] for r in db.host("SELECT type FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")]


# ============================================================================================
# Host side: results, sessions and executors
# ============================================================================================


@dataclass(slots=True)
class CallResult:
    """The outcome of one tool call, as the agent will see it."""

    name: str
    arguments: dict[str, Any]
    ok: bool
    result: Any = None
    error: str | None = None
    error_type: str | None = None
    changes: int = 0  #: rows the call inserted, updated or deleted

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
        return {"index": self.index, "kind": self.kind, "passed": self.passed, "detail": self.detail}


def program_request(spec: Any) -> dict[str, Any]:
    """The ``load`` request for an :class:`EnvSpec` (keyed by a hash of what the engine needs)."""
    tools = {t.name: t.parameters for t in spec.tools}
    body = {"code": spec.code, "schema_sql": spec.state.schema_sql, "seed_sql": spec.state.seed_sql,
            "tools": tools}
    key = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    return {"op": "load", "key": key, **body}


def _call_result(name: str, args: dict[str, Any], resp: dict[str, Any]) -> CallResult:
    if resp.get("ok"):
        result = resp["result"] if "result" in resp else json.loads(resp["result_json"])
        return CallResult(name, args, True, result, None, None, resp.get("changes", 0))
    return CallResult(name, args, False, None, str(resp.get("error")), resp.get("error_type"))


def _not_an_object(name: str) -> CallResult:
    return CallResult(name, {}, False, error="arguments must be a JSON object", error_type="InvalidArguments")


def _logworthy(resp: dict[str, Any]) -> bool:
    """Whether a call's response means the call must be replayed to rebuild its episode."""
    return bool(resp.get("ok") or resp.get("replay"))


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
        for each in turn. Here they are made one by one; :class:`WorkerExecutor` carries each worker's
        share in one round trip."""
        return [s.call(name, args) for s, name, args in items]

    def open_many(self, items: Iterable[tuple[Session, int]]) -> list[LoadFailure | None]:
        """Open a fresh episode for each ``(session, seed)``, as ``session.open(seed)`` does, in order;
        each entry of the answer is ``None`` (opened) or the :class:`LoadFailure` that ``open`` would
        raise. :class:`WorkerExecutor` carries each worker's share in one round trip."""
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


class LoadFailure(Exception):
    """A spec's code or state could not be loaded; ``response`` holds the typed error."""

    def __init__(self, response: dict[str, Any]):
        self.response = response
        super().__init__(f"{response.get('error_type')}: {response.get('error')}")


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

    def _send(self, req: dict[str, Any], *, logged: bool) -> dict[str, Any]:
        req["ep"] = self.id
        return self.executor.request(self, req, log=logged)

    def open(self, seed: int) -> None:
        """Start a fresh episode (the template state) with ``seed``; :class:`LoadFailure` if it fails."""
        self._opened(self._send(self._open_request(seed), logged=False))

    def _open_request(self, seed: int) -> dict[str, Any]:
        self.seed = seed
        self.log = []
        return {"op": "open", "key": self.key, "seed": seed, "ep": self.id}

    def _opened(self, resp: dict[str, Any]) -> None:
        if not resp.get("ok"):
            raise LoadFailure(resp)
        self.lost = None

    def call(self, name: str, arguments: dict[str, Any] | None) -> CallResult:
        if arguments is None:
            arguments = {}
        elif not isinstance(arguments, dict):
            return _not_an_object(name)
        return self.executor.call_result(self, name, arguments)

    def _result(self, name: str, arguments: dict[str, Any], resp: dict[str, Any]) -> CallResult:
        if resp.get("ok"):  # _call_result's first case, without the call
            result = resp["result"] if "result" in resp else json.loads(resp["result_json"])
            return CallResult(name, arguments, True, result, None, None, resp.get("changes", 0))
        return self._failed(name, arguments, resp)

    def _failed(self, name: str, arguments: dict[str, Any], resp: dict[str, Any]) -> CallResult:
        if resp.get("error_type") == "EpisodeLost":
            self.lost = str(resp.get("error"))
        return _call_result(name, arguments, resp)

    def mark(self) -> None:
        """Record table digests at the start of a turn (for ``unchanged`` checks)."""
        self._send({"op": "mark"}, logged=True)

    def check(self, checks: list[dict[str, Any]], reply: str, calls: list[str],
              attempted: list[str] | None = None) -> list[CheckResult]:
        """Score checks on the current state. ``calls``: successful calls of the turn (for
        ``require``); ``attempted``: every call tried (for ``forbid``; defaults to ``calls``)."""
        req = {"op": "check", "checks": checks, "reply": reply, "calls": calls,
               "attempted": calls if attempted is None else attempted}
        resp = self._send(req, logged=False)
        if not resp.get("ok"):
            detail = f"{resp.get('error_type')}: {resp.get('error')}"
            return [CheckResult(i, c.get("kind", "?"), False, detail) for i, c in enumerate(checks)]
        return [CheckResult(i, c.get("kind", "?"), r.get("passed") is True,
                            str(r.get("detail", ""))) for i, (c, r) in enumerate(zip(checks, resp["results"],
                                                                                    strict=True))]

    def digest(self) -> dict[str, Any]:
        return self._send({"op": "digest"}, logged=False)

    def dump(self, tables: list[str] | None = None, limit: int = 50) -> dict[str, Any]:
        return self._send({"op": "dump", "tables": tables, "limit": limit}, logged=False).get("tables", {})

    def close(self) -> None:
        try:
            self._send({"op": "close"}, logged=False)
        except Exception:
            pass


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
        except _Timeout:
            out = _error("Timeout", "the request took too long and was stopped", 500)
        except Exception as e:
            out = _error("InternalError", f"{type(e).__name__}: {e}", 2000)
        finally:
            self._lock.release()
        if out.__class__ is tuple:
            return CallResult(name, arguments, True, out[0], None, None, out[1])
        return session._result(name, arguments, out)  # type: ignore[arg-type]


# -- worker transport -----------------------------------------------------------------------------

_HEADER = struct.Struct(">I")
_MAX_FRAME = 64 << 20


def _write_frame(fd: int, payload: bytes) -> None:
    header = _HEADER.pack(len(payload))
    n = os.writev(fd, [header, payload])
    if n == len(header) + len(payload):
        return
    view = memoryview(header + payload)[n:]
    while view:
        view = view[os.write(fd, view):]


class _FrameReader:
    """Buffered reader of length-prefixed frames (one ``read`` per frame when it fits)."""

    def __init__(self, fd: int, max_frame: int = _MAX_FRAME):
        self.fd = fd
        self.max_frame = max_frame
        self.buf = bytearray()
        self.poll = select.poll()
        self.poll.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)

    def read(self, deadline: float | None = None) -> bytes:
        """The next frame; ``TimeoutError`` after ``deadline`` (monotonic), ``EOFError`` on close."""
        buf = self.buf
        if not buf:  # the common case: one read brings exactly one whole frame
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self.poll.poll(max(1, int(remaining * 1000) + 1)):
                    raise TimeoutError
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
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self.poll.poll(max(1, int(remaining * 1000) + 1)):
                    raise TimeoutError
            chunk = os.read(self.fd, max(want, 1 << 16))
            if not chunk:
                raise EOFError("the other side closed its pipe")
            buf += chunk


# The worker imports only this module and gym_envs.state: a stub package stands in for gym_envs, so
# its __init__ (gymnasium, numpy, pydantic) is not imported; -S skips site (PYTHONPATH carries the
# parent's sys.path). A cold worker starts in a fraction of the time and address space.
_WORKER_BOOT = (
    "import sys, types\n"
    "pkg = types.ModuleType('gym_envs'); pkg.__path__ = [sys.argv[1]]; sys.modules['gym_envs'] = pkg\n"
    "from gym_envs.executor import worker_main\n"
    "worker_main(sys.argv[2])\n"
)


class _Worker:
    """One worker process and its pipes."""

    def __init__(self, limits: Limits):
        env = {"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "PATH": os.environ.get("PATH", ""),
               "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
               "ENVWRIGHT_PURE_PYTHON": "0" if _state.speedups is not None else "1"}  # as this process
        self.proc = subprocess.Popen(
            [sys.executable, "-S", "-c", _WORKER_BOOT, os.path.dirname(os.path.abspath(__file__)),
             json.dumps(limits.to_dict())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0,
            env=env, close_fds=True, start_new_session=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.wfd = self.proc.stdin.fileno()
        self.reader = _FrameReader(self.proc.stdout.fileno())
        self.loaded: set[str] = set()
        self.sessions: dict[str, Session] = {}
        self.lock = threading.Lock()

    def roundtrip(self, payload: bytes, timeout_s: float) -> dict[str, Any]:
        """Send one request frame and parse the reply; any malformed reply is ``EOFError``, a
        request that could not be written (the worker was already gone) ``_NotDelivered``."""
        deadline = time.monotonic() + timeout_s
        try:
            _write_frame(self.wfd, payload)
        except OSError as e:
            raise _NotDelivered(str(e)) from None
        frame = self.reader.read(deadline)
        try:
            resp = _loads(frame)
        except (ValueError, RecursionError) as e:
            raise EOFError(f"the worker sent a malformed reply ({type(e).__name__})") from None
        if resp.__class__ is not dict:
            raise EOFError("the worker sent a malformed reply")
        return resp

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


class _NotDelivered(OSError):
    """A request could not be written: the worker died before it (replace it and send again)."""


_TRANSPORT_ERRORS = (EOFError, OSError, ValueError, KeyError, TypeError)


class WorkerExecutor(Executor):
    """Runs the engine in warm, rlimited worker processes (the default, for untrusted specs).

    Episodes are pinned to a worker. When a request times out or kills its
    worker, the worker is replaced and the other episodes it held are rebuilt
    by replaying their logged requests; the request itself gets a typed error
    (``Timeout`` / ``WorkerCrashed``) and its own episode is rebuilt too, so the
    agent can carry on. A worker that died between requests is found when the
    next request cannot be written; it is replaced and that request sent again.
    Liveness is never polled, so a request costs one write, one poll and one read.
    :meth:`call_many` and :meth:`open_many` send several episodes' requests in one
    round trip per worker; when a worker dies or hangs during such a batch, the
    batch is sent again one request at a time, so only the culprit gets the error.
    """

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
        if op == "check":
            return base * max(1, len(req.get("checks") or ())) + 1.0
        if op == "batch":
            return base * max(1, len(req["reqs"])) + 1.0
        return base + 1.0

    # -- public --------------------------------------------------------------------------------
    def _register(self, spec: Any) -> str:
        req = program_request(spec)
        self._specs[req["key"]] = _dumps(req).encode()
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
                    return _error("LoadError", "the worker could not be restarted", 500)
                except (TimeoutError, *_TRANSPORT_ERRORS) as e:
                    self._replace(i, w)
                    return _error("LoadError", f"the worker died while loading the spec: {type(e).__name__}",
                                  500)
        raise AssertionError("unreachable")

    def session(self, spec: Any, seed: int = 0, *, start: bool = True) -> Session:
        key = self._register(spec)
        s = Session(self, key, seed)
        s._worker_index = self._pick()  # type: ignore[attr-defined]
        if start:
            s.open(seed)
        return s

    def request(self, session: Session, req: dict[str, Any], *, log: bool = False,
                _retry: bool = True) -> dict[str, Any]:
        op = req["op"]
        try:
            payload = self._encode(req)
        except (TypeError, ValueError, RecursionError) as e:
            if op == "call":
                return _error("InvalidArguments", f"arguments are not JSON: {e}", self.limits.max_output_chars)
            return _error("ProtocolError", f"the request is not JSON: {e}", self.limits.max_output_chars)
        i = getattr(session, "_worker_index", 0)
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
                return _error("WorkerCrashed", "the worker could not be restarted", 500)
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
        return _error("Timeout", f"the call exceeded {self.limits.call_timeout_s:g} s; the worker was stopped "
                      "and replaced", 500)

    @staticmethod
    def _crashed() -> dict[str, Any]:
        return _error("WorkerCrashed", "the worker process died during the call (a resource limit was hit) and "
                      "was replaced", 500)

    def _encode(self, req: dict[str, Any]) -> bytes:
        if req["op"] == "call":  # the arguments as plain JSON, exactly as the in-process engine sees them
            args = req.get("arguments")
            if args.__class__ is dict:
                args = _copy_json(args)[0]
                ep, name = req["ep"], req["name"]
                if name.__class__ is str and ep.__class__ is str and len(req) == 4:
                    return (f'{{"op":"call","ep":{_json_str(ep)},"name":{_json_str(name)},'
                            f'"arguments":{_dumps(args)}}}').encode()
                req = {**req, "arguments": args}
        return _dumps(req).encode()

    def _replace(self, i: int, w: _Worker) -> None:
        w.kill()
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
                frames = [_dumps({"op": "open", "key": s.key, "seed": s.seed, "ep": s.id}).encode()]
                frames += [f if isinstance(f, bytes) else _dumps(f).encode() for f in s.log]
                payload = b'{"op":"batch","reqs":[' + b",".join(frames) + b"]}"
                resp = w.roundtrip(payload, self.limits.call_timeout_s * len(frames) + 5)
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
                out[j] = _not_an_object(name)
                continue
            try:
                payload = self._encode({"op": "call", "ep": s.id, "name": name, "arguments": args})
            except (TypeError, ValueError, RecursionError) as e:
                out[j] = _call_result(name, args, _error("InvalidArguments", f"arguments are not JSON: {e}", cap))
                continue
            by_worker[getattr(s, "_worker_index", 0)].append((j, payload))
        for i, entries in by_worker.items():
            results = self._batch(i, [items[j][0] for j, _ in entries], [p for _, p in entries])
            for (j, _), r in zip(entries, results, strict=True):  # _batch logged them
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
                payload = _dumps(s._open_request(seed)).encode()
            except (TypeError, ValueError, RecursionError) as e:  # as request() answers it
                out[j] = LoadFailure(_error("ProtocolError", f"the request is not JSON: {e}",
                                            self.limits.max_output_chars))
                continue
            by_worker[getattr(s, "_worker_index", 0)].append((j, payload))
        for i, entries in by_worker.items():
            sessions = [items[j][0] for j, _ in entries]
            results = self._batch(i, sessions, [p for _, p in entries], opening=True)
            for (j, _), r in zip(entries, results, strict=True):
                try:
                    items[j][0]._opened(r)
                except LoadFailure as e:
                    out[j] = e
        return out

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
                    return [_error("WorkerCrashed", "the worker could not be restarted", 500)] * len(payloads)
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
            payload = b'{"op":"batch","reqs":[' + b",".join(send) + b"]}"
            results = w.roundtrip(payload, self.limits.call_timeout_s * len(send) + 1)["results"]
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
        for w in self.workers:
            if w is not None:
                w.kill()
        self.workers = [None] * len(self.workers)


_LIVE: set[WorkerExecutor] = set()


@atexit.register
def _shutdown() -> None:
    for ex in list(_LIVE):
        ex.close()


_DEFAULTS: dict[tuple[str, int], Executor] = {}
_DEFAULTS_PID = os.getpid()


def make_executor(mode: str = "worker", *, workers: int = 1, limits: Limits | None = None) -> Executor:
    """A new executor: ``worker`` (isolated, default) or ``inprocess`` (trusted specs)."""
    if mode == "worker":
        return WorkerExecutor(workers, limits)
    if mode in ("inprocess", "in-process", "in_process"):
        return InProcessExecutor(limits)
    raise ValueError(f"unknown executor mode {mode!r}; use 'worker' or 'inprocess'")


def default_executor(mode: str = "worker") -> Executor:
    """A process-wide shared executor per mode (re-created after ``fork``)."""
    global _DEFAULTS_PID
    if os.getpid() != _DEFAULTS_PID:
        _DEFAULTS.clear()
        _DEFAULTS_PID = os.getpid()
    key = (mode, 1)
    if key not in _DEFAULTS:
        _DEFAULTS[key] = make_executor(mode)
    return _DEFAULTS[key]


# ============================================================================================
# Worker process entry point
# ============================================================================================


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

    The soft limit is set one second beyond ``used + cpu_seconds`` and moved on
    when less than ``cpu_seconds`` remains. CPU time cannot grow faster than wall
    time, so the CPU clock (a syscall) is read only every half second of wall time.
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


def _encode_response(resp: dict[str, Any]) -> bytes:
    """JSON of a response with call results spliced in raw (``result_json`` becomes ``result``)."""
    return _splice(resp).encode()


def _splice(resp: dict[str, Any]) -> str:
    text = resp.get("result_json")
    if text is not None and len(resp) == 3 and resp.get("ok") is True and resp.get("changes").__class__ is int:
        return f'{{"ok":true,"changes":{resp["changes"]},"result":{text}}}'
    if text is not None:
        head = _dumps({k: v for k, v in resp.items() if k != "result_json"})
        return head[:-1] + ("," if len(head) > 2 else "") + '"result":' + text + "}"
    results = resp.get("results")
    if results.__class__ is list and any(r.__class__ is dict and "result_json" in r for r in results):
        head = _dumps({k: v for k, v in resp.items() if k != "results"})
        body = ",".join(_splice(r) if r.__class__ is dict else _dumps(r) for r in results)
        return head[:-1] + ("," if len(head) > 2 else "") + '"results":[' + body + "]}"
    return _dumps(resp)


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
    signal.signal(signal.SIGALRM, _alarm)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    engine = Engine(limits, in_worker=True)
    heap = limits.memory_bytes // 2
    guard = StateDB(limits.sql)
    guard.host(f"PRAGMA hard_heap_limit = {int(heap)}")  # SQLite fails with NOMEM before RLIMIT_AS
    guard.close()
    _apply_rlimits(limits)
    sys.setrecursionlimit(limits.recursion_limit + 100)
    cpu = _CpuBudget(limits.cpu_seconds)
    reader = _FrameReader(rfd)
    while True:
        try:
            frame = reader.read()
        except EOFError:
            return
        req = _loads(frame)
        cpu.refresh()
        resp = engine.handle(req)
        try:
            payload = _encode_response(resp)
        except (TypeError, ValueError, RecursionError) as e:
            payload = _dumps(_error("InternalError", f"unserialisable response: {e}", 200)).encode()
        _write_frame(wfd, payload)


if __name__ == "__main__":
    worker_main(sys.argv[1] if len(sys.argv) > 1 else "{}")

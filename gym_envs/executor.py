"""The restricted executor: runs a spec's tool code and checks, in-process or in isolated workers.

Threat model
============
The ``code`` of an :class:`~gym_envs.spec.EnvSpec` and its ``python`` checks are
written by a model and are **untrusted**; so are the agent's tool-call
arguments. The host (trainer, generator, evaluator) is trusted. We defend:

1. **Confidentiality and integrity of the host.** Code is compiled with
   RestrictedPython under a policy that rejects ``_``-names, ``except*`` and the
   frame/code/traceback attributes (``gi_frame``, ``f_back``, ``tb_frame``...);
   at run time ``_getattr_`` additionally refuses ``str.format``/``format_map``,
   ``string.Formatter``, every attribute of an exception but ``args`` (so
   ``AttributeError.obj`` leaks nothing) and ``mro``-style walks. Builtins are a
   curated set without ``type``, ``globals``, ``eval``, ``exec``, ``open``,
   ``getattr``, ``vars``, ``id`` or ``hash``; ``sorted``, ``zip``, ``tuple``,
   ``bytes`` and friends are provided as guarded versions. ``import`` is an
   allow-list that hands out read-only public views of pure modules (``json``,
   ``math``, ``re``, ``datetime``, ``collections``, ``itertools``,
   ``statistics``, ``functools``, ``operator``, ``string``, ``decimal``,
   ``fractions``, ``bisect``, ``heapq``, ``hashlib``, ``random``); a module cannot
   be mutated (writes go through ``_write_``, which refuses them).
2. **Isolation between episodes.** Every episode re-executes the compiled
   module in fresh globals and fresh builtins, gets its own database rebuilt
   from a cached image, and its own ``random`` (a ``random.Random`` seeded from
   the episode seed), so ``random.seed(0)``, module-level caches or a mutated
   argument dict never reach another episode. Arguments enter and results leave
   as JSON: a ``str`` subclass or an object with a rigged ``__eq__`` becomes
   plain data (or an error), and a ``python`` check passes only when it
   returns the real ``True``.
3. **Availability.** In **worker** mode (the default) code runs in a separate
   process with rlimits (CPU seconds per request, address space, open files,
   processes, file size 0, no core dumps), a per-call wall-clock timeout
   enforced by the parent (which kills the worker, starts a fresh one and
   replays the surviving episodes' logged calls, so they continue), an
   in-worker interval timer for cheap recovery from plain loops, a low
   recursion limit, capped ``print`` output, capped result and exception text.
   SQL runs through :mod:`gym_envs.state` (authorizer, progress deadline,
   length and row limits). Arithmetic that could allocate without bound
   (``'a' * 10**10``, ``[0] * 10**9``, ``10**10**8``, huge shifts) is checked
   before it runs, in both modes.
4. **Reward integrity.** Checks run on a read-only view after the turn and
   never see the agent's objects; only JSON crosses back.

Not defended: the **in-process** mode has the same guards minus the process
boundary, so an infinite loop, a catastrophic regular expression or a memory
bomb that evades the arithmetic guard can stall or exhaust the host. Use it only
for trusted or already-validated specs. A tool that writes exactly the rows a
check looks for is judged by state: that is correct (the checks define the
task), not a hack. Set iteration order of strings depends on the process's hash
seed; workers run with ``PYTHONHASHSEED=0``.

Protocol
========
Both modes drive the same :class:`Engine` with JSON requests (``load``,
``open``, ``call``, ``mark``, ``check``, ``digest``, ``close``, ``batch``), so
they give identical results on the same trajectory. A worker speaks
length-prefixed JSON frames over its stdin/stdout pipes.
"""

from __future__ import annotations

import ast
import atexit
import collections
import datetime
import decimal
import fractions
import functools
import hashlib
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
import bisect
import heapq
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from types import MappingProxyType, SimpleNamespace
from typing import Any

from RestrictedPython import RestrictingNodeTransformer, compile_restricted_exec
from RestrictedPython.Guards import (
    full_write_guard,
    guarded_iter_unpack_sequence,
    guarded_unpack_sequence,
    safer_getattr,
)

from gym_envs.state import DbFacade, SqlLimits, StateDB, StateError

__all__ = [
    "CallResult",
    "CheckResult",
    "Engine",
    "Executor",
    "InProcessExecutor",
    "Limits",
    "Session",
    "ToolError",
    "WorkerExecutor",
    "default_executor",
    "make_executor",
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
    max_result_bytes: int = 65_536  #: size of a tool result as JSON
    max_sequence: int = 10_000_000  #: elements a guarded `*`, `range`, `bytes` may create
    max_int_bits: int = 100_000  #: bits of an integer produced by `**` or `<<`
    recursion_limit: int = 300  #: Python frames available to untrusted code
    sql: SqlLimits = field(default_factory=SqlLimits)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Limits:
        d = dict(d)
        sql = SqlLimits(**d.pop("sql", {}))
        return cls(sql=sql, **d)


# ============================================================================================
# Restricted compilation
# ============================================================================================

_BLOCKED_ATTRS = frozenset({
    "format", "format_map", "mro", "gi_frame", "gi_code", "gi_yieldfrom", "gi_running",
    "cr_frame", "cr_code", "cr_await", "ag_frame", "ag_code", "ag_await", "f_back", "f_globals",
    "f_locals", "f_builtins", "f_code", "tb_frame", "tb_next", "func_globals", "func_code",
    "im_func", "im_self", "with_traceback",
})
_IMPORT_ALLOW = {
    "json": json, "math": math, "re": re, "datetime": datetime, "collections": collections,
    "itertools": itertools, "statistics": statistics, "functools": functools,
    "operator": operator, "string": string, "decimal": decimal, "fractions": fractions,
    "bisect": bisect, "heapq": heapq, "hashlib": hashlib,
}
_STRING_HIDDEN = {"Formatter", "Template"}


class _Policy(RestrictingNodeTransformer):
    """RestrictedPython's policy plus size guards on ``*``, ``**``, ``<<`` and ``except:``."""

    _GUARDED = {ast.Mult: "mul", ast.Pow: "pow", ast.LShift: "lshift"}

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        node = self.node_contents_visit(node)
        op = self._GUARDED.get(type(node.op))
        if op is None:
            return node
        call = ast.Call(func=ast.Name("_binop_", ast.Load()),
                        args=[ast.Constant(op), node.left, node.right], keywords=[])
        return ast.copy_location(call, node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        op = self._GUARDED.get(type(node.op))
        if op is None or not isinstance(node.target, ast.Name):
            return super().visit_AugAssign(node)
        node = self.node_contents_visit(node)
        value = ast.Call(func=ast.Name("_binop_", ast.Load()),
                         args=[ast.Constant(op), ast.Name(node.target.id, ast.Load()), node.value],
                         keywords=[])
        assign = ast.Assign(targets=[ast.Name(node.target.id, ast.Store())], value=value)
        return ast.copy_location(assign, node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        # A bare `except:` would swallow the sandbox's own timeout; narrow it to Exception.
        if node.type is None:
            node.type = ast.copy_location(ast.Name("Exception", ast.Load()), node)
        return super().visit_ExceptHandler(node)


def compile_code(source: str, filename: str = "<envspec>") -> Any:
    """Compile restricted source; the result has ``.code`` (None on failure) and ``.errors``."""
    return compile_restricted_exec(source, filename=filename, policy=_Policy)


def _guarded_getattr(obj: Any, name: str, default: Any = None) -> Any:
    if type(name) is not str:
        raise SandboxViolation("attribute names must be str")
    if name in _BLOCKED_ATTRS:
        raise SandboxViolation(f"attribute {name!r} is not allowed")
    if isinstance(obj, BaseException) and name != "args":
        raise SandboxViolation(f"only '.args' of an exception may be read, not {name!r}")
    if isinstance(obj, type) and issubclass(obj, BaseException):
        raise SandboxViolation("attributes of exception classes may not be read")
    return safer_getattr(obj, name, default)


def _guarded_getitem(obj: Any, index: Any) -> Any:
    if isinstance(index, str) and index.startswith("__"):
        raise SandboxViolation(f"item {index!r} is not allowed")
    return obj[index]


def _make_binop(limits: Limits) -> Callable[[str, Any, Any], Any]:
    max_seq, max_bits = limits.max_sequence, limits.max_int_bits

    def _size(x: Any) -> int | None:
        if isinstance(x, str | bytes | bytearray | list | tuple):
            return len(x)
        return None

    def binop(op: str, a: Any, b: Any) -> Any:
        if op == "mul":
            for seq, n in ((a, b), (b, a)):
                size = _size(seq)
                if size is not None and isinstance(n, int) and size * n > max_seq:
                    raise ResourceLimit(f"sequence repetition would create {size * n:,} elements "
                                        f"(limit {max_seq:,})")
            return a * b
        if op == "pow":
            if isinstance(a, int) and isinstance(b, int) and b > 0 and abs(a) > 1:
                if b * abs(a).bit_length() > max_bits:
                    raise ResourceLimit(f"integer power would exceed {max_bits:,} bits")
            return a**b
        if isinstance(a, int) and isinstance(b, int) and b > max_bits:
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


def _frozen_module(mod: Any) -> SimpleNamespace:
    names = {k: getattr(mod, k) for k in dir(mod) if not k.startswith("_")}
    if mod is string:
        for k in _STRING_HIDDEN:
            names.pop(k, None)
    return SimpleNamespace(**names)


_FROZEN = {name: _frozen_module(mod) for name, mod in _IMPORT_ALLOW.items()}


def _random_module(rng: random.Random) -> SimpleNamespace:
    names = ("random", "randint", "randrange", "choice", "choices", "shuffle", "sample", "uniform",
             "gauss", "normalvariate", "triangular", "betavariate", "expovariate", "seed",
             "getrandbits")
    return SimpleNamespace(**{n: getattr(rng, n) for n in names}, Random=None)


def _make_builtins(limits: Limits, rng: random.Random) -> dict[str, Any]:
    max_seq = limits.max_sequence
    random_mod = _random_module(rng)

    def guarded_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (),
                       level: int = 0) -> Any:
        if level != 0:
            raise SandboxViolation("relative imports are not allowed")
        if name == "random":
            return random_mod
        mod = _FROZEN.get(name)
        if mod is None:
            raise SandboxViolation(f"import of {name!r} is not allowed; allowed modules: "
                                   f"{sorted([*_FROZEN, 'random'])}")
        return mod

    def safe_range(*args: int) -> range:
        r = range(*args)
        if len(r) > max_seq:
            raise ResourceLimit(f"range of {len(r):,} elements exceeds {max_seq:,}")
        return r

    def safe_bytes(*args: Any) -> bytes:
        if args and isinstance(args[0], int) and args[0] > max_seq:
            raise ResourceLimit(f"bytes({args[0]:,}) exceeds {max_seq:,}")
        return bytes(*args)

    b: dict[str, Any] = {
        "None": None, "True": True, "False": False,
        "abs": abs, "all": all, "any": any, "bool": bool, "callable": callable, "chr": chr,
        "divmod": divmod, "enumerate": enumerate, "filter": filter, "float": float,
        "frozenset": frozenset, "int": int, "isinstance": isinstance, "len": len, "list": list,
        "map": map, "max": max, "min": min, "next": next, "ord": ord, "range": safe_range,
        "repr": repr, "reversed": reversed, "round": round, "set": set, "sorted": sorted,
        "str": str, "sum": sum, "tuple": tuple, "zip": zip, "dict": dict, "bytes": safe_bytes,
        "hex": hex, "oct": oct, "bin": bin, "slice": slice, "iter": iter, "complex": complex,
        "pow": lambda a, b, m=None: pow(a, b, m) if m is not None else _make_binop(limits)("pow", a, b),
        "__import__": guarded_import,
        "ToolError": ToolError,
    }
    for exc in (Exception, ValueError, KeyError, TypeError, IndexError, ZeroDivisionError,
                ArithmeticError, LookupError, RuntimeError, StopIteration, AttributeError,
                NotImplementedError, OverflowError, AssertionError):
        b[exc.__name__] = exc
    return b


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


# ============================================================================================
# The engine: the same code in both modes
# ============================================================================================


@dataclass
class _Program:
    key: str
    code: Any
    tool_schemas: dict[str, dict[str, Any]]
    image: bytes
    check_code: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Episode:
    program: _Program
    state: StateDB
    tools: dict[str, Callable[..., Any]]
    globals: dict[str, Any]
    marks: dict[str, str] = field(default_factory=dict)


def _cap(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n] + f"...[{len(text) - n} more characters]"


def _error(kind: str, message: str, cap: int) -> dict[str, Any]:
    return {"ok": False, "error_type": kind, "error": _cap(message, cap)}


def _describe(exc: BaseException, cap: int) -> dict[str, Any]:
    if isinstance(exc, ToolError):
        return _error("ToolError", str(exc.args[0]) if exc.args else "tool error", cap)
    if isinstance(exc, StateError):
        return _error("SQLError", str(exc), cap)
    if isinstance(exc, _Timeout):
        return _error("Timeout", "the call took too long and was stopped", cap)
    if isinstance(exc, SandboxViolation):
        return _error("SandboxViolation", str(exc), cap)
    if isinstance(exc, ResourceLimit | MemoryError | RecursionError):
        return _error("ResourceLimit", f"{type(exc).__name__}: {exc}", cap)
    try:
        msg = str(exc)
    except Exception:  # a rigged __str__
        msg = "<unprintable>"
    return _error("RuntimeError", f"{type(exc).__name__}: {_cap(msg, cap)}", cap)


class Engine:
    """Holds compiled programs, template images and live episodes; answers JSON requests."""

    def __init__(self, limits: Limits | None = None, *, in_worker: bool = False):
        self.limits = limits or Limits()
        self.in_worker = in_worker
        self.programs: dict[str, _Program] = {}
        self.episodes: dict[str, _Episode] = {}
        self._binop = _make_binop(self.limits)
        self._inplace = _inplacevar(self._binop)

    # -- dispatch ------------------------------------------------------------------------------
    def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        """Answer one request; never raises (a failure is a typed error response)."""
        op = req.get("op")
        try:
            if op == "batch":
                return {"ok": True, "results": [self.handle(r) for r in req["reqs"]]}
            fn = getattr(self, f"_op_{op}", None)
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
                    return _error("SchemaError", f"schema_sql may only create tables and indexes, "
                                  f"found a {stmt_kw}", cap)
            db.script(req.get("seed_sql", ""), mode="rw")
        except StateError as e:
            db.close()
            return _error("SchemaError", str(e), cap)
        prog = _Program(key=key, code=result.code, tool_schemas=req.get("tools", {}), image=db.image())
        self.programs[key] = prog
        ep = None
        try:
            ep = self._new_episode(prog, seed=0)
            missing = [n for n in prog.tool_schemas if not callable(ep.tools.get(n))]
        except BaseException as e:
            self.programs.pop(key, None)
            return _describe(e, cap) | {"error_type": "LoadError"}
        finally:
            if ep is not None:
                ep.state.close()
        counts = db.row_counts()
        db.close()
        if missing:
            self.programs.pop(key, None)
            return _error("LoadError", f"the code defines no function for tools {missing}", cap)
        return {"ok": True, "cached": False, "tables": counts, "image_bytes": len(prog.image)}

    # -- episodes ------------------------------------------------------------------------------
    def _new_episode(self, prog: _Program, seed: int) -> _Episode:
        state = StateDB(self.limits.sql)
        state.load_image(prog.image)
        rng = random.Random(seed)
        glb = self._globals(rng)
        exec(prog.code, glb)  # noqa: S102 - restricted code object, guarded globals
        tools = {name: glb.get(name) for name in prog.tool_schemas}
        return _Episode(program=prog, state=state, tools=tools, globals=glb)  # type: ignore[arg-type]

    def _globals(self, rng: random.Random) -> dict[str, Any]:
        cap = self.limits.max_output_chars
        return {
            "__builtins__": _make_builtins(self.limits, rng),
            "__name__": "envspec",
            "__metaclass__": type,
            "_getattr_": _guarded_getattr,
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

    def _op_open(self, req: dict[str, Any]) -> dict[str, Any]:
        prog = self.programs.get(req["key"])
        if prog is None:
            return _error("ProtocolError", "program not loaded", 200)
        old = self.episodes.pop(req["ep"], None)
        if old is not None:
            old.state.close()
        with self._deadline():
            self.episodes[req["ep"]] = self._new_episode(prog, int(req.get("seed") or 0))
        return {"ok": True}

    def _op_close(self, req: dict[str, Any]) -> dict[str, Any]:
        ep = self.episodes.pop(req["ep"], None)
        if ep is not None:
            ep.state.close()
        return {"ok": True}

    def _episode(self, req: dict[str, Any]) -> _Episode:
        ep = self.episodes.get(req["ep"])
        if ep is None:
            raise KeyError(f"no open episode {req['ep']!r}")
        return ep

    # -- calls ---------------------------------------------------------------------------------
    def _op_call(self, req: dict[str, Any]) -> dict[str, Any]:
        cap = self.limits.max_output_chars
        ep = self.episodes.get(req["ep"])
        if ep is None:
            return _error("ProtocolError", f"no open episode {req['ep']!r}", cap)
        name = req["name"]
        schema = ep.program.tool_schemas.get(name)
        if schema is None:
            return _error("UnknownTool", f"no tool named {name!r}; available tools: "
                          f"{sorted(ep.program.tool_schemas)}", cap)
        args = req.get("arguments") or {}
        if not isinstance(args, dict):
            return _error("InvalidArguments", "arguments must be a JSON object", cap)
        problems = validate_arguments(schema, args)
        if problems:
            return _error("InvalidArguments", "; ".join(problems), cap)
        args = json.loads(json.dumps(args))  # the tool gets its own copy
        db = DbFacade(ep.state, read_only=False, timeout_s=self._sql_timeout)
        before = ep.state.conn.total_changes
        ep.state.host("SAVEPOINT call")
        try:
            with self._deadline():
                value = ep.tools[name](db, **args)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:
            self._rollback(ep)
            return _describe(e, cap)
        try:
            text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as e:
            self._rollback(ep)
            return _error("NotJSON", f"the tool returned a value that is not plain JSON "
                          f"({type(e).__name__}: {_cap(str(e), 200)})", cap)
        if len(text) > self.limits.max_result_bytes:
            self._rollback(ep)
            return _error("ResourceLimit", f"the tool result is too large ({len(text):,} characters > "
                          f"{self.limits.max_result_bytes:,})", cap)
        ep.state.host("RELEASE call")
        return {"ok": True, "result_json": text, "changes": ep.state.conn.total_changes - before}

    @staticmethod
    def _rollback(ep: _Episode) -> None:
        ep.state.host("ROLLBACK TO call")
        ep.state.host("RELEASE call")

    def _sql_timeout(self) -> float:
        return self.limits.sql.statement_timeout_s

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
        names = req.get("tables") or ep.state.tables()
        limit = int(req.get("limit", 50))
        out = {}
        for t in names:
            if t in ep.state.tables():
                cols = [r[1] for r in ep.state.host(f'PRAGMA table_info("{t}")')]
                rows = ep.state.host(f'SELECT * FROM "{t}" LIMIT ?', (limit,))
                out[t] = {"columns": cols, "rows": [list(r) for r in rows],
                          "count": ep.state.row_counts()[t]}
        return {"ok": True, "tables": json.loads(json.dumps(out, default=repr))}

    def _op_check(self, req: dict[str, Any]) -> dict[str, Any]:
        ep = self._episode(req)
        reply = req.get("reply") or ""
        calls = req.get("calls") or []
        attempted = req.get("attempted") or calls
        results = [self._check(ep, c, reply, calls, attempted) for c in req["checks"]]
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
        with self._deadline():
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
        glb = self._globals(random.Random(0))
        db = DbFacade(ep.state, read_only=True, timeout_s=self._sql_timeout)
        with self._deadline():
            exec(compiled, glb)  # noqa: S102
            fn = glb.get("check")
            if not callable(fn):
                return {"passed": False, "detail": "the check code defines no check(db)"}
            value = fn(db)
        if value is True:
            return {"passed": True, "detail": "check(db) returned True"}
        shown = repr(value) if type(value) in (bool, int, float, str, type(None)) else type(value).__name__
        return {"passed": False, "detail": f"check(db) returned {_cap(shown, 100)}, not True"}

    # -- timing --------------------------------------------------------------------------------
    def _deadline(self) -> Any:
        return _SoftDeadline(self.limits.call_timeout_s if self.in_worker else 0.0)

    def _op_ping(self, req: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "pid": os.getpid()}


def _ddl_keywords(db: StateDB) -> list[str]:
    return [r[0] for r in db.host("SELECT type FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")]


class _SoftDeadline:
    """In a worker: an interval timer that raises :class:`_Timeout` in the running code."""

    __slots__ = ("seconds",)

    def __init__(self, seconds: float):
        self.seconds = seconds

    def __enter__(self) -> None:
        if self.seconds > 0:
            signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc: Any) -> None:
        if self.seconds > 0:
            signal.setitimer(signal.ITIMER_REAL, 0)


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout()


# ============================================================================================
# Host side: results, sessions and executors
# ============================================================================================


@dataclass
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
        return asdict(self)


@dataclass
class CheckResult:
    """One check's verdict after a turn."""

    index: int
    kind: str
    passed: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def program_request(spec: Any) -> dict[str, Any]:
    """The ``load`` request for an :class:`EnvSpec` (keyed by a hash of what the engine needs)."""
    tools = {t.name: t.parameters for t in spec.tools}
    body = {"code": spec.code, "schema_sql": spec.state.schema_sql, "seed_sql": spec.state.seed_sql,
            "tools": tools}
    key = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    return {"op": "load", "key": key, **body}


class Executor:
    """Base class: something that can answer engine requests for sessions."""

    mode = "abstract"

    def request(self, session: Session, req: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def load(self, spec: Any) -> dict[str, Any]:
        """Compile a spec and build its template database; returns the load response."""
        raise NotImplementedError

    def session(self, spec: Any, seed: int = 0) -> Session:
        """Open a fresh episode of ``spec``."""
        load = self.load(spec)
        if not load.get("ok"):
            raise LoadFailure(load)
        s = Session(self, program_request(spec)["key"], seed)
        s.open(seed)
        return s

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
        self.log: list[dict[str, Any]] = []  # state-changing requests, for replay after a crash
        self.lost: str | None = None

    def _send(self, req: dict[str, Any], *, logged: bool) -> dict[str, Any]:
        req["ep"] = self.id
        resp = self.executor.request(self, req)
        if logged and resp.get("ok") and req["op"] != "open":
            self.log.append(req)
        return resp

    def open(self, seed: int) -> None:
        self.seed = seed
        self.log = []
        resp = self._send({"op": "open", "key": self.key, "seed": seed}, logged=False)
        if not resp.get("ok"):
            raise LoadFailure(resp)

    def call(self, name: str, arguments: dict[str, Any] | None) -> CallResult:
        args = arguments if isinstance(arguments, dict) else {}
        if arguments is not None and not isinstance(arguments, dict):
            return CallResult(name, {}, False, error="arguments must be a JSON object",
                              error_type="InvalidArguments")
        try:
            json.dumps(args, allow_nan=False)
        except (TypeError, ValueError) as e:
            return CallResult(name, {}, False, error=f"arguments are not JSON: {e}", error_type="InvalidArguments")
        resp = self._send({"op": "call", "name": name, "arguments": args}, logged=True)
        return _call_result(name, args, resp)

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


def _call_result(name: str, args: dict[str, Any], resp: dict[str, Any]) -> CallResult:
    if resp.get("ok"):
        return CallResult(name, args, True, result=json.loads(resp["result_json"]),
                          changes=int(resp.get("changes", 0)))
    return CallResult(name, args, False, error=str(resp.get("error")), error_type=resp.get("error_type"))


class InProcessExecutor(Executor):
    """Runs the engine in this process: same guards, no process boundary (trusted specs only)."""

    mode = "inprocess"

    def __init__(self, limits: Limits | None = None):
        self.engine = Engine(limits)
        self._lock = threading.Lock()

    def load(self, spec: Any) -> dict[str, Any]:
        req = program_request(spec)
        with self._lock:
            return self.engine.handle(req)

    def request(self, session: Session, req: dict[str, Any]) -> dict[str, Any]:
        with self._lock:  # the engine copies arguments through JSON, as the worker transport does
            return self.engine.handle(req)


# -- worker transport -----------------------------------------------------------------------------

_HEADER = struct.Struct(">I")
_MAX_FRAME = 64 << 20


def _write_frame(fd: int, payload: bytes) -> None:
    data = _HEADER.pack(len(payload)) + payload
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_exact(fd: int, n: int) -> bytes:
    chunks = []
    while n:
        chunk = os.read(fd, n)
        if not chunk:
            raise EOFError("worker closed its pipe")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks) if len(chunks) != 1 else chunks[0]


class _Worker:
    """One worker process and its pipes."""

    def __init__(self, limits: Limits):
        env = {"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "PATH": os.environ.get("PATH", ""),
               "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gym_envs.executor", json.dumps(limits.to_dict())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0,
            env=env, close_fds=True, start_new_session=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.wfd = self.proc.stdin.fileno()
        self.rfd = self.proc.stdout.fileno()
        self.poll = select.poll()
        self.poll.register(self.rfd, select.POLLIN | select.POLLHUP | select.POLLERR)
        self.loaded: set[str] = set()
        self.sessions: dict[str, Session] = {}
        self.lock = threading.Lock()

    def roundtrip(self, payload: bytes, timeout_s: float) -> bytes:
        _write_frame(self.wfd, payload)
        if not self.poll.poll(int(timeout_s * 1000)):
            raise TimeoutError
        (n,) = _HEADER.unpack(_read_exact(self.rfd, 4))
        if n > _MAX_FRAME:
            raise EOFError("worker sent an oversized frame")
        return _read_exact(self.rfd, n)

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


class WorkerExecutor(Executor):
    """Runs the engine in warm, rlimited worker processes (the default, for untrusted specs).

    Episodes are pinned to a worker. When a request times out or kills its
    worker, the worker is replaced and the other episodes it held are rebuilt
    by replaying their logged requests; the request itself gets a typed error
    (``Timeout`` / ``WorkerCrashed``) and its own episode is rebuilt too, so the
    agent can carry on.
    """

    mode = "worker"

    def __init__(self, n_workers: int = 1, limits: Limits | None = None):
        if n_workers < 1:
            raise ValueError("n_workers must be >= 1")
        self.limits = limits or Limits()
        self.workers: list[_Worker | None] = [None] * n_workers
        self._specs: dict[str, dict[str, Any]] = {}
        self._rr = itertools.count()
        self._closed = False
        self.restarts = 0
        _LIVE.add(self)

    # -- worker management ---------------------------------------------------------------------
    def _worker(self, i: int) -> _Worker:
        w = self.workers[i]
        if w is None or not w.alive():
            w = self.workers[i] = _Worker(self.limits)
        return w

    def _pick(self) -> int:
        return next(self._rr) % len(self.workers)

    def _ensure_loaded(self, w: _Worker, key: str) -> dict[str, Any]:
        if key in w.loaded:
            return {"ok": True, "cached": True}
        resp = self._raw(w, self._specs[key])
        if resp.get("ok"):
            w.loaded.add(key)
        return resp

    def _raw(self, w: _Worker, req: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        payload = json.dumps(req, separators=(",", ":")).encode()
        out = w.roundtrip(payload, timeout_s or self._timeout_for(req))
        return json.loads(out)

    def _timeout_for(self, req: dict[str, Any]) -> float:
        base = self.limits.call_timeout_s
        if req.get("op") == "load":
            return base * 5 + 5
        if req.get("op") == "batch":
            return base * max(1, len(req["reqs"])) + 1
        return base + 1.0

    # -- public --------------------------------------------------------------------------------
    def load(self, spec: Any) -> dict[str, Any]:
        req = program_request(spec)
        self._specs[req["key"]] = req
        i = self._pick()
        w = self._worker(i)
        with w.lock:
            try:
                return self._ensure_loaded(w, req["key"])
            except (TimeoutError, EOFError, OSError) as e:
                self._replace(i, w)
                return _error("LoadError", f"the worker died while loading the spec: {type(e).__name__}", 500)

    def session(self, spec: Any, seed: int = 0) -> Session:
        req = program_request(spec)
        self._specs[req["key"]] = req
        s = Session(self, req["key"], seed)
        s._worker_index = self._pick()  # type: ignore[attr-defined]
        s.open(seed)
        return s

    def request(self, session: Session, req: dict[str, Any]) -> dict[str, Any]:
        i = getattr(session, "_worker_index", 0)
        w = self._worker(i)
        with w.lock:
            if req["op"] == "open":
                w.sessions[session.id] = session
                loaded = self._ensure_loaded(w, session.key)
                if not loaded.get("ok"):
                    return loaded
            elif req["op"] == "close":
                w.sessions.pop(session.id, None)
            elif session.id not in w.sessions:
                # the worker was replaced since: rebuild this episode first
                w.sessions[session.id] = session
                self._restore(w, session)
            try:
                return self._raw(w, req)
            except TimeoutError:
                self._replace(i, w)
                return _error("Timeout", f"the call exceeded {self.limits.call_timeout_s:g} s; "
                              "the worker was stopped and replaced", 500)
            except (EOFError, OSError, ValueError):
                self._replace(i, w)
                return _error("WorkerCrashed", "the worker process died during the call (a resource "
                              "limit was hit) and was replaced", 500)

    def _replace(self, i: int, w: _Worker) -> None:
        w.kill()
        self.restarts += 1
        new = self._worker(i)
        for sid, s in list(w.sessions.items()):
            new.sessions[sid] = s
            self._restore(new, s)

    def _restore(self, w: _Worker, s: Session) -> None:
        try:
            self._ensure_loaded(w, s.key)
            reqs = [{"op": "open", "key": s.key, "seed": s.seed, "ep": s.id}, *s.log]
            self._raw(w, {"op": "batch", "reqs": reqs})
        except (TimeoutError, EOFError, OSError):
            w.kill()
            s.lost = "the episode could not be rebuilt after a worker crash"

    def call_many(self, items: Iterable[tuple[Session, str, dict[str, Any]]]) -> list[CallResult]:
        """Several sessions' calls with one round trip per worker (sessions must be live)."""
        items = list(items)
        by_worker: dict[int, list[int]] = collections.defaultdict(list)
        for j, (s, _, _) in enumerate(items):
            by_worker[getattr(s, "_worker_index", 0)].append(j)
        out: list[CallResult | None] = [None] * len(items)
        for i, idxs in by_worker.items():
            reqs = [{"op": "call", "ep": items[j][0].id, "name": items[j][1], "arguments": items[j][2]}
                    for j in idxs]
            w = self._worker(i)
            with w.lock:
                try:
                    resp = self._raw(w, {"op": "batch", "reqs": reqs})
                    results = resp["results"]
                except (TimeoutError, EOFError, OSError, ValueError):
                    self._replace(i, w)
                    results = [_error("WorkerCrashed", "the batch failed; the worker was replaced", 200)] * len(idxs)
            for j, r in zip(idxs, results, strict=True):
                s, name, args = items[j]
                if r.get("ok"):
                    s.log.append({"op": "call", "ep": s.id, "name": name, "arguments": args})
                out[j] = _call_result(name, args, r)
        return out  # type: ignore[return-value]

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
            cur_soft, cur_hard = resource.getrlimit(which)
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


def _cpu_budget(limits: Limits) -> None:
    import resource

    used = int(time.process_time()) + 1
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (used + limits.cpu_seconds, resource.RLIM_INFINITY))
    except (ValueError, OSError):
        pass


def worker_main(limits_json: str) -> None:
    """Serve engine requests on stdin/stdout until EOF."""
    limits = Limits.from_dict(json.loads(limits_json))
    rfd, wfd = sys.stdin.fileno(), sys.stdout.fileno()
    signal.signal(signal.SIGALRM, _alarm)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    engine = Engine(limits, in_worker=True)
    _apply_rlimits(limits)
    sys.setrecursionlimit(limits.recursion_limit + 100)
    while True:
        try:
            head = _read_exact(rfd, 4)
        except EOFError:
            return
        (n,) = _HEADER.unpack(head)
        req = json.loads(_read_exact(rfd, n))
        _cpu_budget(limits)
        resp = engine.handle(req)
        try:
            payload = json.dumps(resp, separators=(",", ":"), ensure_ascii=False).encode()
        except (TypeError, ValueError) as e:
            payload = json.dumps(_error("InternalError", f"unserialisable response: {e}", 200)).encode()
        _write_frame(wfd, payload)


if __name__ == "__main__":
    worker_main(sys.argv[1] if len(sys.argv) > 1 else "{}")

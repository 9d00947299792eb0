"""Restricted compilation and the run-time guards that every piece of spec code runs under.

* :class:`Policy` is RestrictedPython's policy plus our rules: no ``yield`` (a generator's cleanup
  would run whenever the garbage collector frees it, outside any call), ``*``, ``**``, ``<<`` and ``%``
  through ``_binop_`` (the size guards of :mod:`~gym_envs.sandbox.sizes`; ``%`` for the addresses
  :mod:`~gym_envs.sandbox.reprs` removes), f-strings through ``_fstring_``, bare ``except:`` narrowed to
  ``Exception``; :func:`compile_code` compiles with it.
* :func:`guarded_getattr` (``_getattr_``) refuses ``_`` names, frame/code/traceback attributes,
  ``format``/``format_map``, exception attributes but ``args`` and ``register`` on ABCs, and refuses or
  wraps the attributes of shared classes that reach the clock, the host's time zone or a process-wide
  random generator (:data:`SHARED_ATTRIBUTES`).
* :func:`guarded_getitem`, :func:`make_inplacevar` (augmented assignment, the guarded operators through
  ``_binop_``), :func:`guarded_format` (f-string fields with a format spec), :data:`write_guard` and
  :class:`PrintCollector` (printed text, addresses removed) complete the names the compiled code calls.
"""

from __future__ import annotations

import abc
import ast
import datetime
import operator
import random
import re
import statistics
from collections.abc import Callable
from typing import Any

from RestrictedPython import RestrictingNodeTransformer, compile_restricted_exec
from RestrictedPython.Guards import full_write_guard
from RestrictedPython.transformer import INSPECT_ATTRIBUTES

from gym_envs.errors import SandboxViolation
from gym_envs.sandbox.facade import DbFacade
from gym_envs.sandbox.reprs import scrub
from gym_envs.sandbox.surface import StandIn

__all__ = [
    "BLOCKED_ATTRS",
    "SHARED_ATTRIBUTES",
    "Policy",
    "PrintCollector",
    "compile_code",
    "constant_index_ok",
    "guarded_delitem",
    "guarded_format",
    "guarded_getattr",
    "guarded_getitem",
    "guarded_setitem",
    "host_time_directive",
    "make_inplacevar",
    "write_guard",
]

BLOCKED_ATTRS = frozenset({
    "format", "format_map", "mro", "gi_frame", "gi_code", "gi_yieldfrom", "gi_running", "gi_suspended",
    "cr_frame", "cr_code", "cr_await", "cr_origin", "ag_frame", "ag_code", "ag_await", "f_back",
    "f_globals", "f_locals", "f_builtins", "f_code", "f_trace", "f_generator", "tb_frame", "tb_next",
    "co_code", "func_globals", "func_code", "im_func", "im_self", "with_traceback",
}) | INSPECT_ATTRIBUTES
_MISSING = object()


def _public(t: type) -> frozenset[str]:
    return frozenset(n for n in dir(t) if not n.startswith("_") and n not in BLOCKED_ATTRS)


#: attribute names that need no further checks on objects of exactly these types
_FAST_ATTRS: dict[type, frozenset[str]] = {
    t: _public(t) for t in (dict, list, str, tuple, set, frozenset, int, float, bytes, bool)
}
_FAST_ATTRS[DbFacade] = frozenset({"query", "execute"})


class Policy(RestrictingNodeTransformer):
    """RestrictedPython's policy plus: no ``yield``, ``*``, ``**``, ``<<`` and ``%`` through ``_binop_``, f-strings
    through ``_fstring_``, no bare ``except:``, and no annotations.

    Annotations are dropped, not refused: they change nothing when code runs, but they are kept as values
    (``__annotations__``) that library code may later read as source. ``typing.get_type_hints``, which
    ``functools.singledispatch`` calls, ``eval``s a string annotation with the real builtins, outside every guard.
    Without annotations, no string reaches such code as source text."""

    _GUARDED = {ast.Mult: "mul", ast.Pow: "pow", ast.LShift: "lshift", ast.Mod: "mod"}

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.annotation = None
        return super().visit_arg(node)  # type: ignore[return-value]

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.returns = None
        return super().visit_FunctionDef(node)  # type: ignore[return-value]

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        # `x: T = v` -> `x = v`; a bare `x: T` (it only records the annotation) -> nothing
        if node.value is None:
            return ast.copy_location(ast.Pass(), node)
        assign = ast.Assign(targets=[node.target], value=node.value)
        return self.visit(ast.fix_missing_locations(ast.copy_location(assign, node)))  # type: ignore[no-any-return]

    def visit_Yield(self, node: ast.Yield) -> ast.AST:
        # A generator that is never finished runs its `finally:` (and `except GeneratorExit:`) when it is
        # freed, and the garbage collector frees a generator in a reference cycle whenever it runs: in a
        # later call, another episode, or while the host prepares a statement. No generator functions, so
        # spec code runs only inside its own call. (Generator expressions stay: their frames have no
        # handlers, so freeing one runs no spec code.)
        self.error(node, "yield is not allowed: generator functions could run their cleanup code outside "
                         "the call; return a list instead")
        return node

    def visit_YieldFrom(self, node: ast.YieldFrom) -> ast.AST:
        self.error(node, "yield from is not allowed: generator functions could run their cleanup code "
                         "outside the call; return a list instead")
        return node

    def visit_FormattedValue(self, node: ast.FormattedValue) -> ast.AST:
        # f"{value:spec}" calls value.__format__(spec), which for dates is strftime: through _format_ (guarded_format)
        node = self.node_contents_visit(node)
        if node.format_spec is None:
            return node
        call = ast.Call(func=ast.Name("_format_", ast.Load()),
                        args=[node.value, node.format_spec, ast.Constant(node.conversion)], keywords=[])
        return ast.fix_missing_locations(ast.copy_location(ast.FormattedValue(call, -1, None), node))

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        # f"...{obj}...": the text of an object may hold its address; the whole string goes through _fstring_
        node = self.node_contents_visit(node)
        if not any(isinstance(v, ast.FormattedValue) for v in node.values):
            return node
        call = ast.Call(func=ast.Name("_fstring_", ast.Load()), args=[node], keywords=[])
        return ast.fix_missing_locations(ast.copy_location(call, node))

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
        # `x[0]`, `row["name"]`: a constant index that guarded_getitem lets through (it refuses
        # '__' strings and looks at nothing else) needs no call at run time.
        index = node.slice
        if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub) \
                and isinstance(index.operand, ast.Constant) and index.operand.value.__class__ in (int, float):
            plain = True  # x[-1]
        else:
            plain = isinstance(index, ast.Constant) and constant_index_ok(index.value)
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
    return compile_restricted_exec(source, filename=filename, policy=Policy)


# -- attributes of shared classes that reach process-wide state ----------------------------------------

_CLOCK = ("the clock is not available to tool code (an episode must replay exactly): use a fixed date such "
          "as datetime.date(2024, 6, 10)")
_LOCAL_TIME = "would use the host's time zone; pass a tzinfo such as datetime.timezone.utc"


def _refuse(message: str) -> Callable[[Any, str], Any]:
    def handler(obj: Any, name: str) -> Any:
        raise SandboxViolation(f"{name}(): {message}")
    return handler


def _checked(problem: Callable[[bool, tuple[Any, ...], dict[str, Any]], str | None]) -> Callable[[Any, str], Any]:
    """A handler that returns the real attribute wrapped: ``problem(unbound, args, kwargs)`` names what is wrong
    with a call (``unbound``: the attribute was read from the class, so ``args[0]`` is the instance)."""
    def handler(obj: Any, name: str) -> Any:
        real = getattr(obj, name)
        unbound = isinstance(obj, type)

        def call(*args: Any, **kwargs: Any) -> Any:
            why = problem(unbound, args, kwargs)
            if why is not None:
                raise SandboxViolation(f"{name}(): {why}")
            return real(*args, **kwargs)
        return call
    return handler


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], i: int, name: str) -> Any:
    return kwargs[name] if name in kwargs else args[i] if len(args) > i else None


def _tz_missing(unbound: bool, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    return _LOCAL_TIME if _arg(args, kwargs, 1, "tz") is None else None  # fromtimestamp(timestamp, tz)


def _timestamp(obj: Any, name: str) -> Any:
    """``datetime.timestamp``: a naive datetime means the host's local time."""
    if isinstance(obj, type):
        return _checked(lambda unbound, args, kwargs: None if args and getattr(args[0], "tzinfo", None) is not None
                        else f"of a naive datetime {_LOCAL_TIME}")(obj, name)
    if obj.tzinfo is None:
        raise SandboxViolation(f"{name}() of a naive datetime {_LOCAL_TIME}")
    return getattr(obj, name)


def _astimezone_problem(unbound: bool, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    if unbound and (not args or getattr(args[0], "tzinfo", None) is None):
        return f"of a naive datetime {_LOCAL_TIME}"
    return _LOCAL_TIME if _arg(args, kwargs, 1 if unbound else 0, "tz") is None else None


def _astimezone(obj: Any, name: str) -> Any:
    """``datetime.astimezone``: without ``tz``, or on a naive datetime, it uses the host's local time."""
    if not isinstance(obj, type) and obj.tzinfo is None:
        raise SandboxViolation(f"{name}() of a naive datetime {_LOCAL_TIME}")
    return _checked(_astimezone_problem)(obj, name)


_TIME_DIRECTIVE = re.compile(r"%[_\-0^#]*[0-9]*[EO]?(.|$)", re.S)


def host_time_directive(fmt: Any, refused: str) -> str | None:
    """The first ``strftime`` directive of ``fmt`` among ``refused`` (glibc flags and widths seen through), or
    ``None``: ``%s`` is the epoch through the host's local time, ``%z``/``%Z`` of a bare time tuple the host's
    zone."""
    if isinstance(fmt, str):
        for m in _TIME_DIRECTIVE.finditer(fmt):
            if m.group(1) and m.group(1) in refused:
                return m.group(1)
    return None


def _strftime_problem(unbound: bool, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    found = host_time_directive(_arg(args, kwargs, 1 if unbound else 0, "format"), "s")
    return f"%{found} reads the host's time zone; use the value's own fields" if found else None


def guarded_format(value: Any, spec: str, conversion: int = -1) -> str:
    """``_format_``: an f-string field with a format spec (``f"{value!r:spec}"``); a date's spec is a
    ``strftime`` format, checked as :data:`SHARED_ATTRIBUTES` checks ``strftime``."""
    if conversion == 115:  # !s
        value = str(value)
    elif conversion == 114:  # !r
        value = repr(value)
    elif conversion == 97:  # !a
        value = ascii(value)
    if isinstance(value, datetime.date | datetime.time):
        found = host_time_directive(spec, "s")
        if found:
            raise SandboxViolation(f"strftime(): %{found} reads the host's time zone; use the value's own fields")
    return format(value, spec)


def _seed_missing(unbound: bool, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    if _arg(args, kwargs, 1 if unbound else 0, "a") is None:
        return "seeding without a value draws from the operating system's entropy; pass a value"
    return None


def _samples_unseeded(unbound: bool, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    if kwargs.get("seed") is None:
        return ("without seed= it draws from the process-wide random generator; pass seed=random.getrandbits(64) "
                "(the episode's generator)")
    return None


#: ``name -> ((class, handler), ...)``: attributes of classes shared by every episode (and the host) that reach
#: the clock, the host's time zone or a process-wide random generator. ``handler(obj, name)`` raises
#: :class:`SandboxViolation` or returns a safe version of the attribute; the first class ``obj`` is (or is an
#: instance of) decides. Found, and kept complete, by ``tests/gym_envs/sandbox/test_audit.py``.
SHARED_ATTRIBUTES: dict[str, tuple[tuple[type, Callable[[Any, str], Any]], ...]] = {
    "now": ((datetime.datetime, _refuse(_CLOCK)),),
    "utcnow": ((datetime.datetime, _refuse(_CLOCK)),),
    "today": ((datetime.date, _refuse(_CLOCK)),),
    "fromtimestamp": ((datetime.datetime, _checked(_tz_missing)), (datetime.date, _refuse(_LOCAL_TIME))),
    "timestamp": ((datetime.datetime, _timestamp),),
    "astimezone": ((datetime.datetime, _astimezone),),
    "strftime": ((datetime.date, _checked(_strftime_problem)), (datetime.time, _checked(_strftime_problem))),
    "samples": ((statistics.NormalDist, _checked(_samples_unseeded)),),
    "seed": ((random.Random, _checked(_seed_missing)),),
}


def guarded_getattr(obj: Any, name: str, default: Any = _MISSING) -> Any:
    """``_getattr_``: ``obj.name`` for tool code (see the module docstring for what it refuses)."""
    fast = _FAST_ATTRS.get(obj.__class__)
    if fast is not None and name in fast:  # a public method of a builtin type or the db facade
        return getattr(obj, name)
    if name.__class__ is not str:
        raise SandboxViolation("attribute names must be str")
    if name[:1] == "_" or name in BLOCKED_ATTRS:
        raise SandboxViolation(f"attribute {name!r} is not allowed")
    if isinstance(obj, BaseException):
        if name != "args":
            raise SandboxViolation(f"only '.args' of an exception may be read, not {name!r}")
        return tuple(scrub(a) if a.__class__ is str else a for a in obj.args)  # messages may quote a repr
    owner = obj if isinstance(obj, type) else obj.__class__
    if obj is owner:
        if obj.__class__ is StandIn:  # a guarded constructor: its attributes are the real class's, checked as such
            obj = owner = obj._real
        if issubclass(obj, BaseException):
            raise SandboxViolation("attributes of exception classes may not be read")
        if name == "register" and isinstance(obj, abc.ABCMeta):
            raise SandboxViolation("registering virtual subclasses of shared ABCs is not allowed")
    shared = SHARED_ATTRIBUTES.get(name)
    if shared is not None:
        for cls, handler in shared:
            if issubclass(owner, cls):
                return handler(obj, name)
    if default is _MISSING:
        return getattr(obj, name)
    return getattr(obj, name, default)


def guarded_getitem(obj: Any, index: Any) -> Any:
    """``obj[index]`` unless ``index`` is a string starting with ``__``. The check reads only the index:
    a subscript by a constant it would let through is compiled to a plain one (:func:`constant_index_ok`),
    so a check on ``obj`` added here must end that shortcut too."""
    if index.__class__ is str and index[:1] == "_" and index[:2] == "__":
        raise SandboxViolation(f"item {index!r} is not allowed")
    return obj[index]


def constant_index_ok(value: Any) -> bool:
    """Whether :func:`guarded_getitem` lets the constant index ``value`` through, whatever the object."""
    return not (value.__class__ is str and value[:2] == "__")


write_guard = full_write_guard  #: ``_write_``: attribute writes only on the code's own dicts and lists


def guarded_setitem(obj: Any, key: Any, value: Any) -> None:
    """``operator.setitem`` through the write guard."""
    write_guard(obj)[key] = value


def guarded_delitem(obj: Any, key: Any) -> None:
    """``operator.delitem`` through the write guard."""
    del write_guard(obj)[key]


def make_inplacevar(binop: Callable[[str, Any, Any], Any]) -> Callable[[str, Any, Any], Any]:
    """``_inplacevar_``: augmented assignment, the guarded operators through ``binop``."""
    ops = {"+=": operator.iadd, "-=": operator.isub, "/=": operator.itruediv,
           "//=": operator.ifloordiv, "|=": operator.ior, "&=": operator.iand,
           "^=": operator.ixor, ">>=": operator.irshift, "@=": operator.imatmul}
    guarded = {"*=": "mul", "**=": "pow", "<<=": "lshift", "%=": "mod"}

    def inplace(op: str, x: Any, y: Any) -> Any:
        if op in guarded:
            return binop(guarded[op], x, y)
        fn = ops.get(op)
        if fn is None:
            raise SandboxViolation(f"operator {op} is not allowed")
        return fn(x, y)

    return inplace


class PrintCollector:
    """RestrictedPython's ``_print_`` target, capped at ``cap`` characters."""

    def __init__(self, cap: int, _getattr_: Any = None):
        self.parts: list[str] = []
        self.size = 0
        self.cap = cap

    def write(self, text: str) -> None:
        text = scrub(text)
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

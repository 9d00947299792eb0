"""Static analysis for the template proposer: a Python document's classes, fields and methods.

Role: turn a document's text into a :class:`DocInfo` (classes with typed
scalar fields and CRUD-named methods, module-level functions, a vocabulary of
words and string literals) using :mod:`ast` only. The document is never
imported or run.

Contract:

* :func:`analyze_source` is pure and deterministic; it returns ``None`` when
  the text does not parse (``SyntaxError``, ``RecursionError``, ...), never
  raises for bad input.
* Field types come, in this order, from an annotation (``int``,
  ``Optional[str]``, ``float | None``), the assigned value or default
  (``0`` → INTEGER, ``''`` → TEXT, ``False`` → BOOLEAN, a parameter's own
  type), then the name (``timeout`` → REAL, see
  :func:`~envgen.blueprint.render.words.hint_type`). Containers, calls of
  other classes and other objects are not scalar and are dropped.
* A field's ``rank`` orders how representative it is: dataclass / NamedTuple
  fields first, then ``__init__`` attributes and stored parameters, then
  attributes set elsewhere; private names rank one lower.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from envgen.blueprint.render.model import safe_name, snake
from envgen.blueprint.render.words import STOP_WORDS, hint_type, verb_kind

__all__ = ["ClassInfo", "DocInfo", "FieldInfo", "MethodInfo", "analyze_source"]

_UNKNOWN = "?"
_ANN_TYPES = {"int": "INTEGER", "float": "REAL", "str": "TEXT", "bool": "BOOLEAN"}
_CALL_TYPES = {"int": "INTEGER", "len": "INTEGER", "float": "REAL", "str": "TEXT", "bool": "BOOLEAN",
               "round": "INTEGER", "abs": _UNKNOWN, "fspath": "TEXT", "basename": "TEXT", "join": "TEXT",
               "lower": "TEXT", "upper": "TEXT", "strip": "TEXT", "time": "REAL", "monotonic": "REAL"}
_WORD_RE = re.compile(r"^[a-z][a-z0-9]{2,13}$")
_LITERAL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{2,15}$")


@dataclass
class FieldInfo:
    """A scalar field (attribute or parameter) with its SQLite type."""

    name: str  #: safe snake_case column name
    sqltype: str
    origin: str  #: the name in the document
    rank: int = 0
    order: int = 0


@dataclass
class MethodInfo:
    """A method (or module function) whose first word may name an operation."""

    name: str
    verb: str  #: first word of the snake_case name ("add")
    kind: str | None  #: create / get / find / list / update / delete / status, or None
    noun: str  #: the rest of the snake_case name ("item"), "" when none
    params: list[FieldInfo] = field(default_factory=list)
    lineno: int = 0


@dataclass
class ClassInfo:
    """One class: its scalar fields, its methods and the other classes it mentions."""

    name: str
    lineno: int
    doc: str
    fields: dict[str, FieldInfo] = field(default_factory=dict)
    methods: list[MethodInfo] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)

    @property
    def snake(self) -> str:
        return snake(self.name)

    def ranked_fields(self) -> list[FieldInfo]:
        return sorted(self.fields.values(), key=lambda f: (f.rank, f.order))


@dataclass
class DocInfo:
    """Everything the template proposer uses from one document."""

    module: str
    doc: str  #: first line of the module docstring
    classes: list[ClassInfo]
    functions: list[MethodInfo]
    words: list[str]  #: sorted distinct lower-case words of identifiers and literals
    literals: list[str]  #: sorted distinct short string literals


# -- types -----------------------------------------------------------------------------------------


def annotation_type(node: ast.expr | None) -> str | None:
    """SQLite type of an annotation, ``None`` when it is not a scalar (or absent)."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return annotation_type(ast.parse(node.value, mode="eval").body)
        except (SyntaxError, ValueError, RecursionError):
            return None
    if isinstance(node, ast.Name):
        return _ANN_TYPES.get(node.id)
    if isinstance(node, ast.Subscript):
        head = node.value.id if isinstance(node.value, ast.Name) else getattr(node.value, "attr", "")
        if head in ("Optional", "Final", "ClassVar", "Annotated"):
            inner = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) and node.slice.elts else node.slice
            return annotation_type(inner)
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        for side in (node.left, node.right):
            if not (isinstance(side, ast.Constant) and side.value is None):
                return annotation_type(side)
    return None


def _constant_type(value: object) -> str | None:
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "INTEGER"
    if isinstance(value, float):
        return "REAL"
    if isinstance(value, str):
        return "TEXT"
    if value is None:
        return _UNKNOWN
    return None


def value_type(node: ast.expr | None, known: dict[str, str | None]) -> str | None:
    """Type of an assigned value: a SQLite type, ``"?"`` (unknown, use the name) or ``None`` (not scalar)."""
    if node is None:
        return _UNKNOWN
    if isinstance(node, ast.Constant):
        return _constant_type(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return "BOOLEAN" if isinstance(node.op, ast.Not) else _constant_type(node.operand.value)
    if isinstance(node, ast.JoinedStr):
        return "TEXT"
    if isinstance(node, ast.Compare):
        return "BOOLEAN"
    if isinstance(node, ast.Name):
        return known.get(node.id, _UNKNOWN) if node.id in known else None
    if isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        return _CALL_TYPES.get(name)
    if isinstance(node, ast.BoolOp | ast.IfExp):
        parts = node.values if isinstance(node, ast.BoolOp) else [node.body, node.orelse]
        types = [value_type(p, known) for p in parts]
        concrete = [t for t in types if t not in (None, _UNKNOWN)]
        return concrete[0] if concrete else (_UNKNOWN if _UNKNOWN in types else None)
    if isinstance(node, ast.BinOp):
        sides = {value_type(node.left, known), value_type(node.right, known)}
        return "REAL" if "REAL" in sides else "INTEGER" if sides == {"INTEGER"} else None
    return None


def _resolve(kind: str | None, name: str) -> str | None:
    if kind == _UNKNOWN:
        return hint_type(name)
    return kind


# -- functions -------------------------------------------------------------------------------------


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[list[FieldInfo], dict[str, str | None]]:
    """Typed scalar parameters of a function (without self/cls/*args) and every parameter's raw type."""
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    defaults: dict[str, ast.expr] = dict(zip([p.arg for p in positional[len(positional) - len(a.defaults):]],
                                             a.defaults, strict=True))
    defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None})
    out: list[FieldInfo] = []
    known: dict[str, str | None] = {}
    for i, p in enumerate([*positional, *a.kwonlyargs]):
        if p.arg in ("self", "cls"):
            continue
        kind = annotation_type(p.annotation)
        if kind is None and p.annotation is None:
            kind = value_type(defaults[p.arg], {}) if p.arg in defaults else _UNKNOWN
        kind = _resolve(kind, snake(p.arg))
        known[p.arg] = kind
        name = safe_name(p.arg)
        if kind is not None and name is not None:
            out.append(FieldInfo(name, kind, p.arg, rank=0 if p.arg not in defaults else 1, order=i))
    return out, known


def _method(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> MethodInfo:
    name = fn.name
    if name.startswith("__") and name.endswith("__"):
        dunder = {"__setitem__": ("set", "update"), "__getitem__": ("get", "get"),
                  "__delitem__": ("del", "delete"), "__iter__": ("iter", "list"), "__contains__": ("has", None)}
        verb, kind = dunder.get(name, (name.strip("_"), None))
        noun = ""
    else:
        words = snake(name).split("_", 1)
        verb, noun = words[0], (words[1] if len(words) > 1 else "")
        kind = verb_kind(verb)
    params, _ = _params(fn)
    return MethodInfo(name, verb, kind, noun, params, fn.lineno)


def _first_line(node: ast.AST) -> str:
    try:
        text = ast.get_docstring(node)  # type: ignore[arg-type]
    except (TypeError, AttributeError):
        return ""
    if not text:
        return ""
    line = text.strip().splitlines()[0].strip()
    return re.sub(r"\s+", " ", line)[:200]


# -- classes ---------------------------------------------------------------------------------------


class _ClassScan:
    """Collects one class's scalar fields in rank order."""

    def __init__(self, node: ast.ClassDef):
        self.node = node
        self.info = ClassInfo(node.name, node.lineno, _first_line(node))
        self.order = 0

    def add(self, origin: str, kind: str | None, rank: int) -> None:
        name = safe_name(origin)
        kind = _resolve(kind, snake(origin))
        if name is None or kind is None or origin.isupper():
            return
        rank += 1 if origin.startswith("_") else 0
        old = self.info.fields.get(name)
        self.order += 1
        if old is None or rank < old.rank:
            self.info.fields[name] = FieldInfo(name, kind, origin, rank, self.order if old is None else old.order)

    def body_fields(self) -> None:
        for stmt in self.node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                head = stmt.annotation
                if isinstance(head, ast.Subscript) and getattr(head.value, "id", "") == "ClassVar":
                    continue
                kind = annotation_type(stmt.annotation)
                if kind is None and stmt.value is not None:
                    kind = value_type(stmt.value, {})
                self.add(stmt.target.id, kind, 0)
            elif (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                  and isinstance(stmt.value, ast.Constant)):
                self.add(stmt.targets[0].id, _constant_type(stmt.value.value), 4)

    def method_fields(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, class_names: set[str],
                      refs: list[str]) -> None:
        is_init = fn.name in ("__init__", "__post_init__", "__new__")
        params, known = _params(fn)
        stored: set[str] = set()
        for node in ast.walk(fn):
            if isinstance(node, ast.Name):
                if node.id in class_names and node.id not in refs:
                    refs.append(node.id)
                continue
            if not isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                continue
            for target, value in _assignments(node):
                if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                        and target.value.id == "self"):
                    kind = annotation_type(node.annotation) if isinstance(node, ast.AnnAssign) else None
                    if kind is None:
                        kind = value_type(value, known)
                    self.add(target.attr, kind, 1 if is_init else 3)
                    if isinstance(value, ast.Name):
                        stored.add(value.id)
        if is_init:
            for p in params:
                self.add(p.origin, p.sqltype, 1 if p.origin in stored else 3)

    def scan(self, class_names: set[str]) -> ClassInfo:
        self.body_fields()
        refs: list[str] = []
        for stmt in self.node.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                self.info.methods.append(_method(stmt))
                self.method_fields(stmt, class_names, refs)
        self.info.refs = [r for r in refs if r != self.node.name]
        return self.info


def _assignments(node: ast.AST) -> list[tuple[ast.expr, ast.expr | None]]:
    if isinstance(node, ast.Assign):
        return [(t, node.value) for t in node.targets if not isinstance(t, ast.Tuple | ast.List)]
    if isinstance(node, ast.AnnAssign):
        return [(node.target, node.value)]
    if isinstance(node, ast.AugAssign):
        return [(node.target, node.value)]
    return []


# -- vocabulary ------------------------------------------------------------------------------------


def _vocabulary(nodes: list[ast.AST]) -> tuple[list[str], list[str]]:
    raws: set[str] = set()
    literals: set[str] = set()
    for node in nodes:
        kind = type(node)
        if kind is ast.Name:
            raws.add(node.id)  # type: ignore[attr-defined]
        elif kind is ast.Attribute:
            raws.add(node.attr)  # type: ignore[attr-defined]
        elif kind is ast.arg:
            raws.add(node.arg)  # type: ignore[attr-defined]
        elif kind in (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef):
            raws.add(node.name)  # type: ignore[attr-defined]
        elif kind is ast.Constant and type(node.value) is str and _LITERAL_RE.match(node.value):  # type: ignore[attr-defined]
            literals.add(node.value)  # type: ignore[attr-defined]
    words: set[str] = set()
    for raw in raws | literals:
        for w in snake(raw).split("_"):
            if _WORD_RE.match(w) and w not in STOP_WORDS:
                words.add(w)
    return sorted(words), sorted(literals)


def analyze_source(text: str, module: str = "module") -> DocInfo | None:
    """Analyse a Python document; ``None`` when it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    try:
        every = list(ast.walk(tree))
        nodes = [n for n in every if isinstance(n, ast.ClassDef)]
        names = {n.name for n in nodes}
        classes = [_ClassScan(n).scan(names) for n in nodes]
        classes.sort(key=lambda c: c.lineno)
        functions = [_method(n) for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        words, literals = _vocabulary(every)
    except RecursionError:
        return None
    return DocInfo(module, _first_line(tree), classes, functions, words, literals)

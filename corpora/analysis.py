"""Static analysis of documents: stateful classes and identifiers.

Role: the measures the generator grounds environments on. A class "defines
stateful operations" when it keeps state on ``self`` (or ``cls``) and has
methods named like create / read / update / delete operations; the
environment generator turns such classes into tools over a SQLite state.
Python is read through its AST; other languages (Go, Rust, Java, C#, C/C++,
Ruby, JavaScript/TypeScript, ...) by regular expression (:mod:`corpora.text_analysis`), with the same idea:
a type, class or struct that keeps state and whose methods change it.

Contract:

* Everything here is pure, deterministic and never raises on bad input: a
  document that is not Python, or that does not parse (``SyntaxError``,
  ``RecursionError``, ...), has no classes; its score is the text score
  (:func:`corpora.text_analysis.text_score`) and its identifiers come from a regular-expression scan.
* :func:`stateful_score` is ``0.0`` when no class is stateful, else the sum
  of the three best class scores. A class scores
  ``len(CRUD categories covered) + min(n CRUD methods, 8) / 8
  + 0.5 if some method other than a constructor (__init__, __new__,
  __post_init__, ...) writes its state``, and only when
  it keeps state on ``self``/``cls`` and covers at least one category; so
  a class scores between 1.125 and 5.5.
* Method names map to categories by their first word (``add_item`` →
  create, ``getName`` → read), through the one verb table
  :mod:`corpora.verbs`; container dunders map too (``__setitem__`` →
  update, ``__getitem__``/``__contains__``/``__iter__``/``__len__`` → read,
  ``__delitem__`` → delete). Leading underscores are ignored, so private
  helpers (``_remove``) count.
* :func:`identifiers` returns snake_case lower-case names (``"OrderedDict"``
  → ``"ordered_dict"``), without dunders or surrounding underscores.
* Results are cached by text digest (LRU, 4096 entries; texts are not kept).
"""

from __future__ import annotations

import ast
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass

from corpora.document import Document
from corpora.text_analysis import add_identifier, text_identifiers, text_score
from corpora.verbs import MUTATORS, method_category

__all__ = [
    "ClassProfile",
    "ModuleProfile",
    "analyze",
    "identifiers",
    "stateful_classes",
    "stateful_score",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_CONSTRUCTORS = frozenset({"__init__", "__new__", "__post_init__", "__init_subclass__", "__set_name__"})

@dataclass(frozen=True)
class ClassProfile:
    """What the analysis found about one class.

    Attributes:
        name: The class name.
        lineno: First line (1-based, the first decorator's line when decorated).
        end_lineno: Last line (inclusive).
        top_level: Whether the class is a top-level statement of the module.
        methods: Names of the methods defined in the class body.
        crud: For each covered category, the methods in it.
        state: Attributes assigned or mutated on ``self``/``cls``.
        mutating: Methods other than constructors (``__init__``, ``__new__``, ...) that write the state.
        score: The class score (0 when not stateful); see the module docstring.
    """

    name: str
    lineno: int
    end_lineno: int
    top_level: bool
    methods: tuple[str, ...]
    crud: dict[str, tuple[str, ...]]
    state: tuple[str, ...]
    mutating: tuple[str, ...]
    score: float

    @property
    def stateful(self) -> bool:
        """Whether the class keeps state and has CRUD-named methods."""
        return self.score > 0


@dataclass(frozen=True)
class ModuleProfile:
    """The analysis of one document: its classes and identifiers.

    ``parsed`` is ``False`` when the text is not Python or does not parse.
    """

    parsed: bool
    classes: tuple[ClassProfile, ...]
    identifiers: frozenset[str]
    text_score: float = 0.0  #: the score read off a document that is not Python (see :func:`_text_score`)

    @property
    def score(self) -> float:
        """The document's stateful score (sum of the three best class scores; the text score otherwise)."""
        if not self.parsed:
            return self.text_score
        best = sorted((c.score for c in self.classes if c.score > 0), reverse=True)[:3]
        return float(sum(best))


def _self_target(node: ast.expr) -> str | None:
    """Return ``attr`` when ``node`` is ``self.attr``/``cls.attr`` or an item/slice of one."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in ("self", "cls")
    ):
        return node.attr
    return None


def _targets(node: ast.AST) -> Iterator[ast.expr]:
    if isinstance(node, ast.Assign):
        for target in node.targets:
            yield from _unpack(target)
    elif isinstance(node, ast.AugAssign | ast.AnnAssign) and (
        not isinstance(node, ast.AnnAssign) or node.value is not None
    ):
        yield node.target
    elif isinstance(node, ast.Delete):
        yield from node.targets


def _unpack(target: ast.expr) -> Iterator[ast.expr]:
    if isinstance(target, ast.Tuple | ast.List):
        for elt in target.elts:
            yield from _unpack(elt)
    elif isinstance(target, ast.Starred):
        yield from _unpack(target.value)
    else:
        yield target


_Owner = tuple["_ClassAcc", str] | None

_VISITED = frozenset(
    {
        ast.FunctionDef,
        ast.AsyncFunctionDef,
        ast.Attribute,
        ast.Call,
        ast.Assign,
        ast.AugAssign,
        ast.AnnAssign,
        ast.Delete,
    }
)
_LEAVES = frozenset({ast.Name, ast.Constant, ast.alias, ast.Pass})


_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(kind: type) -> tuple[str, ...]:
    """The fields of an AST node type that may hold child nodes (memoised)."""
    fields = _CHILD_FIELDS.get(kind)
    if fields is None:
        fields = tuple(f for f in getattr(kind, "_fields", ()) if f not in ("ctx", "type_comment", "op"))
        _CHILD_FIELDS[kind] = fields
    return fields


class _ClassAcc:
    """Accumulates one class's methods and state writes during the scan."""

    def __init__(self, node: ast.ClassDef, top_level: bool) -> None:
        self.node = node
        self.top_level = top_level
        self.methods: list[str] = []
        self.writes: dict[str, set[str]] = {}

    def profile(self) -> ClassProfile:
        crud: dict[str, list[str]] = {}
        state: set[str] = set()
        mutating: list[str] = []
        for name in self.methods:
            category = method_category(name)
            if category is not None:
                crud.setdefault(category, []).append(name)
            written = self.writes.get(name, set())
            state |= written
            if written and name not in _CONSTRUCTORS:
                mutating.append(name)
        n_crud = sum(len(v) for v in crud.values())
        score = 0.0
        if state and crud:
            score = len(crud) + min(n_crud, 8) / 8 + (0.5 if mutating else 0.0)
        node = self.node
        return ClassProfile(
            name=node.name,
            lineno=min([node.lineno, *(d.lineno for d in node.decorator_list)]),
            end_lineno=node.end_lineno or node.lineno,
            top_level=self.top_level,
            methods=tuple(self.methods),
            crud={k: tuple(v) for k, v in sorted(crud.items())},
            state=tuple(sorted(state)),
            mutating=tuple(mutating),
            score=score,
        )


class _Scanner:
    """One iterative pass over a module's AST collecting classes and identifiers."""

    def __init__(self) -> None:
        self.classes: list[_ClassAcc] = []
        self.names: set[str] = set()

    def scan(self, tree: ast.Module) -> None:
        top = {id(stmt) for stmt in tree.body}
        stack: list[tuple[ast.AST, _Owner]] = [(tree, None)]
        while stack:
            node, owner = stack.pop()
            if isinstance(node, ast.ClassDef):
                self._enter_class(node, id(node) in top, stack)
                continue
            kind = type(node)
            if kind in _VISITED:
                self._visit(node, owner)
            for field in _child_fields(kind):
                value = getattr(node, field, None)
                if isinstance(value, list):
                    stack.extend(
                        (child, owner)
                        for child in value
                        if isinstance(child, ast.AST) and type(child) not in _LEAVES
                    )
                elif isinstance(value, ast.AST) and type(value) not in _LEAVES:
                    stack.append((value, owner))

    def _enter_class(self, node: ast.ClassDef, top_level: bool, stack: list[tuple[ast.AST, _Owner]]) -> None:
        acc = _ClassAcc(node, top_level)
        self.classes.append(acc)
        add_identifier(self.names, node.name)
        for child in (*node.decorator_list, *node.bases, *node.keywords):
            stack.append((child, None))
        for stmt in node.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                acc.methods.append(stmt.name)
                acc.writes.setdefault(stmt.name, set())
                stack.append((stmt, (acc, stmt.name)))
                continue
            for target in _targets(stmt):
                if isinstance(target, ast.Name):
                    add_identifier(self.names, target.id)
            stack.append((stmt, None))

    def _write(self, owner: _Owner, expr: ast.expr) -> None:
        attr = _self_target(expr)
        if owner is not None and attr is not None:
            owner[0].writes[owner[1]].add(attr)

    def _visit(self, node: ast.AST, owner: _Owner) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            add_identifier(self.names, node.name)
        elif isinstance(node, ast.Attribute):
            if isinstance(node.ctx, ast.Store | ast.Del) or _self_target(node) is not None:
                add_identifier(self.names, node.attr)
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in MUTATORS:
                self._write(owner, func.value)
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
            for target in _targets(node):
                self._write(owner, target)


def _analyze_text(text: str, is_python: bool) -> ModuleProfile:
    if is_python:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
        if tree is not None:
            scanner = _Scanner()
            scanner.scan(tree)
            classes = sorted((acc.profile() for acc in scanner.classes), key=lambda c: (c.lineno, c.name))
            return ModuleProfile(True, tuple(classes), frozenset(scanner.names))
    return ModuleProfile(False, (), frozenset(text_identifiers(text)), text_score(text))


_CACHE_SIZE = 4096
_cache: OrderedDict[tuple[str, bool], ModuleProfile] = OrderedDict()
_cache_lock = threading.Lock()


def analyze(doc: Document) -> ModuleProfile:
    """Return the analysis of ``doc``: classes with scores, identifiers.

    Results are cached by ``(sha256, is Python)`` (LRU, 4096 entries; texts are not retained).
    """
    key = (doc.sha256, doc.language == "python")
    with _cache_lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return found
    profile = _analyze_text(doc.text, key[1])
    with _cache_lock:
        _cache[key] = profile
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return profile


def stateful_score(doc: Document) -> float:
    """Return how much ``doc`` defines stateful operations (0.0 for none).

    The sum of the three best class scores; see the module docstring.
    """
    return analyze(doc).score


def stateful_classes(doc: Document) -> list[ClassProfile]:
    """Return the stateful classes of ``doc``, best score first (ties by line)."""
    return sorted((c for c in analyze(doc).classes if c.stateful), key=lambda c: (-c.score, c.lineno))


def identifiers(doc: Document) -> set[str]:
    """Return the class, function/method and attribute names of ``doc`` in snake_case lower.

    For Python: class and function names, class-body fields, attributes
    assigned or deleted on any object and attributes read on ``self``/``cls``.
    For other languages (or unparsable Python): names after definition
    keywords and ``self.``/``this.`` attributes, by regular expression.
    """
    return set(analyze(doc).identifiers)

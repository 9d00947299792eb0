"""Static analysis of documents: stateful classes and identifiers.

Role: the measures the generator grounds environments on. A class "defines
stateful operations" when it keeps state on ``self`` (or ``cls``) and has
methods named like create / read / update / delete operations; the
environment generator turns such classes into tools over a SQLite state.
Python is read through its AST; other languages (Go, Rust, Java, C#, C/C++,
Ruby, JavaScript/TypeScript, ...) by regular expression, with the same idea:
a type, class or struct that keeps state and whose methods change it.

Contract:

* Everything here is pure, deterministic and never raises on bad input: a
  document that is not Python, or that does not parse (``SyntaxError``,
  ``RecursionError``, ...), has no classes; its score is the text score
  (:func:`_text_score`) and its identifiers come from a regular-expression scan.
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
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from corpora.document import Document
from corpora.verbs import verb_category

__all__ = [
    "ClassProfile",
    "ModuleProfile",
    "analyze",
    "identifiers",
    "method_category",
    "snake_case",
    "stateful_classes",
    "stateful_score",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_DUNDER_CATEGORY: dict[str, str] = {
    "__setitem__": "update",
    "__getitem__": "read",
    "__contains__": "read",
    "__iter__": "read",
    "__len__": "read",
    "__delitem__": "delete",
    "__iadd__": "create",
    "__isub__": "delete",
}

_MUTATORS = _words(
    "append add appendleft extend insert update setdefault pop popitem popleft remove discard clear "
    "put put_nowait push sort reverse"
)

_CONSTRUCTORS = frozenset({"__init__", "__new__", "__post_init__", "__init_subclass__", "__set_name__"})

_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_REGEX_DEFS = re.compile(
    r"\b(?:class|struct|interface|enum|trait|def|fn|func|function|type)\s+([A-Za-z_]\w*)"
)
_REGEX_ATTRS = re.compile(r"\b(?:self|this)\s*(?:\.|->)\s*([A-Za-z_]\w*)")


@lru_cache(maxsize=65536)
def snake_case(name: str) -> str:
    """Return ``name`` in lower snake_case without surrounding underscores.

    >>> snake_case("OrderedDict"), snake_case("_maxsize"), snake_case("HTTPServer"), snake_case("getName")
    ('ordered_dict', 'maxsize', 'http_server', 'get_name')
    """
    words = _CAMEL_RE.sub("_", name.strip("_")).lower()
    return re.sub(r"_+", "_", words)


def method_category(name: str) -> str | None:
    """Return the CRUD category of a method name, or ``None``.

    >>> method_category("add_item"), method_category("getName"), method_category("__delitem__")
    ('create', 'read', 'delete')
    """
    if name.startswith("__") and name.endswith("__"):
        return _DUNDER_CATEGORY.get(name)
    first = snake_case(name).split("_", 1)[0]
    return verb_category(first)


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
        _add(self.names, node.name)
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
                    _add(self.names, target.id)
            stack.append((stmt, None))

    def _write(self, owner: _Owner, expr: ast.expr) -> None:
        attr = _self_target(expr)
        if owner is not None and attr is not None:
            owner[0].writes[owner[1]].add(attr)

    def _visit(self, node: ast.AST, owner: _Owner) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            _add(self.names, node.name)
        elif isinstance(node, ast.Attribute):
            if isinstance(node.ctx, ast.Store | ast.Del) or _self_target(node) is not None:
                _add(self.names, node.attr)
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in _MUTATORS:
                self._write(owner, func.value)
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
            for target in _targets(node):
                self._write(owner, target)


def _add(names: set[str], raw: str) -> None:
    if raw.startswith("__") and raw.endswith("__"):
        return
    name = snake_case(raw)
    if name:
        names.add(name)


def _regex_identifiers(text: str) -> set[str]:
    names: set[str] = set()
    for match in _REGEX_DEFS.finditer(text):
        _add(names, match.group(1))
    for match in _REGEX_ATTRS.finditer(text):
        _add(names, match.group(1))
    return names


_REGEX_METHODS = re.compile(
    r"(?:\bfunction\s+([A-Za-z_$][\w$]*)\s*\("  # function name(
    r"|\.prototype\.([A-Za-z_$][\w$]*)\s*=\s*(?:async\s+)?function"  # X.prototype.name = function
    r"|^\s*(?:(?:public|private|protected|static|async|override)\s+)*([A-Za-z_$][\w$]*)\s*\([^()]*\)\s*"
    r"(?::\s*[^{=;]+)?\{"  # name(args) {  (class methods, JS and TS)
    r"|\b(?:fn|func)\s+([A-Za-z_]\w*)\s*[(<]"  # Rust, Go
    r"|\bfunc\s*\(\s*[A-Za-z_]\w*\s+\*?\s*[\w.]+(?:\[[^\]]*\])?\s*\)\s*([A-Za-z_]\w*)\s*\("  # Go: func (r *T) Name(
    r"|\bdef\s+(?:self\.)?([A-Za-z_]\w*[?!]?))",  # Ruby (and unparsable Python)
    re.M,
)
_KEYWORDS = frozenset(["if", "for", "while", "switch", "catch", "function", "return", "constructor", "super", "sizeof",
                       "new", "delete", "throw", "else", "do", "try", "match", "loop", "unless", "until", "elsif"])

# Comments and double-quoted / template strings, blanked before the text is read (single quotes are left
# alone: a Rust lifetime or a C char would pair up wrongly). A ``#`` comment needs a blank or ``!`` after
# it, so ``#include``, ``#[derive]`` and JavaScript's ``#private`` names stay.
_NOISE = re.compile(r'"(?:\\.|[^"\\\n])*"|`(?:\\.|[^`\\])*(?:`|\Z)|//[^\n]*|/\*.*?(?:\*/|\Z)'
                    r'|(?:^|(?<=\s))#(?=[\s!]|$)[^\n]*', re.S | re.M)

# Calls that change the container or object they are called on, across languages (Python's list/dict/set
# methods, JS/TS Map/Set/Array, Java collections, C++ containers, Rust collections, Ruby Hash/Array).
_TEXT_MUTATORS = "|".join(sorted(_MUTATORS | _words(
    "set delete erase emplace emplace_back push_back pop_back push_front pop_front insert_or_assign get_mut "
    "entry retain truncate drain swap shift unshift splice fill putIfAbsent putAll addAll removeIf removeAll "
    "retainAll compute computeIfAbsent computeIfPresent merge replace offer poll addFirst addLast removeFirst "
    "removeLast store delete_if reject! select! map! compact! concat fetch_add incrementAndGet getAndIncrement "
    "Store Add Delete Set Push Pop Remove Insert"), key=len, reverse=True))
_INDEX = r"(?:\s*\[[^\]\n]*\])*"
# What follows a state field when it is written: a plain assignment (weak: constructors do it) or an
# index assignment, a compound or increment operator, a nested field assignment, an append (``<<``) or a
# mutating call (strong: the evidence of a method that changes the state).
_PLAIN_WRITE = re.compile(r"\s*=(?![=>~])")
_STRONG_WRITE = re.compile(
    r"\s*\[[^\]\n]*\]" + _INDEX + r"\s*(?:=(?![=>~])|[-+*/%|&^]=|\+\+|--|<<=|>>=)"  # x[k] = v, x[k] += v
    r"|\s*(?:\+\+|--|[-+*/%|&^]=|<<=|>>=|\|\|=|&&=|\?\?=)"  # x++, x += v
    r"|\s*<<(?!=)"  # Ruby / C++ streams into a field: @items << x
    r"|" + _INDEX + r"(?:\s*(?:\.|->)\s*[A-Za-z_$][\w$]*)+\s*(?:=(?![=>~])|[-+*/%]=|\+\+|--)"  # x[k].f = v
    r"|" + _INDEX + r"\s*(?:\.|->|::)\s*(?:" + _TEXT_MUTATORS + r")\b\s*[(!{]?(?=[\s(;{]|$)",  # x.push(v)
    re.M,
)
_FIELD = r"([A-Za-z_$][\w$]*)"
# Ways a method reaches its own state: this./self./this->/@field, and Go receivers (``r.field``).
_OWN_FIELD = re.compile(r"(?:\b(?:this|self)\s*(?:\.|->)\s*|(?<![\w@])@)" + _FIELD)
_GO_RECEIVER = re.compile(r"\bfunc\s*\(\s*([A-Za-z_]\w*)\s+\*?\s*[\w.]+(?:\[[^\]]*\])?\s*\)")
_RUST_MUT_SELF = re.compile(r"\bfn\s+\w+\s*(?:<[^>]*>)?\s*\(\s*&\s*(?:'\w+\s+)?mut\s+self\b")
_CLASS_HEAD = re.compile(r"\b(?:class|struct|record|interface|enum|union)\s+([A-Za-z_$][\w$]*)[^;{}]*$")
_ACCESS_LABEL = re.compile(r"\b(?:public|private|protected|internal)\s*:(?!:)")
_TYPE_WORDS = _words(
    "public private protected internal static final readonly const constexpr mutable volatile transient "
    "virtual override explicit inline extern unsigned signed long short int char bool float double void auto "
    "let var val abstract synchronized export declare default")
_C_TYPEDEF = re.compile(r"\btypedef\s+struct\s*(?:[A-Za-z_]\w*)?\s*(?:\{[^{}]*\})?\s*([A-Za-z_]\w*)\s*;"
                        r"|\bstruct\s+([A-Za-z_]\w*)\s*[{;]")
_C_PROTOTYPE = re.compile(r"^[ \t]*(?:[A-Za-z_]\w*[ \t*]+)+([A-Za-z_]\w*)\s*\(([^()]*)\)\s*[;{]", re.M)


def _name_category(name: str, prefixes: frozenset[str] = frozenset()) -> str | None:
    """A function or method name's CRUD category; a C-style type prefix (``queue_push``) is skipped."""
    category = method_category(name)
    if category is None and prefixes:
        head, _, rest = snake_case(name).partition("_")
        if rest and head in prefixes:
            category = method_category(rest)
    return category


class _TextState:
    """The state fields a non-Python document writes, found by regular expression.

    ``weak``: fields only assigned (what constructors do); ``strong``: fields written the way only
    methods that change state do (an index assignment, ``+=``/``++``, a mutating call such as
    ``push``/``insert``/``put``/``set``/``delete``), or the state of a method declared as changing
    it (Rust ``&mut self``, a C++ member function that is not ``const``, a C function that takes a
    non-const pointer to a struct the file declares).
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.weak: set[str] = set()
        self.strong: set[str] = set()
        self.methods: list[str] = []
        self.type_prefixes: set[str] = set()

    def _field_writes(self, field: str, end: int) -> None:
        if _STRONG_WRITE.match(self.text, end):
            self.strong.add(field)
        elif _PLAIN_WRITE.match(self.text, end):
            self.weak.add(field)

    def scan(self) -> _TextState:
        text = self.text
        for m in _OWN_FIELD.finditer(text):
            self._field_writes(m.group(1), m.end())
        receivers = {m.group(1) for m in _GO_RECEIVER.finditer(text)} - {"_"}
        if receivers:
            go_field = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(receivers))) + r")\s*\.\s*" + _FIELD)
            for m in go_field.finditer(text):
                self._field_writes(m.group(1), m.end())
            for m in re.finditer(r"\bdelete\s*\(\s*(?:" + "|".join(map(re.escape, sorted(receivers)))
                                 + r")\s*\.\s*" + _FIELD, text):
                self.strong.add(m.group(1))
        if _RUST_MUT_SELF.search(text):
            self.strong |= self.weak or {"self"}
        self._classes()
        self._c_functions()
        return self

    def _classes(self) -> None:
        """Fields declared in class and struct bodies (``;``-terminated declarations), the writes of
        method bodies to them by bare name (Java, C++, C#), and C++ member functions declared non-const."""
        text = self.text
        scan = _ClassScan()
        start = 0
        for m in re.finditer(r"[{};]", text):
            header = text[start:m.start()]
            start = m.end()
            if m.group() == "{":
                scan.open(header, m.end(), self.methods)
            elif m.group() == "}":
                scan.close(m.start())
            elif scan.in_class():
                scan.declaration(header, self.methods)
        for owner, fields in scan.fields.items():
            if scan.mutators.get(owner):
                self.strong |= fields  # a header declaring a non-const member function: it changes these
        for body, end, owner in scan.bodies:
            names = scan.fields.get(owner)
            if not names:
                continue
            bare = re.compile(r"(?<![\w$.>:@])(?:" + "|".join(map(re.escape, sorted(names))) + r")\b")
            for m in bare.finditer(text, body, end):
                self._field_writes(m.group(), m.end())

    def _c_functions(self) -> None:
        """C functions that take a non-const pointer to a struct the file declares mutate that struct."""
        text = self.text
        types = {a or b for a, b in _C_TYPEDEF.findall(text)}
        if not types:
            return
        self.type_prefixes |= {snake_case(t.removesuffix("_t")).split("_", 1)[0] for t in types}
        pointer = re.compile(r"(?<!const )(?<!const\s)\b(?:struct\s+)?(" + "|".join(map(re.escape, sorted(types)))
                             + r")\s*\*")
        for m in _C_PROTOTYPE.finditer(text):
            name, params = m.group(1), m.group(2)
            if name in _KEYWORDS:
                continue
            self.methods.append(name)
            written = {t for t in pointer.findall(params)}
            if written:
                self.strong |= written


class _ClassScan:
    """The brace structure of a C-family text, as :meth:`_TextState._classes` walks it: class and struct
    bodies, the fields declared in them, their method bodies and their member function declarations."""

    def __init__(self) -> None:
        self.stack: list[tuple[str, int, str]] = []  # (kind: class, method or block; body start; class name)
        self.fields: dict[str, set[str]] = {}  # class -> fields declared in its body
        self.bodies: list[tuple[int, int, str]] = []  # (start, end, class) of each method body
        self.mutators: dict[str, bool] = {}  # class -> declares a member function that is not const

    def in_class(self) -> bool:
        return bool(self.stack) and self.stack[-1][0] == "class"

    def open(self, header: str, at: int, methods: list[str]) -> None:
        """A ``{`` after ``header``: a class body, a method body (a header with a call's parenthesis
        directly in a class), or any other block."""
        owner = self.stack[-1][2] if self.stack else ""
        head = _CLASS_HEAD.search(header)
        if head:
            self.stack.append(("class", at, head.group(1)))
        elif self.in_class() and "(" in header.split("=", 1)[0]:
            name = _callee(header)
            if name:
                methods.append(name)
            self.stack.append(("method", at, owner))
        else:
            self.stack.append(("block", at, owner))

    def close(self, at: int) -> None:
        if self.stack:
            kind, body, owner = self.stack.pop()
            if kind == "method":
                self.bodies.append((body, at, owner))

    def declaration(self, header: str, methods: list[str]) -> None:
        """A ``;``-terminated statement directly in a class body: a field or a member function declaration."""
        owner = self.stack[-1][2]
        statement = _ACCESS_LABEL.sub(" ", header).strip()
        before = statement.split("=", 1)[0]
        if "(" in before:  # a member function declared here (C++ headers, Java interfaces)
            name = _callee(before)
            after = statement[statement.rfind(")") + 1:]
            if name and name != owner and not name.startswith("~"):
                methods.append(name)
                if "const" not in after.split() and not re.search(r"\bstatic\b", before):
                    self.mutators[owner] = True
            return
        field = _declared_name(before)
        if field:
            self.fields.setdefault(owner, set()).add(field)


def _callee(header: str) -> str | None:
    """The name just before the first ``(`` of a declaration (``bool put(...)`` -> ``put``)."""
    m = re.search(r"([~A-Za-z_$][\w$]*)\s*(?:<[^<>()]*>)?\s*\($", header.split("(", 1)[0] + "(")
    name = m.group(1) if m else None
    return None if name is None or name in _KEYWORDS or name in _TYPE_WORDS else name


def _declared_name(declaration: str) -> str | None:
    """The name a field declaration declares (``private final Map<K, V> books`` -> ``books``)."""
    part = re.split(r"(?<!:):(?!:)", declaration, maxsplit=1)[0] if ":" in declaration else declaration
    part = re.sub(r"\[[^\]]*\]|\{[^}]*\}", " ", part)
    words = [w for w in re.findall(r"[A-Za-z_$][\w$]*", part) if w not in _TYPE_WORDS]
    if len(re.findall(r"[A-Za-z_$][\w$]*", part)) < 2 and ":" not in declaration:
        return None  # a bare word is a statement or an enum constant, not a declaration
    return words[-1] if words else None


def _text_score(text: str) -> float:
    """A stateful score for a document that is not Python, by regular expression.

    Like a Python class's score it rewards CRUD coverage: one point per CRUD category among the
    document's function and method names (``addJob``, ``remove``, ``Queue.prototype.getJob``, Go's
    ``func (b *Bank) Open``, Ruby's ``def add_room``, Java and C++ members, C's ``queue_push``), plus a
    quarter point per state field written (at most one point). State is a field of the type the
    methods belong to: reached through ``this.``/``self.``/``this->``/``@``, a Go receiver, or by bare
    name in a Java/C++/C# method body (fields declared in the class body). The score is 0 unless some
    state is written and either two categories are covered, or one is and a method changes state the
    way constructors do not (see :class:`_TextState`: an index assignment, ``+=``, a mutating call such
    as ``push``/``put``/``set``/``insert``, Rust ``&mut self``, a non-const C++ member function, a C
    function taking a non-const pointer to a declared struct).
    """
    clean = _NOISE.sub(lambda m: "\n" * m.group().count("\n") or " ", text[:400_000])
    state = _TextState(clean).scan()
    prefixes = frozenset(state.type_prefixes)
    names = [next((g for g in match.groups() if g), "") for match in _REGEX_METHODS.finditer(clean)]
    categories: set[str] = set()
    for name in (*names, *state.methods):
        if name and name not in _KEYWORDS:
            cat = _name_category(name.rstrip("?!"), prefixes)
            if cat:
                categories.add(cat)
    writes = state.weak | state.strong
    if not writes or not categories or (len(categories) < 2 and not state.strong):
        return 0.0
    return float(len(categories)) + min(1.0, 0.25 * len(writes))


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
    return ModuleProfile(False, (), frozenset(_regex_identifiers(text)), _text_score(text))


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

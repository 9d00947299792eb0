"""Static analysis of documents that are not Python: identifiers and a stateful score, by regular expression.

Role: the other-language half of :mod:`corpora.analysis` (Go, Rust, Java, C#, C/C++, Ruby,
JavaScript/TypeScript, and Python that does not parse), with the same idea as its AST half: a type,
class or struct that keeps state and whose methods change it.

Contract: pure, deterministic, never raises on bad input. :func:`text_identifiers` returns the
snake_case names after definition keywords and of ``self.``/``this.`` attributes; :func:`text_score`
is documented on itself. Only the first 400,000 characters are scored.
"""

from __future__ import annotations

import re

from corpora.verbs import MUTATORS, method_category, snake_case

__all__ = ["add_identifier", "text_identifiers", "text_score"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_REGEX_DEFS = re.compile(
    r"\b(?:class|struct|interface|enum|trait|def|fn|func|function|type)\s+([A-Za-z_]\w*)"
)
_REGEX_ATTRS = re.compile(r"\b(?:self|this)\s*(?:\.|->)\s*([A-Za-z_]\w*)")


def add_identifier(names: set[str], raw: str) -> None:
    """Add ``raw`` in snake_case to ``names`` (dunders and names that are only underscores left out)."""
    if raw.startswith("__") and raw.endswith("__"):
        return
    name = snake_case(raw)
    if name:
        names.add(name)


def text_identifiers(text: str) -> set[str]:
    """The snake_case names after definition keywords and of ``self.``/``this.`` attributes of ``text``."""
    names: set[str] = set()
    for match in _REGEX_DEFS.finditer(text):
        add_identifier(names, match.group(1))
    for match in _REGEX_ATTRS.finditer(text):
        add_identifier(names, match.group(1))
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
_TEXT_MUTATORS = "|".join(sorted(MUTATORS | _words(
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


def text_score(text: str) -> float:
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

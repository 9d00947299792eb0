"""What one function body does, in statement order: its guards, its changes and what it returns.

Role: the reader under :mod:`envgen.proposers.template.semantics` (whose docstring states the rules
these facts feed). :class:`ClassReader` scans the methods of one class with :mod:`ast` only and expands
a call of another method in place (``put`` -> ``_put`` -> ``self.queue.append``), so the semantics
layer decides roles from a method's whole effect.

Contract:

* An :class:`Effect` is one change: ``add``/``take``/``remove``/``clear``/``store`` on a container
  (its ``target``; a take's ``order`` is ``first`` or ``last``), ``state`` (a state-like attribute set
  to the constant ``value``), ``adjust`` (``value`` is the sign, +1 or -1; the target names the field,
  ``balance`` of ``src.balance``, ``balances[a]``), ``owner``, ``lock`` (a ``locked`` flag) and
  ``lockcall`` (``self.<x>.acquire()``), whose ``value`` is ``acquire`` or ``release``, ``move``
  (another object's ``parent`` set) and ``assign``. ``loop`` marks a change made inside a ``while``
  loop or an ``except`` handler, ``nested`` one made by a helper. A change to an attribute named
  ``*cache*`` is not recorded.
* A :class:`Guard` is a ``raise`` under a test, an ``assert`` with its negated test, or a raise in an
  ``except <specific exception>`` handler; the guards a summary keeps are those before its first change
  outside loops, its own and those of the helpers it calls directly.
* Containers are attributes of ``self`` (and local aliases of them); in a module function, its
  parameters and globals. Nested functions and classes are not read. Nothing here raises for odd but
  valid syntax trees.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from envgen.blueprint.render.words import word_set
from envgen.proposers.template.guard_kinds import GUARD_KINDS, guard_kind

__all__ = ["GUARD_KINDS", "ClassReader", "Effect", "Guard", "Summary", "first_line", "guard_kind", "is_abstract",
           "name_of", "source", "state_attr", "walk"]


_ADD_CALLS = word_set("append appendleft insert add put put_nowait extend extendleft setdefault")
_HEAP = {"heappush": "add", "insort": "add", "insort_left": "add", "insort_right": "add", "heappop": "take",
         "heappushpop": "take", "heapreplace": "take"}
_ITER_CALLS = word_set("list sorted tuple iter set frozenset enumerate reversed")
_STATE_WORDS = word_set("state status closed done cancelled canceled locked running finished stopped started "
                      "active opened paused shutdown stage phase")
_OWNER_WORDS = word_set("owner holder locked_by held_by")
_EMPTY_CALLS = word_set("list dict set deque OrderedDict defaultdict bytearray")
_BROAD = frozenset(("Exception", "BaseException", ""))
_QUEUEISH = re.compile(r"queue|^_?q$|inbox|outbox|jobs|tasks|pending|work|events|messages|requests")
_CAP = re.compile(r"^(max\w*|\w*capacity|\w*limit|maxlen|\w*maxsize|bound)$")
_DEPTH = 3
_MAX_UPDATES = 6

Fn = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass
class Guard:
    """A refusal the code makes before changing anything."""

    exception: str  #: ``Full``, ``ValueError``, ``AssertionError``
    message: str  #: the literal message ('' when none)
    kind: str  #: one of :data:`GUARD_KINDS`
    condition: str  #: the test as it reads for the raise to happen (``self.full()``)


@dataclass
class Effect:
    """One change a body makes (see the module docstring)."""

    kind: str
    target: str
    order: str = ""
    value: object = None
    loop: bool = False
    nested: bool = False  #: made by a helper the method calls, not by its own statements


@dataclass
class _Call:
    name: str
    loop: bool


@dataclass
class Summary:
    """A method's behaviour with its helpers read in place."""

    guards: list[Guard] = field(default_factory=list)
    effects: list[Effect] = field(default_factory=list)
    returns: set[str] = field(default_factory=set)  #: value, len, sum, lookup, iter, bool, attr:<name>
    updates: list[str] = field(default_factory=list)


# -- readers ---------------------------------------------------------------------------------------


def source(node: ast.AST, cap: int = 120) -> str:
    """The node's source text (normalised by :func:`ast.unparse`), at most ``cap`` characters."""
    try:
        return ast.unparse(node)[:cap]
    except (ValueError, TypeError, AttributeError, RecursionError):
        return ""


def first_line(node: ast.AST) -> str:
    """The first line of a function's, class's or module's docstring ('' when none)."""
    body = getattr(node, "body", None)
    if not body or not isinstance(body[0], ast.Expr) or not isinstance(body[0].value, ast.Constant):
        return ""
    text = body[0].value.value
    lines = text.strip().splitlines() if isinstance(text, str) else []
    return re.sub(r"\s+", " ", lines[0].strip())[:200] if lines else ""


def name_of(node: ast.AST | None) -> str:
    """The last name of a dotted expression or call (``errors.Full(...)`` -> ``Full``)."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else ""


def _message(exc: ast.expr | None) -> str:
    if not isinstance(exc, ast.Call) or not exc.args:
        return ""
    arg = exc.args[0]
    if isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Mod):
        arg = arg.left
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value[:200]
    if isinstance(arg, ast.JoinedStr):
        parts = [str(v.value) if isinstance(v, ast.Constant) else "{" + source(getattr(v, "value", v), 30) + "}"
                 for v in arg.values]
        return "".join(parts)[:200]
    return ""


_INVERSE: dict[type, str] = {ast.Lt: ">=", ast.LtE: ">", ast.Gt: "<=", ast.GtE: "<", ast.Eq: "!=", ast.NotEq: "==",
                             ast.In: "not in", ast.NotIn: "in", ast.Is: "is not", ast.IsNot: "is"}


def _negate(test: ast.expr) -> str:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return source(test.operand)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _INVERSE:
        return f"{source(test.left, 60)} {_INVERSE[type(test.ops[0])]} {source(test.comparators[0], 60)}"
    return f"not ({source(test, 110)})" if isinstance(test, ast.BoolOp | ast.Compare) else f"not {source(test)}"


def state_attr(attr: str) -> bool:
    """Whether an attribute names a lifecycle state (``_state``, ``closed``, ``is_running``, ``job_status``)."""
    a = attr.lstrip("_").lower()
    return a in _STATE_WORDS or a.startswith("is_") or a.endswith(("_state", "_status"))


def is_abstract(fn: Fn) -> bool:
    """Whether a body does nothing: only a docstring, ``pass``, ``...``, ``return`` or ``raise NotImplementedError``."""
    for stmt in fn.body:
        if isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            continue
        if isinstance(stmt, ast.Return) and stmt.value is None:
            continue
        if isinstance(stmt, ast.Raise) and name_of(stmt.exc) == "NotImplementedError":
            continue
        return False
    return True


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node`` (itself included), depth first; :func:`ast.walk`'s nodes, faster."""
    stack = [node]
    while stack:
        item = stack.pop()
        yield item
        for value in item.__dict__.values():
            if type(value) is list:
                stack.extend([v for v in value if isinstance(v, ast.AST)])
            elif isinstance(value, ast.AST):
                stack.append(value)


def _empty_container(node: ast.expr | None) -> bool:
    if isinstance(node, ast.List | ast.Dict | ast.Set | ast.Tuple):
        return not (node.keys if isinstance(node, ast.Dict) else node.elts)
    return isinstance(node, ast.Call) and name_of(node.func) in _EMPTY_CALLS and not node.args


def _self_attr_in(node: ast.expr, self_name: str | None) -> str | None:
    for sub in walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == self_name:
            return sub.attr
    return None


# -- one function ----------------------------------------------------------------------------------


Cond = tuple[ast.expr | str, bool]


class _Scan:
    """Reads one function body into ordered events (guards, effects, calls of sibling methods)."""

    def __init__(self, fn: Fn, constants: dict[str, object], enums: frozenset[str], is_method: bool):
        params = [p.arg for p in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)]
        self.self_name = params[0] if is_method and params else None
        self.constants, self.enums = constants, enums
        self.free = frozenset(params if not is_method else ())
        positional = [*fn.args.posonlyargs, *fn.args.args]
        self.defaults: dict[str, object] = {}
        for p, d in zip(positional[len(positional) - len(fn.args.defaults):], fn.args.defaults, strict=True):
            known, value = self.constant(d)
            if known and value in (0, -1) and not isinstance(value, bool):
                self.defaults[p.arg] = value
        self.aliases: dict[str, str] = {}
        self.heap_alias: dict[str, str] = {}
        self.adjusted: dict[str, tuple[str, int]] = {}
        self.events: list[Guard | Effect | _Call] = []
        self.returns: set[str] = set()
        self.updates: list[str] = []
        self.compared: list[object] = []  # constants compared with a state-like attribute
        self.bounds: list[str] = []  # attributes that bound a container in a comparison
        self.stored: set[str] = set()  # attributes assigned (on any object)
        self.used: set[str] = set()  # bare names the expressions read
        self.stmts(fn.body, [], False)

    # statements
    def stmts(self, body: list[ast.stmt], conds: list[Cond], loop: bool) -> None:
        for stmt in body:
            self.stmt(stmt, conds, loop)

    def stmt(self, s: ast.stmt, conds: list[Cond], loop: bool) -> None:  # noqa: C901 - one dispatch over kinds
        if isinstance(s, ast.If):
            self.expr(s.test, loop)
            self.stmts(s.body, [*conds, (s.test, False)], loop)
            self.stmts(s.orelse, [*conds, (s.test, True)], loop)
        elif isinstance(s, ast.While):
            self.expr(s.test, loop)
            self.stmts(s.body, [*conds, (s.test, False)], True)
            self.stmts(s.orelse, conds, loop)
        elif isinstance(s, ast.For | ast.AsyncFor):
            self.expr(s.iter, loop)
            self.stmts(s.body, conds, loop)
            self.stmts(s.orelse, conds, loop)
        elif isinstance(s, ast.With | ast.AsyncWith):
            for item in s.items:
                self.expr(item.context_expr, loop)
            self.stmts(s.body, conds, loop)
        elif isinstance(s, ast.Try | ast.TryStar):
            self.stmts(s.body, conds, loop)
            for h in s.handlers:
                caught = source(h.type, 60) if h.type is not None else ""
                self.stmts(h.body, [*conds, (f"except {caught}", False)] if caught not in _BROAD else [], True)
            self.stmts(s.orelse, conds, loop)
            self.stmts(s.finalbody, conds, loop)
        elif isinstance(s, ast.Match):
            for case in s.cases:
                self.stmts(case.body, [*conds, (f"case {source(case.pattern, 60)}", False)], loop)
        elif isinstance(s, ast.Raise):
            self.guard(s, conds)
        elif isinstance(s, ast.Assert):
            if s.msg is not None:
                self.events.append(self.make_guard("AssertionError", _message(ast.Call(ast.Name("x"), [s.msg], [])),
                                                   (s.test, True)))
        elif isinstance(s, ast.Return):
            if s.value is not None:
                self.expr(s.value, loop)
                self.returned(s.value)
        elif isinstance(s, ast.Expr | ast.Assign | ast.AugAssign | ast.AnnAssign):
            if s.value is not None:
                self.expr(s.value, loop)
            if not isinstance(s, ast.Expr):
                self.assign(s, loop)
        elif isinstance(s, ast.Delete):
            for t in s.targets:
                root = self.root(t.value) if isinstance(t, ast.Subscript) else None
                if root:
                    self.effect(Effect("remove", root, loop=loop))

    def make_guard(self, exception: str, message: str, cond: Cond) -> Guard:
        test, negated = cond
        text = test if isinstance(test, str) else (_negate(test) if negated else source(test))
        return Guard(exception, message, guard_kind(exception, message, text), text)

    def guard(self, s: ast.Raise, conds: list[Cond]) -> None:
        exception = name_of(s.exc)
        if s.exc is None or not conds or exception == "NotImplementedError":
            return
        self.events.append(self.make_guard(exception, _message(s.exc), conds[-1]))

    def effect(self, e: Effect) -> None:
        if "cache" not in e.target.lower():
            self.events.append(e)

    # expressions
    def expr(self, node: ast.expr, loop: bool) -> None:
        stack: list[ast.AST] = [node]
        while stack:
            sub = stack.pop()
            kind = type(sub)
            if kind is ast.Name:
                self.used.add(sub.id)  # type: ignore[attr-defined]
                continue
            if kind is ast.Constant:
                continue
            if kind is ast.Call:
                self.call(sub, loop)  # type: ignore[arg-type]
            elif kind is ast.Compare:
                self.compare(sub)  # type: ignore[arg-type]
            elif kind is ast.Yield or kind is ast.YieldFrom:
                self.returns.update(("iter", "value"))
            for value in sub.__dict__.values():
                if type(value) is list:
                    stack.extend([v for v in value if isinstance(v, ast.AST)])
                elif isinstance(value, ast.AST):
                    stack.append(value)

    def compare(self, node: ast.Compare) -> None:
        sides = [node.left, *node.comparators]
        own = [s.attr for s in sides if isinstance(s, ast.Attribute) and isinstance(s.value, ast.Name)
               and s.value.id == self.self_name and self.self_name]
        if not own:
            return
        sized = any(isinstance(s, ast.Call) and name_of(s.func) == "len" and s.args and self.root(s.args[0])
                    for s in sides)
        for attr in own:
            if _CAP.match(attr.lstrip("_").lower()) or sized:
                self.bounds.append(attr.lstrip("_"))
            if not state_attr(attr):
                continue
            for other in sides:
                for c in other.elts if isinstance(other, ast.Tuple | ast.List | ast.Set) else [other]:
                    known, value = self.constant(c)
                    if known and isinstance(value, str):
                        self.compared.append(value)

    def root(self, node: ast.expr) -> str | None:
        """The container a node reaches (an attribute of ``self``, an alias, or a parameter of a function)."""
        base, first = node, None
        while isinstance(base, ast.Attribute | ast.Subscript):
            if isinstance(base, ast.Attribute):
                first = base.attr
            base = base.value
        if not isinstance(base, ast.Name):
            return None
        if base.id == self.self_name:
            return first or (base.id if node is not base else None)
        if base.id in self.aliases and node is base:
            return self.aliases[base.id]
        return base.id if base.id in self.free and node is base else None

    def call(self, node: ast.Call, loop: bool) -> None:
        f = node.func
        heap = _HEAP.get(name_of(f)) or self.heap_alias.get(f.id if isinstance(f, ast.Name) else "")
        if heap and node.args:
            root = self.root(node.args[0])
            if root:
                self.effect(Effect(heap, root, "first" if heap == "take" else "", loop=loop))
            return
        if isinstance(f, ast.Name) and self.self_name is None:
            self.events.append(_Call(f.id, loop))
        if not isinstance(f, ast.Attribute):
            return
        if isinstance(f.value, ast.Name) and f.value.id == self.self_name and self.self_name:
            self.events.append(_Call(f.attr, loop))
            return
        root = self.root(f.value)
        if root:
            self.container_call(f.attr, node, root, loop)

    def container_call(self, attr: str, node: ast.Call, root: str, loop: bool) -> None:
        args = node.args
        kind, order = "", ""
        if attr in ("pop", "popitem"):
            index: object = -1
            if args:
                known, index = (True, self.defaults[args[0].id]) if isinstance(args[0], ast.Name) and \
                    args[0].id in self.defaults else self.constant(args[0])
                index = index if known else None
            if index in (0, -1) and not isinstance(index, bool):
                kind, order = "take", "first" if index == 0 else "last"
            else:
                kind = "remove"
        elif attr == "popleft" or (attr in ("get", "get_nowait") and not args and _QUEUEISH.search(root.lower())):
            kind, order = "take", "first"
        elif attr in _ADD_CALLS:
            kind = "add"
        elif attr in ("remove", "discard"):
            kind = "remove"
        elif attr == "clear":
            kind = "clear"
        elif attr == "update" and args:
            kind = "store"
        elif attr in ("acquire", "release"):
            self.effect(Effect("lockcall", root, value=attr, loop=loop))
            return
        if kind:
            self.effect(Effect(kind, root, order, loop=loop))

    def constant(self, node: ast.expr | None) -> tuple[bool, object]:
        if isinstance(node, ast.Constant):
            return True, node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            value = node.operand.value
            return (True, -value) if isinstance(value, int | float) else (False, None)
        if isinstance(node, ast.Name) and (node.id in self.constants or node.id.lstrip("_").isupper()):
            return True, self.constants.get(node.id, node.id.lstrip("_"))
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (
                node.value.id in self.enums or node.attr.isupper()):
            return True, node.attr
        return False, None

    def returned(self, value: ast.expr) -> None:
        out = self.returns
        if isinstance(value, ast.Constant) and value.value is None:
            return
        out.add("value")
        head = name_of(value.func) if isinstance(value, ast.Call) else ""
        if head in ("len", "sum"):
            out.add(head)
        elif isinstance(value, ast.Call) and head in _ITER_CALLS:
            out.add("iter")
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
            target = value.func.value
            if isinstance(target, ast.Name) and target.id == self.self_name:
                out.add(f"call:{head}")
            elif self.root(target) and head in ("get", "keys", "values", "items", "count", "copy"):
                out.add({"get": "lookup", "count": "len"}.get(head, "iter"))
        elif isinstance(value, ast.Subscript) and self.root(value.value):
            out.add("lookup")
        elif isinstance(value, ast.Compare | ast.BoolOp) or (isinstance(value, ast.UnaryOp)
                                                             and isinstance(value.op, ast.Not)):
            out.add("bool")
        elif isinstance(value, ast.ListComp | ast.GeneratorExp | ast.SetComp | ast.DictComp):
            out.add("iter")
        elif (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name)
              and value.value.id == self.self_name):
            out.add(f"attr:{value.attr}")

    def assign(self, s: ast.Assign | ast.AugAssign | ast.AnnAssign, loop: bool) -> None:
        targets = s.targets if isinstance(s, ast.Assign) else [s.target]
        flat: list[ast.expr] = []
        for t in targets:
            flat.extend(t.elts if isinstance(t, ast.Tuple | ast.List) else [t])
        value = None if len(flat) > len(targets) else s.value
        for t in flat:
            if isinstance(t, ast.Name):
                self.local(t.id, value)
            elif isinstance(t, ast.Attribute | ast.Subscript):
                if isinstance(t, ast.Attribute):
                    self.stored.add(t.attr)
                self.attribute(t, s, value, loop)

    def local(self, name: str, value: ast.expr | None) -> None:
        root = self.root(value) if isinstance(value, ast.Attribute) else None
        if root and self.self_name:
            self.aliases[name] = root
        elif isinstance(value, ast.Attribute | ast.Name) and name_of(value) in _HEAP:
            self.heap_alias[name] = _HEAP[name_of(value)]
        elif isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add | ast.Sub):
            attr = _self_attr_in(value, self.self_name)
            if attr:
                self.adjusted[name] = (attr, 1 if isinstance(value.op, ast.Add) else -1)

    def attribute(self, t: ast.Attribute | ast.Subscript, s: ast.stmt, value: ast.expr | None, loop: bool) -> None:
        if len(self.updates) < _MAX_UPDATES:
            text = source(s, 80)
            if text and text not in self.updates:
                self.updates.append(text)
        aug = isinstance(s, ast.AugAssign)
        sign = (1 if isinstance(s.op, ast.Add) else -1 if isinstance(s.op, ast.Sub) else 0) if aug else 0  # type: ignore[attr-defined]
        if isinstance(t, ast.Subscript):
            root = self.root(t.value)
            if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add | ast.Sub) and not aug:
                sign = 1 if isinstance(value.op, ast.Add) else -1
            if root:
                kind = "adjust" if sign else "assign" if isinstance(t.slice, ast.Slice) else "store"
                self.effect(Effect(kind, f"{root}[{source(t.slice, 40)}]" if sign else root, value=sign, loop=loop))
            return
        own = isinstance(t.value, ast.Name) and t.value.id == self.self_name and self.self_name is not None
        if not own:
            base = source(t.value, 40)
            if sign:
                self.effect(Effect("adjust", f"{base}.{t.attr}", value=sign, loop=loop))
            elif t.attr in ("parent", "_parent", "parent_id"):
                self.effect(Effect("move", f"{base}.{t.attr}", loop=loop))
            return
        self.effect(self.own_change(t.attr, value, sign, aug, loop))

    def own_change(self, attr: str, value: ast.expr | None, sign: int, aug: bool, loop: bool) -> Effect:
        if aug:
            return Effect("adjust" if sign else "assign", attr, value=sign, loop=loop)
        known, const = self.constant(value)
        if attr.lstrip("_").lower() in _OWNER_WORDS:
            return Effect("owner", attr, value="release" if known and const is None else "acquire", loop=loop)
        if known and state_attr(attr):
            if attr.lstrip("_").lower() == "locked" and isinstance(const, bool):
                return Effect("lock", attr, value="acquire" if const else "release", loop=loop)
            return Effect("state", attr, value=const, loop=loop)
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add | ast.Sub) and \
                _self_attr_in(value, self.self_name) == attr:
            return Effect("adjust", attr, value=1 if isinstance(value.op, ast.Add) else -1, loop=loop)
        if isinstance(value, ast.Name) and self.adjusted.get(value.id, ("", 0))[0] == attr:
            return Effect("adjust", attr, value=self.adjusted[value.id][1], loop=loop)
        if _empty_container(value):
            return Effect("clear", attr, loop=loop)
        return Effect("assign", attr, loop=loop)


# -- a class ---------------------------------------------------------------------------------------


class ClassReader:
    """Summaries of the methods of one class (or of a module's functions), helpers read in place."""

    def __init__(self, methods: dict[str, Fn], constants: dict[str, object], enums: frozenset[str],
                 is_method: bool = True, cache: dict[int, _Scan] | None = None):
        self.methods = methods
        self.constants, self.enums, self.is_method = constants, enums, is_method
        self._scans: dict[int, _Scan] = {} if cache is None else cache  # by the function node, shareable
        self._memo: dict[tuple[str, int], tuple[list[Guard | Effect], set[str], list[str]]] = {}

    def scan(self, name: str) -> _Scan:
        """The events of one method's own body (scanned once per function node)."""
        fn = self.methods[name]
        key = id(fn)
        if key not in self._scans:
            self._scans[key] = _Scan(fn, self.constants, self.enums, self.is_method)
        return self._scans[key]

    def _expand(self, name: str, depth: int, stack: frozenset[str]) -> tuple[list[Guard | Effect], set[str], list[str]]:
        key = (name, depth)
        if key in self._memo:
            return self._memo[key]
        scan = self.scan(name)
        events: list[Guard | Effect] = []
        returns = {r for r in scan.returns if not r.startswith("call:")}
        updates = list(scan.updates)
        for event in scan.events:
            if not isinstance(event, _Call):
                events.append(event)
                continue
            if depth >= _DEPTH or event.name in stack or event.name not in self.methods or (
                    not self.is_method and depth > 0):
                continue
            sub, sub_returns, sub_updates = self._expand(event.name, depth + 1, stack | {event.name})
            events.extend(Effect(e.kind, e.target, e.order, e.value, e.loop or event.loop, True)
                          if isinstance(e, Effect) else e
                          for e in sub if (depth == 0 or not isinstance(e, Guard))
                          and (self.is_method or not isinstance(e, Effect)))
            if f"call:{event.name}" in scan.returns:
                returns |= sub_returns
            updates.extend(u for u in sub_updates if u not in updates)
        self._memo[key] = (events, returns, updates[:_MAX_UPDATES])
        return self._memo[key]

    def summary(self, name: str) -> Summary:
        """The method's guards (before its first change outside loops), changes, returns and updates."""
        events, returns, updates = self._expand(name, 0, frozenset({name}))
        guards: list[Guard] = []
        for e in events:
            if isinstance(e, Effect) and not e.loop:
                break
            if isinstance(e, Guard) and all((g.exception, g.message) != (e.exception, e.message) for g in guards):
                guards.append(e)
        effects = [e for e in events if isinstance(e, Effect)]
        return Summary(guards, effects, returns, updates)

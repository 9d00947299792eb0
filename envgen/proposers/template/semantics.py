"""Operation semantics of a Python document: what its API does, read from the code.

Role: tell a world graft (:mod:`envgen.world`) which operations a document defines and how they
behave: ``Queue.put`` adds an item and is refused with ``Full`` when the queue is full; ``get`` takes
the oldest item; ``cancel`` moves a record to ``cancelled``. Pure static analysis with :mod:`ast`
(the document is never imported or run); :func:`analyze_semantics` returns ``None`` when the text
does not parse and never raises for bad input. The body reader is :mod:`~envgen.proposers.template.bodies`.

Contract (the rules, in the order they apply):

* **Main class.** Every top-level class but exceptions, warnings, enums, protocols, named tuples, typed
  dicts and ``Test*`` classes is a candidate, with the methods it inherits from bases in the same
  document. The candidate whose ranked operations weigh most wins (:data:`ROLE_WEIGHTS` plus one per
  guard up to two; inherited operations count half; +8 for a pattern other than ``generic``; +6 when
  the class is named like the file, ``ZipFile`` in ``zipfile.py``); a private class counts half, and so
  do the document's public module functions, read as one more candidate (``main_class`` is ``None``).
* **Operations** are the public instance methods (properties included; class and static methods are
  constructors or utilities and are left out) and the dunders ``__contains__``, ``__len__``,
  ``__getitem__``, ``__setitem__`` and ``__delitem__`` (read, count, lookup, update, remove). At most
  :data:`MAX_OPS`, the most representative first (role weight, guards, a docstring, then source order);
  a method whose body is only ``pass`` / ``...`` / ``raise NotImplementedError`` is ``abstract``, ranks
  last and takes no part in the pattern.
* **Body first.** A method's body is read in statement order, and a call of another method of the class
  is read in place of the call, three levels deep (``get`` -> ``get_nowait`` -> ``_get`` ->
  ``self._queue.popleft()``); a module function reads the functions it calls for their guards only.
  Changes inside a ``while`` loop or an ``except`` handler (waiting, clean-up) count only when the
  method makes no other change, and changes to an attribute named ``*cache*`` never count. The role is
  the first that applies:

  1. an owner/holder attribute set -> ``acquire``, cleared (``None``) -> ``release``; a ``locked`` flag set
     True/False the same; ``self.<x>.acquire()``/``.release()`` the same when no container changes;
  2. taking or removing from one container and adding to another -> ``move``;
  3. ``popleft()``, ``pop(0)``, ``heappop``, ``get()`` on a queue-named attribute (order ``first``),
     ``pop()``/``pop(-1)``/``popitem()`` (``last``; also through a parameter defaulting to 0 or -1)
     whose value the method returns -> ``take``; when the value is dropped -> ``remove``;
  4. ``append``/``appendleft``/``insert``/``add``/``put``/``extend``/``setdefault``/``heappush``/
     ``insort`` on a container -> ``add``;
  5. ``del x[k]`` with ``x[k2] = v`` on the same container (one element replaced by another) -> ``update``;
     else ``del x[k]``, ``remove``, ``discard``, ``pop(key)`` -> ``remove``; setting another object's
     ``parent`` -> ``move``; ``clear()`` or an attribute reset to an empty container -> ``clear``;
  6. a state-like attribute (``state``, ``status``, ``stage``, ``phase``, ``closed``, ``done``,
     ``cancelled``, ``running``, ``finished``, ``stopped``, ``started``, ``active``, ``paused``,
     ``shutdown``, ``is_*``, ``*_state``, ``*_status``) set to a constant (a literal, a module constant,
     an enum member) -> ``change_state``;
  7. ``+=``/``-=``, ``x = x - 1`` (also through a local) or ``d[k] = d[k] + n`` -> ``adjust``, or
     ``transfer`` when two targets of one field move in opposite directions (``a.balance``/``b.balance``,
     ``balances[x]``/``balances[y]``);
  8. ``x[k] = v`` -> ``add`` (the name's role when the name gives one, below); any other attribute
     assignment (a slice assignment included) -> ``update``;
  9. a method that changes nothing: ``return sum(...)`` -> ``total``; ``len(...)`` or an attribute some
     method adjusts -> ``count``; ``x[k]``/``x.get(k)`` -> ``lookup``; an iteration (``list(x)``,
     ``keys()``, a comprehension, ``yield``) -> ``search``.

* **Name second.** The name (:data:`NAME_ROLES`, by its whole snake_case form, then its first word)
  decides when the body gives no role, only ``update``, a role read only from helpers (a helper's
  bookkeeping does not name the method: ``ZipFile.read`` is a lookup although ``open`` counts
  references), a role read only from changes inside a loop (a heap's ``min`` that drops stale entries
  is a lookup), a role read only from an item store ``x[k] = v`` (a memo: ``get_rows`` that fills a
  matrix and returns it is a lookup), or a read where the name gives another read; ``acquire``/``release``
  names win over any change, and a take name (``pop``) whose body removes and returns the value is a take.
  ``is_*``/``has_*``/``can_*``/``empty``/``full`` read; ``iter*`` search; ``find_*``/``get_by*`` look
  up; a ``get*`` with a parameter other than ``block``/``timeout``/``default`` looks up, a bare
  ``get_x()`` reads; ``pop``-like names with a required key remove. Otherwise the role is ``read``. A
  ``change_state`` target comes from the constant (a string normalised to snake_case; True gives the
  attribute's word, ``closed``; False the name's target or ``not_<word>``), else from the name
  (``cancel`` -> ``cancelled``, ``start`` -> ``running``, ``shutdown`` -> ``shut_down``).
* **Guards** are ``raise`` statements under an ``if``/``elif``/``else``/``while``/``match`` test (the
  condition is the innermost test as it reads for the raise to happen: an ``else`` branch negates it),
  ``assert cond, msg`` (the condition negated) and raises of a new exception in an ``except
  <specific>`` handler (condition ``except KeyError``), found before the method's first change outside
  loops, in its body or in a method it calls directly (one level deep); one per exception and message.
  The message is the literal text (an f-string's placeholders as ``{name}``, the left side of
  ``'...' % x``). The kind (:data:`GUARD_KINDS`) is the first rule that matches the message's words,
  else the exception's name, else the condition's form (:func:`~envgen.proposers.template.bodies.guard_kind`).
* **Patterns**, decided in this order from the operations (abstract ones left out): ``lock`` (acquire
  and release, and not both add and take/remove); ``scheduler`` (an add with a time/when/delay/priority/
  deadline parameter, and a remove or a ``cancel*`` operation); ``archive`` (two archive member methods
  among ``namelist``/``infolist``/``getinfo``/``getnames``/``getmembers``/``getmember``/``extract*``/
  ``writestr``/``addfile``, or a file-backed class, one storing ``fp``/``fileobj``/``file``/``path``...,
  with add, remove and lookup or search); ``set`` (``add``, ``discard`` or ``remove``, and
  ``__contains__``); ``queue`` / ``stack`` (add and a take other than ``popitem``: any first-order take
  -> queue, else stack); ``ledger`` (a transfer, two adjusts of counted fields (not positions, offsets,
  line numbers or sizes), or one with money words or ``Decimal``/``Fraction`` in the class);
  ``lifecycle`` (a change_state operation and two or more states); ``registry`` (two mapping methods
  among ``__getitem__``/``__setitem__``/``__delitem__``/``get``/``set``/``register``/``unregister``/
  ``lookup``, or a keyed store with a lookup or remove); ``tree`` (an attribute naming a parent or
  children, ``parentNode``, ``_children``, and a move or two methods named with a tree word); else ``generic``.
* **States** are the strings (also module constants and enum members, with all the enum's members)
  compared with or assigned to a state-like attribute, ``__init__``'s first, then each method's in
  source order (comparisons before assignments), then the targets of ``change_state`` operations;
  normalised to snake_case, 3 to 30 characters. **Capacity** is the first bounding attribute a
  comparison checks (``max*``, ``*capacity``, ``*limit``, ``maxlen``, ``*maxsize``, or the other side
  of ``len(self.x)``), leading ``_`` dropped. **Constants** are module and class ``UPPER_CASE`` names
  (a leading ``_`` allowed) bound to an int, float or str, not a bool (at most 24, strings cut at 80).
  **Words** are the code's identifier words (strings and comments left out, stop words dropped), most
  frequent first (at most 40).
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from envgen.blueprint.render.model import snake
from envgen.blueprint.render.words import STATUS_TARGET, STOP_WORDS, word_set
from envgen.proposers.template.bodies import (
    GUARD_KINDS,
    ClassReader,
    Effect,
    Guard,
    Summary,
    first_line,
    is_abstract,
    name_of,
)

__all__ = ["GUARD_KINDS", "MAX_OPS", "NAME_ROLES", "PATTERNS", "ROLES", "ROLE_WEIGHTS", "DocOp", "DocSemantics",
           "Guard", "analyze_semantics"]

MAX_OPS = 12
ROLES = ("add", "take", "remove", "read", "count", "total", "change_state", "update", "adjust", "transfer",
         "acquire", "release", "move", "lookup", "search", "clear")
PATTERNS = ("queue", "stack", "lock", "scheduler", "ledger", "archive", "registry", "lifecycle", "set", "tree",
            "generic")


def _table(spec: dict[str, str]) -> dict[str, str]:
    return {word: role for role, words in spec.items() for word in words.split()}


NAME_ROLES: dict[str, str] = _table({
    "add": "add put push append insert register enter enterabs schedule enqueue submit post attach store create "
           "new spawn write writestr addfile",
    "take": "get pop take dequeue next pull shift consume receive recv popleft popitem",
    "remove": "remove delete discard del unregister drop erase evict unlink detach",
    "change_state": "cancel close open start stop pause resume finish shutdown reset abort suspend expire enable "
                    "disable activate deactivate approve reject complete archive",
    "acquire": "acquire lock", "release": "release unlock",
    "update": "set update configure config modify edit change assign replace",
    "move": "move rename reparent",
    "lookup": "find lookup locate resolve retrieve fetch read peek min max top front getinfo getmember extract "
              "extractfile",
    "search": "list items keys values iter search query filter select all walk scan entries namelist infolist "
              "getnames getmembers extractall",
    "count": "count size len qsize length", "total": "total sum", "clear": "clear flush purge",
})
"""A method name's first word (or whole name) -> its role, when the body does not decide."""

_TARGETS = {**STATUS_TARGET, "open": "open", "reset": "reset", "run": "running", "begin": "running"}
_DUNDERS = {"__contains__": "read", "__len__": "count", "__getitem__": "lookup", "__setitem__": "update",
            "__delitem__": "remove"}
ROLE_WEIGHTS: dict[str, int] = {
    "take": 10, "add": 10, "acquire": 10, "release": 10, "remove": 8, "change_state": 8, "transfer": 8, "move": 7,
    "adjust": 7, "clear": 5, "update": 5, "lookup": 4, "count": 4, "total": 4, "search": 3, "read": 1}
"""How representative each role is: ranks operations and weighs a candidate main class."""
_SKIP_BASES = re.compile(r"(Error|Exception|Warning|Enum|IntEnum|StrEnum|Flag|IntFlag|Protocol|NamedTuple|"
                         r"TypedDict)$")
_ENUM_BASES = word_set("Enum IntEnum StrEnum Flag IntFlag")
_ARCHIVE = word_set("namelist infolist getinfo getnames getmembers getmember extract extractall extractfile "
                   "writestr addfile")
_TIME_PARAMS = re.compile(r"^(time|when|delay|priority|at|deadline|due|eta|schedule|start|interval|run_at|"
                          r"delay_\w+|\w+_time|\w+_at)$")
_COUNTED = re.compile(r"^(?!.*(pos|offset|index|idx|line|col|cursor|read|written|seek|size|depth|level)\w* [-+]=)"
                      r".*\S [-+]= ")
_MONEY = re.compile(r"balance|amount|credit|debit|price|cost|fund|money|deposit|withdraw|payment")
_WORD_RE = re.compile(r"^[a-z][a-z0-9]{2,13}$")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NOISE = re.compile(r"(\"\"\"|''')[\s\S]*?\1|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|#[^\n]*")
_MAX_WORDS = 40
_MAX_CONSTANTS = 24
_KIN = re.compile(r"parent|child")
_TREE = word_set("parent children child subtree sibling siblings ancestors descendants move rename reparent "
                 "add_child remove_child")

Fn = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass
class DocOp:
    """One operation of the document's API."""

    name: str  #: as the document spells it (``get_nowait``)
    origin: str  #: ``Class.method`` (or the function name)
    role: str  #: one of :data:`ROLES`
    order: str = ""  #: take: ``first`` (FIFO) or ``last`` (LIFO)
    target_state: str | None = None  #: change_state: the state it moves to (``cancelled``)
    guards: list[Guard] = field(default_factory=list)
    updates: list[str] = field(default_factory=list)  #: attribute assignments, as source text (at most 6)
    doc: str = ""  #: the first docstring line
    params: list[str] = field(default_factory=list)  #: parameters but self/cls, in order
    abstract: bool = False  #: the body is only ``pass`` / ``...`` / ``raise NotImplementedError``


@dataclass
class DocSemantics:
    """What a document's code does, for a world graft (see the module docstring)."""

    pattern: str  #: one of :data:`PATTERNS`
    main_class: str | None
    ops: list[DocOp]
    states: list[str] = field(default_factory=list)
    capacity: str | None = None
    constants: dict[str, int | float | str] = field(default_factory=dict)
    words: list[str] = field(default_factory=list)


# -- roles -----------------------------------------------------------------------------------------

_READS = frozenset(("read", "count", "total", "lookup", "search"))
_BLOCKING = frozenset(("block", "blocking", "timeout", "default"))


def _name_role(fn: Fn) -> tuple[str | None, str]:
    """The role a method's name gives (and a take's order), or ``None``."""
    s = snake(fn.name)
    first = s.split("_", 1)[0]
    if s.startswith(("is_", "has_", "can_")) or s in ("empty", "full"):
        return "read", ""
    if s.startswith("get_by") or s.startswith("find_"):
        return "lookup", ""
    role = {"get_nowait": "take", "put_nowait": "add"}.get(s) or NAME_ROLES.get(s) or NAME_ROLES.get(first)
    if s.startswith("iter"):
        return "search", ""
    if role == "take" and first == "get":
        if [p for p in _params(fn) if p not in _BLOCKING]:
            return "lookup", ""
        if s != "get" and s != "get_nowait":
            return "read", ""
    if role == "take" and [p for p in _required(fn) if p not in _BLOCKING]:
        return "remove", ""
    if role == "take":
        return role, "last" if first in ("pop", "popitem") else "first"
    return role, ""


def _body_role(summary: Summary, counters: set[str]) -> tuple[str | None, str, Effect | None]:
    """The role a method's changes (or, when it changes nothing, its return) give: (role, order, the effect)."""
    effects = [e for e in summary.effects if not e.loop] or summary.effects
    by: dict[str, list[Effect]] = {}
    for e in effects:
        by.setdefault(e.kind, []).append(e)
    locks = by.get("owner", []) + by.get("lock", [])
    if not locks and not (by.get("add") or by.get("take") or by.get("remove")):
        locks = by.get("lockcall", [])
    if len({e.value for e in locks}) == 1:
        return str(locks[0].value), "", locks[0]
    taken = by.get("take", []) + by.get("remove", [])
    if taken and by.get("add") and {e.target for e in taken} != {e.target for e in by["add"]}:
        return "move", "", taken[0]
    if by.get("take"):
        take = by["take"][0]
        return ("take", take.order, take) if "value" in summary.returns else ("remove", "", take)
    replaced = {e.target for e in by.get("store", [])} & {e.target for e in by.get("remove", [])}
    if replaced:  # a key removed and another stored in the same container: one element replaced by another
        return "update", "", next(e for e in by["store"] if e.target in replaced)
    for kind, role in (("add", "add"), ("remove", "remove"), ("move", "move"), ("clear", "clear"),
                       ("state", "change_state")):
        if by.get(kind):
            return role, "", by[kind][0]
    if by.get("adjust"):
        return ("transfer" if _transfer(by["adjust"]) else "adjust"), "", by["adjust"][0]
    if by.get("store"):
        return "add", "", by["store"][0]
    if by.get("assign"):
        return "update", "", by["assign"][0]
    return _read_role(summary.returns, counters), "", None


def _field(target: str) -> str:
    """``src.balance`` -> ``balance``; ``balances[a]`` -> ``balances``."""
    return target.split("[", 1)[0].rsplit(".", 1)[-1]


def _transfer(adjusts: list[Effect]) -> bool:
    """Two targets of one field (``a.balance``, ``b.balance``; ``balances[x]``, ``balances[y]``) moving in
    opposite directions."""
    by_field: dict[str, set[tuple[str, object]]] = {}
    for e in adjusts:
        by_field.setdefault(_field(e.target), set()).add((e.target, e.value))
    return any(len({t for t, _ in moves}) > 1 and {v for _, v in moves} >= {1, -1} for moves in by_field.values())


def _read_role(returns: set[str], counters: set[str]) -> str | None:
    if "sum" in returns:
        return "total"
    if "len" in returns or any(r.startswith("attr:") and r[5:] in counters for r in returns):
        return "count"
    for token, role in (("lookup", "lookup"), ("iter", "search")):
        if token in returns:
            return role
    return None


def _role(fn: Fn, summary: Summary, counters: set[str]) -> tuple[str, str, Effect | None]:
    if fn.name in _DUNDERS:
        return _DUNDERS[fn.name], "", None
    named, named_order = _name_role(fn)
    body, order, effect = _body_role(summary, counters)
    if named in ("acquire", "release") and body is not None and body not in _READS:
        return named, "", None
    if named == "take" and body == "remove" and "value" in summary.returns:  # a pop that returns what it removed
        return "take", named_order, effect
    incidental = effect is not None and (effect.nested or effect.loop or effect.kind == "store")
    weak = body is None or body == "update" or incidental or (body in _READS and named in _READS)
    if weak and named:
        return named, named_order, None
    return body or "read", order, effect


def _norm_state(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    s = re.sub(r"[^a-z0-9]+", "_", value.strip().lower()).strip("_")
    return s if 3 <= len(s) <= 30 and s[0].isalpha() else None


def _target(fn: Fn, effect: Effect | None) -> str | None:
    s = snake(fn.name)
    by_name = _TARGETS.get(s) or _TARGETS.get(s.split("_", 1)[0])
    if effect is None or effect.kind != "state":
        return by_name
    if isinstance(effect.value, bool):
        word = snake(effect.target)
        word = word[3:] if word.startswith("is_") else word
        return word if effect.value else by_name or f"not_{word}"
    return _norm_state(effect.value) or by_name


def _required(fn: Fn) -> list[str]:
    positional = [p.arg for p in (*fn.args.posonlyargs, *fn.args.args) if p.arg not in ("self", "cls")]
    return positional[: len(positional) - len(fn.args.defaults)] if fn.args.defaults else positional


def _params(fn: Fn) -> list[str]:
    a = fn.args
    names = [p.arg for p in (*a.posonlyargs, *a.args)]
    names += [a.vararg.arg] if a.vararg else []
    names += [p.arg for p in a.kwonlyargs]
    return [n for n in names if n not in ("self", "cls")]


# -- the document ----------------------------------------------------------------------------------


@dataclass
class _Module:
    """Module-level facts every class reading needs."""

    classes: dict[str, ast.ClassDef]
    functions: dict[str, Fn]
    constants: dict[str, object]
    enums: dict[str, list[str]]
    stem: str
    scans: dict[int, Any] = field(default_factory=dict)  #: one body scan per function node, shared by classes


@dataclass
class _Candidate:
    name: str | None
    ops: list[DocOp]
    pattern: str
    states: list[str]
    capacity: str | None
    score: float


def _methods(body: list[ast.stmt]) -> dict[str, Fn]:
    out: dict[str, Fn] = {}
    for stmt in body:
        if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        decorators = {name_of(d) for d in stmt.decorator_list}
        if decorators & {"setter", "deleter", "overload"}:
            continue
        out[stmt.name] = stmt
    return out


def _lineage(cls: ast.ClassDef, module: _Module, seen: set[str]) -> dict[str, tuple[str, Fn]]:
    """The methods of a class and of its bases defined in the same document, with the class defining each
    (the class's own win)."""
    out: dict[str, tuple[str, Fn]] = {}
    for base in reversed(cls.bases):
        parent = module.classes.get(name_of(base))
        if parent is not None and parent.name not in seen:
            out.update(_lineage(parent, module, seen | {parent.name}))
    out.update((n, (cls.name, f)) for n, f in _methods(cls.body).items())
    return out


def _public(name: str) -> bool:
    return not name.startswith("_") or name in _DUNDERS


def _is_op(fn: Fn) -> bool:
    """A public method of an instance (class and static methods are constructors or utilities, not operations)."""
    return _public(fn.name) and not {name_of(d) for d in fn.decorator_list} & {"classmethod", "staticmethod"}


def _read_ops(reader: ClassReader, members: dict[str, tuple[str | None, Fn]], counters: set[str]
              ) -> tuple[list[DocOp], set[str]]:
    ops: list[DocOp] = []
    stores: set[str] = set()
    for name, (owner, fn) in members.items():
        if not _is_op(fn):
            continue
        summary = reader.summary(name)
        role, order, effect = _role(fn, summary, counters)
        if effect is not None and effect.kind == "store":
            stores.add(name)
        target = _target(fn, effect) if role == "change_state" else None
        ops.append(DocOp(name, f"{owner}.{name}" if owner else name, role, order if role == "take" else "", target,
                         summary.guards, summary.updates, first_line(fn), _params(fn), is_abstract(fn)))
    return ops, stores


def _rank(ops: list[DocOp]) -> list[DocOp]:
    def key(item: tuple[int, DocOp]) -> tuple[int, float, int]:
        i, op = item
        weight = ROLE_WEIGHTS.get(op.role, 1) + 2 * min(len(op.guards), 2) + (1 if op.doc else 0)
        return (1 if op.abstract else 0, -weight, i)

    return [op for _, op in sorted(enumerate(ops), key=key)]


def _states(reader: ClassReader, names: list[str], ops: list[DocOp], enums: dict[str, list[str]]) -> list[str]:
    raw: list[object] = []
    for name in sorted(names, key=lambda n: n != "__init__"):
        scan = reader.scan(name)
        raw += scan.compared
        raw += [e.value for e in scan.events if isinstance(e, Effect) and e.kind == "state"]
    for op in ops:
        raw.append(op.target_state)
    out: list[str] = []
    for value in raw:
        for member in next((m for m in enums.values() if value in m), [value]):
            state = _norm_state(member)
            if state and state not in out:
                out.append(state)
    return out


def _pattern(ops: list[DocOp], attrs: set[str], used: set[str], states: list[str], stores: set[str]) -> str:
    """The pattern of a class's operations (the decision order is the module docstring's)."""
    live = [o for o in ops if not o.abstract] or ops
    roles = Counter(o.role for o in live)
    names = {o.name for o in live}
    container = bool(roles["add"] and (roles["take"] or roles["remove"]))
    if roles["acquire"] and roles["release"] and not (roles["add"] and roles["take"]) and not container:
        return "lock"
    timed = any(_TIME_PARAMS.match(p) for o in live if o.role == "add" for p in o.params)
    cancels = roles["remove"] or any(o.name.startswith("cancel") for o in live)
    if roles["add"] and timed and cancels:
        return "scheduler"
    files = {a.lstrip("_") for a in attrs} & {"fp", "fileobj", "file", "filename", "path", "fd", "stream"}
    if len(names & _ARCHIVE) >= 2 or (files and roles["add"] and roles["remove"] and (roles["lookup"]
                                                                                      or roles["search"])):
        return "archive"
    if "add" in names and names & {"discard", "remove"} and "__contains__" in names:
        return "set"
    takes = [o for o in live if o.role == "take" and o.name != "popitem"]
    if roles["add"] and takes:
        return "queue" if any(o.order == "first" for o in takes) else "stack"
    counted = [o for o in live if o.role == "transfer" or (o.role == "adjust" and any(
        _COUNTED.match(u) for u in o.updates))]
    money = any(_MONEY.search(u) for o in live for u in o.updates) or bool(used & {"Decimal", "Fraction"})
    if roles["transfer"] or len(counted) >= 2 or (counted and money):
        return "ledger"
    if roles["change_state"] and len(states) >= 2:
        return "lifecycle"
    mapping = names & {"__getitem__", "__setitem__", "__delitem__", "get", "set", "register", "unregister", "lookup"}
    if len(mapping) >= 2 or (stores and (roles["lookup"] or roles["remove"])):
        return "registry"
    treeish = [n for n in names if {snake(n), *snake(n).split("_")} & _TREE]
    if any(_KIN.search(snake(a)) for a in attrs) and (roles["move"] or len(treeish) >= 2):
        return "tree"
    return "generic"


def _candidate(name: str | None, members: dict[str, tuple[str | None, Fn]], module: _Module) -> _Candidate:
    every = {n: f for n, (_, f) in members.items()}
    reader = ClassReader(every, module.constants, frozenset(module.enums), name is not None,
                         module.scans if name is not None else None)
    counters = {e.target for n in every for e in reader.scan(n).events
                if isinstance(e, Effect) and e.kind == "adjust"}
    ops, stores = _read_ops(reader, members, counters)
    states = _states(reader, list(every), ops, module.enums)
    attrs: set[str] = set()
    used: set[str] = set()
    for n in every if name else ():
        attrs |= reader.scan(n).stored
        used |= reader.scan(n).used
    pattern = _pattern(ops, attrs, used, states, stores)
    bounds = [b for n in every for b in reader.scan(n).bounds]
    ranked = _rank(ops)[:MAX_OPS]
    score = sum((ROLE_WEIGHTS.get(o.role, 1) + min(len(o.guards), 2)) * (1.0 if o.origin.startswith(f"{name}.")
                                                                           else 0.5)
                for o in ranked if not o.abstract)
    score += 8 if pattern != "generic" else 0
    if name is not None and snake(name).replace("_", "") == module.stem:
        score += 6
    score *= 0.5 if name is None or name.startswith("_") else 1.0
    return _Candidate(name, ranked, pattern, states, bounds[0] if bounds else None, score)


def _scalar(node: ast.expr | None) -> int | float | str | None:
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node, sign = node.operand, -1
    value = node.value if isinstance(node, ast.Constant) else None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    if isinstance(value, str):
        return value[:80] if sign == 1 else None
    return sign * value


def _constants(body: list[ast.stmt], out: dict[str, int | float | str]) -> None:
    for stmt in body:
        value: ast.expr | None
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            target, value = stmt.targets[0].id, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            target, value = stmt.target.id, stmt.value
        else:
            continue
        scalar = _scalar(value)
        bare = target.lstrip("_")
        if scalar is not None and bare.isupper() and target not in out:
            out[target] = scalar


def _module(tree: ast.Module, path: str) -> _Module:
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    constants: dict[str, int | float | str] = {}
    _constants(tree.body, constants)
    enums: dict[str, list[str]] = {}
    for cls in classes.values():
        _constants(cls.body, constants)
        if {name_of(b) for b in cls.bases} & _ENUM_BASES:
            enums[cls.name] = [t.id for s in cls.body if isinstance(s, ast.Assign) for t in s.targets
                               if isinstance(t, ast.Name) and not t.id.startswith("_")]
    stem = re.sub(r"[^a-z0-9]", "", path.rsplit("/", 1)[-1].removesuffix(".py").lower())
    return _Module(classes, _methods(tree.body), dict(constants), enums, stem)


def _words(text: str) -> list[str]:
    """Identifier words of the code (strings and comments left out), most frequent first."""
    counts: Counter[str] = Counter()
    for raw, n in Counter(_IDENT.findall(_NOISE.sub(" ", text))).items():
        for w in snake(raw).split("_"):
            if _WORD_RE.match(w) and w not in STOP_WORDS:
                counts[w] += n
    return [w for w, _ in counts.most_common(_MAX_WORDS)]


def analyze_semantics(text: str, path: str = "") -> DocSemantics | None:
    """What a Python document's code does (see the module docstring); ``None`` when it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError, TypeError):
        return None
    try:
        module = _module(tree, path)
        candidates = [_candidate(cls.name, dict(_lineage(cls, module, {cls.name})), module)
                      for cls in module.classes.values()
                      if not any(_SKIP_BASES.search(name_of(b)) for b in cls.bases)
                      and not _SKIP_BASES.search(cls.name) and not cls.name.startswith("Test")]
        if any(_public(n) for n in module.functions):
            candidates.append(_candidate(None, {n: (None, f) for n, f in module.functions.items()}, module))
        best = max(candidates, key=lambda c: c.score, default=None)
        constants = {k: v for k, v in list(module.constants.items())[:_MAX_CONSTANTS]
                     if isinstance(v, int | float | str)}
        words = _words(text)
    except RecursionError:
        return None
    if best is None:
        return DocSemantics("generic", None, [], constants=constants, words=words)
    return DocSemantics(best.pattern, best.name, best.ops, best.states, best.capacity, constants, words)

"""Operation semantics of whole documents (envgen.proposers.template.semantics): patterns, states, the main
class, and the standard library's queue, scheduler, lock, archive and mapping classes read offline.

The rules for single methods (roles, names, guards) are pinned in ``test_semantics.py``.
"""

from __future__ import annotations

import asyncio.queues
import inspect
import mailbox
import queue
import sched
import shelve
import tarfile
import textwrap
import threading
import zipfile

import pytest

from envgen.proposers.template.semantics import MAX_OPS, PATTERNS, ROLES, DocSemantics, analyze_semantics


def sem(source: str, path: str = "") -> DocSemantics:
    result = analyze_semantics(textwrap.dedent(source), path)
    assert result is not None
    return result


# -- patterns ------------------------------------------------------------------------------------------


def container(take: str, extra: str = "", add_params: str = "item") -> str:
    return f"""
    class C:
        def __init__(self):
            self.items = []
        def push(self, {add_params}):
            self.items.append(item)
        def take(self):
            return self.items.{take}
        {extra}
    """


@pytest.mark.parametrize(("source", "pattern"), [
    (container("pop(0)"), "queue"),
    (container("pop()"), "stack"),
    (container("pop()", "def cancel(self, item): self.items.remove(item)", "item, delay, priority"), "scheduler"),
    (container("pop()", "def cancel(self, item): self.items.remove(item)"), "stack"),  # no time parameter
    (container("pop(0)", add_params="item, delay"), "queue"),  # a time parameter but nothing cancels
])
def test_container_patterns(source: str, pattern: str) -> None:
    assert sem(source).pattern == pattern


def test_lock_pattern_both_ways() -> None:
    lock = """
    class Mutex:
        def __init__(self): self._owner = None
        def acquire(self, who):
            if self._owner is not None:
                raise RuntimeError("already locked")
            self._owner = who
        def release(self):
            if self._owner is None:
                raise RuntimeError("release unlocked lock")
            self._owner = None
    """
    found = sem(lock)
    assert found.pattern == "lock"
    assert [(o.name, o.role, [g.kind for g in o.guards]) for o in found.ops] == [
        ("acquire", "acquire", ["locked"]), ("release", "release", ["unlocked"])]
    mailbox_like = lock + """
        def add(self, m): self.messages.append(m)
        def remove(self, m): self.messages.remove(m)
    """
    assert sem(mailbox_like).pattern != "lock"


def test_archive_registry_set_and_tree_patterns() -> None:
    assert sem("""
    class Pack:
        def namelist(self): return [m.name for m in self.members]
        def extract(self, name, path): pass
        def writestr(self, name, data): self.members.append((name, data))
    """).pattern == "archive"
    assert sem("""
    class Names:
        def __init__(self): self._d = {}
        def __getitem__(self, k): return self._d[k]
        def __setitem__(self, k, v): self._d[k] = v
    """).pattern == "registry"
    assert sem("""
    class Tags:
        def __init__(self): self._s = set()
        def add(self, t): self._s.add(t)
        def discard(self, t): self._s.discard(t)
        def __contains__(self, t): return t in self._s
    """).pattern == "set"
    assert sem("""
    class Folder:
        def __init__(self, parent=None):
            self.parent = parent
            self.children = []
        def add_child(self, c): self.children.append(c)
        def move(self, new_parent): self.parent = new_parent
    """).pattern == "tree"
    assert sem("""
    class Node:
        def __init__(self): self.parentNode = None
        def appendChild(self, node): node.parentNode = self
        def removeChild(self, node): node.parentNode = None
    """).pattern == "tree"
    assert sem("""
    class Cursor:
        def __init__(self): self.x = 0
        def move(self, dx): self.x = dx
        def rename(self, name): self.name = name
    """).pattern == "generic"  # tree words without a parent or children


def test_ledger_pattern_both_ways() -> None:
    assert sem("""
    class Account:
        def __init__(self): self.balance = 0
        def deposit(self, amount): self.balance += amount
        def withdraw(self, amount):
            if amount > self.balance:
                raise ValueError("insufficient funds")
            self.balance -= amount
    """).pattern == "ledger"
    assert sem("""
    class Reader:
        def __init__(self): self._pos = 0
        def read(self, n): self._pos += n
        def skip(self, n): self._pos += n
    """).pattern == "generic"  # position counters are not a ledger


def test_lifecycle_needs_two_states() -> None:
    two = sem("""
    import enum
    class Phase(enum.Enum):
        NEW = 1
        RUNNING = 2
        DONE = 3
    class Task:
        def __init__(self): self._state = Phase.NEW
        def run(self):
            if self._state is not Phase.NEW:
                raise RuntimeError("already started")
            self._state = Phase.RUNNING
        def finish(self): self._state = Phase.DONE
    """)
    assert two.pattern == "lifecycle"
    assert two.states == ["new", "running", "done"]
    one = sem("""
    class File:
        def __init__(self): self.closed = False
        def close(self): self.closed = True
    """)
    assert (one.pattern, one.states) == ("generic", ["closed"])


def test_states_keep_the_initial_one_first_and_come_from_comparisons_too() -> None:
    found = sem("""
    _PENDING = "PENDING"
    class Order:
        def __init__(self): self.status = _PENDING
        def ship(self):
            if self.status not in ("PAID", "PENDING"):
                raise ValueError("cannot ship")
            self.status = "SHIPPED"
        def deliver(self): self.status = "DELIVERED"
    """)
    assert found.states == ["pending", "paid", "shipped", "delivered"]
    assert found.pattern == "lifecycle"
    assert found.constants == {"_PENDING": "PENDING"}


# -- the document as a whole ------------------------------------------------------------------------


def test_main_class_skips_exceptions_and_prefers_the_richest_or_the_file_named_class() -> None:
    source = """
    class QueueError(Exception):
        def add(self, x): self.items.append(x)
    class Helper:
        def describe(self): return "x"
    class Queue:
        def __init__(self): self.items = []
        def put(self, x): self.items.append(x)
        def get(self): return self.items.pop(0)
    """
    assert sem(source).main_class == "Queue"
    assert sem("""
    class Alpha:
        def a(self): self.x = 1
    class Beta:
        def b(self): self.x = 1
    """, "pkg/beta.py").main_class == "Beta"


def test_inherited_operations_count_with_their_origin() -> None:
    found = sem("""
    class Base:
        def __init__(self): self.items = []
        def put(self, x): self.items.append(x)
    class Lifo(Base):
        def get(self): return self.items.pop()
    """)
    assert found.main_class == "Lifo"
    assert {o.name: o.origin for o in found.ops} == {"put": "Base.put", "get": "Lifo.get"}
    assert found.pattern == "stack"


def test_module_functions_when_no_class_qualifies() -> None:
    found = sem("""
    REGISTRY = {}
    MAX_ITEMS = 10
    RATE = 0.5
    FLAG = True
    def register(name, value):
        if name in REGISTRY:
            raise KeyError("already registered")
        REGISTRY[name] = value
    def lookup(name):
        return REGISTRY[name]
    def _private(): pass
    """)
    assert found.main_class is None
    assert [(o.name, o.role, o.params) for o in found.ops] == [("register", "add", ["name", "value"]),
                                                               ("lookup", "lookup", ["name"])]
    assert found.ops[0].guards[0].kind == "exists"
    assert found.constants == {"MAX_ITEMS": 10, "RATE": 0.5}


def test_ops_are_capped_and_ranked_and_words_are_counted() -> None:
    methods = "\n".join(f"    def read_{i}(self): return self.shelf" for i in range(20))
    source = f"class Big:\n    def __init__(self): self.shelf = []\n{methods}\n    def add(self, x):\n" \
             f"        '''Add one.'''\n        self.shelf.append(x)\n"
    found = sem(source)
    assert len(found.ops) == MAX_OPS
    assert found.ops[0].name == "add" and found.ops[0].doc == "Add one."
    assert found.words[:2] == ["shelf", "read"]
    assert all(w.isidentifier() for w in found.words)


def test_bad_input_gives_none_and_odd_input_never_raises() -> None:
    assert analyze_semantics("def broken(:\n") is None
    deep = analyze_semantics("x = " + "(" * 300 + "1" + ")" * 300)  # too deep for some parsers: None, not a crash
    assert deep is None or deep.ops == []
    assert analyze_semantics("\x00") is None
    empty = analyze_semantics("")
    assert empty is not None and (empty.pattern, empty.main_class, empty.ops) == ("generic", None, [])
    odd = analyze_semantics("class A:\n    def f(self, *a, **k):\n        self[0] += 1\n        del self.x\n"
                            "        (self.a, self.b) = 1, 2\n        self.q.pop(*a)\n        return (yield)\n")
    assert odd is not None and odd.ops[0].name == "f"


def test_the_same_text_gives_the_same_result() -> None:
    text = inspect.getsource(queue)
    assert analyze_semantics(text, "queue.py") == analyze_semantics(text, "queue.py")


def test_every_role_and_pattern_is_a_declared_one() -> None:
    text = inspect.getsource(threading)
    found = analyze_semantics(text, "threading.py")
    assert found is not None and found.pattern in PATTERNS
    assert {o.role for o in found.ops} <= set(ROLES)


# -- the standard library -------------------------------------------------------------------------


def source_of(obj: object) -> str:
    return inspect.getsource(obj)  # type: ignore[arg-type]


def test_stdlib_queue() -> None:
    found = sem(source_of(queue), "queue.py")
    assert (found.pattern, found.main_class, found.capacity) == ("queue", "Queue", "maxsize")
    by = {o.name: o for o in found.ops}
    assert by["put"].role == "add"
    assert ("Full", "full") in {(g.exception, g.kind) for g in by["put"].guards}
    assert (by["get"].role, by["get"].order) == ("take", "first")
    assert ("Empty", "empty") in {(g.exception, g.kind) for g in by["get"].guards}
    assert by["task_done"].role == "adjust"
    assert [(g.exception, g.message) for g in by["task_done"].guards] == [
        ("ValueError", "task_done() called too many times")]
    assert by["qsize"].role == "count"
    assert by["put_nowait"].role == "add" and by["get_nowait"].role == "take"


def test_stdlib_asyncio_queue() -> None:
    found = sem(source_of(asyncio.queues), "asyncio/queues.py")
    assert (found.pattern, found.main_class, found.capacity) == ("queue", "Queue", "maxsize")
    by = {o.name: o for o in found.ops}
    assert [(g.exception, g.kind, g.condition) for g in by["put_nowait"].guards] == [
        ("QueueFull", "full", "self.full()")]
    assert (by["get"].role, by["get"].order) == ("take", "first")  # get -> get_nowait -> _get -> popleft
    assert [g.exception for g in by["get"].guards] == ["QueueEmpty"]
    assert by["task_done"].guards[0].message == "task_done() called too many times"


def test_stdlib_sched() -> None:
    found = sem(source_of(sched), "sched.py")
    assert (found.pattern, found.main_class) == ("scheduler", "scheduler")
    by = {o.name: o.role for o in found.ops}
    assert by["enter"] == by["enterabs"] == "add"
    assert by["cancel"] == "remove"
    assert {"run", "empty"} <= set(by)


def test_stdlib_locks() -> None:
    for cls in (threading.Semaphore, threading._RLock):
        found = sem(source_of(cls))
        assert found.pattern == "lock", cls
        assert {o.name: o.role for o in found.ops if o.name in ("acquire", "release")} == {
            "acquire": "acquire", "release": "release"}
    rlock = {o.name: o for o in sem(source_of(threading._RLock)).ops}
    assert [(g.exception, g.kind) for g in rlock["release"].guards] == [("RuntimeError", "unlocked")]
    # A condition's acquire/release are attributes set in __init__, not methods: no lock operations to read.
    assert sem(source_of(threading.Condition)).pattern == "generic"
    barrier = sem(source_of(threading.Barrier))
    assert barrier.pattern == "lifecycle" and "aborted" in barrier.states


def test_stdlib_archives() -> None:
    zf = sem(source_of(zipfile), "zipfile.py")
    assert (zf.pattern, zf.main_class) == ("archive", "ZipFile")
    by = {o.name: o for o in zf.ops}
    assert by["write"].role == by["writestr"].role == "add"
    assert (by["getinfo"].role, by["getinfo"].guards[0].exception) == ("lookup", "KeyError")
    assert by["namelist"].role == "search"
    assert "closed" in {g.kind for g in by["write"].guards}
    tf = sem(source_of(tarfile), "tarfile.py")
    assert (tf.pattern, tf.main_class) == ("archive", "TarFile")
    assert {o.name: o.role for o in tf.ops}["add"] == "add"
    mb = sem(source_of(mailbox), "mailbox.py")
    assert mb.pattern == "archive"


def test_stdlib_mappings() -> None:
    found = sem(source_of(shelve), "shelve.py")
    assert (found.pattern, found.main_class) == ("registry", "Shelf")
    by = {o.name: o.role for o in found.ops}
    assert (by["__getitem__"], by["__setitem__"], by["__delitem__"]) == ("lookup", "update", "remove")
    assert by["close"] == "change_state"

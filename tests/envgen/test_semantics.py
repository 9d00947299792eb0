"""Operation semantics of single methods (envgen.proposers.template.semantics): roles from bodies and names,
helpers read in place, and guards. Each rule is pinned on a small source written here; patterns, states and
the standard library's classes are in ``test_semantics_documents.py``.
"""

from __future__ import annotations

import textwrap

import pytest

from envgen.proposers.template.bodies import guard_kind
from envgen.proposers.template.semantics import (
    MAX_OPS,
    DocOp,
    DocSemantics,
    analyze_semantics,
)


def sem(source: str, path: str = "") -> DocSemantics:
    result = analyze_semantics(textwrap.dedent(source), path)
    assert result is not None
    return result


def ops(source: str) -> dict[str, DocOp]:
    return {o.name: o for o in sem(source).ops}


# -- roles from the body -----------------------------------------------------------------------------

BOX = """
class Box:
    def __init__(self):
        self.items = []
        self.total = 0
    def stash(self, x):
        self.items.append(x)
    def grab(self):
        return self.items.pop(0)
    def grab_last(self):
        return self.items.pop()
    def drop_last(self):
        self.items.pop()
    def forget(self, x):
        self.items.remove(x)
    def how_many(self):
        return len(self.items)
    def weight(self):
        return sum(i.w for i in self.items)
    def bump(self, n):
        self.total += n
"""


@pytest.mark.parametrize(("name", "expected", "order"), [
    ("stash", "add", ""), ("grab", "take", "first"), ("grab_last", "take", "last"), ("drop_last", "remove", ""),
    ("forget", "remove", ""), ("how_many", "count", ""), ("weight", "total", ""), ("bump", "adjust", ""),
])
def test_role_comes_from_the_body(name: str, expected: str, order: str) -> None:
    op = ops(BOX)[name]
    assert (op.role, op.order) == (expected, order)
    assert op.origin == f"Box.{name}"


def test_heap_and_deque_forms_give_their_order() -> None:
    found = ops("""
    import heapq
    from collections import deque
    class Jobs:
        def __init__(self):
            self._heap = []
            self._line = deque()
        def push(self, job):
            heapq.heappush(self._heap, job)
        def next_job(self):
            return heapq.heappop(self._heap)
        def line_up(self, job):
            self._line.appendleft(job)
        def serve(self):
            return self._line.popleft()
        def pop_at(self, i=-1):
            return self._line.pop(i)
    """)
    assert [(found[n].role, found[n].order) for n in ("push", "next_job", "line_up", "serve", "pop_at")] == [
        ("add", ""), ("take", "first"), ("add", ""), ("take", "first"), ("take", "last")]


def test_keyed_deletes_and_stores() -> None:
    found = ops("""
    class Book:
        def __init__(self):
            self._entries = {}
        def enrol(self, key, value):
            self._entries[key] = value
        def set_entry(self, key, value):
            self._entries[key] = value
        def strike(self, key):
            del self._entries[key]
        def pop_entry(self, key):
            return self._entries.pop(key)
        def entry(self, key):
            return self._entries[key]
        def names(self):
            return list(self._entries)
        def wipe(self):
            self._entries = {}
    """)
    assert {n: o.role for n, o in found.items()} == {
        "enrol": "add", "set_entry": "update", "strike": "remove", "pop_entry": "remove", "entry": "lookup",
        "names": "search", "wipe": "clear"}


def test_state_assignments_are_transitions_with_their_target() -> None:
    found = ops("""
    DONE = "Done"
    class Job:
        def __init__(self):
            self.status = "pending"
            self._closed = False
        def ship(self):
            self.status = "Shipped Out"
        def finish_up(self):
            self.status = DONE
        def close(self):
            self._closed = True
        def reopen(self):
            self._closed = False
        def cancel(self):
            self.status = None
    """)
    assert {n: (o.role, o.target_state) for n, o in found.items()} == {
        "ship": ("change_state", "shipped_out"), "finish_up": ("change_state", "done"),
        "close": ("change_state", "closed"), "reopen": ("change_state", "not_closed"),
        "cancel": ("change_state", "cancelled")}


def test_counter_updates_through_a_local_and_transfers() -> None:
    found = ops("""
    class Bank:
        def __init__(self):
            self.pending = 0
            self.balances = {}
        def done_one(self):
            left = self.pending - 1
            if left < 0:
                raise ValueError("done() called too many times")
            self.pending = left
        def move_money(self, a, b, amount):
            self.balances[a] -= amount
            self.balances[b] += amount
        def pay(self, src, dst, amount):
            src.balance -= amount
            dst.balance += amount
        def step(self, src, dst):
            src.pos -= 1
            dst.count += 1
    """)
    assert found["done_one"].role == "adjust"
    assert found["done_one"].updates == ["self.pending = left"]
    assert found["done_one"].guards[0].kind == "negative"
    assert found["move_money"].role == found["pay"].role == "transfer"
    assert found["step"].role == "adjust"  # two different fields are not a transfer


def test_acquire_and_release_bodies() -> None:
    found = ops("""
    class Seat:
        def __init__(self):
            self.holder = None
            self._locked = False
            self._inner = object()
        def take_seat(self, who):
            self.holder = who
        def leave_seat(self):
            self.holder = None
        def shut(self):
            self._locked = True
        def unshut(self):
            self._locked = False
        def grip(self):
            self._inner.acquire()
        def ungrip(self):
            self._inner.release()
        def acquire(self):
            self.count -= 1
    """)
    assert [found[n].role for n in ("take_seat", "leave_seat", "shut", "unshut", "grip", "ungrip", "acquire")] == [
        "acquire", "release", "acquire", "release", "acquire", "release", "acquire"]


def test_moving_between_containers_and_reparenting() -> None:
    found = ops("""
    class Board:
        def __init__(self):
            self.todo = []
            self.done = []
        def complete(self, card):
            self.todo.remove(card)
            self.done.append(card)
        def rotate(self):
            self.todo.append(self.todo.pop(0))
        def adopt(self, node, parent):
            node.parent = parent
    """)
    assert found["complete"].role == "move"
    assert found["rotate"].role == "remove"  # one container: not a move; a take whose value is dropped
    assert found["adopt"].role == "move"


# -- names second ------------------------------------------------------------------------------------

NAMED = """
class Api:
    def put(self, x): pass
    def get(self): pass
    def get_by_name(self, name): pass
    def get_user(self, user_id): pass
    def pop(self): pass
    def pop_key(self, key): pass
    def register(self, x): pass
    def schedule(self, x, when): pass
    def cancel(self): pass
    def shutdown(self): pass
    def start(self): pass
    def set_name(self, name): pass
    def configure(self, **kw): pass
    def find(self, x): pass
    def list_all(self): pass
    def keys(self): pass
    def count(self): pass
    def qsize(self): pass
    def purge(self): pass
    def flush(self): pass
    def lock(self): pass
    def unlock(self): pass
    def is_empty(self): pass
    def frobnicate(self): pass
"""


@pytest.mark.parametrize(("name", "expected", "extra"), [
    ("put", "add", ""), ("get", "take", "first"), ("get_by_name", "lookup", ""), ("get_user", "lookup", ""),
    ("pop", "take", "last"), ("pop_key", "remove", ""), ("register", "add", ""), ("schedule", "add", ""),
    ("cancel", "change_state", "cancelled"), ("shutdown", "change_state", "shut_down"),
    ("start", "change_state", "running"), ("set_name", "update", ""), ("configure", "update", ""),
    ("find", "lookup", ""), ("list_all", "search", ""), ("keys", "search", ""), ("count", "count", ""),
    ("qsize", "count", ""), ("purge", "clear", ""), ("flush", "clear", ""), ("lock", "acquire", ""),
    ("unlock", "release", ""), ("is_empty", "read", ""), ("frobnicate", "read", ""),
])
def test_names_decide_when_the_body_says_nothing(name: str, expected: str, extra: str) -> None:
    found = {o.name: o for o in _all_ops(NAMED)}  # more than MAX_OPS methods: read in slices
    op = found[name]
    assert op.role == expected
    assert op.abstract
    if expected == "take":
        assert op.order == extra
    if expected == "change_state":
        assert op.target_state == extra


def _all_ops(source: str) -> list[DocOp]:
    """Every op of a class with more than MAX_OPS methods: analyse it in slices."""
    tree = textwrap.dedent(source).strip().splitlines()
    head, body = tree[0], tree[1:]
    out: list[DocOp] = []
    for i in range(0, len(body), MAX_OPS):
        out += sem("\n".join([head, *body[i:i + MAX_OPS]])).ops
    return out


def test_body_beats_the_name_and_a_plain_update_yields_to_it() -> None:
    found = ops("""
    class Sched:
        def __init__(self):
            self._queue = []
            self._fp = None
        def cancel(self, event):
            self._queue.remove(event)
        def close(self):
            self._fp = None
    """)
    assert found["cancel"].role == "remove"
    assert (found["close"].role, found["close"].target_state) == ("change_state", "closed")


def test_dunders_keep_their_roles_and_other_dunders_and_privates_are_not_ops() -> None:
    found = ops("""
    class Reg:
        def __init__(self): self._d = {}
        def __getitem__(self, k): return self._d[k]
        def __setitem__(self, k, v): self._d[k] = v
        def __delitem__(self, k): del self._d[k]
        def __contains__(self, k): return k in self._d
        def __len__(self): return len(self._d)
        def __iter__(self): return iter(self._d)
        def __repr__(self): return "Reg"
        def _helper(self): self._d.clear()
        @classmethod
        def from_pairs(cls, pairs): return cls()
        @staticmethod
        def version(): return 1
    """)
    assert {n: o.role for n, o in found.items()} == {
        "__getitem__": "lookup", "__setitem__": "update", "__delitem__": "remove", "__contains__": "read",
        "__len__": "count"}


# -- helpers, loops, caches -------------------------------------------------------------------------

DELEGATING = """
class Full(Exception): pass
class Line:
    def __init__(self, maxsize):
        self.maxsize = maxsize
        self._q = []
        self._waiters = []
        self._cache = {}
    def full(self):
        return len(self._q) >= self.maxsize
    def _check(self):
        if self.full():
            raise Full
    def _deep(self):
        self._check()
    def _put(self, item):
        self._q.append(item)
    def put(self, item):
        self._check()
        self._put(item)
    def put_deep(self, item):
        self._deep()
        self._put(item)
    def put_waiting(self, item):
        while self.full():
            self._waiters.append(item)
        self._put(item)
    def peek(self, i):
        self._cache[i] = self._q[i]
        return self._q[i]
"""


def test_a_helper_is_read_in_place_with_its_guard_one_level_deep() -> None:
    found = ops(DELEGATING)
    assert found["put"].role == "add"
    assert [(g.exception, g.kind, g.condition) for g in found["put"].guards] == [("Full", "full", "self.full()")]
    assert found["put_deep"].role == "add"
    assert found["put_deep"].guards == []  # the guard sits two levels down


def test_changes_in_a_wait_loop_count_only_without_others_and_caches_never() -> None:
    found = ops(DELEGATING)
    assert found["put_waiting"].role == "add"
    assert found["peek"].role == "lookup"
    assert sem(DELEGATING).capacity == "maxsize"


def test_a_role_read_only_from_helpers_yields_to_the_name() -> None:
    found = ops("""
    class Archive:
        def __init__(self):
            self._refs = 0
        def _open(self, name):
            self._refs += 1
            return name
        def read(self, name):
            return self._open(name)
        def touch(self, name):
            return self._open(name)
    """)
    assert found["read"].role == "lookup"
    assert found["touch"].role == "adjust"  # no name role: the helper's change stands



def test_a_reader_that_fills_a_memo_is_a_read_not_an_add() -> None:
    found = ops("""
    class Rows:
        def __init__(self, n):
            self.C = [[0] * n for _ in range(n)]
        def get_rows(self, r1, r2):
            for r in range(r1, r2 + 1):
                self.C[r] = self.solve(r)
            return self.C
        def get_row(self, r):
            self.C[r] = self.solve(r)
            return self.C[r]
        def record(self, r, v):
            self.C[r] = v
    """)
    assert found["get_rows"].role == "lookup"
    assert found["get_row"].role == "lookup"
    assert found["record"].role == "add"  # no name role: the store stands


def test_changes_made_only_in_a_clean_up_loop_yield_to_a_read_name() -> None:
    found = ops("""
    import heapq
    class Heap:
        def __init__(self):
            self._heap = []
            self._live = {}
        def min(self):
            while True:
                value, key = self._heap[0]
                if self._live.get(key) == value:
                    break
                heapq.heappop(self._heap)
            return key, value
        def pop(self):
            while True:
                value, key = heapq.heappop(self._heap)
                if self._live.get(key) == value:
                    break
            del self._live[key]
            return key, value
    """)
    assert found["min"].role == "lookup"
    assert found["pop"].role == "take"  # removes and returns what it removed


def test_an_element_replaced_in_its_container_is_an_update_not_a_removal() -> None:
    found = ops("""
    class Mapped:
        def __init__(self):
            self.heap = []
            self.position = {}
        def swap(self, elt, new):
            pos = self.position[elt]
            self.heap[pos] = new
            del self.position[elt]
            self.position[new] = pos
        def discard(self, elt):
            pos = self.position[elt]
            del self.position[elt]
    """)
    assert found["swap"].role == "update"
    assert found["discard"].role == "remove"

# -- guards ------------------------------------------------------------------------------------------

GUARDED = """
class Closed(Exception): pass
class Store:
    def __init__(self):
        self._items = {}
        self.closed = False
        self.state = "open"
    def add(self, key, value):
        if self.closed:
            raise Closed("store is closed")
        elif key in self._items:
            raise KeyError(f"{key!r} already exists")
        if value >= 0:
            pass
        else:
            raise ValueError("value must be >= 0")
        self._items[key] = value
        if len(self._items) > 10:
            raise RuntimeError("too late: the item is stored")
    def remove(self, key):
        assert key in self._items, "no item %s" % key
        del self._items[key]
    def fetch(self, key):
        try:
            return self._items[key]
        except KeyError:
            raise LookupError("no such item: " + key) from None
    def seal(self):
        if self.state != "open":
            raise RuntimeError("cannot seal now")
        self.state = "sealed"
"""


def test_guards_before_the_first_change_with_their_conditions_and_messages() -> None:
    found = ops(GUARDED)
    assert [(g.exception, g.message, g.kind, g.condition) for g in found["add"].guards] == [
        ("Closed", "store is closed", "closed", "self.closed"),
        ("KeyError", "{key} already exists", "exists", "key in self._items"),
        ("ValueError", "value must be >= 0", "negative", "value < 0"),
    ]
    assert [(g.exception, g.message, g.kind, g.condition) for g in found["remove"].guards] == [
        ("AssertionError", "no item %s", "missing", "key not in self._items")]
    assert [(g.exception, g.kind, g.condition) for g in found["fetch"].guards] == [
        ("LookupError", "missing", "except KeyError")]
    assert [(g.kind, g.condition) for g in found["seal"].guards] == [("state", "self.state != 'open'")]


def test_unconditional_and_bare_raises_are_not_guards() -> None:
    found = ops("""
    class Base:
        def run(self):
            raise NotImplementedError
        def fail(self):
            raise RuntimeError("always")
        def retry(self):
            try:
                self.x = 1
            except Exception:
                raise
    """)
    assert all(not o.guards for o in found.values())
    assert found["run"].abstract and not found["fail"].abstract


@pytest.mark.parametrize(("exception", "message", "condition", "kind"), [
    ("Full", "", "self._qsize() >= self.maxsize", "full"),
    ("QueueFull", "", "self.full()", "full"),
    ("ValueError", "", "len(self.items) >= self.capacity", "full"),
    ("Empty", "", "not self._qsize()", "empty"),
    ("IndexError", "pop from an empty deque", "not self.items", "empty"),
    ("RuntimeError", "", "not self._items", "empty"),
    ("ValueError", "I/O operation on closed file", "self.fp is None", "closed"),
    ("RuntimeError", "release unlocked lock", "", "unlocked"),
    ("RuntimeError", "cannot release un-acquired lock", "self._owner != get_ident()", "unlocked"),
    ("RuntimeError", "lock is already acquired", "", "locked"),
    ("RuntimeError", "", "self._locked", "locked"),
    ("KeyError", "", "key in self._data", "missing"),
    ("ValueError", "", "key in self._data", "exists"),
    ("ValueError", "", "name not in self._data", "missing"),
    ("ValueError", "mode must be 'r' or 'w'", "mode not in ('r', 'w')", "other"),
    ("ValueError", "", "amount < 0", "negative"),
    ("ValueError", "task_done() called too many times", "unfinished < 0", "negative"),
    ("RuntimeError", "", "self._state == 'closed'", "closed"),
    ("RuntimeError", "", "self._state < 0", "state"),
    ("InvalidStateError", "", "", "state"),
    ("TypeError", "expected str", "not isinstance(x, str)", "other"),
])
def test_guard_kinds(exception: str, message: str, condition: str, kind: str) -> None:
    assert guard_kind(exception, message, condition) == kind

"""``gym_envs.sandbox.recall``: table digests remembered by the calls that made a content (code that keeps no state
only), and dumps answered "the same" for tables the caller holds."""

from __future__ import annotations

from typing import Any

import pytest

import gym_envs.sandbox.engine as engine_module
import gym_envs.sandbox.rereads as rereads_module
from gym_envs.sandbox import Engine, Executor, Limits, SqlLimits, StateDB, program_request
from gym_envs.sandbox.digests import ROWS_READ
from gym_envs.sandbox.recall import PROGRAMS, Recalls
from tests.gym_envs.sandbox.store import store_spec

SCHEMA = """
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL);
CREATE TABLE notes (body TEXT);
"""
SEED = "INSERT INTO items VALUES (1, 'apple', 3), (2, 'pear', 0); INSERT INTO notes VALUES ('a'), ('b');"
GET_TAKE = '''
def get(db, item_id):
    rows = db.query("SELECT id, name, qty FROM items WHERE id = ?", [item_id])
    if not rows:
        raise ToolError("no item")
    return rows[0]

def take(db, item_id, qty):
    db.execute("UPDATE items SET qty = qty - ? WHERE id = ?", [qty, item_id])
    return get(db, item_id)
'''
"""Two tools over ``items``: a read and a write that returns the read (shared with test_recall_results)."""
PURE = GET_TAKE + '''
def add(db, name, qty=1):
    return db.execute("INSERT INTO items (name, qty) VALUES (?, ?)", [name, qty])["lastrowid"]

def boom(db, item_id):
    db.execute("UPDATE items SET qty = 99 WHERE id = ?", [item_id])
    raise ToolError("refused after writing")

def note(db, body):
    db.execute("INSERT INTO notes (body) VALUES (?)", [body])
    return True
'''
INT, STR = {"type": "integer"}, {"type": "string"}
GET_TAKE_TOOLS = [
    {"name": "get", "parameters": {"type": "object", "properties": {"item_id": INT}, "required": ["item_id"]}},
    {"name": "take", "parameters": {"type": "object", "properties": {"item_id": INT, "qty": INT},
                                    "required": ["item_id", "qty"]}}]
TOOLS = [*GET_TAKE_TOOLS,
         {"name": "add", "parameters": {"type": "object", "properties": {"name": STR, "qty": INT},
                                        "required": ["name"]}},
         {"name": "boom", "parameters": {"type": "object", "properties": {"item_id": INT}, "required": ["item_id"]}},
         {"name": "note", "parameters": {"type": "object", "properties": {"body": STR}, "required": ["body"]}}]


def _spec(code: str = PURE, *, ordered: bool = False) -> Any:
    """The store; ``ordered``: with a key on every table (each table's order is its content's)."""
    if ordered:
        return store_spec(code, TOOLS, schema=SCHEMA.replace("(body TEXT)", "(id INTEGER PRIMARY KEY, body TEXT)"),
                          seed=SEED.replace("('a'), ('b')", "(1, 'a'), (2, 'b')"))
    return store_spec(code, TOOLS, schema=SCHEMA, seed=SEED)


class _Engine:
    """An in-process engine on one spec, counting the tables it reads to digest them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, code: str = PURE, *, limits: Limits | None = None,
                 fresh: bool = True, ordered: bool = False):
        if fresh:  # nothing remembered from other tests
            monkeypatch.setattr(engine_module, "RECALLS", Recalls())
        self.engine = Engine(limits)
        self.req = program_request(_spec(code, ordered=ordered))
        assert self.engine.handle(self.req)["ok"]
        self.reads: list[str] = []
        read = rereads_module.TableReads.read

        def counting(reads: rereads_module.TableReads, table: str, base: Any) -> str:
            self.reads.append("read")
            return read(reads, table, base)

        monkeypatch.setattr(rereads_module.TableReads, "read", counting)  # the whole table, or the columns that changed

    def open(self, ep: str, setup: list[str] | None = None) -> str:
        req = {"op": "open", "key": self.req["key"], "ep": ep, "seed": 0} | ({"setup": setup} if setup else {})
        assert self.engine.handle(req)["ok"]
        return ep

    def call(self, ep: str, tool: str, **args: Any) -> dict[str, Any]:
        return self.engine.handle({"op": "call", "ep": ep, "name": tool, "arguments": args})

    def digest(self, ep: str, fresh: bool = False) -> tuple[str, int]:
        """The state's digest and how many tables were read for it."""
        before = len(self.reads)
        resp = self.engine.handle({"op": "digest", "ep": ep} | ({"fresh": True} if fresh else {}))
        return resp["digest"], len(self.reads) - before

    def op(self, **req: Any) -> dict[str, Any]:
        return self.engine.handle(req)


def test_an_episode_that_makes_the_same_writes_reads_no_table(monkeypatch: pytest.MonkeyPatch) -> None:
    e = _Engine(monkeypatch)
    a = e.open("a")
    assert e.call(a, "take", item_id=1, qty=1)["ok"]
    first, read = e.digest(a)
    assert read == 1  # items: the write marked it; notes kept the template's digest
    b = e.open("b")  # other reads and a lookup that fails: the same content key
    assert e.call(b, "get", item_id=2)["ok"] and not e.call(b, "get", item_id=7)["ok"]
    assert e.call(b, "take", item_id=1, qty=1)["ok"]
    assert e.digest(b) == (first, 0)
    assert e.digest(b, fresh=True) == (first, 1)  # fresh: read from the content, and the same
    c = e.open("c")  # a call that failed after writing was undone, but it moved the change count: read again
    assert not e.call(c, "boom", item_id=1)["ok"]
    assert e.call(c, "take", item_id=1, qty=1)["ok"]
    assert e.digest(c) == (first, 1)


def test_other_writes_arguments_or_setup_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    e = _Engine(monkeypatch)
    a = e.open("a")
    e.call(a, "take", item_id=1, qty=1)
    first, _ = e.digest(a)
    b = e.open("b")
    e.call(b, "take", item_id=1, qty=2)
    other, read = e.digest(b)
    assert read == 1 and other != first
    c = e.open("c", setup=["UPDATE items SET qty = 5 WHERE id = 2"])
    e.call(c, "take", item_id=1, qty=1)
    third, read = e.digest(c)
    assert read == 1 and third not in (first, other)


def test_a_checkpoint_brings_back_its_content_key(monkeypatch: pytest.MonkeyPatch) -> None:
    e = _Engine(monkeypatch)
    a = e.open("a")
    e.call(a, "take", item_id=1, qty=1)
    e.call(a, "take", item_id=1, qty=1)
    twice, _ = e.digest(a)
    b = e.open("b")
    e.call(b, "take", item_id=1, qty=1)
    fork = e.op(op="fork", ep=b)["fork"]
    assert fork is not None
    e.call(b, "add", name="kiwi")
    assert e.op(op="restore", ep=b, fork=fork)["kept"]
    e.call(b, "take", item_id=1, qty=1)
    assert e.digest(b) == (twice, 0)


def test_engines_of_one_process_share_what_they_remember(monkeypatch: pytest.MonkeyPatch) -> None:
    """A compiler's engine simulates a spec's reference, then the gate's engine plays it: the gate reads no table the
    first one read for the same calls; an engine under other limits keeps its own memos."""
    first = _Engine(monkeypatch)
    first.open("a")
    first.call("a", "take", item_id=1, qty=1)
    digest, _ = first.digest("a")
    second = _Engine(monkeypatch, fresh=False)
    second.open("b")
    second.call("b", "take", item_id=1, qty=1)
    assert second.digest("b") == (digest, 0)
    other = _Engine(monkeypatch, limits=Limits(sql=SqlLimits(max_rows=50)), fresh=False)
    other.open("c")
    other.call("c", "take", item_id=1, qty=1)
    assert other.digest("c") == (digest, 1)


def test_code_that_keeps_state_is_always_read(monkeypatch: pytest.MonkeyPatch) -> None:
    e = _Engine(monkeypatch, "import random\n" + PURE)
    for ep in ("a", "b"):
        e.open(ep)
        e.call(ep, "take", item_id=1, qty=1)
        assert e.digest(ep)[1] == 1


def test_checks_and_marks_use_what_is_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    e = _Engine(monkeypatch)
    a = e.open("a")
    e.call(a, "note", body="c")
    tables = e.op(op="probe", ep=a, probes=[{"digests": ["notes"]}])["results"][0]
    b = e.open("b")
    e.call(b, "note", body="c")
    before = len(e.reads)
    assert e.op(op="probe", ep=b, probes=[{"digests": ["notes"]}])["results"][0] == tables
    assert e.op(op="mark", ep=b)["ok"]
    assert len(e.reads) == before


def test_the_columns_holding_a_text_are_read_once_a_content_of_each_table(monkeypatch: pytest.MonkeyPatch) -> None:
    e = _Engine(monkeypatch, ordered=True)
    reads: list[str] = []
    holding = StateDB.table_holding

    def counted(self: StateDB, table: str, text: str, limit: int, rows: Any = None) -> Any:
        reads.append(table)
        return holding(self, table, text, limit, rows)

    monkeypatch.setattr(StateDB, "table_holding", counted)
    a = e.open("a")
    probe = [{"columns": "Pear"}]
    first = e.op(op="probe", ep=a, probes=probe)["results"][0]
    assert first["ok"] and [list(c) for c in first["value"]] == [["items.name", ["apple", "pear"]]]
    assert sorted(reads) == ["items", "notes"]
    assert e.op(op="probe", ep=a, probes=probe)["results"][0] == first and len(reads) == 2
    digested = len(e.reads)
    e.call(a, "take", item_id=1, qty=1)  # another content of items: read, for its digest and for the text
    assert e.op(op="probe", ep=a, probes=probe)["results"][0] == first and reads[2:] == ["items"]
    assert len(e.reads) == digested + 1
    e.call(a, "note", body="a pear")  # notes now holds a value containing the text, items one equal to it
    assert e.op(op="probe", ep=a, probes=probe)["results"][0] == first and reads[3:] == ["notes"]
    e.call(a, "take", item_id=1, qty=-1)  # items back to a content whose part is known
    assert e.op(op="probe", ep=a, probes=probe)["results"][0] == first and reads[4:] == []
    before = len(reads)
    got = e.op(op="probe", ep=a, probes=[{"columns": "a pe"}])["results"][0]["value"]
    assert [list(c) for c in got] == [["notes.body", ["a", "b", "a pear"]]]  # none equal to it: those containing it
    assert len(reads) == before + 2  # a text not asked before: each table read once


def test_the_columns_holding_a_text_are_those_one_read_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    e = _Engine(monkeypatch, ordered=True)
    a = e.open("a")
    for text in ("pear", "PEAR ", "a", "e", "zzz", ""):
        got = e.op(op="probe", ep=a, probes=[{"columns": text}])["results"][0]["value"]
        state = e.engine.episodes[a].state
        assert [list(c) for c in got] == [[label, values] for label, values in state.columns_holding(text, 10_000)]
    assert [list(c) for c in e.op(op="probe", ep=a, probes=[{"columns": "a"}])["results"][0]["value"]] == \
        [["notes.body", ["a", "b"]]]  # an equal value in one table: the other's containing ones are no answer


def test_the_memos_of_the_programs_used_last_are_kept() -> None:
    recalls = Recalls()
    first = recalls.of("p0")
    for i in range(1, PROGRAMS):
        recalls.of(f"p{i}")
    assert recalls.of("p0") is first  # still held, and now the most recent
    recalls.of("another")
    assert recalls.of("p0") is first
    assert recalls.of("p1") is not None
    for i in range(PROGRAMS + 1):
        recalls.of(f"q{i}")
    assert recalls.of("p0") is not first


def test_a_dump_answers_the_same_for_tables_the_caller_holds(ex: Executor) -> None:
    s = ex.session(_spec())
    full = s.dump(None, 100, unless={})
    assert full["items"]["digest"] and full["items"]["rows"] == [[1, "apple", 3], [2, "pear", 0]]
    held = {t: d["digest"] for t, d in full.items()}
    again = s.dump(None, 100, unless=held)
    assert again["items"] == {"same": True, "digest": held["items"]}
    assert again["notes"]["rows"] == [["a"], ["b"]]  # a hidden rowid: its order is not its content's
    s.call("take", {"item_id": 1, "qty": 1})
    changed = s.dump(None, 100, unless=held)["items"]
    assert changed["rows"] == [[1, "apple", 2], [2, "pear", 0]] and changed["digest"] in (None, s.digest()["tables"]
                                                                                             ["items"])
    assert s.dump(["items"], 1) == {"items": {"columns": ["id", "name", "qty"], "rows": [[1, "apple", 2]],
                                              "count": 2}}  # without unless: the plain dump
    s.close()


def test_a_table_read_for_its_digest_is_dumped_from_those_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    e = _Engine(monkeypatch, ordered=True)
    got: list[Any] = []
    rows_read = ROWS_READ.get

    def counted(digest: str) -> Any:
        got.append(rows_read(digest))
        return got[-1]

    monkeypatch.setattr(ROWS_READ, "get", counted)
    a = e.open("a")
    e.call(a, "take", item_id=1, qty=1)
    e.digest(a)  # items read for its digest
    dumped = e.op(op="dump", ep=a, tables=None, limit=1, unless={})["tables"]
    assert got and got[-1] is not None  # items: from the rows read
    state = e.engine.episodes[a].state
    for t, d in dumped.items():  # what reading the database dumps
        assert {k: v for k, v in d.items() if k != "digest"} == state.dump([t], 1)[t]
    assert dumped["items"] == {"columns": ["id", "name", "qty"], "rows": [[1, "apple", 2]], "count": 2,
                               "digest": state.table_digests(["items"])["items"]}


def test_a_table_whose_order_is_not_its_contents_is_dumped_from_the_database(monkeypatch: pytest.MonkeyPatch) -> None:
    e = _Engine(monkeypatch)  # notes has a hidden rowid: the same rows may come in another order
    asked: list[str] = []
    monkeypatch.setattr(ROWS_READ, "get", lambda digest: asked.append(digest))
    a = e.open("a")
    e.call(a, "note", body="c")
    e.digest(a)
    dumped = e.op(op="dump", ep=a, tables=["notes"], limit=10, unless={})["tables"]
    assert [list(r) for r in dumped["notes"]["rows"]] == [["a"], ["b"], ["c"]] and asked == []


@pytest.mark.parametrize(("ddl", "ordered"), [
    ("CREATE TABLE t (id INTEGER PRIMARY KEY, x)", True),
    ("CREATE TABLE t (x, id integer, PRIMARY KEY (id))", True),
    ("CREATE TABLE t (k TEXT PRIMARY KEY, v) WITHOUT ROWID", True),
    ("CREATE TABLE t (id INTEGER PRIMARY KEY DESC, x)", False),  # SQLite's quirk: no rowid alias
    ("CREATE TABLE t (id INT PRIMARY KEY, x)", False),
    ("CREATE TABLE t (a INTEGER, b INTEGER, PRIMARY KEY (a, b))", False),
    ("CREATE TABLE t (x, y)", False),
])
def test_whether_a_tables_order_is_its_contents(ddl: str, ordered: bool) -> None:
    state = StateDB(SqlLimits())
    state.script(ddl + ";", mode="setup")
    assert state.ordered("t") is ordered
    assert state.ordered("missing") is False
    state.close()

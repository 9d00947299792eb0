"""``gym_envs.executor``: loading, calls, checks, sessions and the worker protocol, in both modes.

The adversarial properties (escapes, bombs, isolation, killed workers) live in
``test_adversarial.py``; this file covers the executor's ordinary contract.
"""

from __future__ import annotations

import collections
import json
import math
import os
from collections.abc import Iterator
from typing import Any

import pytest

from gym_envs.env import ToolEnv
from gym_envs.executor import (
    CallResult,
    Engine,
    Executor,
    InProcessExecutor,
    Limits,
    LoadFailure,
    WorkerExecutor,
    _FrameReader,
    _splice,
    _write_frame,
    compile_code,
    make_executor,
    plain_json,
    program_request,
    validate_arguments,
)
from gym_envs.spec import EnvSpec, parse_spec
from gym_envs.state import SqlLimits

LIMITS = Limits(call_timeout_s=0.5, cpu_seconds=3, memory_bytes=512 << 20,
                sql=SqlLimits(statement_timeout_s=0.2))

SCHEMA = """
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL);
CREATE INDEX items_name ON items (name);
"""
SEED = "INSERT INTO items VALUES (1, 'apple', 3), (2, 'pear', 0);"
CODE = '''
import datetime, random

def get(db, item_id):
    rows = db.query("SELECT id, name, qty FROM items WHERE id = ?", [item_id])
    if not rows:
        raise ToolError(f"no item {item_id}")
    return rows[0]

def add(db, name, qty=1):
    r = db.execute("INSERT INTO items (name, qty) VALUES (?, ?)", [name, qty])
    return {"id": r["lastrowid"]}

def take(db, item_id, qty):
    item = get(db, item_id)
    if item["qty"] < qty:
        raise ToolError("not enough " + item["name"])
    db.execute("UPDATE items SET qty = qty - ? WHERE id = ?", [qty, item_id])
    return get(db, item_id)

def misc(db, **kw):
    try:
        db.nothing
    except AttributeError:
        missing = "AttributeError"
    try:
        undefined
    except NameError:
        name_error = "NameError"
    rng = random.Random()
    return {"date": datetime.date(2024, 3, 1).strftime("%Y-%m-%d"),
            "parsed": datetime.datetime.strptime("01/02/2024", "%d/%m/%Y").isoformat(),
            "missing": missing, "name_error": name_error, "draw": random.randint(1, 10**9),
            "child": rng.randint(1, 10**9), "product": 6 * 7, "power": 2 ** 10}
'''
TOOLS = [
    {"name": "get", "parameters": {"type": "object", "properties": {"item_id": {"type": "integer"}},
                                   "required": ["item_id"]}},
    {"name": "add", "parameters": {"type": "object", "properties": {
        "name": {"type": "string", "minLength": 1}, "qty": {"type": "integer", "minimum": 1}},
        "required": ["name"]}},
    {"name": "take", "parameters": {"type": "object", "properties": {
        "item_id": {"type": "integer"}, "qty": {"type": "integer"}}, "required": ["item_id", "qty"]}},
    {"name": "misc", "parameters": {"type": "object", "properties": {}, "additionalProperties": True}},
]


def make_spec(code: str = CODE, tools: list[dict[str, Any]] | None = None, schema: str = SCHEMA,
              seed: str = SEED) -> EnvSpec:
    tools = tools or TOOLS
    reference = [{"name": "take", "arguments": {"item_id": 1, "qty": 1}}] if tools is TOOLS else []
    return parse_spec({
        "id": "executor-test", "title": "Store", "state": {"schema_sql": schema, "seed_sql": seed},
        "tools": tools, "code": code,
        "tasks": [{"id": "t0", "kind": "execute", "turns": [
            {"instruction": "Take one apple.",
             "checks": [{"kind": "sql", "query": "SELECT qty FROM items WHERE id = 1", "expect": [[2]]}],
             "reference": reference},
            {"instruction": "How many apples?", "checks": [{"kind": "reply_contains", "any_of": ["2"]}]}]}],
    })


@pytest.fixture(scope="module")
def executors() -> Iterator[dict[str, Executor]]:
    exs: dict[str, Executor] = {"inprocess": InProcessExecutor(LIMITS), "worker": WorkerExecutor(2, LIMITS)}
    yield exs
    for ex in exs.values():
        ex.close()


@pytest.fixture(params=["inprocess", "worker"])
def ex(request: pytest.FixtureRequest, executors: dict[str, Executor]) -> Executor:
    return executors[request.param]


# -- plain JSON --------------------------------------------------------------------------------------

class _Str(str):
    pass


class _Int(int):
    pass


class _Float(float):
    pass


class _Dict(dict):  # type: ignore[type-arg]
    pass


class _RiggedDict(dict):  # type: ignore[type-arg]
    def items(self):  # type: ignore[no-untyped-def]
        return [("rigged", 1)]


PLAIN_CASES = [
    None, True, False, 0, -5, 2**70, 2**63, -(2**64), 7**2000, {"n": 2**64, "m": -(2**63)},
    1.5, -0.0, 1e300, "x", "caf\u00e9 \ud800 \U0001f600", [], {}, (1, 2),
    {"a": [1, {"b": (2, 3)}]}, {1: "int", 2.5: "float", False: "bool", None: "null", "s": "str"},
    _Str("sub"), _Int(7), _Float(2.5), _Dict(a=1), collections.OrderedDict(b=2), collections.Counter("aa"),
    [_Str("x"), {_Str("k"): _Int(1)}],
]


@pytest.mark.parametrize("value", PLAIN_CASES, ids=range(len(PLAIN_CASES)))
def test_plain_json_is_a_json_round_trip(value: Any) -> None:
    copy, bound = plain_json(value)
    text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    assert copy == json.loads(text)
    assert json.dumps(copy, sort_keys=True) == json.dumps(json.loads(text), sort_keys=True)
    assert bound >= len(text)


@pytest.mark.parametrize("value", [float("nan"), math.inf, {1, 2}, {(1, 2): 3}, object(), b"bytes",
                                   {"k": float("-inf")}, [collections.deque()], 7**6000, {"n": -(7**6000)},
                                   {7**6000: 1}], ids=range(11))
def test_plain_json_refuses_what_json_refuses(value: Any) -> None:
    with pytest.raises((TypeError, ValueError)) as mine:
        plain_json(value)
    with pytest.raises((TypeError, ValueError)) as theirs:
        json.dumps(value, allow_nan=False)
    assert type(mine.value) is type(theirs.value)


def test_plain_json_reads_the_real_content_of_subclasses() -> None:
    """``json.dumps`` asks a dict subclass for its ``items()``; ``plain_json`` reads the dict itself."""
    assert plain_json(_RiggedDict(a=1))[0] == {"a": 1}


def test_plain_json_caps_nesting() -> None:
    deep: list[Any] = []
    for _ in range(70):
        deep = [deep]
    with pytest.raises(ValueError, match="nested deeper"):
        plain_json(deep)
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    with pytest.raises(ValueError):
        plain_json(cyclic)


# -- compilation and validation ----------------------------------------------------------------------

def test_policy_rewrites_arithmetic_with_locations() -> None:
    src = "def f(x):\n    y = 2\n    y *= 3\n    print(x * 2, 2 ** 3, 1 << 2)\n    return [y, max(x * 2, 10 ** 2)]\n"
    res = compile_code(src)
    assert not res.errors and res.code is not None
    res = compile_code("def f():\n    try:\n        pass\n    except:\n        pass\n")
    assert not res.errors


def test_validate_arguments() -> None:
    schema = TOOLS[1]["parameters"]
    assert validate_arguments(schema, {"name": "x", "qty": 2}) == []
    errors = validate_arguments(schema, {"qty": 0, "extra": 1})
    assert any("missing required argument 'name'" in e for e in errors)
    assert any("unexpected argument 'extra'" in e for e in errors)
    assert any("must be >= 1" in e for e in errors)
    assert validate_arguments(schema, {"name": True}) == ["argument 'name' must be of type string, got bool"]


def test_limits_round_trip() -> None:
    assert Limits.from_dict(LIMITS.to_dict()) == LIMITS
    assert Limits.from_dict(json.loads(json.dumps(Limits().to_dict()))) == Limits()


# -- loading -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("code,schema,kind", [
    ("def get(db, item_id):\n    return __import__('os')", SCHEMA, "CompileError"),
    ("def nothing(db):\n    return 1", SCHEMA, "LoadError"),
    ("x = 1 / 0\ndef get(db, item_id):\n    return 1", SCHEMA, "LoadError"),
    ("def get(db, item_id):\n    return 1", "CREATE TABLE items (", "SchemaError"),
    ("def get(db, item_id):\n    return 1", SCHEMA + "CREATE VIEW v AS SELECT 1;", "SchemaError"),
    ("def get(db, item_id):\n    return 1", SCHEMA + "PRAGMA foreign_keys = OFF;", "SchemaError"),
])
def test_load_failures_are_typed(code: str, schema: str, kind: str, ex: Executor) -> None:
    spec = make_spec(code, [TOOLS[0]], schema=schema)
    resp = ex.load(spec)
    assert not resp["ok"] and resp["error_type"] == kind, resp
    with pytest.raises(LoadFailure) as info:
        ex.session(spec)
    assert info.value.response["error_type"] == kind


def test_load_reports_tables_and_caches(ex: Executor) -> None:
    spec = make_spec()
    first = ex.load(spec)
    assert first["ok"]
    if not first.get("cached"):
        assert first["tables"] == {"items": 2}
    for _ in range(len(getattr(ex, "workers", [None]))):  # a worker executor loads round-robin
        last = ex.load(spec)
    assert last["ok"] and last["cached"] is True
    assert program_request(spec)["key"] == program_request(make_spec())["key"]


# -- calls -------------------------------------------------------------------------------------------

def test_calls_and_typed_errors(ex: Executor) -> None:
    s = ex.session(make_spec())
    r = s.call("take", {"item_id": 1, "qty": 2})
    assert r.ok and r.result == {"id": 1, "name": "apple", "qty": 1} and r.changes == 1
    assert s.call("add", {"name": "fig"}).result == {"id": 3}
    assert json.loads(s.call("get", {"item_id": 3}).observation()) == {"id": 3, "name": "fig", "qty": 1}
    errors = {
        "take-too-many": s.call("take", {"item_id": 2, "qty": 1}),
        "unknown": s.call("fly", {}),
        "missing": s.call("take", {"item_id": 1}),
        "wrong-type": s.call("get", {"item_id": "1"}),
        "not-object": s.call("get", ["not", "an", "object"]),  # type: ignore[arg-type]
        "not-json": s.call("misc", {"x": {1, 2}}),
        "no-item": s.call("get", {"item_id": 99}),
    }
    kinds = {k: (r.ok, r.error_type) for k, r in errors.items()}
    assert kinds == {"take-too-many": (False, "ToolError"), "unknown": (False, "UnknownTool"),
                     "missing": (False, "InvalidArguments"), "wrong-type": (False, "InvalidArguments"),
                     "not-object": (False, "InvalidArguments"), "not-json": (False, "InvalidArguments"),
                     "no-item": (False, "ToolError")}
    assert errors["no-item"].error == "no item 99"
    assert json.loads(errors["unknown"].observation())["type"] == "UnknownTool"
    assert isinstance(errors["unknown"], CallResult) and errors["unknown"].to_dict()["ok"] is False
    s.close()


def test_sandbox_conveniences_work(ex: Executor) -> None:
    """``strftime``/``strptime`` (which import from C), catchable AttributeError and NameError, a
    seeded ``random`` and ``random.Random()``, guarded arithmetic that stays small."""
    spec = make_spec()
    a, b = ex.session(spec, seed=9), ex.session(spec, seed=9)
    ra, rb = a.call("misc", {}), b.call("misc", {})
    assert ra.ok, ra
    assert ra.result == rb.result
    assert ra.result["date"] == "2024-03-01" and ra.result["parsed"] == "2024-02-01T00:00:00"
    assert ra.result["missing"] == "AttributeError" and ra.result["name_error"] == "NameError"
    assert ra.result["product"] == 42 and ra.result["power"] == 1024
    c = ex.session(spec, seed=10)
    assert c.call("misc", {}).result["draw"] != ra.result["draw"]
    for s in (a, b, c):
        s.close()


def test_open_resets_the_episode(ex: Executor) -> None:
    s = ex.session(make_spec())
    before = s.digest()
    s.call("take", {"item_id": 1, "qty": 3})
    assert s.digest()["digest"] != before["digest"]
    s.open(0)
    assert s.digest() == before
    assert s.log == []
    s.close()


def test_dump_and_digest(ex: Executor) -> None:
    s = ex.session(make_spec())
    dump = s.dump()
    assert dump["items"]["columns"] == ["id", "name", "qty"] and dump["items"]["count"] == 2
    assert dump["items"]["rows"] == [[1, "apple", 3], [2, "pear", 0]]
    assert s.dump(["items"], limit=0)["items"]["rows"] == []
    assert set(s.digest()["tables"]) == {"items"}
    s.close()


# -- checks ------------------------------------------------------------------------------------------

def test_every_check_kind(ex: Executor) -> None:
    s = ex.session(make_spec())
    s.mark()
    s.call("take", {"item_id": 1, "qty": 1})
    s.call("fly", {})
    checks = [
        {"kind": "sql", "query": "SELECT name, qty FROM items", "expect": [["pear", 0], ["apple", 2]]},
        {"kind": "sql", "query": "SELECT name FROM items ORDER BY id", "expect": [["pear"], ["apple"]],
         "ordered": True},
        {"kind": "python", "code": "def check(db):\n    return db.query('SELECT qty FROM items WHERE id = 1')"
                                   "[0]['qty'] == 2"},
        {"kind": "python", "code": "def nope(db):\n    return True"},
        {"kind": "python", "code": "def check(db):\n    return undefined"},
        {"kind": "reply_contains", "any_of": ["TWO", "2"]},
        {"kind": "reply_contains", "any_of": ["three"]},
        {"kind": "unchanged", "tables": ["items"]},
        {"kind": "calls", "require": ["take"], "forbid": ["fly"]},
        {"kind": "calls", "require": ["take"]},
        {"kind": "nonsense"},
    ]
    results = s.check(checks, "There are two left.", ["take"], attempted=["take", "fly"])
    assert [r.passed for r in results] == [True, False, True, False, False, True, False, False, False, True,
                                           False]
    assert "forbidden calls ['fly']" in results[8].detail
    assert "defines no check" in results[3].detail
    s.close()


# -- worker protocol ---------------------------------------------------------------------------------

def test_frames_and_splicing() -> None:
    r, w = os.pipe()
    try:
        _write_frame(w, b"hello")
        _write_frame(w, b"")
        _write_frame(w, b'{"a":1}')
        reader = _FrameReader(r)
        assert reader.read() == b"hello"
        assert reader.read() == b""
        assert reader.read(deadline=1e18) == b'{"a":1}'
        with pytest.raises(TimeoutError):
            reader.read(deadline=0.0)
    finally:
        os.close(r)
        os.close(w)
    resp = {"ok": True, "changes": 1, "result_json": '{"x":[1,"\\ud800"]}'}
    assert json.loads(_splice(resp)) == {"ok": True, "changes": 1, "result": {"x": [1, "\ud800"]}}
    batch = {"ok": True, "results": [resp, {"ok": False, "error": "e"}]}
    assert json.loads(_splice(batch))["results"][0]["result"] == {"x": [1, "\ud800"]}
    assert json.loads(_splice({"ok": True, "results": [{"passed": True}]})) == {"ok": True,
                                                                                "results": [{"passed": True}]}


def test_call_many_equals_sequential_calls(executors: dict[str, Executor]) -> None:
    worker = executors["worker"]
    assert isinstance(worker, WorkerExecutor)
    spec = make_spec()
    seq = [worker.session(spec, seed=k) for k in range(4)]
    bat = [worker.session(spec, seed=k) for k in range(4)]
    assert len({getattr(s, "_worker_index", 0) for s in bat}) == 2  # spread over both workers
    plan = [("take", {"item_id": 1, "qty": 1}), ("misc", {}), ("take", {"item_id": 2, "qty": 1}),
            ("add", {"name": "kiwi", "qty": 2}), ("get", {"item_id": float("nan")})]
    for name, args in plan:
        expected = [s.call(name, args) for s in seq]
        got = worker.call_many([(s, name, args) for s in bat])
        assert [r.to_dict() for r in got] == [r.to_dict() for r in expected]
    assert [s.digest() for s in bat] == [s.digest() for s in seq]
    for s in seq + bat:
        s.close()


def test_worker_replacement_and_close() -> None:
    ex = WorkerExecutor(1, LIMITS)
    try:
        s = ex.session(make_spec(), seed=1)
        s.call("take", {"item_id": 1, "qty": 1})
        w = ex.workers[0]
        assert w is not None
        w.kill()  # dies between requests: the next request rebuilds the episode
        r = s.call("get", {"item_id": 1})
        assert r.ok and r.result["qty"] == 2
        assert ex.workers[0] is not w
    finally:
        ex.close()
    assert ex.workers == [None]


def test_engine_reuses_connections_between_episodes() -> None:
    engine = Engine(LIMITS)
    req = program_request(make_spec())
    assert engine.handle(req)["ok"]
    for i in range(5):
        assert engine.handle({"op": "open", "key": req["key"], "ep": f"e{i}", "seed": i})["ok"]
        resp = engine.handle({"op": "call", "ep": f"e{i}", "name": "take", "arguments": {"item_id": 1, "qty": 1}})
        assert resp["ok"] and resp["result"]["qty"] == 2, resp
        assert engine.handle({"op": "close", "ep": f"e{i}"})["ok"]
    assert engine._pooled == 1
    assert engine.handle({"op": "nope"})["error_type"] == "ProtocolError"
    assert engine.handle({"op": "call", "ep": "missing", "name": "get"})["error_type"] == "ProtocolError"
    batch = engine.handle({"op": "batch", "reqs": [{"op": "ping"}, {"op": "nope"}]})
    assert [r["ok"] for r in batch["results"]] == [True, False]


# -- integration -------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["inprocess", "worker"])
def test_toolenv_plays_through_either_executor(mode: str, executors: dict[str, Executor]) -> None:
    env = ToolEnv(make_spec(), task="t0", executor=executors[mode])
    obs, info = env.reset(seed=0)
    assert obs == "Take one apple." and info["n_turns"] == 2
    obs, reward, terminated, _, info = env.step({"content": "", "tool_calls": [
        {"name": "take", "arguments": {"item_id": 1, "qty": 1}}]})
    assert json.loads(obs)["qty"] == 2 and not terminated
    obs, reward, terminated, _, info = env.step("Done.")
    assert info["turn_passed"] and obs == "How many apples?"
    _, reward, terminated, _, info = env.step("There are 2 apples.")
    assert terminated and reward == 1.0
    env.close()


def test_make_executor() -> None:
    assert make_executor("in-process").mode == "inprocess"
    with pytest.raises(ValueError):
        make_executor("gpu")
    with pytest.raises(ValueError):
        WorkerExecutor(0)


def test_open_many_equals_sequential_opens(ex: Executor) -> None:
    spec = make_spec()
    seq = [ex.session(spec, seed=k) for k in range(4)]
    bat = [ex.session(spec, seed=k) for k in range(3)] + [ex.session(spec, seed=99, start=False)]
    for round_ in range(2):
        for s in seq + bat[:3]:
            s.call("take", {"item_id": 1, "qty": 1})  # state that the next open must discard
        seeds = [100 * round_ + k for k in range(4)]
        for s, seed in zip(seq, seeds, strict=True):
            s.open(seed)
        assert ex.open_many(list(zip(bat, seeds, strict=True))) == [None] * 4
        assert [s.seed for s in bat] == seeds and all(s.log == [] and s.lost is None for s in bat)
        for name, args in [("misc", {}), ("take", {"item_id": 1, "qty": 2}), ("get", {"item_id": 1})]:
            assert [r.to_dict() for r in ex.call_many([(s, name, args) for s in bat])] == \
                   [s.call(name, args).to_dict() for s in seq]
        assert [s.digest() for s in bat] == [s.digest() for s in seq]
    assert ex.open_many([]) == [] and ex.call_many([]) == []
    if isinstance(ex, WorkerExecutor):  # a seed that is not JSON fails that open alone, as open() does
        with pytest.raises(LoadFailure) as alone:
            bat[0].open(object())  # type: ignore[arg-type]
        got = ex.open_many([(bat[0], object()), (bat[1], 5)])  # type: ignore[list-item]
        assert str(got[0]) == str(alone.value) and "not JSON" in str(got[0]) and got[1] is None
    for s in seq + bat:
        s.close()


def test_call_many_refuses_what_call_refuses(ex: Executor) -> None:
    s = ex.session(make_spec(), seed=0)
    items: list[Any] = [(s, "get", None), (s, "get", [1]), (s, "nope", {}), (s, "get", {"item_id": 1})]
    assert [r.to_dict() for r in ex.call_many(items)] == [s.call(n, a).to_dict() for _, n, a in items]
    assert ex.call_many([(s, "get", [1])])[0].error_type == "InvalidArguments"
    s.close()


def test_open_many_reports_each_failure_as_open_would(ex: Executor) -> None:
    # the module code fails for some episode seeds (the per-episode random is seeded)
    spec = make_spec(code=CODE + "\nif random.random() < 0.5:\n    raise ValueError('unlucky seed')\n")
    probe = ex.session(spec, seed=0)  # seed 0 must load
    outcomes: dict[int, bool] = {}
    for seed in range(1, 40):
        try:
            probe.open(seed)
            outcomes[seed] = True
        except LoadFailure:
            outcomes[seed] = False
    seeds = [k for k, ok in outcomes.items() if ok][:3] + [k for k, ok in outcomes.items() if not ok][:3]
    assert len(seeds) == 6
    sessions = [ex.session(spec, seed=0) for _ in seeds]
    got = ex.open_many(list(zip(sessions, seeds, strict=True)))
    assert [g is None for g in got] == [outcomes[k] for k in seeds]
    assert all("unlucky seed" in str(g) for g in got if g is not None)
    for s, ok in zip(sessions, [outcomes[k] for k in seeds], strict=True):
        assert s.call("get", {"item_id": 1}).ok == ok  # a failed open leaves no episode behind
    for s in [probe, *sessions]:
        s.close()


def test_open_many_survives_a_dead_worker() -> None:
    ex = WorkerExecutor(1, LIMITS)
    try:
        sessions = [ex.session(make_spec(), seed=k) for k in range(3)]
        for s in sessions:
            s.call("take", {"item_id": 1, "qty": 1})
        w = ex.workers[0]
        assert w is not None
        w.kill()  # dies between requests: the batch is sent again to a fresh worker
        assert ex.open_many([(s, 7) for s in sessions]) == [None] * 3
        assert ex.restarts == 1
        assert [s.call("get", {"item_id": 1}).result["qty"] for s in sessions] == [3, 3, 3]
    finally:
        ex.close()


PLAIN_CODE = '''
def put(db, k, v):
    db.execute("INSERT INTO kv (k, v) VALUES (?, ?)", [k, v])
    return {"k": k, "n": db.query("SELECT count(*) AS n FROM kv")[0]["n"]}

def get(db, k):
    rows = db.query("SELECT v FROM kv WHERE k = ?", [k])
    if not rows:
        raise ToolError("no key " + k)
    return rows[0]["v"]

def put_then_fail(db, k, v):
    db.execute("INSERT INTO kv (k, v) VALUES (?, ?)", [k, v])
    raise ToolError("changed my mind")

def crash(db, k):
    return {"k": k}["missing"]

def weird(db, k):
    if k == "nan":
        return float("nan")
    if k == "set":
        return {1, 2}
    if k == "big":
        return "x" * 5000
    if k == "tuple":
        return (1, "a", None, 2.5)
    return None

def abort(db, k):
    db.execute("INSERT OR ROLLBACK INTO kv (k, v) VALUES (?, 0)", [k])
    return "unreachable when k exists"
'''
PLAIN_PLAN: list[tuple[str, Any]] = [  # the fast path, each way it can fail, and the slow path's refusals
    ("put", {"k": "a", "v": 1}), ("get", {"k": "a"}), ("get", {"k": "zz"}), ("put", {"k": "a", "v": 2}),
    ("put_then_fail", {"k": "b", "v": 3}), ("crash", {"k": "a"}), ("weird", {"k": "nan"}), ("weird", {"k": "set"}),
    ("weird", {"k": "big"}), ("weird", {"k": "tuple"}), ("weird", {"k": "none"}), ("nope", {}), ("get", {}),
    ("get", {"k": 5}), ("get", {"k": ["a"]}), ("abort", {"k": "a"}), ("get", {"k": "a"}), ("put", {"k": "e", "v": 5}),
]


def test_call_plain_answers_as_call_does() -> None:
    """Engine.call_plain (the in-process hot path) answers (result, changes) exactly where call() answers
    success, the same error response otherwise, and leaves the same log and state."""
    tools = {n: {"type": "object", "properties": {"k": {"type": "string"}, "v": {"type": "integer"}},
                 "required": ["k"]} for n in ("put", "get", "put_then_fail", "crash", "weird", "abort")}
    req = {"op": "load", "key": "plain", "code": PLAIN_CODE, "tools": tools,
           "schema_sql": "CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL);", "seed_sql": ""}
    fast, ref = Engine(Limits(max_result_bytes=1000)), Engine(Limits(max_result_bytes=1000))
    for e in (fast, ref):
        assert e.handle(dict(req))["ok"] and e.handle({"op": "open", "key": "plain", "ep": "e", "seed": 1})["ok"]
    kinds = set()
    for name, args in PLAIN_PLAN:
        out, resp = fast.call_plain("e", name, dict(args)), ref.call("e", name, dict(args))
        if out.__class__ is tuple:
            assert resp == {"ok": True, "changes": out[1], "result": out[0]}
        else:
            assert out == resp
        kinds.add(resp.get("error_type"))
        assert fast.episodes["e"].log == ref.episodes["e"].log
        assert fast.handle({"op": "digest", "ep": "e"}) == ref.handle({"op": "digest", "ep": "e"})
    assert kinds == {None, "ToolError", "RuntimeError", "NotJSON", "ResourceLimit", "UnknownTool",
                     "InvalidArguments", "SQLError"}
    assert fast.call_plain("gone", "get", {"k": "a"}) == ref.call("gone", "get", {"k": "a"})
    fast.episodes["e"].lost = ref.episodes["e"].lost = "lost"
    assert fast.call_plain("e", "get", {"k": "a"}) == ref.call("e", "get", {"k": "a"})


@pytest.mark.parametrize("name", ["get", 'qu"ote', "üñï\u2028", "\ud800lone", "x" * 300])
def test_call_frames_are_the_requests_json(name: str) -> None:
    """The worker's call frames (built from remembered JSON of ids and names) are the request's JSON."""
    ex = WorkerExecutor.__new__(WorkerExecutor)  # _encode needs no worker
    for ep in ("123-4", name):
        req = {"op": "call", "ep": ep, "name": name, "arguments": {"a": (1, 2), "b": name}}
        for _ in range(2):  # the second time from the remembered strings
            frame = ex._encode(req)
            assert frame == json.dumps({**req, "arguments": {"a": [1, 2], "b": name}},
                                       separators=(",", ":")).encode()

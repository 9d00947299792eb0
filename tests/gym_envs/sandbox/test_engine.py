"""``gym_envs.sandbox.engine``: loading, calls, episodes and their replay, in both modes (the contract and the
attacks on it)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gym_envs.env import ToolEnv
from gym_envs.sandbox import (
    CallResult,
    Engine,
    Executor,
    LoadFailure,
    Session,
    WorkerExecutor,
    make_executor,
    program_request,
)
from gym_envs.spec import parse_spec
from tests.gym_envs.sandbox.attacks import (
    LIMITS,
    OPEN_SCHEMA,
    assert_contained,
    assert_next_episode_runs,
    attempt,
    make_spec,
)
from tests.gym_envs.sandbox.judging import check
from tests.gym_envs.sandbox.store import STORE_CODE, STORE_SCHEMA, STORE_TOOLS, store_spec


@pytest.mark.parametrize("code,schema,kind", [
    ("def get(db, item_id):\n    return __import__('os')", STORE_SCHEMA, "CompileError"),
    ("def nothing(db):\n    return 1", STORE_SCHEMA, "LoadError"),
    ("x = 1 / 0\ndef get(db, item_id):\n    return 1", STORE_SCHEMA, "LoadError"),
    ("def get(db, item_id):\n    return 1", "CREATE TABLE items (", "SchemaError"),
    ("def get(db, item_id):\n    return 1", STORE_SCHEMA + "CREATE VIEW v AS SELECT 1;", "SchemaError"),
    ("def get(db, item_id):\n    return 1", STORE_SCHEMA + "PRAGMA foreign_keys = OFF;", "SchemaError"),
])
def test_load_failures_are_typed(code: str, schema: str, kind: str, ex: Executor) -> None:
    spec = store_spec(code, [STORE_TOOLS[0]], schema=schema)
    resp = ex.load(spec)
    assert not resp["ok"] and resp["error_type"] == kind, resp
    with pytest.raises(LoadFailure) as info:
        ex.session(spec)
    assert info.value.response["error_type"] == kind


def test_load_reports_tables_and_caches(ex: Executor) -> None:
    spec = store_spec()
    first = ex.load(spec)
    assert first["ok"]
    if not first.get("cached"):
        assert first["tables"] == {"items": 2}
    for _ in range(len(getattr(ex, "workers", [None]))):  # a worker executor loads round-robin
        last = ex.load(spec)
    assert last["ok"] and last["cached"] is True
    assert program_request(spec)["key"] == program_request(store_spec())["key"]


def test_calls_and_typed_errors(ex: Executor) -> None:
    s = ex.session(store_spec())
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
    spec = store_spec()
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
    s = ex.session(store_spec())
    before = s.digest()
    s.call("take", {"item_id": 1, "qty": 3})
    assert s.digest()["digest"] != before["digest"]
    s.open(0)
    assert s.digest() == before
    assert s.log == []
    s.close()


def test_dump_and_digest(ex: Executor) -> None:
    s = ex.session(store_spec())
    dump = s.dump()
    assert dump["items"]["columns"] == ["id", "name", "qty"] and dump["items"]["count"] == 2
    assert dump["items"]["rows"] == [[1, "apple", 3], [2, "pear", 0]]
    assert s.dump(["items"], limit=0)["items"]["rows"] == []
    assert set(s.digest()["tables"]) == {"items"}
    s.close()


def test_engine_reuses_connections_between_episodes() -> None:
    engine = Engine(LIMITS)
    req = program_request(store_spec())
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


@pytest.mark.parametrize("mode", ["inprocess", "worker"])
def test_toolenv_plays_through_either_executor(mode: str, executors: dict[str, Executor]) -> None:
    env = ToolEnv(store_spec(), task="t0", executor=executors[mode])
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
    spec = store_spec()
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
    s = ex.session(store_spec(), seed=0)
    items: list[Any] = [(s, "get", None), (s, "get", [1]), (s, "nope", {}), (s, "get", {"item_id": 1})]
    assert [r.to_dict() for r in ex.call_many(items)] == [s.call(n, a).to_dict() for _, n, a in items]
    assert ex.call_many([(s, "get", [1])])[0].error_type == "InvalidArguments"
    s.close()


def test_open_many_reports_each_failure_as_open_would(ex: Executor) -> None:
    # the module code fails for some episode seeds (the per-episode random is seeded)
    spec = store_spec(code=STORE_CODE + "\nif random.random() < 0.5:\n    raise ValueError('unlucky seed')\n")
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


def test_huge_result_is_refused(ex: Executor, host: dict[str, Any]) -> None:
    code = "def t(db, **kw):\n    return ['x' * 1000] * 1000"
    assert_contained(attempt(ex, code), call={"ResourceLimit"}, detail="too large")
    code = "def t(db, **kw):\n    x = []\n    for i in range(100):\n        x = [x]\n    return x"
    assert_contained(attempt(ex, code), call={"NotJSON"}, detail="nested deeper")
    assert_next_episode_runs(ex)


def test_results_cross_as_plain_json(ex: Executor, host: dict[str, Any]) -> None:
    """Dict/list/int subclasses come back as exact ``dict``/``list``/``int`` (so no rigged
    ``__eq__`` survives); values JSON cannot carry are an error."""
    code = """
import collections, re
def t(db, **kw):
    P = collections.namedtuple('P', 'a b')
    return {'counter': collections.Counter('aab'), 'ordered': collections.OrderedDict(x=1),
            'point': P(1, 2), 'flag': re.IGNORECASE, 'tuple': (1, 2), 1: 'int key'}
"""
    where, r = attempt(ex, code)
    assert where == "call" and r.ok
    assert r.result == {"counter": {"a": 2, "b": 1}, "ordered": {"x": 1}, "point": [1, 2], "flag": 2,
                        "tuple": [1, 2], "1": "int key"}

    def exact(v: Any) -> bool:
        if isinstance(v, dict):
            return type(v) is dict and all(type(k) is str and exact(x) for k, x in v.items())
        if isinstance(v, list):
            return type(v) is list and all(exact(x) for x in v)
        return type(v) in (str, int, float, bool, type(None))

    assert exact(r.result)
    for value in ("collections.UserList([1])", "collections.deque([1])", "{1, 2}", "float('nan')",
                  "decimal.Decimal('1.5')"):
        code = f"import collections, decimal\ndef t(db, **kw):\n    return {value}"
        assert_contained(attempt(ex, code), call={"NotJSON"})
    assert_next_episode_runs(ex)


def test_tool_mutating_its_arguments_affects_nothing_else(ex: Executor, host: dict[str, Any]) -> None:
    code = """
def t(db, items, meta):
    items.append('injected')
    meta['owner'] = 'mallory'
    return [len(items), meta]
"""
    s = ex.session(make_spec(code))
    args = {"items": ["a"], "meta": {"owner": "ann"}}
    r1 = s.call("t", args)
    r2 = s.call("t", args)
    assert r1.ok and r2.ok and r1.result == r2.result == [2, {"owner": "mallory"}]
    assert args == {"items": ["a"], "meta": {"owner": "ann"}}
    assert r1.arguments == {"items": ["a"], "meta": {"owner": "ann"}}
    s.close()


def test_tool_writing_the_checked_rows_is_judged_by_state(ex: Executor) -> None:
    """A tool that inserts exactly the row a check looks for passes that check.

    This is correct, not a hack: checks define the task by the final state (gym_envs/ENVSPEC.md), and the
    agent can only reach that state through the tools the spec offers; a spec whose tool makes a
    check trivially true is caught by the validity gate's no-op and near-miss rules, not here.
    """
    code = "def t(db, **kw):\n    db.execute(\"INSERT INTO secret (k) VALUES ('done')\")\n    return 'ok'"
    s = ex.session(make_spec(code))
    want = {"kind": "sql", "query": "SELECT count(*) FROM secret WHERE k = 'done'", "expect": [[1]]}
    assert not check(s, [want], "", [])[0].passed
    assert s.call("t", {}).ok
    assert check(s, [want], "", ["t"])[0].passed
    s.close()


def test_module_level_cache_does_not_survive_the_episode(ex: Executor, host: dict[str, Any]) -> None:
    code = "CACHE = []\nSEEN = {}\ndef t(db, **kw):\n    CACHE.append(1)\n    SEEN['n'] = len(CACHE)\n" \
           "    return len(CACHE)"
    spec = make_spec(code)
    s = ex.session(spec)
    assert [s.call("t", {}).result for _ in range(3)] == [1, 2, 3]
    s.open(0)
    assert s.call("t", {}).result == 1
    other = ex.session(spec)
    assert other.call("t", {}).result == 1
    s.close()
    other.close()


def test_connection_history_is_invisible_to_the_next_episode(ex: Executor, host: dict[str, Any]) -> None:
    """Connections are reused between episodes; ``last_insert_rowid()`` and ``changes()`` are reset
    to a fresh connection's values and ``total_changes()`` is refused."""
    code = '''
def write(db, **kw):
    db.execute("INSERT INTO secret (k) VALUES ('x')")
    db.execute("UPDATE acct SET balance = balance + 1")
    return 1
def history(db, **kw):
    return db.query("SELECT last_insert_rowid() AS rowid, changes() AS changes")[0]
'''
    spec = make_spec(code, "write", "history")
    s = ex.session(spec)
    assert s.call("history", {}).result == {"rowid": 0, "changes": 0}
    s.call("write", {})
    assert s.call("history", {}).result == {"rowid": 2, "changes": 2}
    s.open(0)
    assert s.call("history", {}).result == {"rowid": 0, "changes": 0}
    s.close()
    t = ex.session(spec)  # very likely the pooled connection s used
    assert t.call("history", {}).result == {"rowid": 0, "changes": 0}
    t.close()


def test_sql_abort_of_the_transaction_keeps_earlier_calls(ex: Executor, host: dict[str, Any]) -> None:
    """SQLite rolls back the whole transaction when a write statement is interrupted (here by the
    statement deadline). The call is an error, the episode is rebuilt from its log, and even a tool
    that catches the error cannot write outside the transaction afterwards."""
    code = '''
def deposit(db, account_id, amount):
    db.execute("UPDATE acct SET balance = balance + ? WHERE id = ?", [amount, account_id])
    return db.query("SELECT balance FROM acct WHERE id = ?", [account_id])[0]["balance"]
def flood(db, **kw):
    try:
        db.execute("INSERT INTO secret WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                   "SELECT hex(x) FROM c")
    except Exception:
        db.execute("DELETE FROM acct")
    return 'swallowed'
'''
    s = ex.session(make_spec(code, "deposit", "flood"))
    assert s.call("deposit", {"account_id": 1, "amount": 5}).result == 105
    r = s.call("flood", {})
    assert not r.ok and r.error_type == "SQLError", r
    assert s.call("deposit", {"account_id": 1, "amount": 1}).result == 106
    assert check(s, [{"kind": "sql", "query": "SELECT count(*) FROM acct", "expect": [[2]]},
                    {"kind": "sql", "query": "SELECT count(*) FROM secret", "expect": [[1]]}], "", [])[1].passed
    s.close()


def test_failed_call_that_wrote_is_undone(ex: Executor, host: dict[str, Any]) -> None:
    """A call that writes and then fails leaves no write behind, while the Python state and the random
    stream stay those of the episode's calls (the episode is rebuilt by replay)."""
    code = '''
import random
COUNT = []
def half(db, **kw):
    COUNT.append(1)
    db.execute("UPDATE acct SET balance = balance - 10 WHERE id = 1")
    raise ToolError("changed my mind after " + str(len(COUNT)) + " tries")
def state(db, **kw):
    return [db.query("SELECT balance FROM acct WHERE id = 1")[0]["balance"], len(COUNT), random.random()]
'''
    spec = make_spec(code, "half", "state")
    ref = ex.session(spec, seed=5)
    ref.call("half", {})
    expected = ref.call("state", {}).result
    ref.close()
    s = ex.session(spec, seed=5)
    r = s.call("half", {})
    assert not r.ok and r.error_type == "ToolError" and "1 tries" in str(r.error)
    assert s.call("state", {}).result == expected
    assert expected[:2] == [100, 1]
    s.close()


TRAJECTORY_CODE = '''
import random, json, datetime
def deposit(db, account_id, amount):
    if amount <= 0:
        raise ToolError("amount must be positive")
    n = db.execute("UPDATE acct SET balance = balance + ? WHERE id = ?", [amount, account_id])["rowcount"]
    if not n:
        raise ToolError("no such account")
    return {"balance": db.query("SELECT balance FROM acct WHERE id = ?", [account_id])[0]["balance"],
            "ticket": random.randint(1, 10**6)}
def half_then_fail(db, **kw):
    db.execute("INSERT INTO secret (k) VALUES ('partial')")
    return {"bad": {1, 2}}
def report(db, **kw):
    rows = db.query("SELECT id, owner, balance FROM acct ORDER BY id")
    return {"rows": rows, "when": datetime.date(2024, 1, 31).strftime("%d %b %Y"),
            "parsed": str(datetime.datetime.strptime("2024-02-01", "%Y-%m-%d")), "pi": 3.141592653589793,
            "text": "caf\\u00e9 \\ud800", "nested": json.loads('{"a": [1, 2.5, null, true]}')}
'''


TRAJECTORY = [
    ("deposit", {"account_id": 1, "amount": 5}), ("deposit", {"account_id": 9, "amount": 5}),
    ("deposit", {"account_id": 1, "amount": -1}), ("deposit", {"account_id": "1", "amount": 5}),
    ("half_then_fail", {}), ("nope", {}), ("deposit", {"account_id": 2, "amount": 7}),
    ("deposit", {"account_id": 1, "amount": float("nan")}), ("report", {}),
]


TRAJECTORY_CHECKS = [
    {"kind": "sql", "query": "SELECT balance FROM acct ORDER BY id", "expect": [[105], [57]], "ordered": True},
    {"kind": "sql", "query": "SELECT count(*) FROM secret", "expect": [[1]]},
    {"kind": "python", "code": "def check(db):\n    return sum(r['balance'] for r in db.query('SELECT balance "
                               "FROM acct')) == 162"},
    {"kind": "unchanged", "tables": ["secret"]},
    {"kind": "unchanged", "tables": []},
    {"kind": "reply_contains", "any_of": ["done"]},
    {"kind": "calls", "require": ["deposit"], "forbid": ["half_then_fail"]},
]


def _play_trajectory(ex: Executor) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    spec = parse_spec({**make_spec(TRAJECTORY_CODE, "deposit", "half_then_fail", "report").model_dump(),
                       "tools": [
                           {"name": "deposit", "parameters": {
                               "type": "object", "required": ["account_id", "amount"],
                               "properties": {"account_id": {"type": "integer"}, "amount": {"type": "number"}}}},
                           {"name": "half_then_fail", "parameters": OPEN_SCHEMA},
                           {"name": "report", "parameters": OPEN_SCHEMA}]})
    s: Session = ex.session(spec, seed=42)
    s.mark()
    calls = [s.call(name, args).to_dict() for name, args in TRAJECTORY]
    checks = check(s, TRAJECTORY_CHECKS, "All done.", [c["name"] for c in calls if c["ok"]],
                     attempted=[c["name"] for c in calls])
    digest = s.digest()["digest"]
    s.close()
    return calls, [c.to_dict() for c in checks], digest


def test_both_modes_give_identical_results(executors: dict[str, Executor]) -> None:
    """The same scripted trajectory gives identical CallResults, check results and final state."""
    inproc = _play_trajectory(executors["inprocess"])
    work = _play_trajectory(executors["worker"])
    assert json.dumps(inproc[0], sort_keys=True) == json.dumps(work[0], sort_keys=True)
    assert inproc == work
    kinds = [c["error_type"] for c in inproc[0]]
    assert kinds == [None, "ToolError", "ToolError", "InvalidArguments", "NotJSON", "UnknownTool", None,
                     "InvalidArguments", None]
    assert [c["passed"] for c in inproc[1]] == [True, True, True, True, False, True, False]


def test_both_modes_refuse_an_integer_json_cannot_write(executors: dict[str, Executor]) -> None:
    """``json.dumps`` refuses integers past the interpreter's digit limit; so do both modes, alike."""
    code = "def big(db, **kw):\n    return {'n': 7 ** 6000}\n"
    results = []
    for ex in executors.values():
        s = ex.session(make_spec(code, "big"))
        results.append(s.call("big", {}).to_dict())
        s.close()
    assert results[0] == results[1]
    assert results[0]["error_type"] == "NotJSON" and "digits" in results[0]["error"]


def test_db_works_only_inside_its_own_call(host: dict[str, Any]) -> None:
    """A facade kept past its call (in a global, a closure, another episode on the same pooled connection)
    refuses: the engine installs its owner token only while a call of its episode runs."""
    from gym_envs.errors import StateError
    from gym_envs.sandbox import InProcessExecutor

    ex = InProcessExecutor(LIMITS)
    code = "KEPT = []\ndef keep(db, **kw):\n    KEPT.append(db)\n    return 1\n" \
           "def use(db, **kw):\n    return KEPT[0].query('SELECT count(*) AS n FROM acct')[0]['n']\n"
    try:
        spec = make_spec(code, "keep", "use")
        a, b = ex.session(spec), ex.session(spec)
        assert a.call("keep", {}).ok and a.call("use", {}).result == 2  # the same episode, inside a call
        kept = ex.engine.episodes[a.id].db
        with pytest.raises(StateError, match="only be used during the tool call"):
            kept.query("SELECT 1 AS x")  # outside any call
        a.open(0)  # the connection goes back to the pool...
        b.close()
        c = ex.session(spec)  # ...and serves another episode
        assert c.call("keep", {}).ok
        with pytest.raises(StateError, match="only be used during the tool call"):
            kept.execute("DELETE FROM acct")
        assert c.call("use", {}).result == 2
        for s in (a, c):
            s.close()
    finally:
        ex.close()

"""``gym_envs.sandbox.inprocess``: the in-process hot path answers exactly as the engine's general path."""

from __future__ import annotations

import gc
from typing import Any

from gym_envs.sandbox import Engine, Limits

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


def test_a_failed_call_leaves_no_garbage_cycle() -> None:
    """A tool's exception, turned into an error response on the hot path, is freed when the call returns: its
    traceback holds the frame that held it, so keeping the name would leave a cycle only the collector frees."""
    tools = {"get": {"type": "object", "properties": {"k": {"type": "string"}}, "required": ["k"]}}
    e = Engine(Limits())
    assert e.handle({"op": "load", "key": "kv", "code": PLAIN_CODE, "tools": tools,
                     "schema_sql": "CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL);", "seed_sql": ""})["ok"]
    assert e.handle({"op": "open", "key": "kv", "ep": "e", "seed": 1})["ok"]
    gc.collect()
    gc.disable()
    try:
        for _ in range(5):
            assert e.call_plain("e", "get", {"k": "zz"})["error_type"] == "ToolError"
        assert gc.collect() == 0
    finally:
        gc.enable()

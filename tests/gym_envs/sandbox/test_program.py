"""``gym_envs.sandbox.program``: a process keeps its last builds, so another engine loading the same request neither
compiles nor seeds it again, and behaves as one that built it."""

from __future__ import annotations

from typing import Any

import pytest

import gym_envs.sandbox.program as program
from gym_envs.sandbox import Engine, Limits, SqlLimits, program_request
from tests.gym_envs.sandbox.store import STORE_TOOLS, store_spec

CODE = '''
def get(db, item_id):
    rows = db.query("SELECT id, name, qty FROM items WHERE id = ?", [item_id])
    if not rows:
        raise ToolError("no item")
    return rows[0]

def add(db, name, qty=1):
    return {"id": db.execute("INSERT INTO items (name, qty) VALUES (?, ?)", [name, qty])["lastrowid"]}

def take(db, item_id, qty):
    db.execute("UPDATE items SET qty = qty - ? WHERE id = ?", [qty, item_id])
    return get(db, item_id)

def misc(db, **kw):
    return {}
'''


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The programs compiled (and seeded) from here on."""
    made: list[str] = []
    compile_code = program.compile_code

    def counting(code: str, **kw: Any) -> Any:
        made.append(kw.get("filename", ""))
        return compile_code(code, **kw)

    monkeypatch.setattr(program, "compile_code", counting)
    monkeypatch.setattr(program, "_BUILT", type(program._BUILT)())
    return made


def _play(engine: Engine, req: dict[str, Any]) -> list[Any]:
    out = [engine.handle(req)["ok"]]
    assert engine.handle({"op": "open", "key": req["key"], "ep": "e", "seed": 1})["ok"]
    calls = [("take", {"item_id": 1, "qty": 1}), ("add", {"name": "kiwi", "qty": 2}), ("get", {"item_id": 3})]
    for name, args in calls:
        resp = engine.handle({"op": "call", "ep": "e", "name": name, "arguments": args})
        out.append((resp["ok"], resp.get("result"), resp.get("changes")))
    out.append(engine.handle({"op": "digest", "ep": "e"})["digest"])
    return out


def test_another_engine_loads_a_kept_build(builds: list[str]) -> None:
    req = program_request(store_spec(CODE, STORE_TOOLS))
    first = _play(Engine(), req)
    assert len(builds) == 1
    again = _play(Engine(), req)
    assert len(builds) == 1 and again == first
    assert _play(Engine(Limits(sql=SqlLimits(max_rows=50))), req) == first  # other limits: built for them
    assert len(builds) == 2


def test_only_the_last_builds_are_kept(builds: list[str]) -> None:
    reqs = [program_request(store_spec(CODE + f"\nVERSION = {i}\n", STORE_TOOLS)) for i in range(program.KEPT + 1)]
    for req in reqs:
        assert Engine().handle(req)["ok"]
    assert len(builds) == program.KEPT + 1
    assert Engine().handle(reqs[-1])["ok"] and len(builds) == program.KEPT + 1
    assert Engine().handle(reqs[0])["ok"] and len(builds) == program.KEPT + 2  # the oldest was dropped


def test_a_failed_build_is_not_kept(builds: list[str]) -> None:
    req = program_request(store_spec(CODE, STORE_TOOLS, seed="INSERT INTO nowhere VALUES (1);"))
    for _ in range(2):
        assert Engine().handle(req)["error_type"] == "SchemaError"
    assert len(builds) == 2

"""A task's own starting state (``setup_sql``, spec_version 2): run after the seed when its episode opens,
kept through a rebuild and a worker crash, absent from the other tasks' episodes."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from gym_envs.env import ToolEnv, reset_many
from gym_envs.errors import LoadFailure
from gym_envs.sandbox import Executor, InProcessExecutor, WorkerExecutor
from gym_envs.spec import SpecError, parse_spec

_CODE = """
def read(db, k):
    rows = db.query("SELECT n FROM c WHERE k = ?", [k])
    if not rows:
        raise ToolError("no counter " + k)
    return rows[0]["n"]

def bump_then_fail(db, k):
    db.execute("UPDATE c SET n = n + 1 WHERE k = ?", [k])
    raise ToolError("refused after writing")
"""
_K = {"type": "object", "properties": {"k": {"type": "string"}}, "required": ["k"]}
_TURN = {"instruction": "Read counter a.", "checks": [{"kind": "unchanged", "tables": []}],
         "reference": [{"name": "read", "arguments": {"k": "a"}}]}
SPEC: dict[str, Any] = {
    "spec_version": 2, "id": "setup-demo", "title": "Counters",
    "state": {"schema_sql": "CREATE TABLE c (k TEXT PRIMARY KEY, n INTEGER NOT NULL);",
              "seed_sql": "INSERT INTO c VALUES ('a', 1);"},
    "tools": [{"name": "read", "parameters": _K}, {"name": "bump_then_fail", "parameters": _K}],
    "code": _CODE,
    "tasks": [{"id": "plain", "kind": "read", "turns": [_TURN]},
              {"id": "seeded", "kind": "read", "turns": [_TURN],
               "setup_sql": ["UPDATE c SET n = 5 WHERE k = 'a'", "INSERT INTO c VALUES ('b', 7)"]}],
}


@pytest.fixture(scope="module", params=["inprocess", "worker"])
def executor(request: pytest.FixtureRequest) -> Iterator[Executor]:
    ex: Executor = InProcessExecutor() if request.param == "inprocess" else WorkerExecutor(1)
    yield ex
    ex.close()


def _read(env: ToolEnv, k: str) -> Any:
    assert env.session is not None
    r = env.session.call("read", {"k": k})
    return r.result if r.ok else r.error


def test_a_task_starts_from_the_seed_then_its_own_setup(executor: Executor) -> None:
    env = ToolEnv(SPEC, executor=executor)
    try:
        env.reset(options={"task": "seeded"})
        assert (_read(env, "a"), _read(env, "b")) == (5, 7)
        env.reset(options={"task": "plain"})  # the same session, another task: the seed alone
        assert (_read(env, "a"), _read(env, "b")) == (1, "no counter b")
        env.reset(options={"task": "seeded"})
        assert (_read(env, "a"), _read(env, "b")) == (5, 7)
    finally:
        env.close()


def test_the_setup_survives_the_rebuild_after_a_call_that_wrote_then_failed(executor: Executor) -> None:
    env = ToolEnv(SPEC, executor=executor)
    try:
        env.reset(options={"task": "seeded"})
        assert env.session is not None
        r = env.session.call("bump_then_fail", {"k": "a"})
        assert not r.ok and r.error == "refused after writing"
        assert (_read(env, "a"), _read(env, "b")) == (5, 7)  # the call undone, the setup kept
    finally:
        env.close()


def test_a_crashed_worker_rebuilds_the_episode_with_its_setup() -> None:
    ex = WorkerExecutor(1)
    env = ToolEnv(SPEC, executor=ex)
    try:
        env.reset(options={"task": "seeded"})
        w = ex.workers[0]
        assert w is not None
        w.kill()
        assert (_read(env, "a"), _read(env, "b")) == (5, 7)
        assert ex.restarts == 1
    finally:
        env.close()
        ex.close()


def test_reset_many_opens_each_task_with_its_own_setup(executor: Executor) -> None:
    envs = [ToolEnv(SPEC, executor=executor) for _ in range(2)]
    try:
        reset_many(envs, options=[{"task": "seeded"}, {"task": "plain"}])
        assert [_read(e, "a") for e in envs] == [5, 1]
    finally:
        for e in envs:
            e.close()


def test_a_v1_document_with_setup_is_refused_saying_to_use_version_2() -> None:
    d = copy.deepcopy(SPEC)
    d["spec_version"] = 1
    with pytest.raises(SpecError, match=r"setup_sql.*set spec_version to 2"):
        parse_spec(d)


def test_a_setup_statement_that_is_not_a_write_is_refused_at_parse() -> None:
    d = copy.deepcopy(SPEC)
    d["tasks"][1]["setup_sql"] = ["SELECT * FROM c"]
    with pytest.raises(SpecError, match=r"tasks\[1\]\.setup_sql: statement 0: a setup statement is one INSERT"):
        parse_spec(d)


def test_a_setup_statement_that_fails_fails_the_reset_naming_it(executor: Executor) -> None:
    d = copy.deepcopy(SPEC)
    d["tasks"][1]["setup_sql"] = ["UPDATE c SET n = 2", "INSERT INTO missing VALUES (1)"]
    env = ToolEnv(d, executor=executor)
    try:
        with pytest.raises(LoadFailure, match="task setup statement 2"):
            env.reset(options={"task": "seeded"})
        env.reset(options={"task": "plain"})  # the session still serves the other tasks, from the seed
        assert _read(env, "a") == 1
    finally:
        env.close()

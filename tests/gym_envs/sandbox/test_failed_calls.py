"""What a failed tool call leaves of its writes (the spec's ``failed_calls``): nothing by default, its writes with
``keep``; the same in both executors, after every rebuild (an aborted transaction, a replaced worker), through
checkpoints and in the table digests. An aborted transaction and a failure no replay reproduces leave nothing in
either mode."""

from __future__ import annotations

from typing import Any, get_args

import pytest

from gym_envs.sandbox import FAILED_CALLS, Engine, Executor, InProcessExecutor, WorkerExecutor, program_request
from gym_envs.spec import EnvSpec, FailedCalls, parse_spec
from tests.gym_envs.sandbox.attacks import LIMITS, make_spec

#: ``pay`` and ``note`` write, then fail (a ToolError; an IndexError); ``deep`` writes, then runs out of recursion;
#: ``flood`` writes, then SQLite aborts the transaction (the statement deadline interrupts a write)
CODE = '''
def pay(db, account_id, amount):
    db.execute("UPDATE acct SET balance = balance - ? WHERE id = ?", [amount, account_id])
    left = db.query("SELECT balance FROM acct WHERE id = ?", [account_id])[0]["balance"]
    if left < 0:
        raise ToolError("overdrawn by " + str(-left))
    return left


def note(db, text):
    db.execute("INSERT INTO secret (k) VALUES (?)", [text])
    return [][len(text)]


def deep(db, **kw):
    db.execute("INSERT INTO secret (k) VALUES ('deep')")

    def down(n):
        return down(n + 1)
    return down(0)


def flood(db, **kw):
    db.execute("INSERT INTO secret (k) VALUES ('flood')")
    db.execute("INSERT INTO secret WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
               "SELECT hex(x) FROM c")
'''
TOOLS = ("pay", "note", "deep", "flood")
#: the same without ``random`` or any state of its own: a program that gets checkpoints
DRAW = '''
import random


def draw(db, **kw):
    return random.randint(1, 10**9)
'''


def spec(mode: str, code: str = CODE, tools: tuple[str, ...] = TOOLS) -> EnvSpec:
    return parse_spec({**make_spec(code, *tools).model_dump(), "spec_version": 2, "failed_calls": mode})


def balances(s: Any) -> list[int]:
    return [r[2] for r in s.dump(["acct"])["acct"]["rows"]]


def notes(s: Any) -> list[str]:
    return [r[0] for r in s.dump(["secret"])["secret"]["rows"]]


@pytest.mark.parametrize("mode", ["rollback", "keep"])
def test_a_failed_call_keeps_its_writes_only_when_the_spec_says_so(mode: str, ex: Executor) -> None:
    keep = mode == "keep"
    s = ex.session(spec(mode))
    r = s.call("pay", {"account_id": 2, "amount": 80})
    assert not r.ok and r.error_type == "ToolError" and r.error == "overdrawn by 30", r
    assert r.changes == (1 if keep else 0)
    assert balances(s) == ([100, -30] if keep else [100, 50])
    n = s.call("note", {"text": "x"})
    assert not n.ok and n.error_type == "RuntimeError" and n.changes == (1 if keep else 0), n
    assert notes(s) == (["s3cr3t", "x"] if keep else ["s3cr3t"])
    assert s.call("pay", {"account_id": 1, "amount": 10}).result == 90  # the episode goes on
    s.close()


def test_the_default_rolls_back_and_the_engine_refuses_an_unknown_mode() -> None:
    assert make_spec(CODE, *TOOLS).failed_calls == "rollback"
    assert program_request(spec("keep"))["failed_calls"] == "keep"
    assert program_request(spec("keep"))["key"] != program_request(spec("rollback"))["key"]
    req = program_request(spec("keep")) | {"failed_calls": "sometimes", "key": "odd"}
    resp = Engine(LIMITS).handle(req)
    assert not resp["ok"] and resp["error_type"] == "LoadError" and "rollback, keep" in resp["error"], resp
    assert get_args(FailedCalls) == FAILED_CALLS  # one vocabulary: the spec's and the engine's


@pytest.mark.parametrize("mode", ["rollback", "keep"])
def test_a_rebuild_replays_a_kept_failure_and_undoes_an_aborted_transaction(mode: str, ex: Executor) -> None:
    """SQLite aborting a call's transaction rebuilds the episode from its log: a kept failure's writes come back
    (replayed, their savepoint kept), the aborted call's own writes do not, and the random stream goes on."""
    keep = mode == "keep"
    code, tools = CODE + DRAW, (*TOOLS, "draw")
    ref = ex.session(spec(mode, code, tools), seed=7)
    ref.call("pay", {"account_id": 2, "amount": 80})
    expected = [ref.call("draw", {}).result for _ in range(2)]
    ref.close()
    s = ex.session(spec(mode, code, tools), seed=7)
    s.call("pay", {"account_id": 2, "amount": 80})
    assert s.call("draw", {}).result == expected[0]
    r = s.call("flood", {})
    assert not r.ok and r.error_type == "SQLError" and r.changes == 0, r
    assert balances(s) == ([100, -30] if keep else [100, 50]) and notes(s) == ["s3cr3t"]
    assert s.call("draw", {}).result == expected[1]
    s.close()


def test_a_failure_no_replay_reproduces_is_undone_even_when_kept(ex: Executor) -> None:
    s = ex.session(spec("keep"))
    s.call("note", {"text": "kept"})
    r = s.call("deep", {})
    assert not r.ok and r.error_type == "ResourceLimit" and "RecursionError" in str(r.error), r
    assert r.changes == 0 and notes(s) == ["s3cr3t", "kept"]
    s.call("flood", {})  # a rebuild: what the log replays has no 'deep'
    assert notes(s) == ["s3cr3t", "kept"]
    s.close()


def test_both_executors_agree_on_a_trajectory_with_kept_failures(executors: dict[str, Executor]) -> None:
    plan = [("pay", {"account_id": 2, "amount": 80}), ("note", {"text": "a"}), ("pay", {"account_id": 1, "amount": 5}),
            ("deep", {}), ("flood", {}), ("note", {"text": "bb"}), ("pay", {"account_id": 2, "amount": 1})]
    played = []
    for ex in executors.values():
        s = ex.session(spec("keep"), seed=1)
        played.append(([s.call(name, args).to_dict() for name, args in plan], s.digest()))
        s.close()
    assert played[0] == played[1]
    assert [c["changes"] for c in played[0][0]] == [1, 1, 1, 0, 0, 1, 1]


def test_a_replaced_worker_rebuilds_the_kept_writes() -> None:
    ex = WorkerExecutor(1, LIMITS)
    try:
        s = ex.session(spec("keep"))
        assert not s.call("pay", {"account_id": 2, "amount": 80}).ok
        before = s.digest()
        w = ex.workers[0]
        assert w is not None
        w.kill()  # dies between requests: the next request replays the episode's log on a fresh worker
        assert s.call("pay", {"account_id": 1, "amount": 1}).result == 99
        assert balances(s) == [99, -30] and ex.workers[0] is not w
        assert s.call("pay", {"account_id": 1, "amount": -1}).result == 100
        assert s.digest() == before
    finally:
        ex.close()


def test_checkpoints_and_digests_hold_the_kept_writes() -> None:
    """A checkpoint taken after a kept failure restores it, one taken before restores without it; the cached table
    digests are the ones a fresh read gives after each, and after a rebuild that removed the checkpoints."""
    ex = InProcessExecutor(LIMITS)
    try:
        s = ex.session(spec("keep", CODE, ("pay", "note")))
        state = ex.engine.episodes[s.id].state

        def exact() -> dict[str, str]:
            assert state.table_digests() == state.table_digests(cached=False)
            return s.digest()["tables"]

        start = exact()
        t0 = s.fork()
        assert isinstance(t0, int)
        s.call("pay", {"account_id": 2, "amount": 80})
        kept = exact()
        assert kept["acct"] != start["acct"] and kept["secret"] == start["secret"]
        t1 = s.fork()
        s.call("note", {"text": "later"})
        assert exact() != kept
        assert s.restore(t1) is True and exact() == kept and balances(s) == [100, -30]
        assert s.restore(t0) is True and exact() == start
        s.call("pay", {"account_id": 2, "amount": 80})
        t2 = s.fork()
        ex.engine._rebuild(ex.engine.episodes[s.id], reload=False)  # what an undone call does: replay the log
        assert exact() == kept
        s.call("note", {"text": "later"})
        assert s.restore(t2) is False and exact() == kept  # the checkpoint went with the rebuild: replayed
    finally:
        ex.close()

"""``gym_envs.sandbox.pool``: worker processes that are stopped, killed or replaced, and batches over them."""

from __future__ import annotations

from typing import Any

import pytest

from gym_envs.sandbox import Executor, Limits, WorkerExecutor
from tests.gym_envs.sandbox.attacks import (
    LIMITS,
    assert_contained,
    assert_next_episode_runs,
    attempt,
    make_spec,
)
from tests.gym_envs.sandbox.store import store_spec

WORKER_ONLY_BOMBS = {
    # name: (code, acceptable error types)
    "while True: pass": ("def t(db, **kw):\n    while True:\n        pass", {"Timeout"}),
    "loop that swallows exceptions": ("def t(db, **kw):\n    while True:\n        try:\n"
                                      "            while True:\n                pass\n"
                                      "        except Exception:\n            pass", {"Timeout"}),
    "loop in finally": ("def t(db, **kw):\n    try:\n        while True:\n            pass\n"
                        "    finally:\n        while True:\n            pass", {"Timeout"}),
    "ReDoS (a+)+$": ("import re\ndef t(db, **kw):\n    return bool(re.match('(a+)+$', 'a' * 40 + 'b'))",
                     {"Timeout"}),
    "pbkdf2_hmac (C, ignores signals)": ("import hashlib\ndef t(db, **kw):\n"
                                         "    return hashlib.pbkdf2_hmac('sha256', b'x', b'y', 10**9).hex()",
                                         {"Timeout", "WorkerCrashed"}),
    "'x'.ljust(2**34)": ("def t(db, **kw):\n    return len('x'.ljust(2**34))", {"ResourceLimit", "WorkerCrashed"}),
    "list growth": ("def t(db, **kw):\n    x = []\n    while True:\n        x.append('x' * 1000)",
                    {"ResourceLimit", "WorkerCrashed", "Timeout"}),
}


@pytest.mark.parametrize("name", list(WORKER_ONLY_BOMBS))
def test_worker_contains_loops_and_memory_bombs(name: str, worker: WorkerExecutor, host: dict[str, Any]) -> None:
    """Loops are stopped by the soft deadline or the parent's timeout, memory by RLIMIT_AS."""
    code, kinds = WORKER_ONLY_BOMBS[name]
    assert_contained(attempt(worker, code), call=kinds)
    assert_next_episode_runs(worker)


STATEFUL = '''
import hashlib, random
def deposit(db, account_id, amount):
    db.execute("UPDATE acct SET balance = balance + ? WHERE id = ?", [amount, account_id])
    return db.query("SELECT balance FROM acct WHERE id = ?", [account_id])[0]["balance"]
def draw(db, **kw):
    return random.randint(1, 10**9)
def spin(db, **kw):
    return hashlib.pbkdf2_hmac('sha256', b'x', b'y', 10**9).hex()
def bomb(db, **kw):
    return len('x'.ljust(2**34))
def loop(db, **kw):
    while True:
        pass
'''


@pytest.mark.parametrize("attack,kinds,kills", [
    ("spin", {"Timeout"}, True),
    ("bomb", {"ResourceLimit", "WorkerCrashed"}, False),
    ("loop", {"Timeout"}, False),
])
def test_episode_survives_a_killed_or_stopped_call(attack: str, kinds: set[str], kills: bool,
                                                   worker: WorkerExecutor, host: dict[str, Any]) -> None:
    """A call that hangs in C without checking signals (``pbkdf2_hmac``: the parent's timeout kills
    the worker), exhausts memory, or loops in Python (the in-worker timer stops it) is a typed
    error; the same episode continues with its earlier calls replayed (state and random stream
    preserved), and the next episode runs."""
    spec = make_spec(STATEFUL, "deposit", "draw", "spin", "bomb", "loop")
    reference = worker.session(spec, seed=3)
    ref = [reference.call("deposit", {"account_id": 1, "amount": 5}).result,
           reference.call("draw", {}).result, reference.call("draw", {}).result]
    reference.close()

    s = worker.session(spec, seed=3)
    bystander = worker.session(spec, seed=4)
    assert bystander.call("deposit", {"account_id": 2, "amount": 1}).result == 51
    assert s.call("deposit", {"account_id": 1, "amount": 5}).result == ref[0]
    assert s.call("draw", {}).result == ref[1]
    restarts = worker.restarts
    r = s.call(attack, {})
    assert not r.ok and r.error_type in kinds, r
    if kills:
        assert worker.restarts == restarts + 1
    assert s.call("draw", {}).result == ref[2]  # the random stream continues where it was
    assert s.call("deposit", {"account_id": 1, "amount": 1}).result == ref[0] + 1
    assert bystander.call("deposit", {"account_id": 2, "amount": 1}).result == 52
    s.close()
    bystander.close()
    assert_next_episode_runs(worker)


@pytest.mark.parametrize("attack,kind", [("spin", "Timeout"), ("bomb", None)])
def test_a_killed_worker_charges_only_the_call_that_killed_it_in_a_batch(
        attack: str, kind: str | None, worker: WorkerExecutor, host: dict[str, Any]) -> None:
    """Calls of several episodes in one round trip (call_many, as step_many and the trainer's rollouts
    send them): when one of them hangs in C (the parent kills the worker) or exhausts memory, its
    neighbours in the batch get the results they would get alone, and only it gets the error."""
    spec = make_spec(STATEFUL, "deposit", "draw", "spin", "bomb", "loop")
    alone = [worker.session(spec, seed=k) for k in range(3)]
    together = [worker.session(spec, seed=k) for k in range(3)]
    plan = [(0, "deposit", {"account_id": 1, "amount": 5}), (1, attack, {}), (2, "draw", {}),
            (0, "draw", {}), (2, "deposit", {"account_id": 2, "amount": 1})]
    for s in alone + together:
        assert s.call("deposit", {"account_id": 1, "amount": 1}).ok  # history to rebuild after a kill
    expected = [alone[k].call(name, args) for k, name, args in plan]
    got = worker.call_many([(together[k], name, args) for k, name, args in plan])
    assert [r.to_dict() for k, r in enumerate(got) if k != 1] == [r.to_dict() for k, r in enumerate(expected)
                                                                  if k != 1]
    assert not got[1].ok and got[1].error_type == (kind or expected[1].error_type), got[1]
    assert [s.digest() for s in together] == [s.digest() for s in alone]
    for s in alone + together:
        s.close()
    assert_next_episode_runs(worker)


def test_worker_cpu_rlimit_kill_is_a_crash_result(host: dict[str, Any]) -> None:
    """RLIMIT_CPU kills a worker stuck in C code before the parent's timeout: ``WorkerCrashed``."""
    ex = WorkerExecutor(1, Limits(call_timeout_s=5.0, cpu_seconds=1, memory_bytes=512 << 20))
    try:
        s = ex.session(make_spec(STATEFUL, "deposit", "draw", "spin", "bomb", "loop"))
        assert s.call("deposit", {"account_id": 1, "amount": 5}).ok
        r = s.call("spin", {})
        assert not r.ok and r.error_type == "WorkerCrashed", r
        assert s.call("deposit", {"account_id": 1, "amount": 1}).result == 106
        s.close()
        assert_next_episode_runs(ex)
    finally:
        ex.close()


def test_call_many_equals_sequential_calls(executors: dict[str, Executor]) -> None:
    worker = executors["worker"]
    assert isinstance(worker, WorkerExecutor)
    spec = store_spec()
    seq = [worker.session(spec, seed=k) for k in range(4)]
    bat = [worker.session(spec, seed=k) for k in range(4)]
    assert len({s.worker_index for s in bat}) == 2  # spread over both workers
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
        s = ex.session(store_spec(), seed=1)
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


def test_open_many_survives_a_dead_worker() -> None:
    ex = WorkerExecutor(1, LIMITS)
    try:
        sessions = [ex.session(store_spec(), seed=k) for k in range(3)]
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


DEPTH = ("def probe(n):\n    try:\n        return probe(n + 1)\n    except Exception:\n        return n\n\n"
         "START = probe(0)\n\n"
         "def t(db, **kw):\n    return [probe(0), START]\n")


def test_spec_code_cannot_tell_how_a_worker_was_asked_to_run_it(worker: WorkerExecutor) -> None:
    """The recursion headroom spec code sees is the same for a single call and a call in a batch, and at module
    level on a single or batched open: no path (the validity gate's or a trainer's) can be told from another
    by probing the stack."""
    spec = make_spec(DEPTH, "t")
    one = worker.session(spec)
    single = one.call("t", {})
    batched = worker.call_many([(one, "t", {}), (one, "t", {})])
    two = worker.session(spec, start=False)
    worker.open_many([(two, 1)])
    opened = two.call("t", {})
    seen = {tuple(r.result) for r in (single, *batched, opened)}
    assert single.ok and len(seen) == 1, seen
    assert LIMITS.recursion_limit - 10 <= single.result[0] <= LIMITS.recursion_limit  # its own frames only


def test_a_batch_talks_to_its_workers_at_the_same_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """call_many and open_many send each worker its share at once (one thread a worker), so the environment side
    of a batch runs on as many cores as there are workers; the answers are those of sequential calls."""
    import threading
    import time

    from gym_envs.sandbox import pool

    in_flight, most, lock = [0], [0], threading.Lock()
    roundtrip = pool._Worker.roundtrip

    def slow_roundtrip(self: Any, payload: bytes, timeout: float) -> Any:
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        try:
            time.sleep(0.2)  # a round trip long enough that workers served one after another never overlap
            return roundtrip(self, payload, timeout)
        finally:
            with lock:
                in_flight[0] -= 1

    ex = WorkerExecutor(3, Limits(call_timeout_s=10.0, memory_bytes=512 << 20))
    seq = WorkerExecutor(1, Limits(call_timeout_s=10.0, memory_bytes=512 << 20))
    try:
        spec = store_spec()
        expected = [seq.session(spec, seed=k) for k in range(6)]
        bat = [ex.session(spec, seed=k, start=False) for k in range(6)]
        assert len({s.worker_index for s in bat}) == 3
        monkeypatch.setattr(pool._Worker, "roundtrip", slow_roundtrip)
        assert ex.open_many([(s, k) for k, s in enumerate(bat)]) == [None] * 6
        assert most[0] == 3
        most[0] = 0
        got = ex.call_many([(s, "take", {"item_id": 1, "qty": 1}) for s in bat])
        assert most[0] == 3
        monkeypatch.undo()
        assert [r.to_dict() for r in got] == [s.call("take", {"item_id": 1, "qty": 1}).to_dict() for s in expected]
        assert [s.digest() for s in bat] == [s.digest() for s in expected]
    finally:
        ex.close()
        seq.close()

"""``gym_envs.sandbox.purity`` and the engine's checkpoints (``fork``/``restore``): a checkpoint of a stateless
program puts the episode exactly where a replay of its log would, counters included; a program with state of
its own gets none."""

from __future__ import annotations

from typing import Any

import pytest

from gym_envs.sandbox import InProcessExecutor, LoadFailure, WorkerExecutor
from gym_envs.sandbox.purity import stateless
from tests.gym_envs.sandbox.attacks import LIMITS
from tests.gym_envs.sandbox.store import STORE_SCHEMA, STORE_TOOLS, store_spec

PURE = '''
"""A store without state of its own."""
LIMIT = (10, 20)


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
    r = db.execute("UPDATE items SET qty = qty - ? WHERE id = ?", [qty, item_id])
    return {"left": item["qty"] - qty, "lastrowid": r["lastrowid"]}
'''


@pytest.mark.parametrize("code,pure", [
    (PURE, True),
    ("COUNTS = {}\ndef get(db, item_id):\n    return 1", False),  # a module-level dict a call could change
    ("SEEN = []\ndef get(db, item_id):\n    SEEN.append(item_id)\n    return len(SEEN)", False),
    ("N = 0\ndef get(db, item_id):\n    global N\n    N += 1\n    return N", False),
    ("import random\ndef get(db, item_id):\n    return random.random()", False),  # the episode's own random
    ("def get(db, item_id):\n    import random\n    return random.random()", False),
    ("def get(db, item_id):\n    from random import random\n    return random()", False),
    # the sandbox's read-only module views keep nothing between calls
    ("def get(db, item_id):\n    import datetime\n    return datetime.date(2024, 1, 1).isoformat()", True),
    ("import math, json\nfrom datetime import timedelta\ndef get(db, item_id):\n    return math.floor(1.5)", True),
    ("def get(db, item_id):\n    import datetime, random\n    return 1", False),
    ("def get(db, item_id):\n    from . import x\n    return 1", False),
    ("def get(db, item_id, cache=[]):\n    return 1", False),  # a mutable default
    ("def get(db, item_id):\n    return db.query('SELECT changes() AS n')[0]['n']", False),
    ("def get(db, item_id):\n    return db.query('SELECT last_insert_rowid() AS n')[0]['n']", False),
    ("def deco(f):\n    return f\n@deco\ndef get(db, item_id):\n    return 1", False),
    ("def get(db, item_id:\n", False),  # not Python: no proof
])
def test_stateless(code: str, pure: bool) -> None:
    assert stateless(code) is pure


def _pure_spec() -> Any:
    return store_spec(PURE, STORE_TOOLS[:3], schema=STORE_SCHEMA)


def _state(session: Any) -> dict[str, Any]:
    return session.dump(["items"], 50)


def test_restore_is_the_replay_of_the_log_counters_included() -> None:
    ex = InProcessExecutor(LIMITS)
    try:
        spec = _pure_spec()
        s = ex.session(spec)
        assert s.call("add", {"name": "plum", "qty": 4}).result == {"id": 3}
        token = s.fork()
        assert isinstance(token, int)
        before = _state(s)
        assert s.call("take", {"item_id": 1, "qty": 2}).ok
        assert s.call("add", {"name": "fig"}).result == {"id": 4}
        assert s.restore(token) is True
        assert _state(s) == before
        # after the restore the episode goes on as the replay of its log would: the next insert gets id 4
        # again, and an update's lastrowid is the one the log's last insert left (3), not the undone one's
        assert s.call("add", {"name": "kiwi"}).result == {"id": 4}
        replay = ex.session(spec)
        replay.call("add", {"name": "plum", "qty": 4})
        replay.call("add", {"name": "kiwi"})
        assert _state(s) == _state(replay)
        assert s.call("take", {"item_id": 3, "qty": 1}).result == replay.call("take", {"item_id": 3, "qty": 1}).result
        assert s.restore(token) is True  # a checkpoint serves many restores
        assert _state(s) == before
    finally:
        ex.close()


def test_a_checkpoint_a_rebuild_removed_is_restored_by_replay() -> None:
    ex = InProcessExecutor(LIMITS)
    try:
        s = ex.session(_pure_spec())
        s.call("take", {"item_id": 1, "qty": 1})
        token = s.fork()
        before = _state(s)
        s.open(0)  # a new episode: the savepoint is gone
        with pytest.raises(LoadFailure):
            s.restore(token)  # ... and so is the checkpoint's record: an error, never a wrong state
        s.call("take", {"item_id": 1, "qty": 1})
        token = s.fork()
        ep = ex.engine.episodes[s.id]
        ex.engine._rebuild(ep, reload=False)  # what a call that fails after writing does
        s.call("add", {"name": "fig"})
        assert s.restore(token) is False  # rebuilt from the log instead: the same state
        assert _state(s) == before
    finally:
        ex.close()


def test_stateful_programs_and_workers_get_no_checkpoint() -> None:
    ex = InProcessExecutor(LIMITS)
    try:
        assert ex.session(store_spec()).fork() is None  # the store imports random: state of its own
    finally:
        ex.close()
    worker = WorkerExecutor(1, LIMITS)
    try:
        assert worker.session(_pure_spec()).fork() is None  # a worker's crash recovery replays a log
    finally:
        worker.close()

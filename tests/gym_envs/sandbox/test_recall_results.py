"""``gym_envs.sandbox.recall``'s results of calls that change nothing: answered in the episodes that ask for them (the
validity gate's) only as making the call would answer, each a copy of its own, and never across programs, contents,
counters or episodes' own state."""

from __future__ import annotations

from typing import Any

import pytest

import gym_envs.sandbox.engine as engine_module
from gym_envs.sandbox import CallResult, InProcessExecutor, Session
from gym_envs.sandbox.purity import stateless
from gym_envs.sandbox.recall import Recall, Recalls
from tests.gym_envs.sandbox.store import store_spec
from tests.gym_envs.sandbox.test_recall import GET_TAKE, GET_TAKE_TOOLS

PURE = GET_TAKE + '''
def seen(db):
    return db.query("SELECT chan" + "ges() AS n")[0]["n"]

def touch(db):
    return db.execute("UPDATE items SET qty = qty WHERE id < 0")["rowcount"]

def total(db):
    import decimal
    return str(sum(decimal.Decimal(r["qty"]) / 7 for r in db.query("SELECT qty FROM items")))
'''
NONE = {"type": "object", "properties": {}}
TOOLS = [*GET_TAKE_TOOLS,
         {"name": "seen", "parameters": NONE}, {"name": "touch", "parameters": NONE},
         {"name": "total", "parameters": NONE}]


class _Hits:
    """Counts the results :class:`Recall` hands back (a call answered without being made)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        monkeypatch.setattr(engine_module, "RECALLS", Recalls())  # nothing remembered from other tests
        self.found = 0
        self.asked = 0
        result = Recall.result

        def counted(recall: Recall, key: tuple[Any, ...]) -> tuple[bool, Any]:
            got = result(recall, key)
            self.asked += 1
            self.found += got[0]
            return got

        monkeypatch.setattr(Recall, "result", counted)


def _open(ex: InProcessExecutor, spec: Any, *, recall: bool = True) -> Session:
    s = ex.session(spec, 0, start=False)
    s.recall = recall
    s.open(0)
    return s


def _call(s: Session, name: str, **args: Any) -> CallResult:
    return s.call(name, args)


def test_the_code_under_test_keeps_no_state() -> None:
    assert stateless(PURE)  # its changes() read is built at run time: only the counters in the key keep it exact


def test_a_recalled_call_answers_what_making_it_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    hits = _Hits(monkeypatch)
    spec = store_spec(PURE, TOOLS)
    ex = InProcessExecutor()
    first = _call(_open(ex, spec), "get", item_id=1)
    assert hits.found == 0
    b = _open(ex, spec)
    again = _call(b, "get", item_id=1)
    assert hits.found == 1 and (again.ok, again.result, again.changes) == (first.ok, first.result, 0)
    assert _call(b, "take", item_id=1, qty=1).changes == 1
    after = _call(b, "get", item_id=1)  # another content: made, not recalled
    assert hits.found == 1 and after.result == {"id": 1, "name": "apple", "qty": 2}
    plain = _open(ex, spec, recall=False)
    _call(plain, "take", item_id=1, qty=1)
    assert _call(plain, "get", item_id=1).result == after.result


def test_episodes_do_not_share_state_through_recalled_results(monkeypatch: pytest.MonkeyPatch) -> None:
    _Hits(monkeypatch)
    spec = store_spec(PURE, TOOLS)
    ex = InProcessExecutor()
    a = _open(ex, spec)
    _call(a, "take", item_id=1, qty=3)
    assert _call(a, "get", item_id=1).result["qty"] == 0
    b = _open(ex, spec)
    assert _call(b, "get", item_id=1).result["qty"] == 3  # its own content: the template's
    c = _open(ex, spec, recall=False)
    _call(c, "take", item_id=1, qty=2)
    assert _call(c, "get", item_id=1).result["qty"] == 1


def test_a_changed_tool_source_is_not_answered_from_the_old_ones_results(monkeypatch: pytest.MonkeyPatch) -> None:
    hits = _Hits(monkeypatch)
    ex = InProcessExecutor()
    old = store_spec(PURE, TOOLS)
    new = store_spec(PURE.replace("return rows[0]", "return {**rows[0], 'v': 2}"), TOOLS)
    assert _call(_open(ex, old), "get", item_id=1).result == {"id": 1, "name": "apple", "qty": 3}
    assert _call(_open(ex, new), "get", item_id=1).result == {"id": 1, "name": "apple", "qty": 3, "v": 2}
    assert hits.found == 0


def test_the_connections_counters_are_part_of_a_recalled_calls_key(monkeypatch: pytest.MonkeyPatch) -> None:
    hits = _Hits(monkeypatch)
    spec = store_spec(PURE, TOOLS)
    ex = InProcessExecutor()
    for recall in (True, True, False):
        s = _open(ex, spec, recall=recall)
        assert _call(s, "seen").result == 0
        _call(s, "take", item_id=1, qty=1)
        assert _call(s, "seen").result == 1
        assert _call(s, "touch").result == 0  # changes no row, but changes() is 0 now
        assert _call(s, "seen").result == 0
    assert hits.found > 0


def test_a_recalled_result_is_a_copy_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    hits = _Hits(monkeypatch)
    spec = store_spec(PURE, TOOLS)
    ex = InProcessExecutor()
    first = _call(_open(ex, spec), "get", item_id=1)
    first.result["name"] = "changed by the caller"
    second = _call(_open(ex, spec), "get", item_id=1)
    second.result["qty"] = -1
    third = _call(_open(ex, spec), "get", item_id=1)
    assert hits.found == 2 and third.result == {"id": 1, "name": "apple", "qty": 3}


def test_writes_failures_and_episodes_that_do_not_ask_are_never_answered(monkeypatch: pytest.MonkeyPatch) -> None:
    hits = _Hits(monkeypatch)
    spec = store_spec(PURE, TOOLS)
    ex = InProcessExecutor()
    for _ in range(2):
        plain = _open(ex, spec, recall=False)
        _call(plain, "get", item_id=1)
    assert hits.asked == 0
    for _ in range(2):
        s = _open(ex, spec)
        assert not _call(s, "get", item_id=7).ok  # a failure: made every time
        assert _call(s, "take", item_id=2, qty=0).changes == 1  # a write (of the same values): made every time
    assert hits.asked == 4 and hits.found == 0


def test_an_episode_with_a_decimal_context_of_its_own_makes_its_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    hits = _Hits(monkeypatch)
    spec = store_spec(PURE, TOOLS)
    ex = InProcessExecutor()
    for _ in range(3):
        s = _open(ex, spec)
        assert _call(s, "total").result.startswith("0.428")
        assert _call(s, "total").ok
    assert hits.found == 0

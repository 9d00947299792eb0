"""An adjustment a person asks for moves the number the way they say: "take $15 off my balance" lowers it."""

from __future__ import annotations

import sqlite3

from envgen.world.compile import compile_world
from envgen.world.normalize import to_world
from envgen.world.phrase import lowers
from gym_envs.spec import ToolCall
from tests.envgen.world.store_world import store_world


def _credit_calls(phrase: str) -> list[tuple[float, int, int]]:
    """(amount, credit before, credit the check expects after) of every ``grant_credit`` call of the shop's tasks,
    its phrase replaced by ``phrase``."""
    bp = store_world()
    for op in bp.operations:
        if op.name == "grant_credit":
            op.phrase = phrase
    out = []
    for seed in range(4):
        spec = compile_world(bp, env_id="test-shop", seed=seed, n_tasks=10).spec
        db = sqlite3.connect(":memory:")
        db.executescript(spec.state.schema_sql)
        db.executescript(spec.state.seed_sql)
        for task in spec.tasks:
            for turn in task.turns:
                calls = [c for c in turn.reference if isinstance(c, ToolCall) and c.name == "grant_credit"]
                checks = [c for c in turn.checks if c.kind == "sql" and '"credit"' in c.query]
                if len(calls) == 1 and len(task.turns) == 1 and checks:
                    (before,) = db.execute("SELECT credit FROM customers WHERE email = ?",
                                           [calls[0].arguments["email"]]).fetchone()
                    out.append((calls[0].arguments["amount"], before, checks[0].expect[0][0]))
    return out


def test_a_request_to_take_an_amount_off_lowers_the_number() -> None:
    taken = _credit_calls("take {value} off the credit of {record}")
    assert taken
    for amount, before, after in taken:
        assert amount < 0 and after == before + round(amount * 100) < before
    added = _credit_calls("add {value} of credit to {record}")
    assert added and all(amount > 0 and after > before for amount, before, after in added)


def test_which_phrases_lower() -> None:
    ops = {o.name: o for o in to_world(store_world()).ops}
    op = ops["grant_credit"]
    for phrase, low in (("take {value} off the fines on {record}", True), ("waive {value} of the fine", True),
                        ("release {value} of the deposit held on {record}", True),
                        ("add {value} to the wallet of {record}", False),
                        ("put {value} back in the wallet of {record}", False)):
        op.phrase = phrase
        assert lowers(op) is low, phrase

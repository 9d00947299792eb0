"""The holes of issue 15, written before their fixes (against the old module paths; they fail here).

Each test states the property the red-team pass broke; the restructured suite
(``tests/gym_envs/sandbox/``) keeps them next to the code that now enforces it.
"""

from __future__ import annotations

import decimal
import gc
import random
import time
from typing import Any

import pytest

from gym_envs.env import ToolEnv
from gym_envs.executor import Executor, InProcessExecutor, Limits, LoadFailure, WorkerExecutor
from gym_envs.spec import EnvSpec, parse_spec
from gym_envs.state import SqlLimits, StateDB, StateError

LIMITS = Limits(call_timeout_s=1.0, cpu_seconds=3, memory_bytes=512 << 20, sql=SqlLimits(statement_timeout_s=0.2))
SCHEMA = "CREATE TABLE acct (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, balance INTEGER NOT NULL);"
SEED = "INSERT INTO acct (id, owner, balance) VALUES (1, 'ann', 100), (2, 'bob', 50);"
OPEN = {"type": "object", "properties": {}, "additionalProperties": True}
COUNT = '''
def count(db, **kw):
    return db.query("SELECT count(*) AS n, sum(balance) AS total FROM acct")[0]
'''


def spec(code: str, *tools: str, schema: str = SCHEMA) -> EnvSpec:
    return parse_spec({
        "id": "holes-env", "title": "Holes", "state": {"schema_sql": schema, "seed_sql": SEED},
        "tools": [{"name": n, "parameters": OPEN} for n in tools], "code": code,
        "tasks": [{"id": "t0", "kind": "execute", "turns": [{"instruction": "i", "checks": [
            {"kind": "sql", "query": "SELECT count(*) FROM acct", "expect": [[2]]}]}]}]})


@pytest.fixture(scope="module")
def executors() -> Any:
    exs = {"inprocess": InProcessExecutor(LIMITS), "worker": WorkerExecutor(1, LIMITS)}
    yield exs
    for e in exs.values():
        e.close()


@pytest.fixture(params=["inprocess", "worker"])
def ex(request: pytest.FixtureRequest, executors: dict[str, Executor]) -> Executor:
    return executors[request.param]


def loads(ex: Executor, s: EnvSpec) -> bool:
    try:
        ex.session(s).close()
    except LoadFailure:
        return False
    return True


FINALIZER = '''
KEEP = []
def gen(db):
    try:
        yield 1
    finally:
        db.execute("DELETE FROM acct")
def arm(db, **kw):
    g = gen(db)
    next(g)
    KEEP.append(g)        # freed when the episode's globals are dropped (the next reset)
    cycle = [gen(db)]
    next(cycle[0])
    cycle.append(cycle)   # freed by the garbage collector, whenever it runs
    return 1
'''


def test_finalizers_of_tool_code_never_run_outside_their_call(ex: Executor) -> None:
    """A generator's ``finally:`` that uses ``db`` must not run in a later episode."""
    s_ = spec(FINALIZER + COUNT, "arm", "count")
    if not loads(ex, s_):
        return  # refused at load: nothing can run later
    s = ex.session(s_)
    assert s.call("arm", {}).ok
    s.open(0)  # the first generator is dropped here, on the same pooled connection
    gc.collect()
    for _ in range(300):  # in a worker the collector runs on its own schedule
        assert s.call("count", {}).result == {"n": 2, "total": 150}
    s.close()


def test_db_works_only_inside_its_own_call() -> None:
    ex = InProcessExecutor(LIMITS)
    s = ex.session(spec(COUNT, "count"))
    db = ex.engine.episodes[s.id].db
    with pytest.raises(StateError):
        db.query("SELECT 1")
    ex.close()


def test_a_nested_statement_cannot_reset_the_guard() -> None:
    """A statement started while another is being prepared is refused and leaves the outer one's
    authorizer mode and deadline alone."""
    state = StateDB(SqlLimits(statement_timeout_s=0.2))
    state.script(SCHEMA, mode="setup")
    state.open_episode()
    db, _ = state.facades(0.2)
    outer_authorize = state._authorize
    nested: list[Any] = []

    def authorize(*args: Any) -> int:
        if not nested:
            try:
                nested.append(db.query("SELECT 1 AS x"))
            except StateError as e:
                nested.append(e)
        return outer_authorize(*args)

    state.conn.set_authorizer(authorize)
    with pytest.raises(StateError, match="not authorized"):
        db.query("SELECT random() AS r")
    assert isinstance(nested[0], StateError)
    nested.clear()
    t0 = time.perf_counter()
    with pytest.raises(StateError, match="too long"):
        db.query("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 30000000) "
                 "SELECT count(*) AS n FROM c")
    assert time.perf_counter() - t0 < 2.0


def test_normaldist_samples_do_not_use_the_global_random(ex: Executor) -> None:
    code = "import statistics\ndef t(db, **kw):\n    return statistics.NormalDist(0, 1).samples(3)\n"
    before = random.getstate()
    outs = []
    for _ in range(2):
        s = ex.session(spec(code, "t"), seed=5)
        r = s.call("t", {})
        outs.append(r.to_dict())
        s.close()
    assert outs[0] == outs[1]
    assert random.getstate() == before


@pytest.mark.parametrize("code", [
    "import random\ndef t(db, **kw):\n    random.seed()\n    return random.random()\n",
    "import random\ndef t(db, **kw):\n    r = random.Random(1)\n    r.seed()\n    return r.random()\n",
    "import datetime\ndef t(db, **kw):\n    return str(datetime.datetime.now())\n",
    "import datetime\ndef t(db, **kw):\n    return str(datetime.date.today())\n",
    "import time\ndef t(db, **kw):\n    return time.strftime('%H:%M:%S')\n",
    "def t(db, **kw):\n    return db.query(\"SELECT datetime('now') AS d, CURRENT_TIMESTAMP AS c\")\n",
])
def test_no_clock_or_entropy(code: str, ex: Executor) -> None:
    """Tool code reaches neither the clock nor fresh entropy: the same seed gives the same result."""
    outs = []
    for _ in range(2):
        s = ex.session(spec(code, "t"), seed=5)
        outs.append(s.call("t", {}).to_dict())
        s.close()
        time.sleep(1.05)
    assert outs[0] == outs[1]


def test_decimal_arithmetic_does_not_use_the_hosts_context(executors: dict[str, Executor]) -> None:
    code = "import decimal\ndef t(db, **kw):\n    return str(decimal.Decimal(1) / decimal.Decimal(7))\n"
    results = []
    with decimal.localcontext() as host_ctx:
        host_ctx.prec = 5
        host_ctx.clear_flags()
        for e in executors.values():
            s = e.session(spec(code, "t"))
            results.append(s.call("t", {}).result)
            s.close()
        assert not any(host_ctx.flags.values())
    assert results[0] == results[1]


@pytest.mark.parametrize("schema", [
    SCHEMA.replace("balance INTEGER NOT NULL", "balance INTEGER NOT NULL, r DEFAULT (random())"),
    SCHEMA.replace("balance INTEGER NOT NULL", "balance INTEGER NOT NULL, r DEFAULT (fts3_tokenizer('simple'))"),
    SCHEMA.replace("balance INTEGER NOT NULL", "balance INTEGER NOT NULL, r DEFAULT CURRENT_TIMESTAMP"),
])
def test_sql_functions_off_the_allow_list_are_refused_however_reached(schema: str, ex: Executor) -> None:
    code = "def t(db, **kw):\n    db.execute(\"INSERT INTO acct (owner, balance) VALUES ('x', 1)\")\n" \
           "    return db.query('SELECT r FROM acct WHERE owner = ?', ['x'])[0]['r'] is not None\n"
    s_ = spec(code, "t", schema=schema)
    if not loads(ex, s_):
        return
    s = ex.session(s_)
    r = s.call("t", {})
    s.close()
    assert not r.ok and r.error_type == "SQLError", r


@pytest.mark.parametrize("sql", [
    "SELECT sqlite_version() AS v", "SELECT sqlite_source_id() AS v", "SELECT total_changes() AS v",
    "SELECT sql AS v FROM sqlite_stmt", "SELECT name AS v FROM dbstat",
])
def test_functions_and_tables_outside_the_allow_list(sql: str, ex: Executor) -> None:
    code = "def t(db, sql):\n    return db.query(sql)\n"
    s = ex.session(spec(code, "t"))
    r = s.call("t", {"sql": sql})
    s.close()
    assert not r.ok and r.error_type == "SQLError", r


@pytest.mark.parametrize("args", [
    ("%.*c", "100000000", "x"), ("%.*c", b"100000000", "x"), ("%*s", "  +20000", "x"),
    ("%*%%.*c", "x", 100000000, "y"), (b"%.*c", 100000000, "y"), ("%.*c", 1e8, "x"),
])
def test_printf_widths_are_capped_for_any_argument_type(args: tuple[Any, ...], ex: Executor) -> None:
    """A width or precision past the cap is refused whatever the type of the value that carries it."""
    code = "def t(db, args):\n    vals = [bytes(a) if isinstance(a, list) else a for a in args]\n" \
           "    q = 'SELECT length(printf(' + ','.join('?' * len(vals)) + ')) AS n'\n" \
           "    return db.query(q, vals)[0]['n']\n"
    s = ex.session(spec(code, "t"))
    t0 = time.perf_counter()
    r = s.call("t", {"args": [list(a) if isinstance(a, bytes) else a for a in args]})
    s.close()
    assert time.perf_counter() - t0 < 5
    assert not r.ok and r.error_type == "SQLError" and "width" in str(r.error), r


@pytest.mark.parametrize("action", [
    "[" * 5000, '{"name": "count", "arguments": ' + "[" * 5000 + "]" * 5000 + "}",
    "<tool_call>" + '{"a":' * 3000 + "1" + "}" * 3000 + "</tool_call>",
    {"content": "", "tool_calls": [{"name": "count", "arguments": {"a": [[[[[[]]]]]]}}]},
    "x" * 3_000_000,
])
def test_action_parsing_never_raises(action: Any) -> None:
    env = ToolEnv(spec(COUNT, "count"), task="t0", executor="inprocess")
    env.reset(seed=0)
    if isinstance(action, dict):  # nest the structured action deeper than anything JSON could hold
        inner = action["tool_calls"][0]["arguments"]
        for _ in range(5000):
            inner = {"a": inner}
        action = {"content": "", "tool_calls": [{"name": "count", "arguments": inner}]}
    obs, reward, terminated, truncated, info = env.step(action)
    assert isinstance(obs, str)
    env.close()


@pytest.mark.parametrize("line", ["[" * 3000, 'count {"a": ' + "[" * 3000 + "]" * 3000 + "}",
                                  "count(a=" + "[" * 3000 + "]" * 3000 + ")"])
def test_play_survives_deep_input(line: str) -> None:
    from click.testing import CliRunner

    from gym_envs.cli import play

    result = CliRunner().invoke(play, ["library-loans", "--task", "borrow-dune", "--executor", "inprocess"],
                                input=line + "\n")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception

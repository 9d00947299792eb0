"""Property-based fuzzing of the whole sandbox: random restricted code, SQL text and tool arguments, run
through both executors.

Each example is a spec whose tool runs a random sequence of statements (arithmetic, builtins, attribute
and item access with hostile names, imports, ``db`` calls with random SQL, exceptions) on random JSON
arguments. The properties:

* **containment**: the outcome is a typed result (a load failure of a known kind, or a ``CallResult``
  whose ``error_type`` is an :class:`~gym_envs.errors.ErrorKind`), the host's sentinels are unchanged, and a
  benign call of the same episode, and a fresh episode, still run;
* **equal results between modes**: the in-process and the worker executor give the same load outcome,
  the same ``CallResult`` and the same state digest.

The budget is bounded for CI (``ENVWRIGHT_FUZZ_EXAMPLES``, 25 examples by default, a few seconds, always
the same ones); ``ENVWRIGHT_FUZZ_RANDOM=1`` draws new ones each run, for longer hunts. The generated code
stays clear of what the modes legitimately differ on (timing, string-set order under the hash seed,
recursion depth).
"""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gym_envs.errors import ErrorKind
from gym_envs.sandbox import Executor, LoadFailure
from gym_envs.spec import parse_spec
from tests.gym_envs.sandbox.attacks import OPEN_SCHEMA, SCHEMA, SEED, host_snapshot

EXAMPLES = int(os.environ.get("ENVWRIGHT_FUZZ_EXAMPLES", "25"))
_KINDS = {k.value for k in ErrorKind}

NAMES = ["x", "y", "rows", "kw", "db", "acc"]
ATTRS = ["upper", "append", "keys", "items", "query", "execute", "__class__", "__dict__", "gi_frame", "format",
         "mro", "args", "real", "sqrt", "loads", "dumps", "now", "today", "samples", "seed", "register", "f_back",
         "strftime", "fromtimestamp", "obj", "__subclasses__", "with_traceback", "_private"]
MODULES = ["json", "math", "re", "datetime", "collections", "itertools", "statistics", "functools", "operator",
           "string", "decimal", "fractions", "bisect", "heapq", "hashlib", "random", "time", "os", "sys",
           "_strptime", "gym_envs", "builtins"]
EXPRS = ["1", "-3", "2.5", "'ab'", "[1, 2]", "{'k': 1}", "None", "True", "x", "y", "kw", "len(kw)", "x * 3",
         "'s' * 4", "2 ** 70", "10 ** 10 ** 8", "'a' * 10 ** 9", "[0] * 10 ** 9", "1 << 100", "x + y", "str(x)",
         "sorted([3, 1, 2])", "list(range(5))", "range(10 ** 12)", "abs(-4)", "max(1, 2)", "x[0]", "kw['a']",
         "{1, 2} | {3}", "divmod(7, 2)", "int('7')", "float('nan')", "x // 0", "(lambda v: v + 1)(1)",
         "sum(v for v in [1, 2, 3])", "[v * 2 for v in range(3)]", "printed", "kw.get('a')", "ToolError('e')"]
SQL_HEADS = ["SELECT", "INSERT INTO acct (owner, balance) VALUES ('z', 1)", "UPDATE acct SET balance = balance + 1",
             "DELETE FROM secret", "PRAGMA query_only = 0", "ATTACH ':memory:' AS a", "CREATE TABLE t (a)",
             "DROP TABLE acct", "WITH c(n) AS (SELECT 1)", "VACUUM", "BEGIN", "/* c */ SELECT", "select"]
SQL_EXPRS = ["1", "id", "owner", "balance", "count(*)", "random()", "sqlite_version()", "printf('%.*c', 20, 'x')",
             "printf('%.*c', '100000000', 'x')", "date('now')", "date('2024-01-01', '+1 day')", "upper(owner)",
             "json_extract('{\"a\": 1}', '$.a')", "total_changes()", "fts3_tokenizer('simple')", "hex(zeroblob(8))",
             "last_insert_rowid()", "changes()", "k", "sql", "abs(-1)", "length(?)", "?", "CURRENT_TIMESTAMP",
             "(SELECT count(*) FROM sqlite_stmt)", "load_extension('x')", "replace('aa', 'a', 'b')"]
SQL_FROMS = ["", " FROM acct", " FROM secret", " FROM sqlite_master", " FROM sqlite_stmt", " FROM temp.envwright_reset",
             " FROM acct WHERE id = ?", " FROM pragma_table_info('acct')", " FROM dbstat", " FROM acct LIMIT 1"]


@st.composite
def sql_text(draw: st.DrawFn) -> str:
    head = draw(st.sampled_from(SQL_HEADS))
    if head.lower().endswith("select") or head.startswith("WITH"):
        cols = ", ".join(draw(st.lists(st.sampled_from(SQL_EXPRS), min_size=1, max_size=3)))
        return f"{head} {'n, ' if head.startswith('WITH') else ''}{cols}{draw(st.sampled_from(SQL_FROMS))}" \
            + (" FROM c" if head.startswith("WITH") and "FROM" not in cols else "")
    return head + draw(st.sampled_from(["", "; SELECT 1", " WHERE id = ?", " RETURNING id"]))


@st.composite
def statement(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 9))
    name = draw(st.sampled_from([*NAMES[:2], "acc"]))
    expr = draw(st.sampled_from(EXPRS))
    if kind == 0:
        return f"{name} = {expr}"
    if kind == 1:
        return f"{name} = {draw(st.sampled_from(NAMES))}.{draw(st.sampled_from(ATTRS))}"
    if kind == 2:
        return f"import {draw(st.sampled_from(MODULES))}"
    if kind == 3:
        sql = json.dumps(draw(sql_text()))
        method = draw(st.sampled_from(["query", "execute"]))
        params = draw(st.sampled_from(["[]", "[1]", "[x]", "['a' * 3]", "None", "[1, 2, 3]"]))
        return f"rows = db.{method}({sql}, {params})"
    if kind == 4:
        return f"if {expr}:\n        raise ToolError({json.dumps(draw(st.text(max_size=8)))})"
    if kind == 5:
        return "for v in range(3):\n        acc = acc + [v]"
    if kind == 6:
        return f"{name} = {draw(st.sampled_from(NAMES))}[{draw(st.sampled_from(['0', '-1', repr('__dict__'), 'x']))}]"
    if kind == 7:
        return f"try:\n        {name} = {expr}\n    except Exception as e:\n        {name} = e.args"
    if kind == 8:
        return f"print({expr})"
    return f"{name} = {draw(st.sampled_from(['json', 'math', 'random', 'datetime', 'decimal']))}." \
           f"{draw(st.sampled_from(['loads', 'sqrt', 'random', 'date', 'Decimal', 'dumps', 'now']))}" \
           f"({draw(st.sampled_from(['', '1', repr('[1]'), '2024, 1, 1']))})"


@st.composite
def tool_code(draw: st.DrawFn) -> str:
    body = draw(st.lists(statement(), min_size=1, max_size=6))
    ret = draw(st.sampled_from(["x", "y", "acc", "rows", "kw", "printed", "[x, y]", "{'x': x}", "len(acc)"]))
    lines = ["x = 1", "y = 'a'", "acc = []", "rows = []", *body]
    module = draw(st.sampled_from(["", "import json\n", "CACHE = []\n", "import os\n", "X = 1 / 0\n",
                                   "def helper(v):\n    yield v\n"]))
    return module + "def t(db, **kw):\n" + "".join(f"    {line}\n" for line in lines) + f"    return {ret}\n"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20)


def _spec(code: str) -> Any:
    return parse_spec({
        "id": "fuzz-env", "title": "Fuzz", "state": {"schema_sql": SCHEMA, "seed_sql": SEED},
        "tools": [{"name": "t", "parameters": OPEN_SCHEMA},
                  {"name": "ping", "parameters": OPEN_SCHEMA}],
        "code": code + "\ndef ping(db, **kw):\n    return db.query('SELECT count(*) AS n FROM acct')[0]['n']\n",
        "tasks": [{"id": "t0", "kind": "execute", "turns": [{"instruction": "do it", "checks": [
            {"kind": "sql", "query": "SELECT count(*) FROM acct", "expect": [[2]]}]}]}],
    })


def _run(ex: Executor, code: str, args: dict[str, Any]) -> tuple[Any, ...]:
    """``("load", error_type)`` or ``("call", CallResult as a dict, digest, ping result)``."""
    try:
        s = ex.session(_spec(code), seed=3)
    except LoadFailure as e:
        assert e.response["error_type"] in _KINDS, e.response
        return "load", e.response["error_type"]
    try:
        r = s.call("t", args)
        assert r.ok or r.error_type in _KINDS, r
        ping = s.call("ping", {})  # the episode carries on
        assert ping.ok, ping
        return "call", json.dumps(r.to_dict(), sort_keys=True, default=repr), s.digest()["digest"], ping.result
    finally:
        s.close()


@settings(max_examples=EXAMPLES, deadline=None, derandomize=not os.environ.get("ENVWRIGHT_FUZZ_RANDOM"),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(code=tool_code(), args=st.dictionaries(st.sampled_from(["a", "b", "x", "db"]), JSON, max_size=3))
def test_random_code_sql_and_arguments_are_contained_and_agree(code: str, args: dict[str, Any],
                                                               executors: dict[str, Executor]) -> None:
    before = host_snapshot()
    outcomes = {mode: _run(ex, code, args) for mode, ex in executors.items()}
    assert host_snapshot() == before, "the host process was changed"
    assert outcomes["inprocess"] == outcomes["worker"], (code, args, outcomes)
    for ex in executors.values():  # a fresh benign episode still runs
        assert _run(ex, "def t(db, **kw):\n    return 1\n", {})[1:2] != ("load",)

"""Adversarial tests of the restricted executor: one test per property of its threat model.

Every test plays an attack through tool code in a spec (or a ``python`` check)
and asserts two things: the attack is **contained** with a clear recorded error
(a typed ``CallResult.error_type``, a load failure, or a failed check), and the
**host is unharmed** (this process's sentinels are unchanged and a fresh
episode of a benign spec still runs on the same executor).

Both executor modes run every attack that cannot stall or exhaust the host.
Infinite loops, catastrophic regular expressions and memory bombs that evade
the arithmetic guard run in worker mode only: in-process mode is documented
(``gym_envs.executor``'s docstring) as being for trusted specs.
"""

from __future__ import annotations

import collections.abc
import decimal
import fractions
import hashlib
import json
import math
import os
import random
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from gym_envs.executor import (
    CallResult,
    Executor,
    InProcessExecutor,
    Limits,
    LoadFailure,
    Session,
    WorkerExecutor,
)
from gym_envs.spec import EnvSpec, parse_spec
from gym_envs.state import SqlLimits

HOST_SENTINEL = "untouched"  # a module attribute no episode may change

LIMITS = Limits(call_timeout_s=0.5, cpu_seconds=3, memory_bytes=512 << 20,
                sql=SqlLimits(statement_timeout_s=0.2))
MODES = ("inprocess", "worker")

SCHEMA = """
CREATE TABLE acct (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, balance INTEGER NOT NULL);
CREATE TABLE secret (k TEXT NOT NULL);
"""
SEED = "INSERT INTO acct VALUES (1, 'ann', 100), (2, 'bob', 50); INSERT INTO secret VALUES ('s3cr3t');"
OPEN_SCHEMA = {"type": "object", "properties": {}, "additionalProperties": True}

BENIGN = '''
def balance(db, account_id):
    rows = db.query("SELECT balance FROM acct WHERE id = ?", [account_id])
    if not rows:
        raise ToolError("no such account")
    return rows[0]["balance"]
'''


def make_spec(code: str, *tools: str, checks: list[dict[str, Any]] | None = None) -> EnvSpec:
    """A spec over the ``acct``/``secret`` database whose tools accept any arguments."""
    return parse_spec({
        "id": "adversarial-env",
        "title": "Adversarial",
        "state": {"schema_sql": SCHEMA, "seed_sql": SEED},
        "tools": [{"name": n, "parameters": OPEN_SCHEMA} for n in tools or ("t",)],
        "code": code,
        "tasks": [{"id": "t0", "kind": "execute", "turns": [{
            "instruction": "do it",
            "checks": checks or [{"kind": "sql", "query": "SELECT count(*) FROM acct", "expect": [[2]]}]}]}],
    })


# -- fixtures and host checks ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def executors() -> Iterator[dict[str, Executor]]:
    exs: dict[str, Executor] = {"inprocess": InProcessExecutor(LIMITS), "worker": WorkerExecutor(1, LIMITS)}
    yield exs
    for ex in exs.values():
        ex.close()


@pytest.fixture(params=MODES)
def ex(request: pytest.FixtureRequest, executors: dict[str, Executor]) -> Executor:
    return executors[request.param]


@pytest.fixture
def worker(executors: dict[str, Executor]) -> WorkerExecutor:
    w = executors["worker"]
    assert isinstance(w, WorkerExecutor)
    return w


def host_snapshot() -> dict[str, Any]:
    """Everything an escape or a leak between episodes would most likely change in this process."""
    ctx = decimal.getcontext()
    return {
        "sentinel": sys.modules[__name__].HOST_SENTINEL,
        "json.dumps": (json.dumps, json.dumps.__code__, json.dumps.__defaults__, dict(json.dumps.__dict__)),
        "math.sqrt": math.sqrt,
        "random": random.getstate(),
        "decimal": (ctx.prec, ctx.rounding, dict(ctx.traps), decimal.DefaultContext.prec),
        "abc": (isinstance({}, collections.abc.Sequence), issubclass(dict, collections.UserDict),
                issubclass(int, fractions.Fraction)),
        "hashlib": sorted(hashlib.algorithms_available),
        "cwd": os.getcwd(),
        "pid": os.getpid(),
    }


@pytest.fixture
def host() -> Iterator[dict[str, Any]]:
    """Snapshot the host before a test and assert after it that nothing changed."""
    before = host_snapshot()
    yield before
    assert host_snapshot() == before, "the host process was changed"


def assert_next_episode_runs(ex: Executor) -> None:
    s = ex.session(make_spec(BENIGN, "balance"), seed=1)
    r = s.call("balance", {"account_id": 1})
    assert r.ok and r.result == 100, r
    s.close()


def attempt(ex: Executor, code: str, args: dict[str, Any] | None = None, *,
            tools: tuple[str, ...] = ("t",), call: str = "t") -> tuple[str, Any]:
    """Load ``code`` and call one tool: ("load", response) on a load failure, else ("call", CallResult)."""
    try:
        s = ex.session(make_spec(code, *tools))
    except LoadFailure as e:
        return "load", e.response
    try:
        return "call", s.call(call, args or {})
    finally:
        s.close()


def assert_contained(outcome: tuple[str, Any], *, load: set[str] | None = None,
                     call: set[str] | None = None, detail: str | None = None) -> str:
    """The attack failed with one of the expected typed errors; returns the error text."""
    where, value = outcome
    if where == "load":
        assert load is not None, f"unexpected load failure: {value}"
        assert value["error_type"] in load, value
        text = str(value["error"])
    else:
        r: CallResult = value
        assert call is not None, f"the spec loaded and the call returned {r}"
        assert not r.ok, f"the attack succeeded: {r.result!r}"
        assert r.error_type in call, r
        text = str(r.error)
    if detail is not None:
        assert detail in text, text
    return text


COMPILE = {"CompileError"}


# -- 1. RestrictedPython escape techniques -------------------------------------------------------

ESCAPES: dict[str, tuple[str, set[str] | None, set[str] | None]] = {
    # name: (code, expected load error types, expected call error types)
    "generator gi_frame": ("""
def t(db, **kw):
    g = (i for i in [1])
    return str(g.gi_frame)
""", COMPILE, None),
    "generator gi_frame.f_back.f_globals": ("""
def t(db, **kw):
    g = (i for i in [1])
    return str(g.gi_frame.f_back.f_globals)
""", COMPILE, None),
    "gi_frame through operator.attrgetter": ("""
import operator
def t(db, **kw):
    g = (i for i in [1])
    return str(operator.attrgetter('gi_frame.f_back.f_globals')(g))
""", None, {"SandboxViolation"}),
    "str.format attribute walk": ("""
def t(db, **kw):
    return '{0.__class__.__base__.__subclasses__}'.format(1)
""", None, {"SandboxViolation"}),
    "str.format_map attribute walk": ("""
def t(db, **kw):
    return '{x.__class__}'.format_map({'x': 1})
""", None, {"SandboxViolation"}),
    "str.format reached unbound": ("""
def t(db, **kw):
    return list(map(str.format, ['{0.__class__}'], [1]))
""", None, {"SandboxViolation"}),
    "str.format through operator.methodcaller": ("""
import operator
def t(db, **kw):
    return operator.methodcaller('format', 1)('{0.__class__}')
""", None, {"SandboxViolation"}),
    "string.Formatter": ("""
import string
def t(db, **kw):
    return string.Formatter().format('{0.__class__}', 1)
""", None, {"RuntimeError"}),
    "string.Formatter at module level": ("""
import string
F = string.Formatter
def t(db, **kw):
    return 1
""", {"LoadError"}, None),
    "AttributeError.obj": ("""
def t(db, **kw):
    try:
        db.missing_attribute
    except AttributeError as e:
        return str(e.obj)
""", None, {"SandboxViolation"}),
    "AttributeError.name / NameError.name": ("""
def t(db, **kw):
    try:
        undefined_name
    except NameError as e:
        return e.name
""", None, {"SandboxViolation"}),
    "except*": ("""
def t(db, **kw):
    try:
        raise ValueError('x')
    except* ValueError as eg:
        return str(eg.exceptions)
""", COMPILE, None),
    "positional-only parameter named like a guard": ("""
def t(db, **kw):
    def f(_getattr_, /):
        return _getattr_
    return f(1)
""", COMPILE, None),
    "keyword-only and star parameters named like guards": ("""
def t(db, *_getiter_, _write_=None, **kw):
    return 1
""", COMPILE, None),
    "lambda parameter named like a guard": ("""
def t(db, **kw):
    return (lambda _getitem_: 1)(2)
""", COMPILE, None),
    "traceback frames via __traceback__": ("""
def t(db, **kw):
    try:
        1 / 0
    except ZeroDivisionError as e:
        return str(e.__traceback__.tb_frame.f_globals)
""", COMPILE, None),
    "traceback through operator.attrgetter": ("""
import operator
def t(db, **kw):
    try:
        1 / 0
    except ZeroDivisionError as e:
        return str(operator.attrgetter('__traceback__')(e))
""", None, {"SandboxViolation"}),
    "exception with_traceback": ("""
def t(db, **kw):
    e = ValueError('x')
    return str(e.with_traceback)
""", None, {"SandboxViolation"}),
    "import os at module level": ("""
import os
def t(db, **kw):
    return os.getcwd()
""", {"LoadError"}, None),
    "import os in a function": ("""
def t(db, **kw):
    import os
    return os.getcwd()
""", None, {"SandboxViolation"}),
    "from-import of a submodule": ("""
def t(db, **kw):
    from os import path
    return str(path)
""", None, {"SandboxViolation"}),
    "__import__": ("""
def t(db, **kw):
    return str(__import__('os'))
""", COMPILE, None),
    "eval": ("""
def t(db, **kw):
    return eval('1 + 1')
""", COMPILE, None),
    "exec": ("""
def t(db, **kw):
    exec('x = 1')
    return 1
""", COMPILE, None),
    "compile": ("""
def t(db, **kw):
    return str(compile('1', 'f', 'eval'))
""", None, {"RuntimeError"}),
    "open": ("""
def t(db, **kw):
    return open('/etc/hostname').read()
""", None, {"RuntimeError"}),
    "type()": ("""
def t(db, **kw):
    return str(type(db))
""", None, {"RuntimeError"}),
    "globals()": ("""
def t(db, **kw):
    return str(globals())
""", None, {"RuntimeError"}),
    "vars()": ("""
def t(db, **kw):
    return str(vars(db))
""", None, {"RuntimeError"}),
    "getattr()": ("""
def t(db, **kw):
    return str(getattr(db, 'query'))
""", None, {"RuntimeError"}),
    "subclass walk ().__class__.__bases__[0].__subclasses__()": ("""
def t(db, **kw):
    return str(().__class__.__bases__[0].__subclasses__())
""", COMPILE, None),
    "object.__subclasses__": ("""
def t(db, **kw):
    return str(object.__subclasses__())
""", COMPILE, None),
    "subclass walk through operator.attrgetter/methodcaller": ("""
import operator
def t(db, **kw):
    base = operator.attrgetter('__class__.__base__')(())
    return str(operator.methodcaller('__subclasses__')(base))
""", None, {"SandboxViolation"}),
    "item access to a dunder key": ("""
import operator
def t(db, **kw):
    return str(operator.getitem({'__builtins__': 1}, '__builtins__'))
""", None, {"SandboxViolation"}),
    "constant dunder subscript (plain subscripts are compiled only for other constants)": ("""
def t(db, **kw):
    d = {'__builtins__': 1, 'x': [1, 2]}
    assert d['x'][-1] == 2 and d['x'][0] == 1
    return str(d['__builtins__'])
""", None, {"SandboxViolation"}),
    "closure of the db facade": ("""
def t(db, **kw):
    return str(db.query.__closure__)
""", COMPILE, None),
    "class statement (a rigged __eq__ / str subclass)": ("""
def t(db, **kw):
    class S(str):
        pass
    return S('x')
""", None, {"RuntimeError"}),
    "dunder method definition": ("""
def __eq__(a, b):
    return True
def t(db, **kw):
    return 1
""", COMPILE, None),
}


@pytest.mark.parametrize("name", list(ESCAPES))
def test_restrictedpython_escape_is_contained(name: str, ex: Executor, host: dict[str, Any]) -> None:
    """Each published RestrictedPython escape technique fails with a typed error, in both modes."""
    code, load, call = ESCAPES[name]
    assert_contained(attempt(ex, code), load=load, call=call)
    assert_next_episode_runs(ex)


MODULE_LEAKS = {
    # each attribute would reach sys.modules (a full escape) or shared mutable state of the host
    "statistics.sys": "import statistics\ndef t(db, **kw):\n    return str(statistics.sys.modules['os'])",
    "fractions.sys": "import fractions\ndef t(db, **kw):\n    return str(fractions.sys.modules['os'])",
    "datetime.sys": "import datetime\ndef t(db, **kw):\n    return str(datetime.sys.modules['os'])",
    "re.enum.sys": "import re\ndef t(db, **kw):\n    return str(re.enum.sys.modules['os'])",
    "re.copyreg.dispatch_table": "import re\ndef t(db, **kw):\n    re.copyreg.dispatch_table.clear()",
    "json.decoder module": "import json\ndef t(db, **kw):\n    return str(json.decoder)",
    "statistics.random (the host's global random)": "import statistics\ndef t(db, **kw):\n"
                                                    "    statistics.random.seed(0)",
    "collections.abc": "import collections\ndef t(db, **kw):\n    collections.abc.Sequence.register(dict)",
    "decimal.setcontext": "import decimal\ndef t(db, **kw):\n"
                          "    decimal.setcontext(decimal.Context(prec=2))",
    "decimal.getcontext": "import decimal\ndef t(db, **kw):\n    decimal.getcontext().clear_traps()",
    "decimal.DefaultContext": "import decimal\ndef t(db, **kw):\n    decimal.DefaultContext.clear_traps()",
    "decimal.localcontext": "import decimal\ndef t(db, **kw):\n    return str(decimal.localcontext)",
    "hashlib.algorithms_available (a set)": "import hashlib\ndef t(db, **kw):\n"
                                            "    hashlib.algorithms_available.clear()",
}


@pytest.mark.parametrize("name", list(MODULE_LEAKS))
def test_module_views_hold_no_modules_or_shared_state(name: str, ex: Executor, host: dict[str, Any]) -> None:
    """Allowed modules are views of classes, functions and frozen constants (the real modules'
    ``sys``, ``random``, ABC registries and decimal contexts are out of reach)."""
    assert_contained(attempt(ex, MODULE_LEAKS[name]), call={"RuntimeError"}, detail="AttributeError")
    assert_next_episode_runs(ex)


def test_abc_register_is_refused(ex: Executor, host: dict[str, Any]) -> None:
    """ABCs reachable as classes (``collections.UserDict``, ``fractions.Fraction``) cannot register
    virtual subclasses, which would change ``isinstance`` in the whole process."""
    code = "import collections\ndef t(db, **kw):\n    collections.UserDict.register(dict)"
    assert_contained(attempt(ex, code), call={"SandboxViolation"}, detail="ABC")
    code = "import fractions\ndef t(db, **kw):\n    fractions.Fraction.register(int)"
    assert_contained(attempt(ex, code), call={"SandboxViolation"})
    assert_next_episode_runs(ex)


def test_functools_update_wrapper_cannot_swap_code(ex: Executor, host: dict[str, Any]) -> None:
    """``functools.update_wrapper(json.dumps, f, assigned=('__code__',))`` used to replace the code of
    the host's ``json.dumps`` with sandbox code that ran with real builtins (``open``): a full escape.
    The view's ``update_wrapper``/``wraps`` copy nothing."""
    code = """
import functools, json
def evil(*a, **k):
    return open
def t(db, **kw):
    functools.update_wrapper(json.dumps, evil, assigned=('__code__',), updated=())
    functools.wraps(evil, assigned=('__code__',))(json.loads)
    return str(json.dumps())
"""
    assert_contained(attempt(ex, code), call={"RuntimeError"}, detail="TypeError")
    assert json.dumps({"a": 1}) == '{"a": 1}'
    assert_next_episode_runs(ex)


def test_module_attributes_cannot_be_written(ex: Executor, host: dict[str, Any]) -> None:
    """``math.sqrt = ...`` is refused by the write guard; the next episode's ``math`` is intact."""
    code = "import math\ndef t(db, **kw):\n    math.sqrt = lambda x: 42\n    return math.sqrt(4)"
    assert_contained(attempt(ex, code), call={"RuntimeError"}, detail="TypeError")
    ok = attempt(ex, "import math\ndef t(db, **kw):\n    return math.sqrt(16)")
    assert ok[0] == "call" and ok[1].ok and ok[1].result == 4.0


# -- 2. resource bombs -------------------------------------------------------------------------------

GUARDED_BOMBS = {
    "'a' * 10**10": "def t(db, **kw):\n    return len('a' * 10**10)",
    "[0] * 10**9": "def t(db, **kw):\n    return len([0] * 10**9)",
    "10**10**8": "def t(db, **kw):\n    return 10**10**8 > 0",
    "pow(10, 10**8)": "def t(db, **kw):\n    return pow(10, 10**8) > 0",
    "1 << 10**10": "def t(db, **kw):\n    return (1 << 10**10) > 0",
    "x *= x on huge integers": "def t(db, **kw):\n    x = 10**20000\n    for i in range(30):\n"
                               "        x *= x\n    return 1",
    "operator.pow / operator.mul": "import operator\ndef t(db, **kw):\n"
                                   "    return len(operator.mul('a', 10**10)) + operator.pow(10, 10**8)",
    "Fraction ** huge": "import fractions\ndef t(db, **kw):\n    return str(fractions.Fraction(3, 2) ** 10**7)",
    "range(10**12)": "def t(db, **kw):\n    return len(list(range(10**12)))",
    "bytes(10**12)": "def t(db, **kw):\n    return len(bytes(10**12))",
}


@pytest.mark.parametrize("name", list(GUARDED_BOMBS))
def test_arithmetic_bombs_are_refused_before_allocating(name: str, ex: Executor, host: dict[str, Any]) -> None:
    """Sizes are checked before the allocation, so these are safe to try in both modes."""
    assert_contained(attempt(ex, GUARDED_BOMBS[name]), call={"ResourceLimit"})
    assert_next_episode_runs(ex)


def test_deep_recursion(ex: Executor, host: dict[str, Any]) -> None:
    code = "def f(n):\n    return f(n + 1)\ndef t(db, **kw):\n    return f(0)"
    assert_contained(attempt(ex, code), call={"ResourceLimit"}, detail="RecursionError")
    assert_next_episode_runs(ex)


def test_print_flood_is_capped(ex: Executor, host: dict[str, Any]) -> None:
    code = "def t(db, **kw):\n    for i in range(20000):\n        print('x' * 100)\n    return printed"
    where, r = attempt(ex, code)
    assert where == "call" and r.ok
    assert len(r.result) <= LIMITS.max_output_chars + 50 and r.result.endswith("[output truncated]")
    assert_next_episode_runs(ex)


def test_huge_exception_message_is_capped(ex: Executor, host: dict[str, Any]) -> None:
    code = "def t(db, **kw):\n    raise ToolError('x' * 10**7)"
    text = assert_contained(attempt(ex, code), call={"ToolError"})
    assert len(text) < LIMITS.max_output_chars + 100 and "more characters" in text
    code = "def t(db, **kw):\n    raise ValueError('y' * 10**7)"
    text = assert_contained(attempt(ex, code), call={"RuntimeError"})
    assert len(text) < LIMITS.max_output_chars + 100
    assert_next_episode_runs(ex)


def test_huge_result_is_refused(ex: Executor, host: dict[str, Any]) -> None:
    code = "def t(db, **kw):\n    return ['x' * 1000] * 1000"
    assert_contained(attempt(ex, code), call={"ResourceLimit"}, detail="too large")
    code = "def t(db, **kw):\n    x = []\n    for i in range(100):\n        x = [x]\n    return x"
    assert_contained(attempt(ex, code), call={"NotJSON"}, detail="nested deeper")
    assert_next_episode_runs(ex)


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
    "math.factorial(10**8)": ("import math\ndef t(db, **kw):\n    return math.factorial(10**8) > 0",
                              {"Timeout", "WorkerCrashed"}),
}


@pytest.mark.parametrize("name", list(WORKER_ONLY_BOMBS))
def test_worker_contains_loops_and_memory_bombs(name: str, worker: WorkerExecutor, host: dict[str, Any]) -> None:
    """Loops are stopped by the soft deadline or the parent's timeout, memory by RLIMIT_AS."""
    code, kinds = WORKER_ONLY_BOMBS[name]
    assert_contained(attempt(worker, code), call=kinds)
    assert_next_episode_runs(worker)


SQL_BOMBS = {
    "recursive CTE": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
    "randomblob": "SELECT randomblob(1000000000)",
    "zeroblob": "SELECT zeroblob(1000000000)",
    "replace blowup": "SELECT length(replace(hex(zeroblob(400000)), '0', 'aaaaaaaaaa'))",
    "printf blowup": "SELECT length(printf('%.*c', 1000000000, 'x'))",
    "result too large": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 100) "
                        "SELECT zeroblob(900000) FROM c",
    "LIKE pattern too long": "SELECT 'a' LIKE '" + "%a" * 2000 + "'",
    "recursive CTE insert": "INSERT INTO secret WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL "
                            "SELECT x + 1 FROM c) SELECT hex(x) FROM c",
}


@pytest.mark.parametrize("name", list(SQL_BOMBS))
def test_sql_bombs_are_refused(name: str, ex: Executor, host: dict[str, Any]) -> None:
    """SQL runs under length, result-size and time limits in both modes."""
    code = "def t(db, sql):\n    return db.query(sql)"
    assert_contained(attempt(ex, code, {"sql": SQL_BOMBS[name]}), call={"SQLError"})
    assert_next_episode_runs(ex)


# -- 3. SQL through tool arguments -------------------------------------------------------------------

BOUND = '''
def find(db, owner):
    return db.query("SELECT id, balance FROM acct WHERE owner = ?", [owner])
'''
CONCATENATING = '''
def find(db, owner):
    return db.query("SELECT id FROM acct WHERE owner = '" + owner + "'")
'''


@pytest.mark.parametrize("payload", [
    "' OR '1'='1", "ann'; DROP TABLE acct; --", "x' UNION SELECT k, 0 FROM secret --",
    "1; ATTACH DATABASE '/tmp/envwright-attack.db' AS x",
])
def test_injection_strings_bound_as_parameters_are_data(payload: str, ex: Executor, host: dict[str, Any]) -> None:
    """Parameters are always bound, so an injection string is just a value that matches nothing
    (hidden tables stay unreadable)."""
    s = ex.session(make_spec(BOUND, "find"))
    r = s.call("find", {"owner": payload})
    assert r.ok and r.result == []
    assert s.check([{"kind": "sql", "query": "SELECT count(*) FROM acct", "expect": [[2]]}], "", [])[0].passed
    s.close()
    assert not os.path.exists("/tmp/envwright-attack.db")
    assert_next_episode_runs(ex)


def test_injection_into_concatenating_tool_cannot_stack_statements(ex: Executor, host: dict[str, Any]) -> None:
    """A tool that concatenates arguments into SQL is the spec author's bug, but even then one
    ``query`` runs one statement: ``; DROP TABLE`` fails and the table survives."""
    s = ex.session(make_spec(CONCATENATING, "find"))
    r = s.call("find", {"owner": "ann'; DROP TABLE acct; --"})
    assert not r.ok and r.error_type == "SQLError" and "one statement" in str(r.error)
    assert s.check([{"kind": "sql", "query": "SELECT count(*) FROM acct", "expect": [[2]]}], "", [])[0].passed
    s.close()


FORBIDDEN_SQL = {
    "ATTACH DATABASE": "ATTACH DATABASE '/tmp/envwright-attach.db' AS x",
    "VACUUM INTO": "VACUUM INTO '/tmp/envwright-vacuum.db'",
    "comment-prefixed VACUUM INTO": "/* x */ -- y\n VACUUM INTO '/tmp/envwright-vacuum.db'",
    "PRAGMA writable_schema": "PRAGMA writable_schema = 1",
    "write sqlite_master": "UPDATE sqlite_master SET sql = 'x'",
    "load_extension": "SELECT load_extension('/tmp/evil.so')",
    "DROP TABLE": "DROP TABLE acct",
    "CREATE TRIGGER": "CREATE TRIGGER tr AFTER INSERT ON acct BEGIN DELETE FROM acct; END",
    "BEGIN / COMMIT": "COMMIT",
    "RELEASE the host's savepoint": "RELEASE episode",
    "temp table write": "INSERT INTO temp.envwright_reset (rowid) VALUES (5)",
    "total_changes (connection history)": "SELECT total_changes()",
    "two statements": "SELECT 1; DELETE FROM acct",
}


@pytest.mark.parametrize("name", list(FORBIDDEN_SQL))
def test_forbidden_sql_is_refused(name: str, ex: Executor, host: dict[str, Any]) -> None:
    code = "def t(db, sql):\n    return db.execute(sql)"
    assert_contained(attempt(ex, code, {"sql": FORBIDDEN_SQL[name]}), call={"SQLError"})
    for path in ("/tmp/envwright-attach.db", "/tmp/envwright-vacuum.db"):
        assert not os.path.exists(path)
    assert_next_episode_runs(ex)


# -- 4. reward hacking -------------------------------------------------------------------------------

def test_results_cross_as_plain_json(ex: Executor, host: dict[str, Any]) -> None:
    """Dict/list/int subclasses come back as exact ``dict``/``list``/``int`` (so no rigged
    ``__eq__`` survives); values JSON cannot carry are an error."""
    code = """
import collections, re
def t(db, **kw):
    P = collections.namedtuple('P', 'a b')
    return {'counter': collections.Counter('aab'), 'ordered': collections.OrderedDict(x=1),
            'point': P(1, 2), 'flag': re.IGNORECASE, 'tuple': (1, 2), 1: 'int key'}
"""
    where, r = attempt(ex, code)
    assert where == "call" and r.ok
    assert r.result == {"counter": {"a": 2, "b": 1}, "ordered": {"x": 1}, "point": [1, 2], "flag": 2,
                        "tuple": [1, 2], "1": "int key"}

    def exact(v: Any) -> bool:
        if isinstance(v, dict):
            return type(v) is dict and all(type(k) is str and exact(x) for k, x in v.items())
        if isinstance(v, list):
            return type(v) is list and all(exact(x) for x in v)
        return type(v) in (str, int, float, bool, type(None))

    assert exact(r.result)
    for value in ("collections.UserString('x')", "collections.deque([1])", "{1, 2}", "float('nan')",
                  "decimal.Decimal('1.5')"):
        code = f"import collections, decimal\ndef t(db, **kw):\n    return {value}"
        assert_contained(attempt(ex, code), call={"NotJSON"})
    assert_next_episode_runs(ex)


@pytest.mark.parametrize("ret", ["1", "'yes'", "[1]", "{'ok': True}", "1.0", "None", "not_defined"])
def test_python_check_must_return_the_real_true(ret: str, ex: Executor, host: dict[str, Any]) -> None:
    s = ex.session(make_spec(BENIGN, "balance"))
    res = s.check([{"kind": "python", "code": f"def check(db):\n    return {ret}"}], "", [])
    assert not res[0].passed, res
    good = "def check(db):\n    return db.query('SELECT 1 AS x')[0]['x'] == 1"
    res = s.check([{"kind": "python", "code": good}], "", [])
    assert res[0].passed, res
    s.close()


CHECK_WRITES = {
    "db.execute": "def check(db):\n    db.execute('DELETE FROM acct')\n    return True",
    "UPDATE ... RETURNING through query": "def check(db):\n"
                                          "    db.query('UPDATE acct SET balance = 0 RETURNING id')\n    return True",
    "WITH ... DELETE through query": "def check(db):\n"
                                     "    db.query('WITH x AS (SELECT 1) DELETE FROM acct RETURNING id')\n"
                                     "    return True",
}


@pytest.mark.parametrize("name", list(CHECK_WRITES))
def test_checks_cannot_mutate_state(name: str, ex: Executor, host: dict[str, Any]) -> None:
    """Checks get a read-only view: a writing check fails and the state is unchanged."""
    s = ex.session(make_spec(BENIGN, "balance"))
    before = s.digest()["digest"]
    (res,) = s.check([{"kind": "python", "code": CHECK_WRITES[name]}], "", [])
    assert not res.passed and ("read-only" in res.detail or "not authorized" in res.detail or
                               "not allowed" in res.detail), res
    assert s.digest()["digest"] == before
    s.close()


def test_check_cannot_reuse_a_write_statement_the_tool_prepared(ex: Executor, host: dict[str, Any]) -> None:
    """SQLite authorizes a statement when it is prepared, and prepared statements are cached per
    connection: a tool can prepare ``WITH ... DELETE`` (allowed for tools), and a check running the
    same text would get the cached, already-authorized statement (it did, before ``ro`` views ran
    under ``PRAGMA query_only``, whose change also makes SQLite re-prepare, so re-authorize, it)."""
    sql = "WITH x AS (SELECT 1) DELETE FROM acct WHERE id = 99 RETURNING id"
    code = f"def t(db, **kw):\n    return db.query({sql!r})"
    s = ex.session(make_spec(code))
    assert s.call("t", {}).ok
    before = s.digest()["digest"]
    check = f"def check(db):\n    db.query({sql!r})\n    return True"
    (res,) = s.check([{"kind": "python", "code": check}], "", [])
    assert not res.passed and ("read-only" in res.detail or "not authorized" in res.detail), res
    (res,) = s.check([{"kind": "sql", "query": sql, "expect": []}], "", [])
    assert not res.passed
    assert s.digest()["digest"] == before
    s.close()


def test_tool_mutating_its_arguments_affects_nothing_else(ex: Executor, host: dict[str, Any]) -> None:
    code = """
def t(db, items, meta):
    items.append('injected')
    meta['owner'] = 'mallory'
    return [len(items), meta]
"""
    s = ex.session(make_spec(code))
    args = {"items": ["a"], "meta": {"owner": "ann"}}
    r1 = s.call("t", args)
    r2 = s.call("t", args)
    assert r1.ok and r2.ok and r1.result == r2.result == [2, {"owner": "mallory"}]
    assert args == {"items": ["a"], "meta": {"owner": "ann"}}
    assert r1.arguments == {"items": ["a"], "meta": {"owner": "ann"}}
    s.close()


def test_hidden_tables_are_not_readable_through_injection(ex: Executor, host: dict[str, Any]) -> None:
    s = ex.session(make_spec(BOUND, "find"))
    for payload in ("x' UNION SELECT k, 0 FROM secret --", "s3cr3t"):
        r = s.call("find", {"owner": payload})
        assert r.ok and "s3cr3t" not in json.dumps(r.result)
    s.close()


def test_tool_writing_the_checked_rows_is_judged_by_state(ex: Executor) -> None:
    """A tool that inserts exactly the row a check looks for passes that check.

    This is correct, not a hack: checks define the task by the final state (ENVSPEC.md), and the
    agent can only reach that state through the tools the spec offers; a spec whose tool makes a
    check trivially true is caught by the validity gate's no-op and near-miss rules, not here.
    """
    code = "def t(db, **kw):\n    db.execute(\"INSERT INTO secret (k) VALUES ('done')\")\n    return 'ok'"
    s = ex.session(make_spec(code))
    check = {"kind": "sql", "query": "SELECT count(*) FROM secret WHERE k = 'done'", "expect": [[1]]}
    assert not s.check([check], "", [])[0].passed
    assert s.call("t", {}).ok
    assert s.check([check], "", ["t"])[0].passed
    s.close()


# -- 5. isolation between episodes -------------------------------------------------------------------

def test_random_seed_in_one_episode_does_not_reach_another(ex: Executor, host: dict[str, Any]) -> None:
    code = """
import random
def reseed(db, **kw):
    random.seed(0)
    return random.random()
def draw(db, **kw):
    return [random.random(), random.randint(1, 10**6)]
"""
    spec = make_spec(code, "reseed", "draw")
    fresh = ex.session(spec, seed=7)
    expected = fresh.call("draw", {}).result
    fresh.close()
    a = ex.session(spec, seed=11)
    assert a.call("reseed", {}).ok
    b = ex.session(spec, seed=7)
    assert b.call("draw", {}).result == expected
    a.open(7)  # the same session, reset: its generator is re-seeded too
    assert a.call("draw", {}).result == expected
    a.close()
    b.close()


def test_module_level_cache_does_not_survive_the_episode(ex: Executor, host: dict[str, Any]) -> None:
    code = "CACHE = []\nSEEN = {}\ndef t(db, **kw):\n    CACHE.append(1)\n    SEEN['n'] = len(CACHE)\n" \
           "    return len(CACHE)"
    spec = make_spec(code)
    s = ex.session(spec)
    assert [s.call("t", {}).result for _ in range(3)] == [1, 2, 3]
    s.open(0)
    assert s.call("t", {}).result == 1
    other = ex.session(spec)
    assert other.call("t", {}).result == 1
    s.close()
    other.close()


def test_connection_history_is_invisible_to_the_next_episode(ex: Executor, host: dict[str, Any]) -> None:
    """Connections are reused between episodes; ``last_insert_rowid()`` and ``changes()`` are reset
    to a fresh connection's values and ``total_changes()`` is refused."""
    code = '''
def write(db, **kw):
    db.execute("INSERT INTO secret (k) VALUES ('x')")
    db.execute("UPDATE acct SET balance = balance + 1")
    return 1
def history(db, **kw):
    return db.query("SELECT last_insert_rowid() AS rowid, changes() AS changes")[0]
'''
    spec = make_spec(code, "write", "history")
    s = ex.session(spec)
    assert s.call("history", {}).result == {"rowid": 0, "changes": 0}
    s.call("write", {})
    assert s.call("history", {}).result == {"rowid": 2, "changes": 2}
    s.open(0)
    assert s.call("history", {}).result == {"rowid": 0, "changes": 0}
    s.close()
    t = ex.session(spec)  # very likely the pooled connection s used
    assert t.call("history", {}).result == {"rowid": 0, "changes": 0}
    t.close()


# -- 6. killed workers -------------------------------------------------------------------------------

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


def test_sql_abort_of_the_transaction_keeps_earlier_calls(ex: Executor, host: dict[str, Any]) -> None:
    """SQLite rolls back the whole transaction when a write statement is interrupted (here by the
    statement deadline). The call is an error, the episode is rebuilt from its log, and even a tool
    that catches the error cannot write outside the transaction afterwards."""
    code = '''
def deposit(db, account_id, amount):
    db.execute("UPDATE acct SET balance = balance + ? WHERE id = ?", [amount, account_id])
    return db.query("SELECT balance FROM acct WHERE id = ?", [account_id])[0]["balance"]
def flood(db, **kw):
    try:
        db.execute("INSERT INTO secret WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                   "SELECT hex(x) FROM c")
    except Exception:
        db.execute("DELETE FROM acct")
    return 'swallowed'
'''
    s = ex.session(make_spec(code, "deposit", "flood"))
    assert s.call("deposit", {"account_id": 1, "amount": 5}).result == 105
    r = s.call("flood", {})
    assert not r.ok and r.error_type == "SQLError", r
    assert s.call("deposit", {"account_id": 1, "amount": 1}).result == 106
    assert s.check([{"kind": "sql", "query": "SELECT count(*) FROM acct", "expect": [[2]]},
                    {"kind": "sql", "query": "SELECT count(*) FROM secret", "expect": [[1]]}], "", [])[1].passed
    s.close()


def test_failed_call_that_wrote_is_undone(ex: Executor, host: dict[str, Any]) -> None:
    """A call that writes and then fails leaves no write behind, while the Python state and the random
    stream stay those of the episode's calls (the episode is rebuilt by replay)."""
    code = '''
import random
COUNT = []
def half(db, **kw):
    COUNT.append(1)
    db.execute("UPDATE acct SET balance = balance - 10 WHERE id = 1")
    raise ToolError("changed my mind after " + str(len(COUNT)) + " tries")
def state(db, **kw):
    return [db.query("SELECT balance FROM acct WHERE id = 1")[0]["balance"], len(COUNT), random.random()]
'''
    spec = make_spec(code, "half", "state")
    ref = ex.session(spec, seed=5)
    ref.call("half", {})
    expected = ref.call("state", {}).result
    ref.close()
    s = ex.session(spec, seed=5)
    r = s.call("half", {})
    assert not r.ok and r.error_type == "ToolError" and "1 tries" in str(r.error)
    assert s.call("state", {}).result == expected
    assert expected[:2] == [100, 1]
    s.close()


# -- 7. both modes agree -----------------------------------------------------------------------------

TRAJECTORY_CODE = '''
import random, json, datetime
def deposit(db, account_id, amount):
    if amount <= 0:
        raise ToolError("amount must be positive")
    n = db.execute("UPDATE acct SET balance = balance + ? WHERE id = ?", [amount, account_id])["rowcount"]
    if not n:
        raise ToolError("no such account")
    return {"balance": db.query("SELECT balance FROM acct WHERE id = ?", [account_id])[0]["balance"],
            "ticket": random.randint(1, 10**6)}
def half_then_fail(db, **kw):
    db.execute("INSERT INTO secret (k) VALUES ('partial')")
    return {"bad": {1, 2}}
def report(db, **kw):
    rows = db.query("SELECT id, owner, balance FROM acct ORDER BY id")
    return {"rows": rows, "when": datetime.date(2024, 1, 31).strftime("%d %b %Y"),
            "parsed": str(datetime.datetime.strptime("2024-02-01", "%Y-%m-%d")), "pi": 3.141592653589793,
            "text": "caf\\u00e9 \\ud800", "nested": json.loads('{"a": [1, 2.5, null, true]}')}
'''
TRAJECTORY = [
    ("deposit", {"account_id": 1, "amount": 5}), ("deposit", {"account_id": 9, "amount": 5}),
    ("deposit", {"account_id": 1, "amount": -1}), ("deposit", {"account_id": "1", "amount": 5}),
    ("half_then_fail", {}), ("nope", {}), ("deposit", {"account_id": 2, "amount": 7}),
    ("deposit", {"account_id": 1, "amount": float("nan")}), ("report", {}),
]
TRAJECTORY_CHECKS = [
    {"kind": "sql", "query": "SELECT balance FROM acct ORDER BY id", "expect": [[105], [57]], "ordered": True},
    {"kind": "sql", "query": "SELECT count(*) FROM secret", "expect": [[1]]},
    {"kind": "python", "code": "def check(db):\n    return sum(r['balance'] for r in db.query('SELECT balance "
                               "FROM acct')) == 162"},
    {"kind": "unchanged", "tables": ["secret"]},
    {"kind": "unchanged", "tables": []},
    {"kind": "reply_contains", "any_of": ["done"]},
    {"kind": "calls", "require": ["deposit"], "forbid": ["half_then_fail"]},
]


def _play_trajectory(ex: Executor) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    spec = parse_spec({**make_spec(TRAJECTORY_CODE, "deposit", "half_then_fail", "report").model_dump(),
                       "tools": [
                           {"name": "deposit", "parameters": {
                               "type": "object", "required": ["account_id", "amount"],
                               "properties": {"account_id": {"type": "integer"}, "amount": {"type": "number"}}}},
                           {"name": "half_then_fail", "parameters": OPEN_SCHEMA},
                           {"name": "report", "parameters": OPEN_SCHEMA}]})
    s: Session = ex.session(spec, seed=42)
    s.mark()
    calls = [s.call(name, args).to_dict() for name, args in TRAJECTORY]
    checks = s.check(TRAJECTORY_CHECKS, "All done.", [c["name"] for c in calls if c["ok"]],
                     attempted=[c["name"] for c in calls])
    digest = s.digest()["digest"]
    s.close()
    return calls, [c.to_dict() for c in checks], digest


def test_both_modes_give_identical_results(executors: dict[str, Executor]) -> None:
    """The same scripted trajectory gives identical CallResults, check results and final state."""
    inproc = _play_trajectory(executors["inprocess"])
    work = _play_trajectory(executors["worker"])
    assert json.dumps(inproc[0], sort_keys=True) == json.dumps(work[0], sort_keys=True)
    assert inproc == work
    kinds = [c["error_type"] for c in inproc[0]]
    assert kinds == [None, "ToolError", "ToolError", "InvalidArguments", "NotJSON", "UnknownTool", None,
                     "InvalidArguments", None]
    assert [c["passed"] for c in inproc[1]] == [True, True, True, True, False, True, False]


def test_both_modes_refuse_an_integer_json_cannot_write(executors: dict[str, Executor]) -> None:
    """``json.dumps`` refuses integers past the interpreter's digit limit; so do both modes, alike."""
    code = "def big(db, **kw):\n    return {'n': 7 ** 6000}\n"
    results = []
    for ex in executors.values():
        s = ex.session(make_spec(code, "big"))
        results.append(s.call("big", {}).to_dict())
        s.close()
    assert results[0] == results[1]
    assert results[0]["error_type"] == "NotJSON" and "digits" in results[0]["error"]

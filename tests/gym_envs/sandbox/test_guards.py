"""``gym_envs.sandbox.guards``: restricted compilation and the run-time guards, attacked through tool code."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gym_envs.sandbox import Executor, compile_code
from tests.gym_envs.sandbox.attacks import (
    COMPILE,
    LIMITS,
    assert_contained,
    assert_next_episode_runs,
    attempt,
)

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
    # the outside red team's escape: register() reads the annotations with typing.get_type_hints, which evals a
    # string annotation as source with the real builtins. Annotations are dropped at compile time, and the
    # dispatchers are not in the view.
    "string annotation through functools.singledispatch().register": ("""
import functools
def t(db, **kw):
    def base(x):
        return None
    f = functools.singledispatch(base)
    def impl(x: "[c for c in ().__class__.__base__.__subclasses__()] or int"):
        return None
    f.register(impl)
    return 'escaped'
""", None, {"RuntimeError"}),
    "string annotation through functools.singledispatchmethod": ("""
import functools
def t(db, **kw):
    return str(functools.singledispatchmethod)
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


def test_annotated_code_runs_without_its_annotations(ex: Executor) -> None:
    """Type hints are common in written tool code: they compile and run, and are dropped (nothing can read them
    back as source)."""
    code = """
def t(db, account_id: int = 1, **kw: object) -> dict:
    rows: list = db.query("SELECT balance FROM acct WHERE id = ?", [account_id])
    note: str
    return {"balance": rows[0]["balance"]}
"""
    where, res = attempt(ex, code, {"account_id": 2})
    assert where == "call" and res.ok and res.result == {"balance": 50}, res


def test_abc_register_is_refused(ex: Executor, host: dict[str, Any]) -> None:
    """ABCs reachable as classes (``collections.UserDict``, ``fractions.Fraction``) cannot register
    virtual subclasses, which would change ``isinstance`` in the whole process."""
    code = "import collections\ndef t(db, **kw):\n    collections.UserDict.register(dict)"
    assert_contained(attempt(ex, code), call={"SandboxViolation"}, detail="ABC")
    code = "import fractions\ndef t(db, **kw):\n    fractions.Fraction.register(int)"
    assert_contained(attempt(ex, code), call={"SandboxViolation"})
    assert_next_episode_runs(ex)


def test_module_attributes_cannot_be_written(ex: Executor, host: dict[str, Any]) -> None:
    """``math.sqrt = ...`` is refused by the write guard; the next episode's ``math`` is intact."""
    code = "import math\ndef t(db, **kw):\n    math.sqrt = lambda x: 42\n    return math.sqrt(4)"
    assert_contained(attempt(ex, code), call={"RuntimeError"}, detail="TypeError")
    ok = attempt(ex, "import math\ndef t(db, **kw):\n    return math.sqrt(16)")
    assert ok[0] == "call" and ok[1].ok and ok[1].result == 4.0


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
    "math.factorial(10**8)": "import math\ndef t(db, **kw):\n    return math.factorial(10**8) > 0",
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


def test_policy_rewrites_arithmetic_with_locations() -> None:
    src = "def f(x):\n    y = 2\n    y *= 3\n    print(x * 2, 2 ** 3, 1 << 2)\n    return [y, max(x * 2, 10 ** 2)]\n"
    res = compile_code(src)
    assert not res.errors and res.code is not None
    res = compile_code("def f():\n    try:\n        pass\n    except:\n        pass\n")
    assert not res.errors


# -- spec code runs only inside its own call -----------------------------------------------------------

@pytest.mark.parametrize("code", [
    "def t(db, **kw):\n    def g():\n        yield 1\n    return list(g())",
    "def t(db, **kw):\n    def g():\n        yield from [1, 2]\n    return list(g())",
    "def t(db, **kw):\n    return list((lambda: (yield 1))())",
    "def gen(db):\n    try:\n        yield 1\n    finally:\n        db.execute('DELETE FROM acct')\n"
    "def t(db, **kw):\n    return 1",
])
def test_generator_functions_do_not_compile(code: str) -> None:
    """No ``yield``: a generator's cleanup could run whenever the collector frees it (see the threat model)."""
    res = compile_code(code)
    assert res.code is None and any("yield" in e for e in res.errors), res.errors


def test_generator_expressions_still_work(ex: Executor) -> None:
    code = "def t(db, **kw):\n    rows = db.query('SELECT balance FROM acct')\n" \
           "    return [sum(r['balance'] for r in rows), next(x for x in [3, 4] if x > 3), list(x * 2 for x in [1])]"
    where, r = attempt(ex, code)
    assert where == "call" and r.ok and r.result == [150, 4, [2]], r


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
def count(db, **kw):
    return db.query("SELECT count(*) AS n, sum(balance) AS total FROM acct")[0]
'''


def test_a_finalizer_cannot_write_into_a_later_episode(ex: Executor, host: dict[str, Any]) -> None:
    """The red team's attack: a generator whose ``finally:`` uses ``db``, freed on the next reset (same
    pooled connection) or by the garbage collector at any moment. The spec is refused at load; a later
    benign episode sees the template untouched whenever the collector runs."""
    import gc

    from gym_envs.sandbox import LoadFailure
    from tests.gym_envs.sandbox.attacks import make_spec

    with pytest.raises(LoadFailure) as refused:
        ex.session(make_spec(FINALIZER, "arm", "count"))
    assert refused.value.response["error_type"] == "CompileError" and "yield" in refused.value.response["error"]
    benign = ex.session(make_spec(FINALIZER.replace("yield 1", "return 1").replace("next(g)", "g")
                                  .replace("next(cycle[0])", "cycle"), "arm", "count"))
    assert benign.call("arm", {}).ok
    benign.open(0)
    gc.collect()
    for _ in range(50):
        assert benign.call("count", {}).result == {"n": 2, "total": 150}
    benign.close()
    assert_next_episode_runs(ex)


# -- shared classes that reach the clock, the host's time zone or a global random generator ----------------

CLOCK_AND_HOST_STATE = {
    "datetime.now": "import datetime\ndef t(db, **kw):\n    return str(datetime.datetime.now())",
    "datetime.utcnow": "import datetime\ndef t(db, **kw):\n    return str(datetime.datetime.utcnow())",
    "date.today": "import datetime\ndef t(db, **kw):\n    return str(datetime.date.today())",
    "datetime.today (inherited)": "import datetime\ndef t(db, **kw):\n    return str(datetime.datetime.today())",
    "now through an instance": "import datetime\ndef t(db, **kw):\n    return str(datetime.date(2024, 1, 1).today())",
    "now through methodcaller": "import datetime, operator\ndef t(db, **kw):\n"
                                "    return str(operator.methodcaller('now')(datetime.datetime))",
    "now through attrgetter": "import datetime, operator\ndef t(db, **kw):\n"
                              "    return str(operator.attrgetter('datetime.now')(datetime)())",
    "fromtimestamp without tz": "import datetime\ndef t(db, **kw):\n    return str(datetime.datetime.fromtimestamp(0))",
    "date.fromtimestamp": "import datetime\ndef t(db, **kw):\n    return str(datetime.date.fromtimestamp(0))",
    "naive timestamp()": "import datetime\ndef t(db, **kw):\n    return datetime.datetime(2024, 1, 1).timestamp()",
    "naive timestamp() unbound": "import datetime\ndef t(db, **kw):\n"
                                 "    return datetime.datetime.timestamp(datetime.datetime(2024, 1, 1))",
    "astimezone()": "import datetime\ndef t(db, **kw):\n"
                    "    return str(datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc).astimezone())",
    "naive astimezone(tz)": "import datetime\ndef t(db, **kw):\n"
                            "    return str(datetime.datetime(2024, 1, 1).astimezone(datetime.timezone.utc))",
    "NormalDist.samples unseeded": "import statistics\ndef t(db, **kw):\n"
                                   "    return statistics.NormalDist(0, 1).samples(3)",
    "NormalDist.samples unbound": "import statistics\ndef t(db, **kw):\n"
                                  "    return statistics.NormalDist.samples(statistics.NormalDist(), 3)",
    "NormalDist.samples of a sum": "import statistics\ndef t(db, **kw):\n"
                                   "    return (statistics.NormalDist() + statistics.NormalDist()).samples(2)",
    "Random().seed()": "import random\ndef t(db, **kw):\n    r = random.Random(1)\n    r.seed()\n    return r.random()",
    "Random().seed(None)": "import random\ndef t(db, **kw):\n    r = random.Random(1)\n    r.seed(a=None)\n"
                           "    return r.random()",
}


@pytest.mark.parametrize("name", list(CLOCK_AND_HOST_STATE))
def test_the_clock_and_process_state_are_out_of_reach(name: str, ex: Executor, host: dict[str, Any]) -> None:
    """Attributes of shared classes that read the clock, the host's time zone or the process-wide random
    generator are refused however they are reached (the host's ``random`` state is in the snapshot)."""
    assert_contained(attempt(ex, CLOCK_AND_HOST_STATE[name]), call={"SandboxViolation"})
    assert_next_episode_runs(ex)


def test_the_deterministic_forms_still_work(ex: Executor) -> None:
    code = '''
import datetime, statistics, random
def t(db, **kw):
    utc = datetime.timezone.utc
    aware = datetime.datetime(2024, 1, 1, 12, tzinfo=utc)
    r = random.Random(7)
    r.seed(8)
    return [str(datetime.datetime.fromtimestamp(0, utc)), str(datetime.datetime.fromtimestamp(0, tz=utc)),
            aware.timestamp(), str(aware.astimezone(datetime.timezone(datetime.timedelta(hours=2)))),
            str(datetime.datetime(1970, 1, 1)), statistics.NormalDist(0, 1).samples(2, seed=3),
            r.random(), datetime.date(2024, 3, 1).strftime("%d %b %Y")]
'''
    where, r = attempt(ex, code)
    assert where == "call" and r.ok, r
    assert r.result[:5] == ["1970-01-01 00:00:00+00:00", "1970-01-01 00:00:00+00:00", 1704110400.0,
                            "2024-01-01 14:00:00+02:00", "1970-01-01 00:00:00"]
    assert r.result[-1] == "01 Mar 2024" and json.dumps(r.result)


@pytest.mark.parametrize("code", [
    "import datetime\ndef t(db, **kw):\n    return f'{datetime.datetime(2024, 1, 1):%s}'",
    "import datetime\ndef t(db, **kw):\n    return f'{datetime.date(2024, 1, 1):%-s}'",
    "import datetime\ndef t(db, **kw):\n    spec = '%' + 's'\n    return f'{datetime.datetime(2024, 1, 1):{spec}}'",
    "import datetime\ndef t(db, **kw):\n    return datetime.datetime(2024, 1, 1).strftime('%s')",
    "import datetime\ndef t(db, **kw):\n    return datetime.time(1, 2).strftime('%s')",
    "import datetime\ndef t(db, **kw):\n    return datetime.datetime.strftime(datetime.datetime(2024, 1, 1), '%s')",
])
def test_date_formats_cannot_read_the_hosts_time_zone(code: str, ex: Executor) -> None:
    """``%s`` is the epoch through the host's local time: refused in ``strftime`` and in f-string specs."""
    assert_contained(attempt(ex, code), call={"SandboxViolation"})


def test_fstring_format_specs_keep_working(ex: Executor) -> None:
    code = "import datetime\ndef t(db, **kw):\n    d = datetime.date(2024, 3, 1)\n    w = 6\n" \
           "    return [f'{d:%d %b %Y}', f'{3.14159:.2f}', f'{42:>{w}}', f'{\"x\"!r:>5}', f'{d}', f'{d!s:.4}']"
    where, r = attempt(ex, code)
    assert where == "call" and r.ok and r.result == ["01 Mar 2024", "3.14", "    42", "  'x'", "2024-03-01", "2024"], r

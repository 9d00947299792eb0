"""``gym_envs.sandbox.modules``: the builtins and module views tool code imports, attacked."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gym_envs.sandbox import Executor
from tests.gym_envs.sandbox.attacks import (
    assert_contained,
    assert_next_episode_runs,
    attempt,
    make_spec,
)

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


def test_module_views_leave_out_what_writes_process_state(ex: Executor, host: dict[str, Any]) -> None:
    """``re.purge`` (clears the process-wide pattern cache) and ``functools.total_ordering`` (adds methods to
    the class it is given, a shared one here) are not in their views."""
    for code in ("import re\ndef t(db, **kw):\n    re.purge()",
                 "import functools, collections\ndef t(db, **kw):\n    functools.total_ordering(collections.UserDict)"):
        assert_contained(attempt(ex, code), call={"RuntimeError"}, detail="AttributeError")
    assert_next_episode_runs(ex)


@pytest.mark.parametrize("code", [
    "import random\ndef t(db, **kw):\n    random.seed()\n    return random.random()",
    "import random\ndef t(db, **kw):\n    random.seed(None)\n    return random.random()",
    "import time\ndef t(db, **kw):\n    return time.strftime('%H:%M:%S')",
    "import time, datetime\ndef t(db, **kw):\n    return time.strftime('%s', datetime.date(2024, 1, 1).timetuple())",
    "import time, datetime\ndef t(db, **kw):\n    return time.strftime('%Z', datetime.date(2024, 1, 1).timetuple())",
    "import datetime\ndef t(db, **kw):\n    return datetime.datetime(2024, 1, 1).strftime('%-s')",
])
def test_no_entropy_clock_or_time_zone_through_random_and_time(code: str, ex: Executor, host: dict[str, Any]) -> None:
    """``random.seed()`` without a value would draw entropy; ``time.strftime`` without a time tuple formats
    the clock, and ``%s``/``%z``/``%Z`` read the host's time zone (``datetime.strftime`` goes through it)."""
    assert_contained(attempt(ex, code), call={"SandboxViolation"})
    assert_next_episode_runs(ex)


def test_normaldist_samples_are_the_episodes(executors: dict[str, Executor], host: dict[str, Any]) -> None:
    """The red team's case: ``NormalDist.samples()`` drew from the process-wide ``random`` (different values
    for one seed, a changed replay, the host's stream advanced). Seeded from the episode, it is a function
    of the episode seed, in both modes; the host's ``random`` is in the snapshot."""
    code = "import random, statistics\ndef t(db, **kw):\n" \
           "    return statistics.NormalDist(0, 1).samples(3, seed=random.getrandbits(64))"
    runs = []
    for ex in [*executors.values(), *executors.values()]:
        s = ex.session(make_spec(code), seed=5)
        runs.append(s.call("t", {}).to_dict())
        s.close()
    assert runs[0]["ok"] and all(r == runs[0] for r in runs), runs


DECIMAL_PATHS = {  # the red team's case: decimal arithmetic reached through another allowed module
    "decimal": "import decimal\nD = decimal.Decimal",
    "fractions.Decimal": "import fractions\nD = fractions.Decimal",
    "statistics.Decimal": "import statistics\nD = statistics.Decimal",
}


@pytest.mark.parametrize("path", list(DECIMAL_PATHS))
def test_decimal_arithmetic_runs_in_the_episodes_context(path: str, executors: dict[str, Executor]) -> None:
    """Decimal arithmetic, however it is reached, neither reads the host thread's context (its precision) nor
    writes it (its flags): the same digits in both modes whatever the host set, and the host's flags stay clear."""
    import decimal

    code = DECIMAL_PATHS[path] + "\nQ = D(2) / D(3)\n" \
        "def t(db, **kw):\n    return [str(Q), str(D(1) / D(7)), str(sum([D('0.1')] * 3) / 3)]"
    results = []
    with decimal.localcontext() as host_ctx:
        host_ctx.prec = 5
        host_ctx.clear_flags()
        for ex in executors.values():
            s = ex.session(make_spec(code))
            results.append(s.call("t", {}).result)
            s.close()
        assert not any(host_ctx.flags.values()) and host_ctx.prec == 5
    assert results[0] == results[1] == ["0.6666666666666666666666666667", "0.1428571428571428571428571429",
                                        "0.1"]


def test_new_decimal_contexts_do_not_copy_the_hosts_template(executors: dict[str, Executor]) -> None:
    """``decimal.Context()`` used to copy the process's ``DefaultContext``, which the host may change."""
    import decimal

    code = "import decimal\ndef t(db, **kw):\n    c = decimal.Context()\n    return [c.prec, c.Emax > 0, " \
           "str(c.divide(1, 3))]"
    saved = decimal.DefaultContext.prec
    decimal.DefaultContext.prec = 5
    try:
        results = []
        for ex in executors.values():
            s = ex.session(make_spec(code))
            results.append(s.call("t", {}).result)
            s.close()
    finally:
        decimal.DefaultContext.prec = saved
    assert results[0] == results[1] == [28, True, "0.3333333333333333333333333333"]


def test_imports_outside_the_allow_list_are_refused(ex: Executor) -> None:
    from gym_envs.sandbox import ALLOWED_MODULES

    for name in ("os", "sys", "time.sleep", "gym_envs", "importlib", "sqlite3"):
        code = f"def t(db, **kw):\n    import {name}\n    return 1"
        text = assert_contained(attempt(ex, code), call={"SandboxViolation"})
        assert "not allowed" in text
    assert "random" in ALLOWED_MODULES and "time" not in ALLOWED_MODULES


@pytest.mark.parametrize("code", [
    "import re\ndef t(db, **kw):\n    return str(re.compile('a(b|c)*', re.DEBUG))",
    "import re\ndef t(db, **kw):\n    return bool(re.match('a', 'a', 128))",
    "import re\ndef t(db, **kw):\n    return re.sub('a', 'b', 'a', flags=re.I | re.DEBUG)",
])
def test_regular_expressions_cannot_print_to_the_hosts_stdout(code: str, ex: Executor,
                                                              capfd: pytest.CaptureFixture[str]) -> None:
    """``re.DEBUG`` makes the compiler print the pattern's parse to the process's stdout (a protocol pipe, for
    an MCP server running in-process); found by the audit."""
    assert_contained(attempt(ex, code), call={"SandboxViolation"}, detail="re.DEBUG")
    assert capfd.readouterr().out == ""
    where, r = attempt(ex, "import re\ndef t(db, **kw):\n    return re.sub('A', 'b', 'a', flags=re.I)")
    assert where == "call" and r.ok and r.result == "b", r

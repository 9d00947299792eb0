"""``gym_envs.sandbox.sizes``: every way to multiply, raise to a power, shift or repeat is size-checked first.

The red team's case was a plain multiplication function reached through another allowed module
(``statistics.mul`` is ``operator.mul``), which skipped the guard. These attacks reach each kind of
multiplication, power, shift and repetition by another path, each just past small limits (so trying them
before the fix was cheap): every one is refused before it allocates, in both modes, with ``ResourceLimit``.
"""

from __future__ import annotations

import fractions
from collections.abc import Iterator
from typing import Any

import pytest

from gym_envs.errors import ResourceLimit
from gym_envs.sandbox import Executor, InProcessExecutor, Limits, SqlLimits, WorkerExecutor
from gym_envs.sandbox.sizes import SizeGuard
from tests.gym_envs.sandbox.attacks import MODES, assert_contained, assert_next_episode_runs, attempt

SMALL = Limits(call_timeout_s=2.0, cpu_seconds=5, memory_bytes=512 << 20, max_sequence=10_000,
               max_int_bits=10_000, sql=SqlLimits(statement_timeout_s=0.2))


@pytest.fixture(scope="module")
def small_executors() -> Iterator[dict[str, Executor]]:
    exs: dict[str, Executor] = {"inprocess": InProcessExecutor(SMALL), "worker": WorkerExecutor(1, SMALL)}
    yield exs
    for ex in exs.values():
        ex.close()


@pytest.fixture(params=MODES)
def small(request: pytest.FixtureRequest, small_executors: dict[str, Executor]) -> Executor:
    return small_executors[request.param]


BOMBS = {  # name: the body of t(db, **kw), after `import collections, decimal, fractions, functools, ...`
    "statistics.mul (operator.mul re-exported)": "return len(statistics.mul('ab', 10**5))",
    "functools.reduce over statistics.mul": "return len(functools.reduce(statistics.mul, ['ab', 10**5]))",
    "math.prod of integers": "return math.prod([1 << 6000, 1 << 6000]) > 0",
    "math.prod repeating a string": "return len(math.prod([10**5], start='ab'))",
    "math.factorial": "return math.factorial(5000) > 0",
    "math.comb": "return math.comb(10**5, 5 * 10**4) > 0",
    "math.perm": "return math.perm(5000) > 0",
    "math.lcm": "return math.lcm(*range(1, 10**4)) > 0",
    "operator.imul of a list": "return len(operator.imul([0], 10**5))",
    "operator.ipow": "return operator.ipow(3, 10**4) > 0",
    "Fraction * Fraction": "F = fractions.Fraction\n    return F(1 << 6000) * F(1 << 6000) > 0",
    "Fraction ** Fraction": "F = fractions.Fraction\n    return F(3) ** F(10**4) > 0",
    "int ** Fraction": "return 3 ** fractions.Fraction(10**4) > 0",
    "Fraction ** -n": "return fractions.Fraction(3) ** -(10**4) > 0",
    "deque * n": "return len(collections.deque([0]) * 10**5)",
    "n * UserList": "return len(10**5 * collections.UserList([0]))",
    "itertools.repeat materialised": "return len(list(itertools.repeat(0, 10**5)))",
    "statistics.repeat materialised": "return len(list(statistics.repeat(0, 10**5)))",
    "itertools.product(repeat=)": "return len(next(itertools.product('ab', repeat=10**5)))",
    "combinations_with_replacement": "return len(next(itertools.combinations_with_replacement('a', 10**5)))",
    "statistics.fmean's inner multiplication": "return statistics.fmean(['ab'], [10**5])",
    "itertools.tee": "return len(itertools.tee(iter([]), 10**5))",
    "json.dumps's indent": "return len(json.dumps([[1]], indent=10**4))",
    "a JSONEncoder's indent": "return len(json.JSONEncoder(indent=' ' * 1000).encode([[1]]))",
    "round(5, -n)": "return round(5, -10**4)",
    "round(Fraction, n)": "return str(round(fractions.Fraction(1, 3), 10**4))[:5]",
    "random.getrandbits": "return random.getrandbits(10**5) > 0",
    "random.randbytes": "return len(random.randbytes(10**5))",
    "a made generator's getrandbits": "return random.Random(1).getrandbits(10**5) > 0",
    "a made generator's randbytes": "return len(random.Random(1).randbytes(10**5))",
    "Decimal with a huge exponent, to int": "return int(decimal.Decimal('1e99999')) > 0",
    "Decimal through json's parse_float": "return str(json.loads('1e99999', parse_float=decimal.Decimal))",
    "Fraction of a string with a huge exponent": "return fractions.Fraction('1e99999') > 0",
    "a context with a huge precision": "return str(decimal.Context(prec=10**5).power(3, 10**4))[:5]",
    "a context with a huge exponent range": "return str(decimal.Context(Emax=10**6).power(10, 10**5))[:5]",
}
_IMPORTS = "import collections, decimal, fractions, functools, itertools, json, math, operator, random, statistics\n"


@pytest.mark.parametrize("name", list(BOMBS))
def test_oversized_results_are_refused_on_every_path(name: str, small: Executor, host: dict[str, Any]) -> None:
    code = f"{_IMPORTS}def t(db, **kw):\n    {BOMBS[name]}"
    assert_contained(attempt(small, code), call={"ResourceLimit"})
    assert_next_episode_runs(small)


def test_decimal_powers_stay_in_the_episodes_exponent_range(small: Executor) -> None:
    """``Decimal(10) ** n`` computes in the episode's context, whose exponents end at ``max_digits``: beyond, it
    overflows (before, ``int()`` of the result took a minute at the old range's end)."""
    code = f"{_IMPORTS}def t(db, **kw):\n    return int(decimal.Decimal(10) ** 99999) > 0"
    assert_contained(attempt(small, code), call={"RuntimeError"}, detail="Overflow")


def test_what_fits_still_computes(small: Executor) -> None:
    code = f"""{_IMPORTS}
def t(db, **kw):
    F = fractions.Fraction
    return [len('ab' * 100), len(statistics.mul('ab', 100)), math.prod([2, 3, 4]), math.prod([3], start='ab'),
            math.factorial(10), math.comb(10, 3), math.perm(5, 2), math.lcm(4, 6), str(F(1, 2) * F(2, 3)),
            str(F(2, 3) ** 3), str(2 ** F(3)), str(F(2) ** -2), len(collections.deque([0]) * 3),
            list(itertools.repeat(1, 3)), len(list(itertools.product('ab', repeat=3))),
            statistics.fmean([1, 2], [3, 1]), round(1234, -2), str(round(F(1, 3), 3)), 1 << 10, 2 ** 10,
            random.getrandbits(8) < 256, len(random.randbytes(4)), str(decimal.Decimal('1.5') * 2),
            str(decimal.Context(prec=5).divide(1, 3)), str(F('1.5e3')), '%d%%' % 5, 7 % 3, len(itertools.tee([1], 3)),
            json.dumps([1], indent=2), pow(base=2, exp=3)]
"""
    where, r = attempt(small, code)
    assert where == "call" and r.ok, r
    assert r.result == [200, 200, 24, "ababab", 3628800, 120, 20, 12, "1/3", "8/27", "8", "1/4", 3, [1, 1, 1], 8,
                        1.25, 1200, "333/1000", 1024, 1024, True, 4, "3.0", "0.33333", "1500", "5%", 1, 3,
                        "[\n  1\n]", 8]


GUARD = SizeGuard(SMALL)
CASES = [  # (op, a, b): each refused by _binop_
    ("mul", 2**6000, 2**6000), ("mul", "ab", 10**5), ("mul", 10**5, [0]), ("mul", (0,), 10**5),
    ("mul", b"x", 10**5), ("mul", fractions.Fraction(2**6000, 3), fractions.Fraction(2**6000)),
    ("mul", fractions.Fraction(1, 2**6000), 2**6000), ("pow", 10, 10**4), ("pow", fractions.Fraction(3, 2), 10**4),
    ("pow", fractions.Fraction(3), -(10**4)), ("pow", 3, fractions.Fraction(10**4)), ("lshift", 1, 10**5),
]


@pytest.mark.parametrize("op,a,b", CASES, ids=[f"{op}-{type(a).__name__}-{type(b).__name__}" for op, a, b in CASES])
def test_binop_refuses_every_operand_type(op: str, a: Any, b: Any) -> None:
    with pytest.raises(ResourceLimit):
        GUARD.binop(op, a, b)


def test_binop_leaves_floats_and_small_values_alone() -> None:
    binop = GUARD.binop
    assert binop("pow", 2, -(10**9)) == 0.0 and binop("pow", 0.5, 10**9) == 0.0
    assert binop("mul", 1.5, 10**9) == 1.5e9 and binop("pow", 2, 10) == 1024 and binop("lshift", 0, 10**9) == 0
    assert binop("pow", fractions.Fraction(1), 10**9) == 1 and binop("pow", 1, 10**9) == 1
    assert binop("mod", "%d", 3) == "3"

"""The ported ``calculate`` tool (code/arithmetic.py) against τ²'s own, which evals the expression."""

from __future__ import annotations

import random

import pytest

from eval.tau2 import _backend
from eval.tau2.domain import domain
from gym_envs.sandbox import InProcessExecutor
from gym_envs.spec import parse_spec
from tests.fixtures.tau2 import needs_tau2

pytestmark = needs_tau2

FIXED = ["2 + 2", " 1+1", "7/2", "7//2", "-2**2", "2**-1", "2 ** 0.5", "(1.5 + 2.25) * 4", "--5", "+-+3",
         "1093.34 - 54.04", "(((1)))", "0.1 + 0.2", "1/3", "2/3*3", "10**20 / 3", "00", "00.5", "01.", ".5", "5.",
         "1e5", "abc", "2 + x", "", "   ", "1 .5", "1..2", "2***3", "(1", "1)", "1+", "(", ")", "()", "()*3", "...",
         "2(3)", "(2)(3)", "2()", "1/0", "1.0/0", "1//0", "1.0//0", "0**-1", "(-8)**0.5", "10**400", "007", "1.5.5",
         "3 - - 3", "4 * -(2 + 1)", "2 ** 3 ** 2", "(2 ** 3) ** 2", "1 2", "8 / (3 - 3.0)"]


def _random_expressions(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)

    def expr(depth: int) -> str:
        if depth <= 0 or rng.random() < 0.3:
            return rng.choice(["0", "1", "2", "3.5", "10", "0.25", "7", "100.01"])
        op = rng.choice(["+", "-", "*", "/", "//", "**"])
        left, right = expr(depth - 1), expr(depth - 1)
        if op == "**":
            right = rng.choice(["2", "0.5", "-1", "3"])
        text = f"{left} {op} {right}"
        return f"({text})" if rng.random() < 0.5 else (f"-{text}" if rng.random() < 0.2 else text)

    return [expr(4) for _ in range(n)]


@pytest.fixture(scope="module")
def ours():
    spec = parse_spec({
        "spec_version": 2, "id": "calculate-port", "title": "calculator",
        "state": {"schema_sql": "CREATE TABLE t (x INTEGER PRIMARY KEY);"},
        "tools": [{"name": "calculate", "parameters": {"type": "object", "properties": {
            "expression": {"type": "string"}}, "required": ["expression"]}}],
        "code": domain("retail").code,
        "tasks": [{"id": "x", "kind": "read", "turns": [{"instruction": "i", "checks": [
            {"kind": "unchanged"}]}]}]})
    ex = InProcessExecutor()
    session = ex.session(spec)
    yield session
    ex.close()


@pytest.fixture(scope="module")
def theirs():
    """τ²'s retail environment (calculate keeps no state: one serves every expression)."""
    return _backend.environment("retail")


def _answer(env, expression: str) -> tuple[bool, str]:
    from tau2.data_model.message import ToolCall

    msg = env.get_response(ToolCall(id="c", name="calculate", arguments={"expression": expression}))
    return (not msg.error), msg.content.removeprefix("Error: ")


@pytest.mark.filterwarnings("ignore::SyntaxWarning")
@pytest.mark.parametrize("expression", FIXED + _random_expressions(40, 7))
def test_calculate_gives_taus_value_or_error(ours, theirs, expression: str) -> None:
    ok, text = _answer(theirs, expression)
    r = ours.call("calculate", {"expression": expression})
    assert r.ok == ok, (expression, r, text)
    if ok:
        assert r.result == text
    elif "(<string>, line" not in text:  # a syntax error's wording is Python's parser's; every other error is exact
        assert r.error == text

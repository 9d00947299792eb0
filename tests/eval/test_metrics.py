"""Metrics: estimators with known values, bootstrap, action classes, the summary."""

from __future__ import annotations

import itertools
import math

import pytest

from eval.metrics import (
    avg_at_k,
    bootstrap_ci,
    classify_turn,
    diagnostics,
    paired_bootstrap_diff,
    pass_at_k,
    pass_hat_k,
    summarize,
)


@pytest.mark.parametrize(("n", "c", "k", "expected"), [
    (5, 2, 1, 0.4), (5, 2, 2, 0.7), (5, 0, 3, 0.0), (3, 3, 2, 1.0), (10, 3, 5, 1 - math.comb(7, 5) / math.comb(10, 5)),
])
def test_pass_at_k_known_values(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected)


@pytest.mark.parametrize(("n", "c", "k", "expected"), [
    (5, 2, 1, 0.4), (5, 2, 2, 0.1), (4, 3, 2, 0.5), (5, 5, 5, 1.0), (5, 4, 5, 0.0),
])
def test_pass_hat_k_known_values(n: int, c: int, k: int, expected: float) -> None:
    assert pass_hat_k(n, c, k) == pytest.approx(expected)


def test_estimators_match_brute_force_over_subsets() -> None:
    outcomes = [1, 0, 1, 1, 0, 1]
    n, c = len(outcomes), sum(outcomes)
    for k in range(1, n + 1):
        subsets = list(itertools.combinations(outcomes, k))
        assert pass_hat_k(n, c, k) == pytest.approx(sum(all(s) for s in subsets) / len(subsets))
        assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets))


def test_estimators_undefined_for_k_above_n_and_reject_bad_counts() -> None:
    assert pass_at_k(2, 1, 3) is None and pass_hat_k(2, 1, 3) is None
    with pytest.raises(ValueError, match="0 <= c <= n"):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        pass_hat_k(0, 0, 1)


def test_avg_at_k() -> None:
    assert avg_at_k([[1.0, 0.0], [0.5, 0.5, 0.5]]) == pytest.approx(0.5)
    assert avg_at_k([]) is None


def test_bootstrap_ci_is_deterministic_and_brackets_the_mean() -> None:
    values = [0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0]
    a = bootstrap_ci(values, n_boot=500, seed=3)
    assert a == bootstrap_ci(values, n_boot=500, seed=3)
    assert a is not None and a[0] <= sum(values) / len(values) <= a[1]
    assert bootstrap_ci([0.7, 0.7, 0.7]) == pytest.approx((0.7, 0.7))
    assert bootstrap_ci([]) is None
    with pytest.raises(ValueError, match="alpha"):
        bootstrap_ci([1.0], alpha=1.5)


def test_paired_bootstrap_diff() -> None:
    a = [0.0, 0.5, 1.0, 0.25]
    d = paired_bootstrap_diff(a, [x + 0.25 for x in a])
    assert d["paired"] and d["diff"] == pytest.approx(0.25) and d["ci"] == pytest.approx((0.25, 0.25))
    unpaired = paired_bootstrap_diff([0.0, 0.0], [1.0, 1.0, 1.0])
    assert not unpaired["paired"] and unpaired["diff"] == pytest.approx(1.0)
    assert paired_bootstrap_diff([], [1.0])["diff"] is None


def _turn(role: str | None, calls: list[dict] | None = None, reply: str = "", **tags: object) -> dict:
    t = {"role": role, "write_tools": ["transfer"], **tags} if role else dict(tags)
    return {"calls": calls or [], "reply": reply, "tags": t}


@pytest.mark.parametrize(("turn", "expected"), [
    (_turn("ask", [{"name": "transfer", "changes": 0}], "done"), "fabricated"),  # attempted, even if it failed
    (_turn("ask", [{"name": "get_account", "changes": 0}], "How much should I transfer?"), "asked"),
    (_turn("ask", [{"name": "other_write", "changes": 2}]), "fabricated"),  # changed rows = a write
    (_turn("ask", [], ""), "silent"),
    (_turn("decline", [], "Sorry, I cannot wire money to another bank."), "declined"),
    (_turn("decline", [], "Sure, here you go."), "replied"),
    (_turn("decline", [{"name": "transfer", "changes": 2}], "I can't."), "acted"),
    (_turn(None, [], "hi"), None),
])
def test_classify_turn(turn: dict, expected: str | None) -> None:
    assert classify_turn(turn) == expected


def test_diagnostics_counts_rates_and_withheld_calls() -> None:
    recs = [{"turns": [
        _turn("ask", [{"name": "transfer"}]), _turn("ask", [], "Which amount?"),
        _turn("decline", [], "I am unable to do that."),
        _turn(None, [{"name": "sort"}, {"name": "ls"}, {"name": "sort"}], withheld=["sort"]),
        _turn(None, [{"name": "ls"}], withheld=["sort"]),
    ]}]
    d = diagnostics(recs)
    assert (d["ask_turns"], d["fabricated"], d["asked"]) == (2, 1, 1)
    assert d["fabricated_rate"] == 0.5 and d["declined_rate"] == 1.0 and d["acted_rate"] == 0.0
    assert (d["withheld_turns"], d["withheld_calls"], d["withheld_call_rate"]) == (2, 2, 0.5)
    empty = diagnostics([])
    assert empty["fabricated_rate"] is None and empty["withheld_call_rate"] is None


def _rec(task: str, trial: int, passed: bool, kind: str = "execute", checks: float | None = None) -> dict:
    check_score = checks if checks is not None else float(passed)
    score = {"episode": float(passed), "turns": float(passed), "checks": check_score}
    return {"suite": "s", "env_id": "e", "task_id": task, "trial": trial, "kind": kind, "passed": passed,
            "score": score, "turns": [], "error": None}


def test_summarize_known_values() -> None:
    recs = [_rec("a", i, True) for i in range(3)] + [_rec("b", i, i == 0, kind="read", checks=0.5) for i in range(3)]
    s = summarize(recs, k=3, n_boot=200)["s"]
    assert (s["tasks"], s["episodes"], s["passed"]) == (2, 6, 4)
    assert s["pass@1"] == pytest.approx(2 / 3)
    assert s["pass^k"]["3"]["value"] == pytest.approx(0.5)
    assert s["pass^k"]["2"]["value"] == pytest.approx(0.5)
    assert s["pass@k"]["3"]["value"] == pytest.approx(1.0)
    assert s["pass@k"]["2"]["value"] == pytest.approx((1 + 2 / 3) / 2)
    assert s["avg@k"] == pytest.approx(2 / 3)
    assert s["checks@k"] == pytest.approx((1.0 + 0.5) / 2)
    assert set(s["by_kind"]) == {"execute", "read"}
    assert s["by_kind"]["execute"]["pass@1"] == 1.0 and s["by_kind"]["read"]["pass@1"] == pytest.approx(1 / 3)
    lo, hi = s["pass@1_ci"]
    assert lo <= 2 / 3 <= hi

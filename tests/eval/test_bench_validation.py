"""``envwright bench validation``: the verdict record and its comparison, and one small run."""

from __future__ import annotations

import copy
import os

from envgen.gate import validate_spec
from eval.bench.validation import _cold, _ticks, compare, run, verdict_record
from gym_envs.examples import load_example
from gym_envs.sandbox import InProcessExecutor


def _record(name: str) -> dict:
    spec = load_example(name)
    ex = InProcessExecutor()
    try:
        return verdict_record(spec, validate_spec(spec, executor=ex, seed=7))
    finally:
        ex.close()


def test_the_same_validation_compares_equal_and_every_difference_is_named() -> None:
    a, b = _record("bank-ledger"), _record("bank-ledger")
    assert a["mutations"] and compare([a], [b]) == []
    flipped = copy.deepcopy(b)
    m = flipped["mutations"][0]
    m[4] = "survived" if m[4] != "survived" else "killed"
    (diff,) = compare([a], [flipped])
    assert "wrong trajectories differ from number 1" in diff
    other = copy.deepcopy(b)
    other["accepted"] = not other["accepted"]
    assert any("accepted" in d for d in compare([a], [other]))
    assert "environments differ" in compare([a], [_record("library-loans")])[0]


def test_code_is_compared_only_when_asked() -> None:
    a = _record("bank-ledger")
    b = copy.deepcopy(a)
    b["spec"] = "0" * 16  # the same spec but its code
    assert compare([a], [b]) == []
    assert compare([a], [b], code=True)


def test_cpu_time_of_processes_is_read() -> None:
    assert _ticks([os.getpid()]) > 0
    assert _ticks([2**22 + 12345]) == 0  # no such process: nothing counted


def test_one_world_run_gives_figures_and_a_record() -> None:
    figures, records = run(n=1, executor="inprocess", gate_seed=3)
    assert figures["envs"] == len(records) == 1
    assert figures["cpu_ms_median"] > 0 and figures["cpu_ms_p90"] >= figures["cpu_ms_median"]
    assert records[0]["id"].startswith("world-") and records[0]["mutations"]


def test_a_cold_spec_is_judged_alike_and_is_another_program() -> None:
    from gym_envs.sandbox import program_request

    spec = load_example("library-loans")
    cold = _cold(spec)
    assert program_request(cold)["key"] != program_request(spec)["key"]
    ex = InProcessExecutor()
    try:
        a = verdict_record(spec, validate_spec(spec, executor=ex, seed=5))
        b = verdict_record(cold, validate_spec(cold, executor=ex, seed=5))
    finally:
        ex.close()
    assert compare([a], [b]) == [] and compare([a], [b], code=True)

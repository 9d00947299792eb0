"""Our converted τ² domains against τ²'s own environment and evaluator: states, call results and verdicts agree."""

from __future__ import annotations

import dataclasses

import pytest

from eval.tau2 import _backend
from eval.tau2.agreement import (
    agreement_report,
    argument_perturbations,
    compare,
    drop_perturbations,
    reference_trajectory,
)
from eval.tau2.convert import convert
from gym_envs.sandbox import InProcessExecutor
from tests.fixtures.tau2 import needs_tau2

pytestmark = needs_tau2

#: τ² tasks whose gold actions write through most tools: modify payment; cancel + modify items; change flights,
#: passengers and bags
SAMPLE = {"retail": ["40", "74"], "airline": ["17"]}


def test_a_sample_agrees_with_tau2_on_reference_and_perturbed_trajectories() -> None:
    report = agreement_report(tuple(SAMPLE), task_ids=SAMPLE, seed=0, drops=1, argument_changes=1)
    for name, d in report["domains"].items():
        assert d["tasks"] == len(SAMPLE[name]) and d["trajectories"] == 3 * len(SAMPLE[name]) + len(SAMPLE[name])
        assert d["disagreements"] == [], d["disagreements"]
        assert d["hash_agreement_all"] == 1.0 and d["identical_results"] == d["calls"]
        assert d["verdict_agreement_all"] == 1.0 and d["reference_pass_rate"] == 1.0
    assert report["perturbed_tau2_fail_rate"] > 0  # some perturbation changes τ²'s verdict: the test has teeth


def test_a_wrong_port_is_caught_by_the_hash_and_the_verdict() -> None:
    conv = convert("retail", task_ids=["74"])
    broken_spec = conv.spec.model_copy(update={"code": conv.spec.code.replace(
        'order["status"] = "pending (item modified)"', 'order["status"] = "pending (items modified)"')})
    assert broken_spec.code != conv.spec.code
    broken = dataclasses.replace(conv, spec=broken_spec)
    task = next(iter(broken.tasks.values()))
    ex = InProcessExecutor()
    try:
        case = compare(broken, task, reference_trajectory(broken, task), ex)
    finally:
        ex.close()
    assert not case.hash_agrees and case.tau2_passed and not case.ours_passed and case.verdict_agrees is False
    assert case.result_differences  # the modify call's result shows the wrong status


def test_perturbations_drop_each_action_and_change_arguments_to_values_seen_elsewhere() -> None:
    conv = convert("airline", task_ids=["17"])
    task = next(iter(conv.tasks.values()))
    ref = reference_trajectory(conv, task)
    drops = drop_perturbations(ref)
    assert len(drops) == len(ref.calls) and all(len(d.calls) == len(ref.calls) - 1 for d in drops)
    changed = argument_perturbations(conv, task, ref, seed=3)
    assert changed and changed == argument_perturbations(conv, task, ref, seed=3)  # deterministic
    for p in changed:
        diff = [(a, b) for a, b in zip(ref.calls, p.calls, strict=True) if a != b]
        assert len(diff) == 1 and diff[0][0].name == diff[0][1].name
        (key,) = [k for k in diff[0][0].arguments if diff[0][0].arguments[k] != diff[0][1].arguments[k]]
        seen = [a.arguments.get(key) for t in _backend.tasks("airline")
                for a in (t.evaluation_criteria.actions or [])]
        assert diff[0][1].arguments[key] in seen


@pytest.mark.slow
@pytest.mark.parametrize("name", ["retail", "airline"])
def test_every_task_agrees_with_tau2(name: str) -> None:
    """Every task, two drops and two argument changes each (about 6 and 5 minutes on 2 cores; every perturbation
    of every task is what `envwright bench tau2` sweeps)."""
    report = agreement_report([name], drops=2, argument_changes=2)
    d = report["domains"][name]
    assert d["tasks"] == d["conversion"]["tasks"] == len(_backend.tasks(name))
    assert d["disagreements"] == [], d["disagreements"][:3]
    assert d["hash_agreement_all"] == 1.0 and d["verdict_agreement_all"] == 1.0


@pytest.mark.parametrize("name", ["retail", "telecom"])
def test_each_environment_starts_from_its_own_copy_of_taus_database(name: str) -> None:
    """A write in one environment reaches no other, and a fresh one hashes as τ²'s own loaded database."""
    first, second = _backend.environment(name), _backend.environment(name)
    loaded = _backend.db_hash(first)
    db = first.tools.db
    field = next(iter(type(db).model_fields))
    getattr(db, field).clear()  # the first collection of the agent's database, emptied
    assert _backend.db_hash(first) != loaded == _backend.db_hash(second) == _backend.db_hash(_backend.environment(name))
    assert _backend.db_dump(second) == _backend.db_dump(_backend.environment(name))

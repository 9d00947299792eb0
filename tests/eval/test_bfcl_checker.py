"""Scoring: references pass, near-misses fail, and our verdicts agree with BFCL's checker."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("bfcl_eval")

from eval.bfcl import (
    MULTI_TURN_CATEGORIES,
    BfclEpisode,
    ToolCall,
    agreement_report,
    argument_perturbations,
    bfcl_verdict,
    compare_trajectory,
    drop_call_perturbations,
    empty_trajectory,
    load_entries,
    load_entry,
    parse_call_string,
    reference_trajectory,
    run_trajectory,
)
from eval.bfcl.agreement import entry_cases, perturb_value
from eval.bfcl.checks import (
    EMPTY_TURN,
    FORCE_TERMINATED,
    RESPONSE_MISMATCH,
    STATE_MISMATCH,
    judge_turn,
    missing_responses,
    state_differences,
)

SAMPLE = 25  # entries per category in the default (fast) tests


def _sample(category: str) -> list:
    entries = load_entries(category)
    step = max(1, len(entries) // SAMPLE)
    return entries[::step][:SAMPLE]


# -- pure checker rules ----------------------------------------------------------------------
def test_missing_responses_is_an_unordered_multiset_check() -> None:
    assert missing_responses(["a", "b"], ["b", "x", "a"]) == []
    assert missing_responses(["a", "a"], ["a"]) == ["a"]
    assert missing_responses([], []) == []


def test_state_differences_compare_public_attributes_of_ground_truth() -> None:
    model = SimpleNamespace(x=1, y=[1], _private=1, extra=5)
    truth = SimpleNamespace(x=1, y=[2], _private=2)
    diffs = state_differences({"C": model}, {"C": truth})
    assert [(d.class_name, d.attribute) for d in diffs] == [("C", "y")]
    assert state_differences({}, {"C": truth})[0].model == "<missing>"


def test_judge_turn_order_of_checks() -> None:
    args = {"ground_truth_results": ["r"], "model_results_so_far": []}
    assert judge_turn(0, ground_truth_calls=[], model_call_count=0, state_diff=[], **args).checked is False
    verdict = judge_turn(0, ground_truth_calls=["f()"], model_call_count=0, state_diff=[], **args)
    assert verdict.error_type == EMPTY_TURN
    diff = state_differences({"C": SimpleNamespace(a=1)}, {"C": SimpleNamespace(a=2)})
    verdict = judge_turn(0, ground_truth_calls=["f()"], model_call_count=1, state_diff=diff, **args)
    assert verdict.error_type == STATE_MISMATCH
    verdict = judge_turn(0, ground_truth_calls=["f()"], model_call_count=1, state_diff=[], **args)
    assert verdict.error_type == RESPONSE_MISMATCH and verdict.missing_responses == ["r"]


# -- trajectories ----------------------------------------------------------------------------
def test_parse_call_string_names_positional_arguments() -> None:
    entry = load_entry("multi_turn_base_0")
    assert parse_call_string("sort('final_report.pdf')", entry) == ToolCall(
        "sort", {"file_name": "final_report.pdf"}
    )
    assert parse_call_string("grep(file_name='a',pattern='b')", entry) == ToolCall(
        "grep", {"file_name": "a", "pattern": "b"}
    )
    assert perturb_value(True) is False and perturb_value(3) == 4 and perturb_value("a") == "a_x"
    assert perturb_value([1, 2]) == [1] and perturb_value({"a": 1, "b": 2}) == {"a": 1}


@pytest.mark.parametrize("category", MULTI_TURN_CATEGORIES)
def test_reference_trajectories_pass_on_a_sample(category: str) -> None:
    for entry in _sample(category):
        episode = run_trajectory(entry, reference_trajectory(entry))
        score = episode.score()
        assert score.valid, (entry.id, score.first_failure)
        assert all(v.passed for v in score.turns)
        assert bfcl_verdict(entry, episode.executed_call_strings()).valid, entry.id


def test_empty_trajectory_fails_at_first_turn_with_ground_truth() -> None:
    entry = load_entry("multi_turn_miss_param_0")
    score = run_trajectory(entry, empty_trajectory(entry)).score()
    assert not score.valid and score.first_failure is not None
    assert score.first_failure.turn == 0 and score.error_type == EMPTY_TURN


def test_dropped_and_perturbed_calls_fail() -> None:
    entry = load_entry("multi_turn_base_0")
    reference = reference_trajectory(entry)
    drops = {p.description: p for p in drop_call_perturbations(entry, reference)}
    score = run_trajectory(entry, drops["drop mkdir in turn 0"].trajectory).score()
    assert not score.valid and score.error_type == STATE_MISMATCH and score.first_failure.turn == 0  # type: ignore[union-attr]
    score = run_trajectory(entry, drops["drop grep in turn 1"].trajectory).score()
    assert not score.valid and score.error_type == RESPONSE_MISMATCH and score.first_failure.turn == 1  # type: ignore[union-attr]
    perturbed = [p for p in argument_perturbations(entry, reference) if p.description.startswith("diff(")]
    for p in perturbed:
        assert not run_trajectory(entry, p.trajectory).score().valid, p.description


def test_turns_never_reached_fail_like_a_force_quit() -> None:
    entry = load_entry("multi_turn_base_0")
    episode = run_trajectory(entry, reference_trajectory(entry)[:2])
    score = episode.score()
    assert [v.passed for v in score.turns] == [True, True, False, False]
    assert score.error_type == FORCE_TERMINATED
    assert bfcl_verdict(entry, episode.executed_call_strings()).error_type == FORCE_TERMINATED


def test_miss_func_49_ground_truth_calls_a_withheld_function() -> None:
    """BFCL data quirk: the ground truth uses ``tail`` two turns before it is revealed."""
    entry = load_entry("multi_turn_miss_func_49")
    assert "tail" in entry.withheld_at(1) and any(c.startswith("tail(") for c in entry.ground_truth[1])
    reference = reference_trajectory(entry)
    assert run_trajectory(entry, reference).score().valid
    assert not run_trajectory(entry, reference, enforce_holdouts=True).score().valid


def test_score_closes_an_open_turn() -> None:
    entry = load_entry("multi_turn_base_4")
    episode = BfclEpisode(entry)
    for calls in reference_trajectory(entry):
        episode.begin_turn()
        for call in calls:
            episode.call_tool(call)
        if episode.turns_completed < entry.num_turns - 1:
            episode.end_turn()
    assert episode.score().valid
    episode.close()


# -- agreement with BFCL's checker -----------------------------------------------------------
@pytest.mark.parametrize("category", MULTI_TURN_CATEGORIES)
def test_verdicts_agree_with_bfcl_on_a_sample(category: str) -> None:
    for entry in _sample(category)[:10]:
        for case in entry_cases(entry, seed=1, drops=2, argument_changes=2):
            assert case.agree and case.error_type_agree, case


def test_noisy_model_like_trajectories_agree_with_bfcl() -> None:
    """Rejected calls, extra calls, duplicates and calls in turns BFCL does not check."""
    for entry in load_entries("multi_turn_miss_param", limit=6):
        reference = reference_trajectory(entry)
        noisy = [
            [
                ToolCall("no_such_function", {}),
                *calls,
                *calls,
                ToolCall(entry.functions[0]["name"], {"bogus": 1}),
            ]
            for calls in reference
        ]
        moved = [
            calls[1:] + (reference[t + 1][:1] if t + 1 < len(reference) else [])
            for t, calls in enumerate(reference)
        ]
        for trajectory in (noisy, moved, [list(reversed(c)) for c in reference]):
            case = compare_trajectory(entry, trajectory, kind="noisy")
            assert case.agree and case.error_type_agree, case


def test_agreement_report_shape() -> None:
    report = agreement_report(["multi_turn_base", "multi_turn_miss_func"], limit=3)
    assert report["entries"] == 6 and report["categories"]["multi_turn_base"]["entries"] == 3
    assert report["reference_pass_rate"] == 1.0 and report["empty_fail_rate"] == 1.0
    assert report["agreement_all"] == 1.0 and report["agreement_perturbed"] == 1.0
    assert report["perturbed"] == 12 and 0.0 <= report["perturbed_fail_rate"] <= 1.0
    assert report["disagreements"] == [] and report["reference_failures"] == []


# -- the whole benchmark (slow) --------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("category", MULTI_TURN_CATEGORIES)
def test_every_reference_passes_ours_and_bfcl(category: str) -> None:
    failures = []
    for entry in load_entries(category):
        episode = run_trajectory(entry, reference_trajectory(entry))
        if not (episode.score().valid and bfcl_verdict(entry, episode.executed_call_strings()).valid):
            failures.append(entry.id)
    assert failures == []


@pytest.mark.slow
def test_full_agreement_report() -> None:
    report = agreement_report(seed=0)
    assert report["entries"] == 800
    assert report["reference_pass_rate"] == 1.0 and report["reference_bfcl_pass_rate"] == 1.0
    assert report["agreement_all"] == 1.0 and report["error_type_agreement_all"] == 1.0
    assert report["perturbed_fail_rate"] > 0.9


@pytest.mark.slow
@pytest.mark.parametrize("category", MULTI_TURN_CATEGORIES)
def test_exhaustive_single_perturbations_agree(category: str) -> None:
    for entry in load_entries(category):
        reference = reference_trajectory(entry)
        for p in drop_call_perturbations(entry, reference) + argument_perturbations(entry, reference):
            case = compare_trajectory(entry, p.trajectory, kind=p.kind, description=p.description)
            assert case.agree and case.error_type_agree, case

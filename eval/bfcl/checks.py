"""BFCL's multi-turn checker semantics as small pure functions, and the verdict types.

Role: decide, per turn, whether a model trajectory passes, the way BFCL's
``multi_turn_checker`` does, and explain why not. :class:`~eval.bfcl.episode.BfclEpisode`
feeds these functions with what it observed; nothing here executes anything.

Contract (BFCL v4, ``multi_turn_checker.py``), for each turn ``t`` in order:

1. Ground truth for ``t`` is empty (the model should not act, e.g. a missing parameter or a
   withheld function): the turn is *not checked* and passes. BFCL defines an irrelevance
   checker for such turns but its evaluation runner never calls it; neither do we.
2. Otherwise, if the model made no call in ``t``: fail (``empty_turn_model_response``).
3. State check: for every involved class, every public attribute (name not starting with
   ``_``) of the ground-truth instance must ``==`` the same attribute of the model's instance
   after the turn (``instance_state_mismatch``). State is cumulative over turns.
4. Response check: the execution results of the ground-truth calls of ``t`` must be contained,
   as a multiset and in any order, in the results of *all* the model's calls of turns ``0..t``
   (``execution_response_mismatch``).
5. A turn the episode never reached fails (``force_terminated``).

BFCL stops at the first failing turn; we judge every turn (later verdicts are informative) and
the episode is valid iff every turn passes, which is the same overall verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final

EMPTY_TURN: Final = "multi_turn:empty_turn_model_response"
STATE_MISMATCH: Final = "multi_turn:instance_state_mismatch"
RESPONSE_MISMATCH: Final = "multi_turn:execution_response_mismatch"
FORCE_TERMINATED: Final = "multi_turn:force_terminated"

_REPR_LIMIT = 200


@dataclass(frozen=True)
class AttributeDifference:
    """One public attribute whose value differs between model and ground-truth instances."""

    class_name: str
    attribute: str
    model: str
    """Truncated ``repr`` of the model's value (``"<missing>"`` if absent)."""
    ground_truth: str


@dataclass(frozen=True)
class TurnVerdict:
    """The checker's verdict on one turn."""

    turn: int
    passed: bool
    checked: bool
    """False when the ground truth of the turn is empty (BFCL skips such turns)."""
    error_type: str | None
    """BFCL's error type string for the failure (``None`` when passed)."""
    reason: str
    state_differences: list[AttributeDifference] = field(default_factory=list)
    missing_responses: list[str] = field(default_factory=list)
    """Ground-truth execution results absent from the model's results so far."""


@dataclass(frozen=True)
class EpisodeScore:
    """Per-turn verdicts of one episode and the overall BFCL-style validity."""

    entry_id: str
    category: str
    valid: bool
    turns: list[TurnVerdict]

    @property
    def first_failure(self) -> TurnVerdict | None:
        return next((verdict for verdict in self.turns if not verdict.passed), None)

    @property
    def error_type(self) -> str | None:
        """The error type of the first failing turn (what BFCL reports), or ``None``."""
        failure = self.first_failure
        return failure.error_type if failure else None

    @property
    def turn_pass_rate(self) -> float:
        return sum(v.passed for v in self.turns) / len(self.turns) if self.turns else 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _short_repr(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _REPR_LIMIT else text[: _REPR_LIMIT - 3] + "..."


_MISSING = object()


def state_differences(
    model_instances: Mapping[str, object], ground_truth_instances: Mapping[str, object]
) -> list[AttributeDifference]:
    """BFCL's state check: public attributes of each ground-truth instance vs the model's.

    Only attributes present on the ground-truth instance are compared (as BFCL does); a class
    missing on the model side counts as every attribute differing.
    """
    differences: list[AttributeDifference] = []
    for class_name, truth in ground_truth_instances.items():
        model = model_instances.get(class_name, _MISSING)
        for attribute, expected in vars(truth).items():
            if attribute.startswith("_"):
                continue
            actual = getattr(model, attribute, _MISSING)
            if actual is _MISSING or actual != expected:
                shown = "<missing>" if actual is _MISSING else _short_repr(actual)
                differences.append(AttributeDifference(class_name, attribute, shown, _short_repr(expected)))
    return differences


def missing_responses(ground_truth_results: Sequence[str], model_results: Sequence[str]) -> list[str]:
    """Ground-truth results not matched, one-for-one in any order, by ``model_results``."""
    pool = list(model_results)
    missing: list[str] = []
    for item in ground_truth_results:
        try:
            pool.remove(item)
        except ValueError:
            missing.append(item)
    return missing


def judge_turn(
    turn: int,
    *,
    ground_truth_calls: Sequence[str],
    model_call_count: int,
    state_diff: Sequence[AttributeDifference],
    ground_truth_results: Sequence[str],
    model_results_so_far: Sequence[str],
) -> TurnVerdict:
    """Apply BFCL's per-turn rules (see module docstring) to one reached turn."""
    if not ground_truth_calls:
        return TurnVerdict(turn, True, False, None, "no ground-truth calls for this turn: not checked")
    if model_call_count == 0:
        return TurnVerdict(turn, False, True, EMPTY_TURN, "the model made no call in this turn")
    if state_diff:
        names = ", ".join(f"{d.class_name}.{d.attribute}" for d in state_diff)
        return TurnVerdict(
            turn,
            False,
            True,
            STATE_MISMATCH,
            f"backend state differs from ground truth: {names}",
            state_differences=list(state_diff),
        )
    missing = missing_responses(ground_truth_results, model_results_so_far)
    if missing:
        return TurnVerdict(
            turn,
            False,
            True,
            RESPONSE_MISMATCH,
            f"{len(missing)} ground-truth execution result(s) missing from the model's results so far",
            missing_responses=missing,
        )
    return TurnVerdict(turn, True, True, None, "state and execution results match ground truth")


def not_reached(turn: int) -> TurnVerdict:
    """Verdict for a turn the episode never completed."""
    return TurnVerdict(turn, False, True, FORCE_TERMINATED, "the episode ended before this turn")

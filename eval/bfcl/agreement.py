"""Checker agreement: our episode scorer versus BFCL's own ``multi_turn_checker``.

Role: build trajectories whose correct verdict is known or interesting (the ground truth
itself, an empty trajectory, the ground truth with one call dropped or one argument perturbed),
replay them through :class:`~eval.bfcl.episode.BfclEpisode`, score each one both with
``BfclEpisode.score()`` and with BFCL's checker on the call strings the episode executed, and
report how often the two agree.

Contract:

- A trajectory is a list (per turn) of lists of :class:`~eval.bfcl.episode.ToolCall`. The
  reference trajectory is BFCL's ground truth parsed with ``ast`` (literal arguments only;
  positional arguments are named from the backend method's signature), so replaying it goes
  through exactly the structured-call path a model uses.
- BFCL's verdict is computed the way its evaluation runner does: a trajectory with fewer turns
  than the entry is ``force_terminated``; otherwise each executed call is one decoded step and
  ``multi_turn_checker`` re-executes everything in its own (private, released) namespace.
- Perturbations are deterministic given ``seed``. Some perturbations legitimately still pass
  (e.g. dropping a read-only call whose result the model produced earlier); they are counted,
  not filtered, so "perturbed fail rate" is below 100% by design and agreement is the metric.
"""

from __future__ import annotations

import ast
import copy
import inspect
import random
import threading
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from eval.bfcl import _backend
from eval.bfcl.checks import FORCE_TERMINATED, EpisodeScore
from eval.bfcl.data import MULTI_TURN_CATEGORIES, BfclEntry, load_entries
from eval.bfcl.episode import BfclEpisode, ToolCall
from eval.errors import BfclDataError
from gym_envs.seeding import stable_seed

Trajectory = list[list[ToolCall]]


#: CPython 3.11's AST constructor keeps a recursion-depth counter that threads parsing at once can corrupt
#: ("SystemError: AST constructor recursion depth mismatch", seen with episodes on 8 threads): one parse at a time
_PARSE_LOCK = threading.Lock()


# -- trajectories ----------------------------------------------------------------------------
def parse_call_string(call: str, entry: BfclEntry) -> ToolCall:
    """Parse one ground-truth call string (``"mv(source='a', destination='b')"``) into a ToolCall."""
    try:
        with _PARSE_LOCK:
            node = ast.parse(call.strip(), mode="eval").body
    except SyntaxError as exc:
        raise BfclDataError(f"{entry.id}: cannot parse ground-truth call {call!r}: {exc}") from exc
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        raise BfclDataError(f"{entry.id}: ground-truth call {call!r} is not a plain function call")
    name = node.func.id
    try:
        positional = [ast.literal_eval(arg) for arg in node.args]
        arguments: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise BfclDataError(f"{entry.id}: **kwargs in ground-truth call {call!r}")
            arguments[kw.arg] = ast.literal_eval(kw.value)
    except ValueError as exc:
        raise BfclDataError(f"{entry.id}: non-literal argument in ground-truth call {call!r}") from exc
    if positional:
        names = _parameter_names(entry, name)
        if len(positional) > len(names):
            raise BfclDataError(f"{entry.id}: too many positional arguments in {call!r}")
        arguments = {**dict(zip(names, positional, strict=False)), **arguments}
    return ToolCall(name, arguments)


def _parameter_names(entry: BfclEntry, function: str) -> list[str]:
    for class_name in entry.involved_classes:
        method = getattr(_backend.backend_class(class_name), function, None)
        if callable(method):
            return [
                p.name
                for p in inspect.signature(method).parameters.values()
                if p.name != "self" and p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
            ]
    raise BfclDataError(f"{entry.id}: {function!r} is not a method of {entry.involved_classes}")


def reference_trajectory(entry: BfclEntry) -> Trajectory:
    """BFCL's ground truth as structured calls."""
    return [[parse_call_string(call, entry) for call in turn] for turn in entry.ground_truth]


def empty_trajectory(entry: BfclEntry) -> Trajectory:
    """Every turn reached, no call made."""
    return [[] for _ in range(entry.num_turns)]


@dataclass(frozen=True)
class Perturbation:
    """A reference trajectory with one change."""

    kind: str
    """``"drop_call"`` or ``"perturb_argument"``."""
    turn: int
    index: int
    description: str
    trajectory: Trajectory


def perturb_value(value: Any) -> Any:
    """A different value of the same JSON kind (deterministic)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 1.0
    if isinstance(value, str):
        return value + "_x" if value else "x"
    if isinstance(value, list | tuple):
        return list(value[:-1]) if value else ["x"]
    if isinstance(value, dict):
        if not value:
            return {"x": "x"}
        trimmed = dict(value)
        trimmed.pop(next(reversed(trimmed)))
        return trimmed
    return "x"


def drop_call_perturbations(entry: BfclEntry, reference: Trajectory | None = None) -> list[Perturbation]:
    """One perturbation per ground-truth call: that call removed."""
    reference = reference_trajectory(entry) if reference is None else reference
    out = []
    for turn, calls in enumerate(reference):
        for index, dropped in enumerate(calls):
            trajectory = copy.deepcopy(reference)
            del trajectory[turn][index]
            out.append(
                Perturbation("drop_call", turn, index, f"drop {dropped.name} in turn {turn}", trajectory)
            )
    return out


def argument_perturbations(entry: BfclEntry, reference: Trajectory | None = None) -> list[Perturbation]:
    """One perturbation per (ground-truth call, argument): that argument's value changed."""
    reference = reference_trajectory(entry) if reference is None else reference
    out = []
    for turn, calls in enumerate(reference):
        for index, original in enumerate(calls):
            for key, value in original.arguments.items():
                trajectory = copy.deepcopy(reference)
                changed = perturb_value(value)
                trajectory[turn][index] = ToolCall(original.name, {**original.arguments, key: changed})
                description = f"{original.name}({key}={value!r} -> {changed!r}) in turn {turn}"
                out.append(Perturbation("perturb_argument", turn, index, description, trajectory))
    return out


def sample_perturbations(
    entry: BfclEntry,
    *,
    seed: int = 0,
    drops: int = 1,
    argument_changes: int = 1,
    reference: Trajectory | None = None,
) -> list[Perturbation]:
    """Up to ``drops`` dropped-call and ``argument_changes`` changed-argument perturbations."""
    reference = reference_trajectory(entry) if reference is None else reference
    rng = random.Random(stable_seed(seed, entry.id))
    dropped = drop_call_perturbations(entry, reference)
    changed = argument_perturbations(entry, reference)
    return rng.sample(dropped, min(drops, len(dropped))) + rng.sample(
        changed, min(argument_changes, len(changed))
    )


# -- running and judging ---------------------------------------------------------------------
def run_trajectory(
    entry: BfclEntry, trajectory: Trajectory, *, enforce_holdouts: bool = False
) -> BfclEpisode:
    """Replay ``trajectory`` (possibly shorter than the entry) and return the closed episode."""
    if len(trajectory) > entry.num_turns:
        raise ValueError(f"trajectory has {len(trajectory)} turns, {entry.id} has {entry.num_turns}")
    episode = BfclEpisode(entry, enforce_holdouts=enforce_holdouts)
    try:
        for calls in trajectory:
            episode.run_turn(calls)
    finally:
        episode.close()
    return episode


@dataclass(frozen=True)
class BfclVerdict:
    """BFCL's own checker result."""

    valid: bool
    error_type: str | None
    error_message: str | None


def bfcl_verdict(entry: BfclEntry, executed: Sequence[Sequence[str]]) -> BfclVerdict:
    """Judge per-turn executed call strings with BFCL's ``multi_turn_checker``."""
    if len(executed) != entry.num_turns:
        return BfclVerdict(False, FORCE_TERMINATED, f"{len(executed)} of {entry.num_turns} turns")
    decoded = [[[call] for call in turn] for turn in executed]
    result = _backend.run_bfcl_checker(
        decoded, copy.deepcopy(entry.ground_truth), entry.to_bfcl_test_entry(), entry.category
    )
    valid = bool(result.get("valid"))
    return BfclVerdict(valid, None if valid else result.get("error_type"), result.get("error_message"))


@dataclass(frozen=True)
class AgreementCase:
    """Our verdict and BFCL's on one trajectory."""

    entry_id: str
    category: str
    kind: str
    """``"reference"``, ``"empty"``, ``"drop_call"`` or ``"perturb_argument"``."""
    description: str
    ours_valid: bool
    ours_error_type: str | None
    ours_reason: str | None
    bfcl_valid: bool
    bfcl_error_type: str | None

    @property
    def agree(self) -> bool:
        return self.ours_valid == self.bfcl_valid

    @property
    def error_type_agree(self) -> bool:
        return self.agree and self.ours_error_type == self.bfcl_error_type


def compare_trajectory(
    entry: BfclEntry, trajectory: Trajectory, *, kind: str = "custom", description: str = ""
) -> AgreementCase:
    """Score ``trajectory`` with our scorer and with BFCL's checker."""
    episode = run_trajectory(entry, trajectory)
    ours: EpisodeScore = episode.score()
    theirs = bfcl_verdict(entry, episode.executed_call_strings())
    failure = ours.first_failure
    return AgreementCase(
        entry_id=entry.id,
        category=entry.category,
        kind=kind,
        description=description,
        ours_valid=ours.valid,
        ours_error_type=ours.error_type,
        ours_reason=f"turn {failure.turn}: {failure.reason}" if failure else None,
        bfcl_valid=theirs.valid,
        bfcl_error_type=theirs.error_type,
    )


def entry_cases(
    entry: BfclEntry, *, seed: int = 0, drops: int = 1, argument_changes: int = 1
) -> list[AgreementCase]:
    """Reference, empty and sampled perturbed cases for one entry."""
    reference = reference_trajectory(entry)
    cases = [
        compare_trajectory(entry, reference, kind="reference", description="ground truth"),
        compare_trajectory(entry, empty_trajectory(entry), kind="empty", description="no calls"),
    ]
    for p in sample_perturbations(
        entry, seed=seed, drops=drops, argument_changes=argument_changes, reference=reference
    ):
        cases.append(compare_trajectory(entry, p.trajectory, kind=p.kind, description=p.description))
    return cases


def _rate(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def summarize(cases: Iterable[AgreementCase]) -> dict[str, Any]:
    """Counts and rates over ``cases`` (see :func:`agreement_report`)."""
    cases = list(cases)
    reference = [c for c in cases if c.kind == "reference"]
    empty = [c for c in cases if c.kind == "empty"]
    perturbed = [c for c in cases if c.kind in ("drop_call", "perturb_argument")]
    return {
        "entries": len(reference),
        "trajectories": len(cases),
        "reference_pass_rate": _rate(sum(c.ours_valid for c in reference), len(reference)),
        "reference_bfcl_pass_rate": _rate(sum(c.bfcl_valid for c in reference), len(reference)),
        "empty_fail_rate": _rate(sum(not c.ours_valid for c in empty), len(empty)),
        "perturbed": len(perturbed),
        "perturbed_fail_rate": _rate(sum(not c.ours_valid for c in perturbed), len(perturbed)),
        "perturbed_bfcl_fail_rate": _rate(sum(not c.bfcl_valid for c in perturbed), len(perturbed)),
        "agreement_all": _rate(sum(c.agree for c in cases), len(cases)),
        "agreement_perturbed": _rate(sum(c.agree for c in perturbed), len(perturbed)),
        "error_type_agreement_all": _rate(sum(c.error_type_agree for c in cases), len(cases)),
        "reference_failures": [asdict(c) for c in reference if not (c.ours_valid and c.bfcl_valid)],
        "disagreements": [asdict(c) for c in cases if not c.agree],
    }


def agreement_report(
    categories: Iterable[str] = MULTI_TURN_CATEGORIES,
    limit: int | None = None,
    *,
    seed: int = 0,
    drops: int = 1,
    argument_changes: int = 1,
) -> dict[str, Any]:
    """Agreement of our scorer with BFCL's checker over reference/empty/perturbed trajectories.

    Returns ``{"bfcl_version", "seed", "categories": {category: summary}, **overall summary}``
    where a summary has ``entries``, ``trajectories``, ``reference_pass_rate`` (ours),
    ``reference_bfcl_pass_rate``, ``empty_fail_rate``, ``perturbed``, ``perturbed_fail_rate``,
    ``perturbed_bfcl_fail_rate``, ``agreement_all``, ``agreement_perturbed``,
    ``error_type_agreement_all``, ``reference_failures`` and ``disagreements`` (case dicts).
    Rates are ``None`` when their denominator is zero.
    """
    per_category: dict[str, Any] = {}
    all_cases: list[AgreementCase] = []
    for category in categories:
        cases = [
            case
            for entry in load_entries(category, limit=limit)
            for case in entry_cases(entry, seed=seed, drops=drops, argument_changes=argument_changes)
        ]
        per_category[category] = summarize(cases)
        all_cases.extend(cases)
    return {
        "bfcl_version": _backend.bfcl().version,
        "seed": seed,
        "categories": per_category,
        **summarize(all_cases),
    }

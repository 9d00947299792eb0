"""BFCL v4 multi-turn suite: entries, a model-independent episode runner, BFCL-faithful scoring.

Role: evaluate any policy on the Berkeley Function Calling Leaderboard (v4) multi-turn
categories (``multi_turn_base``, ``multi_turn_miss_func``, ``multi_turn_miss_param``,
``multi_turn_long_context``) using the data and executable backends shipped in the Apache-2.0
``bfcl-eval`` package, and check that our scorer agrees with BFCL's own checker.

Contract:

- ``bfcl-eval`` is an optional dependency, imported lazily on first use; install it with
  ``pip install --no-deps bfcl-eval mpmath`` (its declared dependencies are not needed). Without
  it, loading raises :class:`BfclNotInstalledError` saying so; importing this package never fails.
- Modules: :mod:`~eval.bfcl.data` (``BfclEntry``, ``load_entries``),
  :mod:`~eval.bfcl.episode` (``BfclEpisode``: ``begin_turn``/``tools_for_turn``/``call``/
  ``end_turn``/``score``), :mod:`~eval.bfcl.checks` (BFCL's per-turn rules as pure functions),
  :mod:`~eval.bfcl.agreement` (reference/empty/perturbed trajectories, ``bfcl_verdict``,
  ``agreement_report``), :mod:`~eval.bfcl.throughput` (``replay_throughput``), and the private
  :mod:`~eval.bfcl._backend`, the only module that touches BFCL's internals.

Typical loop::

    for entry in load_entries("multi_turn_base", limit=10):
        with BfclEpisode(entry) as episode:
            for turn in range(episode.num_turns):
                messages = episode.begin_turn()
                tools = episode.tools_for_turn()
                ...  # policy emits ToolCall(name, arguments); episode.call(name, arguments)
                episode.end_turn()
            print(episode.score().valid)
"""

from __future__ import annotations

from eval.bfcl.agreement import (
    AgreementCase,
    BfclVerdict,
    Perturbation,
    Trajectory,
    agreement_report,
    argument_perturbations,
    bfcl_verdict,
    compare_trajectory,
    drop_call_perturbations,
    empty_trajectory,
    parse_call_string,
    reference_trajectory,
    run_trajectory,
    sample_perturbations,
)
from eval.bfcl.checks import AttributeDifference, EpisodeScore, TurnVerdict
from eval.bfcl.data import MULTI_TURN_CATEGORIES, BfclEntry, load_entries, load_entry
from eval.bfcl.episode import BfclEpisode, CallRecord, ToolCall, build_call_string
from eval.bfcl.throughput import ThroughputResult, replay_throughput
from eval.errors import (
    INSTALL_HINT,
    BfclDataError,
    BfclEpisodeError,
    BfclError,
    BfclNotInstalledError,
)

__all__ = [
    "INSTALL_HINT",
    "MULTI_TURN_CATEGORIES",
    "AgreementCase",
    "AttributeDifference",
    "BfclDataError",
    "BfclEntry",
    "BfclEpisode",
    "BfclEpisodeError",
    "BfclError",
    "BfclNotInstalledError",
    "BfclVerdict",
    "CallRecord",
    "EpisodeScore",
    "Perturbation",
    "ThroughputResult",
    "ToolCall",
    "Trajectory",
    "TurnVerdict",
    "agreement_report",
    "argument_perturbations",
    "bfcl_verdict",
    "build_call_string",
    "compare_trajectory",
    "drop_call_perturbations",
    "empty_trajectory",
    "load_entries",
    "load_entry",
    "parse_call_string",
    "reference_trajectory",
    "replay_throughput",
    "run_trajectory",
    "sample_perturbations",
]

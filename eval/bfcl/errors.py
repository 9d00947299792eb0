"""Errors raised by the BFCL multi-turn suite.

Role: one place for the exceptions of ``eval.bfcl``.

Contract: everything the *model* does wrong (an unknown function, bad arguments, a call the
backend rejects) is data: it becomes an error string returned to the model and a failed turn in
the score, never an exception. Exceptions are reserved for the harness: BFCL is not installed,
its data is not what we expect, or the episode API is driven out of order.
"""

from __future__ import annotations

INSTALL_HINT = "pip install --no-deps bfcl-eval mpmath"


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

"""Depth of BFCL multi-turn categories, computed from their ground truth.

Role: the same figures as :func:`envgen.depth.depth_of` gives our environments
(calls per task, the share of tasks with at least three calls, turns per
task), for a BFCL v4 multi-turn category: each entry's ground truth is one
list of Python call strings per turn (:attr:`eval.bfcl.data.BfclEntry.ground_truth`),
so a turn's calls are its list's length. BFCL's state is Python objects, not
a database: tables per environment is None.

Raises :class:`~eval.errors.BfclNotInstalledError` without ``bfcl-eval``
(``pip install --no-deps bfcl-eval mpmath``).
"""

from __future__ import annotations

import functools

from envgen.depth import Depth, depth_of
from eval.bfcl.data import load_entries

__all__ = ["bfcl_depth"]


@functools.lru_cache(maxsize=8)
def bfcl_depth(category: str = "multi_turn_base") -> Depth:
    """The depth of one BFCL multi-turn category's ground truth (every entry)."""
    entries = load_entries(category)
    return depth_of([[len(turn) for turn in e.ground_truth] for e in entries], envs=len(entries))

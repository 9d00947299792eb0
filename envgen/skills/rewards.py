"""Proposer rewards: small pure functions, selectable by name.

* ``skill_sp``: Skill Self-Play's ``valid * (1 - 2|p - 0.5|)``, and ``-1`` when the
  proposal could not be parsed. It peaks at 1 for a valid task the solver
  solves half the time and is 0 for tasks it always or never solves.
* ``spade``: SPADE's ``0.6 * band(p in [lo, hi]) + 0.4 * hint_regret``, where
  ``hint_regret = max(0, p_hint - p)`` rewards tasks that a hint makes solvable
  (learnable, not impossible). Invalid proposals get 0, unparsable ones -1.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["PROPOSER_REWARDS", "band", "proposer_reward", "skill_sp_reward", "spade_reward"]


def skill_sp_reward(valid: bool, solve_rate: float | None, *, parsed: bool = True) -> float:
    """Skill-SP: ``valid * (1 - 2|p - 0.5|)``; ``-1`` for a parse failure."""
    if not parsed:
        return -1.0
    if not valid or solve_rate is None:
        return 0.0
    _check_rate(solve_rate)
    return 1.0 - 2.0 * abs(solve_rate - 0.5)


def band(p: float, lo: float = 0.4, hi: float = 0.6) -> float:
    """1.0 when ``lo <= p <= hi`` else 0.0."""
    return 1.0 if lo <= p <= hi else 0.0


def spade_reward(valid: bool, solve_rate: float | None, *, parsed: bool = True,
                 hinted_solve_rate: float | None = None, lo: float = 0.4, hi: float = 0.6) -> float:
    """SPADE: ``0.6 * band(p) + 0.4 * max(0, p_hint - p)``."""
    if not parsed:
        return -1.0
    if not valid or solve_rate is None:
        return 0.0
    _check_rate(solve_rate)
    regret = 0.0
    if hinted_solve_rate is not None:
        _check_rate(hinted_solve_rate)
        regret = max(0.0, hinted_solve_rate - solve_rate)
    return 0.6 * band(solve_rate, lo, hi) + 0.4 * regret


def _check_rate(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"a solve rate must be in [0, 1], got {p}")


PROPOSER_REWARDS: dict[str, Callable[..., float]] = {"skill_sp": skill_sp_reward, "spade": spade_reward}


def proposer_reward(name: str) -> Callable[..., float]:
    """The reward function called ``name`` (``skill_sp`` or ``spade``)."""
    try:
        return PROPOSER_REWARDS[name]
    except KeyError:
        raise ValueError(f"unknown proposer reward {name!r}; choose one of {sorted(PROPOSER_REWARDS)}") from None

"""Proposer rewards: small pure functions, selectable by name, composed by :func:`proposal_reward`.

The base reward of a **valid** proposal is a function of ``p``, the solver's
success rate on it (the share of its ``k`` solver episodes that passed):

* ``skill_sp``: Skill Self-Play's ``1 - 2|p - 0.5|``. It peaks at 1 for an
  environment the solver solves half the time and is 0 for one it always or
  never solves;
* ``spade``: SPADE's band term, ``1`` when ``lo <= p <= hi`` else ``0``. (SPADE
  adds a hint-regret term, ``max(0, p_hint - p)``, which needs a second solver
  pass with a hint on every environment; self-play does not run that pass, so
  the term is not offered.)

:func:`proposal_reward` composes the whole reward of one proposal:

* a proposal that did not parse (or compile) gets ``unparsable`` (default ``-1``);
* one that parsed but the gate or its skill's check rejected gets ``invalid``
  (default ``0``; a negative value also pushes away from invalid proposals);
* a valid one gets the base reward plus ``grounding_weight * grounding`` (the
  share of its entity and field names that occur in its source document,
  :func:`envgen.blueprint.grounding.grounding`), an optional bonus.

:func:`skill_sp_reward` and :func:`spade_reward` keep the historical
signature ``(valid, p, parsed=...)`` (``-1`` unparsable, ``0`` invalid).
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["PROPOSER_REWARDS", "band", "proposal_reward", "proposer_reward", "skill_sp_reward", "spade_reward"]


def _check_rate(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"a solve rate must be in [0, 1], got {p}")


def skill_sp_base(p: float) -> float:
    """``1 - 2|p - 0.5|`` of a valid proposal's solve rate."""
    _check_rate(p)
    return 1.0 - 2.0 * abs(p - 0.5)


def band(p: float, lo: float = 0.4, hi: float = 0.6) -> float:
    """1.0 when ``lo <= p <= hi`` else 0.0."""
    return 1.0 if lo <= p <= hi else 0.0


def spade_base(p: float, lo: float = 0.4, hi: float = 0.6) -> float:
    """SPADE's band term of a valid proposal's solve rate."""
    _check_rate(p)
    return band(p, lo, hi)


def skill_sp_reward(valid: bool, solve_rate: float | None, *, parsed: bool = True) -> float:
    """Skill-SP: ``valid * (1 - 2|p - 0.5|)``; ``-1`` for a parse failure."""
    if not parsed:
        return -1.0
    if not valid or solve_rate is None:
        return 0.0
    return skill_sp_base(solve_rate)


def spade_reward(valid: bool, solve_rate: float | None, *, parsed: bool = True, lo: float = 0.4,
                 hi: float = 0.6) -> float:
    """SPADE's band term: ``valid * band(p)``; ``-1`` for a parse failure."""
    if not parsed:
        return -1.0
    if not valid or solve_rate is None:
        return 0.0
    return spade_base(solve_rate, lo, hi)


PROPOSER_REWARDS: dict[str, Callable[..., float]] = {"skill_sp": skill_sp_reward, "spade": spade_reward}
_BASES: dict[str, Callable[[float], float]] = {"skill_sp": skill_sp_base, "spade": spade_base}


def proposer_reward(name: str) -> Callable[..., float]:
    """The reward function called ``name`` (``skill_sp`` or ``spade``)."""
    try:
        return PROPOSER_REWARDS[name]
    except KeyError:
        raise ValueError(f"unknown proposer reward {name!r}; choose one of {sorted(PROPOSER_REWARDS)}") from None


def proposal_reward(name: str, *, parsed: bool, valid: bool, solve_rate: float | None,
                    grounding: float | None = None, invalid: float = 0.0, unparsable: float = -1.0,
                    grounding_weight: float = 0.0) -> float:
    """The whole reward of one proposal (see the module docstring)."""
    proposer_reward(name)  # an unknown name fails here, with the choices
    if not parsed:
        return unparsable
    if not valid or solve_rate is None:
        return invalid
    bonus = grounding_weight * grounding if grounding is not None and grounding_weight else 0.0
    return _BASES[name](solve_rate) + bonus

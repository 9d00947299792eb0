"""The τ² domains this package converts: each one's tables, row mappings, tool code and policy annotations.

Role: one registry (:data:`DOMAINS`, via :func:`domain`) that :mod:`eval.tau2.convert` and
:mod:`eval.tau2.agreement` read, so a domain is added in one place. A :class:`Domain` names its tables and the
functions between τ²'s ``model_dump()`` and rows (:mod:`eval.tau2.retail`, :mod:`eval.tau2.airline`), the files of
its restricted tool code (``code/*.py``, package data read as text, never imported), and the policy phrases a
tool enforces (:mod:`eval.tau2.policy`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from corpora.errors import did_you_mean
from eval.tau2 import airline, retail
from eval.tau2.tables import Rows, Table

__all__ = ["DOMAINS", "Domain", "domain"]


@dataclass(frozen=True)
class Domain:
    """How one τ² domain becomes a spec."""

    name: str
    title: str
    tables: tuple[Table, ...]
    to_tables: Callable[[dict[str, Any]], Rows]
    from_tables: Callable[[Rows], dict[str, Any]]
    code_files: tuple[str, ...]  #: under ``eval/tau2/code/``, joined in this order
    tool_enforced: tuple[str, ...] = ()  #: phrases of the policy rules that a tool enforces

    @functools.cached_property
    def code(self) -> str:
        """The restricted Python of the domain's tools."""
        folder = resources.files("eval.tau2").joinpath("code")
        return "\n\n".join(folder.joinpath(f).read_text(encoding="utf-8") for f in self.code_files)


DOMAINS: dict[str, Domain] = {
    "retail": Domain(
        "retail", "the customer service of τ²-bench's online retail store", retail.TABLES, retail.to_tables,
        retail.from_tables, ("retail.py", "arithmetic.py"),
        tool_enforced=("can only be called once per order", "An order can only be cancelled if its status is",
                       "the reason (either 'no longer needed' or 'ordered by mistake')",
                       "An order can only be modified if its status is",
                       "a single payment method different from the original payment method",
                       "to gift card, it must have enough balance",
                       "each item can be modified to an available new item of the same product",
                       "it must have enough balance to cover the price difference",
                       "An order can only be returned if its status is",
                       "The refund must either go to the original payment method, or an existing gift card",
                       "An order can only be exchanged if its status is",
                       "each item can be exchanged to an available new item of the same product")),
    "airline": Domain(
        "airline", "the reservation desk of τ²-bench's airline", airline.TABLES, airline.to_tables,
        airline.from_tables, ("airline.py", "arithmetic.py"),
        tool_enforced=("All payment methods must already be in user profile",
                       "The payment method must already be in user profile",
                       "cannot modify the number of passengers", "Each extra baggage is 50 dollars",
                       "The travel insurance is 30 dollars per passenger")),
}


def domain(name: str) -> Domain:
    """The converted domain ``name`` (``ValueError`` naming the known ones, with a close match)."""
    try:
        return DOMAINS[name]
    except KeyError:
        raise ValueError(f"τ² domain {name!r} is not converted{did_you_mean(name, DOMAINS, n=1)} (converted: "
                         f"{', '.join(DOMAINS)})") from None

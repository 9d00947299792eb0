"""The τ² domains this package converts: each one's tables, row mappings, tool code and policy annotations.

Role: one registry (:data:`DOMAINS`, via :func:`domain`) that :mod:`eval.tau2.convert` and
:mod:`eval.tau2.agreement` read, so a domain is added in one place. A :class:`Domain` names its tables and the
functions between τ²'s ``model_dump()`` and rows (:mod:`eval.tau2.retail`, :mod:`eval.tau2.airline`), the files of
its restricted tool code (``code/*.py``, package data read as text, never imported), the host constants that code
reads, and the policy phrases a tool enforces (:mod:`eval.tau2.policy`).

Contract: a domain's tool code (:attr:`Domain.code`) is spliced by :func:`splice_code` from, in order, the
constants (:data:`SHARED_CONSTANTS`, then the domain's own, each written as a Python literal of the host's value),
the shared files (:data:`SHARED_CODE`: helpers and the tools every domain has, written once) and the domain's own
files. A top-level name bound twice in the splice is a ``ValueError`` naming both places: a later definition would
silently replace an earlier one in every domain that splices both.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from corpora.errors import did_you_mean
from eval.tau2 import airline, retail
from eval.tau2.tables import ADDRESS_KEYS, Rows, Table

__all__ = ["DOMAINS", "SHARED_CODE", "SHARED_CONSTANTS", "Domain", "domain", "splice_code"]

#: files under ``code/`` spliced into every domain's tool code, before its own: the helpers the domains share
#: (``shared.py``) and the ``calculate`` tool with its evaluator (``arithmetic.py``)
SHARED_CODE = ("shared.py", "arithmetic.py")
#: host constants spliced into every domain's tool code (``shared.py``'s ``address_of`` reads ``ADDRESS_KEYS``)
SHARED_CONSTANTS: Mapping[str, Any] = {"ADDRESS_KEYS": ADDRESS_KEYS}


def _bound(tree: ast.Module) -> list[str]:
    """The top-level names a module binds by definition or assignment (imports may repeat: they bind one module)."""
    out: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.append(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out += [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    return out


def _literal(name: str, value: Any) -> str:
    text = repr(value)
    try:
        same = ast.literal_eval(text) == value
    except (ValueError, SyntaxError):
        same = False
    if not same:
        raise ValueError(f"the constant {name} = {text[:80]} has no Python literal that reads back as it; splice only "
                         f"str, int, float, bool, None and tuples, lists and dicts of them")
    return f"{name} = {text}"


def splice_code(constants: Mapping[str, Any], files: Sequence[tuple[str, str]]) -> str:
    """One tool code from ``constants`` (written as ``NAME = literal`` lines) and ``files`` (``(name, source)``, in
    order); ``ValueError`` when a top-level name is bound twice (a constant, or in two places of the files)."""
    where: dict[str, str] = {}

    def bind(name: str, place: str) -> None:
        if name in where:
            raise ValueError(f"the tool code binds {name} twice: in {where[name]} and in {place}; write it once (a "
                             f"shared helper goes in code/shared.py, a host value in the domain's constants)")
        where[name] = place

    header = [_literal(k, v) for k, v in constants.items()]
    for k in constants:
        bind(k, "the spliced constants")
    for fname, source in files:
        try:
            tree = ast.parse(source, filename=fname)
        except SyntaxError as e:
            raise ValueError(f"code/{fname} does not parse: {e}") from None
        for name in _bound(tree):
            bind(name, f"code/{fname}")
    parts = ["# constants spliced from the host modules (eval/tau2)\n" + "\n".join(header)] if header else []
    return "\n\n".join(parts + [source.rstrip("\n") + "\n" for _, source in files])


@dataclass(frozen=True)
class Domain:
    """How one τ² domain becomes a spec."""

    name: str
    title: str
    tables: tuple[Table, ...]
    to_tables: Callable[[dict[str, Any]], Rows]
    from_tables: Callable[[Rows], dict[str, Any]]
    code_files: tuple[str, ...]  #: the domain's own files under ``eval/tau2/code/``, after :data:`SHARED_CODE`
    tool_enforced: tuple[str, ...] = ()  #: phrases of the policy rules that a tool enforces
    #: host values the domain's code reads, spliced in after :data:`SHARED_CONSTANTS`
    constants: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @functools.cached_property
    def code(self) -> str:
        """The restricted Python of the domain's tools (:func:`splice_code` of the constants and the files)."""
        folder = resources.files("eval.tau2").joinpath("code")
        files = [(f, folder.joinpath(f).read_text(encoding="utf-8")) for f in (*SHARED_CODE, *self.code_files)]
        return splice_code({**SHARED_CONSTANTS, **self.constants}, files)


DOMAINS: dict[str, Domain] = {
    "retail": Domain(
        "retail", "the customer service of τ²-bench's online retail store", retail.TABLES, retail.to_tables,
        retail.from_tables, ("retail.py",),
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
        airline.from_tables, ("airline.py",), constants=airline.CODE_CONSTANTS,
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

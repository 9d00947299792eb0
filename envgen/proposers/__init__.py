"""Proposers, keyed by short name: ``world`` and ``template`` (static analysis, no model) and ``llm``.

:mod:`envgen.proposers.pairs` pairs the model proposer's prompts with the AST writers' answers (the warm
start's teaching pairs), above both writers' packages.
"""

from __future__ import annotations

from typing import Any

from corpora.registry import Registry
from envgen.proposers.base import Proposal, Proposer

PROPOSERS: Registry[Any] = Registry("proposer")
PROPOSERS.register("template", "envgen.proposers.template:TemplateProposer")
PROPOSERS.register("llm", "envgen.proposers.llm:LLMProposer")
PROPOSERS.register("world", "envgen.proposers.world:WorldProposer")


def make_proposer(name: str, **options: Any) -> Proposer:
    """Instantiate a registered proposer; ``options`` are its options class's fields (``template``:
    :class:`~envgen.proposers.template.TemplateOptions`; ``llm``: ``backend``, ``model`` and
    :class:`~envgen.proposers.llm.LLMOptions`), an unknown one refused with the closest names."""
    return PROPOSERS.get(name)(**options)


__all__ = ["PROPOSERS", "Proposal", "Proposer", "make_proposer"]

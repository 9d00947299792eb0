"""The proposer contract: documents in, candidate environment specs out.

A proposer turns one corpus document (plus, optionally, a routed skill) into a
:class:`Proposal`: a parsed :class:`~gym_envs.spec.EnvSpec` or a typed failure
(``spec is None`` and ``error`` says why). Proposers never validate; the
generation pipeline (:mod:`envgen.generate`) runs the gate and, for proposers
that support it (``can_repair``), feeds the rejection reasons back through
:meth:`Proposer.repair`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gym_envs.spec import EnvSpec


@dataclass
class Proposal:
    """One candidate environment (or a typed failure to produce one)."""

    doc_id: str
    spec: EnvSpec | None
    error: str | None = None  #: why no spec was produced (parse failure, ...)
    raw: str | None = None  #: the model's completion, for LLM proposers
    prompt: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Proposer:
    """Base class. Subclasses set ``name`` and implement :meth:`propose_batch`."""

    name = "base"
    can_repair = False

    def propose_batch(self, docs: list[Any], *, seed: int = 0, skills: list[Any] | None = None) -> list[Proposal]:
        """One proposal per document (``skills[i]`` conditions document ``i`` when given)."""
        raise NotImplementedError

    def propose(self, doc: Any, *, seed: int = 0, skill: Any = None) -> Proposal:
        return self.propose_batch([doc], seed=seed, skills=[skill] if skill is not None else None)[0]

    def repair_batch(self, items: list[tuple[Proposal, str]], *, seed: int = 0) -> list[Proposal]:
        """Retry each proposal given the gate's feedback text (only if ``can_repair``)."""
        raise NotImplementedError(f"proposer {self.name!r} cannot repair")

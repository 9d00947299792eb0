"""The proposer contract: documents in, candidate environment specs out.

A proposer turns one corpus document (plus, optionally, a routed skill) into a
:class:`Proposal`: a parsed :class:`~gym_envs.spec.EnvSpec` or a typed failure
(``spec is None`` and ``error`` says why). Proposers never validate; the
generation pipeline (:mod:`envgen.generate`) runs the gate and, for proposers
that support it (``can_repair``), feeds the rejection reasons back through
:meth:`Proposer.repair`.

Several proposers' batches can decode together (:func:`propose_together`: self-play's skill and exploration
streams): a proposer that samples from a model backend describes a batch as a :class:`BatchRequest`
(:meth:`Proposer.batch_request`), and requests to one backend with the same sampling settings go out as one
``generate`` call, each prompt with its own token budget and JSON Schema (``None``: unconstrained), cut to what
the model's context window leaves after the prompt; a prompt that leaves less than its request's
``min_new_tokens`` is not sent (:meth:`envgen.backends.base.Backend.generate`). A proposer that describes no
request writes its batch alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gym_envs.errors import exception_text
from gym_envs.spec import EnvSpec

__all__ = ["BatchRequest", "Proposal", "Proposer", "propose_together", "run_requests"]


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

    def batch_request(self, docs: list[Any], *, seed: int = 0,
                      skills: list[Any] | None = None) -> BatchRequest | None:
        """What :meth:`propose_batch` would send its backend, for a batch shared with other proposers
        (:func:`propose_together`); None (the default): this proposer writes its batches alone."""
        return None


@dataclass
class BatchRequest:
    """One proposer's batch as a model backend call: the prompts, each one's token budget and JSON Schema,
    the sampling settings, and ``finish(completions) -> proposals`` (``completions`` is the call's error text
    when the backend raised)."""

    backend: Any
    prompts: list[Any]
    max_new_tokens: list[int]
    json_schemas: list[dict[str, Any] | None]
    temperature: float
    top_p: float
    stop: list[str] | None
    finish: Callable[[Any], list[Proposal]]
    #: the least room in the model's context window a prompt is sent with (less: a ``too_long`` completion)
    min_new_tokens: int = 1

    def sampling(self) -> tuple[int, float, float, tuple[str, ...]]:
        """What requests that share one call must agree on: the backend and the sampling settings."""
        return id(self.backend), self.temperature, self.top_p, tuple(self.stop or ())


def run_requests(requests: Sequence[BatchRequest], *, seed: int) -> list[list[Proposal]]:
    """Requests with the same backend and sampling (:meth:`BatchRequest.sampling`) in one ``generate`` call
    each; returns each request's proposals, in order. A backend that raises fails its call's proposals (a
    failure is data)."""
    out: list[list[Proposal] | None] = [None] * len(requests)
    calls: dict[tuple[Any, ...], list[int]] = {}
    for i, r in enumerate(requests):
        calls.setdefault(r.sampling(), []).append(i)
    for idx in calls.values():
        first = requests[idx[0]]
        prompts = [p for i in idx for p in requests[i].prompts]
        try:
            completions: Any = first.backend.generate(
                prompts, max_new_tokens=[b for i in idx for b in requests[i].max_new_tokens],
                json_schema=[s for i in idx for s in requests[i].json_schemas], temperature=first.temperature,
                top_p=first.top_p, seed=seed, n=1, stop=first.stop,
                min_new_tokens=[requests[i].min_new_tokens for i in idx for _ in requests[i].prompts])
        except Exception as e:  # the boundary: a failure is data, the call's proposals record it
            completions = f"generation failed ({getattr(first.backend, 'name', 'backend')}): {exception_text(e)}"
        start = 0
        for i in idx:
            k = len(requests[i].prompts)
            out[i] = requests[i].finish(completions if isinstance(completions, str)
                                        else completions[start:start + k])
            start += k
    return [o if o is not None else [] for o in out]


def propose_together(jobs: Sequence[tuple[Proposer, list[Any], list[Any] | None]], *,
                     seed: int = 0) -> list[list[Proposal]]:
    """Each job's ``proposer.propose_batch(docs, skills=skills)``, the batches of proposers that share a backend
    and its sampling settings decoded in one call (module docstring); returns each job's proposals, in order."""
    requests = [p.batch_request(docs, seed=seed, skills=skills) if docs else None for p, docs, skills in jobs]
    shared = [i for i, r in enumerate(requests) if r is not None]
    done = dict(zip(shared, run_requests([requests[i] for i in shared], seed=seed), strict=True))  # type: ignore[misc]
    return [done[i] if i in done else (p.propose_batch(docs, seed=seed, skills=skills) if docs else [])
            for i, (p, docs, skills) in enumerate(jobs)]

"""Format recovery: recovery-step self-distillation with the decoding grammar as the teacher.

When the exploration stream writes without the grammar (``selfplay.proposer.explore_constrained: false``), a
proposal that does not parse gets reward -1 in its GRPO group: the update learns that the sequence was bad,
not where it went wrong or what the format wanted there. The grammar knows both. For each such proposal
(:func:`recovery_samples`):

1. **divergence** -- the completion's tokens are fed to the structure's grammar (:func:`structure_grammar`: the
   v1 blueprint's or the world blueprint's schema, as the skill stream decodes under it with no skill) until it
   rejects one (:func:`envgen.backends.transformers_local.first_rejected`): the first step that
   leaves the states the grammar supports, or the end of an unfinished text;
2. **recovery** -- the policy goes on from the prompt and the tokens before that step, now under the grammar
   (``Generator.generate(grammar_prefixes=...)``), within the proposer's token budget;
3. **sample** -- the proposal's own tokens up to the divergence are context with loss mask 0 (its valid
   prefix is not re-taught), the recovered continuation has mask 1; a continuation cut by the budget, or one
   whose text still does not parse as the structure, is dropped;
4. **update** -- masked negative log-likelihood (:func:`training.loss.update`, ``objective="nll"``), as the
   solver's recovery-step distillation (:mod:`training.distill`) does.

So the free stream is taught the format at the step where it lost it, in the policy's own words around it.
The round's free stream is 4 proposals for one document (``round.group_size``), so it gives a few samples a
round; ``selfplay.recovery.documents`` adds N more documents a round, each written once without the
grammar for this step only (never solved, scored or kept), in the free stream's batch (:class:`RecoveryRiders`,
which keeps that batch in one engine call with the skill stream's). They are drawn from the
pool without the acceptance probe's documents, whose proposals are never used (the probe measures the format).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable, Sequence
from typing import Any

from envgen.errors import PARSE_FAILURES
from envgen.proposers.base import BatchRequest, Proposal, Proposer
from training.generation import Generator
from training.loss import Sample

__all__ = ["RecoveryRiders", "recovery_samples", "structure_grammar"]


def structure_grammar(structure: str) -> tuple[dict[str, Any], Callable[[str], bool]]:
    """The decoding schema of a free-stream ``structure`` (``blueprint`` or ``world``, with no skill) and the test
    that a text parses as it (what :func:`recovery_samples` takes as ``schema`` and ``parses``)."""
    if structure == "blueprint":
        from envgen.blueprint.schema import blueprint_json_schema, parse_blueprint

        return blueprint_json_schema(), lambda text: parse_blueprint(text).ok
    if structure == "world":
        from envgen.world.blueprint import parse_world, world_json_schema

        return world_json_schema(), lambda text: parse_world(text).ok
    raise ValueError(f"format recovery continues a blueprint or a world under its grammar, not a {structure!r}")


def recovery_samples(proposals: Sequence[Any], record_for: Callable[[str | None], Any], generator: Generator,
                     schema: dict[str, Any], parses: Callable[[str], bool], decode: Callable[[list[int]], str], *,
                     max_new_tokens: int, temperature: float, top_p: float = 1.0, seed: int = 0,
                     weight: float = 1.0) -> tuple[list[Sample], dict[str, Any]]:
    """NLL samples that take the round's unparsed proposals back to the format (module docstring).

    ``proposals``: the round's proposals (``spec``, ``raw``, ``meta["error_code"]`` and ``meta["stream"]``);
    only exploration proposals that failed to parse are used. ``record_for(raw)``: what
    was sampled for a proposal (``prompt_ids``, ``completion_ids``). ``parses(text)``: whether a recovered text
    parses as the structure. ``decode(ids)``: token ids to text. Returns the samples and their statistics:
    ``unparsed`` (proposals taken), ``recovered`` (samples made), ``cut`` (continuations cut by the budget),
    ``still_unparsed``, ``divergence`` (mean share of the completion kept before the divergence) and
    ``new_tokens`` (mean tokens of a recovered continuation)."""
    from envgen.backends.transformers_local import first_rejected

    grammar = generator.grammar(schema)
    rows: list[tuple[list[int], list[int]]] = []
    shares: list[float] = []
    for p in proposals:
        meta = p.meta or {}
        if p.spec is not None or meta.get("stream") != "explore" or meta.get("error_code") not in PARSE_FAILURES:
            continue
        rec = record_for(p.raw)
        if rec is None or not rec.completion_ids:
            continue
        ids = list(rec.completion_ids)
        k = first_rejected(grammar, ids)
        if k is None:  # the grammar could have written it: not a format failure
            continue
        rows.append((list(rec.prompt_ids), ids[:k]))
        shares.append(k / len(ids))
    stats: dict[str, Any] = {"unparsed": len(rows), "recovered": 0, "cut": 0, "still_unparsed": 0,
                             "divergence": statistics.fmean(shares) if shares else None, "new_tokens": None}
    budget = [max_new_tokens - len(prefix) for _, prefix in rows]
    live = [i for i, b in enumerate(budget) if b > 0]
    stats["cut"] = len(rows) - len(live)
    if not live:
        return [], stats
    out = generator.generate([rows[i][0] + rows[i][1] for i in live], max_new_tokens=max(budget[i] for i in live),
                             temperature=temperature, top_p=top_p, seed=seed, json_schemas=[schema] * len(live),
                             grammar_prefixes=[rows[i][1] for i in live])
    samples, new = [], []
    for i, g in zip(live, out, strict=True):
        prompt, prefix = rows[i]
        cont = list(g.ids)
        if g.finish != "stop" or len(cont) > budget[i]:
            stats["cut"] += 1
            continue
        if not parses(decode(prefix + cont)):
            stats["still_unparsed"] += 1
            continue
        samples.append(Sample(prompt, prefix + cont, [0] * len(prefix) + [1] * len(cont), advantage=1.0,
                              role="proposer", weight=weight, meta={"divergence": len(prefix)}))
        new.append(len(cont))
    stats["recovered"] = len(samples)
    stats["new_tokens"] = statistics.fmean(new) if new else None
    return samples, stats


class RecoveryRiders(Proposer):
    """A free-stream proposer whose batch also writes proposals for extra documents (``docs``), kept aside in
    ``proposals`` for the format-recovery step: they are never scored, solved or kept. The first batch of the
    round carries them (the free stream writes one batch a round, in one engine call with the skill stream's:
    :meth:`batch_request`); any later one is the inner proposer's."""

    def __init__(self, inner: Proposer, docs: list[Any]):
        self.inner, self.docs = inner, list(docs)
        self.name, self.can_repair = inner.name, inner.can_repair
        self.proposals: list[Proposal] | None = None

    def _with_extras(self, docs: list[Any], skills: list[Any] | None) -> tuple[list[Any], list[Any] | None]:
        """The round's documents then the extra ones, and their skills (none for the extras)."""
        return list(docs) + self.docs, None if skills is None else [*skills, *[None] * len(self.docs)]

    def propose_batch(self, docs: list[Any], *, seed: int = 0, skills: list[Any] | None = None) -> list[Proposal]:
        if self.proposals is not None or not docs:
            return self.inner.propose_batch(docs, seed=seed, skills=skills)
        all_docs, all_skills = self._with_extras(docs, skills)
        out = self.inner.propose_batch(all_docs, seed=seed, skills=all_skills)
        self.proposals = out[len(docs):]
        return out[:len(docs)]

    def batch_request(self, docs: list[Any], *, seed: int = 0,
                      skills: list[Any] | None = None) -> BatchRequest | None:
        """The first batch's request with the extra documents' rows after the round's (so that the skill stream's
        rows and these decode in one call, :func:`envgen.proposers.base.propose_together`); later batches, and an
        inner proposer that writes alone, as the inner proposer's."""
        if self.proposals is not None or not docs:
            return self.inner.batch_request(docs, seed=seed, skills=skills)
        all_docs, all_skills = self._with_extras(docs, skills)
        request = self.inner.batch_request(all_docs, seed=seed, skills=all_skills)
        if request is None:
            return None
        finish, n = request.finish, len(docs)

        def split(completions: Any) -> list[Proposal]:
            out = finish(completions)
            self.proposals = out[n:]
            return out[:n]

        return dataclasses.replace(request, finish=split)

    def repair_batch(self, items: list[tuple[Proposal, str]], *, seed: int = 0) -> list[Proposal]:
        return self.inner.repair_batch(items, seed=seed)

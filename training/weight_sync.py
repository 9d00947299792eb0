"""Keeping the sampler on the trainer's weights: sync bookkeeping and the sampler-trainer log-probability gap.

A generation engine with its own copy of the weights (vLLM) must be given the trainer's after every optimizer
step, or the samples come from another policy. Two checks make a missed sync fail loudly
(:class:`~training.errors.StaleWeightsError`) instead of training quietly off-policy:

* **the counter** (:class:`WeightSync`) -- every generator counts the optimizer steps of the optimizer it
  tracks (:meth:`WeightSync.track`: a hook on ``optimizer.step``, so a trainer cannot forget to report one)
  and the syncs it made; an engine with its own weights refuses to generate while steps are pending
  (:meth:`WeightSync.require_synced`);
* **the gap** (:func:`logprob_gap`, :func:`measure_gap`) -- right after a sync the engine and the trainer hold
  the same weights, so the log-probability the engine recorded for each sampled token and the one the
  trainer computes for it differ only by numerics (bf16 kernels, batching). A sync that did not reach the
  engine (a renamed parameter it ignored, a LoRA adapter not merged) shows as a gap far above that;
  :func:`check_gap` fails above ``generation.max_logprob_gap`` (mean over tokens, in nats).

The gap (mean and max over the sampled tokens, and how many) is reported every step in the trainers'
metrics. It is measured only on tokens sampled at the update's temperature without a grammar (the solver's
episodes): a grammar or another temperature changes the sampling distribution itself.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from training.errors import StaleWeightsError

__all__ = ["GAP_SAMPLES", "SamplerGap", "WeightSync", "check_gap", "gap_samples", "logprob_gap", "measure_gap",
           "sampler_report"]

#: Samples of a step the gap is measured on (spread over the step's samples): one extra forward pass over
#: them, without gradient, costs little beside the update.
GAP_SAMPLES = 8


class WeightSync:
    """Optimizer steps seen and weight syncs made, for one generator (module docstring)."""

    def __init__(self) -> None:
        self.steps = 0  #: optimizer steps taken by the tracked optimizers
        self.synced_at = 0  #: ``steps`` at the last sync
        self.syncs = 0  #: syncs made
        self.seconds = 0.0  #: time spent syncing
        self._hooks: list[Any] = []

    def track(self, optimizer: Any) -> None:
        """Count ``optimizer``'s steps (a post-hook on ``optimizer.step``; a skipped step is not counted)."""
        self._hooks.append(optimizer.register_step_post_hook(lambda *_: self.stepped()))

    def stepped(self, n: int = 1) -> None:
        self.steps += n

    def synced(self, seconds: float = 0.0) -> None:
        """The engine now holds the trainer's current weights."""
        self.synced_at = self.steps
        self.syncs += 1
        self.seconds += seconds

    @property
    def pending(self) -> int:
        """Optimizer steps since the last sync."""
        return self.steps - self.synced_at

    def require_synced(self, engine: str) -> None:
        """Raise :class:`StaleWeightsError` when the trainer stepped since the last sync."""
        if self.pending:
            raise StaleWeightsError(
                f"the {engine} engine was asked to generate {self.pending} optimizer step(s) after its last weight "
                f"sync ({self.syncs} sync(s) so far): its samples would come from an older policy. The trainer must "
                "call generator.sync() after every update")

    def stats(self) -> dict[str, float]:
        return {"syncs": float(self.syncs), "pending_steps": float(self.pending), "sync_seconds": self.seconds}


@dataclass
class SamplerGap:
    """``|log p_sampler - log p_trainer|`` over sampled tokens: its mean and max, and the tokens measured."""

    mean: float = 0.0
    max: float = 0.0
    tokens: int = 0

    def as_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items()}


def logprob_gap(sampled: Sequence[Sequence[float]], trained: Sequence[Sequence[float]],
                masks: Sequence[Sequence[int]]) -> SamplerGap:
    """The gap between the sampler's and the trainer's log-probabilities of the same tokens, over the tokens
    whose mask is 1 (a non-finite pair is left out: a token the engine could not score)."""
    total, worst, n = 0.0, 0.0, 0
    for s_row, t_row, m_row in zip(sampled, trained, masks, strict=True):
        if not len(s_row) == len(t_row) == len(m_row):
            raise ValueError(f"a row has {len(s_row)} sampler, {len(t_row)} trainer log-probabilities and "
                             f"{len(m_row)} mask entries")
        for s, t, m in zip(s_row, t_row, m_row, strict=True):
            d = abs(float(s) - float(t))
            if m and math.isfinite(d):
                total, worst, n = total + d, max(worst, d), n + 1
    return SamplerGap(total / n if n else 0.0, worst, n)


def gap_samples(samples: Sequence[Any], limit: int = GAP_SAMPLES) -> list[Any]:
    """Up to ``limit`` of ``samples`` that carry the sampler's log-probabilities, spread over the list."""
    usable = [s for s in samples if getattr(s, "sampler_logprobs", None) is not None and s.trained_tokens > 0]
    step = max(1, len(usable) // max(1, limit))
    return usable[::step][:limit]


def measure_gap(model: Any, samples: Sequence[Any], *, pad_id: int, temperature: float,
                micro_batch_size: int = 8, autocast_bf16: bool = False,
                max_batch_tokens: int | None = None) -> SamplerGap:
    """The gap on ``samples`` (:class:`~training.loss.Sample` with ``sampler_logprobs``; see
    :func:`gap_samples`): one forward pass of the trainer's ``model`` without gradient, at ``temperature``,
    compared token by token over each sample's trained tokens."""
    import torch

    from training.loss import micro_batches, pad_batch, shapes_of, token_logprobs

    if not samples:
        return SamplerGap()
    device = next(model.parameters()).device
    was_training = model.training
    model.train()  # the mode the update takes its log-probabilities in
    trained: list[list[float]] = [[] for _ in samples]
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast_bf16)
    try:
        with torch.no_grad():
            for idx in micro_batches(shapes_of(samples), micro_batch_size, max_batch_tokens):
                batch = pad_batch([samples[i] for i in idx], pad_id, device)
                with autocast:
                    logps = token_logprobs(model, batch["input_ids"], batch["attention_mask"],
                                           batch["logits_to_keep"], temperature).float()
                for row, i in enumerate(idx):
                    trained[i] = logps[row, :len(samples[i].completion_ids)].tolist()
    finally:
        model.train(was_training)
    return logprob_gap([s.sampler_logprobs for s in samples], trained, [s.loss_mask for s in samples])


def check_gap(gap: SamplerGap, limit: float | None, *, engine: str, syncs: int) -> None:
    """Raise :class:`StaleWeightsError` when the mean gap is above ``limit`` (None: never)."""
    if limit is not None and gap.tokens and gap.mean > limit:
        raise StaleWeightsError(
            f"the {engine} engine's log-probabilities of its own samples differ from the trainer's by {gap.mean:.3f} "
            f"nats on average (max {gap.max:.3f}, {gap.tokens} tokens), above generation.max_logprob_gap={limit}, "
            f"after {syncs} weight sync(s): the engine does not hold the trainer's weights (a sync that did not "
            "reach it), or samples at another temperature than the update's. Raise the limit only if the gap is "
            "numerics (e.g. a bf16 engine against fp32 weights)")


def sampler_report(generator: Any, model: Any, samples: Sequence[Any], *, pad_id: int, cfg: Any,
                   limit: float | None) -> dict[str, Any]:
    """What a trainer does with the engine between its rollouts and its update: the engine sleeps (vLLM's sleep
    mode), the gap is measured on up to :data:`GAP_SAMPLES` of ``samples`` (when the generator records its
    log-probabilities) with the update's settings (``cfg``: :class:`~training.loss.UpdateConfig`) and checked
    against ``limit``; returns the step's ``generation`` record: the engine, ``logprob_gap`` (mean, max,
    tokens) and the engine's syncs so far."""
    generator.sleep()
    gap = SamplerGap()
    if getattr(generator, "records_logprobs", False):
        gap = measure_gap(model, gap_samples(samples), pad_id=pad_id, temperature=cfg.temperature,
                          micro_batch_size=cfg.micro_batch_size, autocast_bf16=cfg.autocast_bf16,
                          max_batch_tokens=cfg.max_batch_tokens)
    check_gap(gap, limit, engine=generator.name, syncs=generator.weights.syncs)
    return {"engine": generator.name, "logprob_gap": gap.as_dict(), **generator.weights.stats()}

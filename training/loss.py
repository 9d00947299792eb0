"""Losses and the update step of the trainers that do not go through TRL's GRPOTrainer.

A :class:`Sample` is one sequence to learn from: prompt tokens, completion tokens
and a per-token ``loss_mask`` (1 = trained: the model's own tokens of a rollout,
the teacher's recovery tokens of a distillation sample; 0 = environment tokens,
a student prefix, padding), plus its advantage and its role (and, where the sampler recorded them, its
log-probabilities of the completion tokens).

* :func:`token_logprobs` -- per-token log-probabilities of the completions
  (TRL's ``selective_log_softmax``, logits divided by the sampling temperature);
* :func:`policy_loss` -- GRPO's clipped surrogate (one update per batch makes the
  ratio 1 and this the plain policy gradient) with an optional k3 KL penalty;
  ``loss_type`` ``grpo`` averages tokens per sequence then sequences,
  ``dapo``/``bnpo`` average over all trained tokens of the batch;
* :func:`nll_loss` -- masked cross-entropy (distillation, SFT warm start);
* :func:`drop_too_long` -- the one length rule of every SFT path: a sample longer than the model's context
  window is left out and counted (``too_long``), with a warning, never trained on;
* :func:`update` -- the optimizer steps over a batch: by default one (micro-batches,
  gradient accumulation over the whole batch, gradient clipping); with
  ``num_iterations`` (TRL's μ) and ``steps_per_generation`` the batch is gone through
  μ times, each time in that many shuffled mini-batches of one step each, against the
  log-probabilities of the policy that sampled it (so the clipped surrogate clips);
  returns the statistics;
* :func:`update_config` and :func:`make_optimizer` -- the update's knobs and the AdamW
  optimizer from TRL's ``GRPOConfig`` (the self-play, baseline and distillation trainers).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gym_envs.seeding import stable_seed

__all__ = ["Sample", "UpdateConfig", "drop_too_long", "make_optimizer", "micro_batches", "nll_loss", "pad_batch",
           "policy_loss", "reference_logprobs", "shapes_of", "token_logprobs", "update", "update_config"]


@dataclass
class Sample:
    """One training sequence (see the module docstring)."""

    prompt_ids: list[int]
    completion_ids: list[int]
    loss_mask: list[int]
    advantage: float = 0.0
    role: str = "solver"
    weight: float = 1.0
    meta: dict[str, Any] = field(default_factory=dict)
    #: the sampler's log-probability of each completion token, where it sampled them at the update's temperature
    #: without a grammar (the sampler-trainer gap is measured on them: :mod:`training.weight_sync`)
    sampler_logprobs: list[float] | None = None

    def __post_init__(self) -> None:
        if len(self.loss_mask) != len(self.completion_ids):
            raise ValueError(f"loss_mask has {len(self.loss_mask)} entries for {len(self.completion_ids)} tokens")
        if self.sampler_logprobs is not None and len(self.sampler_logprobs) != len(self.completion_ids):
            raise ValueError(f"sampler_logprobs has {len(self.sampler_logprobs)} entries for "
                             f"{len(self.completion_ids)} tokens")

    @property
    def trained_tokens(self) -> int:
        return sum(self.loss_mask)

    @property
    def length(self) -> int:
        """Tokens of the whole sequence: prompt and completion."""
        return len(self.prompt_ids) + len(self.completion_ids)


def drop_too_long(samples: Sequence[Sample], max_length: int | None, *, what: str,
                  fix: str) -> tuple[list[Sample], int]:
    """The samples of at most ``max_length`` tokens (prompt and completion; None keeps them all), and how many were
    longer. A longer one is never trained on: a model has no position past its context window (its attention over
    the whole sequence may not even fit in memory). When any is left out, a warning names how many of ``what``
    (``"reference trajectories"``), the longest, and ``fix``: what to change so that they fit."""
    kept = [s for s in samples if max_length is None or s.length <= max_length]
    dropped = len(samples) - len(kept)
    if dropped:
        longest = max(s.length for s in samples)
        warnings.warn(f"{dropped} of {len(samples)} {what} are longer than the model's context window ({max_length} "
                      f"tokens; the longest has {longest}) and are left out of training (counted as too_long): "
                      f"{fix}", stacklevel=2)
    return kept, dropped


@dataclass
class UpdateConfig:
    """Knobs of :func:`update` (taken from TRL's ``GRPOConfig`` by the trainers)."""

    micro_batch_size: int = 4
    max_grad_norm: float = 1.0
    epsilon_low: float = 0.2
    epsilon_high: float = 0.2
    beta: float = 0.0
    loss_type: str = "dapo"
    temperature: float = 1.0
    autocast_bf16: bool = False  #: forward passes under bf16 autocast (mixed precision over fp32 weights)
    #: passes over a batch (TRL's ``num_iterations``, μ); a pass after the first learns from samples the policy
    #: has moved away from, which the clipped ratio bounds
    num_iterations: int = 1
    #: optimizer steps per pass: the batch is split into this many shuffled mini-batches (TRL's
    #: ``steps_per_generation`` over ``gradient_accumulation_steps``); 1: one step on the whole batch
    steps_per_generation: int = 1
    seed: int = 0  #: the mini-batches' shuffle
    #: at most this many tokens (padding included) in one micro-batch, besides ``micro_batch_size`` rows (None: no
    #: cap); a sample longer than it goes alone
    max_batch_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.max_batch_tokens is not None and self.max_batch_tokens < 1:
            raise ValueError(f"max_batch_tokens must be >= 1 (or None), got {self.max_batch_tokens}")
        if self.num_iterations < 1 or self.steps_per_generation < 1:
            raise ValueError(f"num_iterations ({self.num_iterations}) and steps_per_generation "
                             f"({self.steps_per_generation}) must be >= 1")
        if self.loss_type not in ("grpo", "dapo", "bnpo"):
            raise ValueError(f"loss_type {self.loss_type!r} is not supported by the self-play and distillation "
                             "updates; use grpo, dapo or bnpo (TRL's GRPOTrainer has the others for `train solver`)")


def update_config(grpo: Any, temperature: float, *, steps_per_generation: int | None = None,
                  max_batch_tokens: int | None = None) -> UpdateConfig:
    """The update's knobs from TRL's ``GRPOConfig`` (any object with its fields).

    ``steps_per_generation``: the value the configuration set (``grpo.steps_per_generation``; None: one step
    per pass). It is passed apart because the self-play trainers build their ``GRPOConfig`` with a generation
    batch of their own, which derives a ``steps_per_generation`` that says nothing about theirs. As in TRL,
    ``gradient_accumulation_steps`` of those steps make one optimizer step. ``max_batch_tokens``: the
    micro-batches' token cap (``model.micro_batch_tokens``).
    """
    accumulate = max(1, int(getattr(grpo, "gradient_accumulation_steps", 1) or 1))
    steps = max(1, int(steps_per_generation) // accumulate) if steps_per_generation else 1
    return UpdateConfig(micro_batch_size=grpo.per_device_train_batch_size, max_grad_norm=grpo.max_grad_norm,
                        epsilon_low=grpo.epsilon, epsilon_high=grpo.epsilon_high or grpo.epsilon,
                        beta=grpo.beta, loss_type=grpo.loss_type, temperature=temperature if temperature > 0 else 1.0,
                        autocast_bf16=bool(getattr(grpo, "bf16", False)),
                        num_iterations=int(getattr(grpo, "num_iterations", 1) or 1), steps_per_generation=steps,
                        seed=int(getattr(grpo, "seed", 0) or 0), max_batch_tokens=max_batch_tokens)


def micro_batches(shapes: Sequence[tuple[int, int]], rows: int, tokens: int | None = None) -> list[list[int]]:
    """Indices into ``shapes`` (each sample's prompt and completion token counts) in micro-batches: shortest
    first, at most ``rows`` a batch and, with ``tokens``, at most that many tokens once padded as
    :func:`pad_batch` pads (the longest prompt plus the longest completion, times the rows); a sample over
    ``tokens`` alone goes alone. Every index appears once; the update's sums do not depend on the split."""
    if rows < 1:
        raise ValueError(f"rows must be >= 1, got {rows}")
    order = sorted(range(len(shapes)), key=lambda i: sum(shapes[i]))
    out: list[list[int]] = []
    wide = (0, 0)  # the last batch's longest prompt and completion
    for i in order:
        p, c = shapes[i]
        grown = (max(wide[0], p), max(wide[1], c, 1))
        if out and len(out[-1]) < rows and (tokens is None or sum(grown) * (len(out[-1]) + 1) <= tokens):
            out[-1].append(i)
            wide = grown
        else:
            out.append([i])
            wide = (p, max(c, 1))
    return out


def shapes_of(samples: Sequence[Sample]) -> list[tuple[int, int]]:
    """Each sample's (prompt, completion) token counts, what :func:`micro_batches` splits by."""
    return [(len(s.prompt_ids), len(s.completion_ids)) for s in samples]


def make_optimizer(model: Any, grpo: Any) -> Any:
    """AdamW over the trainable parameters with GRPOConfig's learning rate, betas, epsilon, weight decay."""
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    return torch.optim.AdamW(params, lr=grpo.learning_rate, betas=(grpo.adam_beta1, grpo.adam_beta2),
                             eps=grpo.adam_epsilon, weight_decay=grpo.weight_decay)


def pad_batch(samples: Sequence[Sample], pad_id: int, device: Any = None) -> dict[str, Any]:
    """Left-padded prompts and right-padded completions, as TRL lays them out."""
    import torch

    p_width = max(len(s.prompt_ids) for s in samples)
    c_width = max(max(len(s.completion_ids) for s in samples), 1)
    n = len(samples)
    prompt = torch.full((n, p_width), pad_id, dtype=torch.long)
    prompt_mask = torch.zeros((n, p_width), dtype=torch.long)
    comp = torch.full((n, c_width), pad_id, dtype=torch.long)
    comp_mask = torch.zeros((n, c_width), dtype=torch.long)
    loss_mask = torch.zeros((n, c_width), dtype=torch.float32)
    for i, s in enumerate(samples):
        if s.prompt_ids:
            prompt[i, p_width - len(s.prompt_ids):] = torch.tensor(s.prompt_ids)
            prompt_mask[i, p_width - len(s.prompt_ids):] = 1
        k = len(s.completion_ids)
        if k:
            comp[i, :k] = torch.tensor(s.completion_ids)
            comp_mask[i, :k] = 1
            loss_mask[i, :k] = torch.tensor(s.loss_mask, dtype=torch.float32)
    out = {"input_ids": torch.cat([prompt, comp], 1), "attention_mask": torch.cat([prompt_mask, comp_mask], 1),
           "loss_mask": loss_mask, "logits_to_keep": c_width,
           "advantages": torch.tensor([s.advantage for s in samples], dtype=torch.float32),
           "weights": torch.tensor([s.weight for s in samples], dtype=torch.float32)}
    if device is not None:
        out = {k: v.to(device) if hasattr(v, "to") else v for k, v in out.items()}
    return out


def token_logprobs(model: Any, input_ids: Any, attention_mask: Any, logits_to_keep: int,
                   temperature: float = 1.0) -> Any:
    """``(B, logits_to_keep)`` log-probabilities of the last ``logits_to_keep`` tokens."""
    try:
        from trl.trainer.utils import selective_log_softmax
    except ImportError:  # trainers that need no TRL (the proposer warm start) run without it
        selective_log_softmax = _selective_log_softmax

    logits = model(input_ids=input_ids, attention_mask=attention_mask, logits_to_keep=logits_to_keep + 1).logits
    logits = logits[:, :-1, :] / (temperature if temperature > 0 else 1.0)
    return selective_log_softmax(logits, input_ids[:, -logits_to_keep:])


def _selective_log_softmax(logits: Any, index: Any) -> Any:
    """``log_softmax(logits)`` at ``index`` along the last axis, one row at a time (TRL's, when it is absent)."""
    import torch

    rows = [torch.gather(r.float().log_softmax(-1), -1, i.unsqueeze(-1)).squeeze(-1) for r, i in zip(logits, index,
                                                                                                     strict=True)]
    return torch.stack(rows)


def _masked(values: Any, mask: Any) -> Any:
    """``values * mask`` that stays finite where the mask is 0 (a padded ``-inf`` log-prob times 0 is NaN)."""
    import torch

    return torch.where(mask > 0, values, torch.zeros_like(values)) * mask


def _reduce(per_token: Any, mask: Any, weights: Any, loss_type: str, total_tokens: float) -> Any:
    per_token = _masked(per_token, mask)
    if loss_type == "grpo":
        per_seq = per_token.sum(1) / mask.sum(1).clamp(min=1.0)
        return (per_seq * weights).sum()
    return (per_token.sum(1) * weights).sum() / max(total_tokens, 1.0)


def policy_loss(logps: Any, old_logps: Any, advantages: Any, mask: Any, *, weights: Any = None,
                ref_logps: Any = None, cfg: UpdateConfig | None = None, total_tokens: float | None = None,
                total_sequences: int | None = None) -> tuple[Any, dict[str, float]]:
    """GRPO's clipped surrogate (plus ``beta`` * k3 KL when ``ref_logps`` is given).

    ``total_tokens`` / ``total_sequences`` normalise over the whole batch when it is split into
    micro-batches (so gradient accumulation equals one big batch).
    """
    import torch

    cfg = cfg or UpdateConfig()
    weights = torch.ones_like(advantages) if weights is None else weights
    ratio = torch.exp(logps - old_logps)
    clipped = torch.clamp(ratio, 1 - cfg.epsilon_low, 1 + cfg.epsilon_high)
    adv = advantages.unsqueeze(1)
    per_token = -torch.min(ratio * adv, clipped * adv)
    kl = None
    if ref_logps is not None and cfg.beta:
        kl = torch.exp(ref_logps - logps) - (ref_logps - logps) - 1
        per_token = per_token + cfg.beta * kl
    n_tok = float(total_tokens if total_tokens is not None else mask.sum().item())
    n_seq = float(total_sequences if total_sequences is not None else logps.shape[0])
    loss = _reduce(per_token, mask, weights, cfg.loss_type, n_tok)
    if cfg.loss_type == "grpo":
        loss = loss / max(n_seq, 1.0)
    with torch.no_grad():
        m = mask.sum().clamp(min=1.0)
        stats = {"clip_ratio": float((((ratio - clipped).abs() > 0).float() * mask).sum() / m),
                 "kl": float(((kl if kl is not None else torch.zeros_like(logps)) * mask).sum() / m)}
    return loss, stats


def nll_loss(logps: Any, mask: Any, *, weights: Any = None, total_tokens: float | None = None) -> Any:
    """Masked negative log-likelihood averaged over trained tokens (of the whole batch if given)."""
    import torch

    weights = torch.ones(logps.shape[0], device=logps.device) if weights is None else weights
    n_tok = float(total_tokens if total_tokens is not None else mask.sum().item())
    return -(_masked(logps, mask).sum(1) * weights).sum() / max(n_tok, 1.0)


def reference_logprobs(model: Any, ref_model: Any = None) -> Callable[[dict[str, Any], float], Any]:
    """Log-probabilities under the reference policy: ``ref_model``, or ``model`` with its LoRA adapter off."""
    import torch

    def ref(batch: dict[str, Any], temperature: float) -> Any:
        with torch.no_grad():
            if ref_model is not None:
                return token_logprobs(ref_model, batch["input_ids"], batch["attention_mask"],
                                      batch["logits_to_keep"], temperature)
            with model.disable_adapter():
                return token_logprobs(model, batch["input_ids"], batch["attention_mask"], batch["logits_to_keep"],
                                      temperature)

    return ref


def update(model: Any, optimizer: Any, samples: Sequence[Sample], *, pad_id: int, cfg: UpdateConfig,
           objective: str = "policy", reference: Callable[[dict[str, Any], float], Any] | None = None,
           backward: Callable[[Any], None] | None = None, seed: int = 0) -> dict[str, float]:
    """The optimizer steps over ``samples`` (``objective``: ``policy`` or ``nll``); returns statistics.

    One step on the whole batch, unless ``cfg.num_iterations`` or ``cfg.steps_per_generation`` ask for more
    (the module docstring). Then the log-probabilities of the policy as it was before the first step are
    computed once, every step's ratio is taken against them, and the mini-batches are shuffled with
    ``cfg.seed`` and ``seed`` (pass a round number, so rounds differ).

    The statistics: ``samples`` and ``trained_tokens`` of the batch, ``steps`` (optimizer steps taken),
    ``skipped`` (steps left out, below), and the mean over steps of ``loss``, ``grad_norm``, ``clip_ratio``
    and ``kl``.

    A step whose gradient norm is not finite is skipped (``stats["skipped"]`` counts them), as mixed-precision
    trainers skip an overflowed step: one inf gradient would otherwise turn every weight into NaN.

    ``reference(batch, temperature)`` gives reference log-probabilities for the KL penalty
    (:func:`reference_logprobs`; only used when ``cfg.beta`` is not 0).
    """
    import random

    samples = [s for s in samples if s.trained_tokens > 0 and (objective == "nll" or s.advantage != 0.0)]
    stats: dict[str, float] = {"loss": 0.0, "samples": float(len(samples)), "trained_tokens": 0.0,
                               "grad_norm": 0.0, "clip_ratio": 0.0, "kl": 0.0, "skipped": 0.0, "steps": 0.0}
    if not samples:
        return stats
    stats["trained_tokens"] = float(sum(s.trained_tokens for s in samples))
    parts = min(cfg.steps_per_generation, len(samples))
    if cfg.num_iterations == 1 and parts == 1:
        return _step(model, optimizer, samples, None, pad_id=pad_id, cfg=cfg, objective=objective,
                     reference=reference, backward=backward, into=stats)
    old = _old_logprobs(model, samples, pad_id, cfg) if objective != "nll" else [None] * len(samples)
    rng = random.Random(stable_seed(cfg.seed, seed))
    steps: list[dict[str, float]] = []
    for _ in range(cfg.num_iterations):
        order = rng.sample(range(len(samples)), len(samples))
        for k in range(parts):
            idx = order[k::parts]
            steps.append(_step(model, optimizer, [samples[i] for i in idx], [old[i] for i in idx], pad_id=pad_id,
                               cfg=cfg, objective=objective, reference=reference, backward=backward))
    for key in ("loss", "grad_norm", "clip_ratio", "kl"):
        finite = [st[key] for st in steps if math.isfinite(st[key])]
        stats[key] = sum(finite) / len(finite) if finite else float("nan")
    stats["skipped"] = sum(st["skipped"] for st in steps)
    stats["steps"] = sum(st["steps"] for st in steps)
    return stats


def _old_logprobs(model: Any, samples: Sequence[Sample], pad_id: int, cfg: UpdateConfig) -> list[Any]:
    """Per sample, the log-probabilities of its completion under the policy as it is now (no gradient)."""
    import torch

    device = next(model.parameters()).device
    out: list[Any] = [None] * len(samples)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=cfg.autocast_bf16)
    model.train()  # the mode the steps take their log-probabilities in
    with torch.no_grad():
        for idx in micro_batches(shapes_of(samples), cfg.micro_batch_size, cfg.max_batch_tokens):
            batch = pad_batch([samples[i] for i in idx], pad_id, device)
            with autocast:
                logps = token_logprobs(model, batch["input_ids"], batch["attention_mask"], batch["logits_to_keep"],
                                       cfg.temperature).float()
            for row, i in enumerate(idx):
                out[i] = logps[row, :len(samples[i].completion_ids)].detach()
    return out


def _step(model: Any, optimizer: Any, samples: Sequence[Sample], old: Sequence[Any] | None, *, pad_id: int,
          cfg: UpdateConfig, objective: str, reference: Callable[[dict[str, Any], float], Any] | None,
          backward: Callable[[Any], None] | None, into: dict[str, float] | None = None) -> dict[str, float]:
    """One optimizer step over ``samples`` (gradient accumulation over micro-batches); ``old[i]``: sample
    ``i``'s log-probabilities to take the ratio against (None: the current ones, a ratio of 1)."""
    import torch

    stats = into if into is not None else {"loss": 0.0, "grad_norm": 0.0, "clip_ratio": 0.0, "kl": 0.0,
                                           "skipped": 0.0, "steps": 0.0}
    device = next(model.parameters()).device
    total_tokens = float(sum(s.trained_tokens for s in samples))
    model.train()
    optimizer.zero_grad(set_to_none=True)
    chunks = micro_batches(shapes_of(samples), cfg.micro_batch_size, cfg.max_batch_tokens)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=cfg.autocast_bf16)
    for idx in chunks:
        batch = pad_batch([samples[i] for i in idx], pad_id, device)
        with autocast:  # the forward passes only; the loss and the backward run outside it, as torch advises
            logps = token_logprobs(model, batch["input_ids"], batch["attention_mask"], batch["logits_to_keep"],
                                   cfg.temperature)
            ref = reference(batch, cfg.temperature) if objective != "nll" and cfg.beta and reference is not None \
                else None
        logps = logps.float()
        mask = batch["loss_mask"]
        if objective == "nll":
            loss = nll_loss(logps, mask, weights=batch["weights"], total_tokens=total_tokens)
            part: dict[str, float] = {}
        else:
            old_logps = logps.detach()
            if old is not None:
                old_logps = old_logps.clone()
                for row, i in enumerate(idx):
                    old_logps[row, :old[i].shape[0]] = old[i]
            loss, part = policy_loss(logps, old_logps, batch["advantages"], mask, weights=batch["weights"],
                                     ref_logps=None if ref is None else ref.float(), cfg=cfg,
                                     total_tokens=total_tokens, total_sequences=len(samples))
        (backward or (lambda t: t.backward()))(loss)
        stats["loss"] += float(loss.detach())
        share = float(mask.sum()) / total_tokens
        for k, v in part.items():
            stats[k] += v * share
    params = [p for p in model.parameters() if p.requires_grad]
    norm = torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
    finite = math.isfinite(float(norm))
    stats["grad_norm"] = float(norm) if finite else float("nan")
    if finite:
        optimizer.step()
        stats["steps"] += 1.0
    else:
        stats["skipped"] += 1.0
    optimizer.zero_grad(set_to_none=True)
    return stats

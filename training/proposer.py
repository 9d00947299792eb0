"""The proposer warm start: supervised fine-tuning on (document excerpt → blueprint) pairs.

``envwright train proposer --config FILE`` teaches the policy to write what an AST writer writes
(:func:`envgen.proposers.pairs.teaching_pairs`). ``proposer_sft.structure`` picks which:

* ``blueprint`` (the default): v1 blueprints of the template AST writer, under the prompt the blueprint
  stream sends (:func:`envgen.proposers.template.prompt.build_blueprint_messages`);
* ``world``: world blueprints (blueprint_version 2) of the AST world writer, under the prompt the world
  stream sends (:func:`envgen.proposers.world.prompt.build_world_messages`); the pairs are several times
  longer (``proposer-world-smollm2`` raises ``max_length``).

Either way the prompt is exactly the one the model proposer sends for that structure and the target
exactly the compact JSON that constrained decoding produces, so the trained model is used as it was
trained (``envwright generate --proposer llm --structure STRUCTURE``). Only the blueprint's tokens (and
the end-of-sequence token) carry loss. Both structures take the same path here: the same document
selection, the same held-out split, the same run folder.

The run folder (``run.output_dir``) holds:

* ``model/``: the fine-tuned weights and tokenizer as a Hugging Face folder, which
  every backend loads (``transformers``; ``vllm`` and an OpenAI-compatible server
  such as ``vllm serve`` take the folder too);
* ``holdout.json``: the structure, the held-out documents (never trained on), the split that
  ``envwright bench proposer`` scores on;
* ``metrics.jsonl``: the loss of every step; ``summary.json``: the structure, pair counts,
  the held-out loss before and after, times.

A run never overwrites another: an existing ``model/`` is refused unless
``overwrite=True`` (``--overwrite``); the model is written to a temporary folder and renamed into place.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from pathlib import Path
from typing import Any

from envgen.proposers.pairs import TeachingPair, split_documents, teaching_pairs
from gym_envs.spec import atomic_write_text
from training.config import TrainConfig
from training.errors import ConfigError
from training.loss import Sample, UpdateConfig, drop_too_long, update

__all__ = ["pair_samples", "train_proposer"]


def pair_samples(pairs: list[TeachingPair], tokenizer: Any, max_length: int) -> tuple[list[Sample], int]:
    """Tokenised pairs (the chat template with a generation prompt, then the target and EOS); and how many
    were longer than ``max_length`` (``proposer_sft.max_length``, at most the model's context window) and skipped,
    with a warning (:func:`training.loss.drop_too_long`)."""
    out: list[Sample] = []
    eos = tokenizer.eos_token_id
    for p in pairs:
        text = tokenizer.apply_chat_template(p.messages, add_generation_prompt=True, tokenize=False)
        prompt = list(tokenizer(text, add_special_tokens=False)["input_ids"])
        target = list(tokenizer(p.target, add_special_tokens=False)["input_ids"]) + ([eos] if eos is not None else [])
        out.append(Sample(prompt, target, [1] * len(target), role="proposer", meta={"doc_id": p.doc_id}))
    return drop_too_long(out, max_length, what="teaching pairs",
                         fix="shorten the excerpts (proposer_sft.excerpt_tokens) or raise proposer_sft.max_length, up "
                             "to the model's context window")


def _mean_loss(model: Any, samples: list[Sample], pad_id: int, micro: int) -> float | None:
    """Mean per-token NLL of ``samples`` (no gradient)."""
    if not samples:
        return None
    import torch

    from training.loss import nll_loss, pad_batch, token_logprobs

    device = next(model.parameters()).device
    model.eval()
    total, tokens = 0.0, 0.0
    with torch.no_grad():
        for i in range(0, len(samples), micro):
            batch = pad_batch(samples[i:i + micro], pad_id, device)
            logps = token_logprobs(model, batch["input_ids"], batch["attention_mask"], batch["logits_to_keep"], 1.0)
            n = float(batch["loss_mask"].sum())
            total += float(nll_loss(logps.float(), batch["loss_mask"], total_tokens=n)) * n
            tokens += n
    return total / tokens if tokens else None


def _documents(cfg: TrainConfig) -> list[Any]:
    from corpora import SelectConfig, load_corpus, select_documents

    sft = cfg.proposer_sft
    sel = SelectConfig(min_stateful_score=0.0, sample=sft.docs, seed=cfg.run.seed, dedup="exact")
    return select_documents(load_corpus(sft.corpus), sel)


def train_proposer(cfg: TrainConfig, *, overwrite: bool = False, progress: bool = True) -> dict[str, Any]:
    """Run the proposer warm start (see the module docstring); returns the summary."""
    import torch
    from tqdm.auto import tqdm

    from training.model import context_window, load_policy

    sft = cfg.proposer_sft
    out = Path(cfg.run.output_dir)
    model_dir = out / "model"
    if model_dir.exists() and not overwrite:
        raise ConfigError(f"{model_dir} already holds a trained proposer; choose another run.output_dir "
                          "(--output-dir) or pass --overwrite")
    t0 = time.perf_counter()
    docs = _documents(cfg)
    train_docs, held_docs = split_documents(docs, sft.holdout, cfg.run.seed)
    model, tok = load_policy(cfg, wrap_lora=True)

    def count(text: str) -> int:
        return len(tok(text, add_special_tokens=False)["input_ids"])

    train_pairs, unreadable = teaching_pairs(train_docs, seed=cfg.run.seed, excerpt_tokens=sft.excerpt_tokens,
                                             counter=count, structure=sft.structure)
    held_pairs, _ = teaching_pairs(held_docs, seed=cfg.run.seed, excerpt_tokens=sft.excerpt_tokens, counter=count,
                                   structure=sft.structure)
    window = context_window(model, tok)
    limit = min(sft.max_length, window) if window is not None else sft.max_length
    samples, too_long = pair_samples(train_pairs, tok, limit)
    held_samples, _ = pair_samples(held_pairs, tok, limit)
    if not samples:
        by_config = window is None or limit < window
        bound = f"proposer_sft.max_length={limit}" if by_config else f"the model's context window of {limit}"
        fix = ("use a Python corpus" if not too_long else "raise proposer_sft.max_length" if by_config
               else "lower proposer_sft.excerpt_tokens, or train a model with a longer context window")
        raise ConfigError(f"no training pairs: of the {len(train_docs)} training documents of {sft.corpus!r}, the "
                          f"AST writer read {len(train_pairs)} ({sft.structure} structure) and {too_long} of those "
                          f"were longer than {bound} tokens ({fix})")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "holdout.json", json.dumps({
        "structure": sft.structure, "corpus": sft.corpus, "seed": cfg.run.seed, "holdout": sft.holdout,
        "docs": sft.docs, "held_out": [str(d.id) for d in held_docs],
        "trained": [s.meta["doc_id"] for s in samples]}, indent=1))
    ucfg = UpdateConfig(micro_batch_size=sft.micro_batch_size, autocast_bf16=cfg.model.dtype == "bf16-mixed",
                        max_batch_tokens=cfg.model.micro_batch_tokens)
    held_before = _mean_loss(model, held_samples, tok.pad_token_id, sft.micro_batch_size)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=sft.learning_rate)
    rng = random.Random(cfg.run.seed)
    steps_per_epoch = -(-len(samples) // sft.batch_size)
    losses: list[float] = []
    skipped_steps = 0
    with (out / "metrics.jsonl").open("w", encoding="utf-8") as log, \
            tqdm(total=sft.epochs * steps_per_epoch, desc=f"proposer warm start (SFT on {sft.structure} blueprints)",
                 unit="step", disable=not progress) as bar:
        for epoch in range(sft.epochs):
            order = rng.sample(range(len(samples)), len(samples))
            for i in range(0, len(order), sft.batch_size):
                stats = update(model, opt, [samples[j] for j in order[i:i + sft.batch_size]], pad_id=tok.pad_token_id,
                               cfg=ucfg, objective="nll")
                losses.append(stats["loss"])
                skipped_steps += int(stats["skipped"])
                log.write(json.dumps({"step": len(losses), "epoch": epoch, "loss": stats["loss"],
                                      "grad_norm": stats["grad_norm"], "trained_tokens": stats["trained_tokens"]})
                          + "\n")
                bar.set_postfix(loss=f"{stats['loss']:.3f}")
                bar.update()
    held_after = _mean_loss(model, held_samples, tok.pad_token_id, sft.micro_batch_size)
    tmp = out / ".model.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    to_save = model.merge_and_unload() if hasattr(model, "merge_and_unload") else model
    to_save.save_pretrained(str(tmp))
    tok.save_pretrained(str(tmp))
    if model_dir.exists():
        shutil.rmtree(model_dir)
    tmp.rename(model_dir)
    summary = {"model": str(model_dir), "structure": sft.structure, "documents": len(docs),
               "train_documents": len(train_docs), "held_out_documents": len(held_docs), "train_pairs": len(samples),
               "unreadable_documents": len(unreadable), "too_long": too_long, "held_out_pairs": len(held_samples),
               "epochs": sft.epochs, "steps": len(losses), "skipped_steps": skipped_steps,
               "first_loss": losses[0] if losses else None, "last_loss": losses[-1] if losses else None,
               "held_out_loss_before": held_before, "held_out_loss_after": held_after,
               "seconds": round(time.perf_counter() - t0, 1)}
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=1))
    return summary

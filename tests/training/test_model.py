"""Loading the policy (LoRA option, checkpoints of adapters), the update with a KL penalty, the policy backend."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from training.config import config_from_dict
from training.loss import Sample, UpdateConfig, reference_logprobs, update


def test_lora_policy_update_with_kl_and_adapter_checkpoint(tmp_path: Path, tiny_dir: Path) -> None:
    pytest.importorskip("peft")
    import torch

    from training.checkpoint import save_checkpoint
    from training.model import load_policy

    cfg = config_from_dict({"model": {"name_or_path": str(tiny_dir), "device": "cpu", "lora_r": 4,
                                      "lora_target_modules": ["q_proj", "v_proj"]}})
    model, tok = load_policy(cfg)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    samples = [Sample([5, 6, 7], [8, 9, 10, 11], [1, 0, 1, 1], advantage=1.0),
               Sample([5, 6], [12, 13], [1, 1], advantage=-1.0, role="proposer")]
    stats = update(model, opt, samples, pad_id=tok.pad_token_id,
                   cfg=UpdateConfig(micro_batch_size=1, beta=0.1), reference=reference_logprobs(model))
    assert stats["samples"] == 2 and stats["trained_tokens"] == 5 and stats["grad_norm"] > 0
    stats = update(model, opt, samples, pad_id=tok.pad_token_id, cfg=UpdateConfig(beta=0.1),
                   reference=reference_logprobs(model))
    assert stats["kl"] > 0  # the adapter moved away from the base model
    ck = save_checkpoint(tmp_path, 0, model=model, tokenizer=tok, optimizer=opt, trainer="test")
    assert (ck / "model" / "adapter_config.json").is_file()
    again, _ = load_policy(cfg, str(ck / "model"))
    a = dict(model.named_parameters())
    b = dict(again.named_parameters())
    name = trainable[0]
    assert torch.equal(a[name].detach(), b[name].detach())


def test_zero_advantage_and_env_only_samples_are_skipped(tiny_dir: Path, tokenizer: Any) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    stats = update(model, opt, [Sample([1], [2, 3], [1, 1], advantage=0.0), Sample([1], [2], [0], advantage=1.0)],
                   pad_id=tokenizer.pad_token_id, cfg=UpdateConfig())
    assert stats["samples"] == 0
    with pytest.raises(ValueError, match="loss_mask"):
        Sample([1], [2, 3], [1])
    with pytest.raises(ValueError, match="loss_type"):
        UpdateConfig(loss_type="dr_grpo")


def test_masked_minus_inf_logprobs_stay_finite() -> None:
    import torch

    from training.loss import nll_loss, policy_loss

    logps = torch.tensor([[-0.5, float("-inf")], [-1.0, -2.0]])
    mask = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    assert torch.isclose(nll_loss(logps, mask), torch.tensor(3.5 / 3))
    for loss_type in ("grpo", "dapo"):
        loss, _ = policy_loss(logps, logps, torch.tensor([1.0, -1.0]), mask, cfg=UpdateConfig(loss_type=loss_type))
        assert torch.isfinite(loss)


def test_a_step_with_a_non_finite_gradient_is_skipped(tiny_dir: Path, tokenizer: Any) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt = torch.optim.AdamW(model.parameters(), lr=0.1)
    samples = [Sample([5, 6], [7, 8], [1, 1])]

    def overflow(loss: Any) -> None:  # an overflowed backward: one gradient entry is inf
        loss.backward()
        next(p for p in model.parameters() if p.grad is not None).grad.view(-1)[0] = float("inf")

    stats = update(model, opt, samples, pad_id=tokenizer.pad_token_id, cfg=UpdateConfig(), objective="nll",
                   backward=overflow)
    assert stats["skipped"] == 1.0
    assert all(torch.equal(p.detach(), before[n]) for n, p in model.named_parameters())
    stats = update(model, opt, samples, pad_id=tokenizer.pad_token_id, cfg=UpdateConfig(), objective="nll")
    assert stats["skipped"] == 0.0 and any(not torch.equal(p.detach(), before[n])
                                           for n, p in model.named_parameters())


def test_update_under_bf16_autocast_keeps_fp32_weights(tiny_dir: Path, tokenizer: Any) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_dir, dtype=torch.float32)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    seen: list[Any] = []
    model.register_forward_hook(lambda mod, inp, out: seen.append(out.logits.dtype))
    samples = [Sample([5, 6], [7, 8, 9], [1, 1, 1], advantage=1.0), Sample([5], [10, 11], [1, 1], advantage=-1.0)]
    stats = update(model, opt, samples, pad_id=tokenizer.pad_token_id, cfg=UpdateConfig(autocast_bf16=True))
    assert seen and all(d == torch.bfloat16 for d in seen)  # the forward ran in bf16 ...
    assert stats["skipped"] == 0.0 and math.isfinite(stats["loss"])
    assert all(p.dtype == torch.float32 for p in model.parameters())  # ... the weights stay fp32 and move
    assert any(not torch.equal(p.detach(), before[n]) for n, p in model.named_parameters())


def test_policy_backend_records_tokens(tokenizer: Any, chat: Any) -> None:
    from envgen.proposers.llm import LLMProposer
    from training.generation import PolicyBackend, ScriptedGenerator

    backend = PolicyBackend(ScriptedGenerator(tokenizer, lambda ctx: '{"not": "a spec"}'), chat, model_id="runs/x")
    proposer = LLMProposer(backend, n_examples=0, excerpt_tokens=20, system_prompt="Write a spec.")
    [p] = proposer.propose_batch(["class Stack:\n    def push(self, x): ..."], seed=0)
    assert p.spec is None and p.error
    rec = backend.record_for(p.raw)
    assert rec is not None and rec.completion_ids[-1] == chat.eos_id
    assert tokenizer.decode(rec.completion_ids[:-1]) == p.raw
    assert backend.model_id == "x" and proposer.generator == "llm:x"
    assert len(backend.take_records()) == 1 and backend.records == []


def _counting_optimizer(model: Any, lr: float) -> tuple[Any, list[int]]:
    """SGD that counts its ``step`` calls (one per optimizer step the update takes)."""
    import torch

    opt = torch.optim.SGD(model.parameters(), lr=lr)
    calls: list[int] = []
    step = opt.step

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return step(*args, **kwargs)

    opt.step = counted  # type: ignore[method-assign]
    return opt, calls


def test_one_update_is_one_step_on_the_whole_batch_by_default(tiny_dir: Path, tokenizer: Any) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    opt, calls = _counting_optimizer(model, 0.1)
    samples = [Sample([1, 2], [3, 4, 5], [1, 1, 1], advantage=a) for a in (1.0, -1.0, 0.5, -0.5)]
    stats = update(model, opt, samples, pad_id=tokenizer.pad_token_id, cfg=UpdateConfig(micro_batch_size=1))
    assert len(calls) == 1 and stats["steps"] == 1 and stats["samples"] == 4
    assert stats["clip_ratio"] == 0.0  # the ratio is 1: the policy that sampled is the one being stepped


def test_iterations_and_mini_batches_take_that_many_steps_against_the_old_policy(tiny_dir: Path,
                                                                                  tokenizer: Any) -> None:
    """μ = 2 passes of 3 mini-batches: 6 optimizer steps; after the first the ratio moves away from 1, so the
    clipped surrogate clips (a large step size makes it certain), and the same seed gives the same weights."""
    import torch
    from transformers import AutoModelForCausalLM

    samples = [Sample([1, 2], [3, 4, 5, 6], [1, 1, 0, 1], advantage=a) for a in (2.0, -2.0, 1.0, -1.0, 1.5, -1.5)]
    cfg = UpdateConfig(micro_batch_size=2, num_iterations=2, steps_per_generation=3, epsilon_low=0.01,
                       epsilon_high=0.01)
    weights = []
    for _ in range(2):
        model = AutoModelForCausalLM.from_pretrained(tiny_dir)
        opt, calls = _counting_optimizer(model, 0.5)
        stats = update(model, opt, samples, pad_id=tokenizer.pad_token_id, cfg=cfg, seed=3)
        assert len(calls) == 6 and stats["steps"] == 6 and stats["skipped"] == 0
        assert stats["samples"] == 6 and stats["trained_tokens"] == 18
        assert stats["clip_ratio"] > 0 and math.isfinite(stats["loss"])
        weights.append(next(model.parameters()).detach().clone())
    assert torch.equal(weights[0], weights[1])
    # more mini-batches than samples: one step per sample
    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    opt, calls = _counting_optimizer(model, 0.1)
    few = update(model, opt, samples[:2], pad_id=tokenizer.pad_token_id,
                 cfg=UpdateConfig(steps_per_generation=4), seed=0)
    assert len(calls) == 2 and few["steps"] == 2
    with pytest.raises(ValueError, match="num_iterations"):
        UpdateConfig(num_iterations=0)


def test_the_update_schedule_comes_from_the_grpo_section() -> None:
    """``grpo.num_iterations`` and ``grpo.steps_per_generation`` (over ``gradient_accumulation_steps``, as in
    TRL) reach the self-play update, although its GRPOConfig derives a generation batch of its own."""
    from training.config import config_from_dict
    from training.loss import update_config
    from training.trl_config import to_grpo_config

    cfg = config_from_dict({"model": {"device": "cpu"}, "grpo": {"num_iterations": 2, "steps_per_generation": 4,
                                                                   "per_device_train_batch_size": 8}})
    grpo = to_grpo_config(cfg, "/tmp/x", for_trl=False)
    u = update_config(grpo, 0.8, steps_per_generation=cfg.grpo.get("steps_per_generation"))
    assert (u.num_iterations, u.steps_per_generation) == (2, 4)
    cfg = config_from_dict({"model": {"device": "cpu"}, "grpo": {"steps_per_generation": 4,
                                                                   "gradient_accumulation_steps": 2}})
    grpo = to_grpo_config(cfg, "/tmp/x", for_trl=False)
    assert update_config(grpo, 0.8, steps_per_generation=4).steps_per_generation == 2
    assert update_config(grpo, 0.8).steps_per_generation == 1  # unset: one step on the whole batch


def test_micro_batches_cap_rows_and_padded_tokens() -> None:
    from training.loss import micro_batches

    shapes = [(20, 10), (3, 2), (2, 10), (6, 1), (90, 10), (1, 5)]
    assert micro_batches(shapes, rows=4) == [[1, 5, 3, 2], [0, 4]]  # shortest first, 4 rows a batch
    capped = micro_batches(shapes, rows=4, tokens=24)
    assert sorted(i for b in capped for i in b) == list(range(6))
    for batch in capped:  # padded as pad_batch pads: the longest prompt plus the longest completion, times rows
        width = max(shapes[i][0] for i in batch) + max(shapes[i][1] for i in batch)
        assert len(batch) == 1 or width * len(batch) <= 24
    assert [4] in capped and [0] in capped  # longer than the cap: alone
    with pytest.raises(ValueError, match="rows"):
        micro_batches(shapes, rows=0)
    with pytest.raises(ValueError, match="max_batch_tokens"):
        UpdateConfig(max_batch_tokens=0)


def test_a_token_cap_splits_the_forward_passes_but_not_the_update(tiny_dir: Path, tokenizer: Any) -> None:
    """The same samples and seed with and without ``max_batch_tokens``: the capped update runs more, smaller
    forward passes (none over the cap unless one sample is), and ends at the same weights."""
    import torch
    from transformers import AutoModelForCausalLM

    samples = [Sample(list(range(1, 2 + n)), [3, 4, 5, 6][: 1 + n % 4], [1] * (1 + n % 4), advantage=(-1.0) ** n * n)
               for n in range(1, 7)]
    ends = []
    for cap in (None, 12):
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_pretrained(tiny_dir)
        shapes: list[tuple[int, int]] = []
        forward = model.forward

        def seen(*args: Any, _f: Any = forward, _s: list[tuple[int, int]] = shapes, **kwargs: Any) -> Any:
            _s.append(tuple(kwargs["input_ids"].shape))
            return _f(*args, **kwargs)

        model.forward = seen  # type: ignore[method-assign]
        opt, _ = _counting_optimizer(model, 0.1)
        cfg = UpdateConfig(micro_batch_size=8, num_iterations=2, steps_per_generation=1, max_batch_tokens=cap)
        update(model, opt, samples, pad_id=tokenizer.pad_token_id, cfg=cfg, seed=1)
        if cap is None:
            assert {s[0] for s in shapes} == {6}  # one batch of all six, each pass
        else:
            assert len(shapes) > 3 and all(rows * width <= cap or rows == 1 for rows, width in shapes)
        ends.append([p.detach().clone() for p in model.parameters()])
    for a, b in zip(*ends, strict=True):
        assert torch.allclose(a, b, atol=1e-5, rtol=1e-4)

"""training.attention: grouped-query attention with repeated key/value heads gives SDPA's outputs and gradients,
and is chosen only for fp32 weights without autocast on CUDA, for a model with grouped-query attention."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from training.attention import SDPA_REPEAT_KV, attention_for, register_attention, sdpa_repeat_kv


def _gqa(heads: int = 4, kv: int = 2) -> types.SimpleNamespace:
    return types.SimpleNamespace(num_attention_heads=heads, num_key_value_heads=kv)


@pytest.mark.parametrize(("device", "weights", "autocast", "config", "want"), [
    ("cuda", "float32", False, _gqa(), SDPA_REPEAT_KV),
    ("cuda:1", "float32", False, _gqa(9, 3), SDPA_REPEAT_KV),
    ("cuda", "float32", True, _gqa(), None),       # bf16-mixed: autocast reaches the flash kernel
    ("cuda", "bfloat16", False, _gqa(), None),     # flash takes GQA in bf16
    ("cpu", "float32", False, _gqa(), None),       # CPU: unchanged
    ("cuda", "float32", False, _gqa(4, 4), None),  # no grouped-query attention
    ("cuda", "float32", False, types.SimpleNamespace(num_attention_heads=4), None),
])
def test_it_is_chosen_only_where_the_math_kernel_would_run(device: str, weights: str, autocast: bool, config: object,
                                                           want: str | None) -> None:
    assert attention_for(config, device=device, weights_dtype=weights, autocast=autocast) == want


def test_outputs_gradients_and_decoding_match_sdpa(tiny_dir: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    register_attention()
    register_attention()  # idempotent
    models = {}
    for impl in ("sdpa", SDPA_REPEAT_KV):
        torch.manual_seed(0)
        models[impl] = AutoModelForCausalLM.from_pretrained(tiny_dir, dtype=torch.float32, attn_implementation="sdpa")
        models[impl].set_attn_implementation(impl)
    cfg = models["sdpa"].config
    assert cfg.num_key_value_heads < cfg.num_attention_heads  # the tiny model has grouped-query attention
    ids = torch.randint(3, cfg.vocab_size, (2, 23), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[1, :5] = 0  # one left-padded row: transformers passes a mask, and the other path runs too
    for attention_mask in (None, mask):
        outs = {}
        for impl, model in models.items():
            model.zero_grad()
            logits = model(input_ids=ids, attention_mask=attention_mask).logits
            logits.float().logsumexp(-1).mean().backward()
            grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
            outs[impl] = (logits.detach(), grads)
        torch.testing.assert_close(outs["sdpa"][0], outs[SDPA_REPEAT_KV][0], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(outs["sdpa"][1], outs[SDPA_REPEAT_KV][1], rtol=1e-4, atol=1e-5)
    greedy = {impl: m.generate(ids[:1], max_new_tokens=8, do_sample=False, pad_token_id=0)
              for impl, m in models.items()}
    assert torch.equal(greedy["sdpa"], greedy[SDPA_REPEAT_KV])


def test_a_decoding_step_is_left_to_sdpa() -> None:
    """One query token (decoding): the key/value heads are not repeated; transformers' own GQA handling runs."""
    import torch

    seen = {}
    module = types.SimpleNamespace(num_key_value_groups=2, is_causal=True)
    q, k, v = torch.randn(1, 4, 1, 8), torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8)
    out, _ = sdpa_repeat_kv(module, q, k, v, None)
    seen["decode"] = out.shape
    q2 = torch.randn(1, 4, 5, 8)
    out2, _ = sdpa_repeat_kv(module, q2, k, v, None)
    ref = torch.nn.functional.scaled_dot_product_attention(q2, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1),
                                                           is_causal=True).transpose(1, 2)
    torch.testing.assert_close(out2, ref)
    assert seen["decode"] == (1, 1, 4, 8)

"""Attention for full-precision training on a GPU: grouped-query attention that keeps SDPA's memory-efficient kernel.

A model with grouped-query attention (SmolLM2: 9 query heads, 3 key/value heads) asks PyTorch's
``scaled_dot_product_attention`` for ``enable_gqa`` whenever no attention mask is passed, which is every
unpadded training sequence. In fp32 on CUDA the flash kernel is not available, and the kernel left that takes
``enable_gqa`` is the math one, which writes out each layer's whole ``heads x length x length`` attention matrix
and keeps it for the backward pass: on an 80 GB H100 one 9,300-token SmolLM2 trajectory ran out of memory
(3.1 GiB per layer). Repeating the key/value heads first (what transformers does itself when a mask is
passed) lets SDPA take the memory-efficient kernel, whose memory grows with the length, not its square.

:data:`SDPA_REPEAT_KV` names that attention in transformers' ``AttentionInterface``; :func:`training.model.load_policy`
picks it (:func:`attention_for`) only for fp32 weights without autocast on CUDA, for a model with
grouped-query attention, when ``model.attn_implementation`` is unset. Decoding steps (one query token) and every
other case go to transformers' own ``sdpa`` unchanged, so the outputs are SDPA's, to rounding.
"""

from __future__ import annotations

import types
from typing import Any

__all__ = ["SDPA_REPEAT_KV", "attention_for", "register_attention", "sdpa_repeat_kv"]

SDPA_REPEAT_KV = "sdpa_repeat_kv"


def sdpa_repeat_kv(module: Any, query: Any, key: Any, value: Any, attention_mask: Any, **kwargs: Any) -> Any:
    """The SDPA attention of transformers with the key/value heads repeated to the query heads for a prefill or training
    pass (more than one query token), so that no ``enable_gqa`` call pins it to the math kernel."""
    from transformers.integrations.sdpa_attention import repeat_kv, sdpa_attention_forward

    groups = int(getattr(module, "num_key_value_groups", 1) or 1)
    if groups > 1 and query.shape[2] > 1:
        key, value = repeat_kv(key, groups), repeat_kv(value, groups)
        module = types.SimpleNamespace(is_causal=getattr(module, "is_causal", True), num_key_value_groups=1)
    return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)


def register_attention() -> None:
    """Register :data:`SDPA_REPEAT_KV` with transformers (idempotent)."""
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import sdpa_mask

    AttentionInterface.register(SDPA_REPEAT_KV, sdpa_repeat_kv)
    AttentionMaskInterface.register(SDPA_REPEAT_KV, sdpa_mask)  # the masks SDPA takes


def attention_for(config: Any, *, device: str, weights_dtype: str, autocast: bool) -> str | None:
    """:data:`SDPA_REPEAT_KV` where it saves memory (see the module docstring), else None (the model's default)."""
    heads = getattr(config, "num_attention_heads", None)
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    if not str(device).startswith("cuda") or weights_dtype != "float32" or autocast:
        return None
    return SDPA_REPEAT_KV if heads and kv_heads and kv_heads < heads else None

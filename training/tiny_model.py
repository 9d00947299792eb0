"""A tiny Qwen3 causal LM with a real byte-level BPE tokenizer and the Qwen3 chat template.

:func:`build_tiny_qwen3` writes a model directory that ``from_pretrained(path)``
loads like any hub checkpoint (``AutoModelForCausalLM`` and ``AutoTokenizer``),
in about a second on a CPU: hidden size 64, 2 layers, 4 attention heads (2 KV
heads, head dim 16), a vocabulary of a few hundred tokens trained with
``tokenizers`` on a small built-in text. The tokenizer knows the Qwen special
tokens (``<|im_start|>``, ``<|im_end|>``, ``<|endoftext|>``, ``<think>``,
``</think>``, ``<tool_call>``, ``</tool_call>``) and carries TRL's bundled
``qwen3.jinja`` chat template (tools supported), so chat formatting, tool
schemas, left padding and generation behave as with a real Qwen3 checkpoint.
Weights are random but seeded: two builds are identical.

Used by the bundled ``smoke-cpu`` config (``model.name_or_path: runs/tiny-qwen3``,
built on first use by ``envwright train``; ``envwright train tiny-model`` builds
it explicitly) and by the backend, trainer and policy tests. Needs the
``[train]`` extra (torch, transformers, tokenizers, trl).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["SPECIAL_TOKENS", "TINY_MODEL_NAME", "build_tiny_qwen3", "is_tiny_model_path", "qwen3_chat_template"]

#: The folder name that ``envwright train`` builds on demand when a config names it and it is missing.
TINY_MODEL_NAME = "tiny-qwen3"


def is_tiny_model_path(name_or_path: str) -> bool:
    """Whether ``name_or_path`` is a local tiny-model folder (``.../tiny-qwen3``) that is not built yet."""
    p = Path(name_or_path).expanduser()
    return p.name == TINY_MODEL_NAME and not (p / "config.json").is_file()

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ADDED_TOKENS = ["<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]

_CORPUS = """\
<|im_start|>system
You are a helpful assistant that calls tools.<|im_end|>
<|im_start|>user
Member 7 wants to borrow 'Dune'. Do it.<|im_end|>
<|im_start|>assistant
<think>
I should find the book first.
</think>

<tool_call>
{"name": "find_book", "arguments": {"title": "Dune"}}
</tool_call><|im_end|>
{"spec_version": 1, "id": "library-loans", "title": "a library", "tools": [{"name": "borrow_book",
"parameters": {"type": "object", "properties": {"member_id": {"type": "integer"}}, "required": []}}],
"tasks": [{"id": "t0", "kind": "execute", "turns": [{"instruction": "Return the book.", "checks":
[{"kind": "sql", "query": "SELECT count(*) FROM loans WHERE member_id = 7", "expect": [[1]]}]}]}]}
def borrow_book(db, member_id, book_id):
    rows = db.query("SELECT copies FROM books WHERE id = ?", (book_id,))
    if not rows:
        raise ToolError("no such book")
    db.execute("INSERT INTO loans (book_id, member_id) VALUES (?, ?)", (book_id, member_id))
    return {"ok": True, "count": 3, "items": [1, 2, 3], "name": None}
CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT NOT NULL, copies INTEGER);
INSERT INTO books (id, title, copies) VALUES (1, 'Dune', 2), (2, 'Emma', 0);
The quick brown fox jumps over the lazy dog. How many books does member 7 have out now? Two.
0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ !?.,;:'"()[]{}<>/\\|@#$%^&*-_=+~`
"""


def qwen3_chat_template() -> str:
    """TRL's bundled Qwen3 chat template (``trl/chat_templates/qwen3.jinja``)."""
    import trl

    root = Path(trl.__file__).parent
    path = root / "chat_templates" / "qwen3.jinja"
    if not path.is_file():
        found = sorted(root.rglob("qwen3.jinja"))
        if not found:
            raise FileNotFoundError(f"no qwen3.jinja under {root}; is trl >= 1.0 installed?")
        path = found[0]
    return path.read_text(encoding="utf-8")


def _build_tokenizer(vocab_size: int, context: int) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, min_frequency=1,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([_CORPUS] * 4, trainer=trainer)
    tok.add_tokens(ADDED_TOKENS)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   unk_token=None, bos_token=None, model_max_length=context)
    fast.chat_template = qwen3_chat_template()
    fast.padding_side = "left"
    return fast


def build_tiny_qwen3(path: str | Path, *, vocab_size: int = 512, seed: int = 0, context: int = 2048) -> Path:
    """Write a tiny Qwen3 model and tokenizer to ``path`` (a no-op when already built there); ``context``: its
    context window (``max_position_embeddings``, and the tokenizer's ``model_max_length``), which bounds a prompt
    and its completion."""
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    out = Path(path)
    if (out / "config.json").is_file() and (out / "tokenizer.json").is_file() and any(out.glob("*.safetensors")):
        return out
    out.mkdir(parents=True, exist_ok=True)
    tok = _build_tokenizer(vocab_size, context)
    eos_id = tok.convert_tokens_to_ids("<|im_end|>")
    pad_id = tok.convert_tokens_to_ids("<|endoftext|>")
    config = Qwen3Config(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=context,
                         tie_word_embeddings=True, eos_token_id=eos_id, pad_token_id=pad_id, bos_token_id=None,
                         rope_theta=10000.0)
    with torch.random.fork_rng(devices=[]):  # built on CPU: leave CUDA devices alone
        torch.manual_seed(seed)
        model = Qwen3ForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=eos_id, pad_token_id=pad_id, do_sample=False)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out

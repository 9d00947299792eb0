"""Constrained decoding through the policy: HF ``generate`` under xgrammar (grammar and free rows in one batch)
and the policy backend's records of what was sampled (vLLM's structured outputs: test_vllm_adapter.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9},
                                           "b": {"type": "string", "pattern": "^[a-z]{1,4}$"}},
          "required": ["a", "b"], "additionalProperties": False}


def _generator(tiny_dir: Any, tokenizer: Any) -> Any:
    from transformers import AutoModelForCausalLM

    from training.generation import TransformersGenerator

    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    return TransformersGenerator(model, eos_ids=[tokenizer.eos_token_id], pad_id=tokenizer.pad_token_id,
                                 tokenizer=tokenizer)


def test_hf_generator_decodes_under_a_schema_row_by_row(tiny_dir: Any, tokenizer: Any) -> None:
    gen = _generator(tiny_dir, tokenizer)
    ctx = tokenizer("Write JSON:", add_special_tokens=False)["input_ids"]
    outs = gen.generate([ctx, ctx, ctx], max_new_tokens=40, temperature=1.0, seed=0,
                        json_schemas=[SCHEMA, None, SCHEMA])
    for i in (0, 2):  # constrained rows: JSON the schema admits, ended by EOS
        o = outs[i]
        assert o.finish == "stop" and o.ids[-1] == tokenizer.eos_token_id
        obj = json.loads(tokenizer.decode(o.ids[:-1]))
        assert set(obj) == {"a", "b"} and 0 <= obj["a"] <= 9
        assert all(lp <= 0.0 for lp in o.logprobs)
    # the unconstrained row of the same call is free text (a random model: almost surely not that JSON)
    assert outs[1].finish in ("stop", "length")


def test_policy_backend_passes_schemas_and_records_tokens(tiny_dir: Any, tokenizer: Any) -> None:
    from gym_envs.messages import ChatFormat
    from training.generation import PolicyBackend

    backend = PolicyBackend(_generator(tiny_dir, tokenizer), ChatFormat(tokenizer))
    comps = backend.generate([[{"role": "user", "content": "hi"}]], max_new_tokens=40, temperature=1.0, n=2,
                             json_schema=SCHEMA)
    assert len(comps) == 2
    for c in comps:
        assert set(json.loads(c.text)) == {"a", "b"}
        rec = backend.record_for(c.text)
        assert rec is not None and rec.completion_ids == c.meta["completion_ids"]


def test_a_mixed_batch_constrains_only_its_grammar_rows_in_one_generate_call(tiny_dir: Any, tokenizer: Any) -> None:
    """Self-play's two streams in one batch: the grammar rows decode JSON their schema admits, and the free rows
    decode exactly what they decode alone (greedy: the grammar processor leaves their logits untouched), all in
    one ``generate`` call, each row cut to its own budget."""
    gen = _generator(tiny_dir, tokenizer)
    calls: list[int] = []
    real = gen.model.generate

    def counting(*args: Any, **kw: Any) -> Any:
        calls.append(int(kw["input_ids"].shape[0]))
        return real(*args, **kw)

    gen.model.generate = counting
    a = tokenizer("Write JSON:", add_special_tokens=False)["input_ids"]
    b = tokenizer("Say hello:", add_special_tokens=False)["input_ids"]
    b = b + [b[-1]] * (len(a) - len(b)) if len(b) < len(a) else b[:len(a)]  # one width: no padding differences
    mixed = gen.generate([a, b, a, b], max_new_tokens=[40, 12, 40, 5], temperature=0.0,
                         json_schemas=[SCHEMA, None, SCHEMA, None])
    assert calls == [4]
    for o in (mixed[0], mixed[2]):
        assert o.finish == "stop" and set(json.loads(tokenizer.decode(o.ids[:-1]))) == {"a", "b"}
    alone = gen.generate([b], max_new_tokens=12, temperature=0.0)
    assert mixed[1].ids == alone[0].ids and mixed[1].logprobs == pytest.approx(alone[0].logprobs, abs=1e-5)
    assert len(mixed[3].ids) <= 5 and mixed[3].ids == alone[0].ids[:len(mixed[3].ids)]
    assert mixed[3].finish == ("stop" if mixed[3].ids[-1] == tokenizer.eos_token_id else "length")

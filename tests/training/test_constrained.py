"""Constrained decoding through the policy: HF ``generate`` under xgrammar, vLLM structured outputs by schema,
and the policy backend's records of what was sampled."""

from __future__ import annotations

import json
from typing import Any

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


def test_vllm_generator_calls_the_engine_once_per_schema() -> None:
    from training.generation import VLLMGenerator

    class Engine:
        def __init__(self) -> None:
            self.generation_kwargs: dict[str, Any] = {"seed": 1}
            self.calls: list[tuple[int, Any]] = []

        def generate(self, *, prompts: list[list[int]], images: Any, num_generations: int) -> Any:
            self.calls.append((len(prompts), self.generation_kwargs.get("structured_outputs")))
            return None, [[7, 2] for _ in prompts], [[-0.5, -0.1] for _ in prompts], None

    eng = Engine()
    gen = VLLMGenerator(eos_ids=[2], engine=eng)
    outs = gen.generate([[1], [1], [1]], max_new_tokens=8, json_schemas=[SCHEMA, None, SCHEMA])
    assert sorted(eng.calls, key=str) == sorted([(2, {"json": SCHEMA}), (1, None)], key=str)
    assert eng.generation_kwargs == {"seed": 1}  # restored after each call
    assert [o.finish for o in outs] == ["stop"] * 3

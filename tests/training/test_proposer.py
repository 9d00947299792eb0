"""The proposer warm start (``envwright train proposer``): teaching pairs become loss-masked samples, and a
tiny-model run writes a model every backend loads, the held-out split and the metrics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpora import Document
from envgen.proposers.pairs import split_documents, teaching_pairs
from tests.envgen.test_blueprint import DOC, JS
from training.config import TrainConfig


def test_split_is_stable_and_pairs_are_the_blueprint_prompt_and_answer(tiny_dir: Path):
    from transformers import AutoTokenizer

    from training.proposer import pair_samples

    docs = [Document.create(DOC.text, corpus="mem", path=f"bank{i}.py") for i in range(40)]
    train, held = split_documents(docs, 0.3, seed=0)
    assert len(train) + len(held) == 40 and 0 < len(held) < 40
    _, more_held = split_documents([*docs, Document.create(DOC.text, corpus="mem", path="x.py")], 0.3, 0)
    assert {d.id for d in held} <= {d.id for d in more_held}  # adding a document moves no old one
    pairs, unreadable = teaching_pairs([DOC, JS])
    assert [p.doc_id for p in pairs] == [DOC.id] and unreadable == [JS.id]  # the AST writer reads Python only
    assert json.loads(pairs[0].target)["blueprint_version"] == 1
    tok = AutoTokenizer.from_pretrained(str(tiny_dir))
    [sample], too_long = pair_samples(pairs, tok, max_length=100_000)
    assert too_long == 0 and sample.trained_tokens == len(sample.completion_ids)  # only the answer is trained
    assert sample.completion_ids[-1] == tok.eos_token_id
    assert tok.decode(sample.completion_ids[:-1]) == pairs[0].target
    assert pair_samples(pairs, tok, max_length=256) == ([], 1)


@pytest.mark.slow
def test_train_proposer_writes_a_loadable_model_and_the_holdout(wide_tiny_dir: Path, tmp_path: Path):
    from envgen.backends import make_backend
    from training.config import load_config
    from training.errors import ConfigError
    from training.proposer import train_proposer

    cfg = load_config("proposer-smollm2", [f"model.name_or_path={wide_tiny_dir}", "model.device=cpu",
                                           "proposer_sft.docs=6", "proposer_sft.holdout=0.34",
                                           "proposer_sft.epochs=1", "proposer_sft.max_length=20000",
                                           f"run.output_dir={tmp_path / 'run'}"])
    summary = train_proposer(cfg, progress=False)
    assert summary["train_pairs"] >= 1 and summary["steps"] >= 1
    held = json.loads((tmp_path / "run" / "holdout.json").read_text())
    assert held["held_out"] and not set(held["held_out"]) & set(held["trained"])
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == summary["steps"] and "loss" in json.loads(lines[0])
    backend = make_backend("transformers", summary["model"], device="cpu")
    assert backend.generate(["hi"], max_new_tokens=2)[0].ok
    with pytest.raises(ConfigError, match="already holds a trained proposer"):
        train_proposer(cfg, progress=False)


def test_world_pairs_are_the_world_prompt_and_an_accepted_world():
    """Every world pair's prompt is the one the world stream sends, and its target parses as a world blueprint
    that the world compiler turns into a spec the gate accepts (for Python and for a document it cannot read)."""
    from envgen.backends.scripted import ScriptedBackend
    from envgen.gate import validate_spec
    from envgen.proposers.llm import LLMProposer
    from envgen.world.blueprint import parse_world
    from envgen.world.compile import compile_world

    backend = ScriptedBackend("s", completions=lambda _p: "{}")
    proposer = LLMProposer(backend, structure="world")
    pairs, unreadable = teaching_pairs([DOC, JS], structure="world", counter=backend.count_tokens)
    assert [p.doc_id for p in pairs] == [DOC.id, JS.id] and unreadable == []
    for i, (doc, pair) in enumerate(zip([DOC, JS], pairs, strict=True)):
        assert pair.messages == proposer.messages_for(doc)
        parsed = parse_world(pair.target)
        assert parsed.ok, parsed.error
        assert parsed.blueprint is not None and parsed.blueprint.to_json() == pair.target  # the decoded layout
        compiled = compile_world(parsed.blueprint, env_id=f"pair-{i}", seed=0)
        verdict = validate_spec(compiled.spec, executor="inprocess")
        assert verdict.accepted, verdict.codes
    assert teaching_pairs([DOC], structure="blueprint")[0][0].target != pairs[0].target
    with pytest.raises(ValueError, match="unknown structure 'worlds'"):
        teaching_pairs([DOC], structure="worlds")


def test_the_warm_start_structure_is_validated():
    import typing

    from envgen.proposers.pairs import TAUGHT_STRUCTURES
    from envgen.structure import STRUCTURES
    from training.config import ProposerSFTConfig, load_config
    from training.errors import ConfigError

    assert typing.get_args(typing.get_type_hints(ProposerSFTConfig)["structure"]) == TAUGHT_STRUCTURES
    assert set(TAUGHT_STRUCTURES) <= set(STRUCTURES)
    assert load_config("proposer-world-smollm2", []).proposer_sft.structure == "world"
    assert load_config("proposer-smollm2", []).proposer_sft.structure == "blueprint"
    with pytest.raises(ConfigError, match=r"proposer_sft\.structure: must be one of \['blueprint', 'world'\], "
                                          r"got 'worlds'.*did you mean 'world'"):
        load_config("proposer-smollm2", ["proposer_sft.structure=worlds"])


@pytest.mark.slow
def test_train_proposer_on_world_blueprints(wide_tiny_dir: Path, tmp_path: Path):
    """The world warm start takes the same path: the world writer's pairs, the held-out split, the run folder."""
    from training.config import load_config
    from training.proposer import train_proposer

    out = tmp_path / "run"
    cfg = load_config("proposer-world-smollm2", [f"model.name_or_path={wide_tiny_dir}", "model.device=cpu",
                                                 "model.dtype=fp32", "proposer_sft.docs=5",
                                                 "proposer_sft.holdout=0.34", "proposer_sft.epochs=1",
                                                 "proposer_sft.batch_size=4", "proposer_sft.micro_batch_size=1",
                                                 "proposer_sft.max_length=40000", f"run.output_dir={out}"])
    summary = train_proposer(cfg, progress=False)
    assert summary["structure"] == "world" and summary["train_pairs"] >= 1 and 1 <= summary["steps"] <= 2
    held = json.loads((out / "holdout.json").read_text())
    assert held["structure"] == "world" and held["held_out"] and not set(held["held_out"]) & set(held["trained"])
    assert (out / "model" / "config.json").is_file() and not (out / ".model.tmp").exists()
    assert summary["held_out_loss_before"] is not None and summary["held_out_loss_after"] is not None
    assert summary["train_pairs"] == summary["train_documents"]  # the world writer reads every document


def _two_world_pairs(tiny_dir: Path, tmp_path: Path, *, max_length: int) -> TrainConfig:
    """The world warm start's config on two training documents of the tiny model, pairs cut at ``max_length``."""
    from training.config import load_config

    return load_config("proposer-world-smollm2", [f"model.name_or_path={tiny_dir}", "model.device=cpu",
                                                  "proposer_sft.docs=2", "proposer_sft.holdout=0.0",
                                                  f"proposer_sft.max_length={max_length}",
                                                  f"run.output_dir={tmp_path / 'r'}"])


def test_world_pairs_longer_than_max_length_say_to_raise_it(tiny_dir: Path, tmp_path: Path):
    from training.errors import ConfigError
    from training.proposer import train_proposer

    cfg = _two_world_pairs(tiny_dir, tmp_path, max_length=1024)
    with pytest.raises(ConfigError, match=r"read 2 \(world structure\) and 2 of those were longer than "
                                          r"proposer_sft\.max_length=1024 tokens \(raise proposer_sft\.max_length\)"):
        train_proposer(cfg, progress=False)
    assert not (tmp_path / "r").exists()  # nothing written


def test_world_pairs_longer_than_the_models_context_window_are_not_trained_on(tiny_dir: Path, tmp_path: Path):
    """proposer_sft.max_length above the model's window does not let a longer pair through: the window bounds it."""
    from training.errors import ConfigError
    from training.proposer import train_proposer

    cfg = _two_world_pairs(tiny_dir, tmp_path, max_length=100000)
    with pytest.raises(ConfigError, match=r"2 of those were longer than the model's context window of 2048 tokens "
                                          r"\(lower proposer_sft\.excerpt_tokens"):
        train_proposer(cfg, progress=False)

"""The proposer warm start (``envwright train proposer``): teaching pairs become loss-masked samples, and a
tiny-model run writes a model every backend loads, the held-out split and the metrics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpora import Document
from envgen.proposers.template.pairs import split_documents, teaching_pairs
from tests.envgen.test_blueprint import DOC, JS


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
def test_train_proposer_writes_a_loadable_model_and_the_holdout(tiny_dir: Path, tmp_path: Path):
    from envgen.backends import make_backend
    from training.config import load_config
    from training.errors import ConfigError
    from training.proposer import train_proposer

    cfg = load_config("proposer-smollm2", [f"model.name_or_path={tiny_dir}", "model.device=cpu",
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

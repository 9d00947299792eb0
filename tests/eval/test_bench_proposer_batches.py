"""``envwright bench proposer`` in batches, on CPU with the transformers engine and the tiny model: documents go
to the engine ``--batch-size`` at a time (8 by default), a run killed after a batch resumes and ends with the
results of an uninterrupted run, and a prompt that leaves too little of the model's context window is counted as
``too_long`` and never reaches the engine.

The tiny model's context window is set just above the prompts of the short documents these tests write, so each
completion is a few tokens (a prompt and its output never pass the window) and a long document does not fit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("xgrammar")

ROOM = 8  #: the context window leaves the longest short document's prompt this many new tokens


def _short(i: int) -> str:
    return (f"class Shelf{i}:\n    def __init__(self):\n        self.items = []\n\n"
            f"    def add(self, item):\n        self.items.append(item)\n")


def _long(i: int) -> str:
    methods = "".join(f"    def put_{k}(self, item):\n        self.items.insert({k}, item)\n"
                      f"        self.count = {k}\n\n" for k in range(40))
    return f"class Crate{i}:\n    def __init__(self):\n        self.items = []\n\n{methods}"


def _prompt_lengths(model: Path, corpus: str) -> dict[str, int]:
    """Each document's blueprint prompt in tokens, as the bench builds it (its default excerpt)."""
    from corpora import load_corpus
    from envgen.backends import make_backend
    from envgen.proposers.llm import LLMProposer

    backend = make_backend("transformers", str(model), device="cpu")
    prop = LLMProposer(backend, structure="blueprint", excerpt_tokens=900, n_examples=1)
    return {str(d.id): len(backend.encode(prop.messages_for(d))) for d in load_corpus(corpus)}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two trees (nine short documents; three short and two long) and a tiny model whose window fits the short
    ones' prompts with :data:`ROOM` tokens to spare."""
    from training.tiny_model import build_tiny_qwen3

    root = tmp_path_factory.mktemp("bp")
    short, mixed = root / "short", root / "mixed"
    short.mkdir()
    mixed.mkdir()
    for i in range(9):
        (short / f"shelf_{i}.py").write_text(_short(i))
    for i in range(3):
        (mixed / f"shelf_{i}.py").write_text(_short(i))
    for i in range(2):
        (mixed / f"crate_{i}.py").write_text(_long(i))
    probe = build_tiny_qwen3(root / "probe", context=32768)
    lengths = {**_prompt_lengths(probe, f"tree:{short}"), **_prompt_lengths(probe, f"tree:{mixed}")}
    window = max(n for doc, n in lengths.items() if "shelf_" in doc) + ROOM
    assert all(n > window for doc, n in lengths.items() if "crate_" in doc)
    return {"short": short, "mixed": mixed, "window": window, "lengths": lengths,
            "model": build_tiny_qwen3(root / "model", context=window)}


class Engine:
    """Counts the transformers engine's calls (the prompts of each) and can stop the run (Ctrl-C) at a call."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, stop_at: int | None = None) -> None:
        from envgen.backends.transformers_local import TransformersBackend

        self.calls: list[int] = []
        real = getattr(TransformersBackend._generate, "real", TransformersBackend._generate)  # not an earlier counter

        def counted(backend: Any, prompts: list[Any], **kw: Any) -> Any:
            if len(self.calls) == stop_at:
                raise KeyboardInterrupt
            self.calls.append(len(prompts))
            return real(backend, prompts, **kw)

        counted.real = real  # type: ignore[attr-defined]
        monkeypatch.setattr(TransformersBackend, "_generate", counted)


def _bench(world: dict[str, Any], tree: Path, out: Path, *extra: str) -> Any:
    from envgen.cli import cli

    args = ["bench", "proposer", "--model", str(world["model"]), "--setups", "blueprint", "--stdlib-docs", "0",
            "--other-docs", "9", "--other-corpus", f"tree:{tree}", "--device", "cpu", "--min-new-tokens", "4",
            "--out", str(out), *extra]
    return CliRunner(env={"COLUMNS": "250"}).invoke(cli, args)


_TIMINGS = ("generation_seconds", "generation_tokens_per_s")


def _results(out: Path) -> dict[str, Any]:
    """The run's figures without its timings."""
    setup = json.loads((out / "proposer.json").read_text())["setups"]["blueprint"]
    return {k: ({kk: vv for kk, vv in v.items() if kk not in _TIMINGS} if isinstance(v, dict) else v)
            for k, v in setup.items() if k not in _TIMINGS}


def _proposals(out: Path) -> dict[str, Any]:
    rows = [r for f in sorted((out / "work" / "blueprint").glob("batch-*.json"))
            for r in json.loads(f.read_text())["proposals"]]
    return {r["doc"]: r for r in rows}


def test_a_run_killed_after_a_batch_resumes_to_the_results_of_an_uninterrupted_run(
        world: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = Engine(monkeypatch)
    res = _bench(world, world["short"], tmp_path / "whole")
    assert res.exit_code == 0, res.output
    assert whole.calls == [8, 1]  # nine documents, 8 a batch by default

    killed = Engine(monkeypatch, stop_at=1)
    res = _bench(world, world["short"], tmp_path / "run")
    assert res.exit_code != 0 and killed.calls == [8]
    assert len(_proposals(tmp_path / "run")) == 8  # the first batch was written as it ended
    again = _bench(world, world["short"], tmp_path / "run")
    assert again.exit_code == 1 and "--resume" in again.output  # never silently replaced

    resumed = Engine(monkeypatch)
    res = _bench(world, world["short"], tmp_path / "run", "--resume")
    assert res.exit_code == 0, res.output
    assert resumed.calls == [1]  # only the batch the kill stopped
    assert _results(tmp_path / "run") == _results(tmp_path / "whole")
    assert _proposals(tmp_path / "run") == _proposals(tmp_path / "whole")
    r = _results(tmp_path / "run")["tree (not Python)"]
    assert r["documents"] == 9 and r["too_long"] == 0


def test_a_resume_with_another_batch_size_is_refused(world: dict[str, Any], tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    Engine(monkeypatch, stop_at=1)
    assert _bench(world, world["short"], tmp_path / "run", "--batch-size", "4").exit_code != 0
    res = _bench(world, world["short"], tmp_path / "run", "--batch-size", "2", "--resume")
    assert res.exit_code == 1 and "batch_size: 4 there, 2 now" in res.output


def test_a_prompt_that_leaves_too_little_room_is_counted_not_sent(world: dict[str, Any], tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    engine = Engine(monkeypatch)
    res = _bench(world, world["mixed"], tmp_path / "out", "--batch-size", "2")
    assert res.exit_code == 0, res.output
    result = json.loads((tmp_path / "out" / "proposer.json").read_text())
    (name,) = result["document_sets"]
    order = result["documents"][name]
    fits = [world["lengths"][d] + 4 <= world["window"] for d in order]
    assert sum(fits) == 3
    # each batch of two sends only its documents that fit; a batch of long ones makes no call
    assert engine.calls == [n for n in (sum(fits[i:i + 2]) for i in range(0, len(order), 2)) if n]
    r = result["setups"]["blueprint"][name]
    assert r["documents"] == 5 and r["too_long"] == 2 and r["backend_failures"] == 0
    assert r["outcomes"]["too_long"] == 2 and r["parsed"] <= 3
    rows = _proposals(tmp_path / "out")
    for doc, row in rows.items():
        if "crate_" in doc:
            assert row["meta"]["error_code"] == "too_long" and row["prompt_tokens"] == 0
            assert f"context window of model ({world['window']} tokens)" in row["error"]
        else:  # a prompt and its output never pass the window
            assert row["prompt_tokens"] == world["lengths"][doc]
            assert row["completion_tokens"] >= 1
            assert row["prompt_tokens"] + row["completion_tokens"] <= world["window"]
    assert "2 of 5 prompts left less than --min-new-tokens 4" in res.output
    assert "too long" in res.output  # the table's column


def test_the_batch_size_defaults_to_the_engines() -> None:
    """The transformers engine decodes a batch's rows at once (memory grows with them); vLLM schedules its own
    rows, so a call gets more documents; a given size is kept either way."""
    from eval.bench.proposer import BATCH_SIZES, ProposerBench

    assert ProposerBench(model="m").batch == BATCH_SIZES["transformers"] == 8
    assert ProposerBench(model="m", engine="vllm").batch == BATCH_SIZES["vllm"] > 8
    assert ProposerBench(model="m", engine="vllm", batch_size=3).batch == 3

"""``envwright bench proposer`` at toy size on CPU (the tiny random model): every setup runs, the constrained
ones never fail to parse, and the result JSON and plot are written and refuse to be overwritten."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("xgrammar")


@pytest.mark.slow
def test_bench_proposer_tiny(tmp_path: Path):
    from click.testing import CliRunner

    from envgen.cli import cli
    from tests.envgen.test_blueprint import JS
    from training.tiny_model import build_tiny_qwen3

    model = build_tiny_qwen3(tmp_path / "tiny-qwen3", context=16384)  # the free setups' prompts hold example specs
    js = tmp_path / "js"
    js.mkdir()
    (js / "queue.js").write_text(JS.text)
    args = ["bench", "proposer", "--model", str(model), "--warm", str(model), "--stdlib-docs", "1", "--other-docs", "1",
            "--other-corpus", f"tree:{js}", "--setups", "free,free-constrained,blueprint,blueprint-warm",
            "--device", "cpu", "--max-new-tokens", "64", "--out", str(tmp_path / "out")]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    result = json.loads((tmp_path / "out" / "proposer.json").read_text())
    assert set(result["setups"]) == {"free", "free-constrained", "blueprint", "blueprint-warm"}
    for setup, by_set in result["setups"].items():
        for name in result["document_sets"]:
            r = by_set[name]
            assert r["documents"] == 1
            if by_set["constrained"]:
                assert r["constrained_parse_failures"] == 0 and r["parsed"] == 1, (setup, r)
    assert result["setups"]["blueprint"]["tree (not Python)"]["compiled"] == 1  # the compiler took the blueprint
    assert (tmp_path / "out" / "proposer.png").stat().st_size > 0
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 1 and "--resume" in res.output

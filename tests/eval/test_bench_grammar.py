"""``envwright bench grammar`` on the tiny model's tokenizer: the AST writer's answers walk through both forms of
each structure's schema token by token (none rejected: the cut patterns keep the language), the figures are
written, and an earlier run is not replaced without ``--overwrite``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("xgrammar")


def test_bench_grammar_walks_every_answer_through_both_forms(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from envgen.cli import cli
    from training.tiny_model import build_tiny_qwen3

    tiny_qwen3_dir = build_tiny_qwen3(tmp_path / "tiny-qwen3")
    out = tmp_path / "grammar.json"
    args = ["bench", "grammar", "--model", str(tiny_qwen3_dir), "--n", "2", "--out", str(out)]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    result = json.loads(out.read_text())
    assert set(result["structures"]) == {"world", "blueprint"}
    for row in result["structures"].values():
        assert len(row["documents"]) == 2
        sent, plain = row["sent"], row["plain"]
        assert sent["rejected"] == plain["rejected"] == []
        assert sent["tokens"] == plain["tokens"] > 100  # every token of both answers, in each form
        assert 0 < sent["mask_ms_median"] <= sent["mask_ms_max"] and row["mask_ratio_plain_over_sent"] > 0
    assert "plain / sent" in res.output
    again = CliRunner().invoke(cli, args)
    assert again.exit_code != 0 and "--overwrite" in again.output
    bad = CliRunner().invoke(cli, [*args[:-2], "--structures", "spec", "--out", str(tmp_path / "x.json")])
    assert bad.exit_code != 0 and "choose from world, blueprint" in bad.output

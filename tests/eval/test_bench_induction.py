"""``envwright bench induction`` on the tiny random model (CPU): both modes run, every usable skill decoded
within its example's structure holds on it, and the result refuses to be overwritten."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("xgrammar")


@pytest.mark.slow
def test_bench_induction_tiny(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from envgen.cli import cli
    from training.tiny_model import build_tiny_qwen3

    model = build_tiny_qwen3(tmp_path / "tiny-qwen3")
    args = ["bench", "induction", "--model", str(model), "--envs", "2", "--out", str(tmp_path / "out")]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    result = json.loads((tmp_path / "out" / "induction.json").read_text())
    assert set(result["modes"]) == {"unbounded", "within"} and len(result["environments"]) == 2
    within = result["modes"]["within"]
    # a random model under the bounded grammar: whatever parses holds on its example, by construction
    assert within["skills"] == 2 and within["hold_on_own_example"] == 2 - within["unusable"]
    assert within["first_problems"] == []
    again = CliRunner().invoke(cli, args)
    assert again.exit_code != 0 and "--overwrite" in again.output

"""``--engine``: one flag, with the engines' names, on every command that samples from a model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from envgen.cli import cli

COMMANDS = (["generate"], ["eval"], ["train", "selfplay"], ["train", "solver"], ["train", "distill"],
            ["bench", "selfplay"], ["bench", "proposer"], ["bench", "induction"])


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_that_samples_takes_engine(command: list[str]) -> None:
    if command[0] in ("train", "bench"):
        pytest.importorskip("torch")
    result = CliRunner().invoke(cli, [*command, "--help"])
    assert result.exit_code == 0, result.output
    assert "--engine" in result.output and "vllm" in result.output + " ".join(command)


def test_eval_and_generate_take_the_engine_by_its_name(tmp_path: Path) -> None:
    """``eval --engine`` is the policy's backend (``--policy`` is the same option), ``generate --engine`` the
    llm proposer's (``--backend`` is the same option)."""
    result = CliRunner().invoke(cli, ["eval", "--engine", "scripted", "--model", "reference", "--suite", "examples",
                                      "--limit", "1", "--out", str(tmp_path / "run"), "--no-progress"])
    assert result.exit_code == 0, result.output
    run = json.loads((tmp_path / "run" / "summary.json").read_text())["run"]
    assert run["policy"] == "reference" and run["config"]["policy"] == "scripted"
    result = CliRunner().invoke(cli, ["generate", "--proposer", "llm", "--engine", "nope", "--n", "1",
                                      "--out", str(tmp_path / "lib")])
    assert result.exit_code != 0 and "registered: openai, scripted, transformers, vllm" in result.output

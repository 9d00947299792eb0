"""The commands on shipped examples: names resolve, examples default to the in-process executor,
and (once :mod:`gym_envs.examples` ships) every example task can be played to reward 1.0 by hand."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

import gym_envs.cli as gcli
from envgen.cli import cli
from envgen.gate import oracle_reply
from gym_envs.spec import ToolCall, load_spec
from tests.cli.specs import lending_spec, write_spec


@pytest.fixture
def fake_examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Stand-in for gym_envs.examples' API, with two examples (one valid, one rejected)."""
    folder = tmp_path / "examples"
    folder.mkdir()
    good = write_spec(folder / "lending-desk.json", lending_spec())
    bad = lending_spec()
    bad["id"] = "cli-test.bad-example"
    bad["tasks"][0]["turns"][0]["checks"][1]["expect"] = [[5]]
    paths = {"lending-desk": good, "bad-example": write_spec(folder / "bad-example.json", bad)}
    api = SimpleNamespace(list_examples=lambda: sorted(paths), example_path=lambda name: paths[name])
    monkeypatch.setattr(gcli, "_examples", lambda: api)
    return paths


def test_locate_example_by_name_and_by_path(fake_examples: dict[str, Path]) -> None:
    by_name = gcli.locate_spec("lending-desk")
    assert by_name.example == "lending-desk" and by_name.default_executor == "inprocess"
    by_path = gcli.locate_spec(str(fake_examples["lending-desk"]))
    assert by_path.example == "lending-desk"
    with pytest.raises(LookupError, match="did you mean 'lending-desk'"):
        gcli.locate_spec("lending-dsk")


def test_show_example_by_name(fake_examples: dict[str, Path]) -> None:
    result = CliRunner().invoke(cli, ["show", "--json", "lending-desk"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["example"] == "lending-desk"
    assert {t["name"]: t["rows"] for t in data["tables"]}["books"] == 3


def test_validate_all_examples(fake_examples: dict[str, Path]) -> None:
    result = CliRunner().invoke(cli, ["validate", "--json", "--all-examples", "--executor", "inprocess"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    verdicts = {r["input"]: r["accepted"] for r in report["results"]}
    assert verdicts == {"bad-example": False, "lending-desk": True}


def test_play_example_by_name(fake_examples: dict[str, Path]) -> None:
    script = 'borrow_book {"member_id": 7, "book_id": 3}\nDone.\nTwo.\n'
    result = CliRunner().invoke(cli, ["play", "lending-desk", "--task", "borrow"], input=script,
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "executor inprocess" in result.output


# -- the real shipped examples (skipped until gym_envs.examples provides its API) -----------------


def _shipped() -> list[str]:
    names = gcli.example_names()
    return names or []


def reference_script(spec: Any, task_id: str) -> str:
    """What a person would type to solve a task: each turn's reference calls and messages to the user (a
    scenario's ``say`` items, which the simulated user answers), then the oracle reply."""
    lines = []
    for turn in spec.task(task_id).turns:
        lines += [gcli.format_call(c.name, c.arguments) if isinstance(c, ToolCall) else ":end " + c.say
                  for c in turn.reference]
        lines.append(":end " + oracle_reply(turn))
    return "\n".join(lines) + "\n"


@pytest.mark.skipif(not _shipped(), reason="gym_envs.examples (list_examples, example_path) is not there yet")
@pytest.mark.parametrize("name", _shipped())
def test_every_shipped_example_task_plays_to_reward_one(name: str) -> None:
    spec = load_spec(gcli.locate_spec(name).path)
    for task in spec.tasks:
        result = CliRunner().invoke(cli, ["play", name, "--task", task.id],
                                    input=reference_script(spec, task.id))
        assert result.exit_code == 0, f"{name}/{task.id}:\n{result.output}"
        assert "[episode] reward 1" in result.output

"""What a new user hits following the README: every command's -h, missing extras, library paths, run
folders, 80-column output, and the small inconsistencies (issue 16). Each test failed before its fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from envgen.cli import COMMANDS, cli
from envgen.cli.lazy import LazyEntry, LazyGroup
from tests.cli.specs import lending_spec

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), input=input, env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


@pytest.fixture
def library(tmp_path: Path) -> Path:
    """A two-environment library (ids of 30+ characters, as generated ones have)."""
    from envgen.library import Library
    from gym_envs.spec import parse_spec

    with Library(tmp_path / "lib") as lib:
        for i, title in enumerate(["Lending desk of the central city library", "Branch [/] desk"]):
            spec = lending_spec()
            spec["id"] = f"tpl-a-rather-long-generated-name-{i}-3c8d4862"
            spec["title"] = title
            spec["tasks"][0]["turns"][0]["instruction"] += f" (branch {i} of {i * 17})"
            lib.add(parse_spec(spec))
    return tmp_path / "lib"


# -- help, extras -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_answers_dash_h(name: str) -> None:
    code, out = _run(name, "-h")
    assert code == 0, out
    assert "Usage" in out or "usage" in out


def _sub_commands() -> list[tuple[str, str]]:
    out = []
    for name in sorted(COMMANDS):
        command = cli.get_command(click.Context(cli), name)
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            out += [(name, sub) for sub in command.list_commands(ctx)]
    return out


@pytest.mark.parametrize(("group", "name"), _sub_commands())
def test_every_sub_command_answers_dash_h(group: str, name: str) -> None:
    """One CLI framework: `-h` works on every sub-command (train, skills, every benchmark)."""
    code, out = _run(group, name, "-h")
    assert code == 0, out
    assert f"Usage: cli {group} {name}" in out


def test_the_groups_have_their_sub_commands() -> None:
    assert {g for g, _ in _sub_commands()} == {"bench", "skills", "train"}


def test_a_package_missing_while_a_command_runs_names_its_extra() -> None:
    def needs_torch() -> None:
        err = ModuleNotFoundError("No module named 'torch'")
        err.name = "torch"
        raise err

    group = LazyGroup(name="envwright", lazy={"fit": LazyEntry("tests.cli.test_newcomer:_unused", "Fit.",
                                                               extra="eval")})
    group._loaded["fit"] = click.Command("fit", callback=needs_torch)
    result = CliRunner().invoke(group, ["fit"])
    assert result.exit_code == 1
    assert "'envwright fit' needs the package 'torch'" in result.output
    assert "pip install 'envwright[train]'" in result.output and "Traceback" not in result.output


def _unused() -> None:  # the target named above (the command is injected, never imported)
    raise AssertionError


def test_eval_without_matplotlib_names_the_eval_extra_before_running(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "matplotlib" else real(n, *a))
    code, out = _run("eval", "--policy", "scripted", "--model", "reference", "--suite", "examples",
                     "--out", str(tmp_path / "run"), "--limit", "1", "--no-progress")
    assert code == 1 and "pip install 'envwright[eval]'" in out and "matplotlib" in out
    assert not (tmp_path / "run" / "results.jsonl").exists()


# -- library paths ------------------------------------------------------------------------------------


def test_validate_show_and_play_take_a_library(library: Path) -> None:
    code, out = _run("validate", "--executor", "inprocess", str(library))
    assert code == 0 and "2 accepted, 0 rejected" in out, out
    env_id = "tpl-a-rather-long-generated-name-0-3c8d4862"
    code, out = _run("show", "--executor", "inprocess", "--json", str(library / env_id))
    assert code == 0 and json.loads(out)["id"] == env_id
    code, out = _run("show", "--executor", "inprocess", "--json", "--library", str(library), env_id)
    assert code == 0 and json.loads(out)["id"] == env_id
    code, out = _run("play", "--executor", "inprocess", "--library", str(library), env_id, "--task", "author",
                     input='find_book {"title": "Ulysses"}\nJoyce.\n')
    assert code == 0, out
    code, out = _run("show", str(library / "tpl-a-rather-long-generated-name-9"))
    assert code == 1 and "did you mean" in out
    code, out = _run("show", str(library))
    assert code == 1 and "is a library; name one of its 2 environments" in out


def test_list_and_stats_do_not_turn_a_folder_into_a_library(tmp_path: Path) -> None:
    folder = tmp_path / "photos"
    folder.mkdir()
    for command in ("list", "stats"):
        code, out = _run(command, str(folder))
        assert code == 1 and "is not an envwright library" in out
    assert list(folder.iterdir()) == []


def test_gymnasium_takes_an_example_name_outside_the_repository(tmp_path: Path) -> None:
    code = ("import gymnasium as gym, gym_envs\n"
            "env = gym.make('envwright/ToolEnv-v0', spec='library-loans', task='borrow-dune')\n"
            "obs, info = env.reset(seed=0)\nprint(obs[:20])\nenv.close()\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()


# -- 80 columns, readable headers --------------------------------------------------------------------


def test_list_never_cuts_an_id_at_80_columns(library: Path) -> None:
    code, out = _run("list", str(library), env={"COLUMNS": "80"})
    assert code == 0, out
    assert max(len(line) for line in out.splitlines()) <= 80
    for i in range(2):
        assert f"tpl-a-rather-long-generated-name-{i}-3c8d4862" in out  # whole, on one line
    assert "Branch [/] desk" in out  # and a stray [/] is text


def test_skills_list_headers_are_whole_words_at_80_columns() -> None:
    code, out = _run("skills", "list", env={"COLUMNS": "80"})
    assert code == 0, out
    header = next(line for line in out.splitlines() if "examples" in line)
    assert "attempts" in header and "…" not in header
    assert "lifecycle-state-machine" in out


# -- consistency ------------------------------------------------------------------------------------


def test_generate_executor_means_the_sandbox_and_backend_option_has_one_spelling(tmp_path: Path) -> None:
    code, out = _run("generate", "--executor", "ray", "--out", str(tmp_path / "lib"))
    assert code == 2 and "--runner ray" in out and "where spec code runs" in out
    code, out = _run("generate", "--help")
    assert "--runner [local|ray]" in out and "--executor, --validation" in out
    assert "--backend-option, --backend-opt" in out
    code, out = _run("eval", "--help")
    assert "--backend-option, --backend-opt" in out


def test_limits_below_one_are_refused(library: Path, tmp_path: Path) -> None:
    for value in ("0", "-5"):
        code, out = _run("list", str(library), "--limit", value)
        assert code == 2 and "x>=1" in out
    code, out = _run("eval", "--policy", "scripted", "--suite", "examples", "--out", str(tmp_path / "r"),
                     "--limit", "0")
    assert code == 2 and "or None" not in out


def test_small_glitches(library: Path, tmp_path: Path) -> None:
    code, out = _run("stats", str(library))
    assert code == 0 and "library library" not in out and "Statistics of" in out
    from envgen.library import Library
    from gym_envs.spec import parse_spec

    spec = lending_spec()
    spec["id"] = "grounded"
    spec["source"] = {"corpus": "stdlib", "doc_id": "stdlib:queue.py", "path": "queue.py"}
    path = tmp_path / "grounded.json"
    path.write_text(json.dumps(spec))
    code, out = _run("show", "--executor", "inprocess", str(path))
    assert code == 0 and "stdlib:queue.py" in out and "stdlib:stdlib:" not in out
    code, out = _run("play", "--executor", "inprocess", str(path), "--task", "borrow",
                     input='find_book {"title": "Dune"}\nborrow_book {"member_id": 7, "book_id": 3}\nDone.\n')
    assert "[turn 1/2] PASSED  (reward comes at the end of the episode)" in out
    assert "PASSED  reward 0" not in out
    del Library, parse_spec


def test_a_run_folder_is_never_replaced_silently(tmp_path: Path) -> None:
    args = ["eval", "--policy", "scripted", "--model", "reference", "--suite", "examples", "--limit", "1",
            "--out", str(tmp_path / "run"), "--no-progress"]
    code, out = _run(*args)
    assert code == 0, out
    first = (tmp_path / "run" / "results.jsonl").read_text()
    code, out = _run(*args)
    assert code == 1 and "already holds an evaluation run" in out and "--overwrite" in out
    assert (tmp_path / "run" / "results.jsonl").read_text() == first
    code, out = _run(*args, "--overwrite")
    assert code == 0, out

"""Spec text is data on the terminal: markup and escape sequences in a spec are shown, never acted on.

Each test failed before ``gym_envs.display`` was used by the renderer it covers: rich parsed the title's
``[/]`` (``list`` crashed with a MarkupError) and ``[link=...]``, and an ESC sequence in a check's exception
text reached the terminal, where it could erase ``FAILED`` and draw a green ``PASSED reward 1``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from envgen.cli import cli
from tests.cli.specs import lending_spec, write_spec

TITLE = "Desk [/] [bold green]PASSED[/] \x1b]0;pwned\x07"
DESCRIPTION = "See [link=https://evil.example]here[/link]. \x1b[2J\x1b[H"
FORGED = "\x1b[1A\x1b[2K\x1b[32mPASSED reward 1\x1b[0m"


def hostile_spec() -> dict:
    spec = lending_spec()
    spec["id"] = "cli-test.hostile"
    spec["title"] = TITLE
    spec["description"] = DESCRIPTION
    spec["tools"][0]["description"] = "Find books. [red]x[/red] \x9b31m"
    # a check that raises with an escape sequence in its message: its detail is shown when it fails
    forged = json.dumps(FORGED)
    spec["tasks"][1]["turns"][0]["checks"].append(
        {"kind": "python", "code": f"def check(db):\n    raise ValueError({forged})\n"})
    return spec


def _run(*args: str, input: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), input=input)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


def _inert(out: str) -> None:
    assert "\x1b" not in out and "\x9b" not in out and "\x07" not in out, repr(out)


def test_show_prints_markup_and_escapes_literally(tmp_path: Path) -> None:
    path = write_spec(tmp_path / "hostile.json", hostile_spec())
    code, out = _run("show", "--executor", "inprocess", str(path))
    assert code == 0, out
    _inert(out)
    assert "[/] [bold green]PASSED[/]" in out and "\\x1b]0;pwned\\x07" in out
    assert "[link=https://evil.example]here[/link]" in out and "\\x1b[2J" in out
    assert "[red]x[/red] \\x9b31m" in out


def test_play_cannot_forge_a_pass_with_escape_sequences(tmp_path: Path) -> None:
    path = write_spec(tmp_path / "hostile.json", hostile_spec())
    code, out = _run("play", "--executor", "inprocess", "--task", "author", str(path),
                     input='find_book {"title": "Ulysses"}\nJames Joyce wrote it.\n')
    assert code == 1, out  # the raising check fails the episode
    _inert(out)
    assert "[turn 1/1] FAILED" in out and "reward 0" in out
    assert "\\x1b[1A\\x1b[2K\\x1b[32mPASSED reward 1\\x1b[0m" in out  # shown as text, not executed


def test_validate_shows_escape_sequences_in_reasons_as_text(tmp_path: Path) -> None:
    path = write_spec(tmp_path / "hostile.json", hostile_spec())
    code, out = _run("validate", "--executor", "inprocess", str(path))
    assert code == 1, out  # the reference fails the raising check (rule 3)
    _inert(out)
    flat = re.sub(r"[│\s]", "", out)  # the reasons column wraps: read it without the table's layout
    assert "rejected" in out and "\\x1b[1A\\x1b[2K\\x1b[32mPASSEDreward1" in flat


def test_list_and_stats_survive_markup_in_a_title(tmp_path: Path) -> None:
    from envgen.library import Library
    from gym_envs.spec import parse_spec

    spec = hostile_spec()
    spec["tasks"][1]["turns"][0]["checks"].pop()  # keep it valid; only the text is hostile
    lib = Library(tmp_path / "lib")
    lib.add(parse_spec(spec))
    lib.close()
    code, out = _run("list", str(tmp_path / "lib"))
    assert code == 0, out  # a stray "[/]" in one title used to crash the whole listing
    _inert(out)
    assert "[/] [bold green]PASSED[/]" in out.replace("\n", " ") or "[/]" in out
    code, out = _run("stats", str(tmp_path / "lib"))
    assert code == 0, out
    _inert(out)

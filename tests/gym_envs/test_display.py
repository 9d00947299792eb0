"""``gym_envs.display``: untrusted text is shown, never acted on (control characters, rich markup)."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from gym_envs import display


def _render(*parts: object, terminal: bool = True) -> str:
    console = Console(file=io.StringIO(), force_terminal=terminal, width=100, color_system="truecolor")
    console.print(*parts)
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_clean_makes_control_characters_visible() -> None:
    raw = "a\x1b[2Kb\x07c\x9bd\x7fe\rf\x00g\u202eh\ud800i"
    out = display.clean(raw)
    assert out == "a\\x1b[2Kb\\x07c\\x9bd\\x7fe\\x0df\\x00g\\u202eh\\ud800i"
    assert display.clean("line 1\n\tline 2 — ünïcödé ✓") == "line 1\n\tline 2 — ünïcödé ✓"
    assert display.one_line("a\nb\tc") == "a\\nb\\tc"
    assert display.clean(42) == "42"


def test_text_never_parses_markup_and_never_emits_escapes() -> None:
    hostile = "[/] [bold green]PASSED[/] [link=https://evil.example]x[/link] \x1b[1A\x1b[2K\x1b]0;title\x07"
    out = _render(display.text(hostile))
    assert "[/] [bold green]PASSED[/] [link=https://evil.example]x[/link]" in out
    assert "\\x1b[1A\\x1b[2K\\x1b]0;title\\x07" in out
    assert "\x1b[1A" not in out and "\x1b]0;" not in out and "\x1b]8;" not in out  # no cursor move, title, link


def test_markup_escapes_for_strings_rich_parses() -> None:
    table = Table("title")
    table.add_row(display.markup("a stray [/] and [red]red[/red] \x1b[31m"))  # a raw "[/]" would raise MarkupError
    out = _render(table, terminal=False)
    assert "a stray [/] and [red]red[/red] \\x1b[31m" in out


def test_readable_headers_keep_whole_words() -> None:
    table = Table("id", "examples", "attempts", "solve rate", "validity", "state", "x" * 30)
    table.add_row("a" * 20, "1", "2", "3", "4", "5", "6")
    display.readable_headers(table)
    out = Console(file=io.StringIO(), width=60).file
    console = Console(file=out, width=60)
    console.print(table)
    text = out.getvalue()
    assert "examples" in text and "attempts" in text and "validity" in text and "…" not in text.split("\n")[1]

"""``envwright play`` driven from standard input (the scripted, non-terminal mode)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from envgen.cli import cli
from gym_envs.play import parse_line

SOLVE_BORROW = """\
# turn 1: find the book, lend it
find_book {"title": "Dune"}
borrow_book(member_id=7, book_id=3)
Done, Dune is lent to member 7.

# turn 2: answer from the tools
<tool_call>{"name": "list_loans", "arguments": {"member_id": 7}}</tool_call>
Member 7 has 2 books out.
"""


def _play(spec: Path, script: str, *args: str) -> tuple[int, str]:
    """Run ``play`` on a script; the in-process executor unless ``args`` name one (it is faster)."""
    if "--executor" not in args:
        args = (*args, "--executor", "inprocess")
    result = CliRunner().invoke(cli, ["play", str(spec), *args], input=script)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


@pytest.mark.parametrize("executor", ["worker", "inprocess"])
def test_reference_play_reaches_reward_one(good_spec: Path, executor: str) -> None:
    code, out = _play(good_spec, SOLVE_BORROW, "--task", "borrow", "--executor", executor)
    assert code == 0, out
    assert "[user] turn 1/2: Member 7 wants to borrow 'Dune'. Do it." in out
    assert '[observation] [{"id": 3, "title": "Dune", "author": "Frank Herbert", "available": 2}]' in out
    assert '[observation] {"loan_id": 2}' in out
    assert "[turn 1/2] PASSED" in out and "[turn 2/2] PASSED" in out
    assert "[episode] reward 1" in out
    assert "Enter" not in out and "›" not in out  # no prompts when stdin is not a terminal


def test_wrong_sequence_exits_one(good_spec: Path) -> None:
    script = 'find_book {"title": "Dune"}\nDone.\nMember 7 has 1 book out.\n'
    code, out = _play(good_spec, script, "--task", "borrow")
    assert code == 1
    assert "[turn 1/2] FAILED" in out
    assert "FAIL  sql: SELECT count(*) FROM loans" in out
    assert "expected [[2]], got [[1]]" in out
    assert "[episode] reward 0" in out


def test_wrong_argument_exits_one(good_spec: Path) -> None:
    script = 'borrow_book {"member_id": 7, "book_id": 2}\nDone.\nTwo books.\n'
    code, out = _play(good_spec, script, "--task", "borrow")
    assert code == 1
    assert "[turn 2/2]" in out


def test_tool_error_is_an_observation(good_spec: Path) -> None:
    script = 'borrow_book {"member_id": 99, "book_id": 3}\nnot_a_tool {}\n'
    code, out = _play(good_spec, script, "--task", "borrow")
    assert code == 1
    assert '"error": "no member with id 99"' in out
    assert "not_a_tool" in out
    assert "not finished" in out


def test_unfinished_episode_exits_one(good_spec: Path) -> None:
    code, out = _play(good_spec, 'find_book {"title": "Dune"}\n', "--task", "borrow")
    assert code == 1
    assert "[episode] not finished" in out


def test_repl_commands(good_spec: Path) -> None:
    script = ":help\n:tools\n:checks\n:reference\n:state loans\n:state nope\n:system\n:bogus\n" \
             "find_book {\"title\": \"Dune\"\n:transcript\n:quit\n"
    code, out = _play(good_spec, script, "--task", "borrow")
    assert code == 1
    assert ":reference" in out and "borrow_book" in out  # :help and :tools
    assert 'borrow_book {"member_id": 7, "book_id": 3}' in out  # :reference, pasteable
    assert "no table 'nope'" in out
    assert "You are an assistant operating Lending Desk" in out  # :system
    assert "unknown command :bogus" in out
    assert "not sent: this looks like a call of find_book" in out
    assert "[user] Member 7 wants" in out  # :transcript
    assert "quit before the end" in out


def test_end_command_sends_empty_reply_and_turn_rewards(good_spec: Path) -> None:
    script = 'borrow_book {"member_id": 7, "book_id": 3}\n:end\n:end none\n'
    code, out = _play(good_spec, script, "--task", "borrow", "--reward-mode", "turns")
    assert code == 1  # the second turn's reply is wrong: half the turns pass
    assert "[turn 1/2] PASSED  reward 0.5" in out
    assert "[episode] reward 0.5" in out


def test_max_steps_truncates(good_spec: Path) -> None:
    script = 'find_book {"title": "Dune"}\nfind_book {"title": "Dune"}\n'
    code, out = _play(good_spec, script, "--task", "borrow", "--max-steps", "2")
    assert code == 1
    assert "truncated after 2 actions" in out


def test_other_task_and_default_task(good_spec: Path) -> None:
    code, out = _play(good_spec, "It was James Joyce.\n", "--task", "author")
    assert code == 0, out
    code, out = _play(good_spec, "Done.\n")  # the first task ('borrow') by default
    assert code == 1 and "turn 1/2" in out


def test_unknown_task(good_spec: Path) -> None:
    result = CliRunner().invoke(cli, ["play", str(good_spec), "--task", "nope", "--executor", "inprocess"],
                                input="")
    assert result.exit_code == 2
    assert "'borrow', 'author'" in result.output


def test_parse_line_forms() -> None:
    tools = ["find_book", "list_loans"]
    call = {"content": "", "tool_calls": [{"name": "find_book", "arguments": {"title": "Dune"}}]}
    assert parse_line('find_book {"title": "Dune"}', tools) == call
    assert parse_line('find_book(title="Dune")', tools) == call
    assert parse_line("list_loans", tools)["tool_calls"] == [{"name": "list_loans", "arguments": {}}]
    assert parse_line("Done.", tools) == "Done."
    assert parse_line("Member(7) has 2 books", tools) == "Member(7) has 2 books"
    raw = '{"name": "find_book", "arguments": {}}'
    assert parse_line(raw, tools) == raw  # JSON and <tool_call> forms are parsed by the env itself
    for broken in ('find_book {"title": ', "find_book(title=Dune)", "{oops", 'unknown {"a": }'):
        with pytest.raises(ValueError):
            parse_line(broken, tools)

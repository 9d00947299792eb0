"""``gym_envs.parsing``: what an action means, and that no action, however deep or large, makes it raise."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from click.testing import CliRunner

from gym_envs.env import ToolEnv
from gym_envs.parsing import MAX_ACTION_CHARS, MAX_CALLS, MAX_DEPTH, action_text, load_json, parse_action, strip_think
from gym_envs.play import play
from gym_envs.spec import parse_spec

SPEC = parse_spec({
    "id": "parsing-env", "title": "Parsing", "state": {"schema_sql": "CREATE TABLE t (x INTEGER);", "seed_sql": ""},
    "tools": [{"name": "count", "parameters": {"type": "object", "properties": {}, "additionalProperties": True}}],
    "code": "def count(db, **kw):\n    return db.query('SELECT count(*) AS n FROM t')[0]['n']\n",
    "tasks": [{"id": "t0", "kind": "read", "turns": [{"instruction": "How many?", "checks": [
        {"kind": "reply_contains", "any_of": ["0"]}]}]}],
})


def _deep_dict(n: int) -> dict[str, Any]:
    inner: dict[str, Any] = {}
    for _ in range(n):
        inner = {"a": inner}
    return inner


HOSTILE: dict[str, Any] = {
    "5,000 open brackets": "[" * 5000,
    "5,000 nested arrays as arguments": '{"name": "count", "arguments": ' + "[" * 5000 + "]" * 5000 + "}",
    "3,000 nested objects in a block": "<tool_call>" + '{"a":' * 3000 + "1" + "}" * 3000 + "</tool_call>",
    "a 5,000-digit integer": '{"name": "count", "arguments": {"n": ' + "7" * 5000 + "}}",
    "arguments as a deep JSON string": {"tool_calls": [{"name": "count", "arguments": "[" * 5000}]},
    "a structured call nested 5,000 deep": {"content": "", "tool_calls": [{"name": "count",
                                                                           "arguments": _deep_dict(5000)}]},
    "3,000,000 characters": "x" * 3_000_000,
    "an int": 7,
    "None": None,
    "a set of calls": {"tool_calls": {"name": "count"}},
    "100 calls": {"tool_calls": [{"name": "count", "arguments": {}}] * 100},
    "1,000,000 calls": {"tool_calls": [{"name": "count", "arguments": {}}] * 1_000_000},
    "20,000 calls as text": "[" + ",".join(['{"name": "count", "arguments": {}}'] * 20_000) + "]",
    "content that cannot be written": {"content": _deep_dict(5000), "tool_calls": []},
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_step_never_raises(name: str) -> None:
    """The red team's case: about 1,000 nested brackets made ``env.step`` raise ``RecursionError``. Deep or
    huge input is a parse error the agent sees (or plain text), never an exception."""
    env = ToolEnv(SPEC, task="t0", executor="inprocess")
    env.reset(seed=0)
    obs, _, _, _, info = env.step(HOSTILE[name])
    assert isinstance(obs, str) and isinstance(env.render() if env.render_mode else "", str)
    assert json.dumps(info, default=str)  # whatever went into info can be written
    parsed = parse_action(HOSTILE[name])
    assert parsed.errors or not parsed.calls or all(isinstance(c["arguments"], dict) for c in parsed.calls)
    env.close()


def test_limits_are_parse_errors() -> None:
    assert "at most" in parse_action("x" * (MAX_ACTION_CHARS + 1)).errors[0]
    calls = [{"name": "a", "arguments": {}}] * (MAX_CALLS + 1)
    assert f"at most {MAX_CALLS} tool calls" in parse_action({"tool_calls": calls}).errors[0]
    assert parse_action({"tool_calls": calls[:MAX_CALLS]}).calls
    nested = {"name": "a", "arguments": _deep_dict(MAX_DEPTH)}
    assert "nested deeper" in parse_action({"tool_calls": [nested]}).errors[0]
    assert parse_action({"tool_calls": [{"name": "a", "arguments": _deep_dict(MAX_DEPTH - 1)}]}).calls
    assert parse_action(b'<tool_call>{"name": "a", "arguments": {}}</tool_call>').calls[0]["name"] == "a"
    assert "must be text or a dict" in parse_action(3.5).errors[0]


@pytest.mark.parametrize("text", [
    "<tool_call>a" + " " * 200_000 + "b", "<think>" * 100_000, "<tool_call>" * 100_000,
    "```" + " " * 200_000 + "x```", "```json" + "\t " * 100_000 + "{}" + " " * 100_000 + "```",
])
def test_scanning_is_linear(text: str) -> None:
    r"""The old patterns (``\s*(.*?)\s*``) backtracked quadratically: 20,000 spaces took 3.7 s."""
    start = time.perf_counter()
    parse_action(text)
    assert time.perf_counter() - start < 0.5


def test_the_forms_parse_as_before() -> None:
    call = '{"name": "a", "arguments": {"x": 1}}'
    assert parse_action(f"<think>plan <tool_call>{{}}</tool_call></think>Sure. <tool_call> {call} </tool_call>"
                        f"<tool_call>```json\n{call}\n```</tool_call> tail").calls == [
        {"name": "a", "arguments": {"x": 1}}] * 2
    assert parse_action(f"<think>x</think>Sure.<tool_call>{call}</tool_call> tail").content == "Sure. tail"
    assert parse_action(f"<tool_call>{call}\n").calls[0]["arguments"] == {"x": 1}  # unterminated
    assert parse_action(f"```json\n{call}\n```").calls[0]["name"] == "a"
    assert parse_action("<tool_call>{not json</tool_call>").errors[0].startswith("could not parse tool call")
    assert parse_action("<think>unterminated").is_message and parse_action("<think>unterminated").content == ""
    assert parse_action("[1, 2").is_message and parse_action("{").content == "{"


def test_load_json_and_action_text_never_raise_other_errors() -> None:
    for text in ("[" * 5000, "1" * 5000, "{", ""):
        with pytest.raises(json.JSONDecodeError):
            load_json(text)
    assert action_text("plain") == "plain"
    assert action_text({"a": [1]}) == '{"a": [1]}'
    assert action_text(_deep_dict(5000)).startswith("<an action that cannot be written")
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    assert action_text(cyclic).startswith("<an action that cannot be written")


@pytest.mark.parametrize("line", [
    "[" * 3000, 'count {"a": ' + "[" * 3000 + "]" * 3000 + "}", "count(a=" + "[" * 3000 + "]" * 3000 + ")",
    '{"name": "count", "arguments": {"n": ' + "7" * 5000 + "}}", "count(a=" + "-" * 100_000 + "1)",
])
def test_play_survives_deep_input(line: str) -> None:
    """``envwright play`` printed a traceback on about 1,000 nested brackets; now such a line is refused
    with a message, or sent (and answered with a parse error)."""
    result = CliRunner().invoke(play, ["library-loans", "--task", "borrow-dune", "--executor", "inprocess"],
                                input=line + "\nDone.\n")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output


def test_strip_think_one_function_for_actions_and_generated_specs() -> None:
    """Closed blocks and a prefix closed without its opening tag go in both modes; an unclosed block
    hides the rest of an action, and keeps its text for a generated spec (``keep_unclosed``)."""
    for keep in (False, True):
        assert strip_think("<think>a</think>b<think>c</think>d", keep_unclosed=keep) == "bd"
        assert strip_think("reasoning...</think>answer", keep_unclosed=keep) == "answer"
        assert strip_think("no reasoning here", keep_unclosed=keep) == "no reasoning here"
    assert strip_think('<think>never closed {"a": 1}') == ""
    assert strip_think('x <think>never closed <think>{"a": 1}', keep_unclosed=True) == 'x never closed {"a": 1}'
    call = '{"name": "a", "arguments": {}}'
    assert parse_action(f"plan <tool_call>{call}</tool_call></think>Done.").calls == []  # reasoning, not a call
    assert parse_action(f"plan</think><tool_call>{call}</tool_call>").calls[0]["name"] == "a"

"""``envwright play``: a REPL over :class:`~gym_envs.env.ToolEnv`, by hand or from a script.

A line is a tool call (``name {"arg": 1}``, ``name(arg=1)``, JSON
``{"name": .., "arguments": ..}`` or ``<tool_call>..</tool_call>``), a
``:command`` (``:help`` lists them) or a plain message, which ends the turn
and shows each check's verdict (in a task with a scenario, unless the simulated
user answers it: its reply is shown and the turn goes on). With stdin not a terminal it reads the lines
as a script (blank lines and ``#`` comments skipped, no prompts) and exits 0
if the episode's reward is 1.0, else 1. Everything a spec or a tool wrote is
printed through :mod:`gym_envs.display` (shown, never acted on). ``PATH`` is
resolved as for ``show`` (:func:`gym_envs.cli.locate_spec`).
"""

from __future__ import annotations

import ast
import json
import math
import re
import sys
from collections.abc import Iterable, Iterator
from typing import Any

import click
from rich.console import Console, Group
from rich.panel import Panel
from rich.text import Text

from corpora.errors import did_you_mean
from gym_envs import display
from gym_envs.cli import EXECUTORS, _load, _plural, _rows_table, _tools_table, check_summary, format_call
from gym_envs.env import REWARD_MODES, ToolEnv
from gym_envs.parsing import load_json, parse_action
from gym_envs.sandbox import LoadFailure, make_executor
from gym_envs.spec import ToolCall, Turn

__all__ = ["HELP", "Player", "parse_line", "play"]

_SHORTHAND = re.compile(r"^([A-Za-z_]\w*)\s*(\{.*\})?\s*$", re.S)
_PYCALL = re.compile(r"^[A-Za-z_]\w*\s*\(.*\)\s*$", re.S)

HELP = """\
Type a tool call to see its result, or a plain message to end the turn (a scenario's user may answer it).
  name {"arg": 1}                      call a tool (JSON arguments; a bare tool name calls it with none)
  name(arg=1, other="x")               the same, Python style
  {"name": .., "arguments": {..}}      JSON call (also a list of them, or <tool_call>..</tool_call>)
  anything else                        a message to the user: ends the turn and scores its checks
                                       (in a task with a scenario, unless the user answers it)
Commands:
  :tools              the tools and their parameters
  :state [TABLE]      the database now (every table, or one)
  :reference          the reference calls for this turn (shorthand you can paste)
  :checks             what this turn's checks require
  :system             the full system prompt the agent sees
  :transcript         the episode so far
  :end [TEXT]         send TEXT (or an empty reply) as a plain message: it ends the turn, unless
                      the task's simulated user answers it
  :help               this text
  :quit               stop (the episode counts as failed)"""


def parse_line(line: str, tool_names: Iterable[str]) -> Any:
    """Turn one REPL line into a ToolEnv action; ValueError for a line that looks like a call but is broken.

    ``name {json}`` and ``name(k=v)`` become structured calls, a bare tool name a call with no
    arguments; JSON calls and ``<tool_call>`` blocks pass through as text (the env parses them), and
    so does everything else, which is a message that ends the turn. A line that starts like a call
    (``name {``, ``tool(``, ``{``, ``[``) but does not parse is refused rather than sent as a message.
    """
    text = line.strip()
    names = set(tool_names)
    m = _SHORTHAND.match(text)
    if m and (m.group(2) is not None or m.group(1) in names):
        try:
            args = load_json(m.group(2)) if m.group(2) else {}
        except json.JSONDecodeError as e:
            raise ValueError(f"arguments of {m.group(1)} are not valid JSON: {e.msg} "
                             f"(column {e.colno})") from None
        if not isinstance(args, dict):
            raise ValueError("arguments must be a JSON object")
        return {"content": "", "tool_calls": [{"name": m.group(1), "arguments": args}]}
    if _PYCALL.match(text):
        call = _python_call(text)
        if call is not None:
            return {"content": "", "tool_calls": [call]}
    head = re.match(r"^([A-Za-z_]\w*)\s*([({])", text)
    if head and (head.group(2) == "{" or head.group(1) in names):
        why = "write name {\"arg\": value} or name(arg=value)"
        if head.group(2) == "{":
            try:
                load_json(text[head.end() - 1:])
            except json.JSONDecodeError as e:
                why = f"its arguments are not valid JSON: {e.msg} (column {head.end() - 1 + e.colno})"
        raise ValueError(f"this looks like a call of {head.group(1)} but does not parse: {why} "
                         "(:end TEXT sends a line as a message)")
    if text[:1] in "{[":
        try:
            load_json(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"this looks like a JSON call but is not valid JSON: {e.msg} "
                             "(:end TEXT sends a line as a message)") from None
    return text


def _python_call(text: str) -> dict[str, Any] | None:
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, RecursionError, MemoryError, ValueError):  # deep or huge input is not a call
        return None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.args:
        return None
    args: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            return None
        try:
            args[kw.arg] = ast.literal_eval(kw.value)
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            return None
    return {"name": node.func.id, "arguments": args}


class Player:
    """The play REPL's state: one ToolEnv episode, its running reward, and how to print things."""

    def __init__(self, env: ToolEnv, console: Console, *, interactive: bool):
        self.env = env
        self.console = console
        self.interactive = interactive
        self.total = 0.0
        self.finished = False
        self.quit = False

    # -- output --------------------------------------------------------------------------------
    def say(self, *parts: Any) -> None:
        self.console.print(*parts)

    def intro(self, executor: str) -> None:
        spec, task = self.env.env_spec, self.env.task
        assert task is not None
        tools = ", ".join(t["name"] for t in self.env._tool_dicts)  # those the task offers as it begins
        setup = (f"{task.id} ({task.kind}), {_plural(len(task.turns), 'turn')} · "
                 f"reward {self.env.reward_mode} · executor {executor} · max {self.env.max_steps} actions")
        body = Group(
            display.text(f"You are an assistant operating {spec.title}. {spec.description}".strip()),
            Text.assemble(("tools: ", "dim"), display.clean(tools), ("  (:tools for details)", "dim")),
            Text.assemble(("task: ", "dim"), display.clean(setup)),
        )
        self.say(Panel(body, title=Text.assemble((display.clean(spec.title), "bold"), "  ", (spec.id, "dim")),
                       title_align="left"))
        if self.interactive:
            self.say(Text("Type a tool call, a message to end the turn, or :help.", style="dim"))

    def instruction(self, text: str) -> None:
        assert self.env.task is not None
        n = len(self.env.task.turns)
        self.say(Text.assemble((f"[user] turn {self.env.turn_index + 1}/{n}: ", "bold blue"), display.clean(text)))

    # -- one line ------------------------------------------------------------------------------
    def handle(self, line: str) -> None:
        text = line.strip()
        if text.startswith(":"):
            self.command(text)
            return
        if self.finished:
            self.say(Text("the episode is over: :state and :transcript inspect it, :quit leaves", style="dim"))
            return
        try:
            action = parse_line(text, [t.name for t in self.env.env_spec.tools])
        except ValueError as e:
            self.say(display.text(f"not sent: {e}", "red"))
            return
        self.act(action)

    def act(self, action: Any) -> None:
        turn_index = self.env.turn_index
        is_message = parse_action(action).is_message
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.total += reward
        if not is_message:
            self._show_calls(info, obs)
        if "user_reply" in info:
            self.say(Text.assemble(("[user] ", "bold blue"), display.clean(info["user_reply"])))
        if "checks" in info:
            self._show_checks(turn_index, info, reward)
        if terminated or truncated:
            self._finish(info, truncated)
        elif is_message and "user_reply" not in info:
            self.instruction(obs)

    def _show_calls(self, info: dict[str, Any], obs: str) -> None:
        for r in info.get("tool_results", []):
            call = display.clean(format_call(r["name"], r["arguments"]))
            if r["ok"]:
                self.say(Text.assemble(("[call] ", "bold cyan"), call))
            else:
                self.say(Text.assemble(("[call] ", "bold cyan"), call,
                                       (f"  → {display.clean(r['error_type'])}", "red")))
        for err in info.get("parse_errors", []):
            self.say(Text.assemble(("[parse error] ", "bold red"), display.clean(err)))
        self.say(Text.assemble(("[observation] ", "bold"), display.clean(obs)))

    def _show_checks(self, turn_index: int, info: dict[str, Any], reward: float) -> None:
        assert self.env.task is not None
        turn = self.env.task.turns[turn_index]
        passed = bool(info.get("turn_passed"))
        n_turns = len(self.env.task.turns)
        self.say(Text.assemble((f"[turn {turn_index + 1}/{n_turns}] ", "bold"),
                               ("PASSED" if passed else "FAILED", "bold green" if passed else "bold red"),
                               (f"  {self._reward_note(turn_index, n_turns, reward)}", "dim")))
        for c in info["checks"]:
            mark, style = ("pass", "green") if c["passed"] else ("FAIL", "red")
            summary = display.clean(check_summary(turn.checks[c["index"]]))
            line = Text.assemble(("  " + mark, style), f"  {display.clean(c['kind'])}: {summary}")
            if not c["passed"] and c.get("detail"):
                line.append(f"\n        {display.clean(c['detail'])}", style="dim")
            self.say(line)

    def _reward_note(self, turn_index: int, n_turns: int, reward: float) -> str:
        """What this turn's reward means: in ``episode`` mode it is paid only when the last turn ends."""
        if self.env.reward_mode == "episode" and turn_index + 1 < n_turns:
            return "(reward comes at the end of the episode)"
        return f"reward {reward:g}"

    def _finish(self, info: dict[str, Any], truncated: bool) -> None:
        self.finished = True
        score = info.get("score") or self.env.score()
        if truncated:
            self.say(Text(f"[episode] truncated after {self.env.max_steps} actions", style="yellow"))
        ok = self.succeeded
        self.say(Text.assemble(("[episode] ", "bold"), ("reward " + f"{self.total:g}",
                                                         "bold green" if ok else "bold red"),
                               f"  (episode {score['episode']:g} · turns {score['turns']:.2f} · checks "
                               f"{score['checks']:.2f})"))
        if self.interactive:
            self.say(Text("episode over: :state and :transcript inspect it, :quit leaves", style="dim"))

    @property
    def succeeded(self) -> bool:
        return self.finished and math.isclose(self.total, 1.0, abs_tol=1e-9)

    # -- :commands -----------------------------------------------------------------------------
    def command(self, text: str) -> None:
        name, _, arg = text[1:].partition(" ")
        arg = arg.strip()
        handlers = {"tools": self._cmd_tools, "state": self._cmd_state, "reference": self._cmd_reference,
                    "ref": self._cmd_reference, "checks": self._cmd_checks, "system": self._cmd_system,
                    "transcript": self._cmd_transcript, "end": self._cmd_end, "help": self._cmd_help,
                    "h": self._cmd_help, "quit": self._cmd_quit, "q": self._cmd_quit, "exit": self._cmd_quit}
        handler = handlers.get(name)
        if handler is None:
            hint = did_you_mean(name, handlers, n=1, show=lambda c: f":{c}")
            self.say(display.text(f"unknown command :{name}{hint} (:help lists them)", "red"))
            return
        handler(arg)

    def _cmd_tools(self, arg: str) -> None:
        self.say(_tools_table(self.env.env_spec, offered=self.env._offered))

    def _cmd_state(self, arg: str) -> None:
        assert self.env.session is not None
        dump = self.env.session.dump([arg] if arg else None, limit=100 if arg else 10)
        if arg and arg not in dump:
            everything = self.env.session.dump(limit=0)
            self.say(display.text(f"no table {arg!r}; tables: {', '.join(everything)}", "red"))
            return
        for name, t in dump.items():
            self.say(_rows_table(name, t))

    def _current_turn(self) -> Turn | None:
        if self.finished or self.env.task is None:
            self.say(Text("the episode is over", style="dim"))
            return None
        return self.env.task.turns[self.env.turn_index]

    def _cmd_reference(self, arg: str) -> None:
        turn = self._current_turn()
        if turn is None:
            return
        if not turn.reference:
            self.say(Text("(the reference makes no calls this turn)", style="dim"))
        for item in turn.reference:
            self.say(display.text(format_call(item.name, item.arguments) if isinstance(item, ToolCall) else
                                  f"say {json.dumps(item.say, ensure_ascii=False)} (the user answers it)"))
        replies = [a for c in turn.checks if (a := c.answers())]
        for any_of in replies:
            self.say(display.text(f"then reply with a message containing one of {json.dumps(any_of)}", "dim"))
        if turn.expects and not replies:
            move = "ask the user first" if turn.expects == "ask" else "say it cannot be done"
            self.say(Text(f"then {move}, changing nothing, to end the turn", style="dim"))
        elif not replies:
            self.say(Text("then reply with a message (e.g. Done.) to end the turn", style="dim"))

    def _cmd_checks(self, arg: str) -> None:
        turn = self._current_turn()
        for ci, check in enumerate(turn.checks if turn else []):
            self.say(display.text(f"[{ci + 1}] {check.kind}: {check_summary(check)}"))

    def _cmd_system(self, arg: str) -> None:
        self.say(display.text(self.env.system_prompt))

    def _cmd_transcript(self, arg: str) -> None:
        self.say(display.text(self.env.render() or ""))

    def _cmd_end(self, arg: str) -> None:
        if self._current_turn() is not None:
            self.act({"content": arg, "tool_calls": []})

    def _cmd_help(self, arg: str) -> None:
        self.say(Text(HELP))

    def _cmd_quit(self, arg: str) -> None:
        self.quit = True


def _interactive_lines(console: Console) -> Iterator[str]:
    try:
        import readline  # noqa: F401  (line editing and history for input())
    except ImportError:
        pass
    while True:
        try:
            yield console.input("[bold cyan]›[/] ")
        except EOFError:
            console.print()
            return
        except KeyboardInterrupt:
            console.print()
            return


def _script_lines(stream: Iterable[str]) -> Iterator[str]:
    for raw in stream:
        line = raw.rstrip("\n")
        if line.strip() and not line.lstrip().startswith("#"):
            yield line


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("spec_ref", metavar="PATH")
@click.option("--task", "task_id", metavar="ID", default=None, help="Task to play [default: the first].")
@click.option("--executor", type=click.Choice(EXECUTORS), default=None,
              help="Where tool code runs [default: inprocess for shipped examples, else worker].")
@click.option("--reward-mode", type=click.Choice(REWARD_MODES), default="episode", show_default=True,
              help="episode: 1.0 iff every check passes; turns / checks: the fraction passed.")
@click.option("--max-steps", type=click.IntRange(1), default=32, show_default=True,
              help="Actions before the episode is truncated.")
@click.option("--seed", type=int, default=0, show_default=True, help="Episode seed.")
@click.option("--library", type=click.Path(file_okay=False), default=None, metavar="LIBRARY",
              help="Read PATH as an environment id of this library folder.")
def play(spec_ref: str, task_id: str | None, executor: str | None, reward_mode: str, max_steps: int,
         seed: int, library: str | None) -> None:
    """Play a task of PATH (a spec file, a shipped example's name, or LIBRARY/ENV_ID) by hand.

    Reads lines from standard input; when it is not a terminal, runs them as a
    script (no prompts; blank lines and # comments skipped) and exits 0 if the
    episode's reward is 1.0, else 1. Type :help in the REPL for the syntax.
    """
    located, spec = _load(spec_ref, library)
    try:
        task = spec.task(task_id)
    except (KeyError, IndexError):
        raise click.BadParameter(f"no task {task_id!r}; tasks are {[t.id for t in spec.tasks]}",
                                 param_hint="--task") from None
    mode = executor or located.default_executor
    interactive = sys.stdin.isatty()
    console = Console(highlight=False, soft_wrap=not interactive)  # a script's log keeps one line per event
    env = ToolEnv(spec, task=task.id, reward_mode=reward_mode, max_steps=max_steps, render_mode="ansi",
                  executor=make_executor(mode))
    try:
        obs, _ = env.reset(seed=seed, options={"task": task.id, "episode_seed": seed})
    except LoadFailure as e:
        env.executor.close()
        raise click.ClickException(f"the environment could not be loaded: {e}") from None
    player = Player(env, console, interactive=interactive)
    try:
        player.intro(mode)
        player.instruction(obs)
        lines = _interactive_lines(console) if interactive else _script_lines(sys.stdin)
        for line in lines:
            if not interactive:
                console.print(display.text(f"> {line}", "dim"))
            player.handle(line)
            if player.quit or (player.finished and not interactive):
                break
        if not player.finished:
            console.print(Text("[episode] not finished: no more input" if not player.quit else
                               "[episode] quit before the end", style="yellow"))
    finally:
        executor_obj = env.executor
        env.close()
        executor_obj.close()
    sys.exit(0 if player.succeeded else 1)

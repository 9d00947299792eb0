"""``envwright show``, ``play`` and ``schema``: look at an environment, play it by hand, export the format.

Loaded lazily by :mod:`envgen.command`; importing this module costs the runtime
(pydantic, gymnasium) but nothing heavier.

* ``show PATH`` describes a spec: title, description, provenance and source;
  tools with typed parameters; the backend's tables with row counts (built
  through an executor session); every task with its turns, checks and
  reference calls. ``--json`` prints the same as one JSON object.
* ``play PATH --task ID`` is a REPL over :class:`~gym_envs.env.ToolEnv`. A line
  is a tool call (``name {"arg": 1}``, ``name(arg=1)``, JSON
  ``{"name": .., "arguments": ..}`` or ``<tool_call>..</tool_call>``), a
  ``:command`` (``:help`` lists them) or a plain message, which ends the turn
  and shows each check's verdict. With stdin not a terminal it reads the
  lines as a script (blank lines and ``#`` comments skipped, no prompts) and
  exits 0 if the episode's reward is 1.0, else 1.
* ``schema`` prints the JSON Schema of the spec (``--out FILE`` writes it).

``PATH`` is a spec file or the name of a shipped example
(:mod:`gym_envs.examples`). Shipped examples run on the ``inprocess`` executor
by default (they are trusted); anything else on ``worker`` (isolated).
"""

from __future__ import annotations

import ast
import difflib
import json
import math
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from gym_envs.env import REWARD_MODES, ToolEnv
from gym_envs.parsing import load_json, parse_action
from gym_envs.sandbox import LoadFailure, make_executor
from gym_envs.spec import EnvSpec, SpecError, Tool, Turn, atomic_write_text, json_schema, load_spec

__all__ = ["LocatedSpec", "Player", "check_summary", "describe", "example_names", "format_call", "locate_spec",
           "parse_line", "play", "schema", "show", "tool_parameters"]

EXECUTORS = ("worker", "inprocess")


# ============================================================================================
# Finding a spec: a file, or the name of a shipped example
# ============================================================================================


@dataclass(frozen=True)
class LocatedSpec:
    """Where a spec reference points: its file and, for a shipped example, the example's name."""

    path: Path
    example: str | None = None

    @property
    def default_executor(self) -> str:
        """``inprocess`` for shipped (trusted) examples, ``worker`` for everything else."""
        return "inprocess" if self.example else "worker"


def _examples() -> Any | None:
    """:mod:`gym_envs.examples` when it provides ``list_examples`` and ``example_path``, else None."""
    try:
        from gym_envs import examples
    except ImportError:
        return None
    if not all(hasattr(examples, a) for a in ("list_examples", "example_path")):
        return None  # not there yet (e.g. a folder of JSON files without its module)
    return examples


def example_names() -> list[str] | None:
    """Names of the shipped examples, or None when this installation has none."""
    mod = _examples()
    return None if mod is None else list(mod.list_examples())


def locate_spec(ref: str) -> LocatedSpec:
    """Resolve ``ref`` (a spec file, or a shipped example's name); LookupError says what exists."""
    path = Path(ref).expanduser()
    mod = _examples()
    shipped = {n: Path(mod.example_path(n)) for n in mod.list_examples()} if mod is not None else {}
    names = list(shipped)
    if path.is_file():
        resolved = path.resolve()
        for name, example in shipped.items():
            if example.resolve() == resolved:
                return LocatedSpec(path, name)
        return LocatedSpec(path)
    if ref in shipped:
        return LocatedSpec(shipped[ref], ref)
    if path.is_dir():
        raise LookupError(f"{ref} is a directory; give one spec file (or a shipped example's name)")
    msg = f"no spec file or shipped example named {ref!r}"
    close = difflib.get_close_matches(ref, names, n=3)
    if close:
        msg += f"; did you mean {' or '.join(repr(c) for c in close)}?"
    elif names:
        msg += f"; shipped examples: {', '.join(names)}"
    elif mod is None:
        msg += " (this installation ships no examples: gym_envs.examples is missing)"
    raise LookupError(msg)


def _load(ref: str) -> tuple[LocatedSpec, EnvSpec]:
    """Locate and parse a spec for a command, turning failures into click errors."""
    try:
        located = locate_spec(ref)
    except LookupError as e:
        raise click.ClickException(str(e)) from None
    try:
        return located, load_spec(located.path)
    except SpecError as e:
        raise click.ClickException(str(e)) from None
    except OSError as e:
        raise click.ClickException(f"cannot read {located.path}: {e}") from None


# ============================================================================================
# Describing tools, checks and calls (shared by show and play)
# ============================================================================================


def _type_of(schema: dict[str, Any]) -> str:
    t = schema.get("type")
    if isinstance(t, list):
        text = "|".join(str(x) for x in t)
    elif t == "array" and isinstance(schema.get("items"), dict):
        text = f"array[{_type_of(schema['items'])}]"
    else:
        text = str(t) if t else ("enum" if "enum" in schema else "any")
    if "enum" in schema:
        text += " (" + "|".join(json.dumps(v) for v in schema["enum"]) + ")"
    return text


def tool_parameters(tool: Tool) -> list[dict[str, Any]]:
    """One row per parameter: name, type, required, description, default."""
    props = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    return [{"name": name, "type": _type_of(schema), "required": name in required,
             "description": schema.get("description", ""), "default": schema.get("default")}
            for name, schema in props.items()]


def _clip(text: str, n: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def check_summary(check: Any) -> str:
    """One line saying what a check requires."""
    c = check if isinstance(check, dict) else check.model_dump()
    kind = c.get("kind")
    if kind == "sql":
        order = " (ordered)" if c.get("ordered") else ""
        return f"{_clip(c['query'])} = {json.dumps(c['expect'])}{order}"
    if kind == "python":
        body = [ln for ln in c["code"].splitlines() if ln.strip()]
        return f"def check(db) … ({len(body)} lines)"
    if kind == "reply_contains":
        return "any of " + json.dumps(c["any_of"], ensure_ascii=False)
    if kind == "unchanged":
        return ", ".join(c["tables"]) if c.get("tables") else "all tables"
    if kind == "calls":
        parts = []
        if c.get("require"):
            parts.append("require " + ", ".join(c["require"]))
        if c.get("forbid"):
            parts.append("forbid " + ", ".join(c["forbid"]))
        return "; ".join(parts)
    return json.dumps(c)


def format_call(name: str, arguments: dict[str, Any]) -> str:
    """A call in the play REPL's shorthand, ``name {"arg": 1}`` (paste it back to replay it)."""
    return f"{name} {json.dumps(arguments, ensure_ascii=False)}" if arguments else name


def _tools_table(spec: EnvSpec) -> Table:
    table = Table(title="Tools", title_justify="left", show_lines=True, expand=False)
    table.add_column("tool", style="bold cyan", no_wrap=True)
    table.add_column("parameters (* required)")
    table.add_column("description")
    for tool in spec.tools:
        params = Text()
        for i, p in enumerate(tool_parameters(tool)):
            if i:
                params.append("\n")
            params.append(p["name"], style="bold")
            params.append(("*" if p["required"] else "") + ": ", style="red" if p["required"] else "")
            params.append(p["type"], style="green")
            if p["description"]:
                params.append(f"  {p['description']}", style="dim")
        table.add_row(tool.name, params if tool_parameters(tool) else Text("(none)", style="dim"),
                      Text(tool.description))
    return table


def _tables_table(dump: dict[str, Any], title: str = "Tables") -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("table", style="bold cyan", no_wrap=True)
    table.add_column("rows", justify="right")
    table.add_column("columns")
    for name, t in dump.items():
        table.add_row(name, str(t["count"]), Text(", ".join(t["columns"]), style="dim"))
    return table


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _rows_table(name: str, t: dict[str, Any]) -> Group:
    shown = len(t["rows"])
    note = _plural(t["count"], "row") + (f", first {shown} shown" if shown < t["count"] else "")
    table = Table()
    for col in t["columns"]:
        table.add_column(col)
    for row in t["rows"]:
        table.add_row(*[Text("NULL", style="dim") if v is None else Text(str(v)) for v in row])
    return Group(Text.assemble((name, "bold cyan"), f"  ({note})"), table)


def _turn_tree(tree: Tree, index: int, n_turns: int, turn: Turn) -> None:
    node = tree.add(Text.assemble((f"turn {index + 1}/{n_turns}: ", "bold"), turn.instruction))
    checks = node.add(Text("checks", style="yellow"))
    for ci, check in enumerate(turn.checks):
        checks.add(Text.assemble((f"[{ci}] {check.kind}: ", "yellow"), check_summary(check)))
    ref = node.add(Text("reference", style="green"))
    if not turn.reference:
        ref.add(Text("(no calls)", style="dim"))
    for call in turn.reference:
        ref.add(Text(format_call(call.name, call.arguments)))


# ============================================================================================
# show
# ============================================================================================


def _dump_tables(spec: EnvSpec, executor: str, rows: int) -> tuple[dict[str, Any] | None, str | None]:
    """Row counts (and up to ``rows`` rows) of each table, built through an executor session."""
    ex = make_executor(executor)
    try:
        session = ex.session(spec, seed=0)
        try:
            return session.dump(limit=rows), None
        finally:
            session.close()
    except LoadFailure as e:
        return None, str(e)
    finally:
        ex.close()


def describe(spec: EnvSpec, tables: dict[str, Any] | None, tables_error: str | None,
             located: LocatedSpec | None = None) -> dict[str, Any]:
    """Everything ``show --json`` prints."""
    return {
        "id": spec.id, "title": spec.title, "description": spec.description,
        "spec_version": spec.spec_version,
        "path": str(located.path) if located else None, "example": located.example if located else None,
        "source": spec.source.model_dump() if spec.source else None,
        "provenance": spec.provenance.model_dump(),
        "tools": [{"name": t.name, "description": t.description, "parameters": tool_parameters(t),
                   "schema": t.parameters} for t in spec.tools],
        "tables": None if tables is None else [{"name": n, "rows": t["count"], "columns": t["columns"]}
                                               for n, t in tables.items()],
        "tables_error": tables_error,
        "tasks": [{"id": task.id, "kind": task.kind, "turns": [
            {"instruction": turn.instruction,
             "checks": [c.model_dump() | {"summary": check_summary(c)} for c in turn.checks],
             "reference": [c.model_dump() for c in turn.reference]} for turn in task.turns]}
            for task in spec.tasks],
    }


def _header(spec: EnvSpec, located: LocatedSpec) -> Panel:
    meta = Table.grid(padding=(0, 2))
    meta.add_column(style="dim")
    meta.add_column()
    where = str(located.path) + (f"  (shipped example '{located.example}')" if located.example else "")
    meta.add_row("file", where)
    p = spec.provenance
    prov = f"{p.generator} · stream {p.stream}"
    for label, value in (("skill", p.skill_id), ("seed", p.seed), ("created", p.created_at)):
        if value is not None:
            prov += f" · {label} {value}"
    if p.parents:
        prov += f" · parents {', '.join(p.parents)}"
    meta.add_row("provenance", prov)
    if spec.source:
        s = spec.source
        src = f"{s.corpus}:{s.doc_id}" + (f"  {s.path}" if s.path else "")
        src += f"  sha256 {s.sha256[:12]}…" if s.sha256 else ""
        meta.add_row("source", src)
    else:
        meta.add_row("source", "none (hand-written)")
    body = Group(Text(spec.description or "(no description)"), Text(), meta)
    return Panel(body, title=Text.assemble((spec.title, "bold"), "  ", (spec.id, "dim")), title_align="left")


@click.command()
@click.argument("spec_ref", metavar="PATH")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
@click.option("--task", "task_ids", multiple=True, metavar="ID", help="Show only these tasks (repeatable).")
@click.option("--rows", type=click.IntRange(0, 1000), default=0, show_default=True,
              help="Also print up to this many rows of each table.")
@click.option("--executor", type=click.Choice(EXECUTORS), default=None,
              help="Executor that builds the tables [default: inprocess for shipped examples, else worker].")
def show(spec_ref: str, as_json: bool, task_ids: tuple[str, ...], rows: int, executor: str | None) -> None:
    """Describe an environment: PATH is a spec file or a shipped example's name."""
    located, spec = _load(spec_ref)
    if task_ids:
        try:
            keep = {spec.task(t).id for t in task_ids}
        except KeyError as e:
            raise click.BadParameter(str(e.args[0]), param_hint="--task") from None
        spec = spec.model_copy(update={"tasks": [t for t in spec.tasks if t.id in keep]})
    tables, error = _dump_tables(spec, executor or located.default_executor, rows)
    if as_json:
        click.echo(json.dumps(describe(spec, tables, error, located), indent=2, ensure_ascii=False))
        return
    console = Console(highlight=False)
    console.print(_header(spec, located))
    console.print(_tools_table(spec))
    if tables is None:
        console.print(Text(f"Tables: the state could not be built: {error}", style="bold red"))
    else:
        console.print(_tables_table(tables))
        for name, t in tables.items():
            if rows and t["rows"]:
                console.print(_rows_table(name, t))
    tree = Tree(Text(f"Tasks ({len(spec.tasks)})", style="bold"))
    for task in spec.tasks:
        head = Text.assemble((task.id, "bold magenta"), f"  {task.kind} · {_plural(len(task.turns), 'turn')}")
        node = tree.add(head)
        for i, turn in enumerate(task.turns):
            _turn_tree(node, i, len(task.turns), turn)
    console.print(tree)


# ============================================================================================
# schema
# ============================================================================================


@click.command()
@click.option("--out", "out", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the schema to this file instead of standard output.")
def schema(out: str | None) -> None:
    """Print the JSON Schema of the environment spec (spec_version 1)."""
    text = json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"
    if out is None:
        click.echo(text, nl=False)
        return
    atomic_write_text(out, text)
    click.echo(f"wrote {out}", err=True)


# ============================================================================================
# play
# ============================================================================================

_SHORTHAND = re.compile(r"^([A-Za-z_]\w*)\s*(\{.*\})?\s*$", re.S)
_PYCALL = re.compile(r"^[A-Za-z_]\w*\s*\(.*\)\s*$", re.S)

HELP = """\
Type a tool call to see its result, or a plain message to end the turn.
  name {"arg": 1}                      call a tool (JSON arguments; a bare tool name calls it with none)
  name(arg=1, other="x")               the same, Python style
  {"name": .., "arguments": {..}}      JSON call (also a list of them, or <tool_call>..</tool_call>)
  anything else                        a message to the user: ends the turn and scores its checks
Commands:
  :tools              the tools and their parameters
  :state [TABLE]      the database now (every table, or one)
  :reference          the reference calls for this turn (shorthand you can paste)
  :checks             what this turn's checks require
  :system             the full system prompt the agent sees
  :transcript         the episode so far
  :end [TEXT]         end the turn with TEXT (or an empty reply)
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
        tools = ", ".join(t.name for t in spec.tools)
        setup = (f"{task.id} ({task.kind}), {_plural(len(task.turns), 'turn')} · "
                 f"reward {self.env.reward_mode} · executor {executor} · max {self.env.max_steps} actions")
        body = Group(
            Text(f"You are an assistant operating {spec.title}. {spec.description}".strip()),
            Text.assemble(("tools: ", "dim"), tools, ("  (:tools for details)", "dim")),
            Text.assemble(("task: ", "dim"), setup),
        )
        self.say(Panel(body, title=Text.assemble((spec.title, "bold"), "  ", (spec.id, "dim")),
                       title_align="left"))
        if self.interactive:
            self.say(Text("Type a tool call, a message to end the turn, or :help.", style="dim"))

    def instruction(self, text: str) -> None:
        assert self.env.task is not None
        n = len(self.env.task.turns)
        self.say(Text.assemble((f"[user] turn {self.env.turn_index + 1}/{n}: ", "bold blue"), text))

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
            self.say(Text(f"not sent: {e}", style="red"))
            return
        self.act(action)

    def act(self, action: Any) -> None:
        turn_index = self.env.turn_index
        is_message = parse_action(action).is_message
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.total += reward
        if not is_message:
            self._show_calls(info, obs)
        if "checks" in info:
            self._show_checks(turn_index, info, reward)
        if terminated or truncated:
            self._finish(info, truncated)
        elif is_message:
            self.instruction(obs)

    def _show_calls(self, info: dict[str, Any], obs: str) -> None:
        for r in info.get("tool_results", []):
            call = format_call(r["name"], r["arguments"])
            if r["ok"]:
                self.say(Text.assemble(("[call] ", "bold cyan"), call))
            else:
                self.say(Text.assemble(("[call] ", "bold cyan"), call, (f"  → {r['error_type']}", "red")))
        for err in info.get("parse_errors", []):
            self.say(Text.assemble(("[parse error] ", "bold red"), err))
        self.say(Text.assemble(("[observation] ", "bold"), obs))

    def _show_checks(self, turn_index: int, info: dict[str, Any], reward: float) -> None:
        assert self.env.task is not None
        turn = self.env.task.turns[turn_index]
        passed = bool(info.get("turn_passed"))
        self.say(Text.assemble((f"[turn {turn_index + 1}/{len(self.env.task.turns)}] ", "bold"),
                               ("PASSED" if passed else "FAILED", "bold green" if passed else "bold red"),
                               (f"  reward {reward:g}", "dim")))
        for c in info["checks"]:
            mark, style = ("pass", "green") if c["passed"] else ("FAIL", "red")
            summary = check_summary(turn.checks[c["index"]])
            line = Text.assemble(("  " + mark, style), f"  {c['kind']}: {summary}")
            if not c["passed"] and c.get("detail"):
                line.append(f"\n        {c['detail']}", style="dim")
            self.say(line)

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
            close = difflib.get_close_matches(name, list(handlers), n=1)
            hint = f" Did you mean :{close[0]}?" if close else ""
            self.say(Text(f"unknown command :{name}.{hint} Type :help.", style="red"))
            return
        handler(arg)

    def _cmd_tools(self, arg: str) -> None:
        self.say(_tools_table(self.env.env_spec))

    def _cmd_state(self, arg: str) -> None:
        assert self.env.session is not None
        dump = self.env.session.dump([arg] if arg else None, limit=100 if arg else 10)
        if arg and arg not in dump:
            everything = self.env.session.dump(limit=0)
            self.say(Text(f"no table {arg!r}; tables: {', '.join(everything)}", style="red"))
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
        for call in turn.reference:
            self.say(Text(format_call(call.name, call.arguments)))
        replies = [c.any_of for c in turn.checks if c.kind == "reply_contains"]
        for any_of in replies:
            self.say(Text(f"then reply with a message containing one of {json.dumps(any_of)}", style="dim"))
        if not replies:
            self.say(Text("then reply with a message (e.g. Done.) to end the turn", style="dim"))

    def _cmd_checks(self, arg: str) -> None:
        turn = self._current_turn()
        for ci, check in enumerate(turn.checks if turn else []):
            self.say(Text(f"[{ci}] {check.kind}: {check_summary(check)}"))

    def _cmd_system(self, arg: str) -> None:
        self.say(Text(self.env.system_prompt))

    def _cmd_transcript(self, arg: str) -> None:
        self.say(Text(self.env.render() or ""))

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


@click.command()
@click.argument("spec_ref", metavar="PATH")
@click.option("--task", "task_id", metavar="ID", default=None, help="Task to play [default: the first].")
@click.option("--executor", type=click.Choice(EXECUTORS), default=None,
              help="Where tool code runs [default: inprocess for shipped examples, else worker].")
@click.option("--reward-mode", type=click.Choice(REWARD_MODES), default="episode", show_default=True,
              help="episode: 1.0 iff every check passes; turns / checks: the fraction passed.")
@click.option("--max-steps", type=click.IntRange(1), default=32, show_default=True,
              help="Actions before the episode is truncated.")
@click.option("--seed", type=int, default=0, show_default=True, help="Episode seed.")
def play(spec_ref: str, task_id: str | None, executor: str | None, reward_mode: str, max_steps: int,
         seed: int) -> None:
    """Play a task of PATH (a spec file or a shipped example's name) by hand.

    Reads lines from standard input; when it is not a terminal, runs them as a
    script (no prompts; blank lines and # comments skipped) and exits 0 if the
    episode's reward is 1.0, else 1. Type :help in the REPL for the syntax.
    """
    located, spec = _load(spec_ref)
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
                console.print(Text(f"> {line}", style="dim"))
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

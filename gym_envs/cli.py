"""``envwright show``, ``play`` and ``schema``: look at an environment, play it by hand, export the format.

Loaded lazily by the root command (:mod:`envgen.cli`); importing this module costs the runtime
(pydantic, gymnasium) but nothing heavier.

* ``show PATH`` describes a spec: title, description, provenance and source;
  tools with typed parameters; the backend's tables with row counts (built
  through an executor session); every task with its turns, checks and
  reference calls. ``--json`` prints the same as one JSON object.
* ``play PATH --task ID`` is a REPL over :class:`~gym_envs.env.ToolEnv`; it
  lives in :mod:`gym_envs.play` and shares the helpers here.
* ``schema`` prints the JSON Schema of the spec (``--out FILE`` writes it).

``PATH`` is a spec file, the name of a shipped example
(:mod:`gym_envs.examples`), ``LIBRARY/ENV_ID`` (an environment of a generated
library), or an environment id with ``--library LIBRARY``. Shipped examples run on the ``inprocess`` executor
by default (they are trusted); anything else on ``worker`` (isolated).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from corpora.errors import did_you_mean
from gym_envs import display
from gym_envs.checks import parse_check
from gym_envs.sandbox import LoadFailure, make_executor
from gym_envs.spec import EnvSpec, SpecError, Tool, ToolCall, Turn, atomic_write_text, load_spec
from gym_envs.spec_schema import json_schema
from gym_envs.users import Scenario

__all__ = ["EXECUTORS", "LocatedSpec", "check_summary", "describe", "example_names", "format_call", "locate_spec",
           "schema", "show", "source_label", "tool_parameters"]

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


def _library_specs(folder: Path) -> dict[str, Path]:
    """The spec files of a library folder (``LIBRARY/specs/<env_id>.json``) by environment id."""
    return {p.stem: p for p in sorted((folder / "specs").glob("*.json"))} if (folder / "specs").is_dir() else {}


def _in_library(library: Path, env_id: str) -> LocatedSpec:
    specs = _library_specs(library)
    stem = env_id.removesuffix(".json")
    if stem in specs:
        return LocatedSpec(specs[stem])
    if not specs and not library.is_dir():
        raise LookupError(f"no library folder {library}")
    hint = did_you_mean(stem, specs, cutoff=0.5) or (
        f" ({len(specs)} environments; envwright list {library} shows them)" if specs else
        f" ({library} has no specs/ folder: is it a library?)")
    raise LookupError(f"no environment {env_id!r} in library {library}{hint}")


def locate_spec(ref: str, library: str | Path | None = None) -> LocatedSpec:
    """Resolve ``ref``; LookupError says what exists.

    ``ref`` is a spec file, a shipped example's name, ``LIBRARY/ENV_ID`` (an environment of a library
    folder, whose specs live in ``LIBRARY/specs/``), or with ``library`` an environment id of that library.
    """
    path = Path(ref).expanduser()
    if library is not None:
        return _in_library(Path(library).expanduser(), ref)
    if not path.exists() and path.parent != path and _library_specs(path.parent):
        return _in_library(path.parent, path.name)
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
        inside = _library_specs(path)
        if inside:
            first = next(iter(inside))
            raise LookupError(f"{ref} is a library; name one of its {len(inside)} environments, e.g. "
                              f"{Path(ref) / first} (envwright list {ref} shows them)")
        raise LookupError(f"{ref} is a directory; give one spec file (or a shipped example's name)")
    msg = f"no spec file or shipped example named {ref!r}"
    hint = did_you_mean(ref, names)
    if hint:
        msg += hint
    elif names:
        msg += f"; shipped examples: {', '.join(names)}"
    elif mod is None:
        msg += " (this installation ships no examples: gym_envs.examples is missing)"
    raise LookupError(msg)


def _load(ref: str, library: str | None = None) -> tuple[LocatedSpec, EnvSpec]:
    """Locate and parse a spec for a command, turning failures into click errors."""
    try:
        located = locate_spec(ref, library)
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
    """One line saying what a check requires (its kind's :meth:`~gym_envs.checks.BaseCheck.summary`; a dict is
    validated by its kind first)."""
    try:
        return parse_check(check).summary()
    except (ValueError, TypeError):  # not a valid check: show it as it is
        return json.dumps(check, ensure_ascii=False, default=str)


def format_call(name: str, arguments: dict[str, Any]) -> str:
    """A call in the play REPL's shorthand, ``name {"arg": 1}`` (paste it back to replay it)."""
    return f"{name} {json.dumps(arguments, ensure_ascii=False)}" if arguments else name


def _tools_table(spec: EnvSpec, offered: Collection[str] | None = None) -> Table:
    """The spec's tools (only those in ``offered``, the tools an episode offers now, when given)."""
    table = Table(title="Tools", title_justify="left", show_lines=True, expand=False)
    table.add_column("tool", style="bold cyan", no_wrap=True)
    table.add_column("parameters (* required)")
    table.add_column("description")
    for tool in spec.tools:
        if offered is not None and tool.name not in offered:
            continue
        params = Text()
        for i, p in enumerate(tool_parameters(tool)):
            if i:
                params.append("\n")
            params.append(display.clean(p["name"]), style="bold")
            params.append(("*" if p["required"] else "") + ": ", style="red" if p["required"] else "")
            params.append(display.clean(p["type"]), style="green")
            if p["description"]:
                params.append(f"  {display.clean(p['description'])}", style="dim")
        table.add_row(display.text(tool.name), params if tool_parameters(tool) else Text("(none)", style="dim"),
                      display.text(tool.description))
    return table


def _tables_table(dump: dict[str, Any], title: str = "Tables") -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("table", style="bold cyan", no_wrap=True)
    table.add_column("rows", justify="right")
    table.add_column("columns")
    for name, t in dump.items():
        table.add_row(display.text(name), str(t["count"]), display.text(", ".join(t["columns"]), "dim"))
    return table


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _rows_table(name: str, t: dict[str, Any]) -> Group:
    shown = len(t["rows"])
    note = _plural(t["count"], "row") + (f", first {shown} shown" if shown < t["count"] else "")
    table = Table()
    for col in t["columns"]:
        table.add_column(display.text(col))
    for row in t["rows"]:
        table.add_row(*[Text("NULL", style="dim") if v is None else display.text(v) for v in row])
    return Group(Text.assemble((display.clean(name), "bold cyan"), f"  ({note})"), table)


def _turn_tree(tree: Tree, index: int, n_turns: int, turn: Turn) -> None:
    expects = f" (expects {turn.expects})" if turn.expects else ""
    node = tree.add(Text.assemble((f"turn {index + 1}/{n_turns}{expects}: ", "bold"), display.clean(turn.instruction)))
    checks = node.add(Text("checks", style="yellow"))
    for ci, check in enumerate(turn.checks):
        checks.add(Text.assemble((f"[{ci + 1}] {check.kind}: ", "yellow"), display.clean(check_summary(check))))
    ref = node.add(Text("reference", style="green"))
    if not turn.reference:
        ref.add(Text("(no calls)", style="dim"))
    for item in turn.reference:
        ref.add(display.text(format_call(item.name, item.arguments) if isinstance(item, ToolCall) else
                             f"say {json.dumps(item.say, ensure_ascii=False)}"))


def _scenario_tree(tree: Tree, scenario: Scenario) -> None:
    node = tree.add(Text("user (scenario)", style="blue"))
    if scenario.persona:
        node.add(display.text(f"persona: {scenario.persona}"))
    node.add(display.text(f"goal: {scenario.goal}"))
    for key, value in scenario.facts.items():
        node.add(display.text(f"knows {key}: {value}"))
    node.add(display.text(f"asked to confirm: {scenario.on_confirm}; unknown: {scenario.unknown!r}; "
                          f"at most {scenario.max_replies} replies a turn"))


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
        "tasks": [{"id": task.id, "kind": task.kind,
                   "scenario": task.scenario.model_dump() if task.scenario is not None else None, "turns": [
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
    meta.add_row("file", display.text(where))
    p = spec.provenance
    prov = f"{p.generator} · stream {p.stream}"
    for label, value in (("skill", p.skill_id), ("seed", p.seed), ("created", p.created_at)):
        if value is not None:
            prov += f" · {label} {value}"
    if p.parents:
        prov += f" · parents {', '.join(p.parents)}"
    meta.add_row("provenance", display.text(prov))
    meta.add_row("source", display.text(source_label(spec)))
    body = Group(display.text(spec.description or "(no description)"), Text(), meta)
    return Panel(body, title=Text.assemble((display.clean(spec.title), "bold"), "  ", (spec.id, "dim")),
                 title_align="left")


def source_label(spec: EnvSpec) -> str:
    """``corpus:doc_id  path  sha256 …`` of a spec's source document (the corpus said once)."""
    s = spec.source
    if s is None:
        return "none (hand-written)"
    doc = s.doc_id if s.doc_id.startswith(f"{s.corpus}:") else f"{s.corpus}:{s.doc_id}"
    return doc + (f"  {s.path}" if s.path else "") + (f"  sha256 {s.sha256[:12]}…" if s.sha256 else "")


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("spec_ref", metavar="PATH")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
@click.option("--task", "task_ids", multiple=True, metavar="ID", help="Show only these tasks (repeatable).")
@click.option("--rows", type=click.IntRange(0, 1000), default=0, show_default=True,
              help="Also print up to this many rows of each table.")
@click.option("--executor", type=click.Choice(EXECUTORS), default=None,
              help="Executor that builds the tables [default: inprocess for shipped examples, else worker].")
@click.option("--library", type=click.Path(file_okay=False), default=None, metavar="LIBRARY",
              help="Read PATH as an environment id of this library folder.")
def show(spec_ref: str, as_json: bool, task_ids: tuple[str, ...], rows: int, executor: str | None,
         library: str | None) -> None:
    """Describe an environment: PATH is a spec file, a shipped example's name, or LIBRARY/ENV_ID."""
    located, spec = _load(spec_ref, library)
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
        console.print(display.text(f"Tables: the state could not be built: {error}", "bold red"))
    else:
        console.print(_tables_table(tables))
        for name, t in tables.items():
            if rows and t["rows"]:
                console.print(_rows_table(name, t))
    tree = Tree(Text(f"Tasks ({len(spec.tasks)})", style="bold"))
    for task in spec.tasks:
        head = Text.assemble((display.clean(task.id), "bold magenta"),
                             f"  {task.kind} · {_plural(len(task.turns), 'turn')}")
        node = tree.add(head)
        if task.scenario is not None:
            _scenario_tree(node, task.scenario)
        for i, turn in enumerate(task.turns):
            _turn_tree(node, i, len(task.turns), turn)
    console.print(tree)


# ============================================================================================
# schema
# ============================================================================================


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--out", "out", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the schema to this file instead of standard output.")
@click.option("--spec-version", "spec_version", type=click.IntRange(1, 2), default=None,
              help="Only what a document of this spec_version may hold (default: every version).")
def schema(out: str | None, spec_version: int | None) -> None:
    """Print the JSON Schema of the environment spec (every spec_version, or --spec-version's)."""
    text = json.dumps(json_schema(spec_version), indent=2, ensure_ascii=False) + "\n"
    if out is None:
        click.echo(text, nl=False)
        return
    atomic_write_text(out, text)
    click.echo(f"wrote {out}", err=True)

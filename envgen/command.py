"""The ``envwright`` root command: one table of sub-commands, each imported only when used.

``envwright --help`` and ``envwright --version`` import nothing but :mod:`click`
(no pydantic, gymnasium, torch, ...): the help text of every sub-command is
kept here, next to the ``"module:attribute"`` string that says where it lives.
The project's layering makes this module the only place that may reach every
package, and only through that table.

A table entry names either

* a **click command** (``kind="click"``): the attribute is a ``click.Command``
  (or ``Group``), a ``typer.Typer`` app, or a plain function that typer can
  turn into a command (typer objects run through typer's own ``main``, as
  typer ships its own copy of click); or
* an **argv main** (``kind="argv"``): ``main(argv: list[str]) -> int | None``,
  called with every argument after the sub-command's name (``--help``
  included), its return value used as the exit status.

When the module or attribute of an entry does not exist yet (the command is
still being built), or a third-party package it needs is not installed,
running the command prints one clear line that says so and how to fix it
(``pip install -e '.[train]'``) and exits with status 1; never a traceback.
That holds too when the missing package is imported only while the command
runs (matplotlib for ``eval``'s plots): the extra named is the one that
brings that package (:data:`EXTRA_OF`), else the entry's own.
An unknown name is answered with the closest names in the table. ``-h`` is
``--help`` everywhere.

Contract for sub-command authors: put the command at the ``module:attribute``
named below (or change the string here); keep the module's top-level imports
to what the command needs.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import click

__all__ = ["COMMANDS", "CommandUnavailable", "LazyEntry", "LazyGroup", "cli", "main"]

#: Our own top-level packages: a missing module among them means "not built yet", not "install X".
OWN_PACKAGES = ("envgen", "gym_envs", "corpora", "eval", "training")

#: The pip extra (pyproject's optional-dependencies) that brings a third-party package, by import name.
EXTRA_OF = {"torch": "train", "transformers": "train", "trl": "train", "peft": "train", "accelerate": "train",
            "tensorboard": "train", "gguf": "train", "tokenizers": "train", "datasets": "hf", "pyarrow": "hf",
            "openai": "openai", "vllm": "vllm", "ray": "ray", "psycopg": "postgres", "mpmath": "eval",
            "bfcl_eval": "eval"}

#: Options that ask for help on every command (click's default knows only --help).
HELP_OPTIONS = ["-h", "--help"]


@dataclass(frozen=True)
class LazyEntry:
    """Where a sub-command lives and what ``--help`` says about it, without importing it."""

    target: str  #: ``"package.module:attribute"``
    help: str  #: one line for the root's ``--help``
    kind: str = "click"  #: ``"click"`` or ``"argv"`` (see the module docstring)
    extra: str | None = None  #: the pip extra that brings its third-party dependencies
    section: str = "Commands"  #: heading it is listed under in ``--help``

    def __post_init__(self) -> None:
        if self.kind not in ("click", "argv"):
            raise ValueError(f"LazyEntry.kind must be 'click' or 'argv', got {self.kind!r}")
        if self.target.count(":") != 1:
            raise ValueError(f"LazyEntry.target must look like 'package.module:attribute', "
                             f"got {self.target!r}")


class CommandUnavailable(click.ClickException):
    """A sub-command whose code is not importable here; the message says why and what to do."""


ENV, LIB, EVAL, TRAIN = "Environments", "Library", "Evaluation", "Training"

#: Every sub-command of ``envwright``. The strings are the only coupling to the packages.
COMMANDS: dict[str, LazyEntry] = {
    "show": LazyEntry("gym_envs.cli:show", "Describe an environment: tools, tables, tasks, checks.",
                      section=ENV),
    "play": LazyEntry("gym_envs.play:play", "Play a task by hand (or from a script on stdin).", section=ENV),
    "schema": LazyEntry("gym_envs.cli:schema", "Print the JSON Schema of the environment spec.", section=ENV),
    "serve": LazyEntry("envgen.interop_cli:serve", "Serve one environment as an MCP server (stdio or HTTP).",
                       extra="mcp", section=ENV),
    "validate": LazyEntry("envgen.cli:validate", "Run the validity gate on spec files, folders or examples.",
                          section=ENV),
    "generate": LazyEntry("envgen.cli:generate", "Generate environments from a corpus into a library.",
                          section=LIB),
    "list": LazyEntry("envgen.cli:list_library", "List the environments of a library.", section=LIB),
    "stats": LazyEntry("envgen.cli:stats", "Statistics of a library (kinds, sources, acceptance).",
                       section=LIB),
    "export": LazyEntry("envgen.interop_cli:export", "Export a library as a Hugging Face dataset (Parquet + card).",
                        extra="hf", section=LIB),
    "import": LazyEntry("envgen.interop_cli:import_cmd", "Import an exported dataset (folder or Hub) into a library.",
                        extra="hf", section=LIB),
    "skills": LazyEntry("envgen.skills.cli:app", "Skill libraries: list, show, stats, export, simulate.",
                        section=LIB),
    "inspect": LazyEntry("envgen.inspect.cli:inspect", "Write a static HTML site to browse a library or a spec.",
                         section=LIB),
    "eval": LazyEntry("eval.cli:eval_cmd", "Score a policy on suites (generated, BFCL, ...).",
                      extra="eval", section=EVAL),
    "compare": LazyEntry("eval.cli:compare_cmd", "Compare two evaluation runs side by side.", extra="eval",
                         section=EVAL),
    "contamination": LazyEntry("eval.cli:contamination_cmd",
                               "Measure overlap between a library's tasks and a benchmark's.", extra="eval",
                               section=EVAL),
    "bench": LazyEntry("eval.cli:bench_app", "Throughput benchmarks: runtime (reset/step), generate.",
                       extra="eval", section=EVAL),
    "train": LazyEntry("training.cli:train_app", "GRPO self-play training (proposer + solver).", extra="train",
                       section=TRAIN),
    "plot": LazyEntry("training.cli:plot_cmd", "Plot training curves from a run folder.", extra="train",
                      section=TRAIN),
}


# -- resolving an entry ---------------------------------------------------------------------------


def install_hint(package: str, extra: str | None) -> str:
    """How to install ``package``: the extra that brings it, else the package itself."""
    extra = EXTRA_OF.get(package, extra)
    if package == "bfcl_eval":
        return "pip install --no-deps bfcl-eval mpmath (its declared dependencies pull CUDA)"
    if extra is None:
        return f"pip install {package}"
    return f"pip install 'envwright[{extra}]' (from a checkout: pip install -e '.[{extra}]')"


def _missing_message(display: str, entry: LazyEntry, err: ModuleNotFoundError) -> str:
    module = entry.target.split(":", 1)[0]
    missing = err.name or ""
    ours = missing.split(".", 1)[0] in OWN_PACKAGES
    if missing and (module == missing or module.startswith(missing + ".") or ours):
        return (f"'{display}' is not available yet: {module} is not part of this installation "
                f"(the command is still being built). Update the checkout and reinstall: pip install -e .")
    package = missing.split(".")[0]
    return (f"'{display}' needs the package '{package}', which is not installed. "
            f"Install it: {install_hint(package, entry.extra)}")


def load_target(display: str, entry: LazyEntry) -> Any:
    """Import ``entry.target`` and return the attribute; :class:`CommandUnavailable` if absent."""
    module_name, attr = entry.target.split(":", 1)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        raise CommandUnavailable(_missing_message(display, entry, e)) from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise CommandUnavailable(f"'{display}' is not available yet: {module_name} has no '{attr}' "
                                 f"(the command is still being built).") from None


def _passthrough(name: str, help_text: str, run: Callable[[list[str]], Any]) -> click.Command:
    """A click command that hands every argument after its name (``--help`` included) to ``run``."""

    def callback(args: tuple[str, ...]) -> None:
        rc = run(list(args))
        if rc is None or rc is True:
            rc = 0
        elif rc is False or not isinstance(rc, int):
            rc = 1
        if rc:
            sys.exit(rc)

    return click.Command(
        name, callback=callback, help=help_text, add_help_option=False,
        params=[click.Argument(["args"], nargs=-1, type=click.UNPROCESSED)],
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )


def _as_click(name: str, display: str, obj: Any, entry: LazyEntry) -> click.Command:
    """The click command for a loaded target.

    A ``click.Command`` is used as it is. Anything else runs behind a pass-through command: an argv
    main directly, and a typer app, typer command or plain function through typer's own ``main``
    (typer ships its own copy of click, whose commands and exceptions are not this click's).
    """
    if isinstance(obj, click.Command):
        return obj
    if entry.kind == "argv":
        if not callable(obj):
            raise CommandUnavailable(f"'{display}': {entry.target} is not callable")
        return _passthrough(name, entry.help, obj)
    if type(obj).__name__ == "Typer":
        import typer.main

        obj = typer.main.get_command(obj)
    elif callable(obj) and not hasattr(obj, "make_context"):
        import typer
        import typer.main

        app = typer.Typer(add_completion=False, context_settings={"help_option_names": HELP_OPTIONS})
        app.command(name=name, help=entry.help)(obj)
        obj = typer.main.get_command(app)
    if hasattr(obj, "make_context") and callable(getattr(obj, "main", None)):
        foreign = obj
        return _passthrough(name, entry.help,
                            lambda argv: foreign.main(args=argv, prog_name=display, standalone_mode=True))
    raise CommandUnavailable(f"'{display}': {entry.target} is not a command")


def _unavailable_command(name: str, message: str) -> click.Command:
    """A stand-in that accepts anything (``--help`` too) and reports why the real one is missing."""

    def run(argv: list[str]) -> None:
        raise CommandUnavailable(message)

    return _passthrough(name, message, run)


class LazyGroup(click.Group):
    """A click group whose sub-commands are :class:`LazyEntry` rows, imported on first use."""

    def __init__(self, *args: Any, lazy: dict[str, LazyEntry] | None = None, prefix: str = "envwright",
                 **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.lazy: dict[str, LazyEntry] = dict(lazy or {})
        self.prefix = prefix
        self._loaded: dict[str, click.Command] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.lazy, *super().list_commands(ctx)})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        eager = super().get_command(ctx, cmd_name)
        if eager is not None:
            return eager
        entry = self.lazy.get(cmd_name)
        if entry is None:
            return None
        if cmd_name not in self._loaded:
            self._loaded[cmd_name] = self._build(cmd_name, entry)
        return self._loaded[cmd_name]

    def _build(self, name: str, entry: LazyEntry) -> click.Command:
        display = f"{self.prefix} {name}"
        try:
            return _as_click(name, display, load_target(display, entry), entry)
        except CommandUnavailable as e:
            return _unavailable_command(name, e.message)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None,
                                                                             list[str]]:
        name = args[0]
        if self.get_command(ctx, name) is None and not name.startswith("-") and not ctx.resilient_parsing:
            names = self.list_commands(ctx)
            from gym_envs.errors import did_you_mean  # only on this error path: the table stays instant

            raise click.UsageError(f"No such command '{name}'{did_you_mean(name, names, cutoff=0.5)}", ctx)
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the sub-command; a third-party package missing at run time becomes one line naming the extra."""
        try:
            return super().invoke(ctx)
        except ModuleNotFoundError as e:
            name = ctx.invoked_subcommand or ""
            entry = self.lazy.get(name)
            missing = (e.name or "").split(".")[0]
            if entry is None or not missing or missing in OWN_PACKAGES:
                raise
            raise CommandUnavailable(_missing_message(f"{self.prefix} {name}", entry, e)) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List commands by section, in table order, from the table's help strings: nothing is imported."""
        sections: dict[str, list[tuple[str, str]]] = {}
        for name, entry in self.lazy.items():
            sections.setdefault(entry.section, []).append((name, entry.help))
        for name in super().list_commands(ctx):
            cmd = super().get_command(ctx, name)
            if name not in self.lazy and cmd is not None and not cmd.hidden:
                sections.setdefault("Commands", []).append((name, cmd.get_short_help_str(80)))
        for section, rows in sections.items():
            with formatter.section(section):
                formatter.write_dl(rows)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("envwright")
    except PackageNotFoundError:
        return "0+unknown"


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(f"envwright {_version()}")
        ctx.exit()


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": HELP_OPTIONS,
                                                              "max_content_width": 100})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and exit.")
def cli() -> None:
    """envwright: a self-generating gym of executable tool-use environments.

    Environments are JSON specs (tools, a SQLite backend, multi-turn tasks with
    state checks). Shipped examples can be named instead of a path, e.g.
    `envwright show NAME`.
    """


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point (``envwright = "envgen.command:main"``)."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="envwright")


if __name__ == "__main__":
    main()

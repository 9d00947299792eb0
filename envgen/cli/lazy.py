"""A click group whose sub-commands are ``"module:attribute"`` strings, imported only when used.

The ``envwright`` root (:mod:`envgen.cli`) and its ``bench`` group (:mod:`envgen.cli.bench`) are
:class:`LazyGroup` objects over a table of :class:`LazyEntry` rows. ``--help`` is written from the
table's one-line help strings, so listing the commands imports nothing but :mod:`click`.

Each entry names a ``click.Command`` (or ``click.Group``): every command of the project is a click
command. When the module or attribute of an entry does not exist (the command is still being built),
or a third-party package it needs is not installed, running the command (``--help`` included) prints
one line that says so and how to fix it (``pip install -e '.[train]'``) and exits with status 1, never
a traceback. That holds too when the missing package is imported only while the command runs
(matplotlib for ``eval``'s plots): the extra named is the one that brings that package
(:data:`~envgen.errors.EXTRA_OF`), else the entry's own, in the words of
:func:`envgen.errors.install_hint` (CPU torch first for ``train``). An unknown name is answered with the
closest names in the table.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import click

from envgen.errors import EXTRA_OF, install_hint

__all__ = ["EXTRA_OF", "HELP_OPTIONS", "OWN_PACKAGES", "CommandUnavailable", "LazyEntry", "LazyGroup",
           "install_hint", "load_target"]

#: Our own top-level packages: a missing module among them means "not built yet", not "install X".
OWN_PACKAGES = ("envgen", "gym_envs", "corpora", "eval", "training")

#: Options that ask for help on every command (click's default knows only --help).
HELP_OPTIONS = ["-h", "--help"]


@dataclass(frozen=True)
class LazyEntry:
    """Where a sub-command lives and what ``--help`` says about it, without importing it."""

    target: str  #: ``"package.module:attribute"``, a ``click.Command``
    help: str  #: one line for the group's ``--help``
    extra: str | None = None  #: the pip extra that brings its third-party dependencies
    section: str = "Commands"  #: heading it is listed under in ``--help``

    def __post_init__(self) -> None:
        if self.target.count(":") != 1:
            raise ValueError(f"LazyEntry.target must look like 'package.module:attribute', "
                             f"got {self.target!r}")


class CommandUnavailable(click.ClickException):
    """A sub-command whose code is not importable here; the message says why and what to do."""


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


def load_target(display: str, entry: LazyEntry) -> click.Command:
    """Import ``entry.target`` and return its command; :class:`CommandUnavailable` if absent."""
    module_name, attr = entry.target.split(":", 1)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        raise CommandUnavailable(_missing_message(display, entry, e)) from None
    try:
        command = getattr(module, attr)
    except AttributeError:
        raise CommandUnavailable(f"'{display}' is not available yet: {module_name} has no '{attr}' "
                                 f"(the command is still being built).") from None
    if not isinstance(command, click.Command):
        raise CommandUnavailable(f"'{display}': {entry.target} is not a click command")
    return command


def _unavailable_command(name: str, message: str) -> click.Command:
    """A stand-in that accepts anything (``--help`` too) and reports why the real one is missing."""

    def callback(args: tuple[str, ...]) -> None:
        raise CommandUnavailable(message)

    return click.Command(name, callback=callback, help=message, add_help_option=False,
                         params=[click.Argument(["args"], nargs=-1, type=click.UNPROCESSED)],
                         context_settings={"ignore_unknown_options": True, "allow_extra_args": True})


class LazyGroup(click.Group):
    """A click group whose sub-commands are :class:`LazyEntry` rows, imported on first use."""

    def __init__(self, *args: Any, lazy: dict[str, LazyEntry] | None = None, prefix: str = "envwright",
                 **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.lazy: dict[str, LazyEntry] = dict(lazy or {})
        self.prefix = prefix  #: how messages name a sub-command: ``f"{prefix} {name}"``
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
        try:
            return load_target(f"{self.prefix} {name}", entry)
        except CommandUnavailable as e:
            return _unavailable_command(name, e.message)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None,
                                                                             list[str]]:
        name = args[0]
        if self.get_command(ctx, name) is None and not name.startswith("-") and not ctx.resilient_parsing:
            names = self.list_commands(ctx)
            from corpora.errors import did_you_mean  # only on this error path: the table stays instant

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

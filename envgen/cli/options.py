"""Option types that several commands share.

:class:`ManyOption` is a repeatable option that also takes several values after one flag, as
argparse's ``nargs="+"`` does: ``--seeds 0 1 2`` is ``--seeds 0 --seeds 1 --seeds 2``. A command
that has one is a :class:`ManyValuesCommand` (``@click.command(cls=ManyValuesCommand)``), which
spreads the values before click parses them; the values after the flag run up to the next option.
"""

from __future__ import annotations

import re
from typing import Any

import click

__all__ = ["ManyOption", "ManyValuesCommand", "spread_values"]

_NUMBER = re.compile(r"^-\d")


class ManyOption(click.Option):
    """A ``multiple=True`` option whose flag may be followed by several values (``--envs a b``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["multiple"] = True
        super().__init__(*args, **kwargs)


def _is_option(arg: str) -> bool:
    return arg.startswith("-") and not _NUMBER.match(arg)


def spread_values(params: list[click.Parameter], args: list[str]) -> list[str]:
    """``args`` with every value after a :class:`ManyOption`'s flag given its own flag."""
    flags = {name for p in params if isinstance(p, ManyOption) for name in p.opts}
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        out.append(arg)
        i += 1
        if arg == "--":
            return out + args[i:]
        if arg in flags and i < len(args):
            out.append(args[i])  # the first value, whatever it looks like (as click takes it)
            i += 1
            while i < len(args) and not _is_option(args[i]):
                out += [arg, args[i]]
                i += 1
    return out


class ManyValuesCommand(click.Command):
    """A command with :class:`ManyOption` options."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, spread_values(self.params, args))

r"""Spec text is data: showing untrusted text in a terminal without letting it act.

Titles, descriptions, table and column names, instructions, check messages,
tool results and exception texts are written by a model (or by whoever wrote
the spec) and are shown by every terminal renderer (``show``, ``play``,
``validate``, ``list``, ``stats``, ``skills``, the ``eval``/``compare``
tables). Two things could make such text act instead of being shown:

* **rich markup**: a string handed to rich as a table cell, title or
  ``print`` argument is parsed as markup, so ``[link=...]`` or
  ``[bold green]PASSED`` would be rendered and a stray ``[/]`` raises a
  ``MarkupError`` that kills the whole command;
* **control characters**: ESC sequences move the cursor, erase lines, recolour
  or retitle the terminal; rich strips only a few C0 characters (BEL, BS, VT,
  FF, CR) and passes ESC and C1 through.

Contract: :func:`clean` replaces every control character (C0 except ``\n``
and ``\t``, DEL, C1) with a visible escape such as ``\x1b``, and also
bidirectional-override characters (``\u202e``, which reorder what a reader
sees) and lone surrogates (which cannot be encoded); nothing else changes.
:func:`text` returns a rich ``Text`` of the cleaned string (never parsed as
markup): use it for every untrusted table cell, title or line.
:func:`markup` returns the cleaned string with rich markup escaped, for the
places that take a markup string. ``clean`` is pure Python and imports
nothing; rich is imported only by the other two.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["clean", "markup", "one_line", "readable_headers", "text"]

# C0 but \t and \n, DEL, C1; the bidi embeddings/overrides/isolates; lone surrogates.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape_char(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(value: Any) -> str:
    """``str(value)`` with control, bidi-override and lone-surrogate characters as visible escapes."""
    s = value if isinstance(value, str) else str(value)
    return _UNSAFE.sub(_escape_char, s)


def one_line(value: Any) -> str:
    r""":func:`clean`, with newlines and tabs also shown as ``\n`` and ``\t`` (for one-line cells)."""
    return clean(value).replace("\n", "\\n").replace("\t", "\\t")


def markup(value: Any) -> str:
    """:func:`clean`, then rich markup escaped: safe inside a string that rich parses as markup."""
    from rich.markup import escape

    return escape(clean(value))


def text(value: Any, style: str = "", *, single_line: bool = False) -> Any:
    """A rich ``Text`` of the cleaned value: shown as it is, never parsed as markup."""
    from rich.text import Text

    return Text(one_line(value) if single_line else clean(value), style=style)


def readable_headers(table: Any) -> Any:
    """Give every column of a rich ``Table`` at least the width of its header's longest word.

    Rich squeezes columns to fit the terminal and then cuts header words (``exampl…``); with this a
    header wraps between words instead. Returns the table.
    """
    for column in table.columns:
        words = str(column.header).split()
        longest = max((len(w) for w in words), default=0)
        column.min_width = max(column.min_width or 0, longest)
    return table

"""A τ² policy document split into what the system is (the spec's ``description``) and its rules (``policy``).

Role: τ²'s agent reads its domain's ``policy.md`` whole. A spec_version 2 spec states a system's description and
a numbered list of rules, each marked ``enforced: "tool"`` (a tool refuses what it forbids) or ``"policy"`` (only
the policy says so). :func:`split_policy` turns the Markdown into both, so every sentence of the document reaches
the agent exactly once.

Contract:

- The document is cut into blocks: paragraphs and list items (a nested item is one block too). A paragraph or
  item that ends with ``:`` and is followed by a list is no block of its own: it leads each of its items, which
  read ``"lead item"``.
- A block is a rule when it sits under a section (``##`` or deeper) that is not informational (``info``: by
  default the ones titled "Domain basic(s)"), or, before the first section, when it is normative
  (:func:`envgen.realism.world.is_normative`: must, should, cannot, only if, ...). A rule's text is its section
  path, then the block (``"Cancel pending order: An order can only be cancelled if ..."``).
- The description is the document less its title and its rules' lines, with the headings and lead lines that
  still have content under them.
- A rule is ``enforced: "tool"`` when its text contains one of ``tool_enforced`` (phrases a domain lists after
  reading its tools), else ``"policy"``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from envgen.realism.world import is_normative
from gym_envs.spec import PolicyRule

__all__ = ["Block", "blocks", "split_policy"]

_HEADING = re.compile(r"^(#+)\s+(.*\S)\s*$")
_ITEM = re.compile(r"^(\s*)(?:[-*]|\d+\.)\s+(.*)$")
_INFO = ("domain basic",)


@dataclass
class Block:
    """A paragraph or list item: its section path, the lead lines above it, its text and its source lines."""

    path: tuple[str, ...]
    leads: tuple[str, ...]
    text: str
    lines: list[int] = field(default_factory=list)
    lead_lines: tuple[int, ...] = ()


def _plain(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("**", "")).strip()


class _Parser:
    """The state of :func:`blocks` as it reads a document line by line."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.out: list[Block] = []
        self.headings: dict[int, tuple[str, ...]] = {}
        self.path: list[tuple[int, str]] = []
        self.para: list[int] = []
        self.items: list[tuple[int, int]] = []  # (indent, index in out) of the open list items, outermost first

    def here(self) -> tuple[str, ...]:
        return tuple(t for _, t in self.path)

    def flush(self) -> None:
        if self.para:
            text = _plain(" ".join(self.lines[i] for i in self.para))
            self.out.append(Block(self.here(), (), text, list(self.para)))
            self.para.clear()

    def heading(self, n: int, level: int, title: str) -> None:
        self.flush()
        self.items.clear()
        self.path[:] = [(lv, t) for lv, t in self.path if lv < level]
        if level > 1:
            self.path.append((level, _plain(title)))
        self.headings[n] = self.here() if level > 1 else ()

    def lead_of(self, n: int, indent: int) -> tuple[tuple[str, ...], tuple[int, ...]]:
        """The lead of an item at line ``n``: its previous sibling's; else its parent item's (and the parent's leads)
        when the parent ends with ':'; else the paragraph right above the list when it ends with ':'."""
        sibling = None
        while self.items and self.items[-1][0] >= indent:
            popped = self.items.pop()
            if popped[0] == indent:
                sibling = self.out[popped[1]]
        if sibling is not None:  # the list goes on: its items share a lead
            return sibling.leads, sibling.lead_lines
        if self.items:
            parent = self.out[self.items[-1][1]]
            if parent.text.endswith(":"):
                return (*parent.leads, parent.text), (*parent.lead_lines, *parent.lines)
            return parent.leads, parent.lead_lines
        prev = self.out[-1] if self.out else None
        if prev is not None and not prev.leads and prev.path == self.here() and prev.text.endswith(":") \
                and all(not self.lines[i].strip() for i in range(prev.lines[-1] + 1, n)):
            return (prev.text,), tuple(prev.lines)
        return (), ()

    def item(self, n: int, indent: int, text: str) -> None:
        self.flush()
        leads, lead_lines = self.lead_of(n, indent)
        self.out.append(Block(self.here(), leads, _plain(text), [n], lead_lines))
        self.items.append((indent, len(self.out) - 1))

    def text(self, n: int, line: str) -> None:
        if self.items and not self.para and line.startswith(" "):  # a continuation line of the open item
            b = self.out[self.items[-1][1]]
            b.text = _plain(b.text + " " + line)
            b.lines.append(n)
            return
        self.items.clear()
        self.para.append(n)


def blocks(markdown: str) -> tuple[list[Block], dict[int, tuple[str, ...]]]:
    """The document's blocks, and each heading's line with its section path (the title's is ``()``)."""
    p = _Parser(markdown.splitlines())
    for n, line in enumerate(p.lines):
        head, item = _HEADING.match(line), _ITEM.match(line)
        if head:
            p.heading(n, len(head.group(1)), head.group(2))
        elif item:
            p.item(n, len(item.group(1)), item.group(2))
        elif not line.strip():
            p.flush()
        else:
            p.text(n, line)
    p.flush()
    return p.out, p.headings


def _is_lead(b: Block, all_blocks: Sequence[Block]) -> bool:
    return b.text.endswith(":") and any(set(b.lines) & set(o.lead_lines) for o in all_blocks)


def split_policy(markdown: str, tool_enforced: Sequence[str] = (), info: Sequence[str] = _INFO
                 ) -> tuple[str, list[PolicyRule]]:
    """``(description, rules)`` of a τ² policy document (see the module docstring)."""
    found, headings = blocks(markdown)
    info_l = tuple(i.lower() for i in info)
    rules: list[PolicyRule] = []
    dropped: set[int] = set(n for n, p in headings.items() if p == ())
    kept_under: set[tuple[str, ...]] = set()
    leads_kept: set[int] = set()
    for b in found:
        if _is_lead(b, found):
            continue
        informational = bool(b.path) and b.path[0].lower().startswith(info_l)
        rule = not informational and (bool(b.path) or is_normative(b.text))
        if rule:
            text = " ".join([*b.leads, b.text])
            if b.path:
                text = f"{' / '.join(b.path)}: {text}"
            by_tool = any(p in text for p in tool_enforced)
            rules.append(PolicyRule(text=text, enforced="tool" if by_tool else "policy"))
            dropped.update(b.lines)
        else:
            leads_kept.update(b.lead_lines)
            for i in range(len(b.path) + 1):
                kept_under.add(b.path[:i])
    lines = markdown.splitlines()
    for b in found:  # a lead line goes with its items
        if _is_lead(b, found) and not set(b.lines) & leads_kept:
            dropped.update(b.lines)
    for n, p in headings.items():
        if p and p not in kept_under:
            dropped.add(n)
    kept = [ln for n, ln in enumerate(lines) if n not in dropped]
    description = re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()
    return description, rules

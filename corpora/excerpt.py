"""Excerpt long documents to a token budget.

Role: fit a document into a prompt. The generator shows the model an excerpt
of a source file; the excerpt should keep what makes the file useful for an
environment: whole definitions, the most stateful classes first.

Contract:

* ``counter(result) <= budget_tokens`` always holds for the returned text
  (the empty string when ``budget_tokens <= 0`` or nothing fits).
* A document that fits is returned whole and unchanged.
* For Python that parses, the excerpt is made of whole top-level statements,
  chosen greedily by priority: stateful classes (best
  :func:`~corpora.analysis.stateful_score` class first), then imports, the
  module docstring, other classes and functions, other statements, the
  ``if __name__ == "__main__"`` block. Chosen pieces keep their source order;
  each gap is marked with a ``# ...`` line.
* When the best class does not fit whole, it is cut at method level: its
  header and docstring, then ``__init__``, the CRUD-named methods, class
  attributes and other methods, whole, as they fit (gaps marked ``# ...``;
  an emptied body gets ``...`` so the excerpt still parses).
* Otherwise (other languages, syntax errors, a first line longer than the
  budget) the excerpt is the longest prefix of whole lines, or of
  characters, within the budget.
* ``counter`` defaults to :func:`~corpora.document.approx_tokens`
  (``ceil(chars / 4)``); pass a tokenizer's counter for exact budgets. It is
  called O(number of top-level statements + log(length)) times.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from corpora.analysis import ClassProfile, analyze
from corpora.document import Document, TokenCounter, approx_tokens
from corpora.verbs import method_category

__all__ = ["Excerpt", "excerpt", "excerpt_parts", "truncate_text"]

MARKER = "# ..."
"""The line that stands for omitted source."""


@dataclass(frozen=True)
class Excerpt:
    """An excerpt with what it kept.

    Attributes:
        text: The excerpt.
        tokens: ``counter(text)``.
        complete: Whether ``text`` is the whole document.
        kept: Names of the definitions kept whole or in part (``"Queue"``,
            ``"Queue (partial)"``, ``"<imports>"``); empty for a line prefix.
        truncated: Whether the excerpt is a plain prefix of lines or characters.
    """

    text: str
    tokens: int
    complete: bool
    kept: tuple[str, ...]
    truncated: bool

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class _Piece:
    start: int  # first line, 0-based
    end: int  # one past the last line
    name: str
    priority: tuple[float, ...]
    text: str


def truncate_text(text: str, budget_tokens: int, counter: TokenCounter = approx_tokens) -> str:
    """Return the longest prefix of whole lines of ``text`` within the budget.

    Falls back to the longest character prefix when even the first line does
    not fit. Uses a binary search, so ``counter`` is called O(log n) times.
    """
    if budget_tokens <= 0 or not text:
        return ""
    if counter(text) <= budget_tokens:
        return text
    lines = text.split("\n")
    n = _longest(len(lines), lambda k: counter("\n".join(lines[:k])) <= budget_tokens)
    if n > 0:
        return "\n".join(lines[:n])
    n = _longest(len(text), lambda k: counter(text[:k]) <= budget_tokens)
    return text[:n]


def _longest(size: int, fits: Callable[[int], bool]) -> int:
    """Largest k in [0, size] with fits(k), assuming fits is monotone and fits(0)."""
    lo, hi = 0, size
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _stmt_span(stmt: ast.stmt, lines: Sequence[str], floor: int) -> tuple[int, int]:
    """0-based [start, end) of a statement with its decorators and the comments just above it."""
    start = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))]) - 1
    while start - 1 >= floor and lines[start - 1].lstrip().startswith("#"):
        start -= 1
    return start, stmt.end_lineno or stmt.lineno


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _is_main_guard(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.If) and "__name__" in ast.dump(stmt.test) and "__main__" in ast.dump(stmt.test)
    )


def _top_priority(stmt: ast.stmt, index: int, scores: dict[str, float]) -> tuple[tuple[float, ...], str]:
    """Priority (lower first) and display name of a top-level statement."""
    if isinstance(stmt, ast.ClassDef) and scores.get(stmt.name, 0.0) > 0:
        return (0, -scores[stmt.name], index), stmt.name
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return (1, index), "<imports>"
    if index == 0 and _is_docstring(stmt):
        return (2, index), "<docstring>"
    if isinstance(stmt, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return (3, index), stmt.name
    if _is_main_guard(stmt):
        return (5, index), "<main>"
    return (4, index), "<statements>"


_PriorityOf = Callable[[ast.stmt, int], tuple[tuple[float, ...], str]]


def _pieces(body: Sequence[ast.stmt], lines: Sequence[str], priority_of: _PriorityOf) -> list[_Piece]:
    pieces: list[_Piece] = []
    floor = body[0].lineno - 1 if body else 0
    for index, stmt in enumerate(body):
        start, end = _stmt_span(stmt, lines, floor)
        priority, name = priority_of(stmt, index)
        pieces.append(_Piece(start, end, name, priority, "\n".join(lines[start:end])))
        floor = end
    return pieces


def _assemble(chosen: Sequence[_Piece], lines: Sequence[str], indent: str = "") -> str:
    """Join pieces in source order, marking each gap that hides non-blank lines.

    A gap of blank lines only is kept as one blank line.
    """
    out: list[str] = []
    previous_end: int | None = None
    for piece in sorted(chosen, key=lambda p: p.start):
        gap = lines[previous_end : piece.start] if previous_end is not None else []
        if any(line.strip() for line in gap):
            out.append(indent + MARKER)
        elif gap:
            out.append("")
        out.append(piece.text)
        previous_end = piece.end
    return "\n".join(out)


def _greedy(pieces: Sequence[_Piece], budget: int, counter: TokenCounter) -> list[_Piece]:
    chosen: list[_Piece] = []
    used = 0
    for piece in sorted(pieces, key=lambda p: p.priority):
        cost = counter(piece.text + "\n" + MARKER + "\n")
        if used + cost <= budget:
            chosen.append(piece)
            used += cost
    return chosen


def _method_priority(stmt: ast.stmt, index: int) -> tuple[tuple[float, ...], str]:
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
        if stmt.name == "__init__":
            return (0, index), stmt.name
        if method_category(stmt.name) is not None:
            return (1, index), stmt.name
        return (3, index), stmt.name
    return (2, index), "<attributes>"


def _partial_class(
    node: ast.ClassDef, lines: Sequence[str], budget: int, counter: TokenCounter
) -> _Piece | None:
    """The class cut at method level within ``budget``, or ``None`` when its header does not fit."""
    body = list(node.body)
    if body[0].lineno == node.lineno:
        return None  # body on the header line: nothing to cut
    head_end = min([body[0].lineno, *(d.lineno for d in getattr(body[0], "decorator_list", ()))]) - 1
    if _is_docstring(body[0]):
        head_end = body[0].end_lineno or head_end
        body = body[1:]
    start, _ = _stmt_span(node, lines, 0)
    header = "\n".join(lines[start:head_end])
    indent = " " * (node.body[0].col_offset)
    reserve = counter(header + "\n" + indent + MARKER + "\n" + indent + "...\n")
    if reserve > budget:
        return None
    chosen = _greedy(_pieces(body, lines, _method_priority), budget - reserve, counter)
    head = _Piece(start, head_end, "<header>", (0,), header)
    text = _assemble([head, *chosen], lines, indent)
    if not chosen:
        text += "\n" + indent + "..."
    if (node.end_lineno or 0) > max([head_end, *(p.end for p in chosen)]):
        text += "\n" + indent + MARKER
    return _Piece(start, node.end_lineno or head_end, node.name + " (partial)", (0,), text)


def _python_excerpt(doc: Document, budget: int, counter: TokenCounter) -> tuple[str, tuple[str, ...]] | None:
    try:
        tree = ast.parse(doc.text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = doc.text.split("\n")
    classes: list[ClassProfile] = [c for c in analyze(doc).classes if c.top_level]
    scores = {c.name: c.score for c in classes}
    pieces = _pieces(tree.body, lines, lambda stmt, i: _top_priority(stmt, i, scores))
    best = min(pieces, key=lambda p: p.priority, default=None)
    reserved: list[_Piece] = []
    if best is not None and counter(best.text + "\n" + MARKER + "\n") > budget:
        node = next((s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == best.name), None)
        partial = _partial_class(node, lines, budget, counter) if node is not None else None
        if partial is not None:
            reserved.append(partial)
            pieces = [p for p in pieces if p is not best]
    remaining = budget - sum(counter(p.text + "\n" + MARKER + "\n") for p in reserved)
    chosen = reserved + _greedy(pieces, remaining, counter)
    while chosen:
        text = _assemble(chosen, lines)
        if counter(text) <= budget:
            names = tuple(dict.fromkeys(p.name for p in sorted(chosen, key=lambda p: p.priority)))
            return text, names
        chosen = sorted(chosen, key=lambda p: p.priority)[:-1]
    return None


def excerpt_parts(doc: Document, budget_tokens: int, *, counter: TokenCounter | None = None) -> Excerpt:
    """Return the excerpt of ``doc`` within ``budget_tokens``, with what it kept.

    See the module docstring for the rules.
    """
    count = counter or approx_tokens
    if count(doc.text) <= budget_tokens:
        return Excerpt(doc.text, count(doc.text), complete=True, kept=(), truncated=False)
    if budget_tokens > 0 and doc.language == "python":
        found = _python_excerpt(doc, budget_tokens, count)
        if found is not None:
            text, names = found
            return Excerpt(text, count(text), complete=False, kept=names, truncated=False)
    text = truncate_text(doc.text, budget_tokens, count)
    return Excerpt(text, count(text), complete=False, kept=(), truncated=True)


def excerpt(doc: Document, budget_tokens: int, *, counter: TokenCounter | None = None) -> str:
    """Return an excerpt of ``doc`` of at most ``budget_tokens`` tokens.

    Whole top-level definitions are kept where possible, the classes with the
    highest stateful score first; see the module docstring.
    """
    return excerpt_parts(doc, budget_tokens, counter=counter).text

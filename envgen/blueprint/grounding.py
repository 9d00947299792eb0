"""Grounding: how much of an environment's data model comes from its source document.

:func:`grounding` is the share of an environment's entity (table) and field
(column) names that occur in the document it was derived from. It reads the
spec's DDL, so it scores any spec (the blueprint stream, the free stream, a
hand-written one) the same way, and it is language-neutral: the document is
read as text, not parsed.

A name *occurs* when it is one of the document's identifiers once both are
put in snake_case (``maxSize`` and ``max_size`` match), or when each of its
words of three letters or more is a word of the document (``cache_entries``
matches a document that says ``cache`` and ``entry``); plural and singular
forms match. Structural columns the compiler adds (``id``, foreign keys
``<table>_id``, the managed ``status``) are not counted.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["data_model_names", "document_words", "grounding", "name_occurs"]

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_TABLE = re.compile(r'CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?["`\[]?(\w+)["`\]]?\s*\((.*?)\)\s*;',
                    re.I | re.S)
_CONSTRAINT = ("primary", "unique", "foreign", "check", "constraint")
_STRUCTURAL = {"id", "status", "rowid"}


def _snake(name: str) -> str:
    return re.sub(r"_+", "_", _CAMEL.sub("_", name)).strip("_").lower()


def _forms(word: str) -> set[str]:
    out = {word}
    if word.endswith("ies") and len(word) > 4:
        out.add(word[:-3] + "y")
    if word.endswith("es") and len(word) > 3:
        out.add(word[:-2])
    if word.endswith("s") and len(word) > 3:
        out.add(word[:-1])
    return out


def document_words(text: str) -> tuple[set[str], set[str]]:
    """``(identifiers, words)`` of a document: its snake_case identifiers and their words (all forms)."""
    idents: set[str] = set()
    words: set[str] = set()
    for token in _TOKEN.findall(text[:2_000_000]):
        s = _snake(token)
        if not s:
            continue
        idents.add(s)
        for w in s.split("_"):
            if len(w) >= 3:
                words |= _forms(w)
    return idents, words


def name_occurs(name: str, idents: set[str], words: set[str]) -> bool:
    """Whether ``name`` occurs in a document with these identifiers and words (see the module docstring)."""
    s = _snake(name)
    if not s:
        return False
    if s in idents or _forms(s) & idents:
        return True
    parts = [p for p in s.split("_") if len(p) >= 3]
    return bool(parts) and all(_forms(p) & words for p in parts)


def _split_columns(body: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in body:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


def data_model_names(schema_sql: str) -> list[str]:
    """Table and column names of a DDL script, without the structural ones (ids, foreign keys, status)."""
    tables = [(t, body) for t, body in _TABLE.findall(schema_sql)]
    singular = {t.lower().rstrip("s") for t, _ in tables} | {t.lower() for t, _ in tables}
    names: list[str] = []
    for table, body in tables:
        names.append(table)
        for part in _split_columns(body):
            m = re.match(r'\s*["`\[]?(\w+)["`\]]?', part)
            if not m or m.group(1).lower() in _CONSTRAINT:
                continue
            col = m.group(1)
            low = col.lower()
            if low in _STRUCTURAL or "references" in part.lower():
                continue
            if low.endswith("_id") and (low[:-3] in singular or low[:-3].rstrip("s") in singular):
                continue
            names.append(col)
    return names


def grounding(spec: Any, doc: Any) -> float:
    """Share of the spec's entity and field names that occur in ``doc`` (0.0 when it has none)."""
    text = getattr(doc, "text", None) if not isinstance(doc, str) else doc
    if not isinstance(text, str):
        return 0.0
    names = data_model_names(spec.state.schema_sql)
    if not names:
        return 0.0
    idents, words = document_words(text)
    return sum(1 for n in names if name_occurs(n, idents, words)) / len(names)

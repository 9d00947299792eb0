r"""Regex repetitions a grammar engine checks fast: bounded repetitions of at most :data:`REPEAT_LIMIT`.

Every engine we decode under (xgrammar in the ``transformers`` backend and the trainer's generator, vLLM's
structured outputs, a server behind the OpenAI-compatible API that uses xgrammar) turns a JSON Schema string's
``pattern`` into an automaton. xgrammar 0.2.9 unrolls a bounded repetition ``X{m,n}`` of up to 128 into states
whose token masks it precomputes when it compiles the grammar; a longer one it checks at run time, against the
whole vocabulary at every token: over SmolLM2's 49,152 tokens, 19 ms a token inside ``[...]{0,160}`` against
0.013 ms inside ``[...]{0,128}``. A world blueprint's prose fields (a refusal's message, an operation's
description, a policy rule: 160 to 200 characters) made about one token in ten that slow: 2.5 ms a token on
average for one row, and a batch of 39 rows left the GPU idle while vLLM filled their masks (`envwright bench
grammar` measures it).

:func:`short_repeats` rewrites every pattern of a schema so that no repetition bound exceeds
:data:`REPEAT_LIMIT`, as the same language, and without ambiguity (one way to match each string, so the
automaton stays as small as the unrolled form):

* ``X{m,n}`` with ``n > 128`` becomes ``(X{m,127}|X{128}R)``, ``R`` the rewrite of ``X{0,n-128}``
  (``X{128}R`` with ``R`` of ``X{m-128,n-128}`` where ``m >= 128``), a plain group, which every regex dialect
  of JSON Schema has;
* ``X{n}`` and ``X{m,}`` are cut the same way into runs of 128.

``X`` is the atom before the quantifier: a character class, an escape, a group or one character. The models'
own validators keep the plain patterns (:mod:`envgen.world.blueprint`, :mod:`envgen.blueprint.schema`); only
what goes to an engine is rewritten, at the backends' one door each (:class:`~envgen.backends.transformers_local.
JsonGrammars`, :func:`~envgen.backends.vllm_offline.compact_json_grammar`, the OpenAI-compatible request).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["REPEAT_LIMIT", "longest_repeat", "short_pattern", "short_repeats"]

REPEAT_LIMIT = 128
_QUANT = re.compile(r"\{(\d+)(,(\d*))?\}")


def _class_end(pattern: str, i: int) -> int:
    """The index after the character class that opens at ``i`` (a leading ``^`` and a leading ``]`` are part of
    it; escapes are skipped)."""
    j = i + 1
    if j < len(pattern) and pattern[j] == "^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    if j >= len(pattern):
        raise ValueError(f"unclosed '[' in pattern {pattern!r}")
    return j + 1


def _atom_end(pattern: str, i: int) -> int:
    """The index after the atom that starts at ``i``: an escape, a character class, a group (nested atoms
    skipped) or one character."""
    c = pattern[i]
    if c == "\\":
        return i + 2
    if c == "[":
        return _class_end(pattern, i)
    if c == "(":
        j = i + 1
        while j < len(pattern) and pattern[j] != ")":
            j = _atom_end(pattern, j)
        if j >= len(pattern):
            raise ValueError(f"unclosed '(' in pattern {pattern!r}")
        return j + 1
    return i + 1


def _group_head(pattern: str, i: int) -> int:
    """The length of the opener of the group at ``i``: ``(``, or ``(?:``, ``(?=``, ``(?!``."""
    return 3 if pattern.startswith(("(?:", "(?=", "(?!"), i) else 1


def _quantifier(pattern: str, i: int, atom: str) -> tuple[int, int | None, int] | None:
    """``(low, high, end)`` of the bounded repetition ``{m}``, ``{m,}`` or ``{m,n}`` at ``i`` after ``atom``
    (``high`` None: unbounded); None where there is none (or the atom is an anchor or an alternation)."""
    m = _QUANT.match(pattern, i)
    if m is None or atom in ("|", "^", "$"):
        return None
    low = int(m.group(1))
    return low, low if m.group(2) is None else (int(m.group(3)) if m.group(3) else None), m.end()


def _repeat(atom: str, low: int, high: int | None) -> str:
    """``atom{low,high}`` (``high`` None: unbounded) with no bound over :data:`REPEAT_LIMIT`."""
    lim = REPEAT_LIMIT
    if high is None:
        return f"{atom}{{{low},}}" if low <= lim else f"{atom}{{{lim}}}" + _repeat(atom, low - lim, None)
    if high <= lim:
        return f"{atom}{{{high}}}" if low == high else f"{atom}{{{low},{high}}}"
    if low >= lim:
        return f"{atom}{{{lim}}}" + _repeat(atom, low - lim, high - lim)
    return f"({atom}{{{low},{lim - 1}}}|{atom}{{{lim}}}{_repeat(atom, 0, high - lim)})"


def short_pattern(pattern: str) -> str:
    """``pattern`` with every repetition bound over :data:`REPEAT_LIMIT` rewritten (module docstring), inside
    groups too; the same language, and the same pattern where no bound is over it."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        j = _atom_end(pattern, i)
        atom = pattern[i:j]
        if atom.startswith("("):
            head = _group_head(pattern, i)
            atom = pattern[i:i + head] + short_pattern(pattern[i + head:j - 1]) + ")"
        q = _quantifier(pattern, j, pattern[i:j])
        if q is None:
            out.append(atom)
            i = j
            continue
        low, high, i = q
        lazy = pattern[i:i + 1] in ("?", "+")  # a lazy or possessive repetition: left as written
        out.append(atom + pattern[j:i] if lazy or max(low, high or 0) <= REPEAT_LIMIT else _repeat(atom, low, high))
    return "".join(out)


def longest_repeat(pattern: str) -> int:
    """The largest repetition bound written in ``pattern`` (0 without one): what :func:`short_pattern` keeps at
    or under :data:`REPEAT_LIMIT`. Escapes and character classes are skipped (a ``{`` there is a character)."""
    best, i = 0, 0
    while i < len(pattern):
        j = _atom_end(pattern, i)
        if pattern[i] == "(":
            best = max(best, longest_repeat(pattern[i + _group_head(pattern, i):j - 1]))
        q = _quantifier(pattern, j, pattern[i:j])
        if q is not None:
            low, high, j = q
            best = max(best, low, high or 0)
        i = j
    return best


def short_repeats(schema: Any) -> Any:
    """A copy of JSON Schema ``schema`` whose every ``pattern`` is :func:`short_pattern`'s (other keys as they
    are; a schema without a long repetition comes back equal)."""
    if isinstance(schema, dict):
        return {k: (short_pattern(v) if k == "pattern" and isinstance(v, str) else short_repeats(v))
                for k, v in schema.items()}
    if isinstance(schema, list):
        return [short_repeats(v) for v in schema]
    return schema

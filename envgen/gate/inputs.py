"""Writable inputs of a turn's checks: state a check reads that the agent can change instead of doing the task.

Role: a ``sql`` or ``python`` check that takes its expected value from the state (a setting, a limit, a
reference row) can be satisfied by changing that state rather than doing the task. Expected values may come
from the turn's starting state or constants; to hold a spec to that, the gate writes every writable input a
check reads and requires the turn's checks to catch it (gym_envs/ENVSPEC.md, validity rule 7):

* :func:`tool_writes`: the tables each tool can write, read from its code's text (the SQL statements in its
  function, in the module constants it names and in the top-level functions it calls);
* :func:`check_inputs`: for one turn, the tables its ``sql`` and ``python`` checks read that some tool can
  write and no reference call of the turn writes (the turn's own target tables are exercised by the argument
  and extra-write mutants already);
* :func:`input_mutants`: for each such table, calls of a tool that writes it (the calls the references and the
  extra-write pool make with that tool, and each with one argument set to another value taken from the state)
  as wrong trajectories: the write **instead of** the turn's calls, and the write **after** them. One that
  changes the state and that no check other than ``calls`` catches makes the turn inadequate.

Static and conservative: a table named in a check's text counts as read, a ``INSERT``/``UPDATE``/``DELETE``/
``REPLACE`` statement naming a table as a write.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from envgen.gate.mutants import Mutant, RefTurn, short_call, unused_tool_calls
from envgen.gate.values import argument_values
from gym_envs.spec import EnvSpec, ToolCall

__all__ = ["InputWrite", "check_inputs", "input_mutants", "schema_tables", "tool_writes"]

#: a statement that writes a table, in lower-cased text (matched case-sensitively: several times faster)
_WRITE = re.compile(r"(?:insert(?:\s+or\s+\w+)?\s+into|replace\s+into|update(?:\s+or\s+\w+)?|delete\s+from)\s+"
                    r"[\"`\[]?(\w+)")
_TABLE = re.compile(r"\bCREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?[\"`\[]?(\w+)", re.IGNORECASE)


@dataclass(frozen=True)
class InputWrite:
    """A writable input of a turn: ``table``, read by check ``check`` (its index in the turn)."""

    table: str
    check: int


def schema_tables(spec: EnvSpec) -> set[str]:
    """The tables ``schema_sql`` creates (lower case)."""
    return {m.group(1).lower() for m in _TABLE.finditer(spec.state.schema_sql)}


_TOP = re.compile(r"^(?:def\s+(\w+)|(\w+)\s*(?::[^=\n]*)?=)", re.MULTILINE)  # a top-level def or assignment


def tool_writes(spec: EnvSpec) -> dict[str, set[str]]:
    """The tables (lower case) each tool's code can write (see the module docstring), read from the code's
    text: each top-level ``def`` and module constant is the text up to the next top-level statement."""
    code = spec.code
    tables = schema_tables(spec)
    marks = list(_TOP.finditer(code))
    starts = [m.start() for m in marks]
    written: list[set[str]] = [set() for _ in marks]
    low = code.lower()
    if len(low) != len(code):  # a character whose lower case is longer: keep positions, ignore case the slow way
        low = "".join(c if len(c.lower()) != 1 else c.lower() for c in code)
    for w in _WRITE.finditer(low):
        k = bisect.bisect_right(starts, w.start()) - 1
        if k >= 0 and w.group(1) in tables:
            written[k].add(w.group(1))
    funcs: dict[str, tuple[str, set[str]]] = {}
    consts: dict[str, set[str]] = {}
    for k, m in enumerate(marks):
        text = code[m.end():starts[k + 1] if k + 1 < len(marks) else len(code)]
        if m.group(1):
            funcs[m.group(1)] = (text, written[k])
        elif written[k]:
            consts[m.group(2)] = written[k]
    own: dict[str, set[str]] = {}
    calls: dict[str, set[str]] = {}
    for name, (text, mine) in funcs.items():
        own[name] = set(mine).union(*(tabs for c, tabs in consts.items() if c in text
                                      and re.search(rf"\b{c}\b", text)))
        calls[name] = {f for f in funcs if f + "(" in text}
    out: dict[str, set[str]] = {}
    for tool in spec.tools:
        seen, todo, found = set(), [tool.name], set()
        while todo:
            f = todo.pop()
            if f in seen or f not in funcs:
                continue
            seen.add(f)
            found |= own[f]
            todo += calls[f]
        out[tool.name] = found
    return out


def _reads(text: str, tables: Iterable[str]) -> set[str]:
    return {t for t in tables if re.search(rf"(?<![\w.]){re.escape(t)}(?!\w)", text, re.IGNORECASE)}


def check_inputs(ref: RefTurn, writes: dict[str, set[str]]) -> list[InputWrite]:
    """The writable inputs of the turn (see the module docstring), each with the first check that reads it."""
    writable = set().union(*writes.values()) if writes else set()
    target = set().union(*(writes.get(c.name, set()) for c in ref.calls)) if ref.calls else set()
    out: dict[str, InputWrite] = {}
    for i, check in enumerate(ref.turn.checks):
        text = check.state_text()
        if not text:
            continue
        for t in sorted(_reads(text, writable - target)):
            out.setdefault(t, InputWrite(t, i))
    return list(out.values())


def _key(call: ToolCall) -> str:
    return json.dumps([call.name, call.arguments], sort_keys=True, default=str)


def _writes_of(spec: EnvSpec, ref: RefTurn, tools: list[str], known: list[ToolCall]) -> list[ToolCall]:
    """Calls of ``tools``: those ``known`` makes, then one from the state for a tool it has none of, each
    followed by its variants with one argument set to another value from the state."""
    base = [c for c in known if c.name in tools]
    have = {c.name for c in base}
    base += unused_tool_calls(spec, ref.start, have | {t.name for t in spec.tools if t.name not in tools})
    out: list[ToolCall] = []
    for call in base:
        out.append(call)
        try:
            props = spec.tool(call.name).parameters.get("properties") or {}
        except KeyError:
            props = {}
        for arg, value in call.arguments.items():
            col = ref.start.column_of(arg, value)
            for new, _ in argument_values(col, value, props.get(arg) or {}, 2):
                out.append(ToolCall(name=call.name, arguments={**call.arguments, arg: new}))
    seen: set[str] = set()
    return [c for c in out if not (_key(c) in seen or seen.add(_key(c)))]  # type: ignore[func-returns-value]


def input_mutants(spec: EnvSpec, ref: RefTurn, writes: dict[str, set[str]],
                  known: list[ToolCall]) -> Iterator[Mutant]:
    """The input-write mutants of the turn (see the module docstring), in order: for each writable input, each
    write instead of the turn's calls, then after them. ``known``: the calls the run knows (references, pool)."""
    same = list(range(len(ref.calls)))
    for inp in check_inputs(ref, writes):
        tools = sorted(name for name, tables in writes.items() if inp.table in tables)
        why = f"it writes {inp.table}, which check {inp.check + 1} reads"
        for call in _writes_of(spec, ref, tools, known):
            yield Mutant(7, "input", f"{short_call(call)} instead of the reference calls ({why})", [call], [None])
            if ref.calls:
                yield Mutant(7, "input", f"the reference calls, then {short_call(call)} ({why})",
                             [*ref.calls, call], [*same, None])

"""Values taken from the state: what the mutation rule substitutes for a reference argument or answer.

Role: given a :class:`Snapshot` of the database (every table's columns and rows, as the episode's
``dump`` gives them) answer two questions of the adequacy rule (:mod:`envgen.gate.mutants`):

* which column an argument's value belongs to (:meth:`Snapshot.column_of`): an ``X_id`` argument
  belongs to the ``id`` column of the table of ``X``; otherwise a column of the same name, else one
  that holds the value;
* which *other* values a wrong trajectory may use instead (:func:`argument_values`): other existing
  values of that column (another existing id, another existing name), and a value of the right type
  that does not exist (the largest id plus one, a suffixed string). Integers are never perturbed by
  ``+1`` alone: next to the largest id that names no row, the call fails and is rolled back, so it
  would test nothing about the argument.

Everything here is pure and deterministic: the same snapshot gives the same candidates in the same
order (values close to the reference value first, since a check is likeliest to miss those).
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable
from dataclasses import InitVar, dataclass, field
from functools import cached_property
from typing import Any

__all__ = ["Column", "Snapshot", "answer_text", "argument_values", "pattern_probes", "same_answer"]

_NUMERIC = re.compile(r"^[-+]?\d+(?:[.,]\d+)?$")
_NONE_TYPE = type(None)
_NONE = frozenset({_NONE_TYPE})
_STR = frozenset({str})
_NUMBERS = frozenset({int, float})
_PLAIN = frozenset({str, int, float, bool, _NONE_TYPE})
_STR_OR_NONE = frozenset({str, _NONE_TYPE})
_INT_OR_NONE = frozenset({int, _NONE_TYPE})
_EMPTY = frozenset({""})


@dataclass(frozen=True)
class Column:
    """One column of the snapshot: ``table.name`` and its values (row order)."""

    table: str
    name: str
    values: tuple[Any, ...]
    partial: bool = False  #: only the first rows of the table are known

    @property
    def label(self) -> str:
        return f"{self.table}.{self.name}"

    @cached_property
    def types(self) -> frozenset[type]:
        """The exact types of the column's values."""
        return frozenset(map(type, self.values))

    @cached_property
    def by_kind(self) -> dict[str, tuple[Any, ...]]:
        """The column's values other than None by kind (:func:`_kind`), each in row order."""
        one = self.types - _NONE
        only = "str" if one == _STR else "number" if one and one <= _NUMBERS else None
        if only is not None:  # one kind (the common case): its values as they are, None left out
            values = tuple(self.values) if _NONE_TYPE not in self.types else \
                tuple(v for v in self.values if v is not None)
            return {only: values}
        out: dict[str, list[Any]] = {}
        for v in self.values:
            c = v.__class__
            if c is str:
                kind = "str"
            elif c is int or c is float:
                kind = "number"
            elif v is None:
                continue
            else:
                kind = _kind(v)
            out.setdefault(kind, []).append(v)
        return {k: tuple(vs) for k, vs in out.items()}

    @cached_property
    def distinct(self) -> bool:
        """Whether the column tells its rows apart: it is an ``id``, or it holds more than one value other than None
        and no two alike (strings ignoring case)."""
        vals = [v.lower() if isinstance(v, str) else v for v in self.values if v is not None]
        return self.name == "id" or (len(vals) > 1 and len(set(vals)) == len(vals))

    @cached_property
    def value_set(self) -> frozenset[Any]:
        """The column's values, as a set."""
        return frozenset(self.values)

    @cached_property
    def largest_int(self) -> int | None:
        """The largest of the column's integer values (no booleans), or None."""
        return max((v for v in self.values if isinstance(v, int) and not isinstance(v, bool)), default=None)

    @cached_property
    def picked(self) -> dict[tuple[Any, type, int], tuple[Any, ...]]:
        """The other existing values picked for a reference value (:func:`argument_values`), by value, its type and
        how many: the column never changes, so neither do they."""
        return {}

    @cached_property
    def texts(self) -> tuple[tuple[str, str], ...]:
        """The column's strings, one of each lower-cased text (the first in row order), sorted, each with its
        lower-cased text."""
        first: dict[str, str] = {}
        for v in self.by_kind.get("str", ()):
            first.setdefault(v.lower(), v)
        return tuple(sorted((v, low) for low, v in first.items()))

    @cached_property
    def ints(self) -> tuple[int, ...]:
        """The column's integers (no booleans), one of each, ascending."""
        return tuple(sorted({v for v in self.by_kind.get("number", ()) if isinstance(v, int)}))

    @cached_property
    def kinds(self) -> frozenset[str]:
        """The kinds (:func:`_kind`) of the column's values other than None."""
        return frozenset(self.by_kind)

    @cached_property
    def lowered(self) -> frozenset[str]:
        """The column's string values, lower-cased."""
        if self.types <= _PLAIN:  # no subclass of str: its strings are the kind "str"
            return frozenset(map(str.lower, self.by_kind.get("str", ())))
        return frozenset(map(str.lower, [v for v in self.values if isinstance(v, str)]))

    @cached_property
    def numbers(self) -> frozenset[Any]:
        """The column's numeric values (no booleans)."""
        return frozenset(self.by_kind.get("number", ()))

    @cached_property
    def answers(self) -> frozenset[str]:
        """The column's values as a reply states them (:func:`answer_text`), stripped and lower-cased."""
        if self.types <= _STR_OR_NONE:  # strings (and None, stated as "")
            texts = frozenset(map(str.lower, map(str.strip, self.by_kind.get("str", ()))))
            return texts | _EMPTY if _NONE_TYPE in self.types else texts
        if self.types <= _INT_OR_NONE:
            texts = frozenset(map(str, self.by_kind.get("number", ())))
            return texts | _EMPTY if _NONE_TYPE in self.types else texts
        strings = [v for v in self.values if v.__class__ is str]
        ints = [v for v in self.values if v.__class__ is int]  # an int's text has no space nor letter
        others = [v for v in self.values if v.__class__ is not str and v.__class__ is not int]
        return frozenset(map(str.lower, map(str.strip, strings))) | frozenset(map(str, ints)) | \
            frozenset(answer_text(v).strip().lower() for v in others)


@dataclass
class Snapshot:
    """The database as a dict ``table -> {"columns": [...], "rows": [[...], ...]}`` (a ``dump``). ``reuse``: an
    earlier snapshot whose table dumps this one shares (the same objects): those tables' columns are its own."""

    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    reuse: InitVar[Snapshot | None] = None
    _columns: dict[tuple[str, str], Column] = field(default_factory=dict, repr=False)
    _found: dict[tuple[str, type, Any], Column | None] = field(default_factory=dict, repr=False)

    def __post_init__(self, reuse: Snapshot | None) -> None:
        for t, data in self.tables.items():
            if reuse is not None and reuse.tables.get(t) is data:
                self._columns.update((k, c) for k, c in reuse._columns.items() if k[0] == t)
                continue
            cols = list(data.get("columns") or [])
            rows = data.get("rows") or []
            partial = int(data.get("count") or 0) > len(rows)  # a dump shows the first rows of a big table
            if set(map(len, rows)) <= {len(cols)}:  # (a dump's rows have every column)
                columns: list[tuple[Any, ...]] = list(zip(*rows, strict=True)) if rows else [()] * len(cols)
            else:
                columns = [tuple(r[i] for r in rows if i < len(r)) for i in range(len(cols))]
            for c, values in zip(cols, columns, strict=True):
                self._columns[(t, c)] = Column(t, c, values, partial)

    def columns(self) -> Iterable[Column]:
        return self._columns.values()

    def column(self, table: str, name: str) -> Column | None:
        return self._columns.get((table, name))

    def rows(self, table: str) -> list[dict[str, Any]]:
        data = self.tables.get(table) or {}
        cols = list(data.get("columns") or [])
        return [dict(zip(cols, r, strict=False)) for r in data.get("rows") or []]

    def column_of(self, arg: str, value: Any) -> Column | None:
        """The column ``value`` of argument ``arg`` most likely refers to, or None (memoized)."""
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            return None
        key = (arg, type(value), value)
        if key not in self._found:
            self._found[key] = self._column_of(arg, value)
        return self._found[key]

    def id_columns(self, arg: str, holding: Any = None) -> list[Column]:
        """The ``id`` columns an ``id`` / ``<stem>_id`` argument may name, best first (the table the stem
        names, then by table name): those holding the value ``holding``, or (None) every non-empty one."""
        stem = arg[:-3] if arg.endswith("_id") else ""
        ids = [c for c in self.columns() if c.name == "id" and (_holds(c, holding) if holding is not None
                                                                else bool(c.values))]
        ids.sort(key=lambda c: (_table_rank(c.table, stem), c.table))
        return ids

    def _column_of(self, arg: str, value: Any) -> Column | None:
        if arg == "id" or arg.endswith("_id"):
            ids = self.id_columns(arg, value)
            if ids:
                return ids[0]
        named = [c for c in self.columns() if c.name == arg and _same_type(c, value)]
        named.sort(key=lambda c: (not _holds(c, value), c.table))
        if named:
            return named[0]
        return next((c for c in self.columns() if c.name != "id" and _holds(c, value)), None)  # the first

    def columns_holding(self, text: str, *, name: str | None = None) -> list[Column]:
        """Columns with a value whose answer text equals ``text`` (case-insensitive); ``name`` first."""
        want = text.strip().lower()  # as same_answer compares
        found = [c for c in self.columns() if want in c.answers]
        found.sort(key=lambda c: (c.name != name, c.table, c.name))
        return found


def _table_matches(table: str, stem: str) -> bool:
    t, s = table.lower(), stem.lower()
    return t == s or t.rstrip("s") == s or t == s + "es" or t == s[:-1] + "ies" or t.startswith(s)


def _table_rank(table: str, stem: str) -> int:
    """How well ``<stem>_id`` names a row of ``table``: 0 (``item`` for ``items``), 1 for a qualified stem
    (``from_item``, ``target_item``: the words after the qualifier match exactly), 2 not at all."""
    if not stem:
        return 2
    if _table_matches(table, stem):
        return 0
    words = stem.lower().split("_")
    t = table.lower()
    for i in range(1, len(words)):
        rest = "_".join(words[i:])
        if t == rest or t.rstrip("s") == rest or t == rest + "es" or t == rest[:-1] + "ies":
            return 1
    return 2


def _same_type(c: Column, value: Any) -> bool:
    return not c.kinds or _kind(value) in c.kinds


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "number"
    return type(v).__name__


def _holds(c: Column, value: Any) -> bool:
    if isinstance(value, str):
        return value.lower() in c.lowered
    # a NaN equals nothing (a set would match it by identity); a value of another type is no number
    return isinstance(value, int | float) and value == value and value in c.numbers


def answer_text(v: Any) -> str:
    """A value as a reply would state it (``true``/``false``, ``repr`` of floats, ``str`` else)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    return "" if v is None else str(v)


def same_answer(a: str, b: str) -> bool:
    """Whether two answers are the same text, ignoring case and surrounding space."""
    return a.strip().lower() == b.strip().lower()


def is_numeric(text: str) -> bool:
    return bool(_NUMERIC.match(text.strip()))


def _closeness(ref: Any, v: Any) -> tuple[int, Any]:
    """Sort key: values a check could confuse with ``ref`` first (substrings either way), then by value."""
    if isinstance(ref, str) and isinstance(v, str):
        a, b = ref.lower(), v.lower()
        return (0 if a in b or b in a else 1, v)
    return (1, v)


def argument_values(column: Column | None, value: Any, schema: dict[str, Any],
                    n_existing: int = 2) -> list[tuple[Any, str]]:
    """Wrong values for an argument whose reference value is ``value``: ``(new value, why)`` pairs.

    Up to ``n_existing`` other existing values of ``column`` (other enum members, the negation of a
    boolean), then one value of the right type that exists nowhere in the column.
    """
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return [(e, "another allowed value") for e in enum if e != value][:n_existing]
    if isinstance(value, bool):
        return [(not value, "the opposite boolean")]
    if isinstance(value, list):
        return [(value[:-1], "one element fewer")] if value else []
    if isinstance(value, dict):
        return [({}, "an empty object")] if value else []
    if not isinstance(value, int | float | str):
        return []
    out: list[tuple[Any, str]] = []
    if column is not None:
        key = (value, type(value), n_existing)
        picks = column.picked.get(key)
        if picks is None:
            picks = column.picked[key] = _picks(column, value, n_existing)
        what = "another existing id" if column.name == "id" else f"another existing {column.label}"
        out += [(v, f"{what}") for v in picks]
    out.append((_missing_value(value, column, schema), "a value that does not exist"))
    return out


def _picks(column: Column, value: Any, n: int) -> tuple[Any, ...]:
    """Up to ``n`` other existing values of ``column`` for ``value`` (:func:`argument_values`): for an id the largest
    and the smallest, else the ones closest to it (:func:`_closeness`; the first in row order among equals). A string
    or an integer is picked for from the column's sorted values of its kind (:attr:`Column.texts`,
    :attr:`Column.ints`), in the order :func:`_closeness` gives: for a string, those it contains or that contain it
    first."""
    if n <= 0:
        return ()
    if type(value) is str:
        low = value.lower()
        if column.name == "id":
            return tuple(_spread([v for v, lowered in column.texts if lowered != low], n, by_extremes=True))
        near: list[str] = []
        far: list[str] = []
        for v, lowered in column.texts:
            if lowered == low:
                continue
            if low in lowered or lowered in low:
                near.append(v)
                if len(near) == n:
                    break
            elif len(far) < n:
                far.append(v)
        return tuple((near + far)[:n])
    if type(value) is int:
        others = [v for v in column.ints if v != value]
        return tuple(_spread(others, n, by_extremes=True) if column.name == "id" else others[:n])
    existing: list[Any] = []
    seen: set[Any] = set()
    for v in column.by_kind.get(_kind(value), ()):  # the values of the reference value's kind, in row order
        if _equal(v, value):
            continue
        if isinstance(value, int) and not isinstance(v, int):
            continue
        key = v.lower() if isinstance(v, str) else v
        if key not in seen:
            seen.add(key)
            existing.append(v)
    if column.name == "id":  # taken by value: their closeness to the reference value does not matter
        return tuple(_spread(existing, n, by_extremes=True))
    return tuple(heapq.nsmallest(n, existing, key=lambda v: _closeness(value, v)))


def pattern_probes(value: str) -> list[tuple[str, str]]:
    """Altered versions of a string argument, one of each kind a substring or pattern check can miss
    (``LIKE``, ``GLOB``, ``instr``, ``startswith``, ``endswith``, a regular expression): text added before it,
    text added after it, a character changed inside it, the other case, and the empty string."""
    out = [("x_" + value, "text added before it"), (value + "_x", "text added after it")]
    if len(value) >= 2:
        mid = len(value) // 2
        out.append((value[:mid] + ("x" if value[mid].lower() != "x" else "y") + value[mid + 1:],
                    "a character inside it changed"))
    if value.swapcase() != value:
        out.append((value.swapcase(), "in the other case"))
    if value:
        out.append(("", "the empty string"))
    return out


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.lower() == b.lower()
    return bool(a == b)


def _spread(values: list[Any], n: int, *, by_extremes: bool) -> list[Any]:
    """``n`` of ``values``: for ids the largest and the smallest (the largest first: the id a ``+1``
    perturbation falls off), otherwise the first ones in closeness order."""
    if n <= 0 or not values:
        return []
    if by_extremes:
        ordered = sorted(values)
        picks = [ordered[-1], ordered[0], *ordered[1:-1]]
        return list(dict.fromkeys(picks))[:n]
    return values[:n]


def _missing_value(value: Any, column: Column | None, schema: dict[str, Any]) -> Any:
    known = column.value_set if column is not None else frozenset()
    if isinstance(value, int):
        largest = column.largest_int if column is not None else None
        # past the largest known value (far past it when the rest of the table is unknown)
        new = (value if largest is None else max(value, largest)) + \
            (1_000_000 if column is not None and column.partial else 1)
        maximum = schema.get("maximum")
        if isinstance(maximum, int | float) and new > maximum:
            new = value - 1 if value - 1 not in known else value
        return new
    if isinstance(value, float):
        new = value * 1.5 + 1.0
        while new in known:
            new += 1.0
        return new
    lows = column.lowered if column is not None else frozenset()
    base = value or "x"
    new = base + "_x"
    i = 2
    while new.lower() in lows:
        new = f"{base}_x{i}"
        i += 1
    return new

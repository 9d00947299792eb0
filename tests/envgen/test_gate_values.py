"""``envgen.gate.values``: the other values a wrong trajectory takes, picked once a column and reference value, are
those the whole ordering of the column's values gives."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from envgen.gate.values import Column, _closeness, _equal, _kind, _spread, answer_text, argument_values


def _by_sorting(column: Column, value: Any, n: int) -> list[Any]:
    """The other existing values as sorting every candidate by closeness, then spreading them, picks them."""
    existing: list[Any] = []
    seen: set[Any] = set()
    for v in column.by_kind.get(_kind(value), ()):
        if _equal(v, value) or (isinstance(value, int) and not isinstance(v, int)):
            continue
        key = v.lower() if isinstance(v, str) else v
        if key not in seen:
            seen.add(key)
            existing.append(v)
    existing.sort(key=lambda v: _closeness(value, v))
    return _spread(existing, n, by_extremes=column.name == "id")


def test_picks_are_those_a_full_sort_gives() -> None:
    rng = random.Random(5)
    words = ["Dune", "dune", "Dune Messiah", "Emma", "emma", "Persuasion", "Pe", "Dun", "Xu", "dune messiah"]
    for trial in range(300):
        name = "id" if trial % 3 == 0 else "title"
        if name == "id" or trial % 3 == 1:
            values = tuple(rng.choice([rng.randint(-5, 40), rng.randint(0, 9) + 0.5, None, True])
                           for _ in range(rng.randint(0, 25)))
            ref: Any = rng.randint(-5, 40)
        else:
            values = tuple(rng.choice([*words, None, 3]) for _ in range(rng.randint(0, 25)))
            ref = rng.choice(words)
        col = Column("t", name, values, partial=bool(trial % 2))
        for n in (0, 1, 2, 3):
            for _ in range(2):  # the second answer comes from what the column keeps
                got = [v for v, _ in argument_values(col, ref, {}, n)[:-1]]
                assert got == _by_sorting(col, ref, n), (values, ref, n)


def test_picks_from_sorted_strings_and_integers_are_those_a_full_sort_gives() -> None:
    """String and integer references pick from the column's sorted values of their kind: ids of either kind, names
    with substrings either way and case variants, integers beside floats and booleans, and a float reference."""
    rng = random.Random(11)
    words = ["SKU-1", "sku-1", "SKU-10", "SKU-2", "A", "a", "ab", "B", "abc", "xyz", "Xy", "é", "É", ""]
    for _trial in range(600):
        name = rng.choice(["id", "title", "qty"])
        pool: list[Any] = [*words, None, 3, 3.0, True, -1, 7, 2.5, 0, 10]
        values = tuple(rng.choice(pool) for _ in range(rng.randint(0, 30)))
        ref = rng.choice([*words, -1, 0, 3, 7, 11, 2.5, 3.0])
        col = Column("t", name, values)
        for n in (0, 1, 2, 3, 5):
            got = [v for v, _ in argument_values(col, ref, {}, n)[:-1]]
            want = _by_sorting(col, ref, n)
            assert got == want and [type(v) for v in got] == [type(v) for v in want], (name, values, ref, n)


def test_a_value_that_does_not_exist_is_past_the_column() -> None:
    col = Column("t", "id", (3, 9, True, 4.5), partial=False)
    assert argument_values(col, 9, {}, 0) == [(10, "a value that does not exist")]
    assert argument_values(Column("t", "id", (3, 9), partial=True), 2, {}, 0)[-1][0] == 1_000_009
    assert argument_values(col, 9, {"maximum": 9}, 0)[-1][0] == 8
    names = Column("t", "name", ("ann", "ANN_x", "bob"))
    assert argument_values(names, "ann", {}, 0)[-1][0] == "ann_x2"


class _Text(str):
    pass


class _Count(int):
    pass


def _by_kind_by_loop(values: tuple[Any, ...]) -> dict[str, tuple[Any, ...]]:
    out: dict[str, list[Any]] = {}
    for v in values:
        if v is not None:
            out.setdefault("str" if v.__class__ is str else "number" if v.__class__ in (int, float) else _kind(v),
                           []).append(v)
    return {k: tuple(vs) for k, vs in out.items()}


def _answers_by_loop(values: tuple[Any, ...]) -> frozenset[str]:
    return frozenset(answer_text(v).strip().lower() if v.__class__ is not str else v.strip().lower() for v in values)


_CELLS = st.one_of(st.none(), st.booleans(), st.integers(-50, 50), st.floats(allow_nan=False, width=32),
                   st.sampled_from(["Dune", " dune ", "DUNE", "", "Emma", "1", "x y"]),
                   st.builds(_Text, st.sampled_from(["Dune", "e"])), st.builds(_Count, st.integers(0, 3)))


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.lists(_CELLS, max_size=12),  # columns of one kind (with None or not) are the common case
                 st.lists(st.sampled_from(["Dune", " dune ", "E", None]), max_size=12),
                 st.lists(st.one_of(st.none(), st.integers(-5, 5)), max_size=12),
                 st.lists(st.one_of(st.integers(-5, 5), st.floats(-3, 3)), max_size=12)))
def test_column_kinds_strings_and_answers_are_a_loops(values: list[Any]) -> None:
    """A column's values by kind, its lower-cased strings and its answer texts are what a loop over every value gives
    (kinds in first-seen order, values in row order), whichever types the column mixes."""
    col = Column("t", "c", tuple(values))
    assert col.by_kind == _by_kind_by_loop(col.values)
    assert list(col.by_kind) == list(_by_kind_by_loop(col.values))
    assert all(v.__class__ is tuple for v in col.by_kind.values())
    assert col.lowered == frozenset(v.lower() for v in values if isinstance(v, str))
    assert col.answers == _answers_by_loop(col.values)

"""``gym_envs.sandbox.values`` and ``limits``: plain JSON values, the protocol's codec, the limits' round trip."""

from __future__ import annotations

import collections
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gym_envs.sandbox import Limits, plain_json
from tests.gym_envs.sandbox.attacks import LIMITS


class _Str(str):
    pass


class _Int(int):
    pass


class _Float(float):
    pass


class _Dict(dict):  # type: ignore[type-arg]
    pass


class _RiggedDict(dict):  # type: ignore[type-arg]
    def items(self):  # type: ignore[no-untyped-def]
        return [("rigged", 1)]


PLAIN_CASES = [
    None, True, False, 0, -5, 2**70, 2**63, -(2**64), 7**2000, {"n": 2**64, "m": -(2**63)},
    1.5, -0.0, 1e300, "x", "caf\u00e9 \ud800 \U0001f600", [], {}, (1, 2),
    {"a": [1, {"b": (2, 3)}]}, {1: "int", 2.5: "float", False: "bool", None: "null", "s": "str"},
    _Str("sub"), _Int(7), _Float(2.5), _Dict(a=1), collections.OrderedDict(b=2), collections.Counter("aa"),
    [_Str("x"), {_Str("k"): _Int(1)}],
    [{"a": 1, "b": "x", "c": None, "d": True}, {"e": 2**64}, {"f": 1.5}, {"g": _Str("s")}, {1: "k"}],
    {"rows": [{"sku": "A", "n": -(2**63)}], "one": {"k": "v"}},
]


@pytest.mark.parametrize("value", PLAIN_CASES, ids=range(len(PLAIN_CASES)))
def test_plain_json_is_a_json_round_trip(value: Any) -> None:
    copy, bound = plain_json(value)
    text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    assert copy == json.loads(text)
    assert json.dumps(copy, sort_keys=True) == json.dumps(json.loads(text), sort_keys=True)
    assert bound >= len(text)


@pytest.mark.parametrize("value", [float("nan"), math.inf, {1, 2}, {(1, 2): 3}, object(), b"bytes",
                                   {"k": float("-inf")}, [collections.deque()], 7**6000, {"n": -(7**6000)},
                                   {7**6000: 1}], ids=range(11))
def test_plain_json_refuses_what_json_refuses(value: Any) -> None:
    with pytest.raises((TypeError, ValueError)) as mine:
        plain_json(value)
    with pytest.raises((TypeError, ValueError)) as theirs:
        json.dumps(value, allow_nan=False)
    assert type(mine.value) is type(theirs.value)


def test_plain_json_copies_every_object_it_returns() -> None:
    """The copy shares no dict or list with the value (a tool cannot change a result after returning it)."""
    value = [{"a": 1}, {"rows": [{"k": "v"}], "x": {"y": None}}]
    copy, _ = plain_json(value)
    assert copy == value
    mine = [copy, copy[0], copy[1], copy[1]["rows"], copy[1]["rows"][0], copy[1]["x"]]
    theirs = [value, value[0], value[1], value[1]["rows"], value[1]["rows"][0], value[1]["x"]]
    assert not {id(o) for o in mine} & {id(o) for o in theirs}


def test_plain_json_reads_the_real_content_of_subclasses() -> None:
    """``json.dumps`` asks a dict subclass for its ``items()``; ``plain_json`` reads the dict itself."""
    assert plain_json(_RiggedDict(a=1))[0] == {"a": 1}


def test_plain_json_caps_nesting() -> None:
    deep: list[Any] = []
    for _ in range(70):
        deep = [deep]
    with pytest.raises(ValueError, match="nested deeper"):
        plain_json(deep)
    deep = [{"flat": 1}]
    for _ in range(70):
        deep = [deep]
    with pytest.raises(ValueError, match="nested deeper"):
        plain_json(deep)
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    with pytest.raises(ValueError):
        plain_json(cyclic)


def test_limits_round_trip() -> None:
    assert Limits.from_dict(LIMITS.to_dict()) == LIMITS
    assert Limits.from_dict(json.loads(json.dumps(Limits().to_dict()))) == Limits()


_JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.text(max_size=8),
                          st.floats(allow_nan=False, allow_infinity=False),
                          st.sampled_from([-0.0, 5e-324, -1.7976931348623157e308, -2.2250738585072014e-308]))
_JSON_VALUES = st.recursive(_JSON_SCALARS, lambda inner: st.lists(inner, max_size=4)
                            | st.dictionaries(st.text(max_size=5), inner, max_size=5), max_leaves=30)


@settings(max_examples=400, deadline=None)
@given(_JSON_VALUES)
def test_plain_json_round_trips_random_values(value: Any) -> None:
    """Random nested values (flat rows of floats among them, which take the flat fast path): the copy is the JSON
    round trip, value and type alike, and the bound is an upper bound of the compact text."""
    copy, bound = plain_json(value)
    text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    assert json.dumps(copy, separators=(",", ":")) == json.dumps(json.loads(text), separators=(",", ":"))
    assert bound >= len(text)


@pytest.mark.parametrize("row", [{"price": float("nan")}, {"a": 1, "b": -math.inf}])
def test_plain_json_flat_rows_refuse_what_json_refuses(row: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        plain_json(row)

"""The C speedups (``gym_envs._speedups``) agree with their pure-Python twins.

Every C function runs next to its reference on the same input and the two outcomes must be identical:
the same value (every key and value of exactly the same type), or the same exception type and message.

* ``plain_json`` / ``executor._plain_json_py``;
* ``Admit`` / the ``admit`` closure of ``executor._compile_arguments`` (built with ``state.speedups`` None);
* ``Statement`` / ``StateDB._statement_py`` (a StateDB chooses at construction, from ``state.speedups``);
* ``GetAttr`` / ``executor._guarded_getattr``;
* ``Guard`` / ``state._Guard``;

and, end to end, the shipped examples played in two processes, with and without ``ENVWRIGHT_PURE_PYTHON``.
Both twins are built explicitly here, so the module runs the same under ``ENVWRIGHT_PURE_PYTHON=1``.
"""

from __future__ import annotations

import collections.abc
import decimal
import enum
import json
import math
import os
import random
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gym_envs import executor, state
from gym_envs.executor import SandboxViolation, _compile_arguments, _guarded_getattr, _plain_json_py
from gym_envs.state import DbFacade, SqlLimits, StateDB, StateError

speedups = pytest.importorskip("gym_envs._speedups")

_ROOT = Path(__file__).resolve().parents[2]


# -- outcomes --------------------------------------------------------------------------------------

_SCALARS = (str, int, float, bool, type(None), bytes)


def _typed(v: Any) -> Any:
    """``v`` with the exact type of every container, key and value spelled out (scalars by ``repr``,
    so ``nan`` equals ``nan``; an unexpected type shows as such instead of being asked for its repr)."""
    cls = type(v)
    if isinstance(v, dict):
        return (cls, [(_typed(k), _typed(x)) for k, x in dict.items(v)])
    if isinstance(v, list):
        return (cls, [_typed(x) for x in list.__iter__(v)])
    if isinstance(v, tuple):
        return (cls, [_typed(x) for x in tuple.__iter__(v)])
    if cls in _SCALARS:
        return (cls, repr(v))
    return (cls, id(v))


def _outcome(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    """What ``fn(*args, **kwargs)`` did: its typed value, or its exception's type and message."""
    try:
        value = fn(*args, **kwargs)
    except Exception as e:
        return ("raised", type(e), str(e))
    return ("returned", _typed(value))


# -- plain_json --------------------------------------------------------------------------------------

CALLED: list[str] = []  #: the overridden methods that ran (none may)


def _liar(name: str, result: Any) -> Callable[..., Any]:
    """An override that records its call and lies: a copy built from it would be visibly wrong."""

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        CALLED.append(f"{type(self).__name__}.{name}")
        return result() if callable(result) else result

    method.__name__ = name
    return method


class LyingStr(str):
    __str__ = _liar("__str__", "lie")
    __repr__ = _liar("__repr__", "'lie'")
    __format__ = _liar("__format__", "lie")
    __iter__ = _liar("__iter__", lambda: iter("lie"))
    __getitem__ = _liar("__getitem__", "l")
    __hash__ = str.__hash__
    encode = _liar("encode", b"lie")
    upper = _liar("upper", "LIE")
    strip = _liar("strip", "lie")


class LongStr(str):
    """A str subclass whose ``len`` lies (kept apart: see test_plain_json_never_asks_a_str_subclass_its_len)."""

    __len__ = _liar("__len__", 0)


class LyingInt(int):
    __int__ = _liar("__int__", 7)
    __index__ = _liar("__index__", 7)
    __repr__ = _liar("__repr__", "7")
    __str__ = _liar("__str__", "7")
    __format__ = _liar("__format__", "7")
    __float__ = _liar("__float__", 7.0)
    __abs__ = _liar("__abs__", 7)
    __neg__ = _liar("__neg__", 7)
    __lt__ = _liar("__lt__", True)
    __gt__ = _liar("__gt__", True)
    __bool__ = _liar("__bool__", True)
    __hash__ = int.__hash__
    bit_length = _liar("bit_length", 1)


class LyingFloat(float):
    __float__ = _liar("__float__", 0.5)
    __repr__ = _liar("__repr__", "0.5")
    __str__ = _liar("__str__", "0.5")
    __format__ = _liar("__format__", "0.5")
    __eq__ = _liar("__eq__", True)
    __ne__ = _liar("__ne__", False)
    __hash__ = float.__hash__
    is_integer = _liar("is_integer", True)
    hex = _liar("hex", "0x0p+0")


class FloatKey(float):
    """A float subclass for keys: LyingFloat's __eq__ and __ne__ are kept apart (see
    test_plain_json_never_compares_a_float_subclass_key)."""

    __float__ = _liar("__float__", 0.5)
    __repr__ = _liar("__repr__", "0.5")
    __str__ = _liar("__str__", "0.5")
    __hash__ = float.__hash__


class LyingList(list):
    __iter__ = _liar("__iter__", lambda: iter([]))
    __len__ = _liar("__len__", 0)
    __getitem__ = _liar("__getitem__", None)
    __reversed__ = _liar("__reversed__", lambda: iter([]))
    __contains__ = _liar("__contains__", False)
    copy = _liar("copy", list)


class LyingTuple(tuple):
    __iter__ = _liar("__iter__", lambda: iter(()))
    __len__ = _liar("__len__", 0)
    __getitem__ = _liar("__getitem__", None)
    __contains__ = _liar("__contains__", False)


class LyingDict(dict):
    items = _liar("items", list)
    keys = _liar("keys", list)
    values = _liar("values", list)
    get = _liar("get", None)
    copy = _liar("copy", dict)
    __iter__ = _liar("__iter__", lambda: iter(()))
    __len__ = _liar("__len__", 0)
    __getitem__ = _liar("__getitem__", None)
    __contains__ = _liar("__contains__", False)


class Color(enum.IntEnum):
    RED = 5
    GREEN = 6


class Local:
    """An object no JSON encoder knows."""


def _nan() -> float:
    return float("nan")


def _gen() -> Iterator[int]:
    yield 1


PLAIN_CORPUS: list[tuple[str, Any]] = [
    ("str", "text"),
    ("str-empty", ""),
    ("str-escapes", 'quo"te\\ \x00\x1f\n\u2028é\ud800\U0001f600'),
    ("int-0", 0),
    ("int-neg", -1),
    ("bool", True),
    ("none", None),
    ("float", 1.5),
    ("float-negzero", -0.0),
    ("float-max", 1.7976931348623157e308),
    ("float-tiny", 5e-324),
    ("int-63-bits", 2**62),
    ("int-63-bits-neg", -(2**62)),
    ("int-64-bits", 2**63),
    ("int-64-bits-neg", -(2**63)),
    ("int-int64-max", 2**63 - 1),
    ("int-2**64-1", 2**64 - 1),
    ("int--(2**64-1)", -(2**64 - 1)),
    ("int-2**64", 2**64),
    ("int--2**64", -(2**64)),
    ("int-65-bits", 2**64 + 1),
    ("int-2001-bits", 2**2000),
    ("int-2002-bits-neg", -(2**2001)),
    ("int-10**1000", 10**1000),
    ("flat-dict", {"a": "x", "b": 1, "c": True, "d": None, "é": "ü"}),
    ("flat-dict-empty", {}),
    ("flat-dict-int-2**64-1", {"a": 2**64 - 1}),
    ("flat-dict-int--(2**64-1)", {"a": -(2**64 - 1), "b": "x"}),
    ("dict-int-2**64", {"a": 2**64}),
    ("dict-int--2**64", {"b": "x", "a": -(2**64)}),
    ("dict-int-2001-bits", {"a": 2**2000}),
    ("dict-float", {"a": "x", "f": 1.5}),
    ("dict-list", {"a": []}),
    ("dict-str-sub-value", {"a": LyingStr("x")}),
    ("dict-int-sub-value", {"a": LyingInt(3)}),
    ("list", [1, "a", None, True, 1.5, [], {}]),
    ("tuple-nested", (1, (2, (3, ())))),
    ("nested", {"a": [1, {"b": (2, 3)}], "c": {"d": None, "e": [[[]]]}}),
    ("keys-all-kinds", {7: "int", 2.5: "float", 1e300: "big", True: "true", False: "false", None: "null",
                        "s": "str", LyingStr("sub"): "strsub", LyingInt(9): "intsub", FloatKey(0.25): "floatsub",
                        Color.GREEN: "enum", 2**70: "bigint", -5: "neg", 5e-324: "tiny"}),
    ("key-negzero", {-0.0: "negzero", "a": 1}),
    ("keys-collide-int", {1: "a", "1": "b"}),
    ("keys-collide-true", {"true": 1, True: 2}),
    ("keys-collide-null", {None: 1, "null": 2, "x": [None]}),
    ("key-int-2001-bits", {2**2000: 1}),
    ("str-sub", LyingStr("text")),
    ("str-sub-empty", LyingStr("")),
    ("int-sub", LyingInt(2**70)),
    ("int-sub-neg", LyingInt(-3)),
    ("int-sub-2001-bits", LyingInt(2**2000)),
    ("int-enum", Color.GREEN),
    ("float-sub", LyingFloat(2.5)),
    ("list-sub", LyingList([1, LyingStr("a"), [2]])),
    ("list-sub-empty", LyingList()),
    ("tuple-sub", LyingTuple((1, LyingInt(2)))),
    ("dict-sub", LyingDict({"a": 1, 2: [3]})),
    ("dict-sub-flat", LyingDict({"a": 1})),
    ("subs-nested", LyingDict({"l": LyingList([LyingTuple((LyingInt(1), LyingFloat(1.25))), LyingDict()])})),
    ("list-of-subs", [LyingStr("s"), LyingInt(1), LyingFloat(0.5), Color.RED, LyingList([LyingTuple()])]),
]

ERROR_CORPUS: list[tuple[str, Any]] = [
    ("nan", float("nan")),
    ("inf", float("inf")),
    ("-inf", float("-inf")),
    ("nan-in-list", [1, float("nan")]),
    ("inf-in-dict", {"a": "x", "f": float("inf")}),
    ("float-sub-nan", LyingFloat("nan")),
    ("float-sub-inf", LyingFloat("-inf")),
    ("key-tuple", {(1, 2): 1}),
    ("key-bytes", {b"k": 1}),
    ("key-frozenset", {frozenset(): 1}),
    ("key-object", {Local(): 1}),
    ("key-nan", {"a": 1, float("nan"): 1}),
    ("key-inf", {float("inf"): 1}),
    ("key--inf", {float("-inf"): 1}),
    ("key-float-sub-nan", {FloatKey("nan"): 1}),
    ("key-float-sub-inf", {"a": 1, FloatKey("-inf"): 1}),
    ("set", {1, 2}),
    ("frozenset", frozenset()),
    ("bytes", b"x"),
    ("bytearray", bytearray(b"x")),
    ("object", object()),
    ("local", Local()),
    ("function", _nan),
    ("lambda", lambda: None),
    ("builtin", len),
    ("class", int),
    ("generator", _gen()),
    ("complex", 1j),
    ("decimal", decimal.Decimal("1.5")),
    ("range", range(3)),
    ("set-in-dict-sub", LyingDict({"a": {1}})),
    ("first-error-wins-type", [1, {2}, float("nan")]),
    ("first-error-wins-value", [float("nan"), {2}]),
    ("first-error-wins-key", {"a": [1], (1,): {2}}),
    ("first-error-wins-value-before-key", {"a": {2}, (1,): 1}),
]


def _containers(v: Any, out: set[int]) -> set[int]:
    """The ids of every dict and list in ``v`` (read from their real storage)."""
    if isinstance(v, dict):
        out.add(id(v))
        for x in dict.values(v):
            _containers(x, out)
    elif isinstance(v, list | tuple):
        if isinstance(v, list):
            out.add(id(v))
        for x in list.__iter__(v) if isinstance(v, list) else tuple.__iter__(v):
            _containers(x, out)
    return out


def _lying_containers(v: Any) -> bool:
    if isinstance(v, LyingList | LyingTuple | LyingDict):
        return True
    if isinstance(v, dict):
        return any(_lying_containers(x) for x in dict.values(v))
    if isinstance(v, list | tuple):
        return any(_lying_containers(x) for x in (list.__iter__(v) if isinstance(v, list) else tuple.__iter__(v)))
    return False


def _both_plain_json(value: Any, *args: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    CALLED.clear()
    c = _outcome(speedups.plain_json, value, *args)
    py = _outcome(_plain_json_py, value, *args)
    assert CALLED == [], "an overridden method ran"
    return c, py


@pytest.mark.parametrize("value", [v for _, v in PLAIN_CORPUS], ids=[n for n, _ in PLAIN_CORPUS])
def test_plain_json_copies_agree(value: Any) -> None:
    """The C copy is the Python copy: same items of the same exact types, same bound, no override called."""
    c, py = _both_plain_json(value)
    assert c == py
    assert c[0] == "returned", c
    copy, bound = speedups.plain_json(value)
    assert type(bound) is int
    assert bound >= len(json.dumps(copy, separators=(",", ":")))
    assert not _containers(copy, set()) & _containers(value, set()), "the copy shares a container"
    if not _lying_containers(value):  # json.dumps asks a container subclass for its items
        assert copy == json.loads(json.dumps(value))


@pytest.mark.parametrize("value", [v for _, v in ERROR_CORPUS], ids=[n for n, _ in ERROR_CORPUS])
def test_plain_json_errors_agree(value: Any) -> None:
    """Values JSON cannot hold raise the same TypeError / ValueError with the same message in C and Python."""
    c, py = _both_plain_json(value)
    assert c == py
    assert c[0] == "raised" and c[1] in (TypeError, ValueError), c
    if not _lying_containers(value):
        with pytest.raises(c[1]):  # json.dumps refuses them too
            json.dumps(value, allow_nan=False)


def test_plain_json_error_messages_are_the_json_modules() -> None:
    """The messages are worded as the json module words them."""
    assert _both_plain_json({1, 2})[0] == ("raised", TypeError, "Object of type set is not JSON serializable")
    assert _both_plain_json(Local())[0] == ("raised", TypeError, "Object of type Local is not JSON serializable")
    assert _both_plain_json({(1,): 1})[0] == ("raised", TypeError,
                                              "keys must be str, int, float, bool or None, not tuple")
    assert _both_plain_json([float("nan")])[0] == ("raised", ValueError,
                                                   "Out of range float values are not JSON compliant")


def test_plain_json_ints_past_the_digit_limit() -> None:
    """An int (value, key or int subclass) too long for str() raises the same ValueError in both."""
    limit = sys.get_int_max_str_digits()
    if limit == 0:
        sys.set_int_max_str_digits(4300)
    try:
        big = 10 ** sys.get_int_max_str_digits()  # one digit too many
        for value in (big, -big, [big], {"a": big}, {big: 1}, LyingInt(big), {"a": "x", "b": [LyingInt(-big)]}):
            c, py = _both_plain_json(value)
            assert c == py
            assert c[:2] == ("raised", ValueError) and "Exceeds the limit" in c[2], c
        fits = 10 ** (sys.get_int_max_str_digits() - 1)
        c, py = _both_plain_json([fits, {fits: -fits}])
        assert c == py and c[0] == "returned"
    finally:
        sys.set_int_max_str_digits(limit)


def _nest(kind: str, levels: int, leaf: Any) -> Any:
    for _ in range(levels):
        leaf = [leaf] if kind == "list" else (leaf,) if kind == "tuple" else {"k": leaf}
    return leaf


@pytest.mark.parametrize("kind", ["list", "dict", "tuple"])
@pytest.mark.parametrize("levels", [63, 64, 65, 66])
def test_plain_json_nesting_limit(kind: str, levels: int) -> None:
    """64 nested containers are copied; 65 raise ValueError("nested deeper than 64 levels") in both."""
    for leaf in (1, "s", None):
        c, py = _both_plain_json(_nest(kind, levels, leaf))
        assert c == py
        assert c[0] == ("returned" if levels <= 64 else "raised"), c
    c, py = _both_plain_json(_nest(kind, levels - 1, []))  # an empty list is a level too
    assert c == py
    if levels > 64:
        assert c == ("raised", ValueError, "nested deeper than 64 levels")


def test_plain_json_nesting_limit_of_subclasses() -> None:
    """Subclasses count as levels exactly as their base types do."""
    wrap: list[Callable[[Any], Any]] = [lambda x: LyingList([x]), lambda x: LyingTuple((x,)),
                                        lambda x: LyingDict({"k": x})]
    for levels in (64, 65):
        value: Any = 1
        for i in range(levels):
            value = wrap[i % 3](value)
        c, py = _both_plain_json(value)
        assert c == py
        assert c[0] == ("returned" if levels == 64 else "raised"), c


@pytest.mark.parametrize("max_depth", [-5, -1, 0, 1, 2, 3, 4, 64, 256])
def test_plain_json_max_depth_argument(max_depth: int) -> None:
    """Small max_depth values bound the nesting the same way in both (the message always names 64)."""
    values = [1, "s", None, 1.5, [], {}, (), [1], [[1]], [[[1]]], {"a": {"b": 1}}, {"a": 1}, {"a": 1.5},
              {"a": [1]}, LyingList([1]), LyingDict({"a": [LyingInt(1)]}), [float("nan")], [[{1, 2}]]]
    for value in values:
        c, py = _both_plain_json(value, max_depth)
        assert c == py, value


def _random_value(rng: random.Random, depth: int) -> Any:
    scalars: list[Callable[[], Any]] = [
        lambda: rng.randint(-(2**70), 2**70), lambda: rng.choice([0, 1, -1, 2**63, -(2**64), 2**64 - 1]),
        lambda: rng.random() * 10 ** rng.randint(-300, 300), lambda: rng.choice([True, False, None]),
        lambda: "".join(rng.choice("ab\"\\\x01é\u2028\ud800") for _ in range(rng.randint(0, 5))),
        lambda: LyingStr(rng.choice(["", "x", "é"])), lambda: LyingInt(rng.randint(-9, 2**65)),
        lambda: LyingFloat(rng.random()), lambda: Color.RED,
    ]
    if depth <= 0 or rng.random() < 0.3:
        return rng.choice(scalars)()
    n = rng.randint(0, 4)
    kind = rng.randrange(6)
    if kind < 2:
        items = [_random_value(rng, depth - 1) for _ in range(n)]
        return [list, tuple, LyingList, LyingTuple][rng.randrange(4) if kind else 0](items)
    keys: list[Callable[[], Any]] = [lambda: rng.choice(["a", "b", "é", ""]), lambda: rng.randint(-3, 3),
                                     lambda: rng.choice([True, False, None, 0.5, -0.0]),
                                     lambda: LyingStr(rng.choice(["a", "z"]))]
    d = {rng.choice(keys if kind < 5 else keys[:1])(): _random_value(rng, depth - 1) for _ in range(n)}
    return LyingDict(d) if kind == 3 else d


def test_plain_json_random_values_agree() -> None:
    """Random trees of exact types and subclasses: identical copies and bounds, bounds above the JSON length."""
    rng = random.Random(20240607)
    for _ in range(600):
        value = _random_value(rng, rng.randint(0, 5))
        c, py = _both_plain_json(value)
        assert c == py, value
        if c[0] == "returned":
            copy, bound = speedups.plain_json(value)
            assert bound >= len(json.dumps(copy, separators=(",", ":")))


def test_plain_json_is_the_c_function_when_speedups_are_on() -> None:
    """executor._copy_json (the engine's copy) is the C twin exactly when state.speedups is loaded."""
    if state.speedups is None:
        assert executor._copy_json is _plain_json_py
    else:
        assert executor._copy_json is speedups.plain_json


def test_plain_json_never_asks_a_str_subclass_its_len() -> None:
    """A str subclass's own __len__ is never called, and the bound covers its real text."""
    for value in (LongStr("hello"), [LongStr("hello")], {"a": LongStr("hello")}):
        CALLED.clear()
        copy, bound = _plain_json_py(value)
        assert bound >= len(json.dumps(copy, separators=(",", ":")))  # Python: ('hello', 2); C: ('hello', 62)
        assert _plain_json_py(value) == speedups.plain_json(value)
        assert CALLED == []


class NanFriendly(float):
    """A float subclass that says it equals nothing and differs from nothing."""

    __eq__ = _liar("__eq__", False)
    __ne__ = _liar("__ne__", False)
    __hash__ = float.__hash__


@pytest.mark.parametrize("key", [LyingFloat(0.25), NanFriendly("nan"), NanFriendly("inf")],
                         ids=["finite-says-equal", "nan-says-unequal", "inf-says-unequal"])
def test_plain_json_never_compares_a_float_subclass_key(key: float) -> None:
    """A float-subclass key is judged by its real value (finite: kept; nan/inf: ValueError) without calling
    its methods, as json.dumps judges it."""
    value = {key: 1}
    CALLED.clear()
    try:
        json.dumps(value, allow_nan=False)
    except ValueError as e:
        expected: tuple[Any, ...] = ("raised", ValueError, str(e))
    else:
        expected = ("returned", _typed((json.loads(json.dumps(value)), speedups.plain_json(value)[1])))
    CALLED.clear()
    assert _outcome(speedups.plain_json, value) == expected
    assert _outcome(_plain_json_py, value) == expected  # 0.25: ValueError; nan, inf: copied as "nan", "inf"
    assert CALLED == []


def test_plain_json_public_signature_is_the_reference() -> None:
    """executor.plain_json is the Python reference (keywords, any max_depth, Python's argument errors); the
    engine's default-depth copies go through executor._copy_json, the C twin when it is built."""
    assert executor.plain_json is _plain_json_py
    assert executor._copy_json is (speedups.plain_json if state.speedups is not None else _plain_json_py)
    assert executor.plain_json([[1]], max_depth=2) == ([[1]], 9)
    with pytest.raises(ValueError, match="nested deeper"):
        executor.plain_json([[1]], max_depth=1)
    assert executor.plain_json(_nest("list", 100, 1), 300) == _plain_json_py(_nest("list", 100, 1), 300)


def test_c_plain_json_refuses_what_it_leaves_to_python() -> None:
    """The C function takes (value[, max_depth <= 256]) only, and says so."""
    with pytest.raises(TypeError, match="plain_json"):
        speedups.plain_json()
    with pytest.raises(ValueError, match="max_depth above 256"):
        speedups.plain_json([], 300)


# -- Admit -------------------------------------------------------------------------------------------

SCHEMAS: list[tuple[str, Any]] = [
    ("scalars", {"type": "object", "properties": {
        "i": {"type": "integer", "description": "an int"}, "n": {"type": "number", "title": "N"},
        "s": {"type": "string", "examples": ["x"]}, "b": {"type": "boolean", "default": False},
        "z": {"type": "null"}, "arr": {"type": "array"}, "obj": {"type": "object"},
        "e": {"type": "string", "enum": ["a", "b"]}, "m": {"type": "integer", "minimum": 0},
        "u": {"type": ["integer", "string"]}, "any": {}}, "required": ["i", "s"]}),
    ("no-required", {"properties": {"i": {"type": "integer"}, "n": {"type": "number"}}}),
    ("required-tuple", {"properties": {"s": {"type": "string"}}, "required": ("s",)}),
    ("required-unknown", {"properties": {"s": {"type": "string"}}, "required": ["s", "ghost"]}),
    ("empty", {"type": "object", "properties": {}}),
    ("no-properties", {"type": "object"}),
    ("required-not-str", {"properties": {"s": {"type": "string"}}, "required": [1]}),
    ("properties-not-dict", {"properties": [1]}),
    ("not-a-dict", ["nope"]),
]

ARGS: list[dict[Any, Any]] = [
    {},
    {"i": 1, "s": "x"},
    {"s": "x", "i": -(2**80)},
    {"i": 1, "s": "x", "n": 2},
    {"i": 1, "s": "x", "n": 2.5},
    {"i": 1, "s": "x", "n": -0.0},
    {"i": 1, "s": "x", "n": float("nan")},
    {"i": 1, "s": "x", "n": float("inf")},
    {"i": 1, "s": "x", "n": float("-inf")},
    {"i": 1, "s": "x", "n": True},
    {"i": True, "s": "x"},
    {"i": 1.0, "s": "x"},
    {"i": "1", "s": "x"},
    {"i": 1, "s": "x", "b": True},
    {"i": 1, "s": "x", "b": 1},
    {"i": 1, "s": "x", "z": None},
    {"i": 1, "s": "x", "z": 0},
    {"i": 1, "s": LyingStr("x")},
    {"i": LyingInt(1), "s": "x"},
    {"i": 1, "s": "x", "n": LyingFloat(1.5)},
    {"i": 1, "s": "x", "n": Color.RED},
    {"i": 1},
    {"s": "x"},
    {"i": 1, "s": "x", "extra": 1},
    {"i": 1, "s": "x", 1: 1},
    {1: 1, "i": 1, "s": "x"},
    {"i": 1, LyingStr("s"): "x"},
    {"i": 1, "s": "x", None: None},
    {"i": 1, "s": "x", "arr": []},
    {"i": 1, "s": "x", "obj": {}},
    {"i": 1, "s": "x", "e": "a"},
    {"i": 1, "s": "x", "m": 1},
    {"i": 1, "s": "x", "u": 1},
    {"i": 1, "s": "x", "any": 1},
    {"n": 1.5},
    {"n": 1},
    {"n": float("nan")},
    {"s": ""},
    {"s": "x", "ghost": "y"},
]


def _admits(monkeypatch: pytest.MonkeyPatch, schema: Any) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """(C admit, Python admit) for ``schema``, built as _compile_arguments builds them."""
    with monkeypatch.context() as m:
        m.setattr(state, "speedups", speedups)
        c = _compile_arguments(schema)
        m.setattr(state, "speedups", None)
        py = _compile_arguments(schema)
    return c, py


@pytest.mark.parametrize("schema", [s for _, s in SCHEMAS], ids=[n for n, _ in SCHEMAS])
def test_admit_agrees(monkeypatch: pytest.MonkeyPatch, schema: Any) -> None:
    """Admit returns a private copy exactly when the Python closure does, and the same copy."""
    c, py = _admits(monkeypatch, schema)
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    required = schema.get("required", ()) if isinstance(schema, dict) else ()
    simple = isinstance(props, dict) and all(isinstance(r, str) for r in required)
    assert isinstance(c, speedups.Admit) == simple
    admitted = 0
    for args in ARGS:
        CALLED.clear()
        oc, op = _outcome(c, args), _outcome(py, args)
        assert CALLED == []
        assert oc == op, args
        got = c(args)
        if got is not None:
            admitted += 1
            assert type(got) is dict and got == args and got is not args
            got["new"] = 1
            assert "new" not in args
    if schema is SCHEMAS[0][1]:
        assert 0 < admitted < len(ARGS)  # the battery exercises both answers


def test_admit_copies_match_the_slow_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever Admit admits, validate_arguments finds valid and plain_json copies unchanged."""
    schema = SCHEMAS[0][1]
    c, _ = _admits(monkeypatch, schema)
    for args in ARGS:
        if c(args) is not None:
            assert executor.validate_arguments(schema, args) == []
            assert _typed(_plain_json_py(args)[0]) == _typed(c(args))


# -- Statement ---------------------------------------------------------------------------------------

SCHEMA = """
CREATE TABLE acct (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, balance INTEGER NOT NULL, note BLOB);
CREATE TABLE log (id INTEGER PRIMARY KEY AUTOINCREMENT, note TEXT);
CREATE INDEX acct_owner ON acct (owner);
"""
SEED = "INSERT INTO acct VALUES (1, 'ann', 100, NULL), (2, 'bob', 50, X'00ff'), (3, 'cy', -7, 'n');"
# small = min(15, max_rows, max_result_bytes // (max_value_length * columns)): 10 rows of one column, 3 of three,
# so results take both the small path and the counted one
SQL_LIMITS = SqlLimits(statement_timeout_s=0.2, max_rows=50, max_value_length=10_000, max_result_bytes=100_000)
TIMEOUT = 0.15
COUNT_FOREVER = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c"


def _db(monkeypatch: pytest.MonkeyPatch, c: bool) -> StateDB:
    with monkeypatch.context() as m:
        m.setattr(state, "speedups", speedups if c else None)
        db = StateDB(SQL_LIMITS)
    db.script(SCHEMA, mode="setup")
    db.script(SEED, mode="rw")
    db.load_image(db.image())
    db.open_episode()
    return db


@pytest.fixture
def dbs(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[StateDB, StateDB]]:
    """(a StateDB with the C statements, one with the Python statements), same content, episode open."""
    c, py = _db(monkeypatch, True), _db(monkeypatch, False)
    assert type(c.guard) is speedups.Guard and type(py.guard) is state._Guard
    assert isinstance(c.facades(TIMEOUT)[0].query, speedups.Statement)
    assert not isinstance(py.facades(TIMEOUT)[0].query, speedups.Statement)
    yield c, py
    c.close()
    py.close()


def _statement_outcome(fn: Callable[[], Any]) -> tuple[Any, ...]:
    try:
        value = fn()
    except Exception as e:
        ctx = e.__context__
        return ("raised", type(e), str(e), getattr(e, "transient", None), type(e.__cause__), e.__suppress_context__,
                type(ctx), str(ctx) if ctx is not None else None)
    return ("returned", _typed(value))


Step = Callable[[StateDB, DbFacade, DbFacade], Any]


def _same(dbs: tuple[StateDB, StateDB], step: Step, *, timing: bool = False) -> tuple[Any, ...]:
    """Run ``step(db, rw_facade, ro_facade)`` on both databases; the outcomes, the content and the guard after
    it must agree (``timing``: the step is interrupted, so how far it got, total_changes, may differ)."""
    outcomes, called = [], []
    for db in dbs:
        rw, ro = db.facades(TIMEOUT)
        CALLED.clear()
        outcomes.append(_statement_outcome(lambda db=db, rw=rw, ro=ro: step(db, rw, ro)))
        called.append(CALLED[:])
        assert db.guard.mode == "host"
        assert db.guard.deadline == float("inf")
    c, py = dbs
    assert outcomes[0] == outcomes[1]
    assert called[0] == called[1]  # the shared hooks may call an override (state._plain does): the same ones
    assert c.lost == py.lost
    assert c.guard.query_only == py.guard.query_only
    if not timing:
        assert c.total_changes == py.total_changes
    if not c.lost:
        assert c.digest() == py.digest()
        assert c.host("SELECT last_insert_rowid(), changes()") == py.host("SELECT last_insert_rowid(), changes()")
    return outcomes[0]


class Rows(list):
    """A list subclass of parameters."""


WITH_UPDATE = "WITH t(v) AS (SELECT 5) UPDATE acct SET balance = balance + (SELECT v FROM t) WHERE id < 3"


def _series(n: int, select: str) -> str:
    """``select`` over ``c(x)``, the numbers 1 to ``n``."""
    return f"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT {n}) {select}"
STATEMENTS: list[tuple[str, Step]] = [
    # reads
    ("select", lambda db, rw, ro: rw.query("SELECT * FROM acct ORDER BY id")),
    ("select-ro", lambda db, rw, ro: ro.query("SELECT id, owner FROM acct WHERE balance > ?", [0])),
    ("select-empty", lambda db, rw, ro: rw.query("SELECT * FROM acct WHERE id < 0")),
    ("select-one", lambda db, rw, ro: rw.query("SELECT owner FROM acct WHERE id = ?", (2,))),
    ("select-repeated-column", lambda db, rw, ro: rw.query("SELECT id, owner AS id, balance AS id FROM acct")),
    ("select-no-name", lambda db, rw, ro: rw.query("SELECT 1, 1 + 1, 'x' || 'y'")),
    ("select-types", lambda db, rw, ro: rw.query("SELECT 1 AS i, 1.5 AS f, 'é' AS s, X'0001' AS b, NULL AS n")),
    ("select-values", lambda db, rw, ro: ro.query("VALUES (1, 2), (3, 4)")),
    ("select-with", lambda db, rw, ro: ro.query("WITH t AS (SELECT 2 AS x) SELECT x * 2 AS y FROM t")),
    ("select-comment", lambda db, rw, ro: ro.query("  -- hi\n/* there */ SELECT 3 AS x")),
    ("rows-10-of-1-col", lambda db, rw, ro: ro.query(_series(10, "SELECT x FROM c"))),
    ("rows-11-of-1-col", lambda db, rw, ro: ro.query(_series(11, "SELECT x FROM c"))),
    ("rows-16", lambda db, rw, ro: ro.query(_series(16, "SELECT x, 'r' AS r FROM c"))),
    ("rows-17", lambda db, rw, ro: ro.query(_series(17, "SELECT x, x * x AS y FROM c"))),
    ("rows-32", lambda db, rw, ro: rw.query(_series(32, "SELECT x FROM c"))),
    ("rows-max", lambda db, rw, ro: rw.query(_series(50, "SELECT x FROM c"))),
    ("rows-over-max", lambda db, rw, ro: rw.query(_series(51, "SELECT x FROM c"))),
    ("rows-far-over-max", lambda db, rw, ro: ro.query(_series(5000, "SELECT x FROM c"))),
    ("bytes-over-max", lambda db, rw, ro: ro.query(_series(20, "SELECT zeroblob(9000) FROM c"))),
    ("bytes-small-result", lambda db, rw, ro: ro.query("SELECT zeroblob(9000) AS z UNION ALL SELECT 'x'")),
    ("value-too-long", lambda db, rw, ro: ro.query("SELECT zeroblob(20000)")),
    # writes
    ("insert", lambda db, rw, ro: rw.execute("INSERT INTO log (note) VALUES (?)", ["hi"])),
    ("insert-many", lambda db, rw, ro: rw.execute("INSERT INTO log (note) VALUES ('a'), ('b'), ('c')")),
    ("insert-rowid", lambda db, rw, ro: rw.execute("INSERT INTO acct VALUES (?, ?, ?, ?)", (10, "d", 1, None))),
    ("update", lambda db, rw, ro: rw.execute("UPDATE acct SET balance = balance + 1 WHERE id > ?", [1])),
    ("update-none", lambda db, rw, ro: rw.execute("UPDATE acct SET balance = 0 WHERE id < 0")),
    ("delete", lambda db, rw, ro: rw.execute("DELETE FROM acct WHERE owner = ?", ["cy"])),
    ("replace", lambda db, rw, ro: rw.execute("REPLACE INTO acct VALUES (1, 'ann', 1, NULL)")),
    ("insert-returning", lambda db, rw, ro: rw.execute("INSERT INTO log (note) VALUES ('r') RETURNING id, note")),
    ("update-returning", lambda db, rw, ro: rw.execute("UPDATE acct SET balance = 9 RETURNING id")),
    ("query-returning", lambda db, rw, ro: rw.query("INSERT INTO log (note) VALUES ('q') RETURNING id, note")),
    ("query-returning-many", lambda db, rw, ro: rw.query("UPDATE acct SET balance = 2 RETURNING id, balance")),
    ("query-insert", lambda db, rw, ro: rw.query("INSERT INTO log (note) VALUES ('q')")),
    ("execute-select", lambda db, rw, ro: rw.execute("SELECT * FROM acct")),
    ("with-update", lambda db, rw, ro: rw.execute(WITH_UPDATE)),
    ("with-delete-returning", lambda db, rw, ro: rw.execute(
        "WITH t AS (SELECT 1) DELETE FROM acct WHERE id = 3 RETURNING owner")),
    ("with-insert", lambda db, rw, ro: rw.execute(
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 20) "
        "INSERT INTO log (note) SELECT 'n' || x FROM c")),
    ("with-select-execute", lambda db, rw, ro: rw.execute("WITH t AS (SELECT 1 AS x) SELECT x FROM t")),
    ("unique", lambda db, rw, ro: rw.execute("INSERT INTO acct VALUES (1, 'dup', 1, NULL)")),
    ("not-null", lambda db, rw, ro: rw.execute("INSERT INTO acct (id, owner) VALUES (20, 'x')")),
    ("no-such-table", lambda db, rw, ro: rw.query("SELECT * FROM nope")),
    ("syntax", lambda db, rw, ro: rw.query("SELECT FROM acct")),
    ("runtime-error", lambda db, rw, ro: rw.query("SELECT abs(-9223372036854775807 - 1)")),
    # parameters
    ("params-tuple", lambda db, rw, ro: ro.query("SELECT ? AS a, ? AS b", (1, "x"))),
    ("params-list", lambda db, rw, ro: ro.query("SELECT ? AS a, ? AS b", [1.5, None])),
    ("params-named", lambda db, rw, ro: ro.query("SELECT :a AS a, :b AS b", {"a": 1, "b": "two"})),
    ("params-named-keys", lambda db, rw, ro: ro.query("SELECT :a AS a, :1 AS b", {"a": LyingStr("s"), 1: 2})),
    ("params-named-missing", lambda db, rw, ro: ro.query("SELECT :a AS a", {"b": 1})),
    ("params-named-subclass", lambda db, rw, ro: ro.query("SELECT :a AS a", LyingDict({"a": 1}))),
    ("params-none", lambda db, rw, ro: ro.query("SELECT 1 AS a", None)),
    ("params-empty-list", lambda db, rw, ro: ro.query("SELECT 1 AS a", [])),
    ("params-list-subclass", lambda db, rw, ro: ro.query("SELECT ? AS a, ? AS b", Rows([1, "x"]))),
    ("params-lying-list", lambda db, rw, ro: ro.query("SELECT ? AS a", LyingList([1]))),
    ("params-lying-tuple", lambda db, rw, ro: ro.query("SELECT ? AS a", LyingTuple((1,)))),
    ("params-subclass-values", lambda db, rw, ro: ro.query(
        "SELECT ? AS s, typeof(?) AS ts, ? AS i, typeof(?) AS ti, ? AS f, ? AS e",
        [LyingStr("ann"), LyingStr("ann"), LyingInt(2**40), LyingInt(3), LyingFloat(0.25), Color.RED])),
    ("params-subclass-write", lambda db, rw, ro: rw.execute(
        "INSERT INTO log (note) VALUES (?)", (LyingStr("sub"),))),
    ("params-bool", lambda db, rw, ro: ro.query("SELECT ? AS t, typeof(?) AS k", [True, False])),
    ("params-bytes", lambda db, rw, ro: ro.query("SELECT ? AS b, typeof(?) AS k", [b"\x00\xff", bytearray(b"x")])),
    ("params-big-int", lambda db, rw, ro: ro.query("SELECT ? AS b", [2**63])),
    ("params-nan", lambda db, rw, ro: ro.query("SELECT ? AS n, typeof(?) AS k", [float("nan"), float("inf")])),
    ("params-object", lambda db, rw, ro: ro.query("SELECT ?", [object()])),
    ("params-nested", lambda db, rw, ro: ro.query("SELECT ?", [[1]])),
    ("params-dict-value", lambda db, rw, ro: ro.query("SELECT :a", {"a": {}})),
    ("params-str", lambda db, rw, ro: ro.query("SELECT ?", "not a sequence")),
    ("params-int", lambda db, rw, ro: ro.query("SELECT ?", 5)),
    ("params-set", lambda db, rw, ro: ro.query("SELECT ?", {1})),
    ("params-too-few", lambda db, rw, ro: ro.query("SELECT ?, ?", [1])),
    ("params-too-many-for-sql", lambda db, rw, ro: ro.query("SELECT ?", [1, 2])),
    ("params-over-limit", lambda db, rw, ro: ro.query("SELECT ?", list(range(101)))),
    ("params-over-limit-tuple", lambda db, rw, ro: ro.query("SELECT ?", tuple(range(101)))),
    ("params-over-limit-dict", lambda db, rw, ro: ro.query("SELECT :a", {f"k{i}": i for i in range(101)})),
    ("params-at-limit", lambda db, rw, ro: ro.query(
        "SELECT " + ", ".join(["?"] * 100), list(range(100)))),
    ("params-sql-var-limit", lambda db, rw, ro: ro.query("SELECT " + ", ".join(["?"] * 101), [])),
    # the statement text
    ("sql-str-subclass", lambda db, rw, ro: ro.query(LyingStr("SELECT 1 AS x"))),
    ("sql-str-subclass-write", lambda db, rw, ro: rw.execute(LyingStr("DELETE FROM acct WHERE id = 2"))),
    ("sql-str-subclass-refused", lambda db, rw, ro: ro.query(LyingStr("DELETE FROM acct"))),
    ("sql-bytes", lambda db, rw, ro: ro.query(b"SELECT 1")),
    ("sql-none", lambda db, rw, ro: rw.execute(None)),
    ("sql-int", lambda db, rw, ro: ro.query(1)),
    ("sql-list", lambda db, rw, ro: ro.query(["SELECT 1"])),
    ("sql-too-long", lambda db, rw, ro: ro.query("SELECT 1" + " " * 20_000)),
    ("sql-empty", lambda db, rw, ro: ro.query("")),
    ("sql-comment-only", lambda db, rw, ro: ro.query("-- nothing")),
    ("pragma", lambda db, rw, ro: rw.execute("PRAGMA query_only = 0")),
    ("pragma-select", lambda db, rw, ro: rw.query("SELECT * FROM pragma_table_info('acct')")),
    ("attach", lambda db, rw, ro: rw.execute("ATTACH DATABASE ':memory:' AS x")),
    ("vacuum-into", lambda db, rw, ro: rw.execute("VACUUM INTO '/tmp/envwright-x.db'")),
    ("create-in-rw", lambda db, rw, ro: rw.execute("CREATE TABLE t (x)")),
    ("create-via-query", lambda db, rw, ro: rw.query("CREATE TABLE t (x)")),
    ("drop", lambda db, rw, ro: rw.execute("DROP TABLE acct")),
    ("begin", lambda db, rw, ro: rw.execute("BEGIN")),
    ("savepoint", lambda db, rw, ro: rw.execute("SAVEPOINT x")),
    ("two-statements", lambda db, rw, ro: rw.execute("DELETE FROM log; DELETE FROM acct")),
    ("two-selects", lambda db, rw, ro: ro.query("SELECT 1; SELECT 2")),
    ("with-write-in-ro", lambda db, rw, ro: ro.query(WITH_UPDATE)),
    ("update-in-ro", lambda db, rw, ro: ro.query("UPDATE acct SET balance = 0")),
    ("execute-in-ro", lambda db, rw, ro: ro.execute("UPDATE acct SET balance = 0")),
    ("denied-function", lambda db, rw, ro: ro.query("SELECT random()")),
    ("temp-table", lambda db, rw, ro: ro.query("SELECT * FROM temp.envwright_reset")),
    ("sqlite-sequence", lambda db, rw, ro: rw.execute("DELETE FROM sqlite_sequence")),
    ("sqlite-master", lambda db, rw, ro: ro.query("SELECT name FROM sqlite_master ORDER BY name")),
    ("printf", lambda db, rw, ro: ro.query("SELECT printf('%5d|%s', 42, 'x') AS p")),
    ("printf-wide", lambda db, rw, ro: ro.query("SELECT printf('%.*c', 1000000000, 'x')")),
    # calling conventions
    ("kw-sql", lambda db, rw, ro: ro.query(sql="SELECT 1 AS x")),
    ("kw-params", lambda db, rw, ro: ro.query("SELECT ? AS x", params=[1])),
    ("kw-both", lambda db, rw, ro: rw.execute(params=("z",), sql="INSERT INTO log (note) VALUES (?)")),
    ("kw-params-none", lambda db, rw, ro: ro.query("SELECT 1 AS x", params=None)),
    ("args-too-many", lambda db, rw, ro: ro.query("SELECT 1", (), 3)),
    ("args-too-many-execute", lambda db, rw, ro: rw.execute("SELECT 1", (), 3, 4)),
    ("args-none", lambda db, rw, ro: ro.query()),
    ("args-params-only", lambda db, rw, ro: rw.execute(params=())),
    ("args-unexpected-kw", lambda db, rw, ro: ro.query("SELECT 1", foo=1)),
    ("args-unexpected-kw-only", lambda db, rw, ro: rw.execute(foo=1)),
    ("args-multiple-sql", lambda db, rw, ro: ro.query("SELECT 1", sql="SELECT 2")),
    ("args-multiple-params", lambda db, rw, ro: rw.execute("SELECT 1", (), params=())),
    ("args-ro-execute", lambda db, rw, ro: ro.execute()),
    ("args-ro-execute-extra", lambda db, rw, ro: ro.execute("x", (), 3)),
    # the statement function itself, and run()
    ("statement-setup", lambda db, rw, ro: db.statement("setup", fetch=False, timeout_s=1)("CREATE TABLE t2 (x)")),
    ("statement-setup-select", lambda db, rw, ro: db.statement("setup", fetch=True, timeout_s=1)("SELECT 1")),
    ("statement-unknown-mode", lambda db, rw, ro: db.statement("admin", fetch=True, timeout_s=1)),
    ("run-ro", lambda db, rw, ro: db.run("SELECT count(*) AS n FROM acct", mode="ro", fetch=True)),
    ("run-rw", lambda db, rw, ro: db.run("UPDATE acct SET owner = upper(owner)", mode="rw", fetch=False)),
    ("run-rw-params", lambda db, rw, ro: db.run("SELECT :x AS x", {"x": LyingInt(4)}, mode="rw", fetch=True)),
]


@pytest.mark.parametrize("step", [s for _, s in STATEMENTS], ids=[n for n, _ in STATEMENTS])
def test_statement_agrees(dbs: tuple[StateDB, StateDB], step: Step) -> None:
    """Each statement gives the same rows / counts / StateError in C and Python, the first time (the full
    check) and the second (the cached verdict and shape), and leaves the guard at host mode, no deadline."""
    _same(dbs, step)
    _same(dbs, step)


def test_statement_repr_names_the_method(dbs: tuple[StateDB, StateDB]) -> None:
    """repr(db.query) and repr(db.execute) say what they are in both."""
    for db in dbs:
        rw, ro = db.facades(TIMEOUT)
        for fn, name in ((rw.query, "db.query"), (rw.execute, "db.execute"), (ro.query, "db.query"),
                         (ro.execute, "db.execute")):
            assert name in repr(fn)


def test_read_only_facade_then_writes(dbs: tuple[StateDB, StateDB]) -> None:
    """Reads on the read-only facade, refusals there, and writes on the read-write one interleave the same."""
    steps: list[Step] = [
        lambda db, rw, ro: ro.query("SELECT id, balance FROM acct ORDER BY id"),
        lambda db, rw, ro: rw.execute("UPDATE acct SET balance = balance - 10 WHERE id = 1"),
        lambda db, rw, ro: ro.query("UPDATE acct SET balance = 0"),
        lambda db, rw, ro: ro.execute("UPDATE acct SET balance = 0"),
        lambda db, rw, ro: rw.execute("INSERT INTO log (note) VALUES ('after ro')"),
        lambda db, rw, ro: ro.query("SELECT * FROM log"),
        lambda db, rw, ro: rw.execute(WITH_UPDATE),  # prepared in rw ...
        lambda db, rw, ro: ro.query(WITH_UPDATE),  # ... and refused in ro (PRAGMA query_only)
        lambda db, rw, ro: rw.execute(WITH_UPDATE),  # and still works in rw
        lambda db, rw, ro: rw.query("SELECT id, balance FROM acct ORDER BY id"),
        lambda db, rw, ro: ro.query("SELECT last_insert_rowid() AS r, changes() AS c"),
    ]
    outcomes = [_same(dbs, step) for step in steps]
    assert outcomes[2][:2] == ("raised", StateError) and outcomes[7][:2] == ("raised", StateError)
    assert outcomes[8] == ("returned", _typed({"rowcount": 2, "lastrowid": 1}))


def test_counters_and_reset_agree(dbs: tuple[StateDB, StateDB]) -> None:
    """lastrowid, rowcount and the connection counters agree across writes and an episode reset."""
    steps: list[Step] = [
        lambda db, rw, ro: rw.execute("INSERT INTO log (note) VALUES ('a')"),
        lambda db, rw, ro: rw.execute("INSERT INTO acct VALUES (40, 'e', 0, NULL)"),
        lambda db, rw, ro: rw.execute("DELETE FROM log"),
        lambda db, rw, ro: ro.query("SELECT last_insert_rowid() AS r, changes() AS c"),
        lambda db, rw, ro: db.reset_episode(),
        lambda db, rw, ro: ro.query("SELECT last_insert_rowid() AS r, changes() AS c"),
        lambda db, rw, ro: rw.execute("INSERT INTO log (note) VALUES ('b')"),
    ]
    for step in steps:
        _same(dbs, step)


def test_statement_deadline_agrees(dbs: tuple[StateDB, StateDB]) -> None:
    """A runaway recursive CTE is interrupted at the deadline with the same transient StateError; a read leaves
    the episode intact, an interrupted write loses it and the next statement is refused the same way."""
    read = _same(dbs, lambda db, rw, ro: ro.query(COUNT_FOREVER), timing=True)
    assert read[:4] == ("raised", StateError, "statement took too long and was interrupted", True)
    assert not dbs[0].lost
    assert _same(dbs, lambda db, rw, ro: rw.query("SELECT count(*) AS n FROM acct"))[0] == "returned"
    runaway = _same(dbs, lambda db, rw, ro: db.statement("rw", fetch=False, timeout_s=0.05)(
        "INSERT INTO log (note) WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c"),
        timing=True)
    assert runaway[:4] == ("raised", StateError, "statement took too long and was interrupted", True)
    assert dbs[0].lost and dbs[1].lost
    aborted = _same(dbs, lambda db, rw, ro: rw.execute("DELETE FROM acct"), timing=True)
    assert aborted[:4] == ("raised", StateError, "the episode's transaction was aborted by an earlier error; no "
                           "further statements run in this call", True)
    assert _same(dbs, lambda db, rw, ro: ro.query("SELECT 1"), timing=True) == aborted


def test_statement_after_reload_agrees(dbs: tuple[StateDB, StateDB]) -> None:
    """After load_image (which forgets cached verdicts and shapes) the same statements give the same results."""
    query: Step = lambda db, rw, ro: rw.query("SELECT id, owner FROM acct ORDER BY id")  # noqa: E731
    _same(dbs, query)
    for db in dbs:
        db.load_image(db.image())
        db.open_episode()
    _same(dbs, query)
    _same(dbs, lambda db, rw, ro: rw.execute("UPDATE acct SET owner = 'z'"))
    _same(dbs, query)


def test_statement_cache_overflow_agrees(dbs: tuple[StateDB, StateDB]) -> None:
    """Past the cache of admitted statements (4096 texts per mode, then all are forgotten) results still agree."""
    outcomes: list[list[Any]] = []
    for db in dbs:
        rw, ro = db.facades(TIMEOUT)
        outcomes.append([rw.query(f"SELECT {i} AS x") for i in range(state._KW_CACHE_MAX + 50)]
                        + [rw.execute(f"UPDATE acct SET balance = {i} WHERE id = 1") for i in range(60)]
                        + [ro.query("SELECT balance FROM acct WHERE id = 1")])
        assert len(db._admitted["rw"]) < state._KW_CACHE_MAX
    assert outcomes[0] == outcomes[1]


def test_script_errors_agree(dbs: tuple[StateDB, StateDB]) -> None:
    """StateDB.script (setup and rw statements through run()) succeeds and fails the same way."""
    for script, mode in (("CREATE TABLE t (x); CREATE INDEX t_x ON t (x)", "setup"),
                         ("INSERT INTO t VALUES (1); INSERT INTO t VALUES ('a')", "rw"),
                         ("CREATE TABLE u (x); INSERT INTO u VALUES (1)", "setup"),
                         ("INSERT INTO t VALUES (2); DELETE FROM nope", "rw"),
                         ("CREATE TABLE v (x); PRAGMA foreign_keys = OFF", "setup")):
        _same(dbs, lambda db, rw, ro, script=script, mode=mode: db.script(script, mode=mode))


def test_statement_on_a_closed_database_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    """A statement function kept after close() fails the same way in both and leaves the guard alone."""
    outcomes = []
    for c in (True, False):
        db = _db(monkeypatch, c)
        rw, ro = db.facades(TIMEOUT)
        db.close()
        outcomes.append([_statement_outcome(lambda f=f: f("SELECT 1")) for f in (rw.query, rw.execute, ro.query)])
        assert db.guard.mode == "host" and db.guard.deadline == float("inf")
    assert outcomes[0] == outcomes[1]


HOOK_FAILURES: list[tuple[str, str, BaseException]] = [
    ("_shape", "SELECT id FROM acct", KeyError("from _shape")),
    ("_shape", "SELECT id FROM acct", KeyboardInterrupt()),
    ("_shape", "SELECT id FROM acct", StateError("refused by _shape", transient=True)),
    ("_rows", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 12) SELECT x FROM c",
     MemoryError()),
    ("_rows", "SELECT id, owner, balance, note FROM acct", sqlite3.Warning("a warning")),
    ("_rows", "SELECT id, owner, balance, note FROM acct", sqlite3.OperationalError("interrupted")),
    ("_execute_with", WITH_UPDATE, sqlite3.DatabaseError("database disk image is malformed")),
    ("_execute_with", WITH_UPDATE, ValueError("from _execute_with")),
    ("_drop_cursor", "SELECT * FROM nope", ValueError("from _drop_cursor")),
]


@pytest.mark.parametrize(("hook", "sql", "error"), HOOK_FAILURES,
                         ids=[f"{h}-{type(e).__name__}" for h, _, e in HOOK_FAILURES])
def test_statement_hook_failures_agree(dbs: tuple[StateDB, StateDB], monkeypatch: pytest.MonkeyPatch,
                                       hook: str, sql: str, error: BaseException) -> None:
    """An exception raised inside the statement (here by a StateDB method both twins call) ends the same way:
    database errors and MemoryError become the same StateError (raised from None), anything else crosses
    unchanged, an error while dropping the cursor replaces the first, and the guard is reset in every case."""
    outcomes = []
    for db in dbs:
        real = getattr(db, hook)

        def failing(*args: Any, real: Any = real) -> Any:
            if hook == "_drop_cursor":
                real()
            raise error.with_traceback(None)

        monkeypatch.setattr(db, hook, failing)
        fn = db.statement("rw", fetch=hook != "_execute_with", timeout_s=1)  # binds the hooks now
        try:
            fn(sql)
        except BaseException as e:  # KeyboardInterrupt included
            ctx = e.__context__
            outcomes.append((type(e), str(e), getattr(e, "transient", None), type(e.__cause__),
                             e.__suppress_context__, type(ctx), str(ctx) if ctx is not None else None))
        else:
            outcomes.append(("returned",))
        monkeypatch.setattr(db, hook, real)
        assert db.guard.mode == "host" and db.guard.deadline == float("inf")
        assert db.run("SELECT count(*) AS n FROM acct", mode="ro", fetch=True) == [{"n": 3}]  # the cursor works
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] is (StateError if isinstance(error, sqlite3.Error | sqlite3.Warning | MemoryError)
                              else type(error))
    if isinstance(error, MemoryError):
        assert outcomes[0][1:3] == ("out of memory", True)


@pytest.mark.parametrize("call", [
    lambda q: q("SELECT 1", (), 3, foo=1),
    lambda q: q("SELECT 1", (), 3, params=()),
    lambda q: q("SELECT 1", (), 3, sql="SELECT 2"),
], ids=["unexpected-kw", "multiple-params", "multiple-sql"])
def test_statement_argument_errors_with_too_many_positionals(dbs: tuple[StateDB, StateDB],
                                                            call: Callable[[Any], Any]) -> None:
    """Three positionals plus a bad keyword: the same TypeError as a Python function of that signature."""
    _same(dbs, lambda db, rw, ro: call(rw.query))


# -- GetAttr -----------------------------------------------------------------------------------------


def _fast_cases(facade: DbFacade) -> list[tuple[Any, ...]]:
    gen = _gen()
    return [
        ({}, "keys"), ({"a": 1}, "get"), ([], "append"), ("s", "upper"), ("s", "join"), ((), "count"),
        (set(), "add"), (frozenset(), "union"), (1, "bit_length"), (1, "real"), (1.5, "hex"), (b"x", "hex"),
        (True, "real"), (facade, "query"), (facade, "execute"),
        ({}, "nope"), ([], "nope"), (facade, "nope"), (facade, "conn"), (object(), "x"),
        ({}, "__class__"), ({}, "_x"), ("s", "format"), ("s", "format_map"), (int, "mro"), (gen, "gi_frame"),
        (gen, "gi_code"), (facade, "__slots__"), (facade, "_state"), (len, "__self__"),
        ({}, 5), (facade, 5), (object(), 5), ({}, None), ({}, LyingStr("keys")), ({}, LyingStr("_x")),
        ({}, ["keys"]), (1, ["x"]),
        (ValueError("m"), "args"), (ValueError("m"), "with_traceback"), (ValueError("m"), "message"),
        (KeyError("k"), "add_note"), (ValueError, "args"), (ValueError, "mro"), (collections.abc.Sized, "register"),
        (SimpleNamespace(a=1), "a"), (math, "pi"), (Color.RED, "name"), (Color, "RED"),
        ({}, "nope", None), ({}, "keys", None), ("s", "upper", 5), (facade, "query", None), (facade, "nope", 1),
        (SimpleNamespace(), "missing", "dflt"), (ValueError("m"), "args", None), (ValueError("m"), "x", None),
        ({}, "_x", None), ({}, 5, None),
        (), ({},), ({}, "keys", None, 4),
    ]


def test_getattr_agrees(dbs: tuple[StateDB, StateDB]) -> None:
    """GetAttr gives what _guarded_getattr gives (same bound methods, values, SandboxViolations), fast path or
    not, with or without a default."""
    c_get = speedups.GetAttr(executor._FAST_ATTRS, _guarded_getattr)
    facade = dbs[0].facades(TIMEOUT)[0]
    for case in _fast_cases(facade):
        CALLED.clear()
        outcomes = []
        for fn in (c_get, _guarded_getattr):
            try:
                value = fn(*case)
            except Exception as e:
                outcomes.append(("raised", type(e), str(e)))
            else:
                outcomes.append(("returned", type(value), value))
        assert CALLED == []
        assert outcomes[0] == outcomes[1], case
    with pytest.raises(SandboxViolation, match="not allowed"):
        c_get("s", "format")


def test_getattr_keywords_agree() -> None:
    """A default passed by keyword, and unknown keywords, reach the Python guard the same way."""
    c_get = speedups.GetAttr(executor._FAST_ATTRS, _guarded_getattr)
    for args, kwargs in ((({}, "keys"), {"default": 1}), (({}, "nope"), {"default": 1}), (({}, "keys"), {"x": 1}),
                         (({},), {"name": "keys"}), ((), {"obj": {}, "name": "nope", "default": 2})):
        assert _outcome(c_get, *args, **kwargs) == _outcome(_guarded_getattr, *args, **kwargs)


def test_tool_code_gets_the_c_getattr_when_speedups_are_on() -> None:
    """executor._GETATTR is a GetAttr over _guarded_getattr exactly when state.speedups is loaded."""
    if state.speedups is None:
        assert executor._GETATTR is _guarded_getattr
    else:
        assert isinstance(executor._GETATTR, speedups.GetAttr)
        d: dict[str, int] = {}
        assert executor._GETATTR(d, "keys") == d.keys
        with pytest.raises(SandboxViolation):
            executor._GETATTR({}, "__class__")


# -- Guard -------------------------------------------------------------------------------------------

GUARD_ATTRS = ("mode", "cursor", "deadline", "query_only", "episode")


def test_guard_defaults_agree() -> None:
    """A new Guard holds what a new _Guard holds."""
    c, py = speedups.Guard(), state._Guard()
    for name in GUARD_ATTRS:
        assert _typed(getattr(c, name)) == _typed(getattr(py, name)), name
    assert (c.mode, c.cursor, c.deadline, c.query_only, c.episode) == ("host", None, float("inf"), False, False)


def test_guard_attributes_can_be_set() -> None:
    """Each attribute takes and returns what the Python twin takes and returns."""
    cursor = object()
    for name, value in (("mode", "rw"), ("mode", "ro"), ("cursor", cursor), ("deadline", 12.5),
                        ("deadline", float("inf")), ("query_only", True), ("query_only", False), ("episode", True)):
        c, py = speedups.Guard(), state._Guard()
        setattr(c, name, value)
        setattr(py, name, value)
        assert getattr(c, name) is value or getattr(c, name) == value
        assert _typed(getattr(c, name)) == _typed(getattr(py, name))
    for g in (speedups.Guard(), state._Guard()):
        with pytest.raises(AttributeError):
            g.other = 1  # type: ignore[attr-defined]


def test_guard_progress_and_clock() -> None:
    """progress() is 0 with no deadline or a future one and 1 past it; now() is the Python twin's clock."""
    for g in (speedups.Guard(), state._Guard()):
        assert g.progress() == 0 and type(g.progress()) is int
        g.deadline = g.now() + 60
        assert g.progress() == 0
        g.deadline = g.now() - 1
        assert g.progress() == 1
        g.deadline = float("inf")
        assert g.progress() == 0
    a = state._Guard.now()
    b = speedups.Guard.now()
    c = state._Guard.now()
    assert type(b) is float and a <= b <= c  # the same clock: a deadline set by either is read right by both


def test_state_db_chooses_its_twin_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    """A StateDB keeps the statements it chose when built, whatever state.speedups says later."""
    c, py = _db(monkeypatch, True), _db(monkeypatch, False)
    monkeypatch.setattr(state, "speedups", None)
    assert isinstance(c.statement("ro", fetch=True, timeout_s=1), speedups.Statement)
    monkeypatch.setattr(state, "speedups", speedups)
    assert not isinstance(py.statement("ro", fetch=True, timeout_s=1), speedups.Statement)
    assert c.run("SELECT 1 AS x", mode="ro", fetch=True) == py.run("SELECT 1 AS x", mode="ro", fetch=True)


# -- end to end --------------------------------------------------------------------------------------

E2E_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from gym_envs import executor, state
from gym_envs.examples import load_all
from gym_envs.executor import InProcessExecutor, WorkerExecutor

class S(str):
    pass

SAMPLE = {"integer": 3, "number": 2.5, "string": "x", "boolean": True}

def odd_calls(tool):
    props = tool.parameters.get("properties", {})
    typed = {k: SAMPLE.get(p.get("type"), "x") for k, p in props.items()}
    first = next(iter(props), "x")
    return [
        {}, typed, {**typed, "extra": 1},
        {k: True if v == 3 else v for k, v in typed.items()},
        {k: 3.0 if v == 3 else v for k, v in typed.items()},
        {k: 2**70 if v == 3 else v for k, v in typed.items()},
        {k: S(v) if isinstance(v, str) else v for k, v in typed.items()},
        {**typed, first: [1, {"a": (2, 3)}]}, {**typed, first: float("nan")}, {**typed, 1: "x"},
        {**typed, first: None}, [1],
    ]

out = {"pure": state.speedups is None, "runs": [],
       "twins": [executor._copy_json is executor._plain_json_py, executor._GETATTR is executor._guarded_getattr]}
specs = load_all()
for ex in (InProcessExecutor(), WorkerExecutor(1)):
    try:
        for spec in specs:
            for task in spec.tasks:
                s = ex.session(spec, seed=0)
                run = {"spec": spec.id, "task": task.id, "mode": ex.mode, "turns": []}
                for turn in task.turns:
                    if any(c.kind == "unchanged" for c in turn.checks):
                        s.mark()
                    calls = [s.call(c.name, c.arguments).to_dict() for c in turn.reference]
                    reply = " ".join(c.any_of[0] for c in turn.checks if c.kind == "reply_contains") or "Done."
                    ok = [c["name"] for c in calls if c["ok"]]
                    checks = s.check([c.model_dump() for c in turn.checks], reply, ok, [c["name"] for c in calls])
                    run["turns"].append({"calls": calls, "checks": [c.to_dict() for c in checks]})
                run["digest"] = s.digest()
                s.close()
                out["runs"].append(run)
            s = ex.session(spec, seed=1)
            odd = [s.call(tool.name, args).to_dict() for tool in spec.tools for args in odd_calls(tool)]
            odd.append(s.call("no_such_tool", {}).to_dict())
            out["runs"].append({"spec": spec.id, "mode": ex.mode, "odd": odd, "digest": s.digest()})
            s.close()
    finally:
        ex.close()
print(json.dumps(out, default=repr))
"""


def _play_examples(pure: bool) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "ENVWRIGHT_PURE_PYTHON"}
    env["ENVWRIGHT_PURE_PYTHON"] = "1" if pure else "0"
    return subprocess.Popen([sys.executable, "-c", E2E_SCRIPT, str(_ROOT)], env=env, cwd=_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_examples_play_the_same_with_and_without_speedups() -> None:
    """Every reference trajectory of the shipped examples (and a battery of malformed calls), through both
    executors, gives the same CallResults, check results and digests with the C speedups and without."""
    procs = {pure: _play_examples(pure) for pure in (False, True)}
    outputs = {}
    for pure, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 0, stderr[-3000:]
        outputs[pure] = json.loads(stdout)
    assert outputs[True]["pure"] is True and outputs[False]["pure"] is False  # state.speedups is None or not
    assert outputs[True]["twins"] == [True, True] and outputs[False]["twins"] == [False, False]
    fast, pure_runs = outputs[False]["runs"], outputs[True]["runs"]
    assert len(fast) == len(pure_runs) > 100
    for a, b in zip(fast, pure_runs, strict=True):
        assert a == b
    calls = [c for r in fast for t in r.get("turns", ()) for c in t["calls"]] + [c for r in fast for c in
                                                                                  r.get("odd", ())]
    assert any(c["ok"] for c in calls) and any(not c["ok"] for c in calls)
    assert {c["error_type"] for c in calls} >= {None, "InvalidArguments", "UnknownTool"}

"""Plain JSON values, the only thing that crosses a sandbox boundary, and the protocol's JSON codec.

:func:`plain_json` copies a value the way ``json.loads(json.dumps(value))`` would (subclasses
stripped, tuples made lists, keys made strings, nesting capped) without writing the text, and
bounds the length of that text; tool arguments, tool results and protocol values pass through it.
:func:`dumps` and :func:`loads` are the protocol's compact, ASCII-only encoder and strict decoder.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

__all__ = ["IMMUTABLE", "MAX_DEPTH", "dumps", "json_str", "loads", "plain_json"]

MAX_DEPTH = 64  #: nesting levels of a plain JSON value
# Integers longer than this are converted once to learn whether json.dumps could write them: Python refuses
# to convert more than sys.get_int_max_str_digits() digits (4300 by default, never fewer than 640 when set).
_INT_CHECK_BITS = 2_000
_INT64 = 1 << 64
_INF = (math.inf, -math.inf)
IMMUTABLE = frozenset({str, int, float, bool, type(None)})  #: JSON values a tool cannot change


def plain_json(value: Any, max_depth: int = MAX_DEPTH) -> tuple[Any, int]:
    """A JSON round trip of ``value`` without the text: ``(copy, size_bound)``.

    The copy holds only ``dict`` (str keys), ``list``, ``str``, ``int``, ``float``, ``bool`` and
    ``None``, exactly as ``json.loads(json.dumps(value))`` would (tuples become lists, int/float/bool/None
    keys become strings, subclasses become their base type); ``size_bound`` is an upper bound of the
    length of its compact JSON text. Raises ``TypeError`` / ``ValueError`` (with the ``json`` module's
    messages) where ``json.dumps(..., allow_nan=False)`` would, and ``ValueError`` when nesting exceeds
    ``max_depth``. It never recurses deeper than ``max_depth`` frames.
    """
    if value.__class__ is dict:
        flat = _flat(value)
        if flat is not None:
            return flat
    return _plain(value, max_depth)


def _flat(value: dict[Any, Any]) -> tuple[dict[str, Any], int] | None:
    """The fast path of an exact ``dict``: a flat object of str keys and str/int/finite float/bool/None values is
    copied as it is (``(copy, size_bound)``), or None (anything else: the general copy)."""
    chars = 0  # characters of the keys and the string values, and one more for each float
    for k, v in value.items():
        if k.__class__ is not str:
            return None
        c = v.__class__
        if c is int:
            if not -_INT64 < v < _INT64:
                return None
            chars += len(k)
        elif c is str:
            chars += len(k) + len(v)
        elif c is float:
            if v != v or v in _INF:  # the general copy raises the json module's error
                return None
            chars += len(k) + 1
        elif c is bool or v is None:
            chars += len(k)
        else:
            return None
    # an item is at most 12 characters per character (escapes), 2 quotes, ':' and ',', and its value's quotes or
    # up to 21 characters of an integer, true, false or null (a float's repr, up to 24, has 12 more)
    return value.copy(), 12 * chars + 27 * len(value) + 2


def _int_bound(v: int) -> int:
    """An upper bound of the length of ``v`` in JSON; ``ValueError`` where ``json.dumps`` would refuse it."""
    bits = v.bit_length()
    if bits > _INT_CHECK_BITS:
        int.__repr__(v)  # raises the json module's ValueError past the interpreter's digit limit
    return bits // 3 + 3


def _plain(v: Any, depth: int) -> tuple[Any, int]:
    cls = v.__class__
    if cls is str:
        return v, 12 * len(v) + 2
    if cls is int:
        return v, _int_bound(v)
    if cls is bool or v is None:
        return v, 5
    if cls is float:
        if v != v or v in _INF:
            raise ValueError("Out of range float values are not JSON compliant")
        return v, 25
    if depth <= 0:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    if cls is dict:
        flat = _flat(v)
        if flat is not None:
            return flat
    if cls is dict or isinstance(v, dict):
        out: dict[str, Any] = {}
        size = 2
        for k, item in dict.items(v):
            if k.__class__ is not str:
                k = _json_key(k)
            out[k], n = _plain(item, depth - 1)
            size += n + 12 * len(k) + 4
        return out, size
    if cls is list or cls is tuple or isinstance(v, list | tuple):
        items = []
        size = 2
        if cls is not list and cls is not tuple:  # a subclass: its real items, whatever its __iter__ says
            v = list.__iter__(v) if isinstance(v, list) else tuple.__iter__(v)
        for item in v:
            # a flat object (a row) is copied without a frame of its own; anything else as above
            flat = _flat(item) if item.__class__ is dict and depth > 1 else None
            c, n = flat if flat is not None else _plain(item, depth - 1)
            items.append(c)
            size += n + 1
        return items, size
    return _plain_subclass(v, depth)


def _plain_subclass(v: Any, depth: int) -> tuple[Any, int]:
    if isinstance(v, str):
        text = str.__str__(v)  # the real text; sized by it, not by an overridden __len__
        return text, 12 * len(text) + 2
    if isinstance(v, bool):
        return bool(v), 5
    if isinstance(v, int):
        number = int.__int__(v)
        return number, _int_bound(number)
    if isinstance(v, float):
        return _plain(float.__float__(v), depth)
    raise TypeError(f"Object of type {v.__class__.__name__} is not JSON serializable")


def _json_key(k: Any) -> str:
    if isinstance(k, str):
        return str.__str__(k)
    if k is True:
        return "true"
    if k is False:
        return "false"
    if k is None:
        return "null"
    if isinstance(k, int):
        return int.__repr__(k)
    if isinstance(k, float):
        k = float.__float__(k)  # the real value: a subclass's __eq__ must not decide
        if k != k or k in _INF:
            raise ValueError("Out of range float values are not JSON compliant")
        return float.__repr__(k)
    raise TypeError(f"keys must be str, int, float, bool or None, not {k.__class__.__name__}")


def _json_default(o: Any) -> Any:
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


# One C encoder for the whole protocol: what json.dumps(v, separators=(",", ":"), allow_nan=False)
# writes (ASCII only, so lone surrogates survive the pipe), without building an encoder per call.
# It keeps no cycle markers: protocol values are trees (plain_json output or host-built requests);
# a cycle fails with RecursionError instead of ValueError.
_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
_C_ENCODE = _c_make_encoder(None, _json_default, getattr(json.encoder, "c_encode_basestring_ascii", None),
                            None, ":", ",", False, False, False) if _c_make_encoder is not None else None
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def dumps(value: Any) -> str:
    """Compact, ASCII-only JSON (``allow_nan=False``)."""
    if _C_ENCODE is None:
        return json.dumps(value, separators=(",", ":"), allow_nan=False)
    return "".join(_C_ENCODE(value, 0))


_JSON_STRS: dict[str, str] = {}  #: episode ids and tool names as JSON (a call frame names both)


def json_str(text: str) -> str:
    """``dumps(text)`` for an exact ``str``, remembered for the first 4,096 distinct strings."""
    out = _JSON_STRS.get(text)
    if out is None:
        out = dumps(text)
        if len(_JSON_STRS) < 4096:
            _JSON_STRS[text] = out
    return out


def loads(frame: bytes) -> Any:
    """Parse one ASCII JSON frame (``ValueError`` on anything else, trailing data included)."""
    text = frame.decode("ascii")
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        raise ValueError("not a JSON document") from None
    if end != len(text):
        raise ValueError("extra data after the JSON document")
    return value

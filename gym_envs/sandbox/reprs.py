"""The text of an object, as spec code reads it: never a memory address.

CPython writes an object's address into the default ``repr`` (``<function f at 0x7f3a...>``,
``<map object at 0x...>``, ``<built-in method upper of str object at 0x...>``, hashlib's ``@ 0x...``). An
address differs between processes and runs, so spec code that reads one could tell a worker from the host, or
one run from another, and its results would not replay. Every way spec code turns an object into text goes
through :func:`scrub`, which removes the address (``<function f>``):

* the builtins ``repr`` (:func:`safe_repr`) and ``str`` (:data:`STR`, a stand-in for the class: ``isinstance``
  and ``str.upper`` are the real ones, calling it scrubs);
* f-strings (the compiled code passes each through ``_fstring_``), ``%`` formatting (``_binop_``'s ``mod``,
  :func:`scrubbed_mod`), ``print`` (:class:`~gym_envs.sandbox.guards.PrintCollector`);
* exception messages: ``.args`` as spec code reads them (:func:`~gym_envs.sandbox.guards.guarded_getattr`)
  and the error text the engine returns.

``id`` and ``hash`` are not builtins, and nothing reachable calls them on spec code's behalf and hands the result
back (``tests/gym_envs/sandbox/test_surface.py``).
"""

from __future__ import annotations

import re
from typing import Any

from gym_envs.errors import describe
from gym_envs.sandbox.surface import stand_in

__all__ = ["STR", "described", "safe_repr", "safe_str", "scrub", "scrub_value", "scrubbed_mod"]

_ADDRESS = re.compile(r" (?:at|@) 0x[0-9a-fA-F]+")
_ADDRESS_BYTES = re.compile(rb" (?:at|@) 0x[0-9a-fA-F]+")
_str, _repr = str, repr


def scrub(text: str) -> str:
    """``text`` without the memory addresses CPython writes into object reprs (`` at 0x7f...``, `` @ 0x...``)."""
    return _ADDRESS.sub("", text) if "0x" in text else text


def scrub_value(value: Any) -> Any:
    """:func:`scrub` for a ``str`` or ``bytes`` value; any other value unchanged."""
    if value.__class__ is str:
        return _ADDRESS.sub("", value) if "0x" in value else value
    if value.__class__ is bytes and b"0x" in value:
        return _ADDRESS_BYTES.sub(b"", value)
    return value


def safe_repr(obj: Any, /) -> str:
    """The builtin ``repr`` of spec code: ``repr(obj)``, addresses removed."""
    text = _repr(obj)
    return _ADDRESS.sub("", text) if "0x" in text else text


def safe_str(*args: Any, **kwargs: Any) -> str:
    """Calling ``str`` in spec code: ``str(...)``, addresses removed."""
    if len(args) == 1 and not kwargs:
        obj = args[0]
        if obj.__class__ is str:
            return obj  # type: ignore[no-any-return]
        text = _str(obj)
    else:
        text = _str(*args, **kwargs)
    return _ADDRESS.sub("", text) if "0x" in text else text


def scrubbed_mod(a: Any, b: Any) -> Any:
    """``a % b``; a ``str`` or ``bytes`` result (``'%r' % obj``) without addresses."""
    result = a % b
    c = result.__class__
    if c is str or c is bytes:
        return scrub_value(result)
    return result


def described(exc: BaseException, cap: int) -> dict[str, Any]:
    """:func:`gym_envs.errors.describe`'s typed response for spec code's failure, its text without addresses."""
    resp = describe(exc, cap)
    resp["error"] = scrub(resp["error"])
    return resp


#: the ``str`` of spec code's builtins
STR = stand_in(str, safe_str)

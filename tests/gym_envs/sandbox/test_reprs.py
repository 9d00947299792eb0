"""Process state spec code must not observe: memory addresses, ``id``/``hash``, process-wide counters.

An address in a repr (``<function f at 0x7f...>``) differs between processes and runs: spec code that reads one
could tell a worker from the host (validation from training) and would not replay. One attack per way of
turning an object into text, a fuzz of every reachable callable, and the other process-wide state.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest

from gym_envs.errors import SandboxViolation
from gym_envs.sandbox import Executor
from gym_envs.sandbox.guards import guarded_getattr
from gym_envs.sandbox.reprs import safe_str
from tests.gym_envs.sandbox.attacks import assert_contained, attempt, make_spec
from tests.gym_envs.sandbox.reach import walk

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")

TEXTS = {  # the body of t(db, **kw): each returns text made from objects whose default repr holds an address
    "repr": "return repr(t)",
    "str": "return str(t)",
    "f-string": 'return f"{t} {map(len, [])}"',
    "f-string with !r and a spec": 'return f"{t!r:>60}"',
    "% formatting": 'return "%r %s" % (t, t)',
    "%= formatting": 's = "%r"\n    s %= (t,)\n    return s',
    "bytes % formatting": 'return str(b"%r" % (t,))',
    "operator.mod": 'import operator\n    return operator.mod("%r", (t,))',
    "str of a container": "return str([t, {1: t}, (t,)])",
    "repr of a bound builtin method": 'return repr("a".upper) + repr([].append)',
    "repr of a hash object": "import hashlib\n    return repr(hashlib.sha256())",
    "repr of functools.partial": "import functools\n    return repr(functools.partial(t, 1))",
    "printed": "print(t, [t])\n    return printed",
    "an exception's args from C": "import collections\n    try:\n        collections.deque([1]).index(t)\n"
                                  "    except ValueError as e:\n        return e.args[0]",
    "str of an exception": "try:\n        {}[t]\n    except KeyError as e:\n        return str(e)",
    "json default=str": "import json\n    return json.dumps([t, iter([])], default=str)",
    "map(repr)": "return list(map(repr, [t, iter([]), zip()]))",
}


@pytest.mark.parametrize("name", list(TEXTS))
def test_text_of_an_object_holds_no_address(name: str, executors: dict[str, Executor]) -> None:
    """The same text in both modes, run after run, with no address in it."""
    code = f"def t(db, **kw):\n    {TEXTS[name]}"
    results = []
    for ex in [*executors.values(), *executors.values()]:
        where, r = attempt(ex, code)
        assert where == "call" and r.ok, r
        assert not _ADDRESS.search(str(r.result)), r.result
        results.append(r.result)
    assert all(x == results[0] for x in results), results


def test_error_text_holds_no_address(ex: Executor) -> None:
    """A C function's message quoting an object (``<function t at 0x...> is not in deque``) reaches the agent
    as the call's error without the address."""
    code = "import collections\ndef t(db, **kw):\n    collections.deque([1]).index(t)"
    text = assert_contained(attempt(ex, code), call={"RuntimeError"}, detail="is not in deque")
    assert not _ADDRESS.search(text), text


@pytest.mark.parametrize("code", [
    "def t(db, **kw):\n    return id(t)",
    "def t(db, **kw):\n    return hash(t)",
    "import operator\ndef t(db, **kw):\n    return operator.methodcaller('__hash__')(t)",
    "import random\ndef t(db, **kw):\n    random.seed(t)\n    return random.random()",
])
def test_identity_and_hash_are_out_of_reach(code: str, ex: Executor) -> None:
    """``id`` and ``hash`` are no builtins, ``__hash__`` is a private name, and ``random.seed`` refuses objects
    it would seed from their (address-derived) hash."""
    where, r = attempt(ex, code)
    assert where == "call" and not r.ok and r.error_type in ("RuntimeError", "SandboxViolation"), r


def test_the_abc_cache_token_is_out_of_reach(ex: Executor) -> None:
    """``functools.get_cache_token()`` was the process-wide ABC invalidation counter: it differed between the host
    and a worker, and grew with every ``register`` anywhere in the process."""
    assert_contained(attempt(ex, "import functools\ndef t(db, **kw):\n    return functools.get_cache_token()"),
                     call={"RuntimeError"}, detail="AttributeError")


def test_no_counter_is_shared_between_episodes(ex: Executor) -> None:
    """Counters and caches a spec makes at module level are its episode's: every episode starts them afresh."""
    code = """
import functools, itertools, random
C = itertools.count()
@functools.lru_cache
def square(x):
    return x * x
def t(db, **kw):
    square(3)
    return [next(C), next(C), square.cache_info().hits, random.random()]
"""
    first = []
    for _ in range(2):
        s = ex.session(make_spec(code), seed=4)
        first.append(s.call("t", {}).result)
        s.close()
    assert first[0] == first[1] and first[0][:3] == [0, 1, 0], first


def _texts(value: Any, depth: int = 0) -> list[str]:
    """The text a value holds: itself, its elements, its public string attributes (as spec code reads them)."""
    if isinstance(value, str | bytes):
        return [str(value)]
    if depth > 2:
        return []
    out: list[str] = []
    if isinstance(value, list | tuple | set | frozenset):
        items: Any = value
    elif isinstance(value, dict):
        items = [*value.keys(), *value.values()]
    elif hasattr(value, "__next__"):
        items = list(itertools.islice(value, 3))
    else:
        items = []
        for name in dir(value):
            if not name.startswith("_"):
                try:
                    attr = guarded_getattr(value, name)
                except Exception:
                    continue
                if isinstance(attr, str | bytes):
                    items.append(attr)
    for item in items:
        out += _texts(item, depth + 1)
    return out


def test_no_reachable_callable_hands_back_an_address() -> None:
    """Every callable spec code can reach, called with an identity-hashed object in each usual position: no
    result, element of a result, string attribute of a result or exception text (as spec code reads it) holds
    that object's address (``collections.UserString(obj)`` did, through the process's ``str``)."""
    def probe(*args: Any, **kwargs: Any) -> None:
        return None

    address = f"{id(probe):x}"
    calls = [(probe,), (probe, probe), ("x", probe), (probe, "x"), ("%r", probe), ([probe],), ({"k": probe},)]
    leaks = []
    for path, obj in walk().items():
        if not callable(obj):
            continue
        for args in calls:
            try:
                texts = _texts(obj(*args))
            except SandboxViolation:
                continue
            except Exception as e:  # the text spec code reads: its .args through the guard, str() through its str
                texts = [safe_str(e), *(a for a in guarded_getattr(e, "args") if isinstance(a, str))]
            if any(address in t for t in texts):
                leaks.append(f"{path}{args!r:.60}")
    assert not leaks, leaks

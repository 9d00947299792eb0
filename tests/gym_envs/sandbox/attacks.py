"""Helpers of the sandbox's adversarial tests: the attack spec, host snapshots and containment checks.

Every attack plays through tool code in a spec (or a ``python`` check) and the tests assert two things:
the attack is **contained** with a clear recorded error (a typed ``CallResult.error_type``, a load
failure, or a failed check), and the **host is unharmed** (this process's sentinels are unchanged and a
fresh episode of a benign spec still runs on the same executor). Both executor modes run every attack
that cannot stall or exhaust the host; loops, catastrophic regular expressions and memory bombs that
evade the arithmetic guard run in worker mode only (the in-process mode is for trusted specs).
"""

from __future__ import annotations

import collections.abc
import decimal
import fractions
import hashlib
import json
import math
import os
import random
import sys
from typing import Any

from gym_envs.sandbox import CallResult, Executor, Limits, LoadFailure, SqlLimits
from gym_envs.spec import EnvSpec, parse_spec

HOST_SENTINEL = "untouched"  # a module attribute no episode may change


LIMITS = Limits(call_timeout_s=0.5, cpu_seconds=3, memory_bytes=512 << 20,
                sql=SqlLimits(statement_timeout_s=0.2))


MODES = ("inprocess", "worker")


SCHEMA = """
CREATE TABLE acct (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, balance INTEGER NOT NULL);
CREATE TABLE secret (k TEXT NOT NULL);
"""


SEED = "INSERT INTO acct VALUES (1, 'ann', 100), (2, 'bob', 50); INSERT INTO secret VALUES ('s3cr3t');"


OPEN_SCHEMA = {"type": "object", "properties": {}, "additionalProperties": True}


BENIGN = '''
def balance(db, account_id):
    rows = db.query("SELECT balance FROM acct WHERE id = ?", [account_id])
    if not rows:
        raise ToolError("no such account")
    return rows[0]["balance"]
'''


def make_spec(code: str, *tools: str, checks: list[dict[str, Any]] | None = None) -> EnvSpec:
    """A spec over the ``acct``/``secret`` database whose tools accept any arguments."""
    return parse_spec({
        "id": "adversarial-env",
        "title": "Adversarial",
        "state": {"schema_sql": SCHEMA, "seed_sql": SEED},
        "tools": [{"name": n, "parameters": OPEN_SCHEMA} for n in tools or ("t",)],
        "code": code,
        "tasks": [{"id": "t0", "kind": "execute", "turns": [{
            "instruction": "do it",
            "checks": checks or [{"kind": "sql", "query": "SELECT count(*) FROM acct", "expect": [[2]]}]}]}],
    })


def host_snapshot() -> dict[str, Any]:
    """Everything an escape or a leak between episodes would most likely change in this process."""
    ctx = decimal.getcontext()
    return {
        "sentinel": sys.modules[__name__].HOST_SENTINEL,
        "json.dumps": (json.dumps, json.dumps.__code__, json.dumps.__defaults__, dict(json.dumps.__dict__)),
        "math.sqrt": math.sqrt,
        "random": random.getstate(),
        "decimal": (ctx.prec, ctx.rounding, dict(ctx.traps), dict(ctx.flags), decimal.DefaultContext.prec),
        "abc": (isinstance({}, collections.abc.Sequence), issubclass(dict, collections.UserDict),
                issubclass(int, fractions.Fraction)),
        "hashlib": sorted(hashlib.algorithms_available),
        "cwd": os.getcwd(),
        "pid": os.getpid(),
    }


def assert_next_episode_runs(ex: Executor) -> None:
    s = ex.session(make_spec(BENIGN, "balance"), seed=1)
    r = s.call("balance", {"account_id": 1})
    assert r.ok and r.result == 100, r
    s.close()


def attempt(ex: Executor, code: str, args: dict[str, Any] | None = None, *,
            tools: tuple[str, ...] = ("t",), call: str = "t") -> tuple[str, Any]:
    """Load ``code`` and call one tool: ("load", response) on a load failure, else ("call", CallResult)."""
    try:
        s = ex.session(make_spec(code, *tools))
    except LoadFailure as e:
        return "load", e.response
    try:
        return "call", s.call(call, args or {})
    finally:
        s.close()


def assert_contained(outcome: tuple[str, Any], *, load: set[str] | None = None,
                     call: set[str] | None = None, detail: str | None = None) -> str:
    """The attack failed with one of the expected typed errors; returns the error text."""
    where, value = outcome
    if where == "load":
        assert load is not None, f"unexpected load failure: {value}"
        assert value["error_type"] in load, value
        text = str(value["error"])
    else:
        r: CallResult = value
        assert call is not None, f"the spec loaded and the call returned {r}"
        assert not r.ok, f"the attack succeeded: {r.result!r}"
        assert r.error_type in call, r
        text = str(r.error)
    if detail is not None:
        assert detail in text, text
    return text


COMPILE = {"CompileError"}

"""``envwright bench runtime``: what it costs to run tool code through the executor.

Role: measure, in one run and on one machine, the per-call cost of the
restricted executor against a plain-Python floor, and the cost of a reset.

* **Tools.** A representative write tool, ``transfer`` (read a balance, check
  it, two UPDATEs, one INSERT, return a dict), and a trivial read tool,
  ``get_balance``, over a database of ``rows`` accounts.
* **Modes.** ``floor``: the same tool as a plain Python function on a
  ``sqlite3`` connection (no sandbox, no validation, no savepoint), its calls
  inside one open transaction as an episode's are (the executor never commits:
  a reset rolls back), so both do the same SQLite work; an autocommit floor
  would add a commit per write statement to the floor alone;
  ``inprocess``: :class:`~gym_envs.sandbox.InProcessExecutor`;
  ``worker``: :class:`~gym_envs.sandbox.WorkerExecutor` with one worker
  process, one call per round trip; ``worker-batched``: the same worker, one
  call from each of ``episodes`` episodes per round trip
  (:meth:`~gym_envs.sandbox.WorkerExecutor.call_many`).
* **Breakdown.** ``transfer`` in-process again, one layer at a time: the floor,
  the same source compiled as plain Python on the ``db`` facade, the restricted
  tool called directly, ``Engine.call_plain``, ``Session.call`` (:data:`LAYERS`).
* **Reset.** ``Session.open`` (a fresh episode from the cached image) and
  ``ToolEnv.reset`` in both executor modes, each after a write call so there is
  state to discard (``ToolEnv.reset`` with an ``episode_seed`` option and no ``seed``,
  as the trainer resets: a ``seed`` re-seeds Gymnasium's ``np_random``, about
  40-60 us of numpy per reset); on the worker also ``episodes`` episodes per round trip
  (:meth:`~gym_envs.sandbox.Executor.open_many`, :func:`~gym_envs.env.reset_many`,
  as :func:`training.rollout.rollout` resets its episodes), latency per episode.

* **Progress tracking.** The reference episodes of a shipped example played with
  ``ToolEnv(track_progress=True)`` (every training rollout; the ``progress`` reward
  mode) and without, in both executor modes: median time per turn and the extra
  time per turn, paired by round (``resets // 10`` passes over the example's tasks).

* **Scripted user.** A shipped example's scenario episodes with the scripted user against the same conversation
  with its replies looked up (:mod:`eval.bench.runtime_users`): what the simulator adds to an episode's
  environment time, paired by round, in both executor modes.

* **Vector env.** ``episodes`` sub-envs on the worker stepped together, each step one
  ``transfer`` call per sub-env: Gymnasium's ``SyncVectorEnv`` against
  :class:`~gym_envs.vector.ToolVectorEnv`, median latency per sub-env step.

Contract: :func:`run` returns a JSON-serialisable dict (``tools``, ``reset``, ``vector``,
``inprocess_breakdown``, ``progress``, ``users``, ``targets``, ``config``); every target is reported as measured,
``passed`` true or false, never adjusted. :func:`command` prints the tables (``rich``) and
optionally writes the dict as JSON and a plot (matplotlib, skipped when it is
not installed), both from :mod:`eval.bench.runtime_report`. Latencies are
medians of per-call wall times; steps/s is calls divided by the wall time spent
in that mode. Modes run interleaved, in
``rounds`` alternating chunks, so a change in machine load affects them alike;
the load average before and after is recorded with the results. A mode's
``ratio`` and ``overhead_us`` over the floor are paired by round (the median over
rounds of the ratio and the difference of the two chunks' medians), because the
machine's speed drifts over seconds and only a round's chunks are measured
close together; ``ratio_of_medians`` (the whole run's medians) is kept beside it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from gymnasium.vector import SyncVectorEnv

from eval.bench.runtime_users import bench_users
from gym_envs.env import ToolEnv, reset_many, step_many
from gym_envs.sandbox import CallResult, InProcessExecutor, Limits, Session, ToolError, WorkerExecutor
from gym_envs.spec import EnvSpec, parse_spec
from gym_envs.vector import ToolVectorEnv

__all__ = ["TARGETS", "bench_spec", "command", "run"]

#: (name, description, limit); see :func:`_targets` for how each is measured.
TARGETS = {
    "inprocess_ratio": ("in-process restricted / floor, median per call (transfer, paired by round)", 2.0),
    "worker_overhead_us": ("worker overhead over the floor, median us per call at `episodes` episodes per round "
                           "trip (transfer, paired by round)", 25.0),
    "worker_steps_per_s": ("worker steps/s on one worker (transfer, best of plain and batched)", 20_000.0),
    "reset_inprocess_us": ("Session.open median us, in-process", 50.0),
    "reset_worker_us": ("Session.open median us per episode, worker, `episodes` per round trip "
                        "(Executor.open_many)", 50.0),
    "scripted_user_ratio": ("scripted-user scenario episode / the same conversation with its replies looked up, "
                            "environment time on the worker (paired by round)", 1.10),
}

_SCHEMA = """
CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, balance INTEGER NOT NULL);
CREATE TABLE transfers (id INTEGER PRIMARY KEY, src INTEGER NOT NULL, dst INTEGER NOT NULL,
                        amount INTEGER NOT NULL);
"""

_CODE = '''
def transfer(db, src, dst, amount):
    rows = db.query("SELECT balance FROM accounts WHERE id = ?", [src])
    if not rows:
        raise ToolError("no such account")
    balance = rows[0]["balance"]
    if balance < amount:
        raise ToolError("insufficient funds")
    db.execute("UPDATE accounts SET balance = balance - ? WHERE id = ?", [amount, src])
    db.execute("UPDATE accounts SET balance = balance + ? WHERE id = ?", [amount, dst])
    r = db.execute("INSERT INTO transfers (src, dst, amount) VALUES (?, ?, ?)", [src, dst, amount])
    return {"transfer_id": r["lastrowid"], "src": src, "dst": dst, "amount": amount,
            "balance": balance - amount}


def get_balance(db, account_id):
    rows = db.query("SELECT balance FROM accounts WHERE id = ?", [account_id])
    if not rows:
        raise ToolError("no such account")
    return rows[0]["balance"]
'''

_INT = {"type": "integer"}


def bench_spec(rows: int = 1000) -> EnvSpec:
    """The benchmark environment: ``rows`` accounts with a balance of 1,000,000 each."""
    chunks = []
    for start in range(1, rows + 1, 200):
        values = ",".join(f"({i}, 'owner{i}', 1000000)" for i in range(start, min(rows, start + 199) + 1))
        chunks.append(f"INSERT INTO accounts (id, owner, balance) VALUES {values};")
    return parse_spec({
        "id": "bench-runtime",
        "title": "Bank (runtime benchmark)",
        "description": "Accounts and transfers.",
        "state": {"schema_sql": _SCHEMA, "seed_sql": "\n".join(chunks)},
        "tools": [
            {"name": "transfer", "description": "Move money between two accounts.",
             "parameters": {"type": "object", "properties": {"src": _INT, "dst": _INT, "amount": _INT},
                            "required": ["src", "dst", "amount"]}},
            {"name": "get_balance", "description": "Balance of an account.",
             "parameters": {"type": "object", "properties": {"account_id": _INT},
                            "required": ["account_id"]}},
        ],
        "code": _CODE,
        "tasks": [{"id": "t0", "kind": "execute", "turns": [{
            "instruction": "Move 1 from account 1 to account 2.",
            "checks": [{"kind": "sql", "query": "SELECT count(*) FROM transfers", "expect": [[1]]}],
            "reference": [{"name": "transfer", "arguments": {"src": 1, "dst": 2, "amount": 1}}]}]}],
    })


# -- the floor: the same tools as plain Python on sqlite3 ------------------------------------------

def _floor_transfer(conn: sqlite3.Connection, src: int, dst: int, amount: int) -> dict[str, Any]:
    row = conn.execute("SELECT balance FROM accounts WHERE id = ?", (src,)).fetchone()
    if row is None:
        raise LookupError("no such account")
    balance = row[0]
    if balance < amount:
        raise ValueError("insufficient funds")
    conn.execute("UPDATE accounts SET balance = balance - ? WHERE id = ?", (amount, src))
    conn.execute("UPDATE accounts SET balance = balance + ? WHERE id = ?", (amount, dst))
    cur = conn.execute("INSERT INTO transfers (src, dst, amount) VALUES (?, ?, ?)", (src, dst, amount))
    return {"transfer_id": cur.lastrowid, "src": src, "dst": dst, "amount": amount,
            "balance": balance - amount}


def _floor_get_balance(conn: sqlite3.Connection, account_id: int) -> int:
    row = conn.execute("SELECT balance FROM accounts WHERE id = ?", (account_id,)).fetchone()
    if row is None:
        raise LookupError("no such account")
    return int(row[0])


def _floor_conn(spec: EnvSpec) -> sqlite3.Connection:
    """The floor's database: the spec's content, with a transaction open (as in an episode)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.executescript(spec.state.schema_sql + "\n" + spec.state.seed_sql)
    conn.execute("BEGIN")
    return conn


# -- measurement -----------------------------------------------------------------------------------

def _args(tool: str, i: int, rows: int) -> dict[str, Any]:
    if tool == "transfer":
        return {"src": i % rows + 1, "dst": (i + 1) % rows + 1, "amount": 1}
    return {"account_id": i % rows + 1}


def _interleaved(fns: dict[str, tuple[Callable[[int], Any], int]], calls: int, rounds: int,
                 warmup: int, check: Callable[[Any], None] | None = None) -> dict[str, dict[str, Any]]:
    """Time ``fns`` in alternating chunks, so a change of machine load hits every mode alike.

    ``fns`` maps a mode to ``(fn, calls_per_invocation)``; ``fn(i)`` performs that many calls, and each
    mode makes about ``calls`` calls in all, in ``rounds`` chunks. Latency is per call (an invocation's
    time divided by its calls); steps/s is calls over the time spent in that mode; ``round_medians_us``
    are the median latencies of each round's chunk (for :func:`_paired`). ``check``, if given, sees
    what each invocation returned, outside the timed span.
    """
    clock = time.perf_counter_ns
    for fn, _ in fns.values():
        for i in range(warmup):
            fn(i)
    lat: dict[str, list[float]] = {k: [] for k in fns}
    per_round: dict[str, list[float]] = {k: [] for k in fns}
    spent = dict.fromkeys(fns, 0)
    done = dict.fromkeys(fns, 0)
    for _ in range(rounds):
        for mode, (fn, per) in fns.items():
            chunk = max(1, calls // per // rounds)
            start = clock()
            first = len(lat[mode])
            for _ in range(chunk):
                i = done[mode]
                done[mode] += 1
                t0 = clock()
                r = fn(warmup + i)
                t1 = clock()
                lat[mode].append((t1 - t0) / per)
                if check is not None:
                    check(r)
                    start += clock() - t1  # the check is not part of the mode's time
            spent[mode] += clock() - start
            per_round[mode].append(statistics.median(lat[mode][first:]) / 1e3)
    out = {}
    for mode, (_, per) in fns.items():
        n = done[mode] * per
        seconds = spent[mode] / 1e9
        out[mode] = {"calls": n, "seconds": seconds, "steps_per_s": n / seconds if seconds else 0.0,
                     "median_us": statistics.median(lat[mode]) / 1e3, "p90_us": _quantile(lat[mode], 0.9) / 1e3,
                     "round_medians_us": per_round[mode]}
        if per > 1:
            out[mode]["batch"] = per
    return out


def _paired(mode: dict[str, Any], floor: dict[str, Any]) -> tuple[float, float]:
    """``(ratio, overhead_us)`` of a mode over the floor, compared round by round: the median over
    rounds of the ratio (and the difference) of the two chunks' medians. The machine's speed drifts
    over seconds (here by up to 2x); a round's chunks run within a fraction of a second of each
    other, so each round compares the two at one speed."""
    pairs = list(zip(mode["round_medians_us"], floor["round_medians_us"], strict=True))
    ratio = statistics.median(m / f if f else float("inf") for m, f in pairs)
    return ratio, statistics.median(m - f for m, f in pairs)


def _quantile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return float(s[min(len(s) - 1, int(q * len(s)))])


def _bench_tool(tool: str, spec: EnvSpec, rows: int, calls: int, episodes: int, rounds: int,
                inproc: InProcessExecutor, worker: WorkerExecutor) -> dict[str, Any]:
    errors: list[str] = []

    def check(results: Any) -> None:  # a CallResult, a list of them, or the floor's plain value
        for r in results if isinstance(results, list) else [results]:
            if isinstance(r, CallResult) and not r.ok:
                errors.append(f"{r.error_type}: {r.error}")

    conn = _floor_conn(spec)
    floor_fn = _floor_transfer if tool == "transfer" else _floor_get_balance
    s_in = inproc.session(spec, seed=0)
    s_wk = worker.session(spec, seed=0)
    batch = [worker.session(spec, seed=k + 1) for k in range(episodes)]

    def batched(i: int) -> list[CallResult]:
        return worker.call_many([(s, tool, _args(tool, i * episodes + k, rows)) for k, s in enumerate(batch)])

    fns: dict[str, tuple[Callable[[int], Any], int]] = {
        "floor": (lambda i: floor_fn(conn, **_args(tool, i, rows)), 1),
        "inprocess": (lambda i: s_in.call(tool, _args(tool, i, rows)), 1),
        "worker": (lambda i: s_wk.call(tool, _args(tool, i, rows)), 1),
        "worker-batched": (batched, episodes),
    }
    out: dict[str, Any] = _interleaved(fns, calls, rounds, warmup=min(300, max(20, calls // 10)), check=check)
    conn.close()
    for s in (s_in, s_wk, *batch):
        s.close()
    floor = out["floor"]
    for mode in ("inprocess", "worker", "worker-batched"):
        out[mode]["ratio"], out[mode]["overhead_us"] = _paired(out[mode], floor)
        out[mode]["ratio_of_medians"] = out[mode]["median_us"] / floor["median_us"] if floor["median_us"] else 0.0
    out["errors"] = errors[:5]
    out["n_errors"] = len(errors)
    return out


def _unrestricted_tools() -> dict[str, Callable[..., Any]]:
    """The benchmark's tool code compiled as plain Python (no RestrictedPython): the breakdown's facade
    layer runs the very same source on the ``db`` facade."""
    namespace: dict[str, Any] = {"ToolError": ToolError}
    exec(compile(_CODE, "<bench tools, unrestricted>", "exec"), namespace)  # our own constant source
    return namespace


#: The layers of an in-process call, each including the ones above it: (key, what it adds).
LAYERS = (
    ("floor", "plain Python on sqlite3"),
    ("facade", "the db facade (admitted-statement cache, parameter checks, deadline, authorizer mode, "
               "dict rows)"),
    ("restricted", "the tool's RestrictedPython code (attribute, item and call guards)"),
    ("engine", "Engine.call_plain: argument check and copy, result copy into plain JSON, the replay log"),
    ("session", "Session.call: executor lock, error boundary, CallResult"),
)


def _breakdown(spec: EnvSpec, rows: int, calls: int, rounds: int, inproc: InProcessExecutor) -> dict[str, Any]:
    """Median per-call time of ``transfer`` with each layer of the in-process path added in turn.

    Each layer runs on its own database with the same content (the facade and restricted layers on
    one episode of the engine, driven directly), interleaved as the main table is.
    """
    conn = _floor_conn(spec)
    s_layers = inproc.session(spec, seed=0)
    s_facade = inproc.session(spec, seed=1)
    engine = inproc.engine
    ep_id = s_layers.id
    episode = engine.episodes[ep_id]
    facade_db = engine.episodes[s_facade.id].db
    plain_transfer = _unrestricted_tools()["transfer"]
    tool = episode.tools["transfer"]
    for ep in (episode, engine.episodes[s_facade.id]):  # these layers call the tool without the engine, so they
        ep.state.guard.owner = ep.token  # install the facade's owner token as the engine does around a call

    def args(i: int) -> dict[str, Any]:
        return _args("transfer", i, rows)

    fns: dict[str, tuple[Callable[[int], Any], int]] = {
        "floor": (lambda i: _floor_transfer(conn, **args(i)), 1),
        "facade": (lambda i: plain_transfer(facade_db, **args(i)), 1),
        "restricted": (lambda i: tool(episode.db, **args(i)), 1),
        "engine": (lambda i: engine.call_plain(ep_id, "transfer", args(i)), 1),
        "session": (lambda i: s_layers.call("transfer", args(i)), 1),
    }
    timed = _interleaved(fns, calls, rounds, warmup=min(300, max(20, calls // 10)))
    conn.close()
    s_layers.close()
    s_facade.close()
    out: dict[str, Any] = {}
    previous = 0.0
    for key, what in LAYERS:  # what each layer adds is paired by round too (see _paired)
        ratio, over = _paired(timed[key], timed["floor"])
        out[key] = {"median_us": timed[key]["median_us"], "over_floor_us": over, "adds_us": over - previous,
                    "ratio": ratio, "what": what}
        previous = over
    return out


def _bench_reset(spec: EnvSpec, rows: int, n: int, rounds: int, episodes: int, inproc: InProcessExecutor,
                 worker: WorkerExecutor) -> dict[str, Any]:
    """Median latency of ``Session.open`` and ``ToolEnv.reset``, each right after a write call: in
    process, on the worker one episode per round trip, and on the worker ``episodes`` episodes per
    round trip (:meth:`~gym_envs.sandbox.Executor.open_many`, :func:`~gym_envs.env.reset_many`;
    latency per episode)."""
    sessions = {"inprocess": inproc.session(spec, seed=0), "worker": worker.session(spec, seed=0)}
    envs = {"inprocess": ToolEnv(spec, task="t0", executor=inproc),
            "worker": ToolEnv(spec, task="t0", executor=worker)}
    group = [worker.session(spec, seed=k) for k in range(episodes)]
    env_group = [ToolEnv(spec, task="t0", executor=worker) for _ in range(episodes)]
    for env in [*envs.values(), *env_group]:
        env.reset(seed=0)
    lat: dict[str, list[float]] = {"inprocess": [], "worker": [], "worker-batched": []}
    env_lat: dict[str, list[float]] = {"inprocess": [], "worker": [], "worker-batched": []}

    def opener(s: Session) -> Callable[[int], None]:
        def run(i: int) -> None:
            s.call("transfer", _args("transfer", i, rows))  # state to discard
            t0 = time.perf_counter_ns()
            s.open(i)
            lat[s.executor.mode].append(time.perf_counter_ns() - t0)
        return run

    def group_opener(i: int) -> None:
        worker.call_many([(s, "transfer", _args("transfer", i * episodes + k, rows)) for k, s in enumerate(group)])
        t0 = time.perf_counter_ns()
        failed = worker.open_many([(s, i) for s in group])
        lat["worker-batched"].append((time.perf_counter_ns() - t0) / episodes)
        if any(failed):
            raise RuntimeError(f"open_many failed: {failed}")

    def step_action(i: int) -> dict[str, Any]:
        return {"tool_calls": [{"name": "transfer", "arguments": _args("transfer", i, rows)}]}

    def resetter(env: ToolEnv) -> Callable[[int], None]:
        def run(i: int) -> None:
            if not env.done:
                env.step(step_action(i))
            t0 = time.perf_counter_ns()
            env.reset(options={"episode_seed": i})  # as training.rollout resets (no reseeding of np_random)
            env_lat[env.executor.mode].append(time.perf_counter_ns() - t0)
        return run

    def group_resetter(i: int) -> None:
        live = [e for e in env_group if not e.done]
        step_many(live, [step_action(i * episodes + k) for k in range(len(live))])
        t0 = time.perf_counter_ns()
        reset_many(env_group, options=[{"episode_seed": i}] * episodes)
        env_lat["worker-batched"].append((time.perf_counter_ns() - t0) / episodes)

    fns = {f"open-{m}": (opener(s), 1) for m, s in sessions.items()}
    fns["open-worker-batched"] = (group_opener, 1)
    fns.update({f"reset-{m}": (resetter(e), 1) for m, e in envs.items()})
    fns["reset-worker-batched"] = (group_resetter, 1)
    warmup = 20
    _interleaved(fns, n, rounds, warmup=warmup)
    for s in [*sessions.values(), *group]:
        s.close()
    for env in [*envs.values(), *env_group]:
        env.close()
    out: dict[str, Any] = {"rows": rows, "episodes": episodes}
    for m in ("inprocess", "worker", "worker-batched"):
        key = m.replace("-", "_")
        out[f"session_open_{key}_us"] = statistics.median(lat[m][warmup:]) / 1e3
        out[f"toolenv_reset_{key}_us"] = statistics.median(env_lat[m][warmup:]) / 1e3
    return out


def _bench_vector(spec: EnvSpec, rows: int, steps: int, rounds: int, episodes: int,
                  worker: WorkerExecutor) -> dict[str, Any]:
    """A Gymnasium loop: ``episodes`` sub-envs on the worker, each step one ``transfer`` call per sub-env,
    through Gymnasium's ``SyncVectorEnv`` and through :class:`~gym_envs.vector.ToolVectorEnv` (the
    default of ``gymnasium.make_vec``); median latency per sub-env step."""
    def make() -> ToolEnv:
        return ToolEnv(spec, task="t0", executor=worker, max_steps=10**9)

    vecs = {"SyncVectorEnv": SyncVectorEnv([make] * episodes), "ToolVectorEnv": ToolVectorEnv([make] * episodes)}
    for vec in vecs.values():
        vec.reset(seed=0)

    def stepper(vec: Any) -> Callable[[int], Any]:
        def run(i: int) -> Any:
            return vec.step([{"tool_calls": [{"name": "transfer", "arguments": _args("transfer", i * episodes + k,
                                                                                   rows)}]}
                             for k in range(episodes)])
        return run

    timed = _interleaved({name: (stepper(vec), episodes) for name, vec in vecs.items()}, steps, rounds, warmup=5)
    for vec in vecs.values():
        vec.close()
    out: dict[str, Any] = {"envs": episodes}
    for name, m in timed.items():
        out[name] = {"median_us": m["median_us"], "steps_per_s": m["steps_per_s"]}
    return out


def _bench_progress(n: int, rounds: int, inproc: InProcessExecutor, worker: WorkerExecutor, *,
                    example: str = "library-loans") -> dict[str, Any]:
    """What tracking the progress fraction costs (``ToolEnv(track_progress=True)``, which every training rollout
    does, and the ``progress`` reward mode: each turn's checks judged once more as it begins): the reference
    episodes of a shipped example's tasks played with it on and off, in process and on the worker; median time
    per turn, and the extra time per turn paired by round."""
    from envgen.gate.replies import oracle_reply
    from gym_envs.examples import load_example

    spec = load_example(example)
    tasks = [t for t in spec.tasks if t.turns]
    turns = sum(len(t.turns) for t in tasks)

    def player(env: ToolEnv) -> Callable[[int], None]:
        def run(i: int) -> None:
            for t in tasks:
                env.reset(options={"task": t.id, "episode_seed": i})
                for turn in t.turns:
                    for call in turn.calls():
                        env.step({"content": "", "tool_calls": [{"name": call.name, "arguments": call.arguments}]})
                    env.step({"content": oracle_reply(turn), "tool_calls": []})
        return run

    envs = {f"{mode}{'-progress' if track else ''}": ToolEnv(spec, executor=ex, track_progress=track)
            for mode, ex in (("inprocess", inproc), ("worker", worker)) for track in (False, True)}
    try:
        timed = _interleaved({name: (player(env), turns) for name, env in envs.items()}, max(1, n) * turns,
                             rounds, warmup=3)
    finally:
        for env in envs.values():
            env.close()
    out: dict[str, Any] = {"example": example, "tasks": len(tasks), "turns": turns,
                           "checks_per_turn": sum(len(tn.checks) for t in tasks for tn in t.turns) / turns}
    for mode in ("inprocess", "worker"):
        ratio, extra = _paired(timed[f"{mode}-progress"], timed[mode])
        out[mode] = {"turn_us": timed[mode]["median_us"], "turn_progress_us": timed[f"{mode}-progress"]["median_us"],
                     "extra_us": extra, "ratio": ratio}
    return out


def _targets(tools: dict[str, Any], reset: dict[str, Any], users: dict[str, Any]) -> list[dict[str, Any]]:
    t = tools["transfer"]
    values = {
        "inprocess_ratio": t["inprocess"]["ratio"],
        "worker_overhead_us": t["worker-batched"]["overhead_us"],
        "worker_steps_per_s": max(t["worker"]["steps_per_s"], t["worker-batched"]["steps_per_s"]),
        "reset_inprocess_us": reset["session_open_inprocess_us"],
        "reset_worker_us": reset["session_open_worker_batched_us"],
        "scripted_user_ratio": users["worker"]["ratio"],
    }
    out = []
    for key, (desc, limit) in TARGETS.items():
        v = values[key]
        ok = v >= limit if key == "worker_steps_per_s" else v <= limit
        out.append({"name": key, "description": desc, "value": v, "limit": limit, "passed": bool(ok)})
    return out


def run(rows: int = 1000, calls: int = 5000, *, episodes: int = 8, resets: int = 1000, rounds: int = 25,
        limits: Limits | None = None, cpu: int | None = None) -> dict[str, Any]:
    """Measure every mode for both tools, then resets; returns the results dict (see module doc).

    Args:
        rows: accounts in the database.
        calls: timed calls per tool and mode (after a warm-up).
        episodes: episodes per round trip in the batched worker mode.
        resets: timed resets per mode.
        rounds: modes alternate this many times (so load changes affect all modes alike).
        limits: executor limits (defaults to :class:`~gym_envs.sandbox.Limits`).
        cpu: pin this process and its worker to one CPU (Linux), or ``None`` to leave affinity alone.
    """
    if rows < 2 or calls < 1 or episodes < 1 or resets < 1 or rounds < 1:
        raise ValueError("rows must be >= 2 and calls, episodes, resets, rounds >= 1")
    affinity = os.sched_getaffinity(0) if cpu is not None else None
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})  # the worker, started below, inherits it
    spec = bench_spec(rows)
    inproc = InProcessExecutor(limits)
    worker = WorkerExecutor(1, limits)
    load_before = os.getloadavg()
    try:
        for ex in (inproc, worker):
            load = ex.load(spec)
            if not load.get("ok"):
                raise RuntimeError(f"the benchmark spec did not load: {load}")
        tools = {tool: _bench_tool(tool, spec, rows, calls, episodes, rounds, inproc, worker)
                 for tool in ("transfer", "get_balance")}
        reset = _bench_reset(spec, rows, resets, rounds, episodes, inproc, worker)
        vector = _bench_vector(spec, rows, resets, rounds, episodes, worker)
        breakdown = _breakdown(spec, rows, calls, rounds, inproc)
        progress = _bench_progress(resets // 10, rounds, inproc, worker)
        users = bench_users(resets // 2, rounds, {"inprocess": inproc, "worker": worker}, interleaved=_interleaved,
                            paired=_paired)
    finally:
        worker.close()
        if affinity is not None:
            os.sched_setaffinity(0, affinity)
    return {"config": {"rows": rows, "calls": calls, "episodes": episodes, "resets": resets, "rounds": rounds,
                       "cpu": cpu, "cpus": os.cpu_count(), "load_avg_before": load_before[0],
                       "load_avg_after": os.getloadavg()[0], "python": sys.version.split()[0],
                       "sqlite": sqlite3.sqlite_version},
            "tools": tools, "reset": reset, "vector": vector, "inprocess_breakdown": breakdown, "progress": progress,
            "users": users, "targets": _targets(tools, reset, users)}


@click.command("runtime", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--rows", type=int, default=1000, help="accounts in the database (default 1000)")
@click.option("--calls", type=int, default=5000, help="timed calls per tool and mode (default 5000)")
@click.option("--episodes", type=int, default=8, help="episodes per round trip when batched (default 8)")
@click.option("--resets", type=int, default=1000, help="timed resets per mode (default 1000)")
@click.option("--rounds", type=int, default=25, help="times the modes alternate (default 25)")
@click.option("--cpu", type=int, default=None, help="pin the benchmark and its worker to this CPU")
@click.option("--json", "json_path", default=None, help="also write the results as JSON here")
@click.option("--plot", "plot_path", default=None, help="save a plot here (needs matplotlib)")
def command(rows: int, calls: int, episodes: int, resets: int, rounds: int, cpu: int | None,
            json_path: str | None, plot_path: str | None) -> None:
    """What it costs to run tool code through the executor: per call against a plain-Python floor, and per
    reset. Exits 0 when every target is met, 1 otherwise."""
    from eval.bench.runtime_report import plot, print_report

    result = run(rows, calls, episodes=episodes, resets=resets, rounds=rounds, cpu=cpu)
    print_report(result)
    if json_path:
        Path(json_path).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if plot_path:
        saved = plot(result, plot_path)
        print(f"plot saved to {saved}" if saved else "matplotlib is not installed; no plot written")
    if not all(t["passed"] for t in result["targets"]):
        raise click.exceptions.Exit(1)

"""The gate's driver: :func:`validate_spec` runs the validity rules on one spec (:mod:`envgen.gate` lists them).

Rules 1 and 8 are decided on the spec's text (:mod:`gym_envs.spec`, :mod:`envgen.gate.signature`), rule 2 by
loading it, rules 3 to 7 by playing trajectories on a :class:`~gym_envs.env.ToolEnv`
(:mod:`envgen.gate.adequacy`).
"""

from __future__ import annotations

import ast
import re
import time
from collections.abc import Iterable
from typing import Any

from envgen.gate.adequacy import MutationRun
from envgen.gate.mutants import RefTurn, extra_writes, unused_tool_calls
from envgen.gate.replies import reply_problems
from envgen.gate.signature import signature_problems
from envgen.gate.verdict import Reason, Verdict
from gym_envs.env import ToolEnv
from gym_envs.sandbox import Executor, LoadFailure, default_executor
from gym_envs.spec import EnvSpec, SpecError, Task, as_spec

__all__ = ["uses_episode_random", "validate_many", "validate_spec"]


# -- rules 3-7 ----------------------------------------------------------------------------------------


def _reference_problems(task: Task, refs: list[RefTurn]) -> list[Reason]:
    """Rule 3: the reference's calls run without error and every check passes."""
    where = f"task {task.id!r}"
    out: list[Reason] = []
    for ref in refs:
        for r in ref.results:
            if not r.ok:
                out.append(Reason(3, "reference_error", f"{where} turn {ref.index + 1}: reference call {r.name}"
                                  f"({r.arguments}) failed: {r.error_type}: {r.error}"))
        for c in ref.checks:
            if not c["passed"]:
                check = ref.turn.checks[c["index"]]
                out.append(Reason(3, "reference_check_failed", f"{where} turn {ref.index + 1}: check "
                                  f"{c['index'] + 1} ({check.kind}) fails on the reference trajectory: {c['detail']}"))
    if not out and len(refs) != len(task.turns):
        out.append(Reason(3, "reference_incomplete", f"{where}: the reference trajectory ended after turn "
                          f"{len(refs)} of {len(task.turns)}"))
    return out


def _check_tasks(env: ToolEnv, spec: EnvSpec, seed: int, reasons: list[Reason]) -> MutationRun:
    """Rules 3-7 for every task of ``spec``."""
    run = MutationRun(env, spec, seed)
    refs: dict[str, list[RefTurn]] = {}
    for task in spec.tasks:  # each last turn's own writes aimed elsewhere follow its reference as extra writes
        played = run.reference(task, extras=lambda ref: extra_writes(spec, ref, []))
        problems = _reference_problems(task, played)
        reasons += problems
        if not problems:
            refs[task.id] = played
    # the extra-write mutants of other turns draw from: one call of each tool no reference makes (first), then
    # the writes the references make
    used = {c.name for played in refs.values() for ref in played for c in ref.calls}
    start = next((played[0].start for played in refs.values() if played), None)
    pool = unused_tool_calls(spec, start, used) if start is not None else []
    run.uncap(pool)
    pool += [ref.calls[i] for played in refs.values() for ref in played for i in ref.effectful]
    for task in spec.tasks:
        for ti in range(len(task.turns)):
            reasons += [Reason(7, "reply_not_distinctive", f"task {task.id!r} turn {ti + 1}: {p}")
                        for p in reply_problems(spec, task, ti)]
        if task.id not in refs:
            continue
        deterministic = run.replay(task, refs[task.id], pool)
        run.mutate(task, refs[task.id], pool)
        if not deterministic:
            reasons.append(Reason(6, "nondeterministic", f"task {task.id!r}: the same trajectory from the same "
                                  "seed gave different results or state; avoid time, randomness without the "
                                  "episode seed, and unordered iteration"))
    reasons += [Reason(f.rule, f.code, f.message) for f in run.findings]
    return run


def validate_spec(spec: Any, *, executor: Executor | str = "worker", seed: int = 0,
                  source: str | None = None) -> Verdict:
    """Run the rules on a spec (an ``EnvSpec``, dict, JSON text or path)."""
    t0 = time.perf_counter()
    try:
        parsed = as_spec(spec)
    except SpecError as e:
        reasons = [_parse_reason(r) for r in e.reasons]
        return Verdict(_guess_id(spec), False, reasons, 0, time.perf_counter() - t0, source)
    except (FileNotFoundError, OSError) as e:
        return Verdict(None, False, [Reason(1, "parse", str(e))], 0, time.perf_counter() - t0, source)
    reasons = [Reason(1, "signature", p) for p in signature_problems(parsed)]
    if reasons:
        return Verdict(parsed.id, False, reasons, 0, time.perf_counter() - t0, source)
    ex = default_executor(executor) if isinstance(executor, str) else executor
    loaded = ex.load(parsed)  # compiles the code under the sandbox policy and builds the state
    if not loaded.get("ok"):
        kind = loaded.get("error_type")
        if kind == "CompileError":
            reasons += [Reason(1, "compile", f"code: {e}") for e in loaded.get("reasons") or [loaded.get("error")]]
        else:
            rule = 2 if kind == "SchemaError" else 1
            reasons.append(Reason(rule, "state" if rule == 2 else "load", f"{kind}: {loaded.get('error')}"))
        return Verdict(parsed.id, False, reasons, 0, time.perf_counter() - t0, source)
    env = ToolEnv(parsed, executor=ex, max_steps=10_000)
    run: MutationRun | None = None
    try:
        run = _check_tasks(env, parsed, seed, reasons)
        if not reasons and uses_episode_random(parsed):
            reasons += _second_seed_problems(env, parsed, seed, run)
    except LoadFailure as e:
        reasons.append(Reason(2, "state", str(e)))
    finally:
        env.close()
    verdict = Verdict(parsed.id, not reasons, reasons, 0, time.perf_counter() - t0, source)
    if run is not None:
        verdict.trajectories = run.played
        verdict.mutations = run.tried
        verdict.killed = run.count("killed")
        verdict.mutants = verdict.killed + run.count("survived")
        verdict.mutation_score = run.score
    return verdict


SECOND_SEED = 7919  #: the offset of the second episode seed a spec whose code uses ``random`` is judged under


def uses_episode_random(spec: EnvSpec) -> bool:
    """Whether the spec's code, or a ``python`` check's, imports ``random`` (the episode's own generator, seeded
    by the episode seed: the only way the seed reaches spec code)."""
    sources = [spec.code] + [c.code for task in spec.tasks for turn in task.turns for c in turn.checks
                             if c.kind == "python" and c.code]
    for src in sources:
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "random" for a in node.names):
                return True
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "random":
                return True
    return False


def _second_seed_problems(env: ToolEnv, spec: EnvSpec, seed: int, first: MutationRun) -> list[Reason]:
    """Rule 6 across episode seeds, for code that uses ``random`` (the only way the episode seed reaches it):
    the rules again under a second seed, and every wrong trajectory judged alike under both. Episodes draw
    their seeds, so what the gate judged under its own seed must hold under any: an outside red team's tool
    was honest under the gate's seed only, and under others ignored its argument (every wrong call then left
    the right state)."""
    other_seed = seed + SECOND_SEED
    other: list[Reason] = []
    second = _check_tasks(env, spec, other_seed, other)
    note = (f" (under episode seed {other_seed}: the code draws from random, and its tools or checks behave "
            "differently under another seed)")
    out = [Reason(r.rule, r.code, r.message + note) for r in other]
    before = {(m["task"], m["turn"], m["mutation"]): m["outcome"] for m in first.tried}
    for m in second.tried:
        was = before.get((m["task"], m["turn"], m["mutation"]))
        if was is not None and was != m["outcome"]:
            out.append(Reason(6, "seed_dependent", f"task {m['task']!r} turn {m['turn']}: the wrong trajectory "
                              f"{m['mutation']} was {was} under episode seed {seed} but {m['outcome']} under "
                              f"seed {other_seed}: the tools or checks depend on the episode's random draws; "
                              "use random only for values no check depends on"))
            break
    return out


def _parse_reason(problem: str) -> Reason:
    """A parse problem as a reason: rule 8 for names and parameter schemas (the spec module's rules), else 1."""
    if "not a valid JSON Schema" in problem:
        return Reason(8, "parameter_schema", problem)
    if re.search(r"\b(tool|parameter) name '", problem):
        return Reason(8, "name", problem)
    return Reason(1, "parse", problem)


def _guess_id(spec: Any) -> str | None:
    if isinstance(spec, dict):
        v = spec.get("id")
        return v if isinstance(v, str) else None
    return None


def validate_many(specs: Iterable[Any], *, executor: Executor | str = "worker", seed: int = 0) -> list[Verdict]:
    """Validate several specs in order."""
    out = []
    for s in specs:
        src = str(s) if not isinstance(s, EnvSpec | dict) else None
        out.append(validate_spec(s, executor=executor, seed=seed, source=src))
    return out

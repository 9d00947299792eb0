"""The gate's driver: :func:`validate_spec` runs the validity rules on one spec (:mod:`envgen.gate` lists them).

Rules 1 and 8 are decided on the spec's text (:mod:`gym_envs.spec`, :mod:`envgen.gate.signature`), rule 2 by
loading it, rules 3 to 7 by playing trajectories on a :class:`~envgen.gate.budget.GateEnv`
(:mod:`envgen.gate.adequacy`), and rule 9 by the budget that env charges. Spec code runs on the executor
given (an isolated worker by default), under episode seeds drawn fresh for each run: a spec cannot tell the
gate's episodes from any others by their seed. The verdict records the seeds, so a run can be replayed
exactly (``validate_spec(spec, seed=verdict.seeds[0])``).
"""

from __future__ import annotations

import ast
import contextlib
import gc
import re
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

from envgen.gate.adequacy import MutationRun
from envgen.gate.antecedents import antecedent_problems
from envgen.gate.budget import BudgetExceeded, BudgetMeter, GateBudget, GateEnv
from envgen.gate.mutants import RefTurn, extra_writes, unused_tool_calls
from envgen.gate.replies import reply_problems, tool_texts
from envgen.gate.signature import signature_problems
from envgen.gate.verdict import Reason, Verdict
from gym_envs.sandbox import Executor, LoadFailure, default_executor
from gym_envs.seeding import fresh_seed, stable_seed
from gym_envs.spec import EnvSpec, SpecError, Task, as_spec

__all__ = ["collection_paused", "gate_seeds", "uses_episode_random", "validate_many", "validate_spec"]


def gate_seeds(seed: int | None = None) -> tuple[int, int]:
    """The two episode seeds of a run: ``seed`` (a replay), else one drawn fresh
    (:func:`~gym_envs.seeding.fresh_seed`), and the second seed of rule 6, derived from the first."""
    if seed is None:
        seed = fresh_seed()
    elif isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31:
        raise ValueError(f"seed must be an integer in [0, 2**31) (a gate report's seeds[0]), got {seed!r}")
    return seed, stable_seed(seed, "gate second episode seed")


def _reference_problems(task: Task, refs: list[RefTurn]) -> list[Reason]:
    """Rule 3: the reference's calls run without error and every check passes."""
    where = f"task {task.id!r}"
    out: list[Reason] = []
    for ref in refs:
        if ref.unanswered is not None:
            what = (f"the scripted user does not answer its message {ref.unanswered!r} (ask for a fact of the "
                    "scenario, or to confirm)" if ref.unanswered else
                    f"the scripted user answers the oracle's reply {ref.reply!r}, so it does not end the turn")
            out.append(Reason(3, "reference_unanswered", f"{where} turn {ref.index + 1}: {what}"))
            continue
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


_pauses = [0, False]  #: validations running with collection paused, and whether it was enabled before the first
_pause_lock = threading.Lock()


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """Automatic cyclic garbage collection paused while the block runs (nested and concurrent blocks share one pause),
    then the young objects collected once.

    A run allocates tens of thousands of short-lived containers (call results, turn records, check views), so the
    collector's allocation-count trigger would otherwise run its young generations a few dozen times a spec and
    promote what is alive then (about 10k objects that a run leaves in cycles stay for the one collection at the
    end). Collection is switched back on only when the last block ends and only if it was on when the first
    began."""
    with _pause_lock:
        if _pauses[0] == 0:
            _pauses[1] = gc.isenabled()
            gc.disable()
        _pauses[0] += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses[0] -= 1
            resume = _pauses[0] == 0 and _pauses[1]
            if resume:
                gc.enable()
        if resume:
            gc.collect(0)


def _check_tasks(run: MutationRun, reasons: list[Reason]) -> None:
    """Rules 3-7 for every task of the run's spec (rule 9 raises :class:`BudgetExceeded` out of it)."""
    spec = run.spec
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
    run.inputs_from([c for played in refs.values() for ref in played for c in ref.calls] + pool)
    texts = tool_texts(spec.tools)
    for task in spec.tasks:
        for ti in range(len(task.turns)):
            reasons += [Reason(7, "reply_not_distinctive", f"task {task.id!r} turn {ti + 1}: {p}")
                        for p in reply_problems(spec, task, ti, tools=texts)]
        if task.id not in refs:
            continue
        deterministic = run.replay(task, refs[task.id], pool)
        run.mutate(task, refs[task.id], pool)
        if not deterministic:
            reasons.append(Reason(6, "nondeterministic", f"task {task.id!r}: the same trajectory from the same "
                                  "seed gave different results or state; avoid time, randomness without the "
                                  "episode seed, and unordered iteration"))
    reasons += [Reason(f.rule, f.code, f.message) for f in run.findings]


def validate_spec(spec: Any, *, executor: Executor | str = "worker", seed: int | None = None,
                  budget: GateBudget | None = None, source: str | None = None) -> Verdict:
    """Run the rules on a spec (an ``EnvSpec``, dict, JSON text or path).

    ``executor``: where spec code runs (``worker``: isolated processes, the kind every mode that pays a
    reward runs generated specs on; ``inprocess``: trusted specs only; or an executor to share). ``seed``:
    the run's first episode seed, to replay a run (a gate report's ``seeds[0]``); None draws a fresh one.
    ``budget``: what the run may use (rule 9; default :class:`~envgen.gate.budget.GateBudget`). The run pauses
    automatic garbage collection (:func:`collection_paused`)."""
    t0 = time.perf_counter()
    with collection_paused():
        return _validate(spec, executor, seed, budget, source, t0)


def _validate(spec: Any, executor: Executor | str, seed: int | None, budget: GateBudget | None, source: str | None,
              t0: float) -> Verdict:
    """:func:`validate_spec`'s run, begun at ``t0`` (``time.perf_counter``)."""
    seeds = gate_seeds(seed)
    meter = BudgetMeter(budget or GateBudget(), start=t0)
    try:
        parsed = as_spec(spec)
    except SpecError as e:
        reasons = [_parse_reason(r) for r in e.reasons]
        return Verdict(_guess_id(spec), False, reasons, 0, time.perf_counter() - t0, source, seeds=list(seeds))
    except (FileNotFoundError, OSError) as e:
        return Verdict(None, False, [Reason(1, "parse", str(e))], 0, time.perf_counter() - t0, source,
                       seeds=list(seeds))
    reasons = [Reason(1, "signature", p) for p in signature_problems(parsed)]
    if reasons:
        return Verdict(parsed.id, False, reasons, 0, time.perf_counter() - t0, source, seeds=list(seeds))
    ex = default_executor(executor) if isinstance(executor, str) else executor
    loaded = ex.load(parsed)  # compiles the code under the sandbox policy and builds the state
    if not loaded.get("ok"):
        kind = loaded.get("error_type")
        if kind == "CompileError":
            reasons += [Reason(1, "compile", f"code: {e}") for e in loaded.get("reasons") or [loaded.get("error")]]
        else:
            rule = 2 if kind == "SchemaError" else 1
            reasons.append(Reason(rule, "state" if rule == 2 else "load", f"{kind}: {loaded.get('error')}"))
        return Verdict(parsed.id, False, reasons, 0, time.perf_counter() - t0, source, seeds=list(seeds),
                       executor=ex.mode)
    env = GateEnv(parsed, meter, executor=ex, max_steps=10_000)
    runs = [MutationRun(env, parsed, seeds[0])]
    try:
        _check_tasks(runs[0], reasons)
        if not reasons:
            reasons += [Reason(10, "antecedent", p) for p in antecedent_problems(parsed, ex)]
        if not reasons and uses_episode_random(parsed):
            runs.append(MutationRun(env, parsed, seeds[1]))
            reasons += _second_seed_problems(runs[1], runs[0])
    except LoadFailure as e:
        reasons.append(Reason(2, "state", str(e)))
    except BudgetExceeded as e:
        judged = len({m["task"] for r in runs for m in r.tried})
        reasons.append(Reason(9, f"budget_{'time' if e.which == 'wall_s' else 'calls'}",
                              f"the gate stopped this spec: {e}, with {judged} of {len(parsed.tasks)} tasks "
                              "judged; make its tools and checks cheaper, or the spec smaller (fewer tasks, turns "
                              "and tools)"))
    finally:
        env.close()
    run = runs[0]
    verdict = Verdict(parsed.id, not reasons, reasons, run.played, time.perf_counter() - t0, source,
                      seeds=list(seeds), executor=ex.mode, calls=meter.calls)
    verdict.mutations = run.tried
    verdict.killed = run.count("killed")
    verdict.mutants = verdict.killed + run.count("survived")
    verdict.mutation_score = run.score
    return verdict


def uses_episode_random(spec: EnvSpec) -> bool:
    """Whether the spec's code, or a ``python`` check's, imports ``random`` (the episode's own generator, seeded
    by the episode seed: the only way the seed reaches spec code)."""
    sources = [spec.code] + [code for task in spec.tasks for turn in task.turns for c in turn.checks
                             if (code := c.python_code())]
    for src in sources:
        if "random" not in src:  # no import of it, without parsing
            continue
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


def _second_seed_problems(second: MutationRun, first: MutationRun) -> list[Reason]:
    """Rule 6 across episode seeds, for code that uses ``random`` (the only way the episode seed reaches it):
    the rules again under the run's second seed, and every wrong trajectory judged alike under both. Episodes
    draw their seeds, so what the gate judged under its own seed must hold under any."""
    other: list[Reason] = []
    _check_tasks(second, other)
    note = (f" (under episode seed {second.seed}: the code draws from random, and its tools or checks behave "
            "differently under another seed)")
    out = [Reason(r.rule, r.code, r.message + note) for r in other]
    before = {(m["task"], m["turn"], m["mutation"]): m["outcome"] for m in first.tried}
    for m in second.tried:
        was = before.get((m["task"], m["turn"], m["mutation"]))
        if was is not None and was != m["outcome"]:
            out.append(Reason(6, "seed_dependent", f"task {m['task']!r} turn {m['turn']}: the wrong trajectory "
                              f"{m['mutation']} was {was} under episode seed {first.seed} but {m['outcome']} under "
                              f"seed {second.seed}: the tools or checks depend on the episode's random draws; "
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


def validate_many(specs: Iterable[Any], *, executor: Executor | str = "worker", seed: int | None = None,
                  budget: GateBudget | None = None) -> list[Verdict]:
    """Validate several specs in order (each under fresh seeds unless ``seed`` replays them all)."""
    out = []
    for s in specs:
        src = str(s) if not isinstance(s, EnvSpec | dict) else None
        out.append(validate_spec(s, executor=executor, seed=seed, budget=budget, source=src))
    return out

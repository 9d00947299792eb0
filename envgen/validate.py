"""The validity gate: what makes a generated spec acceptable (gym_envs/ENVSPEC.md, "Validity").

:func:`validate_spec` runs a spec through :mod:`gym_envs` (isolated workers by
default) and returns a :class:`Verdict` whose ``reasons`` record every failed
rule. The rules and how each is decided:

1. **Parse.** The spec parses into ``EnvSpec`` (names unique, references to
   known tools); the code compiles under the sandbox policy; every tool has a
   top-level ``def NAME(db, ...)`` whose parameters are exactly the schema's
   properties, with a default for every optional one.
2. **State.** ``schema_sql`` (tables and indexes only) and ``seed_sql`` build the
   database inside the limits.
3. **Reference.** Replaying each task's reference calls raises no error and
   passes every check. The reference's final message of a turn is the first
   string of each ``reply_contains`` check (the oracle knows the answer), else
   ``"Done."``.
4. **No-op.** Doing nothing in a turn (no calls, an empty reply, after the
   reference's earlier turns) fails a check other than ``calls`` in every turn
   that changes the database or must answer (has ``reply_contains`` checks).
5. **Near-miss.** For every turn that makes calls, read turns included: the
   trajectory with one call dropped, and each trajectory with one argument
   replaced by another valid value taken from the state (another existing id,
   another existing value of the argument's column, a value that does not
   exist), fails a check of that turn, unless it leaves the same state and
   gives the same answer as the reference (then it is no wrong trajectory).
6. **Determinism.** A second run of the reference's calls from the same seed gives
   the same results and the same end state (a check's verdict is a function of the
   state, the reply and the calls, so the reward is the same too).
7. **Check adequacy.** More wrong trajectories fail (mutation testing of the
   checks, :mod:`envgen.gate`): the calls aimed at another entity of the same
   table, an extra state-changing call on another row, a reply that omits an
   answer and one that gives another entity's value. A failing ``calls`` check
   alone never catches a wrong trajectory. ``reply_contains`` strings are
   distinctive (at least 3 characters unless numeric; not in the instruction, a
   tool description or a generic reply). The surviving wrong trajectory is named
   in the reason; :attr:`Verdict.mutation_score` is the share caught.
8. **Names.** Tool and parameter names follow the spec's naming rules and
   parameter schemas are valid JSON Schema (:mod:`gym_envs.spec` refuses them
   at parse time; the gate reports them under this rule).

Rejection reasons carry the rule number, a short code and a message that says
what to fix (turns and checks counted from 1); they are fed back to LLM proposers
verbatim. Every wrong trajectory played for rules 4, 5 and 7 is also recorded, with
what became of it, in :attr:`Verdict.mutations` (the inspector shows them).
"""

from __future__ import annotations

import ast
import re
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from envgen.gate.adequacy import MutationRun, oracle_reply, reply_problems
from envgen.gate.mutants import RefTurn, extra_writes, unused_tool_calls
from gym_envs.env import ToolEnv
from gym_envs.sandbox import Executor, LoadFailure, default_executor
from gym_envs.spec import EnvSpec, SpecError, Task, as_spec

__all__ = ["Reason", "Verdict", "oracle_reply", "signature_problems", "validate_many", "validate_spec"]

RULES = {1: "parse", 2: "state", 3: "reference", 4: "no-op", 5: "near-miss", 6: "determinism", 7: "adequacy",
         8: "names"}


@dataclass
class Reason:
    """One failed rule."""

    rule: int
    code: str
    message: str

    def __str__(self) -> str:
        return f"rule {self.rule} ({RULES[self.rule]}): {self.message}"


@dataclass
class Verdict:
    """The gate's decision on one spec."""

    spec_id: str | None
    accepted: bool
    reasons: list[Reason] = field(default_factory=list)
    trajectories: int = 0
    seconds: float = 0.0
    source: str | None = None
    mutants: int = 0  #: wrong trajectories tried (rules 4, 5, 7): killed + survived
    killed: int = 0  #: of which a check caught
    mutation_score: float | None = None  #: killed / mutants (None: none tried); 1.0 for an accepted spec
    #: every wrong trajectory the gate tried and what became of it: dicts with ``task``, ``turn`` (from 1),
    #: ``rule``, ``mutation`` (what was changed), ``outcome`` (``killed``: a check other than ``calls``
    #: failed; ``tolerated``: same state and answer as the reference; ``survived``: rejected) and ``detail``
    mutations: list[dict[str, Any]] = field(default_factory=list)

    @property
    def codes(self) -> list[str]:
        return sorted({r.code for r in self.reasons})

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["reasons"] = [asdict(r) | {"text": str(r)} for r in self.reasons]
        return d

    def feedback(self) -> str:
        """The reasons as a bullet list (for repair prompts)."""
        return "\n".join(f"- {r}" for r in self.reasons)


# -- rule 1: tool functions match their schemas ---------------------------------------------------


def signature_problems(spec: EnvSpec) -> list[str]:
    """Mismatches between each tool's JSON Schema and its ``def NAME(db, ...)``."""
    try:
        tree = ast.parse(spec.code)
    except SyntaxError as e:
        return [f"code: syntax error at line {e.lineno}: {e.msg}"]
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    problems: list[str] = []
    for tool in spec.tools:
        fn = funcs.get(tool.name)
        if fn is None:
            problems.append(f"tool {tool.name!r}: the code defines no top-level function {tool.name}(db, ...)")
            continue
        a = fn.args
        if a.posonlyargs or a.vararg:
            problems.append(f"tool {tool.name!r}: use plain keyword parameters (no positional-only or *args)")
        params = [x.arg for x in a.args]
        if not params or params[0] != "db":
            problems.append(f"tool {tool.name!r}: the first parameter must be 'db'")
            continue
        names = params[1:] + [x.arg for x in a.kwonlyargs]
        n_defaults = len(a.defaults)
        defaults = set(params[len(params) - n_defaults:] if n_defaults else [])
        defaults |= {x.arg for x, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None}
        props = set(tool.parameters.get("properties", {}))
        required = set(tool.parameters.get("required", []))
        extra = [n for n in names if n not in props]
        if extra and a.kwarg is None:
            problems.append(f"tool {tool.name!r}: parameters {extra} are not in its JSON Schema properties")
        missing = sorted(props - set(names))
        if missing and a.kwarg is None:
            problems.append(f"tool {tool.name!r}: schema properties {missing} have no matching parameter")
        optional_no_default = sorted((set(names) & props) - required - defaults)
        if optional_no_default:
            problems.append(f"tool {tool.name!r}: optional properties {optional_no_default} need a default "
                            f"value in the function (or list them in 'required')")
        if "db" in props:
            problems.append(f"tool {tool.name!r}: 'db' is injected and must not be a schema property")
    return problems


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
    """Validate several specs in order (see :mod:`envgen.parallel` for process-parallel runs)."""
    out = []
    for s in specs:
        src = str(s) if not isinstance(s, EnvSpec | dict) else None
        out.append(validate_spec(s, executor=executor, seed=seed, source=src))
    return out

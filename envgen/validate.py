"""The validity gate: what makes a generated spec acceptable (ENVSPEC.md, "Validity").

:func:`validate_spec` runs a spec through :mod:`gym_envs` (isolated workers by
default) and returns a :class:`Verdict` whose ``reasons`` record every failed
rule. The six rules and how each is decided:

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
4. **No-op.** The empty trajectory (no calls, empty replies) fails at least one
   check of every turn whose reference changes the database.
5. **Near-miss.** For each reference call that changes the database, the
   trajectory with that call dropped, and each trajectory with one of its
   arguments perturbed, fails a check of that turn, unless it leaves the
   database exactly as the reference does (then the turn is provably tolerant
   of it and it is no near-miss).
6. **Determinism.** A second run of the reference from the same seed gives the
   same results, state digests and reward.

Rejection reasons carry the rule number, a short code and a message that says
what to fix; they are fed back to LLM proposers verbatim.
"""

from __future__ import annotations

import ast
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from gym_envs.env import ToolEnv
from gym_envs.sandbox import Executor, LoadFailure, default_executor
from gym_envs.spec import EnvSpec, SpecError, Task, ToolCall, Turn, as_spec

__all__ = ["Reason", "Verdict", "oracle_reply", "signature_problems", "validate_many", "validate_spec"]

RULES = {1: "parse", 2: "state", 3: "reference", 4: "no-op", 5: "near-miss", 6: "determinism"}


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


# -- trajectories ---------------------------------------------------------------------------------


def oracle_reply(turn: Turn) -> str:
    """The reference trajectory's final message for a turn."""
    parts = [c.any_of[0] for c in turn.checks if c.kind == "reply_contains"]
    return " ".join(parts) if parts else "Done."


@dataclass
class _TurnRun:
    calls: list[Any]
    checks: list[Any]
    passed: bool
    digest: str


def _play(env: ToolEnv, task: Task, plan: list[tuple[list[ToolCall], str]], seed: int,
          stop_after: int | None = None) -> list[_TurnRun]:
    """Play ``plan`` (calls and reply per turn); returns each played turn's outcome."""
    env.reset(options={"task": task.id, "episode_seed": seed})
    runs: list[_TurnRun] = []
    for ti, (calls, reply) in enumerate(plan):
        results = []
        for call in calls:
            _, _, _, truncated, info = env.step({"tool_calls": [{"name": call.name, "arguments": call.arguments}]})
            results.extend(info.get("tool_results", []))
            if truncated:
                break
        if env.done:
            runs.append(_TurnRun(results, [], False, env.state_digest()))
            break
        _, _, _, _, info = env.step({"content": reply, "tool_calls": []})
        digest = env.state_digest()
        runs.append(_TurnRun(results, info.get("checks", []), bool(info.get("turn_passed")), digest))
        if stop_after is not None and ti >= stop_after:
            break
    return runs


def _perturb(value: Any, schema: dict[str, Any]) -> Any:
    enum = schema.get("enum")
    if enum:
        others = [e for e in enum if e != value]
        return others[0] if others else _NOPE
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value * 1.5 + 1.0
    if isinstance(value, str):
        return value + "_x" if value else "x"
    if isinstance(value, list):
        return value[:-1] if value else _NOPE
    if isinstance(value, dict):
        return {} if value else _NOPE
    return _NOPE


_NOPE = object()


def _near_misses(spec: EnvSpec, turn: Turn, effectful: list[int]) -> Iterable[tuple[str, list[ToolCall]]]:
    ref = turn.reference
    for ci in effectful:
        call = ref[ci]
        yield f"without call {ci} ({call.name})", ref[:ci] + ref[ci + 1:]
        props = spec.tool(call.name).parameters.get("properties", {})
        for arg, value in call.arguments.items():
            new = _perturb(value, props.get(arg, {}))
            if new is _NOPE:
                continue
            changed = ToolCall(name=call.name, arguments={**call.arguments, arg: new})
            yield f"with {call.name}.{arg}={new!r} instead of {value!r}", [*ref[:ci], changed, *ref[ci + 1:]]


def _check_task(env: ToolEnv, spec: EnvSpec, task: Task, seed: int, reasons: list[Reason]) -> int:
    """Rules 3-6 for one task; returns the number of trajectories played."""
    where = f"task {task.id!r}"
    reference = [(list(t.reference), oracle_reply(t)) for t in task.turns]
    ref_runs = _play(env, task, reference, seed)
    played = 1
    # rule 3
    for ti, run in enumerate(ref_runs):
        for r in run.calls:
            if not r["ok"]:
                reasons.append(Reason(3, "reference_error", f"{where} turn {ti}: reference call {r['name']}"
                                      f"({r['arguments']}) failed: {r['error_type']}: {r['error']}"))
        for c in run.checks:
            if not c["passed"]:
                check = task.turns[ti].checks[c["index"]]
                reasons.append(Reason(3, "reference_check_failed", f"{where} turn {ti}: check {c['index']} "
                                      f"({check.kind}) fails on the reference trajectory: {c['detail']}"))
    if any(r.rule == 3 for r in reasons) or len(ref_runs) != len(task.turns):
        return played
    # which turns change state, which calls are effectful
    effectful = [[i for i, r in enumerate(run.calls) if r.get("changes", 0) > 0] for run in ref_runs]
    state_changing = [bool(e) for e in effectful]
    # rule 4
    empty = [([], "") for _ in task.turns]
    empty_runs = _play(env, task, empty, seed)
    played += 1
    for ti, run in enumerate(empty_runs):
        if state_changing[ti] and run.passed:
            reasons.append(Reason(4, "noop_passes", f"{where} turn {ti}: doing nothing passes every check; "
                                  "add a check on the state this turn must change"))
    # rule 5
    for ti, turn in enumerate(task.turns):
        if not effectful[ti]:
            continue
        for label, calls in _near_misses(spec, turn, effectful[ti]):
            plan = [*reference[:ti], (calls, reference[ti][1])]
            runs = _play(env, task, plan, seed, stop_after=ti)
            played += 1
            last = runs[-1]
            if len(runs) == ti + 1 and last.passed and last.digest != ref_runs[ti].digest:
                reasons.append(Reason(5, "near_miss_passes", f"{where} turn {ti}: the trajectory {label} "
                                      "leaves a different state but passes every check; make the checks "
                                      "pin down the state this turn must produce"))
                break
    # rule 6
    again = _play(env, task, reference, seed)
    played += 1
    same = len(again) == len(ref_runs) and all(
        a.digest == b.digest and a.passed == b.passed
        and [(x["ok"], x["result"]) for x in a.calls] == [(x["ok"], x["result"]) for x in b.calls]
        for a, b in zip(again, ref_runs, strict=True))
    if not same:
        reasons.append(Reason(6, "nondeterministic", f"{where}: the same trajectory from the same seed gave "
                              "different results or state; avoid time, randomness without the episode "
                              "seed, and unordered iteration"))
    return played


def validate_spec(spec: Any, *, executor: Executor | str = "worker", seed: int = 0,
                  source: str | None = None) -> Verdict:
    """Run the six rules on a spec (an ``EnvSpec``, dict, JSON text or path)."""
    t0 = time.perf_counter()
    try:
        parsed = as_spec(spec)
    except SpecError as e:
        reasons = [Reason(1, "parse", r) for r in e.reasons]
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
    played = 0
    try:
        for task in parsed.tasks:
            played += _check_task(env, parsed, task, seed, reasons)
    except LoadFailure as e:
        reasons.append(Reason(2, "state", str(e)))
    finally:
        env.close()
    return Verdict(parsed.id, not reasons, reasons, played, time.perf_counter() - t0, source)


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

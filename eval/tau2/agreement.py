"""Agreement with τ²'s own code: the same trajectory through our spec and through τ²'s environment and evaluator.

Role: the evidence that a converted domain *is* τ²'s domain. For each task, trajectories whose right verdict is
known or interesting (τ²'s gold actions with the reference reply, no call at all, the gold actions with one
dropped, with one argument set to another valid value, with one made to write and then raise in τ²: a
``partial_write``, :mod:`eval.tau2.partial`) are played through our environment (``ToolEnv`` over the converted
spec, the runtime a policy meets) and through τ²'s environment, and three things are compared:

- **state**: τ²'s hash of our final database (read back with the domain's ``from_tables``, hashed by τ²'s
  ``get_dict_hash``) against τ²'s hash of its own environment after the same calls. Hashing both sides with τ²'s
  code on τ²'s representation is the sound direction: it is τ²'s own criterion, it covers everything τ²'s
  database holds (a field our tables dropped would change the read-back, so the hash), and the read-back is
  checked to be lossless on the seed (``from_tables(to_tables(db)) == db``) by the tests;
- **results**: each call's result (the same JSON value, keys in the same order, or the same error text) against
  the content of τ²'s tool message;
- **verdicts**: our episode's pass (every check of the task) against τ²'s reward from its evaluators, combined
  over the task's reward basis (:func:`eval.tau2._backend.reward`). Only evaluable tasks (no judge, no unported
  reward part) have a τ² verdict to compare.

Perturbations are drawn deterministically from ``seed`` (:func:`gym_envs.seeding.stable_seed`); "another valid
value" of an argument is a value the same argument takes in another gold action of the domain.
"""

from __future__ import annotations

import copy
import functools
import json
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from envgen.gate import oracle_reply
from eval.tau2 import _backend
from eval.tau2.convert import Conversion, Tau2Task, converted
from eval.tau2.partial import MAKERS, partial_write_calls
from eval.tau2.telecom import status_text, telecom_status
from gym_envs.env import ToolEnv
from gym_envs.sandbox import Executor, InProcessExecutor
from gym_envs.seeding import stable_seed

__all__ = ["PERTURBED", "AgreementCase", "Trajectory", "agreement_note", "agreement_report", "argument_perturbations",
           "compare", "conversion_summary", "domain_report", "drop_perturbations", "partial_write_perturbations",
           "reference_trajectory", "summarize", "task_cases"]

_DUMP_LIMIT = 10**9  #: rows per table read back from our state (all of them)
#: the kinds of perturbed trajectories (beside ``reference`` and ``empty``)
PERTURBED = ("drop_call", "perturb_argument", "partial_write")


@dataclass(frozen=True)
class Trajectory:
    """Calls (each its own message, as τ²'s orchestrator plays them) and the final reply."""

    kind: str  #: ``reference``, ``empty``, or one of :data:`PERTURBED`
    description: str
    calls: tuple[_backend.Call, ...]
    reply: str


@dataclass
class AgreementCase:
    """One trajectory of one task through both environments."""

    domain: str
    task_id: str
    kind: str
    description: str
    evaluable: bool
    ours_passed: bool
    tau2_passed: bool | None  #: None when the task is not evaluable (a judge or an unported reward part)
    ours_hash: str
    tau2_hash: str
    calls: int
    identical_results: int
    result_differences: list[str] = field(default_factory=list)
    tau2_parts: dict[str, float] = field(default_factory=dict)

    @property
    def verdict_agrees(self) -> bool | None:
        return None if self.tau2_passed is None else self.ours_passed == self.tau2_passed

    @property
    def hash_agrees(self) -> bool:
        return self.ours_hash == self.tau2_hash


def reference_trajectory(conv: Conversion, task: Tau2Task) -> Trajectory:
    """τ²'s gold actions (every requestor) and the reply that states the task's communicated information."""
    calls = tuple(_backend.Call(a["name"], dict(a["arguments"]), a.get("requestor", "assistant"))
                  for a in task.actions)
    return Trajectory("reference", "gold actions", calls, oracle_reply(conv.spec.task(task.id).turns[0]))


def drop_perturbations(ref: Trajectory) -> list[Trajectory]:
    """One trajectory per gold action: that action dropped."""
    return [Trajectory("drop_call", f"drop {c.name} (action {i})", ref.calls[:i] + ref.calls[i + 1:], ref.reply)
            for i, c in enumerate(ref.calls)]


@functools.cache
def _argument_pool(domain: str) -> dict[str, list[Any]]:
    """Argument name -> the distinct values it takes in the domain's gold actions (all its tasks), in a stable
    order."""
    pool: dict[str, list[Any]] = {}
    seen: dict[str, set[str]] = {}
    for t in _backend.tasks(domain):
        for a in (t.evaluation_criteria.actions or []) if t.evaluation_criteria else []:
            for k, v in a.arguments.items():
                key = json.dumps(v, sort_keys=True)
                if key not in seen.setdefault(k, set()):
                    seen[k].add(key)
                    pool.setdefault(k, []).append(v)
    return pool


def argument_perturbations(conv: Conversion, task: Tau2Task, ref: Trajectory, seed: int = 0) -> list[Trajectory]:
    """One trajectory per (gold action, argument) that has another valid value: that argument set to a value it
    takes in another gold action of the domain (drawn with ``seed``)."""
    pool = _argument_pool(conv.domain.name)
    out = []
    for i, c in enumerate(ref.calls):
        for key, value in c.arguments.items():
            others = [v for v in pool.get(key, []) if v != value]
            if not others:
                continue
            changed = random.Random(stable_seed(seed, task.id, i, key)).choice(others)
            calls = list(ref.calls)
            calls[i] = _backend.Call(c.name, {**c.arguments, key: copy.deepcopy(changed)}, c.requestor)
            out.append(Trajectory("perturb_argument", f"{c.name}({key}={value!r} -> {changed!r}) (action {i})",
                                  tuple(calls), ref.reply))
    return out


def partial_write_perturbations(conv: Conversion, task: Tau2Task, ref: Trajectory) -> list[Trajectory]:
    """One trajectory per call that makes a gold action's tool write and then raise in τ² (which keeps the writes,
    as the spec's ``failed_calls: "keep"`` does; :func:`eval.tau2.partial.partial_write_calls`): that action
    replaced by the call, the others as the reference has them."""
    makers = MAKERS.get(conv.domain.name, {})
    if not any(c.name in makers for c in ref.calls):
        return []
    start = _backend.db_dump(_backend.initial_environment(conv.domain.name, _tau2_task(conv, task)))
    out = []
    for i, c in enumerate(ref.calls):
        for description, call in partial_write_calls(conv.domain.name, c, start):
            out.append(Trajectory("partial_write", f"{c.name}: {description} (action {i})",
                                  (*ref.calls[:i], call, *ref.calls[i + 1:]), ref.reply))
    return out


def _ours(conv: Conversion, task: Tau2Task, traj: Trajectory, executor: Executor) -> tuple[bool, str, list[Any]]:
    """Play ``traj`` in our environment: whether the episode passed, τ²'s hash of our final database, and each call's
    result (``("ok", value)`` or ``("error", text)``)."""
    env = ToolEnv(conv.spec, task.id, executor=executor, max_steps=len(traj.calls) + 2)
    try:
        env.reset(options={"task": task.id, "episode_seed": 0})
        results: list[Any] = []
        for c in traj.calls:
            _, _, _, _, info = env.step({"content": "", "tool_calls": [{"name": c.name, "arguments": c.arguments}]})
            r = info["tool_results"][0]
            results.append(("ok", r["result"]) if r["ok"] else ("error", r["error"]))
        assert env.session is not None
        dumped = env.session.dump(limit=_DUMP_LIMIT)
        _, reward, done, _, _ = env.step({"content": traj.reply, "tool_calls": []})
    finally:
        env.close()
    rows = {t: [tuple(r) for r in v["rows"]] for t, v in dumped.items()}
    return bool(done and reward == 1.0), _backend.dict_hash(conv.domain.from_tables(rows)), results


def _same_result(ours: tuple[str, Any], theirs: tuple[str, bool]) -> str | None:
    """Why our call result differs from τ²'s tool message content, or None."""
    content, error = theirs
    status, value = ours
    if error:
        expected = content.removeprefix("Error: ")
        return None if status == "error" and value == expected else f"τ² raised {expected!r}, we gave {ours!r}"
    if status == "error":
        return f"τ² returned {content[:120]!r}, we raised {value!r}"
    try:
        parsed = json.loads(content)
    except json.JSONDecodeError:
        parsed = content
    if isinstance(value, str) and value == content:
        return None
    if value != parsed:
        return f"τ² returned {content[:120]!r}, we returned {json.dumps(value)[:120]!r}"
    if isinstance(value, dict | list) and json.dumps(value) != content:
        return f"same value, other key order: τ² {content[:120]!r}, ours {json.dumps(value)[:120]!r}"
    return None


def compare(conv: Conversion, task: Tau2Task, traj: Trajectory, executor: Executor) -> AgreementCase:
    """Play ``traj`` through both environments and compare states, results and verdicts."""
    tau2_task = _tau2_task(conv, task)
    played = _backend.replay(conv.domain.name, tau2_task, traj.calls, traj.reply)
    passed, our_hash, results = _ours(conv, task, traj, executor)
    diffs = [f"call {i} {c.name}: {d}" for i, (c, ours, theirs) in enumerate(zip(traj.calls, results, played.results,
                                                                                strict=True))
             if (d := _same_result(ours, theirs)) is not None]
    tau2_passed: bool | None = None
    parts: dict[str, float] = {}
    if task.evaluable:
        total, parts = _backend.reward(conv.domain.name, tau2_task, played.messages)
        tau2_passed = total == 1.0
    return AgreementCase(conv.domain.name, task.id, traj.kind, traj.description, task.evaluable, passed, tau2_passed,
                         our_hash, _backend.db_hash(played.env), len(traj.calls), len(traj.calls) - len(diffs),
                         diffs, parts)


def _tau2_task(conv: Conversion, task: Tau2Task) -> Any:
    for t in _backend.tasks(conv.domain.name):
        if str(t.id) == task.tau2_id:
            return t
    raise KeyError(f"τ² {conv.domain.name} has no task {task.tau2_id!r}")


def task_cases(conv: Conversion, task: Tau2Task, executor: Executor, *, seed: int = 0, drops: int | None = 1,
               argument_changes: int | None = 1, partial_writes: int | None = 1) -> list[AgreementCase]:
    """The reference, empty and perturbed cases of one task (``None``: every perturbation of that kind)."""
    ref = reference_trajectory(conv, task)
    trajs = [ref, Trajectory("empty", "no calls", (), ref.reply)]
    rng = random.Random(stable_seed(seed, conv.domain.name, task.id))
    dropped, changed = drop_perturbations(ref), argument_perturbations(conv, task, ref, seed)
    trajs += dropped if drops is None else rng.sample(dropped, min(drops, len(dropped)))
    trajs += changed if argument_changes is None else rng.sample(changed, min(argument_changes, len(changed)))
    if partial_writes != 0:
        partial = partial_write_perturbations(conv, task, ref)
        trajs += partial if partial_writes is None else rng.sample(partial, min(partial_writes, len(partial)))
    return [compare(conv, task, t, executor) for t in trajs]


def _rate(num: int, den: int) -> float | None:
    return num / den if den else None


def summarize(cases: Iterable[AgreementCase]) -> dict[str, Any]:
    """Counts and rates over cases (see :func:`agreement_report`)."""
    cases = list(cases)
    ref = [c for c in cases if c.kind == "reference"]
    pert = [c for c in cases if c.kind in PERTURBED]
    judged = [c for c in cases if c.tau2_passed is not None]
    ref_j = [c for c in ref if c.tau2_passed is not None]
    pert_j = [c for c in pert if c.tau2_passed is not None]
    return {
        "tasks": len({c.task_id for c in cases}),
        "trajectories": len(cases),
        "reference_hash_agreement": _rate(sum(c.hash_agrees for c in ref), len(ref)),
        "perturbed_hash_agreement": _rate(sum(c.hash_agrees for c in pert), len(pert)),
        "hash_agreement_all": _rate(sum(c.hash_agrees for c in cases), len(cases)),
        "calls": sum(c.calls for c in cases),
        "identical_results": sum(c.identical_results for c in cases),
        "evaluable_trajectories": len(judged),
        "reference_pass_rate": _rate(sum(c.ours_passed for c in ref_j), len(ref_j)),
        "reference_tau2_pass_rate": _rate(sum(bool(c.tau2_passed) for c in ref_j), len(ref_j)),
        "perturbed": len(pert_j),
        "partial_writes": sum(c.kind == "partial_write" for c in pert_j),
        "perturbed_fail_rate": _rate(sum(not c.ours_passed for c in pert_j), len(pert_j)),
        "perturbed_tau2_fail_rate": _rate(sum(not c.tau2_passed for c in pert_j), len(pert_j)),
        "verdict_agreement_reference": _rate(sum(bool(c.verdict_agrees) for c in ref_j), len(ref_j)),
        "verdict_agreement_perturbed": _rate(sum(bool(c.verdict_agrees) for c in pert_j), len(pert_j)),
        "verdict_agreement_all": _rate(sum(bool(c.verdict_agrees) for c in judged), len(judged)),
        "disagreements": [asdict(c) for c in cases
                          if c.verdict_agrees is False or not c.hash_agrees or c.result_differences][:20],
    }


def domain_report(conv: Conversion, *, tau2_ids: Sequence[str] | None = None, seed: int = 0,
                  drops: int | None = 1, argument_changes: int | None = 1, partial_writes: int | None = 1,
                  executor: Executor | None = None) -> dict[str, Any]:
    """:func:`summarize` of the cases of ``conv``'s tasks (those with τ² ids ``tau2_ids``, else all), with the
    conversion's figures (``conversion``) and the time taken (``seconds``)."""
    started = time.perf_counter()
    chosen = [conv.tasks[conv.by_tau2_id[str(t)]] for t in tau2_ids] if tau2_ids is not None \
        else list(conv.tasks.values())
    ex = executor or InProcessExecutor()
    try:
        cases = [c for t in chosen for c in task_cases(conv, t, ex, seed=seed, drops=drops,
                                                        argument_changes=argument_changes,
                                                        partial_writes=partial_writes)]
    finally:
        if executor is None:
            ex.close()
    return {**summarize(cases), "conversion": conversion_summary(conv), "seconds": round(time.perf_counter() -
                                                                                          started, 2),
            "cases": cases}


def agreement_report(domains: Sequence[str] = ("retail", "airline"), *, task_ids: dict[str, Sequence[str]] | None
                     = None, limit: int | None = None, seed: int = 0, drops: int | None = 1,
                     argument_changes: int | None = 1, partial_writes: int | None = 1,
                     executor: Executor | None = None) -> dict[str, Any]:
    """Agreement of each converted domain with τ² (see the module docstring).

    Returns ``{"tau2_version", "seed", "domains": {domain: summary}, **overall summary}`` where a domain's summary
    also has ``conversion`` (:func:`conversion_summary`) and ``seconds``. ``task_ids`` picks tasks per domain
    (τ²'s ids), else the first ``limit`` (else all); ``drops``, ``argument_changes`` and ``partial_writes`` are the
    perturbations of each kind sampled per task (None: all of them).
    """
    per: dict[str, Any] = {}
    everything: list[AgreementCase] = []
    for name in domains:
        if name == "telecom":
            per[name] = {"status": status_text(), **telecom_status()}
            continue
        if task_ids and name in task_ids:
            conv = converted(name, tuple(str(t) for t in task_ids[name]))
        elif limit is not None:
            conv = converted(name, tuple(str(t.id) for t in _backend.tasks(name))[:limit])
        else:
            conv = converted(name)
        report = domain_report(conv, seed=seed, drops=drops, argument_changes=argument_changes,
                               partial_writes=partial_writes, executor=executor)
        everything += report.pop("cases")
        per[name] = report
    return {"tau2_version": _backend.version(), "seed": seed, "domains": per, **summarize(everything)}


def conversion_summary(conv: Conversion) -> dict[str, Any]:
    """What a conversion holds: tools, tasks, how many are evaluable without a judge, the judged ones."""
    tasks = list(conv.tasks.values())
    return {"tools": len(conv.spec.tools), "tables": len(conv.domain.tables), "policy_rules": len(conv.spec.policy),
            "tasks": len(tasks), "evaluable": sum(t.evaluable for t in tasks),
            "judged": sum(t.judged for t in tasks),
            "with_nl_assertions": sum(bool(t.nl_assertions) for t in tasks),
            "nl_assertions": sum(len(t.nl_assertions) for t in tasks),
            "unported_basis": sorted({b for t in tasks for b in t.reward_basis} - {"DB", "COMMUNICATE",
                                                                                   "NL_ASSERTION"}),
            "splits": {s: sum(t.split == s for t in tasks) for s in ("train", "test")},
            "seconds": conv.seconds}


def agreement_note(summary: dict[str, Any]) -> str:
    """One line of a :func:`summarize` result, for reports."""
    def pct(key: str) -> str:
        v = summary.get(key)
        return "n/a" if v is None else f"{100 * v:.1f}%"

    return (f"agreement with τ² on {summary['tasks']} tasks, {summary['trajectories']} trajectories: database hash "
            f"equal {pct('reference_hash_agreement')} (reference) / {pct('perturbed_hash_agreement')} (perturbed); "
            f"call results identical {summary['identical_results']}/{summary['calls']}; verdicts agree "
            f"{pct('verdict_agreement_reference')} (reference) / {pct('verdict_agreement_perturbed')} (perturbed, "
            f"{summary['perturbed']} trajectories, {summary.get('partial_writes', 0)} of them writing then raising, "
            f"τ² fails {pct('perturbed_tau2_fail_rate')} of them)")

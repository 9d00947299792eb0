"""``envwright bench validation``: the gate's CPU time per environment, and a record of its verdicts to compare.

The first ``n`` stdlib documents (the selection ``envwright generate --n N`` makes, seed 0) are proposed with a
static proposer (``world`` by default), each right before its spec is validated (as a generation worker does: what
the proposer's own checks of the spec leave in the process is there), on one executor under one fixed gate seed,
``repeats`` times (each pass on a fresh executor, warmed by validating a shipped example before the timing, as
generation's workers are warm). ``--cold`` validates each spec as one the process has never seen (:func:`_cold`).
Measured per environment: the CPU time of the validation (this process's, plus, on the ``worker`` executor, its
worker process's, read from ``/proc/PID/stat`` on Linux, in clock ticks) and the wall time; the figures are their
median and 90th percentile over the environments (each environment's least over the passes). CPU time is the
figure to compare on a shared machine: other processes inflate wall time, not it.

The verdict record (``--verdicts FILE``) holds, for every environment: its id, a hash of the spec without its
code and one of the whole spec (both without the time of its making), acceptance, the rejection reasons, and every
wrong trajectory the gate played with its rule, outcome and detail. ``--compare FILE`` checks this run's record
against an earlier one (for example one made before a change to the gate or the runtime) and reports every
difference: a faster gate must judge alike.
``--profile FILE`` writes a cProfile of the validations (this process only) and prints its top functions.
"""

from __future__ import annotations

import cProfile
import hashlib
import json
import os
import pstats
import statistics
import time
from pathlib import Path
from typing import Any

import click

__all__ = ["compare", "run", "verdict_record"]


def _ticks(pids: list[int]) -> float:
    """CPU seconds (user + system) the processes ``pids`` have used so far (Linux ``/proc``; 0 elsewhere)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat(5))
        except (OSError, ValueError, IndexError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


def _worker_pids(executor: Any) -> list[int]:
    return [w.proc.pid for w in getattr(executor, "workers", []) if w is not None]


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def verdict_record(spec: Any, verdict: Any) -> dict[str, Any]:
    """What a run must reproduce of one validation: the spec's identity, the verdict and every wrong trajectory."""
    data = spec.model_dump(mode="json")
    data["provenance"] = {k: v for k, v in (data.get("provenance") or {}).items() if k != "created_at"}
    return {"id": spec.id, "spec_without_code": _digest({k: v for k, v in data.items() if k != "code"}),
            "spec": _digest(data), "accepted": verdict.accepted, "reasons": [str(r) for r in verdict.reasons],
            "mutants": verdict.mutants, "killed": verdict.killed, "mutation_score": verdict.mutation_score,
            "mutations": [[m["task"], m["turn"], m["rule"], m["mutation"], m["outcome"], m.get("detail", "")]
                          for m in verdict.mutations]}


def compare(before: list[dict[str, Any]], after: list[dict[str, Any]], *, code: bool = False) -> list[str]:
    """The differences between two verdict records (empty: the same ids, verdicts and wrong trajectories).
    ``code``: also the specs' code (off: a change to the code the compiler writes is no difference by itself)."""
    out: list[str] = []
    a, b = {r["id"]: r for r in before}, {r["id"]: r for r in after}
    if list(a) != list(b):
        out.append(f"environments differ: only before {sorted(set(a) - set(b))}, only after {sorted(set(b) - set(a))}")
    for env_id in [i for i in a if i in b]:
        x, y = a[env_id], b[env_id]
        for key in ("spec_without_code", *(("spec",) if code else ()), "accepted", "reasons", "mutants", "killed",
                    "mutation_score"):
            if x[key] != y[key]:
                out.append(f"{env_id}: {key} {x[key]!r} -> {y[key]!r}")
        if x["mutations"] != y["mutations"]:
            pairs = list(zip(x["mutations"], y["mutations"], strict=False))
            first = next((i for i, (m, n) in enumerate(pairs) if m != n), len(pairs))
            out.append(f"{env_id}: wrong trajectories differ from number {first + 1} ({len(x['mutations'])} before, "
                       f"{len(y['mutations'])} after): "
                       f"{x['mutations'][first] if first < len(x['mutations']) else None} -> "
                       f"{y['mutations'][first] if first < len(y['mutations']) else None}")
    return out


def _documents(n: int, proposer: str, seed: int) -> tuple[Any, list[Any]]:
    """The proposer and the first ``n`` stdlib documents generation would attempt."""
    from envgen.generate import GenerateConfig, select_corpus
    from envgen.proposers import make_proposer

    docs = select_corpus(GenerateConfig(corpus="stdlib", proposer=proposer, n=n, seed=seed))[:n]
    return make_proposer(proposer), docs


def _cold(spec: Any) -> Any:
    """``spec`` with a comment line after its code: it behaves the same, but nothing the process keeps of a program
    (its build, the digests of its contents, what the antecedent rule found) is found for it, as for a spec
    validated the first time (one a model wrote)."""
    return spec.model_copy(update={"code": spec.code + "\n# validated cold\n"})


def _q90(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=10)[-1] if len(xs) >= 2 else xs[0]


def run(n: int = 30, executor: str = "inprocess", gate_seed: int = 12345, repeats: int = 1, proposer: str = "world",
        seed: int = 0, profile: str | None = None, cold: bool = False) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Measure; returns the figures (JSON-able) and the verdict record (``cold``: see :func:`_cold`)."""
    from envgen.gate import validate_spec
    from gym_envs.sandbox import make_executor

    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    from gym_envs.examples import load_example

    maker, docs = _documents(n, proposer, seed)
    prof = cProfile.Profile() if profile else None
    cpu: list[float] = []
    wall: list[float] = []
    records: list[dict[str, Any]] = []
    for k in range(repeats):  # each pass on a fresh executor: no program is loaded in it already
        ex = make_executor(executor)
        try:
            # the worker started, its imports and the process's one-time caches made, outside the timing
            validate_spec(load_example("bank-ledger"), executor=ex, seed=gate_seed)
            pids = _worker_pids(ex)
            i = 0
            for doc in docs:  # as generation does: each document proposed, then its spec validated
                spec = maker.propose(doc, seed=seed).spec
                if spec is None:
                    continue
                if cold:
                    spec = _cold(spec)
                c0, w0 = time.process_time(), _ticks(pids)
                if prof is not None:
                    prof.enable()
                v = validate_spec(spec, executor=ex, seed=gate_seed)
                if prof is not None:
                    prof.disable()
                used = 1000 * (time.process_time() - c0 + _ticks(pids) - w0)
                record = verdict_record(spec, v)
                if k == 0:
                    cpu.append(used)
                    wall.append(1000 * v.seconds)
                    records.append(record)
                elif record != records[i]:
                    raise RuntimeError(f"{spec.id}: pass {k + 1} judged otherwise than pass 1 under the same seed")
                else:
                    cpu[i], wall[i] = min(cpu[i], used), min(wall[i], 1000 * v.seconds)
                i += 1
        finally:
            ex.close()
    if prof is not None and profile:
        prof.dump_stats(profile)
    figures = {"envs": len(records), "executor": executor, "repeats": repeats, "gate_seed": gate_seed, "cold": cold,
               "cpu_ms_median": statistics.median(cpu) if cpu else None, "cpu_ms_p90": _q90(cpu) if cpu else None,
               "wall_ms_median": statistics.median(wall) if wall else None,
               "wall_ms_p90": _q90(wall) if wall else None,
               "accepted": sum(r["accepted"] for r in records),
               "mutants_per_env": statistics.mean(r["mutants"] for r in records) if records else None,
               "cpu_ms": [round(x, 1) for x in cpu]}
    return figures, records


@click.command("validation", context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.option("--n", type=int, default=30, help="stdlib documents (the first N of generate's selection)")
@click.option("--executor", type=click.Choice(["inprocess", "worker"]), default="inprocess")
@click.option("--gate-seed", type=int, default=12345, help="the gate's episode seed (the same for every run)")
@click.option("--repeats", type=int, default=1, help="validations per environment (its least CPU time counts)")
@click.option("--proposer", type=click.Choice(["world", "template"]), default="world")
@click.option("--verdicts", default=None, help="write the verdict record (JSON) to this file")
@click.option("--compare", "compare_to", default=None, help="compare the verdict record with this earlier one")
@click.option("--profile", default=None, help="write a cProfile of the validations to this file")
@click.option("--cold", is_flag=True, help="validate each spec as one the process has never seen (nothing the "
              "proposer's own checks left for it is found)")
@click.option("--json", "json_out", default=None, help="also write the figures to this file")
def command(n: int, executor: str, gate_seed: int, repeats: int, proposer: str, verdicts: str | None,
            compare_to: str | None, profile: str | None, cold: bool, json_out: str | None) -> None:
    """CPU time of the gate per environment (median, p90) and its verdicts, to compare before and after a change."""
    figures, records = run(n, executor, gate_seed, repeats, proposer, profile=profile, cold=cold)
    show = {k: round(v, 1) if isinstance(v, float) else v for k, v in figures.items() if k != "cpu_ms"}
    click.echo(json.dumps(show))
    if verdicts:
        Path(verdicts).write_text(json.dumps(records, indent=None))
    if profile:
        st = pstats.Stats(profile)
        st.sort_stats("tottime").print_stats(25)
    if json_out:
        Path(json_out).write_text(json.dumps(figures, indent=1))
    if compare_to:
        diffs = compare(json.loads(Path(compare_to).read_text()), records)
        click.echo(f"verdicts compared with {compare_to}: " + ("the same" if not diffs else f"{len(diffs)} differ"))
        for d in diffs[:40]:
            click.echo(f"  {d}")
        if diffs:
            raise SystemExit(1)

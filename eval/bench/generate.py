"""``envwright bench generate``: yield, diversity, validation latency and worker scaling of generation.

Measured in one run on the built-in stdlib corpus with the template proposer:

1. ``n`` documents (default 200) generated with ``workers`` processes: yield
   (accepted / attempted), distinct tool-signature sets, median validation time
   per environment, the gate's mean mutation score and wrong trajectories tried
   per environment (check adequacy), rejection reasons;
2. the first ``scaling_docs`` documents generated again into fresh libraries
   with 1 and with 2 worker processes, ``repeats`` times each in alternating
   order (1, 2, 2, 1, 1, 2, ...): documents per second and the speed-up ratio.
   The headline ratio compares each configuration's best run (the least
   disturbed by other processes on a shared machine, as ``timeit`` advises);
   the ratio of the median runs and the CPU time other processes used during
   each run (from ``/proc/stat``, Linux) are printed next to it.

Targets printed with PASS/MISS: yield >= 80%, >= 150 distinct signature sets
(for n = 200), validation <= 50 ms median, 2 workers >= 1.7x one worker.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from envgen.generate import GenerateConfig, run_generate, select_corpus
from envgen.library import Library


def _busy_cpu_seconds() -> float | None:
    """CPU time all processes of the machine have used so far (Linux ``/proc/stat``), or None."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, _steal = (fields + [0] * 8)[:8]
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def _own_cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _run(docs: list[Any], out: Path, workers: int, validation: str, seed: int) -> tuple[Any, float, float | None]:
    """One generation run; returns its summary, wall seconds and the CPU seconds other processes used meanwhile.

    Both scaling measurements use a process pool (of 1 or 2 workers), so the ratio compares like with like.
    """
    cfg = GenerateConfig(corpus="stdlib", proposer="template", n=len(docs), out=out, workers=workers, seed=seed,
                         validation=validation, inline_single_worker=False)
    busy0, own0 = _busy_cpu_seconds(), _own_cpu_seconds()
    t0 = time.perf_counter()
    summary = run_generate(cfg, progress=False, docs=docs)
    wall = time.perf_counter() - t0
    busy1, own1 = _busy_cpu_seconds(), _own_cpu_seconds()
    other = None if busy0 is None or busy1 is None else max(0.0, (busy1 - busy0) - (own1 - own0))
    return summary, wall, other


def run(n: int = 200, seed: int = 0, scaling_docs: int = 120, validation: str = "inprocess",
        workdir: str | None = None, repeats: int = 3) -> dict[str, Any]:
    """Measure everything; returns a JSON-able dict."""
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    base = Path(workdir or tempfile.mkdtemp(prefix="envwright-bench-gen-"))
    cfg = GenerateConfig(corpus="stdlib", proposer="template", n=n, seed=seed)
    t0 = time.perf_counter()
    docs = select_corpus(cfg)
    select_s = time.perf_counter() - t0
    summary, wall, _ = _run(docs, base / "main", 2, validation, seed)
    lib = Library(base / "main")
    rows = lib.rows()
    sigs = {r["signature"] for r in rows}
    scored = [r for r in rows if r.get("mutation_score") is not None]
    scale_docs = docs[:scaling_docs]
    runs: dict[int, list[tuple[Any, float, float | None]]] = {1: [], 2: []}
    for k in range(repeats):  # 1, 2, 2, 1, 1, 2, ...: neither configuration always runs first
        for workers in ((1, 2) if k % 2 == 0 else (2, 1)):
            runs[workers].append(_run(scale_docs, base / f"w{workers}-{k}", workers, validation, seed))
    t1 = min(r[1] for r in runs[1])
    t2 = min(r[1] for r in runs[2])
    s1 = min(runs[1], key=lambda r: r[1])[0]
    s2 = min(runs[2], key=lambda r: r[1])[0]
    med1 = statistics.median(r[1] for r in runs[1])
    med2 = statistics.median(r[1] for r in runs[2])
    result = {
        "documents": len(docs), "select_seconds": round(select_s, 2),
        "attempted": summary.attempted, "accepted": summary.accepted,
        "yield": summary.yield_rate, "distinct_signature_sets": len(sigs),
        "median_validation_ms": summary.median_validation_ms,
        "p90_validation_ms": 1000 * statistics.quantiles(summary.validation_seconds, n=10)[-1]
        if len(summary.validation_seconds) >= 10 else None,
        "mean_mutation_score": statistics.mean(r["mutation_score"] for r in scored) if scored else None,
        "mean_mutants_per_env": statistics.mean(r["mutants"] or 0 for r in scored) if scored else None,
        "rejected_by_reason": summary.rejected_by_reason, "wall_seconds_2_workers": round(wall, 2),
        "scaling_docs": len(scale_docs), "docs_per_s_1_worker": len(scale_docs) / t1,
        "docs_per_s_2_workers": len(scale_docs) / t2, "speedup_2_vs_1": t1 / t2,
        "speedup_2_vs_1_median": med1 / med2, "repeats": repeats,
        "wall_seconds_1_worker_runs": [round(r[1], 3) for r in runs[1]],
        "wall_seconds_2_workers_runs": [round(r[1], 3) for r in runs[2]],
        "other_cpu_seconds_1_worker_runs": [None if r[2] is None else round(r[2], 2) for r in runs[1]],
        "other_cpu_seconds_2_workers_runs": [None if r[2] is None else round(r[2], 2) for r in runs[2]],
        "scaling_accepted_1_worker": s1.accepted, "scaling_accepted_2_workers": s2.accepted,
        "validation_executor": validation, "library": str(base / "main"),
    }
    result["targets"] = {
        "yield >= 0.80": result["yield"] >= 0.80,
        "distinct signature sets >= 150 (n=200)": len(sigs) >= 150 * n / 200,
        "median validation <= 50 ms": result["median_validation_ms"] <= 50,
        "2 workers >= 1.7x 1 worker": result["speedup_2_vs_1"] >= 1.7,
    }
    return result


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark from the command line (``envwright bench generate``); returns the exit status."""
    ap = argparse.ArgumentParser(prog="envwright bench generate", description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scaling-docs", type=int, default=120)
    ap.add_argument("--repeats", type=int, default=3, help="scaling runs per configuration (best one counts)")
    ap.add_argument("--validation", default="inprocess", choices=["inprocess", "worker"])
    ap.add_argument("--json", dest="json_out", default=None, help="also write the results to this file")
    args = ap.parse_args(argv)
    res = run(args.n, args.seed, args.scaling_docs, args.validation, repeats=args.repeats)
    from rich.console import Console
    from rich.table import Table

    t = Table("measure", "value", title=f"envwright bench generate (stdlib, template, n={args.n})")
    for k in ("documents", "attempted", "accepted", "yield", "distinct_signature_sets", "median_validation_ms",
              "p90_validation_ms", "mean_mutation_score", "mean_mutants_per_env", "wall_seconds_2_workers",
              "docs_per_s_1_worker", "docs_per_s_2_workers",
              "speedup_2_vs_1", "speedup_2_vs_1_median", "wall_seconds_1_worker_runs", "wall_seconds_2_workers_runs",
              "other_cpu_seconds_1_worker_runs", "other_cpu_seconds_2_workers_runs"):
        v = res[k]
        t.add_row(k, f"{v:.3f}" if isinstance(v, float) else str(v))
    t.add_row("rejected_by_reason", json.dumps(res["rejected_by_reason"]))
    Console().print(t)
    for name, ok in res["targets"].items():
        Console().print(f"{'PASS' if ok else 'MISS'}  {name}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

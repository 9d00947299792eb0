"""``envwright bench generate``: yield, diversity, validation latency and worker scaling of generation.

Measured in one run on the built-in stdlib corpus with the template proposer:

1. ``n`` documents (default 200) generated with ``workers`` processes: yield
   (accepted / attempted), distinct tool-signature sets, median validation time
   per environment, rejection reasons;
2. the same documents generated again into fresh libraries with 1 and with 2
   workers: documents per second and the speed-up ratio.

Targets printed with PASS/MISS: yield >= 80%, >= 150 distinct signature sets
(for n = 200), validation <= 50 ms median, 2 workers >= 1.7x one worker.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from envgen.generate import GenerateConfig, run_generate, select_corpus
from envgen.library import Library


def _run(docs: list[Any], out: Path, workers: int, validation: str, seed: int) -> tuple[Any, float]:
    # both measurements use a process pool (of 1 or 2 workers), so the ratio compares like with like
    cfg = GenerateConfig(corpus="stdlib", proposer="template", n=len(docs), out=out, workers=workers, seed=seed,
                         validation=validation, inline_single_worker=False)
    t0 = time.perf_counter()
    summary = run_generate(cfg, progress=False, docs=docs)
    return summary, time.perf_counter() - t0


def run(n: int = 200, seed: int = 0, scaling_docs: int = 120, validation: str = "inprocess",
        workdir: str | None = None) -> dict[str, Any]:
    """Measure everything; returns a JSON-able dict."""
    base = Path(workdir or tempfile.mkdtemp(prefix="envwright-bench-gen-"))
    cfg = GenerateConfig(corpus="stdlib", proposer="template", n=n, seed=seed)
    t0 = time.perf_counter()
    docs = select_corpus(cfg)
    select_s = time.perf_counter() - t0
    summary, wall = _run(docs, base / "main", 2, validation, seed)
    lib = Library(base / "main")
    sigs = {r["signature"] for r in lib.rows()}
    scale_docs = docs[:scaling_docs]
    s1, t1 = _run(scale_docs, base / "w1", 1, validation, seed)
    s2, t2 = _run(scale_docs, base / "w2", 2, validation, seed)
    result = {
        "documents": len(docs), "select_seconds": round(select_s, 2),
        "attempted": summary.attempted, "accepted": summary.accepted,
        "yield": summary.yield_rate, "distinct_signature_sets": len(sigs),
        "median_validation_ms": summary.median_validation_ms,
        "p90_validation_ms": 1000 * statistics.quantiles(summary.validation_seconds, n=10)[-1]
        if len(summary.validation_seconds) >= 10 else None,
        "rejected_by_reason": summary.rejected_by_reason, "wall_seconds_2_workers": round(wall, 2),
        "scaling_docs": len(scale_docs), "docs_per_s_1_worker": len(scale_docs) / t1,
        "docs_per_s_2_workers": len(scale_docs) / t2, "speedup_2_vs_1": t1 / t2,
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
    ap = argparse.ArgumentParser(prog="envwright bench generate", description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scaling-docs", type=int, default=120)
    ap.add_argument("--validation", default="inprocess", choices=["inprocess", "worker"])
    ap.add_argument("--json", dest="json_out", default=None, help="also write the results to this file")
    args = ap.parse_args(argv)
    res = run(args.n, args.seed, args.scaling_docs, args.validation)
    from rich.console import Console
    from rich.table import Table

    t = Table("measure", "value", title=f"envwright bench generate (stdlib, template, n={args.n})")
    for k in ("documents", "attempted", "accepted", "yield", "distinct_signature_sets", "median_validation_ms",
              "p90_validation_ms", "wall_seconds_2_workers", "docs_per_s_1_worker", "docs_per_s_2_workers",
              "speedup_2_vs_1"):
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

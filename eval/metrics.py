"""Evaluation metrics as small pure functions, and the summary that composes them.

Role: turn episode records (what :mod:`eval.runner` writes to ``results.jsonl``) into numbers.
Nothing here runs an episode, reads a file or draws a plot.

Contract:

- **Per task** (``n`` trials, ``c`` of them passed): :func:`pass_at_k` is the unbiased pass@k
  estimator ``1 - C(n-c, k) / C(n, k)`` (Chen et al., 2021); :func:`pass_hat_k` is tau-bench's
  reliability pass^k, the probability that ``k`` trials drawn without replacement all pass,
  ``C(c, k) / C(n, k)``. Both are ``None`` when ``k > n``. pass@1 = pass^1 = ``c / n``.
- **Over tasks**: every suite-level number is the mean of a per-task value, so one bootstrap
  (:func:`bootstrap_ci`, resampling tasks) gives its confidence interval, and
  :func:`paired_bootstrap_diff` the interval of a difference between two runs on shared tasks.
  ``avg@k`` is the mean episode score over all trials (with the default binary episode score it
  equals pass@1; ``turns@k`` and ``checks@k`` are the partial-credit variants).
- **Action classes** (:func:`classify_turn`), from the turn tags a suite attaches:
  ``ask`` turns (a parameter is missing or a yes is due: ``missing_parameter`` tasks, a turn whose
  ``expects`` is ``ask``, BFCL ``miss_param``) are ``fabricated`` when the agent attempted a write
  tool (or changed state), ``asked`` when it did not and replied, ``silent`` otherwise; ``decline``
  turns (the request cannot or may not be served: ``decline`` tasks, a turn whose ``expects`` is
  ``decline``, BFCL ``miss_func``) are ``declined`` when there is no write and the reply states an
  inability, ``acted`` when it wrote, ``replied`` otherwise. Independently, every call
  to a function listed in the turn's ``withheld`` tag (BFCL ``miss_func``: not yet offered) is a
  *withheld call*.
- **Backend failures** (:func:`eval.errors.is_backend_failure`: the model backend gave no completion)
  are not the model's: they are left out of every number above and counted apart, as
  ``backend_failures`` of each block (``episodes`` counts the scored ones).
- Bootstraps are deterministic given ``seed``.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from eval.errors import is_backend_failure

__all__ = [
    "INABILITY",
    "avg_at_k",
    "bootstrap_ci",
    "classify_turn",
    "diagnostics",
    "group_by_task",
    "is_write_call",
    "mean",
    "paired_bootstrap_diff",
    "pass_at_k",
    "pass_hat_k",
    "summarize",
    "task_values",
]

#: What a reply that declines says (case-insensitive).
INABILITY = re.compile(
    r"\b(?:can ?not|can't|cannot|unable|not able|not possible|impossible|sorry|unfortunately|"
    r"(?:don't|do not|doesn't|does not) (?:have|support|provide|allow)|no (?:tool|function|way)s?|"
    r"not (?:available|supported|permitted|allowed)|unavailable|unsupported|outside (?:my|the) )",
    re.I,
)


# -- per-task estimators ------------------------------------------------------------------------
def pass_at_k(n: int, c: int, k: int) -> float | None:
    """Unbiased pass@k for one task: P(at least one of k trials drawn from n passes)."""
    _check_counts(n, c, k)
    if k > n:
        return None
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """tau-bench pass^k for one task: P(all k trials drawn from n pass) = C(c,k)/C(n,k)."""
    _check_counts(n, c, k)
    if k > n:
        return None
    return math.comb(c, k) / math.comb(n, k)


def _check_counts(n: int, c: int, k: int) -> None:
    if n < 1 or k < 1 or not 0 <= c <= n:
        raise ValueError(f"need n >= 1, k >= 1 and 0 <= c <= n; got n={n}, c={c}, k={k}")


def mean(values: Iterable[float | None]) -> float | None:
    """Mean of the values that are not ``None`` (``None`` if there are none)."""
    vals = [float(v) for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def avg_at_k(scores: Sequence[Sequence[float]]) -> float | None:
    """Mean over tasks of the mean score of each task's trials."""
    return mean(sum(s) / len(s) for s in scores if s)


# -- bootstrap ----------------------------------------------------------------------------------
def bootstrap_ci(values: Sequence[float], *, n_boot: int = 2000, alpha: float = 0.05, seed: int = 0,
                 stat: Callable[[np.ndarray], np.ndarray] | None = None) -> tuple[float, float] | None:
    """Percentile bootstrap interval of ``stat`` (default: the mean) over ``values``.

    ``stat`` maps an ``(n_boot, n)`` array of resamples to ``n_boot`` statistics. ``None`` for no
    values; a single value gives a zero-width interval.
    """
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    if arr.size == 0:
        return None
    if not 0 < alpha < 1 or n_boot < 1:
        raise ValueError(f"need 0 < alpha < 1 and n_boot >= 1, got alpha={alpha}, n_boot={n_boot}")
    rng = np.random.default_rng(seed)
    samples = arr[rng.integers(0, arr.size, size=(n_boot, arr.size))]
    stats = samples.mean(axis=1) if stat is None else stat(samples)
    lo, hi = np.quantile(stats, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def paired_bootstrap_diff(a: Sequence[float], b: Sequence[float], *, n_boot: int = 2000,
                          alpha: float = 0.05, seed: int = 0) -> dict[str, Any]:
    """Mean of ``b - a`` with a bootstrap interval; paired when the lengths match, else unpaired.

    Pass aligned per-task values (same task at the same index) for a paired comparison.
    """
    a_arr, b_arr = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a_arr.size == 0 or b_arr.size == 0:
        return {"diff": None, "ci": None, "paired": False, "n": 0}
    rng = np.random.default_rng(seed)
    if a_arr.size == b_arr.size:
        d = b_arr - a_arr
        idx = rng.integers(0, d.size, size=(n_boot, d.size))
        stats = d[idx].mean(axis=1)
        diff, paired, n = float(d.mean()), True, int(d.size)
    else:
        sa = a_arr[rng.integers(0, a_arr.size, size=(n_boot, a_arr.size))].mean(axis=1)
        sb = b_arr[rng.integers(0, b_arr.size, size=(n_boot, b_arr.size))].mean(axis=1)
        stats = sb - sa
        diff, paired, n = float(b_arr.mean() - a_arr.mean()), False, int(min(a_arr.size, b_arr.size))
    lo, hi = np.quantile(stats, [alpha / 2, 1 - alpha / 2])
    return {"diff": diff, "ci": (float(lo), float(hi)), "paired": paired, "n": n}


# -- action classes -----------------------------------------------------------------------------
def is_write_call(call: Mapping[str, Any], write_tools: Iterable[str]) -> bool:
    """A call that writes: it names a write tool (attempted, even if it failed) or changed rows."""
    return call.get("name") in set(write_tools) or (call.get("changes") or 0) > 0


def classify_turn(turn: Mapping[str, Any]) -> str | None:
    """The action class of a tagged turn (see the module docstring), or ``None`` if untagged."""
    tags = turn.get("tags") or {}
    role = tags.get("role")
    if role not in ("ask", "decline"):
        return None
    write_tools = tags.get("write_tools") or []
    wrote = any(is_write_call(c, write_tools) for c in turn.get("calls") or [])
    reply = (turn.get("reply") or "").strip()
    if role == "ask":
        return "fabricated" if wrote else "asked" if reply else "silent"
    if wrote:
        return "acted"
    return "declined" if INABILITY.search(reply) else "replied"


def _withheld_calls(turn: Mapping[str, Any]) -> int:
    withheld = set((turn.get("tags") or {}).get("withheld") or [])
    return sum(1 for c in turn.get("calls") or [] if c.get("name") in withheld)


def diagnostics(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts and rates of the action classes over every tagged turn of ``records``."""
    counts: dict[str, int] = defaultdict(int)
    withheld_turns = withheld_turns_hit = withheld_calls = 0
    for rec in records:
        for turn in rec.get("turns") or []:
            cls = classify_turn(turn)
            if cls is not None:
                counts[(turn.get("tags") or {})["role"] + "_turns"] += 1
                counts[cls] += 1
            if (turn.get("tags") or {}).get("withheld"):
                withheld_turns += 1
                n = _withheld_calls(turn)
                withheld_calls += n
                withheld_turns_hit += n > 0
    ask, dec = counts["ask_turns"], counts["decline_turns"]
    return {
        "ask_turns": ask,
        "fabricated": counts["fabricated"], "asked": counts["asked"], "silent": counts["silent"],
        "fabricated_rate": counts["fabricated"] / ask if ask else None,
        "asked_rate": counts["asked"] / ask if ask else None,
        "decline_turns": dec,
        "declined": counts["declined"], "acted": counts["acted"], "replied": counts["replied"],
        "declined_rate": counts["declined"] / dec if dec else None,
        "acted_rate": counts["acted"] / dec if dec else None,
        "withheld_turns": withheld_turns,
        "withheld_calls": withheld_calls,
        "withheld_call_rate": withheld_turns_hit / withheld_turns if withheld_turns else None,
    }


# -- aggregation --------------------------------------------------------------------------------
def task_key(rec: Mapping[str, Any]) -> str:
    """The identity of a task across runs: ``suite/env_id/task_id``."""
    return f"{rec['suite']}/{rec['env_id']}/{rec['task_id']}"


def group_by_task(records: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """Records grouped by :func:`task_key`, trials in order."""
    out: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for rec in records:
        out[task_key(rec)].append(rec)
    for trials in out.values():
        trials.sort(key=lambda r: r.get("trial", 0))
    return dict(out)


def task_values(trials: Sequence[Mapping[str, Any]], ks: Sequence[int]) -> dict[str, Any]:
    """Per-task numbers: n, c, pass@1, pass@k / pass^k for each ``k`` in ``ks``, mean scores."""
    n = len(trials)
    c = sum(bool(t.get("passed")) for t in trials)
    scores = [t.get("score") or {} for t in trials]
    return {
        "n": n, "c": c, "pass@1": c / n,
        "pass@k": {k: pass_at_k(n, c, k) for k in ks},
        "pass^k": {k: pass_hat_k(n, c, k) for k in ks},
        "turns": sum(float(s.get("turns", 0.0)) for s in scores) / n,
        "checks": sum(float(s.get("checks", 0.0)) for s in scores) / n,
        "episode": sum(float(s.get("episode", 0.0)) for s in scores) / n,
    }


def _ks(k: int) -> list[int]:
    return sorted({1, k} | ({2} if k >= 2 else set()))


def _block(records: list[Mapping[str, Any]], k: int, *, n_boot: int, seed: int) -> dict[str, Any]:
    ks = _ks(k)
    backend = sum(1 for r in records if is_backend_failure(r))
    records = [r for r in records if not is_backend_failure(r)]  # never reached the model: not scored
    per_task = [task_values(trials, ks) for trials in group_by_task(records).values()]
    p1 = [t["pass@1"] for t in per_task]
    out: dict[str, Any] = {
        "tasks": len(per_task),
        "episodes": len(records),
        "backend_failures": backend,
        "passed": sum(bool(r.get("passed")) for r in records),
        "errors": sum(1 for r in records if r.get("error")),
        "pass@1": mean(p1),
        "pass@1_ci": bootstrap_ci(p1, n_boot=n_boot, seed=seed),
        "avg@k": mean(t["episode"] for t in per_task),
        "turns@k": mean(t["turns"] for t in per_task),
        "checks@k": mean(t["checks"] for t in per_task),
        "pass@k": {},
        "pass^k": {},
    }
    for kk in ks:
        hat = [t["pass^k"][kk] for t in per_task if t["pass^k"][kk] is not None]
        at = [t["pass@k"][kk] for t in per_task if t["pass@k"][kk] is not None]
        out["pass^k"][str(kk)] = {"value": mean(hat), "ci": bootstrap_ci(hat, n_boot=n_boot, seed=seed),
                                  "tasks": len(hat)}
        out["pass@k"][str(kk)] = {"value": mean(at), "ci": bootstrap_ci(at, n_boot=n_boot, seed=seed),
                                  "tasks": len(at)}
    return out


def summarize(records: Iterable[Mapping[str, Any]], k: int, *, n_boot: int = 2000,
              seed: int = 0) -> dict[str, Any]:
    """Suite -> {overall metrics, ``by_kind`` metrics, ``by_split`` metrics (when records carry a split),
    ``diagnostics``} for a run's records."""
    by_suite: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for rec in records:
        by_suite[rec["suite"]].append(rec)
    out: dict[str, Any] = {}
    for suite, recs in by_suite.items():
        block = _block(recs, k, n_boot=n_boot, seed=seed)
        kinds: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        for rec in recs:
            kinds[str(rec.get("kind"))].append(rec)
        block["by_kind"] = {kind: _block(rs, k, n_boot=n_boot, seed=seed)
                            for kind, rs in sorted(kinds.items())}
        splits: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        for rec in recs:
            if rec.get("split"):
                splits[str(rec["split"])].append(rec)
        if splits:  # a suite whose tasks carry a split (a library's, τ²'s train/test)
            block["by_split"] = {name: _block(rs, k, n_boot=n_boot, seed=seed) for name, rs in sorted(splits.items())}
        block["diagnostics"] = diagnostics(r for r in recs if not is_backend_failure(r))
        out[suite] = block
    return out

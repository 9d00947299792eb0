"""Observability: per-round (or per-step) metrics to ``metrics.jsonl``, TensorBoard or W&B, and plots.

Every trainer writes one JSON object per line to ``RUN/metrics.jsonl``
(self-play and distillation: one per round or iteration; the TRL solver: one
per logging step). :class:`MetricsWriter` also forwards numeric values,
flattened to ``a/b`` keys, to the ``run.report_to`` sinks: ``tensorboard``
(``torch.utils.tensorboard``) and ``wandb`` (when installed; a clear error
otherwise). :func:`plot_run` draws the curves of a run folder as PNG files
(``envwright plot RUN_DIR``).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from training.errors import ConfigError

__all__ = ["MetricsWriter", "curves_figure", "drop_rounds_from", "flatten", "histogram_figure", "leaves",
           "metrics_callback", "plot_run", "read_metrics"]


def leaves(d: Mapping[str, Any], sep: str = "/", prefix: str = "") -> dict[str, Any]:
    """Every leaf of nested dicts under its joined key (``a/b/c``, or ``a.b.c`` with ``sep="."``)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{sep}{k}" if prefix else str(k)
        if isinstance(v, Mapping):
            out.update(leaves(v, sep, key))
        else:
            out[key] = v
    return out


def flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """Numeric leaves of nested dicts as ``a/b/c`` keys (bools as 0/1; others dropped)."""
    return {k: float(v) for k, v in leaves(d, "/", prefix).items()
            if isinstance(v, bool) or (isinstance(v, int | float) and math.isfinite(float(v)))}


class MetricsWriter:
    """Appends records to ``metrics.jsonl`` and mirrors them to TensorBoard / W&B."""

    def __init__(self, run_dir: str | Path, report_to: Iterable[str] = (), *, run_name: str | None = None,
                 config: dict[str, Any] | None = None):
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.run_dir / "metrics.jsonl"
        self.tb: Any = None
        self.wandb: Any = None
        report = list(report_to)
        if "tensorboard" in report:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                raise ConfigError("run.report_to has tensorboard but it is not installed: pip install tensorboard, "
                                  "or set --set run.report_to=[]") from None
            self.tb = SummaryWriter(str(self.run_dir / "tensorboard"))
        if "wandb" in report:
            try:
                import wandb
            except ImportError:
                raise ConfigError("run.report_to has wandb but it is not installed: pip install wandb, or set "
                                  "--set run.report_to=[tensorboard]") from None
            self.wandb = wandb.init(project="envwright", name=run_name, dir=str(self.run_dir), config=config)

    def log(self, record: dict[str, Any], step: int) -> None:
        rec = {"step": step, "time": time.time(), **record}
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(rec, default=_jsonable) + "\n")
        flat = flatten(record)
        if self.tb is not None:
            for k, v in flat.items():
                self.tb.add_scalar(k, v, step)
            self.tb.flush()
        if self.wandb is not None:
            self.wandb.log(flat, step=step)

    def close(self) -> None:
        if self.tb is not None:
            self.tb.close()
        if self.wandb is not None:
            self.wandb.finish()


def _jsonable(x: Any) -> Any:
    if isinstance(x, set | tuple):
        return list(x)
    if isinstance(x, Path):
        return str(x)
    return str(x)


def read_metrics(run_dir: str | Path) -> list[dict[str, Any]]:
    """The records of ``RUN/metrics.jsonl`` (a truncated last line is skipped)."""
    path = Path(run_dir) / "metrics.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"no metrics.jsonl in {run_dir}; is it a training run folder?")
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def drop_rounds_from(path: str | Path, first: int, key: str = "round") -> int:
    """Remove the records of round ``first`` and later from a JSON-lines file (atomically); returns how many.

    What a resumed run does with the lines an earlier start wrote after its checkpoint (or a start that never
    reached one), so that every round appears once. Lines that do not parse (a write cut short) go too.
    """
    from gym_envs.spec import atomic_write_text

    path = Path(path)
    if not path.is_file():
        return 0
    kept, dropped = [], 0
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
            r = int(rec.get(key, rec.get("step", 0)))
        except (json.JSONDecodeError, TypeError, ValueError, AttributeError):
            dropped += bool(line.strip())
            continue
        if r >= first:
            dropped += 1
        else:
            kept.append(line)
    if dropped:
        atomic_write_text(path, "".join(f"{line}\n" for line in kept))
    return dropped


def metrics_callback(path: str | Path) -> Any:
    """A ``transformers.TrainerCallback`` that appends every ``on_log`` record to ``path`` (metrics.jsonl)."""
    from transformers import TrainerCallback

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)

    class MetricsCallback(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
                   **kwargs: Any) -> None:
            if not logs or not getattr(state, "is_world_process_zero", True):
                return
            rec = {"step": state.global_step, "time": time.time(), **flatten(logs)}
            with target.open("a", encoding="utf-8") as f:
                f.write(json.dumps(rec) + "\n")

    return MetricsCallback()


#: Curves drawn by :func:`plot_run` when present: (file stem, title, [keys]).
PLOTS: list[tuple[str, str, list[str]]] = [
    ("rewards", "Rewards", ["solver/reward", "proposer/reward", "reward", "rewards/env_reward/mean"]),
    ("solve_rate", "Solve rate / pass rate", ["solver/pass_rate", "env/episode_passed", "student/pass_rate",
                                              "solve_rate/mean"]),
    ("validity", "Proposer acceptance, frontier share, grounding", ["proposer/validity", "proposer/frontier",
                                                                     "proposer/grounding"]),
    ("heldout", "Held-out pass rate", ["eval/pass_rate"]),
    ("samples", "Samples with a learning signal in the update", ["update/proposer/samples", "update/solver/samples"]),
    ("skills", "Skills added, pruned, refined", ["skills/added_count", "skills/pruned_count", "skills/refined_count"]),
    ("throughput", "Generated tokens per second", ["throughput/tokens_per_second"]),
    ("time", "Seconds per round", ["time/generation", "time/environment", "time/validation", "time/update",
                                   "time/weight_sync"]),
    ("sampler_gap", "Sampler-trainer log-probability gap (nats)",
     ["generation/logprob_gap/mean", "generation/logprob_gap/max", "sampling/sampling_logp_difference/mean",
      "sampling/sampling_logp_difference/max"]),
    ("environment_share", "Environment's share of wall time", ["time/environment_share"]),
    ("loss", "Loss", ["update/loss", "loss"]),
    ("recovery", "Distillation samples", ["distill/recovery_samples", "distill/divergences"]),
]


def _legend_outside(ax: Any) -> None:
    """The legend to the right of the axes, where it cannot cover a curve or a bar."""
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


def curves_figure(title: str, series: Mapping[str, list[tuple[float, float]]]) -> Any:
    """One line per key over rounds/steps (whole-number ticks), the legend outside the axes."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(7, 3.5))
    ax = fig.add_subplot(1, 1, 1)
    for k, pts in series.items():
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, label=k)
    ax.set_title(title)
    ax.set_xlabel("round / step")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # rounds and steps are whole numbers
    ax.grid(alpha=0.3)
    _legend_outside(ax)
    return fig


def histogram_figure(hist: list[tuple[Any, dict[str, Any]]]) -> Any:
    """The solve-rate histogram of the last (up to) four rounds as grouped bars, one group per bin."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(7, 3.5))
    ax = fig.add_subplot(1, 1, 1)
    shown = hist[-4:]
    width = 0.8 / len(shown)
    for j, (s, h) in enumerate(shown):
        xs = [i - 0.4 + width * (j + 0.5) for i in range(len(h["counts"]))]
        ax.bar(xs, h["counts"], width, label=f"round {s}")
    h = shown[-1][1]
    ax.set_xticks(range(len(h["counts"])))
    ax.set_xticklabels([f"{a:.1f}-{b:.1f}" for a, b in zip(h["edges"][:-1], h["edges"][1:], strict=True)],
                       fontsize=7)
    top = max((c for _, hh in shown for c in hh["counts"]), default=0)
    ax.set_ylim(0, max(1, top) * 1.1)  # counts: from 0, whole numbers, never a degenerate axis
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if top == 0:
        ax.text(0.5, 0.5, "no valid proposal was evaluated yet", transform=ax.transAxes, ha="center",
                color="0.4")
    ax.set_xlabel("solve rate")
    ax.set_ylabel("environments")
    ax.set_title("Solve-rate histogram of valid proposals")
    _legend_outside(ax)
    return fig


def plot_run(run_dir: str | Path, out_dir: str | Path | None = None) -> list[Path]:
    """PNG curves of a run's metrics (one file per group of :data:`PLOTS` that has data)."""
    records = read_metrics(run_dir)
    out = Path(out_dir) if out_dir else Path(run_dir) / "plots"
    out.mkdir(parents=True, exist_ok=True)
    flat = [(r.get("step", i), flatten(r)) for i, r in enumerate(records)]
    written = []
    for stem, title, keys in PLOTS:
        series = {k: [(s, f[k]) for s, f in flat if k in f] for k in keys}
        series = {k: v for k, v in series.items() if v}
        if not series:
            continue
        path = out / f"{stem}.png"
        curves_figure(title, series).savefig(path, dpi=100, bbox_inches="tight")
        written.append(path)
    hist = [(s, r["solver"]["solve_rate_histogram"]) for s, r in ((r.get("step", i), r) for i, r in enumerate(records))
            if isinstance(r.get("solver"), dict) and r["solver"].get("solve_rate_histogram")]
    if hist:
        path = out / "solve_rate_histogram.png"
        histogram_figure(hist).savefig(path, dpi=100, bbox_inches="tight")
        written.append(path)
    if not written:
        raise ValueError(f"{run_dir}/metrics.jsonl has no known curves (keys: "
                         f"{sorted({k for _, f in flat for k in f})[:20]})")
    return written

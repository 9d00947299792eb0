"""The self-play benchmark's report, rendered: ``selfplay.md`` (the tables and the sentences) and ``selfplay.png``.

Role: :func:`markdown` and :func:`plot` write what :func:`training.bench.selfplay_report.report` computed (its
result dict, ``selfplay.json``): a per-round table per seed, the final held-out comparison (pass rate, check
fraction, progress fraction where the runs scored it, paired differences, by source), the warm-start gap,
the probe's acceptance without the grammar and why its proposals failed, the format-recovery counts, the seeds
left out, and the targets; the plot draws the same per round, with the panels the runs recorded.

Contract: both are pure functions of the result dict (``plot`` writes one PNG); a figure the runs did not
record is left out (``-`` in a table cell, no sentence, no panel).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["COLUMNS", "markdown", "plot", "source_name"]

COLUMNS = [("round", "round"), ("acceptance", "acceptance"), ("acceptance_explore", "free stream"),
           ("probe_acceptance", "acceptance, no grammar"),
           ("frontier", "frontier share"),
           ("grounding", "grounding"), ("distinct_tool_sets", "tool sets"), ("skills_added", "skills +"),
           ("skills_pruned", "pruned"), ("skills_refined", "refined"), ("heldout_pass_rate", "held-out pass"),
           ("baseline_heldout_pass_rate", "baseline held-out"), ("heldout_reward", "held-out checks"),
           ("baseline_heldout_reward", "baseline checks"), ("env_share", "env share")]


def source_name(src: str) -> str:
    """How a held-out source is labelled: its folder's name (``.../heldout/model`` -> ``model``)."""
    return Path(src).name or src


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.3f}" if abs(x) < 10 else f"{x:.0f}"
    return str(x)


def markdown(res: dict[str, Any]) -> str:
    """``selfplay.md``: the report of a result dict (see the module docstring)."""
    seeds = res["seeds"]
    lines = [f"Self-play on {res['model']} ({len(seeds)} seed(s); per-round figures of each seed; "
             "held-out pass: the policy that played the round, round 0 = warm start)"]
    for seed in seeds:
        lines += ["", f"Seed {seed}:", ""] if len(seeds) > 1 else [""]
        lines.append("| " + " | ".join(h for _, h in COLUMNS) + " |")
        lines.append("|" + "---|" * len(COLUMNS))
        base = {b["round"]: b for b in res["baseline"].get(f"s{seed}", {}).get("rounds", [])}
        for row in res["selfplay"].get(f"s{seed}", {}).get("rounds", []):
            b = base.get(row["round"], {})
            row = {**row, "baseline_heldout_pass_rate": b.get("heldout_pass_rate"),
                   "baseline_heldout_reward": b.get("heldout_reward")}
            lines.append("| " + " | ".join(_fmt(row.get(k)) for k, _ in COLUMNS) + " |")
    c = res["comparison"]
    lines += ["", "| held-out after the last round | mean | min | max | seeds |", "|---|---|---|---|---|"]
    parts = [("pass rate", c), ("check fraction", c["check_fraction"])]
    if c.get("progress_fraction"):
        parts.append(("progress fraction", c["progress_fraction"]))
    for what, part in parts:
        for name in ("selfplay", "baseline"):
            s = part[name]
            lines.append(f"| {name}, {what} | {_fmt(s['mean'])} | {_fmt(s['min'])} | {_fmt(s['max'])} | {s['n']} |")
    paired = (c.get("paired") or {}).get("all") or {}
    if paired.get("episodes"):
        lines += ["", f"Paired on the same held-out tasks and episode seeds (the final policies, {paired['episodes']} "
                  f"episodes over seeds): self-play minus baseline check fraction {_paired_words(paired)}."]
    pp = (c.get("progress_fraction") or {}).get("paired") or {}
    if pp.get("episodes"):
        lines += ["", "The same, in progress fraction (a turn's guards credited only beside a check doing nothing "
                  f"fails): {_paired_words(pp)}."]
    by = c.get("by_source") or {}
    if by:
        lines += ["", "| held-out after the last round, by source (mean over seeds) | episodes | pass: self-play / "
                  "baseline | checks: self-play / baseline |", "|---|---|---|---|"]
        for name, parts in sorted(by.items()):
            sp, b = parts.get("selfplay", {}), parts.get("baseline", {})
            cells = [f"{_fmt((sp.get(k) or {}).get('mean'))} / {_fmt((b.get(k) or {}).get('mean'))}"
                     for k in ("pass_rate", "reward")]
            lines.append(f"| {name} | {sp.get('episodes') or b.get('episodes') or '-'} | {cells[0]} | {cells[1]} |")
    gap = res["warm_start_gap"]
    if gap["pass_rate"] is not None:
        lines += ["", "Round 0's held-out figures of self-play and baseline score the same warm-start policy on the "
                  f"same tasks with other samples: their gap (pass rate {_fmt(gap['pass_rate'])}, check fraction "
                  f"{_fmt(gap['reward'])}, largest over seeds) is the noise of one measurement."]
    probes = [(seed, run["rounds"][0].get("probe_acceptance"), run.get("probe_final"))
              for seed, run in res["selfplay"].items() if run["rounds"]]
    probes = [(seed, a, b) for seed, a, b in probes if a is not None and b is not None]
    if probes:
        k = max((run["rounds"][0].get("probe_samples") or 1) for run in res["selfplay"].values() if run["rounds"])
        lines += ["", "Acceptance without the grammar (the probe" + (f", {k} proposals a document" if k > 1 else "")
                  + "), warm start -> final policy: "
                  + ", ".join(f"seed {seed[1:]} {_fmt(a)} -> {_fmt(b)}{_pairs_words(res['selfplay'][seed])}"
                              for seed, a, b in probes) + "."]
        why = [f"seed {seed[1:]} {when}: {_failures(f)}" for seed, run in res["selfplay"].items() if run["rounds"]
               for when, f in (("warm start", run["rounds"][0].get("probe_failures")),
                               ("final", run.get("probe_final_failures"))) if f]
        if why:
            lines.append("Why the probe's unparsed proposals failed: " + "; ".join(why) + ".")
    lines += _recovery_lines(res)
    left = [f"seed {', '.join(map(str, m['unfinished_seeds']))} of {m['folder']}"
            for m in res.get("merged_from") or [] if m.get("unfinished_seeds")]
    if left:
        lines += ["", f"Left out, unfinished (self-play or baseline stopped before its last round): {'; '.join(left)}."]
    t = res["targets"]
    probe = t.get("probe_acceptance_rise_points")
    without = (f"; acceptance without the grammar {_points(probe)} points (>= 15: {t['probe_acceptance_met']})"
               if probe is not None else "")
    rise = t["acceptance_rise_points"]
    free = t.get("explore_acceptance_rise_points")
    free = f" (free stream {_points(free)})" if free is not None and free != rise else ""
    lines += ["", f"Targets: acceptance {_points(rise)} points{free} (>= 15: {t['acceptance_met']})"
              f"{without}; "
              f"self-play >= baseline: pass rate {t['heldout_met']}, check fraction {t['heldout_checks_met']}; "
              f"environment share max {_fmt(t['env_share_max'])} (< 0.02: {t['env_share_met']})."]
    return "\n".join(lines) + "\n"


def _recovery_lines(res: dict[str, Any]) -> list[str]:
    """The report's format-recovery line (``selfplay.recovery``): what the step had to learn from, round by
    round and seed by seed; none for runs without the step."""
    recovery = [(seed, run["rounds"]) for seed, run in res["selfplay"].items()
                if any(r.get("format_recovered") is not None for r in run["rounds"])]
    if not recovery:
        return []
    per_seed = "; ".join(f"seed {seed[1:]} " + ", ".join(_recovered_words(r) for r in rows)
                         for seed, rows in recovery)
    if any(r.get("format_documents") for _, rows in recovery for r in rows):
        what = ("proposals recovered under the grammar and learnt / proposals that did not parse, the free "
                "stream's and the extra documents'; +N, M parsed: N more documents written only for this "
                "step, M of whose proposals parsed")
    else:
        what = "free proposals recovered under the grammar and learnt / free proposals that did not parse"
    return ["", f"Format recovery, round by round ({what}): {per_seed}."]


def _recovered_words(row: dict[str, Any]) -> str:
    """``3/4`` (recovered / unparsed) for a round's format recovery, ``3/4 (+8, 5 parsed)`` with 8 extra documents
    of which 5 parsed, ``-`` where the round had none."""
    if row.get("format_recovered") is None:
        return "-"
    extra = ""
    if row.get("format_documents"):
        parsed = row.get("format_documents_parsed")
        extra = f" (+{row['format_documents']}" + (f", {parsed} parsed)" if parsed is not None else ")")
    return f"{row['format_recovered']}/{row['format_unparsed']}{extra}"


def _pairs_words(run: dict[str, Any]) -> str:
    """`` (on the same N documents: G gained, L lost; sign test p P)`` where the run kept its probes' proposals."""
    pp = run.get("probe_pairs")
    if not pp:
        return ""
    return (f" (on the same {pp['documents']} documents: {pp['gained']} gained, {pp['lost']} lost; sign test "
            f"p {pp['p_value']:.2f})")


def _paired_words(p: dict[str, Any]) -> str:
    """A paired difference (:func:`_paired`) in words: its mean, standard error and the episodes either way."""
    se = f" ± {_fmt(p['stderr'])} (standard error)" if p.get("stderr") is not None else ""
    return (f"{p['mean']:+.3f}{se}; self-play better on {p['better']}, worse on {p['worse']}, equal on "
            f"{p['equal']}")


def _failures(f: dict[str, Any]) -> str:
    """A failure count (``training.selfplay_metrics.failures``) in words: ``blueprint_schema 3, json_syntax 2 (1 cut
    off by the token budget); first schema problem: operations: too_long 2, title: string_pattern_mismatch 1``."""
    codes = ", ".join(f"{code} {n}" for code, n in f.get("codes", {}).items()) or "none"
    schema = ("; first schema problem: " + ", ".join(f"{kind} {n}" for kind, n in f["schema"].items())
              if f.get("schema") else "")
    return codes + (f" ({f['truncated']} cut off by the token budget)" if f.get("truncated") else "") + schema


def _points(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1f}"


def plot(res: dict[str, Any], path: Path) -> None:
    """``selfplay.png``: the per-round panels of a result dict, and those its runs recorded (:func:`_extra_panels`)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    panels = [("acceptance", "proposer acceptance"), ("frontier", "accepted at the frontier"),
              ("grounding", "grounding"), ("distinct_tool_sets", "distinct tool sets"),
              ("skills", "skills added / pruned / refined"), ("heldout_pass_rate", "held-out pass rate"),
              ("heldout_reward", "held-out check fraction"), ("env_share", "environment share of wall time"),
              ("samples", "samples in the update")]
    extra = _extra_panels(res)
    rows_of_panels = 4 if extra else 3
    fig = Figure(figsize=(12, 10 * rows_of_panels / 3))
    for j, draw in enumerate(extra):
        draw(fig.add_subplot(rows_of_panels, 3, len(panels) + 1 + j), res)
    for i, (key, title) in enumerate(panels):
        ax = fig.add_subplot(rows_of_panels, 3, i + 1)
        for seed, run in res["selfplay"].items():
            rows = run["rounds"]
            xs = [r["round"] for r in rows]
            if key in ("skills", "samples"):
                keys = (("skills_added", "o"), ("skills_pruned", "x"), ("skills_refined", "s")) if key == "skills" \
                    else (("proposer_samples", "o"), ("solver_samples", "s"))
                for k, m in keys:
                    ax.plot(xs, [r[k] for r in rows], marker=m, label=f"{k.split('_')[0 if key == 'samples' else 1]} "
                                                                     f"{seed}")
                continue
            ys = [r.get(key) if r.get(key) is not None else float("nan") for r in rows]
            final = run.get("eval_final" if key == "heldout_pass_rate" else "eval_final_reward")
            if key in ("heldout_pass_rate", "heldout_reward") and final is not None:
                xs, ys = [*xs, len(rows)], [*ys, final]
            ax.plot(xs, ys, marker="o", label=f"self-play {seed}")
            if key == "acceptance" and any((r.get("acceptance_explore") or 1.0) < 1.0 for r in rows):
                ax.plot(xs, [r["acceptance_explore"] if r.get("acceptance_explore") is not None else float("nan")
                             for r in rows], marker="v", linestyle="--", label=f"free stream {seed}")
            if key == "acceptance" and any(r.get("probe_acceptance") is not None for r in rows):
                px = [r["round"] for r in rows if r.get("probe_acceptance") is not None]
                py = [r["probe_acceptance"] for r in rows if r.get("probe_acceptance") is not None]
                if run.get("probe_final") is not None:
                    px, py = [*px, len(rows)], [*py, run["probe_final"]]
                ax.plot(px, py, marker="^", linestyle=":", label=f"no grammar {seed}")
            if key in ("heldout_pass_rate", "heldout_reward", "env_share"):
                b = res["baseline"].get(seed, {})
                bx = [r["round"] for r in b.get("rounds", [])]
                by = [r.get(key) if r.get(key) is not None else float("nan") for r in b.get("rounds", [])]
                b_final = b.get("eval_final" if key == "heldout_pass_rate" else "eval_final_reward")
                if key != "env_share" and b_final is not None:
                    bx, by = [*bx, len(bx)], [*by, b_final]
                ax.plot(bx, by, marker="s", linestyle="--", label=f"baseline {seed}")
        if key in ("acceptance", "frontier", "grounding", "heldout_pass_rate", "heldout_reward"):
            ax.set_ylim(-0.05, 1.05)
        elif key in ("distinct_tool_sets", "skills", "samples"):
            ax.set_ylim(bottom=0, top=max(1.0, ax.get_ylim()[1]))
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        if key == "env_share":
            ax.axhline(0.02, color="0.5", linestyle=":", linewidth=1, label="2% target")
            ax.set_ylim(0, max(0.025, ax.get_ylim()[1]))
        _round_axis(ax, title)
    fig.suptitle(f"envwright self-play vs fixed-environment baseline ({res['model']})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _round_axis(ax: Any, title: str, *, grid: str = "both") -> None:
    """A panel's title, its x axis of whole rounds, its grid and its legend (every panel of :func:`_plot`)."""
    from matplotlib.ticker import MaxNLocator

    ax.set_title(title, fontsize=9)
    ax.set_xlabel("round", fontsize=8)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3, axis=grid)
    ax.legend(fontsize=6)


def _extra_panels(res: dict[str, Any]) -> list[Any]:
    """The plot's last row, the panels whose figures the runs recorded: the held-out check fraction by source,
    the free format on the format-recovery documents, and a round's seconds."""
    rows = [r for part in ("selfplay", "baseline") for run in res[part].values() for r in run["rounds"]]
    sp_rows = [r for run in res["selfplay"].values() for r in run["rounds"]]
    return [draw for draw, on in ((_plot_by_source, any(r.get("heldout_by_source") for r in rows)),
                                  (_plot_recovery, any(r.get("format_documents") for r in sp_rows)),
                                  (_plot_round_time, any(r.get("seconds_generation") is not None for r in sp_rows)))
            if on]


def _plot_by_source(ax: Any, res: dict[str, Any]) -> None:
    """Held-out check fraction per source and round (the final policy's after the last round): self-play solid,
    the baseline dashed, one colour per source."""
    sources = sorted({src for part in ("selfplay", "baseline") for run in res[part].values() for r in run["rounds"]
                      for src in r.get("heldout_by_source") or {}})
    for c, src in enumerate(sources):
        for part, style, marker in (("selfplay", "-", "o"), ("baseline", "--", "s")):
            for seed, run in res[part].items():
                pts = [(r["round"], r["heldout_by_source"][src]) for r in run["rounds"]
                       if src in (r.get("heldout_by_source") or {})]
                final = (run.get("eval_final_by_source") or {})
                end = next((fig["reward"] for k, fig in final.items() if source_name(k) == src), None)
                if end is not None:
                    pts.append((len(run["rounds"]), end))
                if pts:
                    ax.plot(*zip(*pts, strict=True), linestyle=style, marker=marker, color=f"C{c}",
                            label=f"{part} {src} {seed}")
    ax.set_ylim(-0.05, 1.05)
    _round_axis(ax, "held-out check fraction by source")


def _plot_recovery(ax: Any, res: dict[str, Any]) -> None:
    """``selfplay.recovery.documents``: the share of the extra documents, new each round and never trained
    on before, whose proposal written without the grammar parsed (the free format on unseen documents)."""
    for seed, run in res["selfplay"].items():
        pts = [(r["round"], r["format_documents_parsed"] / r["format_documents"]) for r in run["rounds"]
               if r.get("format_documents") and r.get("format_documents_parsed") is not None]
        if pts:
            ax.plot(*zip(*pts, strict=True), marker="o", label=f"parsed, extra documents {seed}")
    ax.set_ylim(-0.05, 1.05)
    _round_axis(ax, "free format on new documents (format recovery)")


def _plot_round_time(ax: Any, res: dict[str, Any]) -> None:
    """Where a self-play round's wall time goes (the first seed), stacked: generation (split into the proposer's
    batches and the episodes' where the run recorded it), the update, the weight sync of an engine with its own
    weights (vLLM) where the run recorded it, and the rest (validation, the format-recovery and distillation
    steps, the environment)."""
    seed, run = next(iter(res["selfplay"].items()))
    rows = [r for r in run["rounds"] if r.get("seconds_generation") is not None]
    xs = [r["round"] for r in rows]
    split = all(r.get("seconds_generation_proposals") is not None for r in rows)
    parts = ([("generation: proposals", [r["seconds_generation_proposals"] for r in rows]),
              ("generation: episodes", [r["seconds_generation"] - r["seconds_generation_proposals"] for r in rows])]
             if split else [("generation", [r["seconds_generation"] for r in rows])])
    parts.append(("update", [r.get("seconds_update") or 0.0 for r in rows]))
    if any(r.get("seconds_weight_sync") for r in rows):
        parts.append(("weight sync", [r.get("seconds_weight_sync") or 0.0 for r in rows]))
    parts.append(("the rest", [max(0.0, r["seconds"] - sum(p[i] for _, p in parts)) for i, r in enumerate(rows)]))
    bottom = [0.0] * len(rows)
    for label, ys in parts:
        ax.bar(xs, ys, bottom=bottom, label=label)
        bottom = [b + y for b, y in zip(bottom, ys, strict=True)]
    _round_axis(ax, f"a self-play round's seconds ({seed})", grid="y")

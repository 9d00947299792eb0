"""The self-play benchmark's results: ``selfplay.json``, ``selfplay.md`` (README table), ``selfplay.png``.

From the runs under ``OUT/work`` (:mod:`training.bench.selfplay`), per seed and round:

* self-play: proposer acceptance (overall and of the free exploration stream, which
  ``selfplay.proposer.explore_constrained: false`` decodes without the grammar; with
  ``selfplay.acceptance_probe``, acceptance without the grammar on fixed documents), the share of
  accepted environments at the frontier (solve rate in ``[frontier_low, frontier_high]``), mean
  grounding, distinct tool sets, skills added / pruned / refined (and active), proposer and solver samples in the
  update, solver episodes, the held-out pass rate **of the policy that played the
  round** (round 0: the warm start), and the environment's share of the round's wall time;
* baseline: solver episodes, held-out pass rate, environment share;
* final: the held-out pass rate and check fraction (the share of checks passed, dense where a
  small solver passes few tasks whole) after the last round of each, mean and spread (min, max)
  over seeds, overall and per held-out source (template environments, model-written ones);
* the warm-start gap: round 0's held-out figures of self-play and of the baseline score the same
  policy (the warm start) on the same tasks with other samples, so their difference is the noise
  of one measurement, to read the comparison against.

Targets checked (``targets``): acceptance rises by at least 15 points from round 0 (the warm
start's proposals) to the last round, and so does the acceptance without the grammar where the
run has ``selfplay.acceptance_probe`` (constrained acceptance starts near 1; from round 0's probe to
the final policy's, after the last round; where the run kept the probe's proposals, the first and the last
probe are paired on their fixed documents: gained, lost and the sign test's p); the final held-out
pass rate of self-play is at least the baseline's (means over seeds); the environment's share of
wall time stays below 2% in every round of every run.
"""

from __future__ import annotations

import json
import math
import shutil
import statistics
from pathlib import Path
from typing import Any

__all__ = ["MEASUREMENT_ONLY", "merge", "report", "rounds_of"]

#: overrides that change what a run measures or where its files are, not how it trains: runs whose overrides
#: differ only in these can be merged into one report (:func:`merge`)
MEASUREMENT_ONLY = ("model.name_or_path", "selfplay.acceptance_probe", "selfplay.acceptance_probe_every",
                    "selfplay.acceptance_probe_max_tokens", "selfplay.acceptance_probe_samples",
                    "selfplay.eval_attempts")

COLUMNS = [("round", "round"), ("acceptance", "acceptance"), ("acceptance_explore", "free stream"),
           ("probe_acceptance", "acceptance, no grammar"),
           ("frontier", "frontier share"),
           ("grounding", "grounding"), ("distinct_tool_sets", "tool sets"), ("skills_added", "skills +"),
           ("skills_pruned", "pruned"), ("skills_refined", "refined"), ("heldout_pass_rate", "held-out pass"),
           ("baseline_heldout_pass_rate", "baseline held-out"), ("heldout_reward", "held-out checks"),
           ("baseline_heldout_reward", "baseline checks"), ("env_share", "env share")]


def _last_per_round(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per round (a resumed run may have logged a round twice: the later one counts)."""
    by: dict[int, dict[str, Any]] = {}
    for r in records:
        by[int(r.get("round", r.get("step", 0)))] = r
    return [by[k] for k in sorted(by)]


def rounds_of(run: Path) -> list[dict[str, Any]]:
    """The records of a run folder's ``metrics.jsonl``, one per round (empty when it has none)."""
    from training.metrics import read_metrics

    return _last_per_round(read_metrics(run)) if (run / "metrics.jsonl").is_file() else []


def _source_name(src: str) -> str:
    """How a held-out source is labelled: its folder's name (``.../heldout/model`` -> ``model``)."""
    return Path(src).name or src


def _checks_by_source(r: dict[str, Any]) -> dict[str, float]:
    """A round's held-out check fraction per source (the source folder's name); empty when not reported."""
    by = (r.get("eval") or {}).get("by_source") or {}
    return {_source_name(src): fig["reward"] for src, fig in by.items()}


def _selfplay_row(r: dict[str, Any]) -> dict[str, Any]:
    p, sk, up = r["proposer"], r["skills"], r["update"]
    return {"round": r["round"], "acceptance": p["acceptance"],
            "acceptance_explore": (p.get("validity_by_stream") or {}).get("explore"), "frontier": p["frontier"],
            "grounding": p["grounding"], "distinct_tool_sets": p["distinct_tool_sets"],
            "skills_added": sk["added_count"], "skills_pruned": sk["pruned_count"],
            "skills_refined": sk["refined_count"], "skills_active": sk["active"],
            "proposer_samples": up["proposer"]["samples"], "solver_samples": up["solver"]["samples"],
            "solver_episodes": r["solver"]["episodes"], "solver_pass_rate": r["solver"]["pass_rate"],
            "heldout_pass_rate": (r.get("eval") or {}).get("pass_rate"),
            "heldout_reward": (r.get("eval") or {}).get("reward"),
            "heldout_progress": (r.get("eval") or {}).get("progress"), "env_share": r["time"]["environment_share"],
            "probe_acceptance": (r.get("probe") or {}).get("acceptance"),
            "probe_failures": (r.get("probe") or {}).get("failures"), "proposer_failures": p.get("failures"),
            "probe_samples": (r.get("probe") or {}).get("samples"),
            "format_recovered": (r.get("format_recovery") or {}).get("recovered"),
            "format_unparsed": (r.get("format_recovery") or {}).get("unparsed"),
            "format_documents": (r.get("format_recovery") or {}).get("documents"),
            "format_documents_parsed": (r.get("format_recovery") or {}).get("documents_parsed"),
            "seconds": r["time"]["round"], "seconds_generation": r["time"].get("generation"),
            "seconds_update": r["time"].get("update"),
            "seconds_generation_proposals": r["time"].get("generation_proposals"),
            "heldout_by_source": _checks_by_source(r)}


def _baseline_row(r: dict[str, Any]) -> dict[str, Any]:
    return {"round": r["round"], "solver_episodes": r["solver"]["episodes"],
            "solver_pass_rate": r["solver"]["pass_rate"], "solver_samples": r["update"]["solver"]["samples"],
            "heldout_pass_rate": (r.get("eval") or {}).get("pass_rate"),
            "heldout_reward": (r.get("eval") or {}).get("reward"), "env_share": r["time"]["environment_share"],
            "seconds": r["time"]["round"], "heldout_by_source": _checks_by_source(r)}


def _final(run: Path, key: str = "pass_rate", part: str = "eval_final") -> float | None:
    """``summary.json``'s ``part`` (``eval_final``: the held-out score, ``probe_final``: the acceptance probe
    of the final policy) at ``key``; None when the run has no summary or no such figure."""
    p = run / "summary.json"
    if not p.is_file():
        return None
    final = json.loads(p.read_text()).get(part) or {}
    return final.get(key)


def _rises(res: dict[str, Any], key: str, final: str | None = None) -> list[float]:
    """Per seed, the last figure of ``key`` minus round 0's, in points (seeds without both left out). The last
    figure is the run's ``final`` entry (the final policy's, after the last round) when it has one, else the
    last round's that has it (a probe every few rounds leaves the rounds between without one)."""
    out = []
    for run in res["selfplay"].values():
        rows = run["rounds"]
        seen = [r[key] for r in rows if r.get(key) is not None]
        last = run.get(final) if final and run.get(final) is not None else (seen[-1] if len(seen) > 1 else None)
        if rows and rows[0].get(key) is not None and last is not None:
            out.append((last - rows[0][key]) * 100)
    return out


def _warm_start_gap(res: dict[str, Any], key: str) -> float | None:
    """The largest |self-play - baseline| of round 0's held-out ``key`` over seeds (both score the warm start)."""
    gaps = []
    for seed, run in res["selfplay"].items():
        b = res["baseline"].get(seed, {}).get("rounds", [])
        if run["rounds"] and b and run["rounds"][0]["round"] == b[0]["round"] == 0:
            x, y = run["rounds"][0][f"heldout_{key}"], b[0][f"heldout_{key}"]
            if x is not None and y is not None:
                gaps.append(abs(x - y))
    return max(gaps) if gaps else None


def _by_source(res: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The final held-out pass rate and check fraction per source (``selfplay.eval_envs``: held-out template
    environments, model-written ones), per run, with their spread over seeds; empty for runs that did not
    report sources."""
    out: dict[str, dict[str, Any]] = {}
    for part in ("selfplay", "baseline"):
        for run in res[part].values():
            for src, fig in (run.get("eval_final_by_source") or {}).items():
                name = _source_name(src)
                cell = out.setdefault(name, {}).setdefault(part, {"pass_rate": [], "reward": [], "episodes": 0})
                cell["pass_rate"].append(fig["pass_rate"])
                cell["reward"].append(fig["reward"])
                cell["episodes"] = fig["episodes"]
    return {name: {part: {"pass_rate": _spread(c["pass_rate"]), "reward": _spread(c["reward"]),
                          "episodes": c["episodes"]} for part, c in parts.items()} for name, parts in out.items()}


def _final_lines(run: Path) -> list[str]:
    """The final policy's held-out episode lines of a run (``final: true`` in ``episodes.jsonl``)."""
    path = run / "episodes.jsonl"
    out = []
    for line in path.read_text(encoding="utf-8").splitlines() if path.is_file() else []:
        try:
            if json.loads(line).get("final"):
                out.append(line)
        except (json.JSONDecodeError, AttributeError):
            continue
    return out


def _probe_lines(run: Path) -> list[str]:
    """The acceptance probe's proposals of a run, round by round (``RUN/probes/round-R.jsonl``; a merge's
    ``selfplay-sS-probes.jsonl``, laid out as ``probes.jsonl``)."""
    files = sorted((run / "probes").glob("round-*.jsonl"), key=lambda f: int(f.stem.split("-")[1])) \
        if (run / "probes").is_dir() else [run / "probes.jsonl"] if (run / "probes.jsonl").is_file() else []
    return [line for f in files for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]


def _probe_pairs(lines: list[str]) -> dict[str, Any] | None:
    """The first and the last probe of a run (:func:`_probe_lines`) on the same documents: how many documents the
    last accepted more often than the first (``gained``; with one sample a document, accepted where the first
    was not) and the reverse (``lost``), with the two-sided exact sign test's p-value on them (the probe's
    documents are fixed, so each is its own control). None without two probes."""
    by_round: dict[int, dict[str, list[bool]]] = {}
    for line in lines:
        e = json.loads(line)
        by_round.setdefault(int(e["round"]), {}).setdefault(str(e["doc_id"]), []).append(bool(e.get("accepted")))
    if len(by_round) < 2:
        return None
    first, last = by_round[min(by_round)], by_round[max(by_round)]
    shares = [(statistics.fmean(first[d]), statistics.fmean(last[d])) for d in first if d in last]
    gained, lost = sum(b > a for a, b in shares), sum(a > b for a, b in shares)
    n, k = gained + lost, min(gained, lost)
    p = min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n) if n else 1.0
    return {"documents": len(shares), "rounds": [min(by_round), max(by_round)], "gained": gained, "lost": lost,
            "p_value": p}


def _final_rewards(lines: list[str], mode: str | None = None) -> dict[tuple[str, str, int], float]:
    """Final held-out episode lines (:func:`_final_lines`) as reward by (environment, task, episode seed): the
    reward the run trained on, or the episode's score in ``mode`` (episodes without it left out)."""
    out = {}
    for line in lines:
        e = json.loads(line)
        key = (e["env_id"], e["task_id"], int(e.get("seed", 0)))
        if mode is None:
            out[key] = float(e["reward"])
        elif mode in (e.get("score") or {}):
            out[key] = float(e["score"][mode])
    return out


def _paired(diffs: list[float]) -> dict[str, Any]:
    """Self-play minus baseline over matched episodes: mean, standard error, and how many went either way."""
    n = len(diffs)
    if not n:
        return {"episodes": 0, "mean": None, "stderr": None, "better": 0, "worse": 0, "equal": 0}
    se = statistics.stdev(diffs) / n ** 0.5 if n > 1 else None
    return {"episodes": n, "mean": statistics.fmean(diffs), "stderr": se, "better": sum(d > 0 for d in diffs),
            "worse": sum(d < 0 for d in diffs), "equal": sum(d == 0 for d in diffs)}


def _spread(xs: list[float]) -> dict[str, float | None]:
    if not xs:
        return {"mean": None, "min": None, "max": None, "n": 0}
    return {"mean": statistics.fmean(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.3f}" if abs(x) < 10 else f"{x:.0f}"
    return str(x)


def _markdown(res: dict[str, Any]) -> str:
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
    """The report's format-recovery line (``selfplay.format_recovery``): what the step had to learn from, round by
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


def _plot(res: dict[str, Any], path: Path) -> None:
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
                end = next((fig["reward"] for k, fig in final.items() if _source_name(k) == src), None)
                if end is not None:
                    pts.append((len(run["rounds"]), end))
                if pts:
                    ax.plot(*zip(*pts, strict=True), linestyle=style, marker=marker, color=f"C{c}",
                            label=f"{part} {src} {seed}")
    ax.set_ylim(-0.05, 1.05)
    _round_axis(ax, "held-out check fraction by source")


def _plot_recovery(ax: Any, res: dict[str, Any]) -> None:
    """``selfplay.format_recovery_documents``: the share of the extra documents, new each round and never trained
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
    batches and the episodes' where the run recorded it), the update, and the rest (validation, the
    format-recovery and distillation steps, the environment)."""
    seed, run = next(iter(res["selfplay"].items()))
    rows = [r for r in run["rounds"] if r.get("seconds_generation") is not None]
    xs = [r["round"] for r in rows]
    split = all(r.get("seconds_generation_proposals") is not None for r in rows)
    parts = ([("generation: proposals", [r["seconds_generation_proposals"] for r in rows]),
              ("generation: episodes", [r["seconds_generation"] - r["seconds_generation_proposals"] for r in rows])]
             if split else [("generation", [r["seconds_generation"] for r in rows])])
    parts.append(("update", [r.get("seconds_update") or 0.0 for r in rows]))
    parts.append(("the rest", [max(0.0, r["seconds"] - sum(p[i] for _, p in parts)) for i, r in enumerate(rows)]))
    bottom = [0.0] * len(rows)
    for label, ys in parts:
        ax.bar(xs, ys, bottom=bottom, label=label)
        bottom = [b + y for b, y in zip(bottom, ys, strict=True)]
    _round_axis(ax, f"a self-play round's seconds ({seed})", grid="y")


def report(out: Path, work: Path, state: dict[str, Any], cfg: Any) -> dict[str, Any]:
    """Write ``selfplay.json``, ``selfplay.md``, ``selfplay.png`` and the runs' metrics into ``out``."""
    from training.bench.common import env_info, write_result

    seeds = state["seeds"]
    res: dict[str, Any] = {"benchmark": "selfplay", "model": str(cfg.model.gguf_file or cfg.model.name_or_path),
                           "config": state["config"], "overrides": state["overrides"], "tiny": state["tiny"],
                           "seeds": seeds, "warm_start": {k: state.get(k) for k in ("proposer", "solver")},
                           "environments": state.get("environments"), "heldout_model": state.get("heldout"),
                           "rounds": cfg.selfplay.rounds, "selfplay": {}, "baseline": {}}
    diffs: dict[str, list[float]] = {}
    progress_diffs: dict[str, list[float]] = {}
    for seed in seeds:
        s = f"s{seed}"
        sp_run, b_run = work / f"selfplay-{s}", work / f"baseline-{s}"
        probes = _probe_lines(sp_run)  # what the policy wrote without the grammar, round by round
        res["selfplay"][s] = {"rounds": [_selfplay_row(r) for r in rounds_of(sp_run)], "eval_final": _final(sp_run),
                              "eval_final_reward": _final(sp_run, "reward"),
                              "eval_final_progress": _final(sp_run, "progress"),
                              "probe_final": _final(sp_run, "acceptance", "probe_final"),
                              "probe_final_failures": _final(sp_run, "failures", "probe_final"),
                              "probe_pairs": _probe_pairs(probes),
                              "eval_final_by_source": _final(sp_run, "by_source"),
                              "seconds": (state.get(f"selfplay-{s}") or {}).get("seconds")}
        res["baseline"][s] = {"rounds": [_baseline_row(r) for r in rounds_of(b_run)], "eval_final": _final(b_run),
                              "eval_final_reward": _final(b_run, "reward"),
                              "eval_final_progress": _final(b_run, "progress"),
                              "eval_final_by_source": _final(b_run, "by_source"),
                              "episodes": (state.get(f"baseline-{s}") or {}).get("episodes"),
                              "seconds": (state.get(f"baseline-{s}") or {}).get("seconds")}
        finals = {"selfplay": _final_lines(sp_run), "baseline": _final_lines(b_run)}
        a, b = _final_rewards(finals["selfplay"]), _final_rewards(finals["baseline"])
        diffs[s] = [a[k] - b[k] for k in sorted(set(a) & set(b))]
        a, b = _final_rewards(finals["selfplay"], "progress"), _final_rewards(finals["baseline"], "progress")
        progress_diffs[s] = [a[k] - b[k] for k in sorted(set(a) & set(b))]
        for name, run in (("selfplay", sp_run), ("baseline", b_run)):
            for part in ("metrics.jsonl", "summary.json"):  # OUT holds what a merge of seeds reads
                if (run / part).is_file() and (out / f"{name}-{s}-{part}").resolve() != (run / part).resolve():
                    shutil.copyfile(run / part, out / f"{name}-{s}-{part}")
            final = finals[name]
            if final:
                (out / f"{name}-{s}-final-episodes.jsonl").write_text("\n".join(final) + "\n", encoding="utf-8")
        if probes:  # what the policy wrote without the grammar, round by round (RUN/probes/round-R.jsonl)
            (out / f"selfplay-{s}-probes.jsonl").write_text("\n".join(probes) + "\n", encoding="utf-8")
    sp_final = [v["eval_final"] for v in res["selfplay"].values() if v["eval_final"] is not None]
    b_final = [v["eval_final"] for v in res["baseline"].values() if v["eval_final"] is not None]
    sp_checks = [v["eval_final_reward"] for v in res["selfplay"].values() if v["eval_final_reward"] is not None]
    b_checks = [v["eval_final_reward"] for v in res["baseline"].values() if v["eval_final_reward"] is not None]
    res["comparison"] = {"selfplay": _spread(sp_final), "baseline": _spread(b_final),
                         "check_fraction": {"selfplay": _spread(sp_checks), "baseline": _spread(b_checks)}}
    sp_prog = [v["eval_final_progress"] for v in res["selfplay"].values() if v["eval_final_progress"] is not None]
    b_prog = [v["eval_final_progress"] for v in res["baseline"].values() if v["eval_final_progress"] is not None]
    if sp_prog or b_prog:  # runs that scored the progress fraction (checks without doing nothing's credit)
        res["comparison"]["progress_fraction"] = {"selfplay": _spread(sp_prog), "baseline": _spread(b_prog),
                                                  "paired": _paired([d for v in progress_diffs.values()
                                                                     for d in v])}
    res["comparison"]["by_source"] = _by_source(res)
    # the final policies on the same held-out tasks with the same episode seeds: the paired difference is the
    # sharper comparison (each task's difficulty cancels)
    res["comparison"]["paired"] = {"seeds": {k: _paired(v) for k, v in diffs.items()},
                                   "all": _paired([d for v in diffs.values() for d in v])}
    res["warm_start_gap"] = {k: _warm_start_gap(res, k) for k in ("pass_rate", "reward")}
    rises, probe_rises = _rises(res, "acceptance"), _rises(res, "probe_acceptance", "probe_final")
    explore_rises = _rises(res, "acceptance_explore")
    shares = [r["env_share"] for part in ("selfplay", "baseline") for v in res[part].values() for r in v["rounds"]]
    rise = statistics.fmean(rises) if rises else None
    res["targets"] = {
        "acceptance_rise_points": rise, "acceptance_met": rise is not None and rise >= 15,
        "heldout_met": bool(sp_final and b_final) and statistics.fmean(sp_final) >= statistics.fmean(b_final),
        "heldout_checks_met": bool(sp_checks and b_checks)
        and statistics.fmean(sp_checks) >= statistics.fmean(b_checks),
        "env_share_max": max(shares) if shares else None, "env_share_met": bool(shares) and max(shares) < 0.02,
        "probe_acceptance_rise_points": statistics.fmean(probe_rises) if probe_rises else None,
        "probe_acceptance_met": bool(probe_rises) and statistics.fmean(probe_rises) >= 15,
        "explore_acceptance_rise_points": statistics.fmean(explore_rises) if explore_rises else None}
    res["seconds_total"] = sum(float((state.get(k) or {}).get("seconds") or 0) for k in state if "-s" in k)
    if state.get("merged_from"):
        res["merged_from"] = state["merged_from"]
    res.update(env_info(str(cfg.model.device)))
    write_result(out, "selfplay", res, echo=False)
    (out / "selfplay.md").write_text(_markdown(res))
    _plot(res, out / "selfplay.png")
    print(_markdown(res), flush=True)
    return res


def _training_overrides(state: dict[str, Any]) -> dict[str, str]:
    """A run's overrides that shape its training (``key=value`` of ``--set``, without :data:`MEASUREMENT_ONLY`)."""
    out = {}
    for item in state.get("overrides") or []:
        key, _, value = str(item).partition("=")
        if key not in MEASUREMENT_ONLY:
            out[key] = value
    return out


def _read_states(out: Path, folders: list[Path]) -> list[tuple[Path, dict[str, Any]]]:
    """Each folder's ``state.json`` (or ``work/state.json``), checked: no seed twice, not the output folder.
    A seed counts only where both its self-play and its baseline finished (a seed stopped part-way, say to give
    another the device, is left out and listed in the state's ``unfinished_seeds``); no finished seed at all
    is an error."""
    states: list[tuple[Path, dict[str, Any]]] = []
    seen: dict[int, Path] = {}
    for folder in map(Path, folders):
        if folder.resolve() == out.resolve():
            raise ValueError(f"{folder} is both an input and the output: give the merged report a folder of its own")
        path = folder / "state.json" if (folder / "state.json").is_file() else folder / "work" / "state.json"
        if not path.is_file():
            raise ValueError(f"{folder} has no state.json (nor work/state.json): it is not a `bench selfplay` result")
        st = json.loads(path.read_text())
        finished = [s for s in st.get("seeds") or [] if {f"selfplay-s{s}", f"baseline-s{s}"} <= set(st)]
        unfinished = [s for s in st.get("seeds") or [] if s not in finished]
        for seed in finished:
            if seed in seen:
                raise ValueError(f"seed {seed} is in both {seen[seed]} and {folder}: merge folders of different seeds")
            seen[seed] = folder
        states.append((folder, {**st, "seeds": finished, "unfinished_seeds": unfinished}))
    if not seen:
        left = "; ".join(f"{f}: seeds {', '.join(map(str, st['unfinished_seeds'])) or 'none'}" for f, st in states)
        raise ValueError(f"no seed finished both its self-play and its baseline ({left}); resume the run with the "
                         "same command first")
    return states


def _default_settings() -> dict[str, Any]:
    """Every setting's default, as :func:`_settings` spells a resolved config (JSON values)."""
    from training.config import TrainConfig, config_to_dict

    return _settings(json.loads(json.dumps(config_to_dict(TrainConfig()), default=str)))


def _settings(d: dict[str, Any]) -> dict[str, Any]:
    """A resolved config as ``section.key`` settings, without :data:`MEASUREMENT_ONLY`."""
    from training.metrics import leaves

    return {k: v for k, v in leaves(d, ".").items() if k not in MEASUREMENT_ONLY}


def _check_same_training(states: list[tuple[Path, dict[str, Any]]]) -> None:
    """Raise unless every run has the first one's config, size and training overrides, and, where both
    recorded it (``resolved``), every setting that shapes training: a config file edited between two sessions
    trains differently under the same name."""
    first_folder, first = states[0]
    want = (first.get("config"), _training_overrides(first), bool(first.get("tiny")))
    for folder, st in states[1:]:
        got = (st.get("config"), _training_overrides(st), bool(st.get("tiny")))
        if got == want and first.get("resolved") and st.get("resolved"):
            a, b = _settings(first["resolved"]), _settings(st["resolved"])
            # a setting one run predates ran as its default (a key added later keeps the old behaviour there)
            default = _default_settings()
            keys = sorted(k for k in set(a) | set(b) if a.get(k, default.get(k)) != b.get(k, default.get(k)))
            if keys:
                raise ValueError(f"{first_folder} and {folder} trained differently (settings " + ", ".join(
                    f"{k}: {a.get(k, '(unset)')} vs {b.get(k, '(unset)')}" for k in keys[:6]) + "); only "
                    f"{', '.join(MEASUREMENT_ONLY)} may differ between merged runs")
        if got == want:
            continue
        keys = sorted(k for k in set(want[1]) | set(got[1]) if want[1].get(k) != got[1].get(k))
        what = (f"config {want[0]!r} vs {got[0]!r}" if want[0] != got[0]
                else "tiny vs full size" if want[2] != got[2] else "overrides " + ", ".join(
                    f"{k}: {want[1].get(k, '(unset)')} vs {got[1].get(k, '(unset)')}" for k in keys))
        raise ValueError(f"{first_folder} and {folder} trained differently ({what}); only "
                         f"{', '.join(MEASUREMENT_ONLY)} may differ between merged runs")


def _gather_runs(work: Path, states: list[tuple[Path, dict[str, Any]]], merged: dict[str, Any]) -> None:
    """Lay each seed's runs out under ``work`` as the report reads them, and their state entries into ``merged``."""
    for folder, st in states:
        for seed in st.get("seeds") or []:
            for name in ("selfplay", "baseline"):
                key = f"{name}-s{seed}"
                if key in st:
                    merged[key] = st[key]
                run = work / key
                run.mkdir()
                for part, flat in (("metrics.jsonl", "metrics.jsonl"), ("summary.json", "summary.json"),
                                   ("episodes.jsonl", "final-episodes.jsonl"), ("probes.jsonl", "probes.jsonl")):
                    src = next((f for f in (folder / f"{key}-{flat}", folder / "work" / key / part) if f.is_file()),
                               None)
                    if src is not None:
                        shutil.copyfile(src, run / part)
                probes = folder / "work" / key / "probes"  # an --out of the bench: the probe's files per round
                if not (run / "probes.jsonl").is_file() and probes.is_dir():
                    shutil.copytree(probes, run / "probes")


def merge(out: Path, folders: list[Path]) -> dict[str, Any]:
    """One report over the seeds of several result folders of ``envwright bench selfplay`` (the spread of
    seeds run in separate sessions). Each folder is an ``--out`` of the bench, or a copy that keeps its
    ``state.json`` and, per seed S, ``selfplay-sS-{metrics.jsonl,summary.json}`` and the baseline's. The runs
    must share the config and the overrides that shape training (:data:`MEASUREMENT_ONLY` may differ), and no
    seed may come twice. Writes ``selfplay.{json,md,png}`` (with ``merged_from``) into ``out``; nothing runs."""
    import tempfile

    from training.config import load_config

    if not folders:
        raise ValueError("merge needs at least one result folder")
    out = Path(out)
    if (out / "work").exists():
        raise ValueError(f"{out} holds a run (work/): give the merged report a folder of its own")
    states = _read_states(out, folders)
    _check_same_training(states)
    first = states[0][1]
    merged: dict[str, Any] = {k: first.get(k) for k in ("config", "overrides", "tiny", "proposer", "solver",
                                                        "environments", "heldout")}
    merged["seeds"] = sorted(seed for _, st in states for seed in st.get("seeds") or [])
    merged["merged_from"] = [{"folder": str(f), "seeds": st.get("seeds"), "overrides": st.get("overrides"),
                              **({"unfinished_seeds": st["unfinished_seeds"]} if st["unfinished_seeds"] else {})}
                             for f, st in states]
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        _gather_runs(Path(tmp), states, merged)
        cfg = load_config(first["config"], [*(first.get("overrides") or []), "model.device=cpu"])
        res = report(out, Path(tmp), merged, cfg)
    return res

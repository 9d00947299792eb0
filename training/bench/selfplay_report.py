"""The self-play benchmark's results: the figures of ``selfplay.json``, from the runs' records.

From the runs under ``OUT/work`` (:mod:`training.bench.selfplay`), per seed and round:

* self-play: proposer acceptance (overall and of the free exploration stream, which
  ``selfplay.proposer.explore_constrained: false`` decodes without the grammar; with
  ``selfplay.probe``, acceptance without the grammar on fixed documents), the share of
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
run has ``selfplay.probe`` (constrained acceptance starts near 1; from round 0's probe to
the final policy's, after the last round; where the run kept the probe's proposals, the first and the last
probe are paired on their fixed documents: gained, lost and the sign test's p); the final held-out
pass rate of self-play is at least the baseline's (means over seeds); the environment's share of
wall time stays below 2% in every round of every run.

The report is rendered by :mod:`training.bench.selfplay_render` (``selfplay.md``, ``selfplay.png``); several
result folders are merged, and a committed one checked against the docs, by
:mod:`training.bench.selfplay_merge`.
"""

from __future__ import annotations

import json
import math
import shutil
import statistics
from pathlib import Path
from typing import Any

from training.bench.selfplay_render import markdown, plot, source_name

__all__ = ["report", "rises", "rounds_of"]


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


def _checks_by_source(r: dict[str, Any]) -> dict[str, float]:
    """A round's held-out check fraction per source (the source folder's name); empty when not reported."""
    by = (r.get("eval") or {}).get("by_source") or {}
    return {source_name(src): fig["reward"] for src, fig in by.items()}


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
            "seconds_weight_sync": r["time"].get("weight_sync"),
            "engine": (r.get("generation") or {}).get("engine"),
            "logprob_gap_mean": ((r.get("generation") or {}).get("logprob_gap") or {}).get("mean"),
            "logprob_gap_max": ((r.get("generation") or {}).get("logprob_gap") or {}).get("max"),
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


def rises(res: dict[str, Any], key: str, final: str | None = None) -> list[float]:
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
                name = source_name(src)
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


def report(out: Path, work: Path, state: dict[str, Any], cfg: Any, *, draw: bool = True,
           echo: bool = True) -> dict[str, Any]:
    """Write ``selfplay.json``, ``selfplay.md``, ``selfplay.png`` (unless not ``draw``) and the runs' metrics
    into ``out``, and print the report (when ``echo``); returns the result dict."""
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
                              "eval_final_episodes": _final(sp_run, "episodes"),
                              "eval_final_reward": _final(sp_run, "reward"),
                              "eval_final_progress": _final(sp_run, "progress"),
                              "probe_final": _final(sp_run, "acceptance", "probe_final"),
                              "probe_final_failures": _final(sp_run, "failures", "probe_final"),
                              "probe_pairs": _probe_pairs(probes),
                              "eval_final_by_source": _final(sp_run, "by_source"),
                              "seconds": (state.get(f"selfplay-{s}") or {}).get("seconds")}
        res["baseline"][s] = {"rounds": [_baseline_row(r) for r in rounds_of(b_run)], "eval_final": _final(b_run),
                              "eval_final_episodes": _final(b_run, "episodes"),
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
    acceptance_rises, probe_rises = rises(res, "acceptance"), rises(res, "probe_acceptance", "probe_final")
    explore_rises = rises(res, "acceptance_explore")
    shares = [r["env_share"] for part in ("selfplay", "baseline") for v in res[part].values() for r in v["rounds"]]
    rise = statistics.fmean(acceptance_rises) if acceptance_rises else None
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
    (out / "selfplay.md").write_text(markdown(res))
    if draw:
        plot(res, out / "selfplay.png")
    if echo:
        print(markdown(res), flush=True)
    return res

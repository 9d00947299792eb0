"""A small synthetic ``envwright bench selfplay`` result folder, as the report reads one (one seed, two rounds).

Every figure is chosen so a reader can check the report by hand: self-play's final held-out episodes score
1.0, 0.5, 0.5 and 0.25 and the baseline's 0.5, 0.5, 0.75 and 0.25 on the same four (environment, task, seed)
keys (a fifth baseline episode has no partner, and a round-1 line is no final one), so the paired
difference is +0.0625 (1 better, 1 worse, 2 equal); the probe accepts d0 and d1 of four documents at the
warm start and d1, d2 and d3 after the last round (2 gained, 1 lost).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CONFIG = "selfplay-smollm2-h200"


def _lines(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def _episodes(rewards: list[float], progress: list[float] | None) -> list[dict[str, Any]]:
    eps = [{"round": 2, "heldout": True, "final": True, "env_id": f"env-{i // 2}", "task_id": "t", "seed": i % 2,
            "reward": r, **({"score": {"progress": progress[i]}} if progress else {})} for i, r in enumerate(rewards)]
    return [*eps, {"round": 1, "heldout": True, "env_id": "env-0", "task_id": "t", "seed": 0, "reward": 1.0}]


def result_folder(dest: Path, seed: int = 0, *, overrides: list[str] | None = None,
                  resolved: dict[str, Any] | None = None, extras: bool = True) -> Path:
    """Write the folder (``extras``: the probe, its failures, format recovery, the progress fraction, sources
    and the round's time split; without them, a run from before those were recorded)."""
    dest.mkdir(parents=True)
    s = f"s{seed}"
    sp_rows, base_rows = [], []
    for r, (acc, free, held, checks) in enumerate(((0.5, 0.25, 0.0, 0.6), (0.75, 0.5, 0.25, 0.7))):
        row: dict[str, Any] = {
            "round": r, "proposer": {"acceptance": acc, "validity_by_stream": {"explore": free}, "frontier": 0.5,
                                     "grounding": 0.4, "distinct_tool_sets": 3},
            "skills": {"added_count": 1, "pruned_count": 0, "refined_count": r, "active": 12 + r},
            "update": {"proposer": {"samples": 8}, "solver": {"samples": 16}},
            "solver": {"episodes": 16, "pass_rate": 0.125}, "eval": {"pass_rate": held, "reward": checks},
            "time": {"environment_share": 0.004, "round": 100.0}}
        base = {"round": r, "solver": {"episodes": 16, "pass_rate": 0.25}, "update": {"solver": {"samples": 16}},
                "eval": {"pass_rate": 0.25, "reward": 0.6 + 0.05 * r}, "time": {"environment_share": 0.003,
                                                                               "round": 50.0}}
        if extras:
            row["eval"].update(progress=checks - 0.2, by_source={"/h/template": {"reward": checks + 0.1},
                                                                   "/h/model": {"reward": checks - 0.1}})
            base["eval"]["by_source"] = {"/h/template": {"reward": 0.6}, "/h/model": {"reward": 0.55}}
            row["time"].update(generation=60.0, update=20.0, generation_proposals=40.0)
            row["format_recovery"] = {"recovered": 2 - r, "unparsed": 2 - r, "documents": 4, "documents_parsed": 2 + r}
            if r == 0:
                row["probe"] = {"acceptance": 0.5, "samples": 1,
                                "failures": {"codes": {"blueprint_schema": 1, "json_syntax": 1}, "truncated": 1}}
        sp_rows.append(row)
        base_rows.append(base)
    (dest / f"selfplay-{s}-metrics.jsonl").write_text(_lines(sp_rows))
    (dest / f"baseline-{s}-metrics.jsonl").write_text(_lines(base_rows))
    sp_final: dict[str, Any] = {"pass_rate": 0.25, "reward": 0.5625, "episodes": 4}
    base_final: dict[str, Any] = {"pass_rate": 0.0, "reward": 0.5, "episodes": 4}
    summary: dict[str, Any] = {"eval_final": sp_final}
    if extras:
        sp_final.update(progress=0.5, by_source={"/h/template": {"pass_rate": 0.5, "reward": 0.75, "episodes": 2},
                                                 "/h/model": {"pass_rate": 0.0, "reward": 0.375, "episodes": 2}})
        base_final.update(progress=0.25, by_source={"/h/template": {"pass_rate": 0.0, "reward": 0.5, "episodes": 2},
                                                    "/h/model": {"pass_rate": 0.0, "reward": 0.5, "episodes": 2}})
        summary["probe_final"] = {"acceptance": 0.75, "failures": {"codes": {"no_json": 1}, "truncated": 0,
                                                                    "schema": {"title: too_long": 1}}}
        probes = [{"round": rnd, "doc_id": f"d{i}", "accepted": ok} for rnd, oks in
                  ((0, (True, True, False, False)), (2, (False, True, True, True))) for i, ok in enumerate(oks)]
        (dest / f"selfplay-{s}-probes.jsonl").write_text(_lines(probes))
    (dest / f"selfplay-{s}-summary.json").write_text(json.dumps(summary))
    (dest / f"baseline-{s}-summary.json").write_text(json.dumps({"eval_final": base_final}))
    (dest / f"selfplay-{s}-final-episodes.jsonl").write_text(_lines(_episodes(
        [1.0, 0.5, 0.5, 0.25], [0.75, 0.5, 0.5, 0.25] if extras else None)))
    (dest / f"baseline-{s}-final-episodes.jsonl").write_text(_lines(_episodes(
        [0.5, 0.5, 0.75, 0.25, 0.5], [0.25, 0.25, 0.5, 0.0, 0.25] if extras else None)))
    state: dict[str, Any] = {"config": CONFIG, "tiny": False, "seeds": [seed],
                             "overrides": overrides if overrides is not None else ["selfplay.eval_attempts=1"],
                             f"selfplay-{s}": {"seconds": 200.0}, f"baseline-{s}": {"episodes": [16, 16],
                                                                                     "seconds": 100.0}}
    if resolved is not None:
        state["resolved"] = resolved
    (dest / "state.json").write_text(json.dumps(state))
    return dest

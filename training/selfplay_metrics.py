"""The per-round record of a self-play run (one line of ``metrics.jsonl``).

:func:`round_record` gathers what a round measured into one nested dict:

* ``proposer`` -- acceptance (the share of candidates the gate and their skill's
  check accepted), ``frontier`` (the share of accepted environments whose solve rate
  lies in ``[frontier_low, frontier_high]``), mean ``grounding`` of the accepted ones,
  ``distinct_tool_sets`` among them, mean reward, parse share, generation errors;
* ``solver`` -- the round's episodes on proposed environments: reward, pass rate,
  statuses, the solve-rate histogram of the environments;
* ``eval`` -- the held-out pass rate (``selfplay.eval_envs``; absent when not scored);
* ``skills`` -- routing, weights, and which skills were added, pruned, refined, merged
  or refused (with counts: ``added_count``, ...);
* ``update`` -- per role, the samples that carried a signal into the optimizer step(s),
  plus the step's loss and gradient norm; ``distill`` when the phase ran;
* ``time`` -- generation (split into ``generation_proposals``, the proposer's batches, and
  ``generation_episodes``, the solver's and held-out rollouts), environment, validation, update and
  the whole round (wall clock), ``weight_sync`` (pushing the weights into an engine with its own copy
  after the update), and ``environment_share``: the environment's share of the round's wall time;
* ``generation`` -- the engine, the sampler-trainer log-probability gap measured before the update
  (``logprob_gap``: mean, max, tokens) and the engine's weight syncs
  (:func:`training.weight_sync.sampler_report`).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from training.rewards import solve_rate
from training.rollout import Episode, batch_stats

__all__ = ["append_episodes", "histogram", "pass_rate", "round_record", "round_rows", "with_raw"]


def histogram(values: list[float], bins: int) -> dict[str, list[float]]:
    """Counts of ``values`` in ``bins`` equal bins of [0, 1] (the last bin includes 1.0)."""
    edges = [i / bins for i in range(bins + 1)]
    counts = [0] * bins
    for v in values:
        counts[min(int(v * bins), bins - 1)] += 1
    return {"edges": edges, "counts": [float(c) for c in counts]}


def append_episodes(path: Path, r: int, episodes: Sequence[Episode], heldout: Sequence[Episode] = (), *,
                    final: bool = False) -> None:
    """Append a round's episode records to ``path`` (``RUN/episodes.jsonl``): each with its ``round``; held-out
    episodes also with ``heldout: true``, and ``final: true`` for the final policy's scoring (``round`` = the
    number of rounds), so two runs can be compared task by task on the held-out set."""
    with path.open("a", encoding="utf-8") as f:
        for e in episodes:
            f.write(json.dumps({"round": r, **e.record()}, default=str) + "\n")
        for e in heldout:
            extra = {"final": True} if final else {}
            f.write(json.dumps({"round": r, "heldout": True, **extra, **e.record()}, default=str) + "\n")


def pass_rate(episodes: Sequence[Episode]) -> dict[str, Any]:
    """Held-out numbers: pass rate, mean reward, episodes, the pass rate per environment and, when the tasks
    name their source (``selfplay.eval_envs``), pass rate, mean reward and episodes per source
    (``by_source``): template environments and model-written ones can favour different training."""
    per_env: dict[str, list[bool]] = {}
    per_source: dict[str, list[Episode]] = {}
    for e in episodes:
        per_env.setdefault(e.task.env_id, []).append(e.passed)
        if e.task.source:
            per_source.setdefault(e.task.source, []).append(e)
    out = {"pass_rate": solve_rate([e.passed for e in episodes]),
           "reward": statistics.fmean([e.reward for e in episodes]) if episodes else 0.0,
           "episodes": len(episodes), "envs": len(per_env),
           "per_env": {k: solve_rate(v) for k, v in sorted(per_env.items())}}
    out.update(_progress(episodes))
    if per_source:
        out["by_source"] = {src: {"pass_rate": solve_rate([e.passed for e in eps]),
                                  "reward": statistics.fmean([e.reward for e in eps]), "episodes": len(eps),
                                  **_progress(eps)}
                            for src, eps in per_source.items()}
    return out


def _progress(episodes: Sequence[Episode]) -> dict[str, float]:
    """``{"progress": mean}``, the mean progress fraction (``reward_mode: progress``: the checks passed, a turn's
    guards only beside progress) of episodes whose scores all carry it; ``{}`` otherwise (an episode that never
    started has no score, and counts 0)."""
    if not episodes:
        return {}
    scores = [e.score or {} for e in episodes]
    if not any("progress" in sc for sc in scores) or any(sc and "progress" not in sc for sc in scores):
        return {}
    return {"progress": statistics.fmean(float(sc.get("progress", 0.0)) for sc in scores)}


def failures(proposals: Sequence[Any]) -> dict[str, Any]:
    """Why the proposals that hold no spec hold none: the count per failure code (``envgen.errors.FailureCode``),
    how many of them the token budget cut off (``finish_reason: length``), which tells a format the policy
    does not write from a budget too small for it, and, for blueprints that broke their schema, the count per
    kind of their first problem (``schema``: a pydantic error type such as ``too_long`` or
    ``string_pattern_mismatch``, with the top-level key it is under: ``operations: too_long``)."""
    codes: dict[str, int] = {}
    schema: dict[str, int] = {}
    cut = 0
    for p in proposals:
        if p.spec is not None:
            continue
        meta = p.meta or {}
        code = str(meta.get("error_code") or "no_spec")
        codes[code] = codes.get(code, 0) + 1
        cut += meta.get("finish_reason") == "length"
        if code == "blueprint_schema" and meta.get("schema_errors"):
            first = meta["schema_errors"][0]
            kind = f"{str(first.get('loc', '')).split('.')[0] or '<root>'}: {first.get('type')}"
            schema[kind] = schema.get(kind, 0) + 1
    out: dict[str, Any] = {"codes": dict(sorted(codes.items())), "truncated": cut}
    if schema:
        out["schema"] = dict(sorted(schema.items(), key=lambda kv: (-kv[1], kv[0])))
    return out


def round_record(r: int, *, result: Any, episodes: Sequence[Episode], env_rates: Sequence[float],
                 eval_episodes: Sequence[Episode] | None, missing: int, n_samples: dict[str, int],
                 update: dict[str, Any], distill: dict[str, Any] | None, backend_timer: Any, seconds: dict[str, float],
                 skills_active: int, library_size: int, bins: int,
                 generation: dict[str, Any] | None = None) -> dict[str, Any]:
    """The round's record (module docstring). ``seconds``: ``round`` (wall clock), ``update``, ``distill``,
    ``weight_sync``; ``generation``: the engine's report (:func:`training.weight_sync.sampler_report`)."""
    rm = result.metrics()
    bs = batch_stats(list(episodes) + list(eval_episodes or []))
    solver = batch_stats(episodes)
    gen_s = backend_timer.seconds + bs["gen_seconds"]
    tokens = backend_timer.tokens + bs["model_tokens"]
    env_s = bs["env_seconds"]
    wall = seconds["round"]
    cands = result.candidates
    rec: dict[str, Any] = {
        "round": r,
        "proposer": {"acceptance": rm["validity"], "validity": rm["validity"],
                     "validity_by_stream": rm["validity_by_stream"], "frontier": rm["frontier"],
                     "grounding": rm["grounding"], "distinct_tool_sets": rm["distinct_tool_sets"],
                     "reward": rm["mean_proposer_reward"], "candidates": rm["candidates"], "groups": rm["groups"],
                     "kept": rm["kept"], "mean_solve_rate": rm["mean_solve_rate_valid"],
                     "parsed": sum(c.proposal.spec is not None for c in cands) / max(1, len(cands)),
                     "generation_errors": missing, "tokens": backend_timer.tokens,
                     "failures": failures([c.proposal for c in cands])},
        "solver": {"reward": solver["reward"], "pass_rate": solver["pass_rate"], "episodes": solver["episodes"],
                   "envs": len(env_rates), "mean_solve_rate": statistics.fmean(env_rates) if env_rates else None,
                   "solve_rate_histogram": histogram(list(env_rates), bins), "statuses": solver["statuses"],
                   "tool_calls": solver["tool_calls"], "tool_errors": solver["tool_errors"],
                   "model_tokens": solver["model_tokens"], "env_tokens": solver["env_tokens"]},
        "skills": {"routing": rm["routing"], "weights": rm["weights"], "solve_rates": rm["skill_solve_rates"],
                   "mean_solve_rate_routed": rm["mean_solve_rate_routed"], "added": rm["induced"],
                   "pruned": rm["pruned"], "refined": rm["refined"], "induced": rm["induced"], "merged": rm["merged"],
                   "refused": rm["refused"], "rejected": rm["rejected"], "active": skills_active,
                   "added_count": len(rm["induced"]), "pruned_count": len(rm["pruned"]),
                   "refined_count": len(rm["refined"]), "merged_count": len(rm["merged"]),
                   "rejected_count": len(rm["rejected"])},
        "samples": dict(n_samples),
        "update": update,
        "throughput": {"tokens_per_second": tokens / gen_s if gen_s > 0 else 0.0, "generated_tokens": tokens},
        "time": {"generation": gen_s, "generation_proposals": backend_timer.seconds,
                 "generation_episodes": bs["gen_seconds"], "environment": env_s, "update": seconds["update"],
                 "weight_sync": seconds.get("weight_sync", 0.0),
                 "validation": max(0.0, wall - gen_s - env_s - seconds["update"] - seconds.get("distill", 0.0)
                                   - seconds.get("weight_sync", 0.0)),
                 "round": wall, "environment_share": env_s / wall if wall > 0 else 0.0},
        "library_size": library_size,
    }
    if generation is not None:
        rec["generation"] = generation
    if distill is not None:
        rec["distill"] = distill
        rec["time"]["distill"] = seconds.get("distill", 0.0)
    if eval_episodes:
        rec["eval"] = pass_rate(eval_episodes)
    return rec


def round_rows(records: Sequence[Any], episodes: Sequence[Any]) -> tuple[list[list[int]], list[int]]:
    """Every generation of a round as a context and the tokens generated after it: each proposal (its prompt,
    its completion's length: ``PolicyBackend.records``) and each episode action (the episode's tokens before
    it, the action's length): the shape :meth:`training.generation.Generator.raw_throughput` is timed at."""
    contexts: list[list[int]] = [list(r.prompt_ids) for r in records]
    budgets: list[int] = [len(r.completion_ids) for r in records]
    for ep in episodes:
        ids = list(ep.prompt_ids) + list(ep.completion_ids)
        for st in ep.steps:
            contexts.append(ids[:len(ep.prompt_ids) + st.start])
            budgets.append(st.end - st.start)
    return contexts, budgets


def with_raw(throughput: dict[str, Any], raw: dict[str, Any] | None,
             by_call: dict[str, Any] | None = None) -> dict[str, Any]:
    """A round's ``throughput`` record with the engine's raw rate at the round's shape (:func:`round_rows`, every
    row in one call) and ``of_raw``, the in-loop tokens/s as a share of it; with ``by_call`` (the round's own
    calls replayed, :meth:`~training.generation.Generator.raw_by_call`) also ``raw_by_call`` and
    ``of_raw_by_call``. A share is None without its raw rate."""
    tps = throughput["tokens_per_second"]
    raw_tps = (raw or {}).get("tokens_per_second")
    out = {**throughput, "raw": raw, "of_raw": tps / raw_tps if raw_tps else None}
    if by_call is not None:
        out.update(raw_by_call=by_call, of_raw_by_call=tps / by_call["tokens_per_second"]
                   if by_call.get("tokens_per_second") else None)
    return out

"""Measures of a library (what ``envwright stats LIBRARY`` prints).

* **Yield**: accepted / attempted, per proposer and per rejection reason code
  (from the catalog's ``attempts`` table).
* **Diversity**: distinct tool-signature sets; mean pairwise distance of task
  texts (1 - Jaccard similarity of word 3-shingles, over at most
  ``max_pairs_envs`` environments sampled by seed).
* **Grounding**: the share of an environment's entity and field names that
  occur in its source document (:func:`envgen.blueprint.grounding.grounding`,
  computed at generation time): the mean, the share of environments at 0.5 or
  more, and the mean per proposer, stream and structure (blueprint or spec).
* **Mutation score** (check adequacy, validity rule 7): the mean over the
  library's environments of the share of wrong trajectories their checks
  catch (1.0 for every environment the gate accepted), the mean number of
  wrong trajectories tried per environment, and the mean score of rejected
  candidates (how close they came). Environments indexed without a verdict
  (re-indexed files, older catalogs) have no score and are not counted.
* **Realism** (:mod:`envgen.realism`): CRUD-verb tools, slug strings, tables and rows, tools in scope, row
  ids in user text, words per turn, turn skeletons, hop depth, filter-and-choose, repeated reads, policy;
  each reference is run in the sandbox's worker processes to trace where its arguments come from.
* **Depth** (:mod:`envgen.depth`): reference calls per task, the share of
  tasks with at least three calls, turns per task and tables per
  environment, over the library's spec files; and the **difficulty mix** (how
  many environments the compiler wrote at each level; ``unknown`` for those
  indexed without one).
"""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from corpora.similarity import jaccard, word_shingles
from envgen.depth import spec_depth
from envgen.library import Library
from envgen.realism import measure_specs

__all__ = ["LibraryStats", "library_stats"]


@dataclass
class LibraryStats:
    """Yield, diversity, grounding and solve-rate statistics of a library."""
    envs: int = 0
    attempts: int = 0
    accepted_attempts: int = 0
    yield_by_proposer: dict[str, dict[str, float]] = field(default_factory=dict)
    rejections_by_reason: dict[str, int] = field(default_factory=dict)
    distinct_signatures: int = 0
    mean_task_distance: float = float("nan")
    grounded_share: float = float("nan")
    mean_grounding: float = float("nan")
    by_stream: dict[str, int] = field(default_factory=dict)
    #: ``"proposer / stream / structure"`` -> ``{"envs", "mean_grounding"}``
    grounding_by: dict[str, dict[str, float]] = field(default_factory=dict)
    solve_rate_histogram: dict[str, int] = field(default_factory=dict)
    mutation_scored: int = 0  #: environments with a mutation score
    mean_mutation_score: float = float("nan")
    mean_mutants: float = float("nan")  #: wrong trajectories tried per scored environment
    rejected_mean_mutation_score: float = float("nan")  #: over rejected attempts with a score
    depth: dict[str, Any] = field(default_factory=dict)  #: :class:`envgen.depth.Depth` of the library's tasks
    difficulty_mix: dict[str, int] = field(default_factory=dict)  #: environments per difficulty level
    realism: dict[str, Any] = field(default_factory=dict)  #: :class:`envgen.realism.Realism` of the library's specs

    @property
    def overall_yield(self) -> float:
        return self.accepted_attempts / self.attempts if self.attempts else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"overall_yield": self.overall_yield}


def _yield(attempts: list[dict[str, Any]]) -> tuple[dict[str, dict[str, float]], dict[str, int]]:
    per: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    reasons: Counter[str] = Counter()
    for a in attempts:
        per[a["proposer"]][0] += 1
        per[a["proposer"]][1] += int(bool(a["accepted"]))
        if not a["accepted"]:
            for code in json.loads(a["codes"] or "[]") or ["unknown"]:
                reasons[code] += 1
    out = {p: {"attempted": n, "accepted": k, "yield": k / n if n else 0.0} for p, (n, k) in sorted(per.items())}
    return out, dict(reasons.most_common())


def _grounding_by(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    groups: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if r.get("grounding") is not None:
            key = f"{r['proposer'] or '?'} / {r['stream'] or '?'} / {r.get('structure') or '?'}"
            groups[key].append(float(r["grounding"]))
    return {k: {"envs": len(v), "mean_grounding": sum(v) / len(v)} for k, v in sorted(groups.items())}


def library_stats(lib: Library, *, max_pairs_envs: int = 200, seed: int = 0) -> LibraryStats:
    """Compute yield, diversity and grounding of a library."""
    rows = lib.rows()
    attempts = lib.attempts()
    st = LibraryStats(envs=len(rows), attempts=len(attempts),
                      accepted_attempts=sum(1 for a in attempts if a["accepted"]))
    st.yield_by_proposer, st.rejections_by_reason = _yield(attempts)
    st.distinct_signatures = len({r["signature"] for r in rows})
    sample = rows if len(rows) <= max_pairs_envs else random.Random(seed).sample(rows, max_pairs_envs)
    texts = [word_shingles(r["task_text"] or "") for r in sample]  # each text shingled once, not once per pair
    if len(texts) >= 2:
        dists = [1.0 - jaccard(a, b) for a, b in itertools.combinations(texts, 2)]
        st.mean_task_distance = sum(dists) / len(dists)
    g = [r["grounding"] for r in rows if r.get("grounding") is not None]
    if g:
        st.grounded_share = sum(1 for x in g if x >= 0.5) / len(g)
        st.mean_grounding = sum(g) / len(g)
    st.grounding_by = _grounding_by(rows)
    scored = [r for r in rows if r.get("mutation_score") is not None]
    st.mutation_scored = len(scored)
    if scored:
        st.mean_mutation_score = sum(r["mutation_score"] for r in scored) / len(scored)
        st.mean_mutants = sum(r.get("mutants") or 0 for r in scored) / len(scored)
    rejected = [a["mutation_score"] for a in attempts if not a["accepted"] and a.get("mutation_score") is not None]
    if rejected:
        st.rejected_mean_mutation_score = sum(rejected) / len(rejected)
    st.by_stream = dict(Counter(r["stream"] or "?" for r in rows))
    specs = _spec_dicts(lib, rows)
    st.depth = spec_depth(specs).to_dict()
    st.realism = measure_specs(specs).to_dict()
    st.difficulty_mix = dict(sorted(Counter(r.get("difficulty") or "unknown" for r in rows).items()))
    bins: Counter[str] = Counter()
    for r in rows:
        if r["solve_rate"] is None:
            bins["unrated"] += 1
        else:
            lo = min(int(r["solve_rate"] * 5), 4) / 5
            bins[f"{lo:.1f}-{lo + 0.2:.1f}"] += 1
    st.solve_rate_histogram = dict(sorted(bins.items()))
    return st


def _spec_dicts(lib: Library, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The library's specs as plain JSON (unreadable files are left out of the depth figures)."""
    out = []
    for r in rows:
        try:  # by id, inside the library (the catalog's path column is data)
            out.append(json.loads(lib.inside(lib.spec_path(r["id"])).read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return out

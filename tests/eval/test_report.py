"""Reports: run folder files, self-contained HTML with plots and transcript anchors, compare, the CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from eval.cli import compare_cmd, eval_cmd
from eval.report import compare_markdown, compare_runs, load_run
from eval.runner import EvalConfig, run_eval


def _run(out: Path, model: str, limit: int = 6):
    return run_eval(EvalConfig(policy="scripted", model=model, suites=["examples"], out=out, limit=limit,
                               executor="inprocess", progress=False, n_boot=200, agreement=model == "reference"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("runs")
    _run(root / "empty", "empty")
    _run(root / "reference", "reference")
    return root / "empty", root / "reference"


def test_run_folder_files(runs: tuple[Path, Path]) -> None:
    empty, reference = runs
    for folder in runs:
        assert {p.name for p in folder.iterdir()} >= {"results.jsonl", "summary.json", "report.md", "report.html"}
    records, summary = load_run(reference)
    assert len(records) == 6 and all(r["transcript"] for r in records)
    assert summary["suites"]["examples"]["pass@1"] == 1.0
    assert summary["runs"]["examples"]["agreement"]["agrees"]
    md = (empty / "report.md").read_text()
    assert "| suite | tasks |" in md and "## By task kind" in md and "## Action classes" in md
    assert md.count("](report.html#ep-") == 6  # every failed episode links to its transcript
    assert "Checker agreement" in (reference / "report.md").read_text()


def test_html_is_self_contained_with_plots_and_anchored_transcripts(runs: tuple[Path, Path]) -> None:
    for folder in runs:
        text = (folder / "report.html").read_text()
        records, _ = load_run(folder)
        assert text.count('src="data:image/png;base64,') == 3
        assert "<link" not in text and "<script" not in text and "http://" not in text and "https://" not in text
        for rec in records:
            assert f'id="ep-{rec["episode_id"]}"' in text and f'href="#ep-{rec["episode_id"]}"' in text
        anchors = re.findall(r'<section class="episode" id="([^"]+)"', text)
        assert len(anchors) == len(set(anchors)) == len(records)
        assert 'class="msg assistant"' in text and 'class="msg user"' in text


def test_compare_runs_reports_the_difference_with_a_ci(runs: tuple[Path, Path]) -> None:
    empty, reference = runs
    result = compare_runs(empty, reference, n_boot=200)
    overall = next(r for r in result["rows"] if r["kind"] == "(all)" and r["metric"] == "pass@1")
    assert (overall["a"], overall["b"], overall["diff"]) == (0.0, 1.0, 1.0)
    assert overall["ci"] == pytest.approx((1.0, 1.0)) and overall["significant"] and overall["paired"]
    assert overall["common"] == 6
    checks = next(r for r in result["rows"] if r["kind"] == "(all)" and r["metric"] == "checks")
    assert 0 < checks["diff"] < 1 and checks["ci"][0] <= checks["diff"] <= checks["ci"][1]
    assert {r["kind"] for r in result["rows"]} > {"(all)"}
    md = compare_markdown(result)
    assert "| `examples` | `(all)` | pass@1 |" in md and "1.000" in md and md.count("*") >= 1


def test_compare_cli_prints_and_writes(runs: tuple[Path, Path], tmp_path: Path) -> None:
    empty, reference = runs
    res = CliRunner().invoke(compare_cmd, [str(empty), str(reference), "--out", str(tmp_path / "c.json"),
                                           "--bootstrap", "100"])
    assert res.exit_code == 0, res.output
    assert "pass@1" in res.output and json.loads((tmp_path / "c.json").read_text())["rows"]
    res = CliRunner().invoke(compare_cmd, [str(empty), str(tmp_path)])
    assert res.exit_code == 1 and "not a run folder" in res.output


def test_eval_cli_end_to_end(tmp_path: Path) -> None:
    res = CliRunner().invoke(eval_cmd, ["--policy", "scripted", "--model", "reference", "--suite", "examples",
                                        "--limit", "3", "--executor", "inprocess", "--out", str(tmp_path / "r"),
                                        "--no-progress", "--bootstrap", "100"])
    assert res.exit_code == 0, res.output
    assert "episodes/s" in res.output and (tmp_path / "r" / "report.html").is_file()
    res = CliRunner().invoke(eval_cmd, ["--policy", "scripted", "--suite", "exampels", "--out", str(tmp_path / "x"),
                                        "--no-progress"])
    assert res.exit_code == 1 and "did you mean 'examples'" in res.output
    res = CliRunner().invoke(eval_cmd, ["--policy", "scripted", "--suite", "examples", "--k", "0",
                                        "--out", str(tmp_path / "x"), "--no-progress"])
    assert res.exit_code == 1 and "k must be >= 1" in res.output

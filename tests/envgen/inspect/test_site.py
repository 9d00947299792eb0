"""``envwright inspect``'s site, read as files: what each page holds, escaping, links, and how OUT is handled."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from markupsafe import escape

from envgen.cli import cli
from envgen.inspect import build_site
from envgen.inspect.site import MARKER
from tests.envgen.inspect.conftest import HOSTILE_DESCRIPTION, HOSTILE_TITLE, env_ids, rejected_ids


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_index_lists_every_environment_with_its_columns(site: Path, library: Path) -> None:
    index = _read(site / "index.html")
    ids = env_ids(library)
    assert len(ids) == 5  # 2 template + 2 accepted fixture + the hostile one
    for env_id in ids:
        assert f'href="envs/{env_id}.html"' in index and (site / "envs" / f"{env_id}.html").is_file()
    assert index.count("<tr data-proposer=") == 5
    assert "template:ast" in index and "stdlib:sched.py" in index and "data-kinds=" in index
    assert "Depth of the reference trajectories:" in index and "calls per task" in index
    assert 'data-filter="search"' in index and 'src="assets/site.js"' in index
    assert (site / "assets" / "site.css").is_file() and (site / MARKER).is_file()
    assert "http://" not in index and "https://" not in index  # no external assets


def test_env_page_shows_source_tools_tables_tasks_gate_history_and_episodes(site: Path, library: Path) -> None:
    env_id = next(i for i in env_ids(library) if i.startswith("tpl-sched"))
    page = _read(site / "envs" / f"{env_id}.html")
    assert "stdlib:sched.py" in page and "<mark" in page  # the document's excerpt, identifiers marked
    assert "Made of it" in page and "traces to" in page
    assert "JSON Schema" in page and "parameter" in page  # tools with their schemas
    assert "rows, first" in page or " rows</span>" in page  # tables with seed rows
    assert "turn 1/" in page and "reference" in page and "checks" in page
    assert "Wrong trajectories tried" in page and "killed" in page and "report stored at generation time" in page
    assert "without call 1 " in page  # calls counted from 1 too
    assert "Solve-rate history" in page and "<svg" in page and "reference (1.00)" in page
    assert "scripted:empty" in page
    assert page.count('href="../runs/') >= 2  # its episodes, in both runs


def test_runs_link_episodes_to_env_pages_and_transcripts(site: Path, library: Path, runs: list[Path]) -> None:
    run_index = _read(site / "runs" / "empty" / "index.html")
    env_id = env_ids(library)[0]
    assert f'href="../../envs/{env_id}.html"' in run_index
    links = re.findall(r'<td class="id"><a href="([^"]+\.html)">', run_index)
    assert links and all((site / "runs" / "empty" / link).is_file() for link in links)
    episode = _read(site / "runs" / "empty" / links[0])
    assert "Transcript" in episode and 'class="msg user"' in episode and "../../envs/" in episode


def test_rejected_proposals_have_their_reasons_and_gate_report(site: Path, library: Path) -> None:
    index = _read(site / "rejected" / "index.html")
    (attempt,) = rejected_ids(library)
    assert f'href="{attempt}.html"' in index and "reference_check_failed" in index
    page = _read(site / "rejected" / f"{attempt}.html")
    assert "rule 3 (reference)" in page and "fails on the reference trajectory" in page
    assert "The candidate" in page and "JSON Schema" in page  # the candidate parsed: its tools are shown
    assert "Wrong trajectories tried" in page


def test_text_from_specs_is_escaped_everywhere(site: Path) -> None:
    page = _read(site / "envs" / "hostile-desk.html")
    index = _read(site / "index.html")
    for text in (page, index):
        assert "<script>alert" not in text and "<img src=x" not in text
    assert str(escape(HOSTILE_TITLE)) in page and str(escape(HOSTILE_DESCRIPTION)) in page
    assert "&lt;/pre&gt;&lt;/td&gt;&lt;script&gt;" in page  # a tool description cannot close our markup


def test_out_is_refused_when_it_holds_something_else_and_replaced_when_it_is_a_site(library: Path,
                                                                                    tmp_path: Path) -> None:
    other = tmp_path / "notes"
    other.mkdir()
    (other / "mine.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="not an inspector site"):
        build_site(str(library), other, executor="inprocess", gate="stored")
    assert (other / "mine.txt").read_text() == "keep me"
    out = tmp_path / "site"
    build_site(str(library), out, executor="inprocess", gate="off", rows=0)
    (out / "stale.html").write_text("old")
    summary = build_site(str(library), out, executor="inprocess", gate="off", rows=0)
    assert summary.envs == 5 and not (out / "stale.html").exists()  # a rebuilt site is whole and fresh
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".site.")]  # no temporary left


def test_a_single_spec_or_example_and_the_command(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["inspect", "library-loans", "--out", str(tmp_path / "one"),
                                      "--executor", "inprocess"])
    assert result.exit_code == 0, result.output
    assert "wrote 1 environment pages" in result.output and "file://" in result.output
    page = _read(tmp_path / "one" / "envs" / "library-loans.html")
    assert "Hand-written: no source document." in page and "accepted" in page  # the gate ran (no stored report)
    assert not (tmp_path / "one" / "rejected").exists()
    notlib = tmp_path / "empty"
    notlib.mkdir()
    result = CliRunner().invoke(cli, ["inspect", str(notlib), "--out", str(tmp_path / "x")])
    assert result.exit_code == 1 and "neither a library" in result.output
    assert list(notlib.iterdir()) == []  # nothing written into a folder that is not a library

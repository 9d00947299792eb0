"""``envwright inspect``'s site, read as files: what each page holds, escaping, links, and how OUT is handled."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from markupsafe import escape

from envgen.cli import cli
from envgen.inspect import build_site
from envgen.inspect.site import MARKER
from tests.envgen.inspect.conftest import HOSTILE_DESCRIPTION, HOSTILE_TITLE, RLO, env_ids, rejected_ids


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


def test_every_text_of_a_spec_is_bidi_isolated(hostile_site: Path) -> None:
    """Each U+202E of the spec sits inside an isolate (FSI … PDI, what <bdi> does) that closes before our text."""
    pages = sorted(hostile_site.rglob("*.html"))
    seen = 0
    for path in pages:
        text, depth = _read(path), 0
        for ch in text:
            if ch in "\u2066\u2067\u2068":
                depth += 1
            elif ch == "\u2069":
                assert depth > 0, f"{path.name}: a PDI closes an isolate we did not open"
                depth -= 1
            elif ch == RLO:
                seen += 1
                assert depth > 0, f"{path.name}: a spec's U+202E outside any isolate"
        assert depth == 0, f"{path.name}: an isolate left open"
    assert seen > 20  # title, description, provenance, source, tools, parameters, instructions, rows, filters
    index = _read(hostile_site / "index.html")
    option = re.search(r'<option value="(\u2068s  [^"]*)">', index)
    assert option and f'data-skill="{option.group(1)}"' in index  # a filter's value is the row's, spaces and all


def test_out_is_refused_when_it_holds_something_else_and_replaced_when_it_is_a_site(library: Path,
                                                                                    tmp_path: Path) -> None:
    other = tmp_path / "notes"
    other.mkdir()
    (other / "mine.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="not an inspector site"):
        build_site(str(library), other, executor="inprocess", gate="stored")
    assert (other / "mine.txt").read_text() == "keep me"
    out = tmp_path / "site"
    build_site("library-loans", out, executor="inprocess", gate="off", rows=0)
    assert (out / "envs" / "library-loans.html").is_file()
    rebuilt = build_site("library-loans", out, executor="inprocess", gate="off", rows=0)  # the same: rebuilt
    assert rebuilt.replaced is not None and "library-loans (1 environment" in rebuilt.replaced
    summary = build_site(str(library), out, executor="inprocess", gate="off", rows=0, force=True)
    assert summary.envs == 5 and not (out / "envs" / "library-loans.html").exists()  # whole and fresh
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".site.")]  # no temporary left
    manifest = json.loads((out / MARKER).read_text())["files"]
    assert "index.html" in manifest and "assets/site.js" in manifest and MARKER not in manifest


def test_a_site_with_files_added_to_it_is_not_replaced(library: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    build_site("library-loans", out, executor="inprocess", gate="off", rows=0)
    (out / "NOTES.txt").write_text("my notes")
    (out / "mywork").mkdir()
    (out / "mywork" / "data.csv").write_text("a,b")
    with pytest.raises(FileExistsError, match=r"not the inspector's: NOTES\.txt, mywork/data\.csv"):
        build_site(str(library), out, executor="inprocess", gate="off", rows=0)
    assert (out / "NOTES.txt").read_text() == "my notes" and (out / "mywork" / "data.csv").read_text() == "a,b"
    assert (out / "envs" / "library-loans.html").is_file()  # the old site stands, untouched
    result = CliRunner().invoke(cli, ["inspect", "library-loans", "--out", str(out), "--executor", "inprocess",
                                      "--gate", "off"])
    assert result.exit_code == 1 and "NOTES.txt" in result.output and "mywork/data.csv" in result.output
    (out / "NOTES.txt").unlink()
    shutil.rmtree(out / "mywork")
    build_site(str(library), out, executor="inprocess", gate="off", rows=0, force=True)  # only its own files
    assert not (out / "envs" / "library-loans.html").exists()
    (out / MARKER).write_text("built by envwright inspect\n")  # a site from before manifests: its layout counts
    (out / "envs" / "mine.txt").write_text("x")
    with pytest.raises(FileExistsError, match=r"envs/mine\.txt"):
        build_site("library-loans", out, executor="inprocess", gate="off", rows=0, force=True)
    (out / "envs" / "mine.txt").unlink()
    with pytest.raises(FileExistsError, match="an older version"):  # what it shows is unknown: --force
        build_site("library-loans", out, executor="inprocess", gate="off", rows=0)
    build_site("library-loans", out, executor="inprocess", gate="off", rows=0, force=True)


def test_an_empty_library_says_it_is_empty(tmp_path: Path) -> None:
    from envgen.library import Library

    with Library(tmp_path / "lib"):
        pass
    build_site(str(tmp_path / "lib"), tmp_path / "site", executor="inprocess")
    index = _read(tmp_path / "site" / "index.html")
    assert "The library is empty" in index and "No environment matches these filters" not in index


def test_what_is_inspected_is_never_inside_out_nor_out_inside_it(library: Path, runs: list[Path],
                                                                   tmp_path: Path) -> None:
    out = tmp_path / "site_nest"
    build_site("library-loans", out, executor="inprocess", gate="off", rows=0)
    nested = out / "lib"
    shutil.copytree(library, nested)
    result = CliRunner().invoke(cli, ["inspect", str(nested), "--out", str(out), "--executor", "inprocess",
                                      "--gate", "off"])
    assert result.exit_code == 1 and "which is being inspected" in result.output, result.output
    assert (nested / "specs").is_dir() and (nested / "catalog.sqlite").is_file()  # the library is still there
    run_inside = out / "run"
    shutil.copytree(runs[0], run_inside)
    shutil.rmtree(nested)
    with pytest.raises(FileExistsError, match="which is being inspected"):
        build_site(str(library), out, runs=[run_inside], executor="inprocess", gate="off", rows=0)
    assert (run_inside / "results.jsonl").is_file()
    for inside in (library / "site", runs[0] / "site", library):
        with pytest.raises(FileExistsError, match="which is being inspected"):
            build_site(str(library), inside, runs=runs, executor="inprocess", gate="off", rows=0)
        assert not (inside / "index.html").exists()
    assert not [p for p in library.iterdir() if p.name.startswith((".site", "site"))]


def test_the_site_gets_the_umask_mode_and_links_a_copy_of_each_runs_report(library: Path, runs: list[Path],
                                                                           tmp_path: Path) -> None:
    bare = tmp_path / "bare-run"  # a run folder without its report.html
    shutil.copytree(runs[1], bare)
    (bare / "report.html").unlink()
    old = os.umask(0o027)
    try:
        build_site(str(library), tmp_path / "site", runs=[runs[0], bare], executor="inprocess", gate="off", rows=0)
    finally:
        os.umask(old)
    out = tmp_path / "site"
    assert stat.S_IMODE(out.stat().st_mode) == 0o750  # 0777 & ~umask, not mkdtemp's 0700
    run_index = _read(out / "runs" / runs[0].name / "index.html")
    (href,) = re.findall(r'<a href="([^"]+)">its own report</a>', run_index)
    assert not href.startswith(("file:", "/")) and "://" not in href  # relative: works over HTTP, when moved
    copied = out / "runs" / runs[0].name / href
    assert copied.read_bytes() == (runs[0] / "report.html").read_bytes()
    bare_index = _read(out / "runs" / "bare-run" / "index.html")
    assert "its own report" not in bare_index and "file:" not in bare_index


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


def test_a_scenario_tasks_simulated_user_is_on_its_card(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["inspect", "shop-support", "--out", str(tmp_path / "shop"), "--gate", "off",
                                      "--executor", "inprocess"])
    assert result.exit_code == 0, result.output
    page = _read(tmp_path / "shop" / "envs" / "shop-support.html")
    card = page[page.index('id="task-cancel-declined"'):]
    assert "simulated user" in card and "knows order number|order code: C-3002" in card
    assert "asked to confirm: no" in card and "goal: You wonder how much order C-3002 cost" in card
    assert page.count("simulated user") == 4  # every task of the example has a scenario

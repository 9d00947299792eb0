"""A corrupt spec file in a library is flagged everywhere: ``list`` and ``stats`` name it with the reason,
``generate`` redoes its document (the file kept as ``.json.corrupt``), ``eval`` skips it with a warning
instead of refusing the library. Intact files are known good from their hash, unparsed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from envgen.cli import cli
from envgen.generate import GenerateConfig, run_generate
from envgen.library import Library
from tests.envgen.test_generate import FixtureProposer, _docs

CORRUPTIONS = {
    "truncated": lambda text: text[: len(text) // 2],
    "not a spec": lambda text: json.dumps({"id": "fixture-0", "tools": "none"}),
    "another id": lambda text: text.replace('"id": "fixture-0"', '"id": "fixture-9"', 1),
    "missing": None,
}


def _library(root: Path) -> tuple[GenerateConfig, FixtureProposer, list]:
    docs = _docs(3)
    cfg = GenerateConfig(proposer="fixture", out=root, n=3, max_retries=0, validation="inprocess")
    prop = FixtureProposer()
    run_generate(cfg, progress=False, proposer=prop, docs=docs)
    return cfg, prop, docs


def _corrupt(root: Path, how: str) -> Path:
    path = root / "specs" / "fixture-0.json"
    change = CORRUPTIONS[how]
    if change is None:
        path.unlink()
    else:
        path.write_text(change(path.read_text()))
    return path


@pytest.mark.parametrize("how", sorted(CORRUPTIONS))
def test_list_and_stats_flag_a_corrupt_spec_file_with_its_reason(tmp_path: Path, how: str) -> None:
    root = tmp_path / "lib"
    _library(root)
    _corrupt(root, how)
    listed = CliRunner().invoke(cli, ["list", str(root)])
    assert listed.exit_code == 0, listed.output
    assert "fixture-0 (corrupt spec file)" in listed.output and "1 corrupt spec file" in listed.output
    rows = {r["id"]: r for r in json.loads(CliRunner().invoke(cli, ["list", str(root), "--json"]).output)}
    assert rows["fixture-0"]["corrupt"] and rows["fixture-1"]["corrupt"] is None
    expected = {"truncated": "does not load", "not a spec": "does not load", "another id": "holds the environment",
                "missing": "is missing"}[how]
    assert expected in rows["fixture-0"]["corrupt"]
    stats = CliRunner().invoke(cli, ["stats", str(root), "--json"])
    assert json.loads(stats.output)["corrupt"].keys() == {"fixture-0"}
    text = CliRunner().invoke(cli, ["stats", str(root)]).output
    assert "corrupt spec files" in text and "fixture-0" in text and expected in text


def test_generate_redoes_the_document_of_a_corrupt_spec_file(tmp_path: Path) -> None:
    root = tmp_path / "lib"
    cfg, prop, docs = _library(root)
    path = _corrupt(root, "truncated")
    broken = path.read_text()
    summary = run_generate(cfg, progress=False, proposer=prop, docs=docs)
    assert summary.redone_corrupt.keys() == {"fixture-0"} and "does not load" in summary.redone_corrupt["fixture-0"]
    assert summary.attempted == 1 and summary.accepted == 1 and summary.skipped_resumed == 2
    assert (root / "specs" / "fixture-0.json.corrupt").read_text() == broken  # kept to look at
    with Library.open_readonly(root) as lib:
        assert lib.corrupt_specs() == {} and len(lib) == 3
        lib.load("fixture-0")
    again = run_generate(cfg, progress=False, proposer=prop, docs=docs)  # nothing left to redo
    assert again.attempted == 0 and again.redone_corrupt == {}


def test_eval_skips_a_corrupt_spec_file_with_a_warning(tmp_path: Path) -> None:
    root = tmp_path / "lib"
    _library(root)
    _corrupt(root, "not a spec")
    result = CliRunner().invoke(cli, ["eval", "--policy", "scripted", "--model", "reference", "--suite",
                                      f"library:{root}", "--out", str(tmp_path / "run"), "--executor", "inprocess",
                                      "--no-progress", "--bootstrap", "50"])
    assert result.exit_code == 0, result.output
    assert "skipped 1 environment whose spec file is corrupt (fixture-0: " in result.output
    records = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert {r["env_id"] for r in records} == {"fixture-1", "fixture-2"} and all(r["passed"] for r in records)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert list(summary["runs"][f"library:{root}"]["skipped"]) == ["fixture-0"]


def test_an_intact_spec_file_is_known_good_without_parsing_it(tmp_path: Path, monkeypatch) -> None:
    import envgen.library_health as health

    root = tmp_path / "lib"
    _library(root)
    _corrupt(root, "truncated")
    parsed: list[str] = []
    real = health.parse_spec
    monkeypatch.setattr(health, "parse_spec", lambda text, source=None: parsed.append(source) or real(text, source))
    with Library.open_readonly(root) as lib:
        assert lib.corrupt_specs().keys() == {"fixture-0"}
    assert parsed == ["fixture-0.json"]  # the two intact files matched their catalog hash


def test_a_catalog_id_that_names_a_file_elsewhere_is_refused(tmp_path: Path) -> None:
    with Library(tmp_path / "lib") as lib:
        for bad in ("../../etc/passwd", "a/b", "..", ""):
            with pytest.raises(ValueError, match="cannot name a file of the library"):
                lib.spec_path(bad)
            assert lib.gate_report(bad) is None

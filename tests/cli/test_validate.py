"""``envwright validate``: accepted specs exit 0, any rejection exits 1 with its reasons."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from envgen.cli import cli


def test_accepts_a_good_spec(good_spec: Path) -> None:
    result = CliRunner().invoke(cli, ["validate", str(good_spec)])
    assert result.exit_code == 0, result.output
    assert "accepted" in result.output
    assert "1 accepted, 0 rejected" in result.output


def test_rejects_a_wrong_reference_with_its_reason(good_spec: Path, wrong_reference_spec: Path) -> None:
    result = CliRunner().invoke(cli, ["validate", "--executor", "inprocess", str(good_spec),
                                      str(wrong_reference_spec)], env={"COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    assert "1 accepted, 1 rejected" in result.output
    assert "rule 3 (reference)" in result.output
    assert "expected [[3]], got [[2]]" in result.output


def test_rejects_an_unparsable_spec_with_every_reason(unparsable_spec: Path) -> None:
    result = CliRunner().invoke(cli, ["validate", str(unparsable_spec)], env={"COLUMNS": "200"})
    assert result.exit_code == 1
    assert "title: required field is missing" in result.output
    assert "unknown check kind" in result.output


def test_json_output(good_spec: Path, wrong_reference_spec: Path) -> None:
    result = CliRunner().invoke(cli, ["validate", "--json", "--executor", "inprocess", str(good_spec),
                                      str(wrong_reference_spec)])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["accepted"] == 1 and report["rejected"] == 1
    by_id = {r["spec_id"]: r for r in report["results"]}
    assert by_id["cli-test.lending"]["accepted"] is True
    bad = by_id["cli-test.wrong-reference"]
    assert bad["accepted"] is False
    assert [r["code"] for r in bad["reasons"]] == ["reference_check_failed"]


def test_directory_of_specs(tmp_path: Path, good_spec: Path) -> None:
    folder = tmp_path / "lib"
    folder.mkdir()
    shutil.copy(good_spec, folder / "a.json")
    shutil.copy(good_spec, folder / "b.json")
    (folder / "notes.txt").write_text("not a spec")
    result = CliRunner().invoke(cli, ["validate", "--json", "--executor", "inprocess", str(folder)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [Path(r["input"]).name for r in report["results"]] == ["a.json", "b.json"]


def test_missing_input_is_a_rejection(good_spec: Path) -> None:
    result = CliRunner().invoke(cli, ["validate", "--json", "--executor", "inprocess", str(good_spec),
                                      "no-such-spec-anywhere"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    missing = report["results"][1]
    assert missing["accepted"] is False
    assert "no spec file or shipped example named 'no-such-spec-anywhere'" in missing["reasons"][0]["message"]


def test_needs_an_input() -> None:
    result = CliRunner().invoke(cli, ["validate"])
    assert result.exit_code == 2
    assert "--all-examples" in result.output

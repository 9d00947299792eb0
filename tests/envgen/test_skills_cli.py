"""`envwright skills list|show|stats|export|simulate` through the root command."""

from __future__ import annotations

from click.testing import CliRunner

from envgen.cli import cli


def _run(*args: str):
    return CliRunner(env={"COLUMNS": "250"}).invoke(cli, list(args), catch_exceptions=False)


def test_skills_commands(tmp_path):
    res = _run("skills", "list")
    assert res.exit_code == 0 and "ledger-invariants" in res.output
    res = _run("skills", "show", "ledger-invariants", "--level", "rules")
    assert res.exit_code == 0 and "Rules:" in res.output and "validator" in res.output
    assert "structure required of a blueprint" in res.output and "adjust" in res.output
    res = _run("skills", "stats")
    assert res.exit_code == 0 and "active skills: 12" in res.output
    out = tmp_path / "mine"
    res = _run("skills", "export", str(out))
    assert res.exit_code == 0 and (out / "records-crud" / "SKILL.md").exists()
    res = _run("skills", "list", "--dir", str(out))
    assert res.exit_code == 0 and "records-crud" in res.output


def test_skills_simulate(tmp_path):
    res = _run("skills", "simulate", "--out", str(tmp_path / "sim"), "--rounds", "5", "--seed", "2")
    assert res.exit_code == 0, res.output
    assert "target 0.4-0.6: PASS" in res.output.replace("\n", " ")
    assert (tmp_path / "sim" / "evolution.log").exists()

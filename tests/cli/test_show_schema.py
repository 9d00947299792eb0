"""``envwright show`` and ``envwright schema``."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from envgen.cli import cli
from gym_envs.cli import check_summary, format_call, locate_spec
from tests.cli.specs import lending_spec, write_spec


def test_show_prints_tools_tables_and_tasks(good_spec: Path) -> None:
    result = CliRunner().invoke(cli, ["show", str(good_spec)], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Lending Desk" in out and "cli-test.lending" in out
    for tool in ("find_book", "borrow_book", "list_loans"):
        assert tool in out
    assert "member_id*: integer" in out
    for table, count in (("books", 3), ("members", 2), ("loans", 1)):
        assert re.search(rf"{table}\s*│\s*{count}\s*│", out), table
    assert "read_then_write" in out and "Member 7 wants to borrow 'Dune'. Do it." in out
    assert 'borrow_book {"member_id": 7, "book_id": 3}' in out
    assert 'reply_contains: any of ["2", "two"]' in out


def test_show_json(good_spec: Path) -> None:
    result = CliRunner().invoke(cli, ["show", "--json", "--executor", "inprocess", str(good_spec)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["id"] == "cli-test.lending"
    assert data["example"] is None
    assert [t["name"] for t in data["tools"]] == ["find_book", "borrow_book", "list_loans"]
    params = data["tools"][1]["parameters"]
    assert params[0] == {"name": "member_id", "type": "integer", "required": True, "description": "",
                         "default": None}
    assert {t["name"]: t["rows"] for t in data["tables"]} == {"books": 3, "members": 2, "loans": 1}
    assert data["tables_error"] is None
    task = data["tasks"][0]
    assert task["id"] == "borrow" and task["kind"] == "read_then_write" and len(task["turns"]) == 2
    assert task["turns"][0]["checks"][1]["summary"] == "SELECT count(*) FROM loans = [[2]]"
    assert task["turns"][0]["reference"][1] == {"name": "borrow_book",
                                                "arguments": {"member_id": 7, "book_id": 3}}


def test_show_one_task_and_rows(good_spec: Path) -> None:
    result = CliRunner().invoke(cli, ["show", "--task", "author", "--rows", "5", "--executor", "inprocess",
                                      str(good_spec)], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert "Who wrote 'Ulysses'?" in result.output
    assert "Member 7 wants" not in result.output
    assert "Frank Herbert" in result.output  # a row of books


def test_show_unknown_task(good_spec: Path) -> None:
    result = CliRunner().invoke(cli, ["show", "--task", "nope", "--executor", "inprocess", str(good_spec)])
    assert result.exit_code == 2
    assert "borrow" in result.output and "author" in result.output


def test_show_unknown_path() -> None:
    result = CliRunner().invoke(cli, ["show", "surely-not-a-spec.json"])
    assert result.exit_code == 1
    assert "no spec file or shipped example named 'surely-not-a-spec.json'" in result.output


def test_show_invalid_spec_lists_problems(unparsable_spec: Path) -> None:
    result = CliRunner().invoke(cli, ["show", str(unparsable_spec)])
    assert result.exit_code == 1
    assert "title: required field is missing" in result.output


def test_show_state_that_does_not_build(tmp_path: Path) -> None:
    spec = lending_spec()
    spec["state"]["seed_sql"] = "INSERT INTO no_such_table VALUES (1);"
    path = write_spec(tmp_path / "broken_state.json", spec)
    result = CliRunner().invoke(cli, ["show", "--json", "--executor", "inprocess", str(path)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["tables"] is None and data["tables_error"]


def test_check_summary_and_format_call() -> None:
    assert check_summary({"kind": "unchanged", "tables": []}) == "all tables"
    assert check_summary({"kind": "calls", "require": ["a"], "forbid": ["b"]}) == "require a; forbid b"
    python = {"kind": "python", "code": "def check(db):\n    return True\n"}
    assert check_summary(python) == "def check(db) … (2 lines)"
    assert check_summary({"kind": "sql", "query": "SELECT 1", "expect": [[1]], "ordered": True}) == \
        "SELECT 1 = [[1]] (ordered)"
    assert format_call("f", {}) == "f"
    assert format_call("f", {"a": 1}) == 'f {"a": 1}'


def test_locate_spec_file(good_spec: Path) -> None:
    located = locate_spec(str(good_spec))
    assert located.path == good_spec and located.example is None
    assert located.default_executor == "worker"


def test_schema_is_json_schema() -> None:
    result = CliRunner().invoke(cli, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert "properties" in schema
    assert {"id", "tools", "tasks", "state", "code"} <= set(schema["properties"])


def test_schema_out_file(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "envspec.schema.json"
    result = CliRunner().invoke(cli, ["schema", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["properties"]["tasks"]


def test_schema_of_one_spec_version() -> None:
    every = json.loads(CliRunner().invoke(cli, ["schema"]).stdout)
    v1 = json.loads(CliRunner().invoke(cli, ["schema", "--spec-version", "1"]).stdout)
    assert "policy" in every["properties"] and "policy" not in v1["properties"]
    assert v1["properties"]["spec_version"]["const"] == 1
    bad = CliRunner().invoke(cli, ["schema", "--spec-version", "3"])
    assert bad.exit_code == 2 and "--spec-version" in bad.output

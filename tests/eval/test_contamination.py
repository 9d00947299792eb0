"""Contamination: exact numbers on a tiny constructed case, the CLI, and BFCL when installed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from corpora.similarity import jaccard, word_shingles
from eval.cli import contamination_cmd
from eval.contamination import contamination_markdown, contamination_report, text_overlap
from eval.suites import SpecSuite
from gym_envs.spec import parse_spec


def _tool(name: str, *params: str) -> dict:
    return {"name": name, "description": name,
            "parameters": {"type": "object", "properties": {p: {"type": "string"} for p in params}}}


def _spec(env_id: str, tools: list[dict], instructions: list[str]):
    code = "\n".join(f"def {t['name']}(db, {', '.join(t['parameters']['properties'])}):\n    return 1"
                     for t in tools)
    return parse_spec({
        "id": env_id, "title": env_id, "state": {"schema_sql": "CREATE TABLE t (x INTEGER);"}, "tools": tools,
        "code": code,
        "tasks": [{"id": f"t{i}", "kind": "read", "turns": [{"instruction": text, "checks": [
            {"kind": "reply_contains", "any_of": ["x"]}]}]} for i, text in enumerate(instructions)]})


def test_tiny_constructed_case_exact_numbers() -> None:
    a = SpecSuite("a", [_spec("lib-a", [_tool("find_book", "title"), _tool("borrow_book", "member_id", "book_id")],
                              ["Member 7 wants to borrow the book Dune today", "Completely unrelated words here"])])
    b = SpecSuite("b", [_spec("bench-b", [_tool("find_book", "title"), _tool("borrow_book", "member_id"),
                                          _tool("list_loans", "member_id")],
                              ["Member 7 wants to borrow the book Dune today please", "Nothing in common at all"])])
    r = contamination_report(a, b, top=3)
    assert r["tool_names"]["shared"] == ["borrow_book", "find_book"]
    assert r["tool_names"]["jaccard"] == pytest.approx(2 / 3) and r["tool_names"]["share_of_a"] == 1.0
    assert r["schemas"]["shared"] == [{"name": "find_book", "parameters": ["title"]}]
    assert r["schemas"]["jaccard"] == pytest.approx(1 / 4) and r["schemas"]["share_of_a"] == 0.5
    tx = r["task_text"]
    assert tx["max"] == pytest.approx(7 / 8)  # 7 shared 3-shingles of 7 and 8
    assert tx["mean"] == pytest.approx((7 / 8 + 0.0) / 2)
    assert tx["at_or_above_threshold"] == 1 and tx["share_at_or_above_threshold"] == 0.5
    assert tx["closest_pairs"][0] == {"similarity": 0.875, "a": "a/lib-a/t0", "b": "b/bench-b/t0",
                                      "a_text": "Member 7 wants to borrow the book Dune today",
                                      "b_text": "Member 7 wants to borrow the book Dune today please"}
    assert len(tx["closest_pairs"]) == 1  # only pairs that share a shingle are candidates
    md = contamination_markdown(r)
    assert "| tool names | 2 | 3 | 2 | 0.667 | 1.000 |" in md and "0.875" in md


def test_text_overlap_matches_brute_force() -> None:
    a = [("a0", "one two three four five"), ("a1", "six seven eight"), ("a2", "two three four nine")]
    b = [("b0", "one two three four"), ("b1", "seven eight six"), ("b2", "three four nine ten")]
    got = text_overlap(a, b, k=2, top=20)
    best = [max(jaccard(word_shingles(x, 2), word_shingles(y, 2)) for _, y in b) for _, x in a]
    assert got["max"] == pytest.approx(max(best)) and got["mean"] == pytest.approx(sum(best) / 3)


def test_contamination_cli_on_a_library(tmp_path: Path) -> None:
    from envgen.library import Library
    from tests.fixtures.library_spec import SPEC

    Library(tmp_path / "lib").add(parse_spec(SPEC))
    res = CliRunner().invoke(contamination_cmd, [str(tmp_path / "lib"), "--suite", "examples", "--top", "3",
                                                 "--out", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "c" / "contamination.json").read_text())
    assert report["a"] == f"library:{tmp_path / 'lib'}" and report["b"] == "examples"
    assert report["tool_names"]["a"] == 3 and 0.0 <= report["task_text"]["mean"] <= report["task_text"]["max"]
    assert (tmp_path / "c" / "contamination.md").read_text().startswith("# Contamination")
    res = CliRunner().invoke(contamination_cmd, [str(tmp_path / "missing")])
    assert res.exit_code == 1 and "no library" in res.output


def test_contamination_only_reads_the_library(tmp_path: Path) -> None:
    from envgen.library import Library
    from tests.envgen.test_library_readonly import _tree
    from tests.fixtures.library_spec import SPEC

    with Library(tmp_path / "lib") as lib:
        lib.add(parse_spec(SPEC))
    before = _tree(tmp_path / "lib")
    report = contamination_report(f"library:{tmp_path / 'lib'}", "examples")
    assert report["tool_names"]["a"] == 3
    assert _tree(tmp_path / "lib") == before  # no split stored, no file beside the catalog
    with Library.open_readonly(tmp_path / "lib") as lib:
        assert lib.rows()[0]["split"] is None


def test_examples_against_bfcl_base() -> None:
    pytest.importorskip("bfcl_eval")
    r = contamination_report("examples", "bfcl:base", top=5)
    assert r["b"] == "bfcl:base" and r["task_text"]["b_tasks"] == 200
    assert r["task_text"]["max"] < 0.5  # hand-written examples do not copy BFCL

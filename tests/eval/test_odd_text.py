r"""Odd text never loses a run: a lone surrogate in a tool result (issue 20, class 4).

Before: ``envwright eval`` played every episode, then died writing ``results.jsonl`` (UTF-8 cannot
encode ``\ud800``), leaving a folder with part of the records and no summary or reports; ``envwright
play`` crashed printing the observation. Now JSON is written with ``\udXXX`` escapes (read back to the
same string), the reports show the escape, the folder is complete or untouched, and play shows it.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from envgen.library import Library
from eval import report
from eval.report import json_text, load_run, write_run
from eval.runner import EvalConfig, run_eval
from gym_envs.spec import parse_spec, save_spec
from tests.fixtures.library_spec import SPEC

ROOT = Path(__file__).resolve().parents[2]


def odd_spec() -> dict[str, Any]:
    """The library spec whose ``find_book`` adds a note holding a lone surrogate to each result."""
    data = copy.deepcopy(SPEC)
    data["id"], data["title"] = "odd-text", "Odd library"
    data["code"] = data["code"].replace(
        "    return rows\ndef borrow_book",
        '    return [dict(r, note="odd " + chr(0xD800)) for r in rows]\ndef borrow_book')
    assert "chr(0xD800)" in data["code"]
    return data


def _holds_surrogate(obj: Any) -> bool:
    if isinstance(obj, str):
        return "\ud800" in obj
    if isinstance(obj, dict):
        return any(_holds_surrogate(v) for v in obj.values())
    if isinstance(obj, list):
        return any(_holds_surrogate(v) for v in obj)
    return False


def test_json_text_escapes_lone_surrogates_and_reads_back_the_same() -> None:
    value = {"text": "a\ud800b", "ok": "é漢", "nested": ["\udfff"]}
    text = json_text(value)
    text.encode("utf-8")  # no UnicodeEncodeError
    assert "\\ud800" in text and "é漢" in text and json.loads(text) == value


def test_eval_writes_every_record_summary_and_report_when_one_is_odd(tmp_path: Path) -> None:
    lib = Library(tmp_path / "lib")
    lib.add(parse_spec(odd_spec()))
    plain = copy.deepcopy(SPEC)
    plain["id"], plain["title"] = "plain-text", "Plain library"
    plain["tasks"][0]["turns"][0]["instruction"] = "Another member, same ask: lend 'Dune' to member 7."
    lib.add(parse_spec(plain))
    out = tmp_path / "run"
    run = run_eval(EvalConfig(policy="scripted", model="reference", suites=[f"library:{tmp_path / 'lib'}"], out=out,
                              executor="inprocess", progress=False, n_boot=50, write_back=False))
    assert len(run.records) == 2
    assert {p.name for p in out.iterdir()} == {"results.jsonl", "summary.json", "report.md", "report.html"}
    records, summary = load_run(out)
    assert [r["env_id"] for r in records] == ["odd-text", "plain-text"]
    assert _holds_surrogate(records[0]) and not _holds_surrogate(records[1])  # kept exactly, read back the same
    assert records == json.loads(json.dumps(run.records, default=str))
    assert summary["run"]["episodes"] == 2
    assert "\\ud800" in (out / "report.html").read_text(encoding="utf-8")


def test_a_failed_write_leaves_no_partial_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    records = [{"episode_id": "x", "suite": "s", "env_id": "e", "task_id": "t", "passed": True, "turns": []}]
    real_replace = os.replace
    calls: list[str] = []

    def flaky(src: Any, dst: Any) -> None:
        calls.append(str(dst))
        if len(calls) == 2:
            raise OSError("disk full")
        real_replace(src, dst)

    monkeypatch.setattr(report.os, "replace", flaky)
    with pytest.raises(OSError, match="disk full"):
        write_run(tmp_path / "new", records, {"suites": {}})
    assert not (tmp_path / "new").exists()


def test_a_report_that_cannot_be_rendered_does_not_lose_the_records(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: Any) -> str:
        raise ValueError("cannot draw this")

    monkeypatch.setattr(report, "render_html", broken)
    records = [{"episode_id": "x", "passed": True}]
    files = write_run(tmp_path / "run", records, {"suites": {}})
    assert load_run(tmp_path / "run")[0] == records
    assert "could not be rendered (ValueError: cannot draw this)" in files["html"].read_text()


def test_play_shows_odd_text_instead_of_crashing(tmp_path: Path) -> None:
    spec = tmp_path / "odd.json"
    save_spec(parse_spec(odd_spec()), spec)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "PYTHONUTF8")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, "-m", "envgen", "play", str(spec), "--executor", "inprocess"],
                          input=b'find_book {"title": "Dune"}\nDone.\n', capture_output=True, env=env, cwd=ROOT,
                          timeout=120)
    out = proc.stdout.decode("utf-8")
    assert "Traceback" not in proc.stderr.decode("utf-8", "replace"), proc.stderr
    assert '"note": "odd \\ud800"' in out
    assert "[turn 1/2] FAILED" in out and proc.returncode == 1

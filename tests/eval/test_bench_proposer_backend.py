"""``envwright bench proposer`` when the model backend fails: no completion is not a parse, and a setup whose
every proposal failed in the backend is an error naming it, not a row of results (no model needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from envgen.backends.scripted import ScriptedBackend
from envgen.errors import BackendNotInstalledError


class Flaky(ScriptedBackend):
    """Writes ``text`` for every other prompt; the backend fails (no completion) for the rest."""

    def __init__(self, text: str) -> None:
        super().__init__("flaky", completions=lambda _p: text)
        self.calls = 0

    def _generate(self, prompts: list[Any], **kw: Any) -> list[Any]:
        from envgen.backends import Completion

        out = super()._generate(prompts, **kw)
        return [c if i % 2 == 0 else Completion("", finish_reason="error", error="CUDA error: device lost")
                for i, c in enumerate(out)]


class MissingGrammar(ScriptedBackend):
    """Constrained decoding whose dependency is missing: every generate call raises."""

    def __init__(self) -> None:
        super().__init__("no-grammar", completions=lambda _p: "{}")

    def _generate(self, prompts: list[Any], **kw: Any) -> list[Any]:
        raise BackendNotInstalledError("constrained decoding (xgrammar)", "apache_tvm_ffi", "constrained")


def _invoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: Any, setups: str = "free") -> Any:
    import envgen.backends
    import envgen.proposers.llm  # imported first: it binds the real make_backend, which the bench's is not
    from envgen.cli import cli

    monkeypatch.setattr(envgen.backends, "make_backend", lambda *a, **kw: backend)
    return CliRunner().invoke(cli, ["bench", "proposer", "--model", "m", "--stdlib-docs", "4", "--other-docs", "0",
                                    "--setups", setups, "--out", str(tmp_path / "out")])


def test_a_setup_whose_every_proposal_failed_in_the_backend_is_an_error(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    result = _invoke(tmp_path, monkeypatch, MissingGrammar(), setups="blueprint")
    assert result.exit_code == 1, result.output
    assert "every one of the 4 proposals failed in the model backend" in result.output
    assert "apache_tvm_ffi" in result.output  # the backend's own error, named
    saved = tmp_path / "out" / "proposer.json"
    assert not saved.exists() or "blueprint" not in json.loads(saved.read_text()).get("setups", {})


def test_parsed_counts_only_what_the_model_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _invoke(tmp_path, monkeypatch, Flaky('{"not": "a spec"}'))
    assert result.exit_code == 0, result.output
    assert "warning: setup free: 2 of 4 proposals failed in the model backend" in result.output
    r = json.loads((tmp_path / "out" / "proposer.json").read_text())["setups"]["free"]["stdlib (held out)"]
    assert r["documents"] == 4 and r["backend_failures"] == 2
    assert r["parsed"] == 2  # the two completions the model wrote (JSON objects); the failures wrote nothing


def test_a_result_of_the_earlier_format_still_renders(tmp_path: Path) -> None:
    """The table and the plot read results written before ``too_long``, ``backend_failures`` and ``realism``."""
    pytest.importorskip("matplotlib")
    from eval.bench.proposer import _table, plot

    row = {"documents": 2, "parsed": 2, "compiled": 2, "accepted": 1, "accepted_share": 0.5,
           "constrained_parse_failures": 0, "mean_grounding": 0.4, "distinct_tool_sets": 1,
           "tokens_per_accepted": 900.0, "completion_tokens": 700, "generation_tokens_per_s": 450.0,
           "cut_at_limit": 0, "outcomes": {"ok": 1, "compile": 1}, "gate_rejections": {}}
    old = {"model": "m", "warm": None, "seed": 0, "temperature": 0.7, "document_sets": ["stdlib (held out)"],
           "documents": {"stdlib (held out)": ["a", "b"]},
           "setups": {"blueprint": {"structure": "blueprint", "constrained": True, "generation_seconds": 3.1,
                                    "stdlib (held out)": row, "examples": []}}}
    _table(old)
    assert plot(old, tmp_path / "p.png") is not None and (tmp_path / "p.png").stat().st_size > 0

"""``envwright bench proposer``'s world setups, with a scripted model that writes what the AST world writer writes
(no model needed): the world stream runs end to end, the accepted environments' realism is reported beside
acceptance and grounding, a warm start's training documents are left out, and ``--resume`` keeps what was run."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from envgen.backends.scripted import ScriptedBackend
from tests.envgen.test_blueprint import JS

pytest.importorskip("xgrammar")


class WorldWriter(ScriptedBackend):
    """Answers a world prompt with the AST world writer's blueprint of the document it names."""

    def __init__(self, docs: dict[str, Any]) -> None:
        super().__init__("world-writer", completions=self._answer)
        self.docs = docs
        self.asked: list[str] = []

    def _answer(self, prompt: Any) -> str:
        from envgen.proposers.world.writer import write_world

        text = prompt[-1]["content"] if isinstance(prompt, list) else str(prompt)
        path = re.findall(r"Document \(([^)]*)\):", text)[-1]
        self.asked.append(path)
        return write_world(self.docs[path], seed=0).blueprint.to_json()


def _invoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: Any, *extra: str) -> Any:
    import envgen.backends
    import envgen.proposers.llm  # imported first: it binds the real make_backend, which the bench's is not
    from envgen.cli import cli

    monkeypatch.setattr(envgen.backends, "make_backend", lambda *a, **kw: backend)
    js = tmp_path / "js"
    js.mkdir(exist_ok=True)
    (js / "queue.js").write_text(JS.text)
    args = ["bench", "proposer", "--model", "m", "--stdlib-docs", "2", "--other-docs", "1", "--other-corpus",
            f"tree:{js}", "--out", str(tmp_path / "out"), *extra]
    return CliRunner(env={"COLUMNS": "200"}).invoke(cli, args)


def _docs() -> dict[str, Any]:
    from corpora import SelectConfig, load_corpus, select_documents
    from tests.envgen.test_blueprint import JS

    pool = select_documents(load_corpus("stdlib"), SelectConfig(min_stateful_score=0.0, sample=400, seed=0,
                                                                 dedup="exact"))
    return {**{str(d.path): d for d in pool}, "queue.js": JS}


@pytest.mark.slow
def test_world_setups_report_acceptance_grounding_and_realism(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    backend = WorldWriter(_docs())
    warm = tmp_path / "warm"
    (warm / "model").mkdir(parents=True)
    first = _invoke(tmp_path, monkeypatch, backend, "--setups", "world", "--stdlib-docs", "3")
    assert first.exit_code == 0, first.output
    result = json.loads((tmp_path / "out" / "proposer.json").read_text())
    stdlib = result["documents"]["stdlib (held out)"]
    # a world warm start that trained on the first of those documents: it is left out of every set
    (warm / "holdout.json").write_text(json.dumps({"structure": "world", "trained": [stdlib[0]], "held_out": []}))
    res = _invoke(tmp_path, monkeypatch, backend, "--setups", "world,world-warm", "--world-warm",
                  str(warm / "model"), "--stdlib-docs", "3", "--resume")
    assert res.exit_code == 0, res.output
    result = json.loads((tmp_path / "out" / "proposer.json").read_text())
    assert result["documents"]["stdlib (held out)"] == stdlib[1:]
    assert list(result["setups"]) == ["world", "world-warm"]  # --resume kept the world setup, ran the warm one
    assert len(backend.asked) == 4 + 3
    for setup in ("world", "world-warm"):
        by_set = result["setups"][setup]
        assert by_set["structure"] == "world" and by_set["constrained"]
        for name in result["document_sets"]:
            r = by_set[name]
            assert r["constrained_parse_failures"] == 0 and r["parsed"] == r["documents"] >= 1, (setup, name, r)
            assert r["accepted"] == r["documents"], r["gate_rejections"]
            assert r["mean_grounding"] is not None
            real = r["realism"]
            assert real["envs"] == r["accepted"] and real["tables_per_env"] >= 4
            assert real["policy_rules_per_env"] >= 5 and real["first_turn_words"] > 0
            assert real["crud_share"] is not None and real["slug_share"] is not None
    assert "Realism of the accepted environments: tree (not Python)" in res.output
    assert re.search(r"policy rules per env.*│ +\d+\.\d +│ +\d+\.\d", res.output)  # a column per setup
    again = _invoke(tmp_path, monkeypatch, backend, "--setups", "world")
    assert again.exit_code == 1 and "--resume" in again.output


def test_world_warm_without_its_model_says_which_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    res = _invoke(tmp_path, monkeypatch, WorldWriter({}), "--setups", "world-warm", "--warm", "x")
    assert res.exit_code == 1 and "world-warm needs --world-warm" in res.output


class Killed(WorldWriter):
    """A world writer whose run is killed (Ctrl-C) when it is asked for document number ``at`` (0-based)."""

    def __init__(self, docs: dict[str, Any], at: int) -> None:
        super().__init__(docs)
        self.at = at

    def _answer(self, prompt: Any) -> str:
        if len(self.asked) == self.at:
            raise KeyboardInterrupt
        return super()._answer(prompt)


@pytest.mark.slow
def test_a_killed_setup_resumes_from_the_first_document_not_written(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    docs = _docs()
    killed = _invoke(tmp_path, monkeypatch, Killed(docs, at=2), "--setups", "world", "--batch-size", "1")
    assert killed.exit_code != 0
    work = tmp_path / "out" / "work" / "world"
    assert len(list(work.glob("batch-*.json"))) == 2  # a file per finished batch
    plain = _invoke(tmp_path, monkeypatch, WorldWriter(docs), "--setups", "world", "--batch-size", "1")
    assert plain.exit_code == 1 and "--resume" in plain.output  # the unfinished run is not silently replaced
    backend = WorldWriter(docs)
    res = _invoke(tmp_path, monkeypatch, backend, "--setups", "world", "--batch-size", "1", "--resume")
    assert res.exit_code == 0, res.output
    assert len(backend.asked) == 1  # three documents, two already written
    result = json.loads((tmp_path / "out" / "proposer.json").read_text())
    assert sum(r["documents"] for k, r in result["setups"]["world"].items() if isinstance(r, dict) and
               "documents" in r) == 3
    assert all(r["accepted"] == r["documents"] for k, r in result["setups"]["world"].items()
               if isinstance(r, dict) and "documents" in r)


def test_backend_options_reach_the_engine_and_a_malformed_one_is_refused(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import envgen.backends
    import envgen.proposers.llm  # binds the real make_backend first, as _invoke says

    seen: list[dict[str, Any]] = []
    backend = WorldWriter(_docs())

    def make(name: Any, model: Any = None, **options: Any) -> Any:
        seen.append(options)
        return backend

    monkeypatch.setattr(envgen.backends, "make_backend", make)
    from envgen.cli import cli

    base = ["bench", "proposer", "--model", "m", "--stdlib-docs", "1", "--other-docs", "0", "--setups", "world",
            "--out", str(tmp_path / "out")]
    res = CliRunner().invoke(cli, [*base, "--backend-option", "gpu_memory_utilization=0.3",
                                   "--backend-option", "max_new_tokens=64"])
    assert res.exit_code == 0, res.output
    assert seen and seen[0]["gpu_memory_utilization"] == 0.3 and seen[0]["max_new_tokens"] == 64
    bad = CliRunner().invoke(cli, [*base, "--overwrite", "--backend-option", "gpu_memory_utilization"])
    assert bad.exit_code == 2 and "KEY=VALUE" in bad.output

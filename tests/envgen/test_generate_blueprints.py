"""``envwright generate`` with model-written blueprints: what is recorded, and failures that lose nothing.

* every attempt records its structure, grounding and the compiler's repairs; ``envwright stats``
  reports grounding per proposer, stream and structure;
* a backend that fails (a server down) is loud: the documents are not marked done, a run with only
  backend failures exits non-zero and says so, and re-running the same command retries them.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from envgen.generate import GenerateConfig, run_generate
from envgen.library import Library
from envgen.proposers.llm import LLMProposer
from envgen.stats import library_stats
from tests.envgen.test_blueprint import DOC, JS, bp


def _cfg(tmp_path: Path, **kw) -> GenerateConfig:
    return GenerateConfig(proposer="llm", backend="scripted", n=2, out=tmp_path / "lib", validation="inprocess",
                          max_retries=0, batch_size=2, proposer_options={"structure": "blueprint"}, **kw)


def test_blueprint_attempts_record_structure_grounding_and_repairs(tmp_path):
    prop = LLMProposer("scripted", backend_options={"completions": [bp().to_json(), bp().to_json()]},
                       structure="blueprint")
    summary = run_generate(_cfg(tmp_path), progress=False, proposer=prop, docs=[JS, DOC])
    assert summary.accepted == 2
    lib = Library(tmp_path / "lib")
    rows = {r["doc_id"]: r for r in lib.rows()}
    assert {r["structure"] for r in rows.values()} == {"blueprint"}
    assert rows[JS.id]["grounding"] > rows[DOC.id]["grounding"]  # the queue blueprint is about the queue
    attempts = {a["doc_id"]: a for a in lib.attempts()}
    assert attempts[JS.id]["structure"] == "blueprint" and attempts[JS.id]["grounding"] is not None
    assert json.loads(attempts[JS.id]["repairs"]) == json.loads(rows[JS.id]["repairs"])  # what the compiler did
    assert any("added" in r for r in json.loads(rows[JS.id]["repairs"]))
    st = library_stats(lib)
    [key] = st.grounding_by
    assert key == "llm:scripted / explore / blueprint" and st.grounding_by[key]["envs"] == 2


def test_backend_failures_are_not_marked_done_and_a_rerun_retries_them(tmp_path):
    state = {"up": False}

    def server(prompt):
        if not state["up"]:
            raise ConnectionError("cannot reach http://localhost:8000/v1")
        return bp().to_json()

    cfg = _cfg(tmp_path)
    down = LLMProposer("scripted", backend_options={"completions": server}, structure="blueprint")
    summary = run_generate(cfg, progress=False, proposer=down, docs=[JS, DOC])
    assert summary.attempted == 2 and summary.backend_failures == 2 and summary.only_backend_failures
    assert "cannot reach" in (summary.first_backend_error or "")
    assert Library(tmp_path / "lib").attempted_docs(cfg.run_id) == set()  # nothing counts as done
    state["up"] = True
    again = run_generate(cfg, progress=False, proposer=down, docs=[JS, DOC])
    assert again.skipped_resumed == 0 and again.accepted == 2  # the same command retried both documents
    third = run_generate(cfg, progress=False, proposer=down, docs=[JS, DOC])
    assert third.skipped_resumed == 2 and third.attempted == 0


def test_generate_command_exits_non_zero_when_the_server_is_down(tmp_path, monkeypatch):
    import socket

    from envgen.cli import cli

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "queue.js").write_text(JS.text)
    args = ["generate", "--corpus", str(corpus), "--proposer", "llm", "--backend", "openai", "--model", "m",
            "--backend-option", f"base_url=http://127.0.0.1:{port}/v1", "--backend-option", "max_retries=0",
            "--backend-option", "use_client=false", "--structure", "blueprint", "--n", "1",
            "--out", str(tmp_path / "lib")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code != 0
    said = " ".join(result.output.split())
    assert "1 of 1 documents failed in the model backend" in said and "re-run the same command" in said
    assert "cannot reach" in said
    lib = Library(tmp_path / "lib")
    [attempt] = lib.attempts()
    assert json.loads(attempt["codes"]) == ["generation"] and attempt["retries"] == 0  # no repair was tried
    assert lib.attempted_docs(attempt["run_id"]) == set()


def test_generate_command_writes_model_world_blueprints(tmp_path):
    """``--structure world``: the model's world blueprint (here the AST world writer's, replayed) is decoded
    under the world schema, compiled by the world compiler and accepted into the library."""
    from envgen.cli import cli
    from envgen.proposers.world.writer import write_world

    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "queue.js").write_text(JS.text)
    replies = tmp_path / "replies.jsonl"
    replies.write_text(json.dumps(write_world(JS, seed=0).blueprint.to_json()) + "\n")
    args = ["generate", "--corpus", str(corpus), "--proposer", "llm", "--backend", "scripted", "--model",
            str(replies), "--structure", "world", "--n", "1", "--max-retries", "0", "--out", str(tmp_path / "lib")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    [row] = Library(tmp_path / "lib").rows()
    spec = Library(tmp_path / "lib").load(row["id"])
    assert spec.spec_version == 2 and spec.id.startswith("llm-world-")

"""The generation pipeline with a stand-in proposer: validation, repair, library writes, resume."""

from __future__ import annotations

import copy
import json

from corpora import Document
from envgen.generate import GenerateConfig, run_generate
from envgen.library import Library
from envgen.proposers.base import Proposal, Proposer
from gym_envs.spec import parse_spec
from tests.fixtures.library_spec import SPEC


def _docs(n: int) -> list[Document]:
    return [Document.create(f"class Shelf{i}:\n    def add(self, x):\n        self.items.append(x)\n",
                            corpus="mem", path=f"shelf{i}.py") for i in range(n)]


class FixtureProposer(Proposer):
    """Emits the library spec (distinct per doc); docs listed in ``broken`` first get a bad check."""

    name = "fixture"
    can_repair = True

    def __init__(self, broken=(), hopeless=()):
        self.broken, self.hopeless = set(broken), set(hopeless)
        self.feedback: list[str] = []

    def _make(self, doc, bad: bool) -> Proposal:
        data = copy.deepcopy(SPEC)
        i = doc.path.removeprefix("shelf").removesuffix(".py")
        data["id"] = f"fixture-{i}"
        data["title"] = f"Library {i}"
        data["tasks"][0]["turns"][0]["instruction"] += f" (branch {i} of the city library network {i * 7})"
        data["tasks"][0]["turns"][1]["instruction"] += f" Branch code B{i}-{i * 13}."
        if bad:
            data["tasks"][0]["turns"][0]["checks"][0]["expect"] = [[5]]
        return Proposal(doc.id, parse_spec(data), completion_tokens=10, meta={"doc": doc})

    def propose_batch(self, docs, *, seed=0, skills=None):
        return [self._make(d, d.id in self.broken or d.id in self.hopeless) for d in docs]

    def repair_batch(self, items, *, seed=0):
        out = []
        for p, fb in items:
            self.feedback.append(fb)
            doc = p.meta["doc"]
            fixed = self._make(doc, doc.id in self.hopeless)
            fixed.retries = p.retries + 1
            out.append(fixed)
        return out


def test_pipeline_accepts_repairs_rejects_and_resumes(tmp_path):
    docs = _docs(4)
    prop = FixtureProposer(broken=[docs[1].id], hopeless=[docs[2].id])
    cfg = GenerateConfig(proposer="fixture", out=tmp_path / "lib", n=4, max_retries=1, validation="inprocess")
    summary = run_generate(cfg, progress=False, proposer=prop, docs=docs)
    assert summary.attempted == 4 and summary.accepted == 3
    assert summary.retries == 2 and summary.tokens > 0
    assert summary.rejected_by_reason == {"reference_check_failed": 1}
    assert any("fails on the reference trajectory" in fb for fb in prop.feedback)
    lib = Library(tmp_path / "lib")
    assert len(lib) == 3
    rejected = [a for a in lib.attempts() if not a["accepted"]]
    assert len(rejected) == 1 and "rule 3" in rejected[0]["reasons"]
    # a second run of the same configuration resumes: nothing left to do
    again = run_generate(cfg, progress=False, proposer=prop, docs=docs + _docs(5)[4:])
    assert again.skipped_resumed == 4 and again.attempted == 1 and again.accepted == 1


def test_pipeline_with_process_workers(tmp_path):
    docs = _docs(3)
    cfg = GenerateConfig(proposer="fixture", out=tmp_path / "lib", n=3, workers=2, validation="worker")
    summary = run_generate(cfg, progress=False, proposer=FixtureProposer(), docs=docs)
    assert summary.accepted == 3 and len(summary.validation_seconds) == 3


def test_config_errors_say_the_fix():
    import pytest

    with pytest.raises(ValueError, match="needs --backend"):
        GenerateConfig(proposer="llm")
    with pytest.raises(ValueError, match="workers"):
        GenerateConfig(workers=0)


def test_pipeline_on_local_ray(tmp_path):
    """--executor ray runs the same validation jobs as Ray tasks on a local Ray instance."""
    import pytest

    ray = pytest.importorskip("ray")
    docs = _docs(3)
    cfg = GenerateConfig(proposer="fixture", out=tmp_path / "lib", n=3, workers=2, executor="ray",
                         validation="inprocess")
    try:
        summary = run_generate(cfg, progress=False, proposer=FixtureProposer(broken=[docs[0].id]), docs=docs)
    finally:
        ray.shutdown()
    assert summary.attempted == 3 and summary.accepted == 3 and summary.retries == 1


def test_a_failed_commit_loses_nothing_and_the_run_resumes(tmp_path, monkeypatch):
    """Results are committed in batches: spec files first, then the batch's rows in one transaction. A run
    that dies between the two leaves spec files without rows; they are re-indexed on open, and the resumed
    run re-attempts their documents and re-adds them (not refused as duplicates of themselves)."""
    import pytest

    import envgen.library as library

    docs = _docs(5)
    cfg = GenerateConfig(proposer="fixture", out=tmp_path / "lib", n=5, validation="inprocess", commit_every=2)
    real_upsert, calls = library._upsert, []

    def dying_upsert(conn, table, rows):
        if table is library.ATTEMPTS:
            calls.append(len(rows))
            if len(calls) == 2:
                raise RuntimeError("killed before the second batch's commit")
        return real_upsert(conn, table, rows)

    monkeypatch.setattr(library, "_upsert", dying_upsert)
    with pytest.raises(RuntimeError, match="killed"):
        run_generate(cfg, progress=False, proposer=FixtureProposer(), docs=docs)
    monkeypatch.setattr(library, "_upsert", real_upsert)

    lib = Library(tmp_path / "lib")  # re-indexes the second batch's spec files
    assert len(lib) == 4 and len(lib.attempted_docs(cfg.run_id)) == 2
    summary = run_generate(cfg, progress=False, proposer=FixtureProposer(), docs=docs)
    assert summary.skipped_resumed == 2 and summary.attempted == 3 and summary.accepted == 3
    assert summary.duplicates == 0 and summary.rejected_by_reason == {}
    attempts = lib.attempts(cfg.run_id)
    assert len(attempts) == 5 and all(a["accepted"] for a in attempts)
    assert {a["env_id"] for a in attempts} == {r["id"] for r in lib.rows()}
    assert {r["run_id"] for r in lib.rows()} == {cfg.run_id}


def _stdlib_docs(n: int = 16) -> list[Document]:
    """The first ``n`` standard-library modules that define classes (read directly: fast)."""
    import sysconfig
    from pathlib import Path

    docs = []
    for p in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        text = p.read_text(encoding="utf-8", errors="replace")
        if "\nclass " in text and 2_000 < len(text) < 40_000:
            docs.append(Document.create(text, corpus="stdlib", path=p.name, language="python"))
        if len(docs) == n:
            break
    return docs


_KILLED_RUN = """
import sys, time
from pathlib import Path
import envgen.generate as g
from tests.envgen.test_generate import _stdlib_docs

job = g.static_job
def slow_job(*args):  # slow enough for the test to kill the run half-way
    time.sleep(0.15)
    return job(*args)
g.static_job = slow_job
cfg = g.GenerateConfig(out=Path(sys.argv[1]), n=16, commit_every=3, validation="inprocess")
g.run_generate(cfg, progress=False, docs=_stdlib_docs())
"""


def test_a_killed_run_loses_nothing_and_resumes_where_it_stopped(tmp_path):
    """SIGKILL a real generation run half-way; the resumed run skips exactly the committed documents, and
    afterwards every document has one attempt, every accepted attempt its env row and spec file, and
    every spec file its row."""
    import json
    import os
    import signal
    import sqlite3
    import subprocess
    import sys
    import time
    from pathlib import Path

    out = tmp_path / "lib"
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_RUN, str(out)], cwd=repo,
                            env={**os.environ, "PYTHONPATH": str(repo)})
    committed = 0
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            with sqlite3.connect(out / "catalog.sqlite") as db:
                committed = db.execute("SELECT count(*) FROM attempts").fetchone()[0]
        except sqlite3.Error:
            committed = 0
        if committed >= 4:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.02)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"

    docs = _stdlib_docs()
    cfg = GenerateConfig(out=out, n=16, commit_every=3, validation="inprocess")
    lib = Library(out)
    before = lib.attempted_docs(cfg.run_id)
    assert 4 <= len(before) < len(docs)
    summary = run_generate(cfg, progress=False, docs=docs)
    assert summary.skipped_resumed == len(before) and summary.attempted == len(docs) - len(before)
    attempts = lib.attempts(cfg.run_id)
    assert sorted(a["doc_id"] for a in attempts) == sorted(d.id for d in docs)
    accepted = {a["env_id"] for a in attempts if a["accepted"]}
    assert accepted and accepted == {r["id"] for r in lib.rows()}
    assert accepted == {p.stem for p in (out / "specs").glob("*.json")}
    assert not any("already in" in r for a in attempts for r in json.loads(a["reasons"]))


def test_bad_template_options_fail_once_before_any_work(tmp_path):
    import pytest

    cfg = GenerateConfig(out=tmp_path / "lib", n=2, workers=2, proposer="template", proposer_options={"max_tables": 9})
    with pytest.raises(ValueError, match="max_tables"):
        run_generate(cfg, progress=False, docs=_docs(2))
    assert not (tmp_path / "lib").exists()


def test_the_catalog_keeps_each_envs_mutation_score_and_stats_shows_it(tmp_path):
    from click.testing import CliRunner

    from envgen.cli.stats import stats
    from envgen.stats import library_stats

    docs = _docs(3)
    cfg = GenerateConfig(proposer="fixture", out=tmp_path / "lib", n=3, max_retries=0, validation="inprocess")
    run_generate(cfg, progress=False, proposer=FixtureProposer(), docs=docs)
    lib = Library(tmp_path / "lib")
    rows = lib.rows()
    assert len(rows) == 3 and all(r["mutation_score"] == 1.0 and r["mutants"] >= 5 for r in rows)
    assert all(a["mutation_score"] == 1.0 for a in lib.attempts())
    st = library_stats(lib)
    assert st.mutation_scored == 3 and st.mean_mutation_score == 1.0 and st.mean_mutants >= 5
    out = CliRunner().invoke(stats, [str(tmp_path / "lib")])
    assert out.exit_code == 0, out.output
    assert "mutation score" in out.output and "1.000 over 3 envs" in out.output
    as_json = json.loads(CliRunner().invoke(stats, [str(tmp_path / "lib"), "--json"]).output)
    assert as_json["mean_mutation_score"] == 1.0

"""The generation pipeline with a stand-in proposer: validation, repair, library writes, resume."""

from __future__ import annotations

import copy

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
        data["tasks"][0]["turns"][1]["instruction"] += f" Branch code {i}-{i * 13}."
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

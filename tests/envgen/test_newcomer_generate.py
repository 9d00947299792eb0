"""``generate`` on unusable corpora, interrupted, or started twice at once; ``Library(create=False)``;
what the library keeps for the inspector (gate reports, solve-rate history)."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pytest
from click.testing import CliRunner

from envgen.cli import cli
from envgen.generate import GenerateConfig, GenerateInterrupted, NoUsableDocuments, run_generate, select_corpus
from envgen.library import Library, NotALibrary
from tests.envgen.test_generate import FixtureProposer, _docs

STATEFUL = "class Shelf:\n    def __init__(self):\n        self.items = []\n\n    def add(self, x):\n" \
           "        self.items.append(x)\n"


def _generate(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["generate", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


@pytest.mark.parametrize("case", ["empty", "no-python", "too-large"])
def test_an_unusable_corpus_says_what_it_found_and_fails(tmp_path: Path, case: str) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    if case == "no-python":
        (corpus / "notes.txt").write_text("just notes\n")
        (corpus / "data.csv").write_text("a,b\n1,2\n")
    elif case == "too-large":
        (corpus / "big.py").write_text(STATEFUL + "# padding\n" * 150_000)  # 1.5 MB, over max_bytes
    code, out = _generate("--corpus", str(corpus), "--n", "3", "--out", str(tmp_path / "lib"))
    assert code == 1, out
    assert "no usable documents" in out and "nan" not in out
    if case == "empty":
        assert "read 0 documents" in out and "holds no files" in out
    elif case == "no-python":
        assert "read 1 document (1 text); the language filter (only python) removed 1" in out
        assert "1 skipped as not a source file of a known language: data.csv" in out
    else:
        assert "read 0 documents" in out and "skipped as larger than max_bytes=1,000,000: big.py (1,5" in out


def test_documents_removed_by_the_filters_are_counted(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "pure.py").write_text("def add(a, b):\n    return a + b\n")
    with pytest.raises(NoUsableDocuments, match=r"read 1 document .1 python.; the stateful filter .* removed 1"):
        select_corpus(GenerateConfig(corpus=str(corpus), n=2))


def test_ctrl_c_commits_what_is_done_and_says_how_to_resume(tmp_path: Path) -> None:
    class Interrupting(FixtureProposer):
        def propose_batch(self, docs, *, seed=0, skills=None):
            if any(d.path == "shelf3.py" for d in docs):
                raise KeyboardInterrupt
            return super().propose_batch(docs, seed=seed, skills=skills)

    docs = _docs(5)
    cfg = GenerateConfig(proposer="fixture", out=tmp_path / "lib", n=5, validation="inprocess", batch_size=1)
    with pytest.raises(GenerateInterrupted) as info:
        run_generate(cfg, progress=False, proposer=Interrupting(), docs=docs)
    assert info.value.summary.attempted == 3 and info.value.todo == 5
    with Library(tmp_path / "lib") as lib:
        assert len(lib.attempted_docs(cfg.run_id)) == 3  # committed before the interrupt propagated
    summary = run_generate(cfg, progress=False, proposer=FixtureProposer(), docs=docs)
    assert summary.skipped_resumed == 3 and summary.attempted == 2


def test_the_interrupt_message(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from envgen import generate as gen

    def interrupted(cfg, progress=True):
        summary = gen.GenerateSummary(run_id="r", attempted=7, accepted=6)
        raise GenerateInterrupted(summary, 20)

    monkeypatch.setattr(gen, "run_generate", interrupted)
    code, out = _generate("--out", str(tmp_path / "lib"))
    assert code == 130
    assert "Interrupted. Saved in" in out and "7 of 20 documents" in out and "6 environments accepted" in out
    assert "Re-run the same command to resume" in out and "Aborted" not in out


def _open(root: str, barrier: mp.synchronize.Barrier, out: mp.Queue) -> None:  # type: ignore[name-defined]
    barrier.wait()
    try:
        with Library(root) as lib:
            out.put(("ok", len(lib)))
    except Exception as e:
        out.put(("error", f"{type(e).__name__}: {e}"))


def test_two_processes_creating_one_new_library_both_succeed(tmp_path: Path) -> None:
    ctx = mp.get_context("fork")
    for attempt in range(3):  # the race is in the first CREATE TABLE of a new catalog: try a few fresh ones
        root = tmp_path / f"lib{attempt}"
        barrier, out = ctx.Barrier(6), ctx.Queue()
        procs = [ctx.Process(target=_open, args=(str(root), barrier, out)) for _ in range(6)]
        for p in procs:
            p.start()
        results = [out.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        assert all(r == ("ok", 0) for r in results), results


def test_read_only_opening_refuses_a_folder_that_is_not_a_library(tmp_path: Path) -> None:
    with pytest.raises(NotALibrary, match="not an envwright library"):
        Library(tmp_path, create=False)
    assert list(tmp_path.iterdir()) == []


def test_the_library_keeps_gate_reports_and_solve_history(tmp_path: Path) -> None:
    docs = _docs(3)
    cfg = GenerateConfig(proposer="fixture", out=tmp_path / "lib", n=3, validation="inprocess", max_retries=0)
    run_generate(cfg, progress=False, proposer=FixtureProposer(hopeless=[docs[2].id]), docs=docs)
    with Library(tmp_path / "lib", create=False) as lib:
        env_id = lib.rows()[0]["id"]
        report = lib.gate_report(env_id)
        assert report is not None and report["accepted"] and report["mutations"]
        assert {m["outcome"] for m in report["mutations"]} <= {"killed", "tolerated"}
        assert all(m["turn"] >= 1 for m in report["mutations"])
        lib.record_task_result(env_id, "t0", "m", n=2, passes=1)
        lib.record_task_result(env_id, "t0", "m", n=2, passes=2)
        assert [(h["n"], h["passes"]) for h in lib.solve_history(env_id)] == [(2, 1), (2, 2)]
        assert lib.get_row(env_id)["solve_rate"] == 0.75
    import json

    (rejected,) = (tmp_path / "lib" / "rejected").glob("*.json")
    payload = json.loads(rejected.read_text())
    assert payload["gate"]["accepted"] is False and payload["gate"]["reasons"]

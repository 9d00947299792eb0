"""The library's catalog on PostgreSQL: a throwaway server (``initdb`` + ``pg_ctl``), one database per test.

Skipped, with the reason, when the PostgreSQL binaries or the psycopg driver are missing
(``apt-get install postgresql``; ``pip install 'envwright[postgres]'``). Starting the server takes
about 1.5 s, once per session.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from envgen.generate import GenerateConfig, run_generate
from envgen.library import DuplicateEnv, Library
from envgen.stats import library_stats
from gym_envs.spec import parse_spec
from tests.envgen.test_generate import FixtureProposer, _docs, _stdlib_docs
from tests.fixtures.library_spec import SPEC
from tests.fixtures.postgres import PostgresUnavailable, start_server

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    pytest.importorskip("psycopg", reason="the PostgreSQL driver: pip install 'envwright[postgres]'")
    try:
        server = start_server()
    except PostgresUnavailable as e:
        pytest.skip(f"no PostgreSQL server: {e}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: Any) -> str:
    """A fresh, empty database on the session's server."""
    return pg_server.create_database(f"t_{uuid.uuid4().hex[:12]}")


def _spec(env_id: str = "library-demo", **changes: Any) -> Any:
    data = copy.deepcopy(SPEC)
    data["id"] = env_id
    data.update(changes)
    return parse_spec(data)


def _other_tasks(env_id: str) -> Any:
    data = copy.deepcopy(SPEC)
    data["id"] = env_id
    data["tasks"][0]["turns"][0]["instruction"] = "Completely different words about a member who borrows."
    data["tasks"][0]["turns"][1]["instruction"] = "Tell me the number of open loans right now please."
    return parse_spec(data)


def test_server_is_postgresql(pg_server: Any, pg_url: str, tmp_path: Any) -> None:
    with Library(tmp_path, pg_url) as lib:
        assert lib.engine.dialect.name == "postgresql" and "PostgreSQL" in pg_server.version
        assert not (tmp_path / "catalog.sqlite").exists()
        # free text is not cut to a VARCHAR length (PostgreSQL enforces them, SQLite does not)
        lib.record_attempt(attempt_id="a1", run_id="r", doc_id="corpus:" + "d/" * 400, proposer="llm:" + "m" * 300,
                           accepted=False, model="m" * 300, reasons=["x" * 5000], codes=["no_spec"])
        assert lib.attempts("r")[0]["doc_id"].endswith("d/")
    if importlib.util.find_spec("psycopg2") is None:  # a bare postgresql:// URL falls back to psycopg 3
        with Library(tmp_path, pg_url.replace("postgresql+psycopg://", "postgresql://")) as lib:
            assert lib.engine.driver == "psycopg" and lib.attempted_docs("r")


def test_a_missing_driver_is_a_clear_error(tmp_path: Any) -> None:
    if importlib.util.find_spec("pg8000") is not None:
        pytest.skip("pg8000 is installed: no missing driver to report")
    with pytest.raises(ValueError, match="needs a database driver"):
        Library(tmp_path, "postgresql+pg8000://user@localhost/nothing")


def test_add_duplicates_list_filter_sort(pg_url: str, tmp_path: Any) -> None:
    with Library(tmp_path, pg_url) as lib:
        lib.add(_spec("first-env"), model="m" * 300, run_id="r1", grounding=0.75)  # long text fits
        with pytest.raises(DuplicateEnv) as err:
            lib.add(_spec("second-env"))
        assert err.value.original == "first-env"
        lib.add(_other_tasks("third-env"))
        with pytest.raises(FileExistsError):
            lib.add(_other_tasks("third-env"))
        assert len(lib) == 2 and [s.id for s in lib] == ["first-env", "third-env"]
        row = lib.get_row("first-env")
        assert row["n_tools"] == 3 and row["grounding"] == 0.75 and row["valid"] is True
        lib.record_task_result("first-env", "t0", "policy-a", n=4, passes=1)
        lib.record_task_result("first-env", "t0", "policy-a", n=4, passes=3)
        lib.record_task_result("third-env", "t0", "reference", n=1, passes=1, reference_passes=True)
        lib.record_task_result("third-env", "t0", "policy-a", n=2, passes=0)
        assert lib.get_row("first-env")["solve_rate"] == pytest.approx(0.5)
        assert lib.suspicious_tasks() == [{"env_id": "third-env", "task_id": "t0", "policies": ["policy-a"]}]
        # sorting: the unevaluated env comes last either way, as on SQLite
        lib.record_task_result("third-env", "t1", "policy-a", n=0, passes=0)  # no rollouts: no solve rate
        assert [r["id"] for r in lib.rows(sort="solve_rate")] == ["third-env", "first-env"]
        assert [r["id"] for r in lib.rows(sort="solve_rate", descending=True)] == ["first-env", "third-env"]
        assert [r["id"] for r in lib.rows(min_solve=0.2)] == ["first-env"]
        assert [r["id"] for r in lib.rows(doc="nothing-like-this")] == []
        assert [r["id"] for r in lib.rows(limit=1, sort="id", descending=True)] == ["third-env"]
        lib.set_split("first-env", "test")
        assert lib.get_row("first-env")["split"] == "test"
        with pytest.raises(ValueError, match="cannot sort"):
            lib.rows(sort="nope")


def test_generate_resume_and_stats_on_postgres(pg_url: str, tmp_path: Any) -> None:
    """The template proposer into a PostgreSQL catalog: a first run, a resumed one, a second worker process."""
    docs = _stdlib_docs(6)
    cfg = GenerateConfig(out=tmp_path / "lib", catalog_url=pg_url, n=4, commit_every=2, validation="inprocess")
    first = run_generate(cfg, progress=False, docs=docs[:4])
    assert first.attempted == 4 and first.accepted >= 3
    again = GenerateConfig(out=tmp_path / "lib", catalog_url=pg_url, n=6, commit_every=2, validation="inprocess",
                           workers=2)
    resumed = run_generate(again, progress=False, docs=docs)
    assert resumed.skipped_resumed == 4 and resumed.attempted == 2
    with Library(tmp_path / "lib", pg_url) as lib:
        attempts = lib.attempts(cfg.run_id)
        assert sorted(a["doc_id"] for a in attempts) == sorted(d.id for d in docs)
        accepted = {a["env_id"] for a in attempts if a["accepted"]}
        assert accepted == {r["id"] for r in lib.rows()} == {p.stem for p in (tmp_path / "lib" / "specs").glob("*")}
        assert len(lib.rows(proposer="template")) == len(accepted) and lib.rows(proposer="llm") == []
        st = library_stats(lib)
    assert st.envs == len(accepted) and st.attempts == 6 and st.accepted_attempts == len(accepted)
    assert st.distinct_signatures == len(accepted) and 0 < st.overall_yield <= 1
    assert json.loads(json.dumps(st.to_dict()))["attempts"] == 6


def test_duplicates_refused_in_a_run_with_the_original_id(pg_url: str, tmp_path: Any) -> None:
    """A second run (another seed) over the same documents: its environments duplicate the first run's."""
    docs = _docs(3)
    cfg = GenerateConfig(proposer="fixture", out=tmp_path / "lib", catalog_url=pg_url, n=3, validation="inprocess")
    assert run_generate(cfg, progress=False, proposer=FixtureProposer(), docs=docs).accepted == 3
    other = GenerateConfig(proposer="fixture", out=tmp_path / "lib", catalog_url=pg_url, n=3, seed=1,
                           validation="inprocess")
    summary = run_generate(other, progress=False, proposer=FixtureProposer(), docs=docs)
    assert summary.accepted == 0 and summary.duplicates == 3 and summary.rejected_by_reason == {"duplicate": 3}
    with Library(tmp_path / "lib", pg_url) as lib:
        refused = lib.attempts(other.run_id)
        assert all("fixture-" in json.loads(a["reasons"])[0] for a in refused) and len(lib) == 3


def test_a_failed_commit_rolls_back_the_whole_batch(pg_url: str, tmp_path: Any, monkeypatch: Any) -> None:
    """A batch's rows commit together: a failure half-way leaves none of them; the resumed run redoes it."""
    import envgen.library as library

    docs = _docs(4)
    cfg = GenerateConfig(proposer="fixture", out=tmp_path / "lib", catalog_url=pg_url, n=4, validation="inprocess",
                         commit_every=2)
    real, calls = library._upsert, []

    def dying(conn: Any, table: Any, rows: Any) -> None:
        real(conn, table, rows)  # the envs rows of the batch are written, then the attempts fail
        if table is library.ATTEMPTS:
            calls.append(1)
            if len(calls) == 2:
                raise RuntimeError("killed during the second commit")

    monkeypatch.setattr(library, "_upsert", dying)
    with pytest.raises(RuntimeError, match="killed"):
        run_generate(cfg, progress=False, proposer=FixtureProposer(), docs=docs)
    monkeypatch.setattr(library, "_upsert", real)
    with Library(tmp_path / "lib", pg_url) as lib:
        assert len(lib.attempted_docs(cfg.run_id)) == 2 and len(lib) == 4  # 2 committed + 2 re-indexed files
    summary = run_generate(cfg, progress=False, proposer=FixtureProposer(), docs=docs)
    assert summary.skipped_resumed == 2 and summary.accepted == 2 and summary.duplicates == 0
    with Library(tmp_path / "lib", pg_url) as lib:
        assert all(a["accepted"] for a in lib.attempts()) and len(lib.attempts()) == 4 and len(lib) == 4


def test_cli_generate_list_stats_on_postgres(pg_url: str, tmp_path: Any) -> None:
    from click.testing import CliRunner

    from envgen.cli.library import generate, list_library
    from envgen.cli.stats import stats

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for d in _stdlib_docs(3):
        (corpus / d.path).write_text(d.text)
    lib = tmp_path / "lib"
    res = CliRunner().invoke(generate, ["--corpus", str(corpus), "--n", "3", "--out", str(lib),
                                        "--catalog-url", pg_url, "--json"])
    assert res.exit_code == 0, res.output
    made = json.loads(res.output)
    assert made["attempted"] >= 2 and made["accepted"] >= 1  # the corpus filters may drop a module
    res = CliRunner().invoke(list_library, [str(lib), "--catalog-url", pg_url, "--json", "--sort", "n_tools"])
    assert res.exit_code == 0, res.output
    assert len(json.loads(res.output)) == made["accepted"]
    res = CliRunner(env={"ENVWRIGHT_CATALOG_URL": pg_url}).invoke(stats, [str(lib), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["envs"] == made["accepted"]
    assert not (lib / "catalog.sqlite").exists()


def test_no_binaries_is_a_skip_reason(monkeypatch: Any) -> None:
    import tests.fixtures.postgres as pg

    monkeypatch.setattr(pg, "find_pg_bin", lambda: None)
    with pytest.raises(pg.PostgresUnavailable, match="install the 'postgresql' package"):
        pg.start_server()

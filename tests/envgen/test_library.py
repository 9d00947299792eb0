"""The library: atomic spec files, the catalog, duplicates, resume, stats."""

from __future__ import annotations

import copy
import json

import pytest

from corpora.similarity import text_similarity
from envgen.catalog import signature_key
from envgen.library import DuplicateEnv, Library
from envgen.stats import library_stats
from gym_envs.spec import parse_spec
from tests.fixtures.library_spec import SPEC


def _spec(env_id: str = "library-demo", **changes):
    data = copy.deepcopy(SPEC)
    data["id"] = env_id
    data.update(changes)
    return parse_spec(data)


def test_add_load_and_list(tmp_path):
    lib = Library(tmp_path / "lib")
    path = lib.add(_spec(), model="m", run_id="r1", grounding=0.75)
    assert path.exists() and json.loads(path.read_text())["id"] == "library-demo"
    assert len(lib) == 1
    row = lib.get_row("library-demo")
    assert row["n_tools"] == 3 and row["n_tasks"] == 1 and row["model"] == "m" and row["grounding"] == 0.75
    assert lib.load("library-demo").title == "Library"
    assert [s.id for s in lib] == ["library-demo"]


def test_duplicate_refused_with_original_id(tmp_path):
    lib = Library(tmp_path)
    lib.add(_spec("first-env"))
    with pytest.raises(DuplicateEnv) as err:
        lib.add(_spec("second-env"))
    assert err.value.original == "first-env" and "first-env" in str(err.value)
    # same tools but different tasks is not a duplicate
    other = copy.deepcopy(SPEC)
    other["id"] = "third-env"
    other["tasks"][0]["turns"][0]["instruction"] = "Completely different words about a member who borrows."
    other["tasks"][0]["turns"][1]["instruction"] = "Tell me the number of open loans right now please."
    lib.add(parse_spec(other))
    assert len(lib) == 2


def test_same_id_refused(tmp_path):
    lib = Library(tmp_path)
    lib.add(_spec())
    other = copy.deepcopy(SPEC)
    other["tools"][0]["description"] = "changed"
    other["tasks"][0]["turns"][0]["instruction"] = "Something else entirely to avoid the duplicate check here."
    other["tasks"][0]["turns"][1]["instruction"] = "And another totally unrelated sentence for the second turn."
    other["tools"][2]["name"] = "loans_of"
    other["code"] = other["code"].replace("def list_loans", "def loans_of")
    other["tasks"][0]["turns"][1]["reference"][0]["name"] = "loans_of"
    with pytest.raises(FileExistsError):
        lib.add(parse_spec(other))


def test_reindex_after_crash(tmp_path):
    lib = Library(tmp_path)
    lib.add(_spec())
    # simulate a crash between the spec write and the catalog commit: a spec file with no row
    spec = _spec("orphan-env")
    (tmp_path / "specs" / "orphan-env.json").write_text(spec.to_json())
    reopened = Library(tmp_path)
    assert reopened.get_row("orphan-env") is not None and len(reopened) == 2


def _distinct(env_id: str, words: str):
    other = copy.deepcopy(SPEC)
    other["id"] = env_id
    other["tasks"][0]["turns"][0]["instruction"] = f"{words} borrows a book for a member today."
    other["tasks"][0]["turns"][1]["instruction"] = f"{words} then counts the open loans of that member."
    return parse_spec(other)


def test_remove_takes_a_run_round_out_and_keeps_the_rest(tmp_path):
    """What a resumed self-play run does with the environments of rounds after its checkpoint."""
    lib = Library(tmp_path)
    lib.add(_spec("kept-env"), run_id="selfplay-abc/round-0000")
    lib.add(_distinct("later-env", "Zebra quantum"), run_id="selfplay-abc/round-0001")
    lib.add(_distinct("other-run-env", "Violet harbour"), run_id="selfplay-abcdef/round-0001")
    lib.record_task_result("later-env", "t0", "policy", n=4, passes=1)
    assert lib.run_env_ids("selfplay-abc/round-") == {"kept-env": "selfplay-abc/round-0000",
                                                      "later-env": "selfplay-abc/round-0001"}
    assert lib.run_env_ids("selfplay-a_c/") == {}  # a prefix, not a LIKE pattern
    assert lib.remove(["later-env", "never-there"]) == 1
    assert sorted(r["id"] for r in lib.rows()) == ["kept-env", "other-run-env"]
    assert not (tmp_path / "specs" / "later-env.json").exists() and lib.task_stats("later-env") == []
    assert lib.solve_history("later-env") == [] and lib.remove([]) == 0
    # reopened (re-indexed) it stays gone, and the same spec can be added again
    again = Library(tmp_path)
    assert len(again) == 2
    again.add(_distinct("later-env", "Zebra quantum"), run_id="selfplay-abc/round-0001")
    assert len(again) == 3


def test_catalog_url_and_attempts(tmp_path):
    url = f"sqlite:///{tmp_path / 'other.db'}"
    lib = Library(tmp_path / "lib", catalog_url=url)
    lib.record_attempt(attempt_id="a1", run_id="r", doc_id="d1", proposer="llm", accepted=False,
                       reasons=["rule 3: x"], codes=["reference_check_failed"], rejected_spec={"id": "x"})
    lib.record_attempt(attempt_id="a2", run_id="r", doc_id="d2", proposer="llm", accepted=True, env_id="e")
    assert (tmp_path / "other.db").exists()
    assert lib.attempted_docs("r") == {"d1", "d2"}
    assert (tmp_path / "lib" / "rejected" / "a1.json").exists()
    st = library_stats(lib)
    assert st.attempts == 2 and st.overall_yield == 0.5
    assert st.rejections_by_reason == {"reference_check_failed": 1}


def test_task_stats_and_suspicious(tmp_path):
    lib = Library(tmp_path)
    lib.add(_spec())
    lib.record_task_result("library-demo", "t0", "reference", n=1, passes=1, reference_passes=True)
    lib.record_task_result("library-demo", "t0", "policy-a", n=4, passes=0)
    assert lib.suspicious_tasks() == [{"env_id": "library-demo", "task_id": "t0", "policies": ["policy-a"]}]
    lib.record_task_result("library-demo", "t0", "policy-b", n=4, passes=2)
    assert lib.suspicious_tasks() == []
    assert lib.get_row("library-demo")["solve_rate"] == pytest.approx(2 / 8)  # the reference does not count
    rows = lib.rows(min_solve=0.2, sort="solve_rate", descending=True)
    assert [r["id"] for r in rows] == ["library-demo"]
    with pytest.raises(ValueError, match="cannot sort"):
        lib.rows(sort="nope")


def test_signature_and_similarity():
    a = _spec()
    assert signature_key(a) == signature_key(_spec("other-id"))
    assert text_similarity("the cat sat on the mat", "the cat sat on the mat") == 1.0
    assert text_similarity("the cat sat on the mat", "a completely different sentence here") == 0.0


def test_a_catalog_from_before_mutation_scores_gains_the_columns(tmp_path):
    import sqlite3

    root = tmp_path / "old"
    (root / "specs").mkdir(parents=True)
    con = sqlite3.connect(root / "catalog.sqlite")  # the envs and attempts tables as an older version made them
    con.execute("CREATE TABLE envs (id VARCHAR(96) PRIMARY KEY, title TEXT NOT NULL, corpus TEXT, doc_id TEXT, "
                "doc_path TEXT, proposer TEXT, model TEXT, skill_id VARCHAR(120), stream VARCHAR(20), "
                "valid BOOLEAN NOT NULL, reasons TEXT, n_tools INTEGER, n_tasks INTEGER, signature VARCHAR(64), "
                "task_text TEXT, created_at VARCHAR(40), run_id VARCHAR(64), path TEXT, solve_rate FLOAT, "
                "n_evals INTEGER, split VARCHAR(20), grounding FLOAT)")
    con.execute("CREATE TABLE attempts (attempt_id VARCHAR(64) PRIMARY KEY, run_id VARCHAR(64), doc_id TEXT, "
                "proposer TEXT, model TEXT, skill_id VARCHAR(120), stream VARCHAR(20), accepted BOOLEAN NOT NULL, "
                "env_id VARCHAR(96), reasons TEXT, codes TEXT, retries INTEGER, tokens INTEGER, seconds FLOAT, "
                "created_at VARCHAR(40))")
    con.execute("INSERT INTO envs (id, title, valid) VALUES ('old-env', 'Old', 1)")
    con.commit()
    con.close()
    lib = Library(root)
    lib.add(_spec("new-env", title="New"), mutation_score=1.0, mutants=12)
    assert lib.get_row("old-env")["mutation_score"] is None
    assert (lib.get_row("new-env")["mutation_score"], lib.get_row("new-env")["mutants"]) == (1.0, 12)
    assert library_stats(lib).mutation_scored == 1
    Library(root)  # opening it again finds the columns in place


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_library_files_get_the_umask_mode_like_the_catalog(tmp_path, umask):
    import os
    import stat

    from envgen.catalog import AttemptRecord, PreparedEnv

    old = os.umask(umask)
    try:
        lib = Library(tmp_path / "lib")
        env = PreparedEnv.of(_spec())
        lib.record_batch([
            AttemptRecord(attempt_id="a1", run_id="r", doc_id="d1", proposer="p", accepted=True, env=env,
                          gate={"accepted": True}),
            AttemptRecord(attempt_id="a2", run_id="r", doc_id="d2", proposer="p", accepted=False,
                          reasons=["no"], codes=["x"], rejected_spec="{}"),
        ])
        lib.close()
    finally:
        os.umask(old)
    files = [tmp_path / "lib" / "specs" / "library-demo.json", tmp_path / "lib" / "gate" / "library-demo.json",
             tmp_path / "lib" / "rejected" / "a2.json"]
    modes = {f.name if f.parent.name == "rejected" else f.parent.name: stat.S_IMODE(f.stat().st_mode) for f in files}
    assert modes == {"specs": 0o666 & ~umask, "gate": 0o666 & ~umask, "a2.json": 0o666 & ~umask}
    catalog = stat.S_IMODE((tmp_path / "lib" / "catalog.sqlite").stat().st_mode)
    assert catalog == 0o644 & ~umask  # SQLite's own default; spec files are readable by the same people


def test_a_file_in_place_of_the_library_folder_is_refused_saying_what_to_give(tmp_path):
    from envgen.library import NotALibrary

    (tmp_path / "afile").write_text("x")
    with pytest.raises(NotALibrary, match=r"afile as a library folder: it is a file, not a folder; give a new folder"):
        Library(tmp_path / "afile")
    with pytest.raises(NotALibrary, match=r"sub as a library folder: .*afile is a file, not a folder"):
        Library(tmp_path / "afile" / "sub")
    assert (tmp_path / "afile").read_text() == "x"


def test_a_read_only_catalog_is_refused_when_opened_naming_it(tmp_path):
    from envgen.library import LibraryNotWritable

    Library(tmp_path / "lib").close()
    catalog = tmp_path / "lib" / "catalog.sqlite"
    read_only = f"sqlite:///file:{catalog}?mode=ro&uri=true"  # what a chmod 444 catalog is, even for root
    with pytest.raises(LibraryNotWritable) as err:
        Library(tmp_path / "lib", read_only)
    message = str(err.value)
    assert message.startswith(f"cannot write the catalog file:{catalog}")
    assert "attempt to write a readonly database" in message and "make" in message and "writable" in message
    with Library(tmp_path / "lib", read_only, create=False) as lib:  # reading it (list, stats) still works
        assert len(lib) == 0


def test_a_folder_that_cannot_be_written_is_refused_naming_it(tmp_path, monkeypatch):
    from pathlib import Path

    from envgen.library import LibraryNotWritable

    real_mkdir = Path.mkdir

    def mkdir(self, *args, **kwargs):
        if self.name == "specs":  # root may write anywhere: simulate a folder it may not write in
            raise PermissionError(13, "Permission denied", str(self))
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", mkdir)
    with pytest.raises(LibraryNotWritable, match=r"cannot write the library .*lib: permission denied on .*specs; "
                                                 r"choose a folder you can write to"):
        Library(tmp_path / "lib")


def test_a_run_may_use_a_new_or_empty_folder_or_a_library_but_not_another_folder(tmp_path):
    from envgen.library import NotALibrary, check_library_folder

    check_library_folder(tmp_path / "new")
    (tmp_path / "empty").mkdir()
    check_library_folder(tmp_path / "empty")
    Library(tmp_path / "lib").close()
    check_library_folder(tmp_path / "lib")
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "main.py").write_text("x = 1\n")
    with pytest.raises(NotALibrary, match=r"project is a folder that holds other files \(main\.py\) and is not an "
                                          r"envwright library; give a new or empty folder, or an existing library"):
        check_library_folder(tmp_path / "project")
    with pytest.raises(NotALibrary, match="it is a file"):
        check_library_folder(tmp_path / "project" / "main.py")

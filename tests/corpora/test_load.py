"""load_corpus and spec resolution."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpora import CorpusError, UnknownNameError, load_corpus, resolve_spec


def test_resolve_names_prefixes_and_paths(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    for name in ("a.jsonl", "b.jsonl.gz", "c.parquet", "e.ndjson"):
        (tmp_path / name).write_text("")
    assert resolve_spec("stdlib") == ("stdlib", None)
    assert resolve_spec("hf:bigcode/the-stack-smol") == ("hf", "bigcode/the-stack-smol")
    assert resolve_spec("jsonl:/x/y.txt") == ("jsonl", "/x/y.txt")
    assert resolve_spec(str(tmp_path / "d")) == ("tree", str(tmp_path / "d"))
    assert resolve_spec(str(tmp_path / "a.jsonl"))[0] == "jsonl"
    assert resolve_spec(str(tmp_path / "b.jsonl.gz"))[0] == "jsonl"
    assert resolve_spec(str(tmp_path / "e.ndjson"))[0] == "jsonl"
    assert resolve_spec(str(tmp_path / "c.parquet"))[0] == "parquet"


def test_saved_dataset_directory_resolves_to_hf(tmp_path: Path) -> None:
    saved = tmp_path / "saved"
    saved.mkdir()
    for name in ("state.json", "dataset_info.json", "data-00000-of-00001.arrow"):
        (saved / name).write_text("{}")
    assert resolve_spec(str(saved)) == ("hf", str(saved))
    splits = tmp_path / "splits"
    (splits / "train").mkdir(parents=True)
    (splits / "dataset_dict.json").write_text('{"splits": ["train"]}')
    for name in ("state.json", "dataset_info.json", "data-00000-of-00001.arrow"):
        (splits / "train" / name).write_text("{}")
    assert resolve_spec(str(splits)) == ("hf", str(splits))


def test_a_source_tree_with_a_state_json_is_a_tree(tmp_path: Path) -> None:
    (tmp_path / "state.json").write_text('{"counter": 3}')  # an app's own state file
    (tmp_path / "app.py").write_text("x = 1\n")
    assert resolve_spec(str(tmp_path)) == ("tree", str(tmp_path))
    assert [d.path for d in load_corpus(str(tmp_path))] == ["app.py", "state.json"]
    (tmp_path / "dataset_dict.json").write_text('{"splits": ["train"]}')  # names a split folder it lacks
    assert resolve_spec(str(tmp_path)) == ("tree", str(tmp_path))


def test_an_unreadable_corpus_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    real_scandir = os.scandir

    def scandir(path: object) -> object:
        if Path(str(path)) == tmp_path:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)  # root reads any folder: simulate a chmod 000 one
    with pytest.raises(CorpusError, match=r"cannot be read \(Permission denied\); fix its permissions"):
        load_corpus(str(tmp_path))


def test_spec_errors_name_the_fix(tmp_path: Path) -> None:
    with pytest.raises(UnknownNameError, match="did you mean 'stdlib'"):
        resolve_spec("stdlb")
    with pytest.raises(UnknownNameError, match=r"unknown loader 'hff'.*did you mean 'hf'"):
        resolve_spec("hff:foo")
    with pytest.raises(CorpusError, match="empty"):
        resolve_spec("")
    with pytest.raises(CorpusError, match="empty source"):
        resolve_spec("hf:")
    odd = tmp_path / "notes.csv"
    odd.write_text("a,b\n")
    with pytest.raises(CorpusError, match="prefix a loader name"):
        resolve_spec(str(odd))


def test_errors_are_raised_eagerly_and_reading_is_lazy(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="does not exist"):
        load_corpus("jsonl:" + str(tmp_path / "missing.jsonl"))
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"content": "ok", "path": "a.py", "lang": "python"}) + "\n{not json\n")
    docs = load_corpus(str(path))  # config is valid: no error yet
    assert next(docs).text == "ok"
    with pytest.raises(CorpusError, match=r"bad\.jsonl:2: invalid JSON"):
        next(docs)


def test_limit(tmp_path: Path) -> None:
    assert len(list(load_corpus("stdlib", limit=3))) == 3
    with pytest.raises(CorpusError, match="limit"):
        load_corpus("stdlib", limit=-1)

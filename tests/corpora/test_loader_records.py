"""The JSONL and Parquet loaders and their field mapping."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest

from corpora import CorpusError, MissingDependencyError, RecordFieldError, load_corpus


def write_jsonl(path: Path, records: list[dict[str, object]]) -> Path:
    lines = "\n".join(json.dumps(r) for r in records) + "\n\n"
    if path.name.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(lines)
    else:
        path.write_text(lines)
    return path


@pytest.mark.parametrize("name", ["stack.jsonl", "stack.jsonl.gz"])
def test_jsonl_stack_fields(tmp_path: Path, stack_records: list[dict[str, object]], name: str) -> None:
    path = write_jsonl(tmp_path / name, stack_records)
    docs = list(load_corpus(str(path)))
    assert [d.id for d in docs] == ["stack:src/inventory.py", "stack:src/plain.py", "stack:main.cpp"]
    assert [d.language for d in docs] == ["python", "python", "cpp"]
    assert docs[0].text == stack_records[0]["content"]
    assert docs[0].metadata == {"repo": "a/b", "stars": 3}


def test_jsonl_custom_field_names(tmp_path: Path) -> None:
    records = [
        {"code": "a = 1\n", "file": "x/a.py", "uid": "r1", "license": "mit", "extra": 1},
        {"code": "fn f() {}\n", "file": "b.rs", "uid": "r2", "license": "apache", "extra": 2},
    ]
    path = write_jsonl(tmp_path / "custom.jsonl", records)
    docs = list(
        load_corpus(
            str(path),
            text_field="code",
            path_field="file",
            language_field=None,
            id_field="uid",
            metadata_fields=("license",),
            corpus="c",
        )
    )
    assert [d.id for d in docs] == ["c:r1", "c:r2"]
    assert [d.path for d in docs] == ["x/a.py", "b.rs"]
    assert [d.language for d in docs] == ["python", "rust"]
    assert docs[1].metadata == {"license": "apache"}


def test_jsonl_missing_field_lists_available_keys(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "x.jsonl", [{"text": "a", "path": "a.py", "lang": "python"}])
    with pytest.raises(
        RecordFieldError, match=r"x\.jsonl:1: record has no field 'content'.*available keys: lang, path, text"
    ):
        list(load_corpus(str(path)))
    with pytest.raises(RecordFieldError, match="language_field=None"):
        list(load_corpus(str(path), text_field="text", language_field="language"))


def test_jsonl_records_without_paths_and_repeated_ids(tmp_path: Path) -> None:
    records = [
        {"content": "a", "lang": None},
        {"content": "b", "path": "same.py"},
        {"content": "c", "path": "same.py"},
    ]
    path = write_jsonl(tmp_path / "r.jsonl", records)
    docs = list(load_corpus(str(path), path_field=None, language_field=None))
    assert [d.id for d in docs] == ["r:record-0", "r:record-1", "r:record-2"]
    assert {d.language for d in docs} == {"unknown"}
    with pytest.raises(RecordFieldError, match=r"r\.jsonl:1: record has no field 'path' \(path_field\)"):
        list(load_corpus(str(path), language_field=None))


def test_jsonl_errors(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "r.jsonl", [{"content": 3, "path": "a", "lang": "x"}])
    with pytest.raises(CorpusError, match="holds int, expected a string"):
        list(load_corpus(str(path)))
    path.write_text("[1, 2]\n")
    with pytest.raises(CorpusError, match="expected a JSON object"):
        list(load_corpus(str(path)))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CorpusError, match="has no"):
        load_corpus("jsonl:" + str(empty))


def test_jsonl_in_another_encoding_names_the_line_and_the_option(tmp_path: Path) -> None:
    path = tmp_path / "legacy.jsonl"
    lines = [json.dumps({"content": "plain ascii", "path": "a.py"}), json.dumps({"content": "x", "path": "b.py"}),
             json.dumps({"content": "café = 1", "path": "c.py"}, ensure_ascii=False)]
    path.write_bytes("\n".join(lines).encode("cp1252") + b"\n")
    with pytest.raises(CorpusError) as info:
        list(load_corpus(str(path), language_field=None))
    message = str(info.value)
    assert message.startswith(f"{path}:3: not utf-8 text (byte 0xe9: invalid continuation byte)")
    assert "encoding=cp1252 (command line: --corpus-option encoding=cp1252)" in message
    docs = list(load_corpus(str(path), language_field=None, encoding="cp1252"))
    assert docs[2].text == "café = 1"
    with pytest.raises(CorpusError, match="unknown text encoding 'latin-9000'"):
        load_corpus(str(path), encoding="latin-9000")


def test_a_gz_that_is_not_gzip_data_names_the_file_and_the_fix(tmp_path: Path) -> None:
    fake = tmp_path / "plain.jsonl.gz"
    fake.write_text(json.dumps({"content": "a", "path": "a.py"}) + "\n")
    with pytest.raises(CorpusError, match=r"plain\.jsonl\.gz: not a valid gzip file .*rename it without the \.gz"):
        list(load_corpus(str(fake)))
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress((json.dumps({"content": "a" * 5000, "path": "a.py"}) + "\n").encode())[:40])
    with pytest.raises(CorpusError, match=r"cut\.jsonl\.gz: not a valid gzip file"):
        list(load_corpus(str(cut)))


def test_jsonl_duplicate_paths_get_unique_ids(tmp_path: Path) -> None:
    records = [
        {"content": "a", "path": "same.py", "lang": "python"},
        {"content": "b", "path": "same.py", "lang": ""},
    ]
    docs = list(load_corpus(str(write_jsonl(tmp_path / "d.jsonl", records))))
    assert [d.id for d in docs] == ["d:same.py", "d:same.py@1"]
    assert docs[1].language == "python"  # empty label: inferred from the path


def test_jsonl_directory(tmp_path: Path, stack_records: list[dict[str, object]]) -> None:
    write_jsonl(tmp_path / "b.jsonl", stack_records[:1])
    write_jsonl(tmp_path / "a.jsonl.gz", stack_records[1:])
    docs = list(load_corpus("jsonl:" + str(tmp_path), corpus="dir"))
    assert [d.path for d in docs] == ["src/plain.py", "main.cpp", "src/inventory.py"]


def test_parquet(tmp_path: Path, stack_records: list[dict[str, object]]) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "shard.parquet"
    pq.write_table(pa.Table.from_pylist(stack_records), path, row_group_size=2)
    docs = list(load_corpus(str(path), batch_size=1))
    assert [d.id for d in docs] == ["shard:src/inventory.py", "shard:src/plain.py", "shard:main.cpp"]
    assert docs[2].language == "cpp"
    assert docs[0].metadata == {"repo": "a/b", "stars": 3}
    only = list(load_corpus(str(path), metadata_fields=["stars"]))
    assert only[0].metadata == {"stars": 3}
    with pytest.raises(RecordFieldError, match=r"no column 'text' \(text_field\); available columns: content, path, "
                       r"lang, repo, stars; set text_field=COLUMN \(command line: --corpus-option text_field=COLUMN\)"):
        list(load_corpus(str(path), text_field="text"))
    with pytest.raises(RecordFieldError, match=r"no column 'file' \(path_field\).* or path_field=None"):
        list(load_corpus(str(path), path_field="file"))
    with pytest.raises(CorpusError, match="batch_size"):
        load_corpus(str(path), batch_size=0)
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(path.read_bytes()[:5])
    with pytest.raises(CorpusError, match=r"cut\.parquet: not a readable Parquet file"):
        list(load_corpus(str(cut)))


def test_parquet_without_pyarrow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "x.parquet"
    path.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    docs = load_corpus(str(path))
    with pytest.raises(MissingDependencyError, match="pip install pyarrow"):
        next(docs)

"""The Hugging Face loader, offline: datasets saved to disk and local data files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from corpora import CorpusError, MissingDependencyError, UnknownNameError, load_corpus


@pytest.fixture(autouse=True)
def _no_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep ``datasets`` from importing torch (seconds) for its iterable datasets."""
    try:
        import datasets.config
    except ImportError:
        return
    monkeypatch.setattr(datasets.config, "TORCH_AVAILABLE", False)


def test_saved_dataset(tmp_path: Path, stack_records: list[dict[str, object]]) -> None:
    datasets = pytest.importorskip("datasets")
    saved = tmp_path / "smol"
    datasets.Dataset.from_list(stack_records).save_to_disk(str(saved))
    for spec in (str(saved), "hf:" + str(saved)):
        docs = list(load_corpus(spec))
        assert [d.id for d in docs] == ["smol:src/inventory.py", "smol:src/plain.py", "smol:main.cpp"]
        assert docs[2].language == "cpp"
        assert docs[0].metadata == {"repo": "a/b", "stars": 3}
    eager = list(load_corpus("hf:" + str(saved), streaming=False, corpus="s"))
    assert [d.id for d in eager] == ["s:src/inventory.py", "s:src/plain.py", "s:main.cpp"]


def test_saved_dataset_dict_splits(tmp_path: Path, stack_records: list[dict[str, object]]) -> None:
    datasets = pytest.importorskip("datasets")
    saved = tmp_path / "dd"
    datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_list(stack_records[:2]),
            "test": datasets.Dataset.from_list(stack_records[2:]),
        }
    ).save_to_disk(str(saved))
    assert len(list(load_corpus(str(saved)))) == 2
    assert [d.path for d in load_corpus(str(saved), split="test")] == ["main.cpp"]
    with pytest.raises(UnknownNameError, match="no split 'tset'; did you mean 'test'"):
        list(load_corpus(str(saved), split="tset"))


def test_load_dataset_on_local_data_files(tmp_path: Path, stack_records: list[dict[str, object]]) -> None:
    pytest.importorskip("datasets")
    data = tmp_path / "raw"
    data.mkdir()
    (data / "train.jsonl").write_text("\n".join(json.dumps(r) for r in stack_records) + "\n")
    docs = list(load_corpus("hf:" + str(data), corpus="raw"))
    assert [d.id for d in docs] == ["raw:src/inventory.py", "raw:src/plain.py", "raw:main.cpp"]


def test_hf_without_datasets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)
    docs = load_corpus("hf:some/dataset")  # the config builds without datasets
    with pytest.raises(MissingDependencyError, match="pip install datasets"):
        next(docs)


def test_a_source_tree_read_as_a_dataset_points_to_tree(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    (tmp_path / "state.json").write_text('{"counter": 3}')
    (tmp_path / "app.py").write_text("x = 1\n")
    with pytest.raises(CorpusError, match=rf"could not be loaded as a Hugging Face dataset .*'tree:{tmp_path}'"):
        list(load_corpus("hf:" + str(tmp_path)))

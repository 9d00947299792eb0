"""Load a Hugging Face dataset (needs ``datasets``).

Role: read hub datasets such as ``bigcode/the-stack-smol`` by streaming, or a
dataset saved locally with ``Dataset.save_to_disk``.

Contract:

* ``name`` is a hub id (``"bigcode/the-stack-smol"``), a local directory
  written by ``save_to_disk`` (read with ``datasets.load_from_disk``; told by
  its whole layout, :func:`is_saved_dataset`), or any other local directory or
  file ``datasets.load_dataset`` understands (a folder of JSONL/Parquet files).
  A local directory that does not load as a dataset raises a
  :class:`~corpora.errors.CorpusError` that points to ``tree:PATH``.
* ``split`` selects the split (a :class:`~corpora.errors.UnknownNameError`
  lists the available ones for a saved ``DatasetDict``); ``subset`` is the
  dataset configuration name; ``streaming`` (default) reads hub rows lazily
  instead of downloading the whole split (a saved dataset is memory-mapped
  and always read lazily).
* Fields map as in :mod:`corpora.loaders.records`; locations in errors are
  ``"<name>[<split>] row <n>"``.
* ``datasets`` is imported when loading starts: the package works without
  it, and loading then raises :class:`~corpora.errors.MissingDependencyError`.
  Hub access follows ``datasets``' own settings (``HF_HUB_OFFLINE``, tokens).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from corpora.document import Document
from corpora.errors import CorpusError, MissingDependencyError, UnknownNameError, did_you_mean, option_hint
from corpora.loaders.records import RecordFields, records_to_documents

__all__ = ["HFConfig", "is_saved_dataset", "load_hf"]

def _is_saved_split(p: Path) -> bool:
    """Whether ``p`` holds what ``Dataset.save_to_disk`` writes: ``state.json``, ``dataset_info.json`` and
    its ``.arrow`` shards (a ``state.json`` alone is any project's file, not a dataset)."""
    return (p / "state.json").is_file() and (p / "dataset_info.json").is_file() and any(p.glob("*.arrow"))


def is_saved_dataset(path: str | Path) -> bool:
    """Whether ``path`` is a directory written by ``Dataset(Dict).save_to_disk``, by its whole layout.

    A ``Dataset``: ``state.json``, ``dataset_info.json`` and ``.arrow`` files; a ``DatasetDict``: a
    ``dataset_dict.json`` listing its ``splits``, each a saved ``Dataset`` folder. A directory that
    cannot be read is not one (the tree loader then says why it cannot read it).
    """
    p = Path(path).expanduser()
    try:
        if not p.is_dir():
            return False
        if (p / "dataset_dict.json").is_file():
            splits = json.loads((p / "dataset_dict.json").read_text(encoding="utf-8")).get("splits")
            return isinstance(splits, list) and bool(splits) and all(_is_saved_split(p / str(s)) for s in splits)
        return _is_saved_split(p)
    except (OSError, ValueError, AttributeError):  # unreadable, or a dataset_dict.json that is not one
        return False


@dataclass(kw_only=True)
class HFConfig(RecordFields):
    """Options of the ``hf`` loader (plus the field options of :class:`RecordFields`).

    Attributes:
        name: Hub dataset id, or a local directory (``save_to_disk`` output or data files).
        split: The split to read.
        subset: The dataset configuration (``load_dataset``'s ``name``), e.g. ``"python"``.
        data_dir: ``load_dataset``'s ``data_dir`` (The Stack: ``"data/python"``).
        revision: A hub revision (branch, tag or commit) to pin.
        streaming: Stream rows instead of downloading the split first.
    """

    source_field: ClassVar[str | None] = "name"

    name: str
    split: str = "train"
    subset: str | None = None
    data_dir: str | None = None
    revision: str | None = None
    streaming: bool = True

    def __post_init__(self) -> None:
        self.check_fields()
        if not self.name:
            raise CorpusError(
                "hf: name must be a hub dataset id or a local directory, e.g. 'hf:bigcode/the-stack-smol'"
            )
        if not self.split:
            raise CorpusError("hf: split must be non-empty (e.g. 'train')")
        if self.corpus is None:
            local = Path(self.name).expanduser()
            self.corpus = local.resolve().name if local.exists() else self.name.replace(":", "_")


def _import_datasets() -> Any:
    try:
        import datasets
    except ImportError:
        raise MissingDependencyError("datasets", "the hf corpus loader", extra="hf") from None
    return datasets


def _open_saved(datasets: Any, config: HFConfig) -> Any:
    loaded = datasets.load_from_disk(str(Path(config.name).expanduser()))
    if isinstance(loaded, datasets.DatasetDict):
        if config.split not in loaded:
            splits = list(loaded)
            raise UnknownNameError(
                f"hf: dataset {config.name!r} has no split {config.split!r}{did_you_mean(config.split, splits)} "
                f"(available: {', '.join(splits)}); set {option_hint('split', splits[0] if splits else 'NAME')}"
            )
        loaded = loaded[config.split]
    return loaded  # memory-mapped Arrow: rows are read lazily whatever ``streaming`` says


def _open(config: HFConfig) -> Any:
    datasets = _import_datasets()
    local = Path(config.name).expanduser()
    try:
        if is_saved_dataset(config.name):
            return _open_saved(datasets, config)
        return datasets.load_dataset(
            str(local) if local.exists() else config.name,
            config.subset,
            split=config.split,
            data_dir=config.data_dir,
            revision=config.revision,
            streaming=config.streaming,
        )
    except (OSError, ValueError) as exc:
        if isinstance(exc, CorpusError) or not local.is_dir():
            raise
        raise CorpusError(
            f"hf: the directory {config.name!r} could not be loaded as a Hugging Face dataset ({exc}); "
            f"if it is a source tree, read it as one with the corpus spec 'tree:{config.name}'"
        ) from None


def _rows(config: HFConfig) -> Iterator[tuple[str, Mapping[str, Any]]]:
    dataset = _open(config)
    for n, row in enumerate(dataset):
        yield f"{config.name}[{config.split}] row {n}", row


def load_hf(config: HFConfig) -> Iterator[Document]:
    """Yield one document per dataset row, in the dataset's order."""
    yield from records_to_documents(_rows(config), config, str(config.corpus))

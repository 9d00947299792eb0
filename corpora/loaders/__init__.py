"""Built-in corpus loaders.

Role: one module per source kind, each exposing a config dataclass and a
``load_*(config) -> Iterator[Document]`` generator:

* :mod:`corpora.loaders.tree` — a source tree on disk (globs, language from extension);
* :mod:`corpora.loaders.jsonl` — JSONL files, optionally gzipped;
* :mod:`corpora.loaders.parquet` — Parquet files (needs ``pyarrow``);
* :mod:`corpora.loaders.hf` — a Hugging Face dataset (needs ``datasets``);
* :mod:`corpora.loaders.stdlib` — the running interpreter's standard library.

Contract: loaders are lazy (files are opened as the iterator advances),
deterministic (same source, same documents, same order) and validate their
config at construction. They are registered by name in :mod:`corpora.builtin`,
not here.
"""

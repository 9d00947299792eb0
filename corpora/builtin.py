"""The built-in corpus loaders, as entry points.

Role: the one place where built-in loaders get their short names. It is data only: each name maps
to the ``"module:attr"`` entry points of the loader function and of its config dataclass, which
:mod:`corpora.loaders.registry` registers and imports on first use (as Gymnasium's ``entry_point``). So
this module imports nothing, and the registry never imports a loader module to list the loaders.

Contract: :data:`BUILTIN_LOADERS` names ``tree``, ``jsonl``, ``parquet``, ``hf``, ``stdlib`` and
``npm``.
"""

from __future__ import annotations

__all__ = ["BUILTIN_LOADERS"]

BUILTIN_LOADERS: dict[str, tuple[str, str]] = {
    "tree": ("corpora.loaders.tree:load_tree", "corpora.loaders.tree:TreeConfig"),
    "jsonl": ("corpora.loaders.jsonl:load_jsonl", "corpora.loaders.jsonl:JsonlConfig"),
    "parquet": ("corpora.loaders.parquet:load_parquet", "corpora.loaders.parquet:ParquetConfig"),
    "hf": ("corpora.loaders.hf:load_hf", "corpora.loaders.hf:HFConfig"),
    "stdlib": ("corpora.loaders.stdlib:load_stdlib", "corpora.loaders.stdlib:StdlibConfig"),
    "npm": ("corpora.loaders.npm:load_npm", "corpora.loaders.npm:NpmConfig"),
}
"""Built-in loader name -> (loader function, config class), as ``"module:attr"`` entry points."""

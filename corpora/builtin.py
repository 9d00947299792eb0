"""Registration of the built-in corpus loaders.

Role: the one place where built-in loaders get their short names. The
registry imports this module on first use, so importing :mod:`corpora` has
no side effects.

Contract: :func:`register_builtins` registers ``tree``, ``jsonl``,
``parquet``, ``hf``, ``stdlib`` and ``npm``; the registry calls it exactly once.
"""

from __future__ import annotations

from corpora.loaders.hf import HFConfig, load_hf
from corpora.loaders.jsonl import JsonlConfig, load_jsonl
from corpora.loaders.npm import NpmConfig, load_npm
from corpora.loaders.parquet import ParquetConfig, load_parquet
from corpora.loaders.stdlib import StdlibConfig, load_stdlib
from corpora.loaders.tree import TreeConfig, load_tree
from corpora.registry import register_loader

__all__ = ["BUILTIN_LOADERS", "register_builtins"]

BUILTIN_LOADERS = ("tree", "jsonl", "parquet", "hf", "stdlib", "npm")
"""Names of the built-in loaders."""


def register_builtins() -> None:
    """Register the built-in loaders (called once, by the registry)."""
    register_loader("tree", config=TreeConfig)(load_tree)
    register_loader("jsonl", config=JsonlConfig)(load_jsonl)
    register_loader("parquet", config=ParquetConfig)(load_parquet)
    register_loader("hf", config=HFConfig)(load_hf)
    register_loader("stdlib", config=StdlibConfig)(load_stdlib)
    register_loader("npm", config=NpmConfig)(load_npm)

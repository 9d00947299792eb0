"""Where envwright keeps what it fetches or derives once per machine: ``$ENVWRIGHT_CACHE`` (default
``~/.cache/envwright``), a folder per kind (``npm`` packages, de-quantised ``gguf`` models)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir"]


def cache_dir(kind: str) -> Path:
    """The cache folder of ``kind`` (not created)."""
    base = os.environ.get("ENVWRIGHT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "envwright")
    return Path(base) / kind

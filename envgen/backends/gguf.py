"""A GGUF model file as a transformers folder, for engines that load only such folders (vLLM).

:func:`dequantized` de-quantises a ``.gguf`` once (transformers reads it with ``gguf_file=``) and saves the
weights, config and tokenizer under ``$ENVWRIGHT_CACHE/gguf/<name>-<key>`` (:func:`corpora.cache.cache_dir`);
the key digests the file's resolved path, size and modification time, so a changed file is de-quantised
again and an unchanged one is read from the cache. The folder is written beside its final name and renamed
into place, so a killed conversion leaves no half folder that a later run would load.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

from envgen.errors import BackendError, install_hint

__all__ = ["cache_folder", "dequantized", "is_gguf"]


def is_gguf(model: str | None) -> bool:
    """Whether ``model`` names a GGUF file on this machine."""
    return bool(model) and str(model).endswith(".gguf") and Path(str(model)).is_file()


def cache_folder(model: str | Path, *, cache: Path | None = None) -> Path:
    """Where :func:`dequantized` keeps the folder of the GGUF file ``model`` as it is now."""
    from corpora.cache import cache_dir

    path = Path(model).expanduser().resolve()
    st = path.stat()
    key = hashlib.sha256(f"{path}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:16]
    return (cache or cache_dir("gguf")) / f"{path.stem}-{key}"


def dequantized(model: str | Path, *, dtype: str = "bfloat16", cache: Path | None = None) -> Path:
    """The transformers folder of the GGUF file ``model`` (weights in ``dtype``), converted on first use."""
    path = Path(model).expanduser().resolve()
    if not path.is_file():
        raise BackendError(f"no GGUF file at {model}: give the path of a .gguf file")
    out = cache_folder(path, cache=cache)
    root = out.parent
    if (out / "config.json").is_file():
        return out
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:
        missing = e.name or "transformers"
        raise BackendError(f"de-quantising {path.name} needs transformers and torch ({missing} is missing): "
                           f"{install_hint(missing, 'train')}") from None
    try:
        loaded: Any = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                           dtype=getattr(torch, dtype))
        tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    except (OSError, ValueError, RuntimeError) as e:
        raise BackendError(f"transformers cannot read the GGUF file {path}: {e}") from None
    # transformers keeps the GGUF quantizer attached after de-quantising, and save_pretrained refuses a
    # quantized model: the weights are plain tensors now, so detach it.
    loaded.hf_quantizer = None
    loaded.config.quantization_config = None
    if hasattr(loaded, "is_quantized"):
        loaded.is_quantized = False
    tmp = root / f".{out.name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    loaded.save_pretrained(str(tmp))
    tok.save_pretrained(str(tmp))
    if (out / "config.json").is_file():  # another process converted it meanwhile
        shutil.rmtree(tmp, ignore_errors=True)
        return out
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out

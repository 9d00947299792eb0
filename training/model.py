"""Loading the policy (model, tokenizer, optional LoRA) and choosing its generator.

:func:`load_policy` reads ``model:`` (a hub id, a local folder, or a GGUF file
that transformers de-quantises), sets the chat template (``trl:qwen3`` loads
TRL's bundled template), pads on the left with a pad token, and wraps the model
in a PEFT LoRA adapter when ``model.lora_r > 0``. :func:`make_generator` picks
the engine of ``generation:`` (:func:`~training.trl_config.resolve_engine`: vLLM when installed on CUDA for
``auto``, else Hugging Face ``generate`` with the configured fast path). :func:`open_policy_run` is the
start every in-process trainer shares (self-play, distillation, the fixed-environment
baseline): run folder, seeds, the checkpoint to resume, the policy, its GRPO settings and
optimizer.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envgen.errors import install_hint
from training.attention import attention_for, register_attention
from training.checkpoint import find_checkpoint, seed_everything
from training.config import TrainConfig
from training.errors import ConfigError
from training.generation import Generator, TransformersGenerator
from training.loss import UpdateConfig, make_optimizer, update_config
from training.parallel import engine_start
from training.trl_config import (
    generation_autocast,
    resolve_device,
    resolve_dtype_name,
    resolve_engine,
    to_grpo_config,
)

__all__ = ["context_window", "eos_ids_of", "load_chat_template", "load_policy", "load_tokenizer", "make_generator",
           "peft_config"]

_TORCH_DTYPES = {"bf16": "bfloat16", "bf16-mixed": "float32", "fp16": "float16", "fp32": "float32"}  # weights


def _source(cfg: TrainConfig, path: str | None = None) -> tuple[str, dict[str, Any]]:
    name = path or cfg.model.name_or_path
    kwargs: dict[str, Any] = {"trust_remote_code": cfg.model.trust_remote_code}
    gguf = cfg.model.gguf_file if path is None else None
    p = Path(name)
    if gguf is None and p.suffix == ".gguf" and p.is_file():
        name, gguf = str(p.parent), p.name
    if gguf:
        kwargs["gguf_file"] = gguf
    return name, kwargs


def load_chat_template(spec: str) -> str:
    """A chat template (``model.chat_template``) from ``trl:NAME`` (TRL's bundled ``NAME.jinja``) or a file path."""
    if spec.startswith("trl:"):
        import trl

        name = spec[4:].removesuffix(".jinja")
        path = Path(trl.__file__).parent / "chat_templates" / f"{name}.jinja"
        if not path.is_file():
            names = sorted(p.stem for p in path.parent.glob("*.jinja"))
            raise ConfigError(f"model.chat_template: TRL bundles no template {name!r}; choose one of "
                              f"{', '.join('trl:' + n for n in names)}")
        return path.read_text(encoding="utf-8")
    path = Path(spec)
    if not path.is_file():
        raise ConfigError(f"model.chat_template: no template file at {path}; use trl:qwen3 or a .jinja path")
    return path.read_text(encoding="utf-8")


#: a tokenizer's ``model_max_length`` at or above this is transformers' "not set" (``VERY_LARGE_INTEGER``)
_UNSET_LENGTH = 10**9


def context_window(model: Any, tokenizer: Any = None) -> int | None:
    """The most tokens (prompt and completion) ``model`` reads: its config's ``max_position_embeddings`` (or
    ``n_positions``, ``max_seq_len``), and the tokenizer's ``model_max_length`` where it is set, whichever is
    smaller; None when neither says."""
    config = getattr(model, "config", None)
    limits = [getattr(config, name, None) for name in ("max_position_embeddings", "n_positions", "max_seq_len")]
    limits.append(getattr(tokenizer, "model_max_length", None))
    known = [int(n) for n in limits if isinstance(n, int) and not isinstance(n, bool) and 0 < n < _UNSET_LENGTH]
    return min(known) if known else None


def load_tokenizer(cfg: TrainConfig, path: str | None = None) -> Any:
    """The tokenizer, left-padded, with a pad token and the configured chat template."""
    from transformers import AutoTokenizer

    name, kwargs = _source(cfg, path)
    tok = AutoTokenizer.from_pretrained(name, **kwargs)
    if cfg.model.chat_template:
        tok.chat_template = load_chat_template(cfg.model.chat_template)
    tok.padding_side = "left"
    if tok.pad_token_id is None:
        if tok.eos_token_id is None:
            raise ConfigError(f"the tokenizer of {name} has neither a pad nor an eos token")
        tok.pad_token = tok.eos_token
    return tok


def peft_config(cfg: TrainConfig) -> Any:
    """The LoRA config for ``model.lora_*`` (None when ``lora_r == 0``)."""
    if cfg.model.lora_r <= 0:
        return None
    try:
        from peft import LoraConfig
    except ImportError:
        raise ConfigError(f"model.lora_r > 0 needs peft: {install_hint('peft')}") from None
    return LoraConfig(r=cfg.model.lora_r, lora_alpha=cfg.model.lora_alpha, lora_dropout=cfg.model.lora_dropout,
                      target_modules=cfg.model.lora_target_modules, task_type="CAUSAL_LM")


def load_policy(cfg: TrainConfig, path: str | None = None, *, wrap_lora: bool = True,
                device: str | None = None) -> tuple[Any, Any]:
    """``(model, tokenizer)`` on the configured device; LoRA-wrapped when configured.

    ``path`` loads from a checkpoint folder instead of ``model.name_or_path`` (a folder holding a
    LoRA adapter is loaded on top of the base model).
    """
    import torch
    from transformers import AutoModelForCausalLM

    cfg.require_model()
    device = device or resolve_device(cfg)
    dtype = getattr(torch, _TORCH_DTYPES[resolve_dtype_name(cfg, device)])
    adapter = path is not None and (Path(path) / "adapter_config.json").is_file()
    name, kwargs = _source(cfg, None if adapter else path)
    if cfg.model.attn_implementation:
        kwargs["attn_implementation"] = cfg.model.attn_implementation
    model: Any = AutoModelForCausalLM.from_pretrained(name, dtype=dtype, **kwargs)
    if "gguf_file" in kwargs:
        # transformers de-quantises GGUF weights to ``dtype`` on load but keeps the quantizer attached,
        # which makes Trainer refuse to fine-tune and save_pretrained refuse to save: detach it.
        model.hf_quantizer = None
        model.config.quantization_config = None
        if hasattr(model, "is_quantized"):
            model.is_quantized = False
    tok = load_tokenizer(cfg, path if path and (Path(path) / "tokenizer_config.json").is_file() else None)
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tok.pad_token_id
    model.to(device)
    if not cfg.model.attn_implementation:
        precision = resolve_dtype_name(cfg, device)
        attention = attention_for(model.config, device=device, weights_dtype=_TORCH_DTYPES[precision],
                                  autocast=precision == "bf16-mixed")
        if attention is not None:  # fp32 on CUDA: keep SDPA's memory-efficient kernel (training.attention)
            register_attention()
            model.set_attn_implementation(attention)
    if cfg.model.gradient_checkpointing:
        (getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable)()
        model.config.use_cache = False
    if adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(path), is_trainable=True)
    elif wrap_lora and cfg.model.lora_r > 0:
        from peft import get_peft_model

        model = get_peft_model(model, peft_config(cfg))
    return model, tok


def eos_ids_of(model: Any, tokenizer: Any) -> list[int]:
    """End-of-sequence ids: the generation config's and the tokenizer's."""
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return sorted(int(i) for i in ids)


def make_generator(cfg: TrainConfig, model: Any, tokenizer: Any, *, accelerator: Any = None,
                   engine: str | None = None) -> Generator:
    """The generator ``generation.engine`` asks for (see the module docstring); ``engine="transformers"``: the
    trainer's own model whatever the config says (what only it can do, such as going on under a grammar from a
    prefix: :mod:`training.format_recovery`)."""
    g = cfg.generation
    eos = eos_ids_of(model, tokenizer)
    if (engine or resolve_engine(cfg)) == "vllm":
        from training.vllm_generator import VLLMGenerator

        if accelerator is None:
            from accelerate import Accelerator

            accelerator = Accelerator()
        with engine_start():  # side-by-side processes start their engines one at a time
            return VLLMGenerator(eos_ids=eos, model=model, accelerator=accelerator, tokenizer=tokenizer,
                                 mode=g.vllm_mode, gpu_memory_utilization=g.vllm_gpu_memory_utilization,
                                 server_base_url=g.vllm_server_base_url, server_host=g.vllm_server_host,
                                 server_port=g.vllm_server_port, group_port=g.vllm_group_port,
                                 server_timeout=g.vllm_server_timeout, max_model_length=g.vllm_max_model_length,
                                 max_num_seqs=g.batch_size, sleep=g.vllm_sleep,
                                 prefix_grammar=g.vllm_prefix_grammar)
    return TransformersGenerator(model, eos_ids=eos, pad_id=tokenizer.pad_token_id, batch_size=g.batch_size,
                                 sort_by_length=g.sort_by_length, static_cache=g.static_cache, compile=g.compile,
                                 autocast_bf16=generation_autocast(cfg), tokenizer=tokenizer)


@dataclass
class PolicyRun:
    """What an in-process trainer starts from (:func:`open_policy_run`)."""

    run_dir: Path  #: ``run.output_dir``, created
    resume_from: Path | None  #: the checkpoint ``run.resume`` names (its ``model/`` was loaded), or None
    model: Any
    tokenizer: Any
    grpo: Any  #: ``trl.GRPOConfig`` of the optimizer and loss knobs (``for_trl=False``)
    update_cfg: UpdateConfig
    optimizer: Any


def open_policy_run(cfg: TrainConfig, model: Any = None, tokenizer: Any = None) -> PolicyRun:
    """Create the run folder, seed everything, find the checkpoint ``run.resume`` names and load the policy
    from it (or from ``model:``; ``model`` and ``tokenizer`` given are used as they are), then build its GRPO
    settings, update config and optimizer. The trainer restores its optimizer state from ``resume_from``."""
    run_dir = Path(cfg.run.output_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    seed_everything(cfg.run.seed)
    resume = find_checkpoint(cfg.run.resume, run_dir)
    if model is None or tokenizer is None:
        model, tokenizer = load_policy(cfg, str(resume / "model") if resume else None)
    grpo = to_grpo_config(cfg, run_dir / "trainer", for_trl=False)
    ucfg = update_config(grpo, cfg.rollout.temperature, steps_per_generation=cfg.grpo.get("steps_per_generation"),
                         max_batch_tokens=cfg.model.micro_batch_tokens)
    return PolicyRun(run_dir, resume, model, tokenizer, grpo, ucfg, make_optimizer(model, grpo))

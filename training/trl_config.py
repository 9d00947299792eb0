"""What a training config sets in the libraries: the device, the dtype and TRL's ``GRPOConfig``.

:func:`resolve_device`, :func:`resolve_dtype_name` and :func:`resolve_engine` read ``model.device``,
``model.dtype`` and ``generation.engine`` (``auto`` becomes what this machine has);
:func:`generation_autocast` says whether HF generation runs under bf16 autocast. :func:`to_grpo_config`
builds ``trl.GRPOConfig`` from the ``grpo`` section plus the fields our sections own
(:data:`training.config.DERIVED_GRPO_FIELDS`), naming a misspelt ``grpo`` key and TRL's own objections as
:class:`~training.errors.ConfigError`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from corpora.errors import did_you_mean
from training.config import TrainConfig, value_problem, yaml_number
from training.errors import ConfigError

__all__ = ["generation_autocast", "resolve_device", "resolve_dtype_name", "resolve_engine", "to_grpo_config"]


def resolve_device(cfg: TrainConfig) -> str:
    """``cpu`` or ``cuda[:N]`` for ``model.device``."""
    import torch

    if cfg.model.device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if cfg.model.device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError("model.device is cuda but no CUDA device is visible; set --set model.device=cpu")
    return cfg.model.device


def resolve_dtype_name(cfg: TrainConfig, device: str) -> str:
    """``bf16``, ``bf16-mixed`` (fp32 weights, bf16 autocast; CUDA only), ``fp16`` or ``fp32``."""
    d = cfg.model.dtype
    if d == "auto":
        return "bf16" if device.startswith("cuda") else "fp32"
    if d == "bf16-mixed":
        return d if device.startswith("cuda") else "fp32"
    return {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}.get(d, d)


def resolve_engine(cfg: TrainConfig) -> str:
    """``transformers`` or ``vllm`` for ``generation.engine`` (``auto``: vLLM when installed and on CUDA)."""
    import importlib.util

    if cfg.generation.engine != "auto":
        return cfg.generation.engine
    vllm = importlib.util.find_spec("vllm") is not None
    return "vllm" if vllm and resolve_device(cfg).startswith("cuda") else "transformers"


def generation_autocast(cfg: TrainConfig) -> bool:
    """Whether HF generation runs under bf16 autocast: ``model.dtype: bf16-mixed`` on CUDA."""
    return resolve_dtype_name(cfg, resolve_device(cfg)) == "bf16-mixed"


def to_grpo_config(cfg: TrainConfig, output_dir: str | Path | None = None, *, for_trl: bool = True,
                   **extra: Any) -> Any:
    """``trl.GRPOConfig`` from ``cfg.grpo`` plus the fields our sections own.

    ``for_trl=False`` (the self-play and distillation updates read only the optimizer and loss knobs)
    neutralises GRPOTrainer's batch-shape rules, which do not apply to them.
    """
    from trl import GRPOConfig

    device = resolve_device(cfg)
    dtype = resolve_dtype_name(cfg, device)
    kwargs = {k: yaml_number(v) for k, v in cfg.grpo.items()}
    kwargs.update(
        output_dir=str(output_dir or cfg.run.output_dir), seed=cfg.run.seed,
        report_to=list(cfg.run.report_to) or "none", run_name=cfg.run.run_name,
        num_generations=cfg.solver.num_generations, max_completion_length=cfg.rollout.max_completion_tokens,
        temperature=max(cfg.rollout.temperature, 1e-5), top_p=cfg.rollout.top_p,
        use_cpu=device == "cpu", bf16=dtype in ("bf16", "bf16-mixed") and device != "cpu",
        fp16=dtype == "fp16" and device != "cpu",
    )
    if cfg.model.gradient_checkpointing:
        kwargs["gradient_checkpointing"] = True
    if resolve_engine(cfg) == "vllm":
        g = cfg.generation
        kwargs.update(use_vllm=True, vllm_mode=g.vllm_mode, vllm_gpu_memory_utilization=g.vllm_gpu_memory_utilization,
                      vllm_enable_sleep_mode=g.vllm_sleep, vllm_max_model_length=g.vllm_max_model_length)
        if g.vllm_mode == "server":  # TRL reads the host and port only when no base URL is given
            kwargs.update(vllm_server_port=g.vllm_server_port, vllm_group_port=g.vllm_group_port,
                          vllm_server_timeout=g.vllm_server_timeout)
            if g.vllm_server_base_url:
                kwargs["vllm_server_base_url"] = g.vllm_server_base_url
            if g.vllm_server_host:
                kwargs["vllm_server_host"] = g.vllm_server_host
    if not for_trl:
        bs = int(kwargs.get("per_device_train_batch_size", 8))
        spg = kwargs.pop("steps_per_generation", None)
        if spg is not None and (not isinstance(spg, int) or isinstance(spg, bool) or spg < 1):
            raise ConfigError(f"grpo.steps_per_generation must be a whole number >= 1 (or null), got {spg!r}")
        kwargs.update(num_generations=2, generation_batch_size=2 * bs)
    kwargs.update(extra)
    names = {f.name for f in dataclasses.fields(GRPOConfig)}
    unknown = [k for k in kwargs if k not in names]
    if unknown:
        hint = did_you_mean(unknown[0], names, n=1, show=lambda c: f"grpo.{c}")
        raise ConfigError(f"grpo.{unknown[0]} is not a field of trl.GRPOConfig{hint}")
    for key in cfg.grpo:  # TRL's dataclass checks no types: a wrong one would fail deep inside the optimizer
        if key in kwargs:  # not steps_per_generation popped above (the self-play update reads it from cfg.grpo)
            kwargs[key] = _typed(GRPOConfig, key, kwargs[key])
    try:
        return GRPOConfig(**kwargs)
    except (ValueError, TypeError) as e:
        raise ConfigError(f"grpo: trl.GRPOConfig rejected the settings: {e}") from None


def _typed(config_cls: Any, key: str, value: Any) -> Any:
    """``value`` checked (and gently coerced: ``"1e-5"`` is a number) against the annotation of ``config_cls.key``."""
    import typing

    from pydantic import TypeAdapter, ValidationError

    try:
        hint = typing.get_type_hints(config_cls)[key]
        adapter: TypeAdapter[Any] = TypeAdapter(hint)
    except (NameError, TypeError):  # an annotation typing or pydantic cannot read: leave the value to TRL
        return value
    try:
        return adapter.validate_python(value)
    except ValidationError as e:
        raise ConfigError(value_problem(f"grpo.{key}", value, e.errors())) from None

"""Model backends, keyed by short name: ``transformers``, ``vllm``, ``openai``, ``scripted``.

One registry serves the generator's LLM proposer, the evaluator's policies and
the trainer. The two that sample from a local model, :data:`ENGINES` (``transformers``: the CPU default;
``vllm``: a GPU), are the *generation engines*: ``--engine`` on every command and ``generation.engine`` in a
training config take these names, and :func:`make_engine` builds one from the options both understand.

Every backend implements :meth:`Backend.generate` (a batch of
chats or strings in, ``len(prompts) * n`` :class:`Completion` objects out,
prompt-major; see :mod:`envgen.backends.base` for the full contract). Entries
are lazy, so importing this package imports neither torch nor vLLM nor the
OpenAI client.

Example::

    from envgen.backends import make_backend

    backend = make_backend("transformers", "Qwen/Qwen3-0.6B", device="cpu")
    [c] = backend.generate([[{"role": "user", "content": "Hi"}]], max_new_tokens=32, seed=0)
    print(c.text, c.prompt_tokens, c.completion_tokens, c.finish_reason)
"""

from __future__ import annotations

from typing import Any

from corpora.registry import Registry
from envgen.backends.base import Backend, Completion, Message, Prompt, approx_tokens
from envgen.errors import BackendError, BackendNotInstalledError

BACKENDS: Registry[Any] = Registry("backend")
BACKENDS.register("transformers", "envgen.backends.transformers_local:TransformersBackend")
BACKENDS.register("vllm", "envgen.backends.vllm_offline:VLLMBackend")
BACKENDS.register("openai", "envgen.backends.openai_compat:OpenAIBackend")
BACKENDS.register("scripted", "envgen.backends.scripted:ScriptedBackend")


#: The generation engines: the backends that sample from a local model (module docstring).
ENGINES = ("transformers", "vllm")


def make_backend(name: str | Backend, model: str | None = None, **options: Any) -> Backend:
    """Build the backend registered as ``name`` for ``model`` (a :class:`Backend` passes through)."""
    if isinstance(name, Backend):
        return name
    return BACKENDS.get(name)(model=model, **options)


def make_engine(name: str, model: str, *, device: str = "auto", dtype: str = "auto",
                batch_size: int | None = None, options: dict[str, Any] | None = None) -> Backend:
    """The generation engine ``name`` (:data:`ENGINES`) for ``model``: ``device`` and ``dtype`` of the weights,
    ``batch_size`` rows decoded at once (transformers: rows per ``generate`` call; vLLM: its ``max_num_seqs``;
    None: all / vLLM's default), ``options`` the backend's own options beside them (its Options class, e.g.
    vLLM's ``gpu_memory_utilization``). vLLM runs on the GPU it finds: a ``device`` other than ``auto`` or ``cuda``
    is refused."""
    from corpora.errors import did_you_mean

    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}{did_you_mean(name, ENGINES, n=1)} (engines: {', '.join(ENGINES)})")
    if name == "transformers":
        return make_backend(name, model, device=device, dtype=dtype, batch_size=batch_size, **(options or {}))
    if device != "auto" and not device.startswith("cuda"):
        raise BackendError(f"the vllm engine runs on a GPU; device {device!r} cannot be used with it (leave the "
                           "device at auto, or use the transformers engine)")
    opts = dict(options or {})
    engine_kwargs = {**opts.pop("engine_kwargs", {}), **({"max_num_seqs": batch_size} if batch_size else {})}
    return make_backend(name, model, dtype=dtype, engine_kwargs=engine_kwargs, **opts)


__all__ = [
    "BACKENDS",
    "ENGINES",
    "Backend",
    "BackendError",
    "BackendNotInstalledError",
    "Completion",
    "Message",
    "Prompt",
    "approx_tokens",
    "make_backend",
    "make_engine",
]

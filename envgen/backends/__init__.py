"""Model backends, keyed by short name: ``transformers``, ``vllm``, ``openai``, ``scripted``.

One registry serves the generator's LLM proposer, the evaluator's policies and
the trainer. Every backend implements :meth:`Backend.generate` (a batch of
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


def make_backend(name: str | Backend, model: str | None = None, **options: Any) -> Backend:
    """Build the backend registered as ``name`` for ``model`` (a :class:`Backend` passes through)."""
    if isinstance(name, Backend):
        return name
    return BACKENDS.get(name)(model=model, **options)


__all__ = [
    "BACKENDS",
    "Backend",
    "BackendError",
    "BackendNotInstalledError",
    "Completion",
    "Message",
    "Prompt",
    "approx_tokens",
    "make_backend",
]

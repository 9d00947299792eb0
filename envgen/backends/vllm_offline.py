"""The ``vllm`` backend: offline batched generation with ``vllm.LLM``.

A ``model`` that is a ``.gguf`` file is de-quantised once into a transformers folder
(:func:`envgen.backends.gguf.dequantized`, cached under ``$ENVWRIGHT_CACHE/gguf``), which vLLM loads.

vLLM is an optional dependency (``pip install 'envwright[vllm]'``, GPU
machines); importing this module never imports it, building the backend does
and raises :class:`~envgen.errors.BackendNotInstalledError` with the
install command when it is missing.

Chats go through ``LLM.chat`` (the model's chat template, ``tools=`` when
given), strings through ``LLM.generate``, token contexts (:meth:`VLLMBackend.generate_tokens`) through
``LLM.generate`` with ``prompt_token_ids``; each prompt gets its own
``SamplingParams`` (its own ``max_tokens`` too) seeded with
:func:`~gym_envs.seeding.stable_seed`, so a prompt's completions do not depend on what else is in the batch.
The engine's ``max_model_len`` is the backend's :attr:`context_window`: every prompt's ``max_tokens`` is cut to
what the window leaves after it (:meth:`VLLMBackend.prompt_length`), and a prompt that leaves too little room
is not sent (:meth:`~envgen.backends.base.Backend.generate`; vLLM would refuse the whole call for it). Under a
``json_schema`` the prompt's ``SamplingParams`` carry vLLM's structured outputs with the schema's grammar
itself (:func:`compact_json_grammar`: ``StructuredOutputsParams(grammar=...)``, vLLM >= 0.11; the older
``guided_decoding=GuidedDecodingParams(json=schema, whitespace_pattern="")`` on earlier releases): the JSON the
``transformers`` backend's grammar admits, no free whitespace. vLLM 0.26 reads ``disable_any_whitespace`` only
from the engine's ``structured_outputs_config`` and ignores the request's, so a row given ``json=schema`` decoded
whitespace-flexible JSON (tabs and newlines between the keys) on an engine built without it; the grammar in the
request holds whatever engine serves it (ours, a TRL trainer's, a server).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from corpora.registry import build_config
from envgen.backends.base import Backend, Completion, Prompt, check_sampling, too_long_completion
from envgen.backends.gguf import dequantized, is_gguf
from envgen.backends.repeats import short_repeats
from envgen.errors import BackendError, BackendNotInstalledError
from gym_envs.seeding import stable_seed

__all__ = ["VLLMBackend", "VLLMOptions", "compact_json_grammar"]


def compact_json_grammar(schema: dict[str, Any]) -> str:
    """The EBNF grammar (xgrammar's, which vLLM's xgrammar backend compiles) of the JSON ``schema`` admits, in
    the schema's property order and without free whitespace: the grammar the ``transformers`` backend decodes
    under (:class:`envgen.backends.transformers_local.JsonGrammars`), long repetitions in patterns cut
    (:func:`~envgen.backends.repeats.short_repeats`). Converted once per schema content."""
    return _grammar_of(json.dumps(short_repeats(schema)))


@functools.lru_cache(maxsize=64)
def _grammar_of(schema_json: str) -> str:
    try:
        import xgrammar as xgr
    except ImportError as e:
        raise BackendNotInstalledError("constrained decoding (xgrammar)", e.name or "xgrammar", "constrained") from None
    try:
        return str(xgr.Grammar.from_json_schema(schema_json, any_whitespace=False))
    except (RuntimeError, ValueError) as e:  # xgrammar's errors for schema features it lacks
        raise BackendError(f"xgrammar cannot compile this JSON schema: {e}") from None


def _max_model_len(llm: Any) -> int | None:
    """The context window an engine was built with (``max_model_len``: the model's, or the one asked for)."""
    config = getattr(llm, "model_config", None) or getattr(getattr(llm, "llm_engine", None), "model_config", None)
    window = getattr(config, "max_model_len", None)
    return int(window) if isinstance(window, int) and window > 0 else None


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError:
        raise BackendNotInstalledError("vllm", "vllm", "vllm") from None
    return vllm


@dataclass(kw_only=True)
class VLLMOptions:
    """Options of the ``vllm`` backend (what ``vllm.LLM`` is built with)."""

    tensor_parallel_size: int = 1  #: GPUs the model is split over
    dtype: str = "auto"  #: weights' dtype (``auto``, ``bfloat16``, ``float16``, ...)
    gpu_memory_utilization: float = 0.9  #: share of each GPU's memory vLLM may take
    max_model_len: int | None = None  #: context length (default: the model's)
    seed: int = 0  #: the engine's seed
    enable_prefix_caching: bool = True  #: reuse the KV cache of shared prompt prefixes
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)  #: e.g. ``{"enable_thinking": False}``
    engine_kwargs: dict[str, Any] = field(default_factory=dict)  #: more ``vllm.LLM`` keyword arguments
    llm: Any = None  #: an engine already built (``model`` may then be left out)


class VLLMBackend(Backend):
    """An in-process vLLM engine; ``options`` are :class:`VLLMOptions`' fields."""

    name = "vllm"
    Options = VLLMOptions
    token_level = True
    per_prompt_budgets = True

    def __init__(self, model: str | None = None, **options: Any):
        opts: VLLMOptions = build_config(VLLMOptions, options=options, owner="backend 'vllm'")
        llm = opts.llm
        if not model and llm is None:
            raise BackendError("the vllm backend needs a model name or path (--model)")
        super().__init__(model)
        self._vllm = _import_vllm()
        self.chat_template_kwargs = dict(opts.chat_template_kwargs or {})
        if llm is None:
            if is_gguf(model):  # vLLM reads transformers folders: a GGUF file is de-quantised once, cached
                model = str(dequantized(str(model)))
            kwargs: dict[str, Any] = {"model": model, "tensor_parallel_size": opts.tensor_parallel_size,
                                      "dtype": opts.dtype, "gpu_memory_utilization": opts.gpu_memory_utilization,
                                      "seed": opts.seed, "enable_prefix_caching": opts.enable_prefix_caching}
            if opts.max_model_len:
                kwargs["max_model_len"] = opts.max_model_len
            llm = self._vllm.LLM(**kwargs, **(opts.engine_kwargs or {}))
        self.llm = llm
        self.context_window = _max_model_len(llm)

    @property
    def tokenizer(self) -> Any:  # type: ignore[override]
        return self.llm.get_tokenizer() if self.llm is not None else None

    def generate_tokens(self, contexts: Sequence[Sequence[int]], *, max_new_tokens: int = 512,
                        temperature: float = 0.7, top_p: float = 1.0, seed: int = 0) -> list[Completion]:
        """Continue token contexts as they are (``prompt_token_ids``), one ``SamplingParams`` per context."""
        check_sampling(max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p)
        window = self.context_window
        budgets = [max_new_tokens if window is None else min(max_new_tokens, window - len(c)) for c in contexts]
        done: dict[int, Completion] = {}
        if window is not None:  # a context that fills the window is not sent (vLLM refuses the whole call)
            done.update((i, too_long_completion(len(contexts[i]), window, 1, self.model_id))
                        for i in range(len(contexts)) if budgets[i] < 1)
        fit = [i for i in range(len(contexts)) if i not in done]
        params = [self._params(i, max_new_tokens=budgets[i], temperature=temperature, top_p=top_p, seed=seed,
                               n=1, stop=None) for i in fit]
        outs = self.llm.generate([{"prompt_token_ids": list(contexts[i])} for i in fit], params,
                                 use_tqdm=False) if fit else []
        for i, req in zip(fit, outs, strict=True):
            o = req.outputs[0]
            done[i] = Completion(text=o.text, prompt_tokens=len(contexts[i]), completion_tokens=len(o.token_ids),
                                 finish_reason="length" if o.finish_reason == "length" else "stop",
                                 token_ids=list(o.token_ids))
        return [done[i] for i in range(len(contexts))]

    def count_tokens(self, text: str) -> int:
        return len(self.llm.get_tokenizer().encode(text, add_special_tokens=False))

    def prompt_length(self, prompt: Prompt, tools: list[dict[str, Any]] | None = None) -> int | None:
        """Tokens of a prompt as ``LLM.chat`` (a chat: the tokenizer's chat template) or ``LLM.generate`` (a
        string) reads it; None when the tokenizer has no chat template (vLLM then uses its own)."""
        tok = self.tokenizer
        if isinstance(prompt, str):
            return len(tok.encode(prompt))
        if not getattr(tok, "chat_template", None):
            return None
        text = tok.apply_chat_template(prompt, tools=tools, add_generation_prompt=True, tokenize=False,
                                       **self.chat_template_kwargs)
        return len(tok.encode(text, add_special_tokens=False))

    def _structured(self, schema: dict[str, Any]) -> dict[str, Any]:
        """The ``SamplingParams`` keyword that constrains decoding to ``schema`` on this vLLM release."""
        sp = self._vllm.sampling_params
        if hasattr(sp, "StructuredOutputsParams"):
            return {"structured_outputs": sp.StructuredOutputsParams(grammar=compact_json_grammar(schema))}
        if hasattr(sp, "GuidedDecodingParams"):
            return {"guided_decoding": sp.GuidedDecodingParams(json=schema, whitespace_pattern="")}
        raise BackendError("this vLLM release has neither StructuredOutputsParams nor GuidedDecodingParams; "
                           "constrained decoding needs vLLM >= 0.6")

    def _params(self, index: int, *, max_new_tokens: int, temperature: float, top_p: float, seed: int, n: int,
                stop: list[str] | None, schema: dict[str, Any] | None = None) -> Any:
        extra = self._structured(schema) if schema is not None else {}
        return self._vllm.SamplingParams(n=n, max_tokens=max_new_tokens, temperature=temperature,
                                         top_p=top_p if temperature > 0 else 1.0,
                                         seed=stable_seed(seed, index), stop=stop or None, **extra)

    def _generate(self, prompts: list[Prompt], *, max_new_tokens: int | list[int], temperature: float,
                  top_p: float, seed: int, n: int, stop: list[str] | None, tools: list[dict[str, Any]] | None,
                  schemas: list[dict[str, Any] | None] | None = None) -> list[Completion]:
        budgets = [max_new_tokens] * len(prompts) if isinstance(max_new_tokens, int) else max_new_tokens
        params = [self._params(i, max_new_tokens=budgets[i], temperature=temperature, top_p=top_p,
                               seed=seed, n=n, stop=stop, schema=schemas[i] if schemas else None)
                  for i in range(len(prompts))]
        chats = [i for i, p in enumerate(prompts) if not isinstance(p, str)]
        texts = [i for i, p in enumerate(prompts) if isinstance(p, str)]
        results: dict[int, Any] = {}
        if chats:
            outs = self.llm.chat([prompts[i] for i in chats], [params[i] for i in chats], use_tqdm=False,
                                 tools=tools, chat_template_kwargs=self.chat_template_kwargs or None)
            results.update(zip(chats, outs, strict=True))
        if texts:
            outs = self.llm.generate([prompts[i] for i in texts], [params[i] for i in texts], use_tqdm=False)
            results.update(zip(texts, outs, strict=True))
        completions: list[Completion] = []
        for i in range(len(prompts)):
            req = results[i]
            n_prompt = len(req.prompt_token_ids or [])
            for o in req.outputs:
                finish = o.finish_reason or "stop"
                completions.append(Completion(text=o.text, prompt_tokens=n_prompt,
                                              completion_tokens=len(o.token_ids),
                                              finish_reason="length" if finish == "length" else "stop"))
        return completions

    def close(self) -> None:
        self.llm = None

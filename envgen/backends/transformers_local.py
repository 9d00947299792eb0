"""The ``transformers`` backend: a local Hugging Face causal LM, batched ``generate``.

Loads a model by hub name or local path (``from_pretrained``), or a GGUF file
(``gguf_file=``, or a model path ending in ``.gguf``; transformers de-quantises
it), or wraps a model and tokenizer already in memory
(:meth:`TransformersBackend.from_objects`, as the trainer does).

Contract (beyond :mod:`envgen.backends.base`):

* chats go through ``tokenizer.apply_chat_template(..., add_generation_prompt=True)``
  (with ``tools=`` when given, and ``chat_template_kwargs`` such as
  ``{"enable_thinking": False}``); strings are tokenised as they are;
* the batch is left-padded and generated in one ``generate`` call (or in
  chunks of ``batch_size``); each chunk is seeded with ``torch.manual_seed``
  inside ``torch.random.fork_rng``, so the global RNG is untouched and the same
  call gives the same completions;
* the text is decoded without the end-of-sequence and padding tokens (other
  special tokens, e.g. ``<tool_call>``, are kept unless
  ``skip_special_tokens=True``); token counts are exact;
* under a ``json_schema`` each row decodes through xgrammar's logits
  processor (``xgrammar.contrib.hf.LogitsProcessor``) with the grammar compiled
  from that row's schema (compact JSON: ``", "`` and ``": "`` separators, no
  free whitespace); compiled grammars are cached per schema. Rows with and
  without a schema share a batch (:class:`RowGrammars` masks only the
  constrained ones), and each prompt may have its own ``max_new_tokens``
  (the batch decodes to the largest; each completion is cut to its own);
* a completion ends at the model's context window (``max_position_embeddings``: :attr:`context_window`); a
  prompt that fills the window is not generated from and gets a failed completion (``finish_reason="error"``,
  ``meta["error_code"] == "too_long"``) that says so (:func:`~envgen.backends.base.too_long_completion`);
* each ``generate`` call shows a progress bar of decoding steps on a terminal
  (:class:`StepBar`; silent when stderr is not a terminal), since a CPU batch
  takes minutes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpora.registry import build_config
from envgen.backends.base import Backend, Completion, Prompt, check_sampling, too_long_completion, truncate_at_stop
from envgen.backends.repeats import short_repeats
from envgen.errors import BackendError, BackendNotInstalledError
from gym_envs.seeding import stable_seed

__all__ = ["JsonGrammars", "RowGrammars", "StepBar", "TransformersBackend", "TransformersOptions",
           "first_rejected", "grammar_processor", "resolve_device", "resolve_dtype"]


def resolve_device(device: str) -> str:
    """``auto`` is ``cuda`` when a GPU is visible, else ``cpu``; other values pass through."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise BackendError(f"device {device!r} was asked for but no CUDA device is visible; use device='cpu'")
    return device


_DTYPES = {"float32": "float32", "fp32": "float32", "float": "float32", "bfloat16": "bfloat16",
           "bf16": "bfloat16", "float16": "float16", "fp16": "float16", "half": "float16"}


def resolve_dtype(dtype: Any, device: str) -> Any:
    """``auto`` is bfloat16 on CUDA and float32 elsewhere; names like ``bf16`` map to torch dtypes."""
    import torch

    if dtype is None or dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    name = _DTYPES.get(str(dtype).lower())
    if name is None:
        raise BackendError(f"unknown dtype {dtype!r}; use one of auto, {', '.join(sorted(set(_DTYPES)))}")
    return getattr(torch, name)


class JsonGrammars:
    """xgrammar grammars of JSON Schemas for one tokenizer, compiled once per schema (compact JSON: no free
    whitespace; long repetitions in patterns cut, :func:`~envgen.backends.repeats.short_repeats`). The trainer's
    generator (:class:`training.generation.TransformersGenerator`) uses the same cache."""

    def __init__(self, tokenizer: Any, vocab_size: int, stop_token_ids: Any = None):
        try:
            import xgrammar as xgr
        except ImportError as e:
            raise BackendNotInstalledError("constrained decoding (xgrammar)", e.name or "xgrammar",
                                           "constrained") from None
        info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size,
                                                  stop_token_ids=list(stop_token_ids or []) or None)
        self.compiler = xgr.GrammarCompiler(info)
        self.cache: dict[str, Any] = {}

    def get(self, schema: dict[str, Any]) -> Any:
        key = json.dumps(schema, sort_keys=True)
        if key not in self.cache:
            try:  # compiled in the schema's own property order (the order the model is taught), cached by content
                self.cache[key] = self.compiler.compile_json_schema(json.dumps(short_repeats(schema)),
                                                                    any_whitespace=False)
            except (RuntimeError, ValueError) as e:  # xgrammar's errors for schema features it lacks
                raise BackendError(f"xgrammar cannot compile this JSON schema: {e}") from None
        return self.cache[key]


def grammar_processor(grammars: Sequence[Any], prefixes: Sequence[Any] | None = None) -> RowGrammars:
    """A ``transformers`` logits processor that constrains row ``i`` of one ``generate`` call to ``grammars[i]``
    (``None``: row ``i`` decodes freely), a fresh one per call (it holds the rows' matchers). ``prefixes[i]``
    (token ids, or None): row ``i``'s context ends with these tokens of its grammar's text already, so its
    matcher starts after them."""
    return RowGrammars(list(grammars), [list(p or []) for p in prefixes] if prefixes is not None else None)


class RowGrammars:
    """A ``transformers`` logits processor with one xgrammar matcher per constrained row of a batch.

    Row ``i`` is masked to what ``grammars[i]`` admits next; a row whose grammar is ``None`` is left as it is,
    so constrained and free rows decode in one batch (self-play's two proposal streams). Row ``i`` may also
    continue a text its grammar has already accepted ``prefixes[i]`` of (the format recovery of
    :mod:`training.format_recovery` goes on from where a completion written without the grammar left it).
    Raises ``ValueError`` when a grammar rejects its prefix (the caller cuts it at the first rejected token:
    :func:`first_rejected`) or a prefix is given for a free row.
    """

    def __init__(self, grammars: list[Any], prefixes: list[list[int]] | None = None):
        import xgrammar as xgr

        prefixes = prefixes if prefixes is not None else [[] for _ in grammars]
        if len(grammars) != len(prefixes):
            raise ValueError(f"{len(prefixes)} prefixes for {len(grammars)} grammars")
        self.matchers: list[Any] = []
        for row, (grammar, prefix) in enumerate(zip(grammars, prefixes, strict=True)):
            if grammar is None:
                if prefix:
                    raise ValueError(f"row {row}: a grammar prefix for a row without a grammar")
                self.matchers.append(None)
                continue
            matcher = xgr.GrammarMatcher(grammar)
            for i, token in enumerate(prefix):
                if matcher.is_terminated() or not matcher.accept_token(int(token)):
                    raise ValueError(f"row {row}: the grammar rejects token {i} ({token}) of its prefix; cut the "
                                     "prefix before it (first_rejected)")
            self.matchers.append(matcher)
        first = next((g for g in grammars if g is not None), None)
        self.bitmask = (xgr.allocate_token_bitmask(len(grammars), first.tokenizer_info.vocab_size)
                        if first is not None else None)
        self.started = False

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import xgrammar as xgr

        if input_ids.shape[0] != len(self.matchers):
            raise RuntimeError(f"{input_ids.shape[0]} rows for {len(self.matchers)} grammars")
        if self.bitmask is None:  # no constrained row
            return scores
        if self.started:  # the token sampled at the previous step (the first call sees the context only)
            last = input_ids[:, -1].tolist()  # one device-to-host copy a step, not one a row
            for i, matcher in enumerate(self.matchers):
                if matcher is not None and not matcher.is_terminated() and not matcher.accept_token(int(last[i])):
                    raise RuntimeError(f"row {i}: a token the grammar masked out was sampled")
        self.started = True
        rows = [i for i, m in enumerate(self.matchers) if m is not None and not m.is_terminated()]
        if not rows:
            return scores
        for i in rows:
            self.matchers[i].fill_next_token_bitmask(self.bitmask, i)
        on_gpu = scores.device.type == "cuda"
        target = scores if on_gpu else scores.to("cpu")
        xgr.apply_token_bitmask_inplace(target, self.bitmask.to(target.device), indices=rows)
        return target if on_gpu else target.to(scores.device)


def first_rejected(grammar: Any, token_ids: Any) -> int | None:
    """Where a completion written without ``grammar`` first leaves it: the index of the first token the grammar
    rejects (or the first after the grammar's text ended); ``len(token_ids)`` when it accepts them all but the
    text is unfinished (cut by the token budget); None when the completion is one the grammar could have
    written, stop token included."""
    import xgrammar as xgr

    matcher = xgr.GrammarMatcher(grammar)
    for i, token in enumerate(token_ids):
        if matcher.is_terminated() or not matcher.accept_token(int(token)):
            return i
    return None if matcher.is_terminated() else len(token_ids)


class StepBar:
    """A ``transformers`` logits processor that only counts decoding steps on a tqdm bar (scores unchanged).

    ``generate`` calls its logits processors once per new token of the batch, so the bar moves once per
    step whatever the batch size; it closes itself when the call ends (:meth:`close`).
    """

    def __init__(self, total: int, rows: int) -> None:
        from tqdm.auto import tqdm

        self.total, self.steps = total, 0
        self.bar = tqdm(total=total, desc=f"decoding {rows} row{'s' * (rows != 1)}", unit="tok", leave=False,
                        disable=None)

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        self.steps += 1
        self.bar.update(1)
        return scores

    def close(self) -> None:
        self.bar.close()


@dataclass(kw_only=True)
class TransformersOptions:
    """Options of the ``transformers`` backend."""

    gguf_file: str | None = None  #: a GGUF file in ``model``'s folder (a ``model`` path ending in .gguf sets it)
    device: str = "auto"  #: ``auto`` (CUDA when visible), ``cpu``, ``cuda``, ``cuda:1``, ...
    dtype: Any = "auto"  #: ``auto`` (bf16 on CUDA, fp32 elsewhere), ``bf16``, ``fp16``, ``fp32`` or a torch dtype
    tokenizer: str | None = None  #: the tokenizer's id or path (default: the model's)
    batch_size: int | None = None  #: rows per ``generate`` call (None: the whole batch)
    chat_template: str | None = None  #: a Jinja chat template replacing the tokenizer's
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)  #: e.g. ``{"enable_thinking": False}``
    skip_special_tokens: bool = False  #: drop special tokens (``<tool_call>``, ...) from the decoded text
    trust_remote_code: bool = False  #: let ``from_pretrained`` run the model repository's code
    model_kwargs: dict[str, Any] = field(default_factory=dict)  #: more ``from_pretrained`` keyword arguments


class TransformersBackend(Backend):
    """A local causal LM through ``transformers``; ``options`` are :class:`TransformersOptions`' fields."""

    name = "transformers"
    Options = TransformersOptions
    token_level = True
    per_prompt_budgets = True

    def __init__(self, model: str | None = None, **options: Any):
        opts: TransformersOptions = build_config(TransformersOptions, options=options, owner="backend 'transformers'")
        gguf_file, device, dtype, tokenizer = opts.gguf_file, opts.device, opts.dtype, opts.tokenizer
        batch_size, chat_template, chat_template_kwargs = opts.batch_size, opts.chat_template, opts.chat_template_kwargs
        skip_special_tokens, trust_remote_code, model_kwargs = (opts.skip_special_tokens, opts.trust_remote_code,
                                                                opts.model_kwargs)
        if not model:
            raise BackendError("the transformers backend needs a model name or path (--model)")
        try:
            import torch  # noqa: F401
            import transformers  # noqa: F401
        except ImportError as e:
            raise BackendNotInstalledError("transformers", e.name or "transformers", "train") from None
        super().__init__(str(model))
        path = Path(str(model))
        if gguf_file is None and path.suffix == ".gguf" and path.is_file():
            model, gguf_file = str(path.parent), path.name
        self.gguf_file = gguf_file
        self.device = resolve_device(device)
        self.batch_size = batch_size
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.skip_special_tokens = skip_special_tokens
        from transformers import AutoModelForCausalLM, AutoTokenizer

        load: dict[str, Any] = {"trust_remote_code": trust_remote_code}
        if gguf_file:
            load["gguf_file"] = gguf_file
        tok = AutoTokenizer.from_pretrained(tokenizer or str(model), **load)
        lm: Any = AutoModelForCausalLM.from_pretrained(str(model), dtype=resolve_dtype(dtype, self.device),
                                                       **load, **(model_kwargs or {}))
        self._setup(lm.to(self.device), tok, chat_template)

    @classmethod
    def from_objects(cls, model: Any, tokenizer: Any, *, name: str | None = None,
                     batch_size: int | None = None, chat_template_kwargs: dict[str, Any] | None = None,
                     skip_special_tokens: bool = False) -> TransformersBackend:
        """Wrap a model and tokenizer already loaded (they stay where they are; nothing is copied)."""
        self = cls.__new__(cls)
        Backend.__init__(self, name or getattr(model, "name_or_path", None) or "in-memory")
        self.gguf_file = None
        self.device = str(next(model.parameters()).device)
        self.batch_size = batch_size
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.skip_special_tokens = skip_special_tokens
        self._setup(model, tokenizer, None)
        return self

    def _setup(self, model: Any, tokenizer: Any, chat_template: str | None) -> None:
        self.lm = model.eval()
        self.tokenizer = tokenizer
        tokenizer.padding_side = "left"
        if chat_template:
            tokenizer.chat_template = chat_template
        if tokenizer.pad_token_id is None:
            if tokenizer.eos_token_id is None:
                raise BackendError(f"tokenizer of {self.model!r} has neither a pad nor an eos token")
            tokenizer.pad_token = tokenizer.eos_token
        eos = getattr(model.generation_config, "eos_token_id", None)
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        if tokenizer.eos_token_id is not None:
            eos_ids.add(tokenizer.eos_token_id)
        self.eos_ids = sorted(eos_ids)
        self.pad_id = tokenizer.pad_token_id
        window = getattr(model.config, "max_position_embeddings", None)
        self.context_window = int(window) if isinstance(window, int) and window > 0 else None

    @property
    def model_id(self) -> str:
        if self.gguf_file:
            return Path(self.gguf_file).name.removesuffix(".gguf")
        p = Path(str(self.model))
        return p.name if p.exists() else str(self.model)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def encode(self, prompt: Prompt, tools: list[dict[str, Any]] | None = None) -> list[int]:
        """Token ids of a prompt as the model sees it (chat template applied to chats)."""
        if isinstance(prompt, str):
            return list(self.tokenizer(prompt)["input_ids"])
        if not getattr(self.tokenizer, "chat_template", None):
            raise BackendError(f"the tokenizer of {self.model!r} has no chat template; pass "
                               "chat_template=... or give plain string prompts")
        text = self.tokenizer.apply_chat_template(prompt, tools=tools, add_generation_prompt=True,
                                                  tokenize=False, **self.chat_template_kwargs)
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _generate(self, prompts: list[Prompt], *, max_new_tokens: int | list[int], temperature: float,
                  top_p: float, seed: int, n: int, stop: list[str] | None, tools: list[dict[str, Any]] | None,
                  schemas: list[dict[str, Any] | None] | None = None) -> list[Completion]:
        # every prompt fits the context window with its budget (Backend.generate cut the budgets to it)
        encoded = [self.encode(p, tools) for p in prompts]
        rows = [ids for ids in encoded for _ in range(n)]
        budgets = [max_new_tokens] * len(prompts) if isinstance(max_new_tokens, int) else list(max_new_tokens)
        row_budgets = [b for b in budgets for _ in range(n)]
        row_schemas = [s for s in (schemas or [None] * len(prompts)) for _ in range(n)]
        done: dict[int, Completion] = {}
        size = self.batch_size or max(1, len(rows))
        for chunk, start in enumerate(range(0, len(rows), size)):
            part = list(range(start, min(start + size, len(rows))))
            # constrained and free rows share a batch: the grammar processor masks only the constrained ones
            schemas_here = [row_schemas[i] for i in part]
            grammars = ([self.grammar(x) if x is not None else None for x in schemas_here]
                        if any(x is not None for x in schemas_here) else None)
            done.update(zip(part, self._generate_chunk([rows[i] for i in part],
                                                   max_new_tokens=[row_budgets[i] for i in part],
                                                   temperature=temperature, top_p=top_p,
                                                   seed=stable_seed(seed, chunk), stop=stop, grammars=grammars),
                            strict=True))
        return [done[i] for i in range(len(rows))]

    def prompt_length(self, prompt: Prompt, tools: list[dict[str, Any]] | None = None) -> int:
        return len(self.encode(prompt, tools))

    def grammar(self, schema: dict[str, Any]) -> Any:
        """The xgrammar grammar of ``schema`` for this tokenizer (compiled once per schema)."""
        cache = self.__dict__.get("_grammars")
        if cache is None:
            vocab = self.lm.get_output_embeddings().weight.shape[0]
            cache = self.__dict__["_grammars"] = JsonGrammars(self.tokenizer, vocab, self.eos_ids)
        return cache.get(schema)

    def _generate_chunk(self, rows: list[list[int]], *, max_new_tokens: int | list[int], temperature: float,
                        top_p: float, seed: int, stop: list[str] | None,
                        grammars: list[Any] | None = None) -> list[Completion]:
        """One ``generate`` call; a row's completion is cut to its own budget (``max_new_tokens`` per row)."""
        import torch

        budgets = [max_new_tokens] * len(rows) if isinstance(max_new_tokens, int) else list(max_new_tokens)
        max_new_tokens = max(budgets)
        width = max(len(r) for r in rows)
        input_ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            if r:
                input_ids[i, width - len(r):] = torch.tensor(r, dtype=torch.long)
                attention[i, width - len(r):] = 1
        kwargs: dict[str, Any] = {"max_new_tokens": max_new_tokens, "pad_token_id": self.pad_id,
                                  "eos_token_id": self.eos_ids or None}
        if temperature > 0:
            kwargs.update(do_sample=True, temperature=temperature, top_p=top_p, top_k=0)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if stop:
            kwargs.update(stop_strings=stop, tokenizer=self.tokenizer)
        bar = StepBar(max_new_tokens, len(rows))
        processors: list[Any] = [bar]
        if grammars is not None:
            processors.insert(0, grammar_processor(grammars))  # one per generate() call
        kwargs["logits_processor"] = processors
        devices = [torch.device(self.device).index or 0] if self.device.startswith("cuda") else []
        try:
            with torch.random.fork_rng(devices=devices), torch.inference_mode():
                torch.manual_seed(seed)
                generated = self.lm.generate(input_ids=input_ids.to(self.device),
                                             attention_mask=attention.to(self.device), **kwargs)
        finally:
            bar.close()
        new = generated[:, width:].tolist()
        return [self._completion(row, toks[:budget], budget, stop)
                for row, toks, budget in zip(rows, new, budgets, strict=True)]

    def _completion(self, prompt_ids: list[int], toks: list[int], max_new_tokens: int,
                    stop: list[str] | None) -> Completion:
        eos = set(self.eos_ids)
        end = next((i for i, t in enumerate(toks) if t in eos), None)
        if end is not None:
            kept, used, finish = toks[:end], end + 1, "stop"
        else:
            kept = list(toks)
            while kept and kept[-1] == self.pad_id:
                kept.pop()
            used = len(kept)
            finish = "length" if used >= max_new_tokens else "stop"
        text = self.tokenizer.decode(kept, skip_special_tokens=self.skip_special_tokens)
        text, stopped = truncate_at_stop(text, stop)
        if stopped:
            finish = "stop"
        return Completion(text=text, prompt_tokens=len(prompt_ids), completion_tokens=used,
                          finish_reason=finish, token_ids=list(toks[:used]))

    def generate_tokens(self, contexts: Sequence[Sequence[int]], *, max_new_tokens: int = 512,
                        temperature: float = 0.7, top_p: float = 1.0, seed: int = 0) -> list[Completion]:
        """Continue token contexts as they are (no chat template), in chunks of ``batch_size``; a context's completion
        ends at the model's context window, and a context that fills it gets a failed completion saying so."""
        check_sampling(max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p)
        rows = [list(c) for c in contexts]
        window = self.context_window
        budgets = [max_new_tokens if window is None else min(max_new_tokens, window - len(r)) for r in rows]
        fit = [i for i, b in enumerate(budgets) if b >= 1]
        done: dict[int, Completion] = {}
        if window is not None:
            done.update((i, too_long_completion(len(rows[i]), window, 1, self.model_id))
                        for i in range(len(rows)) if budgets[i] < 1)
        size = self.batch_size or max(1, len(fit))
        for chunk, start in enumerate(range(0, len(fit), size)):
            part = fit[start:start + size]
            made = self._generate_chunk([rows[i] for i in part], max_new_tokens=[budgets[i] for i in part],
                                        temperature=temperature, top_p=top_p, seed=seed + chunk, stop=None)
            done.update(zip(part, made, strict=True))
        return [done[i] for i in range(len(rows))]

    def close(self) -> None:
        self.lm = None

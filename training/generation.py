"""Generators: token contexts in, sampled continuations (ids and log-probabilities) out.

Everything that samples from the policy goes through a :class:`Generator`: the solver's rollouts (token
contexts that grow turn by turn), the proposals of both self-play streams (chats through envgen's ``llm``
proposer, over :class:`PolicyBackend`), the format recovery, distillation's student and the benchmarks.
The engine is picked by name (``generation.engine``, ``--engine``), the names of envgen's backends:

* :class:`TransformersGenerator` (``transformers``) -- ``model.generate`` on the training model. The fast
  path (``generation.*``): rows sorted by length and cut into batches of ``batch_size`` (less padding), a
  static KV cache and ``torch.compile`` of the decoding step. The log-probability of each sampled token under
  the sampling distribution (after temperature and top-p) is recorded by a logits processor, so no
  ``B x T x V`` score tensor is ever kept.
* :class:`~training.vllm_generator.VLLMGenerator` (``vllm``) -- vLLM colocated with the trainer (or a vLLM
  server), through TRL's ``VLLMGeneration``; needs ``vllm`` (imported only when chosen).
* :class:`ScriptedGenerator` -- text from a function of the decoded context, for tests, dry runs and
  benchmarks that need a deterministic tool call.

The contract of :meth:`Generator.generate`: one :class:`Generated` per context, in order; ``max_new_tokens``
is one budget or one per context; ``json_schemas`` (one JSON Schema or ``None`` per context) constrains only
the rows that have one, in the same batch as the free rows (self-play's two proposal streams decode
together). An engine that holds its own copy of the weights (``shares_weights = False``) is synced after
every optimizer step (:meth:`Generator.sync`), may release its memory while the trainer updates
(:meth:`Generator.sleep`), and refuses to generate from weights the trainer has moved past
(:mod:`training.weight_sync`: it counts the steps of the optimizer it tracks, :meth:`Generator.track`).

:class:`PolicyBackend` adapts a generator to envgen's :class:`~envgen.backends.base.Backend` contract so the
``llm`` proposer (and the skill writer) can write with the policy, under a JSON Schema when asked; it records
the token ids of every completion so the proposer role can be trained on exactly what was sampled.

A generation that fails is data: its rows come back with ``finish == "error"``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from envgen.backends.base import Backend, Completion, Prompt, budget_list, truncate_at_stop
from gym_envs.errors import exception_text
from gym_envs.seeding import stable_seed
from training.weight_sync import WeightSync

__all__ = [
    "Generated",
    "Generator",
    "PolicyBackend",
    "ScriptedGenerator",
    "TransformersGenerator",
    "vllm_available",
]


def vllm_available() -> bool:
    """True when vLLM can be imported (checked without importing it)."""
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


@dataclass
class Generated:
    """One sampled continuation."""

    ids: list[int]  #: new tokens; the last is an end-of-sequence token when ``finish == "stop"``
    logprobs: list[float]  #: log-probability of each new token under the sampling distribution
    finish: str = "stop"  #: ``stop`` (ended with EOS), ``length`` (ran out of tokens) or ``error``
    error: str | None = None
    text: str | None = None  #: the action text when it is not the decoding of ``ids`` (scripted replays)


class Generator:
    """Base class: ``generate(contexts, ...)`` returns one :class:`Generated` per context, in order.

    ``max_new_tokens`` is one budget for every context or one per context. ``json_schemas`` (one JSON Schema or
    ``None`` per context) constrains a row's decoding to JSON that its schema admits (the proposer's
    blueprints), leaving the other rows of the batch free: xgrammar on HF ``generate``, structured outputs on
    vLLM. ``grammar_prefixes[i]`` (token ids, or None): context ``i`` ends with these tokens of its schema's
    text already, and decoding goes on from there under the schema (the format recovery of
    :mod:`training.format_recovery`): only where ``continues_grammar`` is true (HF, and a vLLM engine built
    with the prefix-grammar logits processor, :mod:`training.vllm_prefix`); a trainer asks the
    trainer's own model for it where the engine cannot (:func:`training.model.make_generator` with
    ``engine="transformers"``).

    Weights: ``shares_weights`` says whether generation runs on the trainer's own weights. An engine with its
    own copy is brought up to date by :meth:`sync` (the trainers call it after every update) and refuses to
    generate while steps of the optimizer it tracks (:meth:`track`) are pending (:attr:`weights`).
    ``records_logprobs``: ``Generated.logprobs`` are the sampling distribution's (the sampler-trainer gap is
    measured on them).
    """

    name = "base"
    eos_ids: list[int]
    continues_grammar = True  #: goes on under a schema's grammar from a prefix it did not decode
    shares_weights = True
    records_logprobs = True

    def generate(self, contexts: list[list[int]], *, max_new_tokens: int | Sequence[int], temperature: float = 1.0,
                 top_p: float = 1.0, seed: int = 0, json_schemas: list[dict[str, Any] | None] | None = None,
                 grammar_prefixes: list[list[int] | None] | None = None) -> list[Generated]:
        raise NotImplementedError

    tokenizer: Any = None  #: the tokenizer grammars are compiled for (None: this generator compiles none)
    _grammars: Any = None

    def grammar(self, schema: dict[str, Any]) -> Any:
        """The compiled xgrammar grammar of ``schema`` for this generator's tokenizer, compiled once (see
        :class:`envgen.backends.transformers_local.JsonGrammars`): constrained rows, and the format recovery's look at
        where a completion left it."""
        if self._grammars is None:
            if self.tokenizer is None:
                raise ValueError(f"compiling a grammar needs the generator's tokenizer ({type(self).__name__}(..., "
                                 "tokenizer=...)); a vLLM generator compiles none: use generation.engine=transformers")
            from envgen.backends.transformers_local import JsonGrammars

            self._grammars = JsonGrammars(self.tokenizer, self._vocab_size(), self.eos_ids)
        return self._grammars.get(schema)

    def _vocab_size(self) -> int:
        """The size of the vocabulary the grammar's token masks cover."""
        return len(self.tokenizer)

    @property
    def weights(self) -> WeightSync:
        """The optimizer steps seen and the syncs made (:class:`~training.weight_sync.WeightSync`)."""
        ws = self.__dict__.get("_weight_sync")
        if ws is None:
            ws = self.__dict__["_weight_sync"] = WeightSync()
        return ws

    def track(self, optimizer: Any) -> None:
        """Count ``optimizer``'s steps, so that generating after one without :meth:`sync` fails loudly."""
        self.weights.track(optimizer)

    def sync(self) -> None:
        """Make generation use the trainer's current weights (nothing to push when they are shared)."""
        t0 = time.perf_counter()
        self._push_weights()
        self.weights.synced(time.perf_counter() - t0)

    def _push_weights(self) -> None:
        """Give the engine the trainer's weights (engines with their own copy)."""

    def sleep(self) -> None:
        """Release the memory the engine holds while the trainer updates (vLLM's sleep mode, when on); the next
        :meth:`generate` wakes it. A no-op for an engine that holds nothing apart."""

    def raw_throughput(self, contexts: list[list[int]], budgets: Sequence[int], *,
                       seed: int = 0) -> dict[str, Any] | None:
        """The engine's raw rate on these rows, each decoded to exactly its budget (EOS ignored, no grammar) in
        one call: ``rows``, ``tokens``, ``seconds``, ``tokens_per_second``; None where the engine has no such
        measure (only the colocated vLLM engine has: :meth:`training.vllm_generator.VLLMGenerator.raw_throughput`)."""
        return None

    #: when a list, each :meth:`generate` call of an engine with a raw measure appends its rows here, as
    #: ``(context, tokens generated)`` pairs (self-play's ``generation.measure_raw`` turns it on for a round)
    call_log: list[list[tuple[list[int], int]]] | None = None

    def raw_by_call(self, calls: Sequence[Sequence[tuple[list[int], int]]], *,
                    seed: int = 0) -> dict[str, Any] | None:
        """The engine's raw rate on these calls replayed one after another, each call's rows in one engine call
        as :meth:`raw_throughput` decodes them: ``calls``, ``rows``, ``tokens``, ``seconds``,
        ``tokens_per_second`` summed over the calls (the loop's own batching, without its grammar and
        bookkeeping); None where the engine has no raw measure, ``error`` where a call's measure failed."""
        total = {"calls": 0, "rows": 0, "tokens": 0, "seconds": 0.0}
        for i, call in enumerate(calls):
            one = self.raw_throughput([c for c, _ in call], [b for _, b in call], seed=stable_seed(seed, i))
            if one is None:
                continue
            if "error" in one:
                return {**total, "error": one["error"]}
            total["calls"] += 1
            for key in ("rows", "tokens", "seconds"):
                total[key] += one[key]
        if not total["calls"]:
            return None
        return {**total, "tokens_per_second": total["tokens"] / total["seconds"] if total["seconds"] > 0 else 0.0}


# -- Hugging Face generate ------------------------------------------------------------------------


class _SampledLogprobs:
    """A logits processor that records the log-probability of each sampled token.

    At step ``t`` it sees the model's scores (custom processors run before transformers' sampling
    warpers, so it applies the temperature itself: ``log_softmax(logits / T)``, TRL's convention)
    and the tokens chosen at step ``t - 1``; it keeps one ``B x V`` tensor, never the whole history.
    """

    def __init__(self, temperature: float):
        self.temperature = temperature if temperature > 0 else 1.0
        self.prev: Any = None
        self.out: list[Any] = []

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        if self.prev is not None:
            self.out.append(self.prev.gather(1, input_ids[:, -1:]).squeeze(1))
        self.prev = torch.log_softmax(scores.float() / self.temperature, dim=-1)
        return scores

    def finish(self, last_tokens: Any) -> Any:
        import torch

        if self.prev is not None:
            self.out.append(self.prev.gather(1, last_tokens.view(-1, 1)).squeeze(1))
            self.prev = None
        return torch.stack(self.out, dim=1) if self.out else None


def _checkpointing(model: Any) -> bool:
    """Whether activation (gradient) checkpointing is on, across transformers versions."""
    for name in ("is_activation_checkpointing", "is_gradient_checkpointing"):
        if hasattr(type(model), name) or hasattr(model, name):
            return bool(getattr(model, name, False))
    return False


class TransformersGenerator(Generator):
    """``model.generate`` on a model in memory (see the module docstring for the fast path).

    Args:
        model: a causal LM (a PEFT model works too).
        eos_ids: token ids that end a continuation; pad_id: the padding id.
        batch_size: rows per ``generate`` call (None: all).
        sort_by_length: group rows of similar length (fewer pad tokens).
        static_cache, compile: the static-KV-cache fast path and ``torch.compile`` of the decoding step.
        unwrap: a context manager factory yielding the model to generate with (TRL's
            ``unwrap_model_for_generation`` for DeepSpeed/FSDP); default: the model itself.
        record_logprobs: record sampled-token log-probabilities (cheap; off saves one softmax per step).
        tokenizer: the model's tokenizer, needed only for constrained rows (``json_schemas``: xgrammar's
            grammars are compiled for its vocabulary, once per schema).
        autocast_bf16: generate under bf16 autocast (``model.dtype: bf16-mixed``: fp32 weights, bf16
            matmuls), with the dynamic cache even when ``static_cache`` is set: transformers may allocate
            the static cache in the weights' dtype and then refuse bf16 keys (5.17 does), and accelerate
            wraps a prepared model's forward in the same autocast. On an H200 the dynamic cache under
            autocast was also faster than the fp32 static cache (462 vs 341 tokens/s, Qwen3-0.6B shape).
    """

    name = "transformers"

    def __init__(self, model: Any, *, eos_ids: Sequence[int], pad_id: int, batch_size: int | None = None,
                 sort_by_length: bool = True, static_cache: bool = False, compile: bool = False,
                 unwrap: Callable[[], contextlib.AbstractContextManager[Any]] | None = None,
                 record_logprobs: bool = True, autocast_bf16: bool = False, tokenizer: Any = None):
        self.model = model
        self.tokenizer = tokenizer
        self._grammars = None
        self.autocast_bf16 = autocast_bf16
        self.eos_ids = sorted({int(e) for e in eos_ids})
        self.pad_id = int(pad_id)
        self.batch_size = batch_size
        self.sort_by_length = sort_by_length
        self.static_cache = static_cache
        self.compile = compile
        self.unwrap = unwrap
        self.record_logprobs = record_logprobs

    @contextlib.contextmanager
    def _model(self) -> Iterator[Any]:
        """The model to generate with, in eval mode, activation checkpointing off (restored after)."""
        with contextlib.ExitStack() as stack:
            m = stack.enter_context(self.unwrap()) if self.unwrap is not None else self.model
            was_training = m.training
            checkpointing = self.unwrap is None and _checkpointing(m)  # TRL's unwrap handles it itself
            if checkpointing:
                (getattr(m, "activation_checkpointing_disable", None) or m.gradient_checkpointing_disable)()
            m.eval()
            try:
                yield m
            finally:
                if checkpointing:
                    (getattr(m, "activation_checkpointing_enable", None) or m.gradient_checkpointing_enable)()
                m.train(was_training)

    def _vocab_size(self) -> int:
        return int(self.model.get_output_embeddings().weight.shape[0])  # the logits' width (padded past the tokenizer)

    def generate(self, contexts: list[list[int]], *, max_new_tokens: int | Sequence[int], temperature: float = 1.0,
                 top_p: float = 1.0, seed: int = 0, json_schemas: list[dict[str, Any] | None] | None = None,
                 grammar_prefixes: list[list[int] | None] | None = None) -> list[Generated]:
        schemas = list(json_schemas) if json_schemas is not None else [None] * len(contexts)
        if len(schemas) != len(contexts):
            raise ValueError(f"{len(schemas)} json_schemas for {len(contexts)} contexts")
        prefixes = list(grammar_prefixes) if grammar_prefixes is not None else [None] * len(contexts)
        if len(prefixes) != len(contexts) or any(p and schemas[i] is None for i, p in enumerate(prefixes)):
            raise ValueError("grammar_prefixes: one per context, and only for contexts with a json_schema")
        budgets = budget_list(max_new_tokens, len(contexts))
        order = list(range(len(contexts)))  # no rows: the model is still unwrapped (a collective op under ZeRO-3)
        if self.sort_by_length:
            order.sort(key=lambda i: -len(contexts[i]))
        size = self.batch_size or max(1, len(order))
        chunks = [order[k:k + size] for k in range(0, len(order), size)] or [[]]
        out: list[Generated | None] = [None] * len(contexts)
        with self._model() as model:
            for ci, idx in enumerate(chunks):
                if not idx:
                    continue
                try:  # constrained and free rows share a chunk: the grammar processor masks only the constrained
                    grammars = ([self.grammar(schemas[i]) if schemas[i] is not None else None  # type: ignore[arg-type]
                                 for i in idx] if any(schemas[i] is not None for i in idx) else None)
                    rows = self._chunk(model, [contexts[i] for i in idx], max_new_tokens=[budgets[i] for i in idx],
                                       temperature=temperature, top_p=top_p, seed=stable_seed(seed, ci),
                                       grammars=grammars,
                                       prefixes=[prefixes[i] for i in idx] if grammars is not None else None)
                except Exception as e:  # the boundary: a failure is data, these rows end with an error
                    msg = exception_text(e)
                    rows = [Generated([], [], "error", msg) for _ in idx]
                for i, g in zip(idx, rows, strict=True):
                    out[i] = g
        return [g for g in out if g is not None]

    def _chunk(self, model: Any, rows: list[list[int]], *, max_new_tokens: list[int], temperature: float,
               top_p: float, seed: int, grammars: list[Any] | None = None,
               prefixes: list[list[int] | None] | None = None) -> list[Generated]:
        """One ``generate`` call, to the largest budget; each row is cut to its own (``finish == "length"``)."""
        import torch

        device = next(model.parameters()).device
        width = max(len(r) for r in rows)
        input_ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            input_ids[i, width - len(r):] = torch.tensor(r, dtype=torch.long)
            attention[i, width - len(r):] = 1
        recorder = _SampledLogprobs(temperature) if self.record_logprobs else None
        kwargs: dict[str, Any] = {"max_new_tokens": max(max_new_tokens), "pad_token_id": self.pad_id,
                                  "eos_token_id": self.eos_ids}
        if temperature > 0:
            kwargs.update(do_sample=True, temperature=temperature, top_p=top_p, top_k=0)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        processors: list[Any] = []
        if grammars is not None:  # the grammar masks first, so the recorded log-probabilities are what was sampled from
            from envgen.backends.transformers_local import grammar_processor

            processors.append(grammar_processor(grammars, prefixes))
        if recorder is not None:
            processors.append(recorder)
        if processors:
            kwargs["logits_processor"] = processors
        if self.static_cache and not self.autocast_bf16:
            kwargs.update(cache_implementation="static", disable_compile=not self.compile)
        devices = [device.index or 0] if device.type == "cuda" else []
        autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=self.autocast_bf16)
        with torch.random.fork_rng(devices=devices), torch.no_grad(), autocast:
            torch.manual_seed(seed)
            generated = model.generate(input_ids=input_ids.to(device), attention_mask=attention.to(device), **kwargs)
        new = generated[:, width:]
        logps = recorder.finish(new[:, -1]) if recorder is not None and new.shape[1] else None
        ids_rows = new.tolist()
        lp_rows = logps.tolist() if logps is not None else [[0.0] * len(r) for r in ids_rows]
        eos = set(self.eos_ids)
        out = []
        for ids, lps, budget in zip(ids_rows, lp_rows, max_new_tokens, strict=True):
            ids, lps = ids[:budget], lps[:budget]
            end = next((i for i, t in enumerate(ids) if t in eos), None)
            if end is not None:
                out.append(Generated(ids[: end + 1], lps[: end + 1], "stop"))
            else:
                out.append(Generated(ids, lps, "length"))
        return out


# -- scripted -------------------------------------------------------------------------------------


class ScriptedGenerator(Generator):
    """Continuations from ``script(context_text) -> str`` (tests, dry runs, benchmarks).

    The text is tokenised and closed with EOS (``finish == "stop"``), or cut at ``max_new_tokens``;
    ``json_schemas`` and ``grammar_prefixes`` do not change it (the script's text is the continuation).
    With ``compute`` (another generator), that generator runs first on the same contexts (the real
    cost is paid and its token ids are kept) and only the action text comes from the script:
    a benchmark's environment then executes meaningful calls while the model's arithmetic is real.
    """

    name = "scripted"
    records_logprobs = False  #: the script's text has no log-probabilities (0.0 each, or the compute generator's)

    def __init__(self, tokenizer: Any, script: Callable[[str], str], *, compute: Generator | None = None):
        self.tokenizer = tokenizer
        self.script = script
        self.compute = compute
        self.eos_ids = [int(tokenizer.eos_token_id)]
        self.calls = 0

    def generate(self, contexts: list[list[int]], *, max_new_tokens: int | Sequence[int], temperature: float = 1.0,
                 top_p: float = 1.0, seed: int = 0, json_schemas: list[dict[str, Any] | None] | None = None,
                 grammar_prefixes: list[list[int] | None] | None = None) -> list[Generated]:
        self.calls += 1
        budgets = budget_list(max_new_tokens, len(contexts))
        computed = (self.compute.generate(contexts, max_new_tokens=max_new_tokens, temperature=temperature,
                                          top_p=top_p, seed=seed, json_schemas=json_schemas,
                                          grammar_prefixes=grammar_prefixes)
                    if self.compute is not None else None)
        out = []
        for i, ctx in enumerate(contexts):
            try:
                text = self.script(self.tokenizer.decode(ctx, skip_special_tokens=False))
            except Exception as e:  # the boundary: a failure is data, this row ends with an error
                out.append(Generated([], [], "error", exception_text(e)))
                continue
            if computed is not None:
                g = computed[i]
                out.append(Generated(g.ids, g.logprobs, g.finish if g.finish == "error" else "stop", g.error, text))
                continue
            ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"]) + self.eos_ids
            if len(ids) > budgets[i]:
                out.append(Generated(ids[:budgets[i]], [0.0] * budgets[i], "length"))
            else:
                out.append(Generated(ids, [0.0] * len(ids), "stop"))
        return out


# -- the policy as an envgen backend ----------------------------------------------------------------


@dataclass
class Sampled:
    """Token record of one backend completion (what the proposer role is trained on)."""

    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    text: str
    finish: str


@dataclass
class _Timer:
    seconds: float = 0.0
    tokens: int = 0


class PolicyBackend(Backend):
    """envgen's backend contract over a :class:`Generator` and a :class:`~gym_envs.messages.ChatFormat`.

    Every completion's token ids are appended to :attr:`records` (and to ``Completion.meta``) so the
    trainer can match proposals to what was sampled; :meth:`take_records` empties the list. A
    ``json_schema`` reaches the generator as one schema per row (constrained decoding: the proposer's
    blueprints, the skill writer's skills), so the recorded tokens are the constrained ones; each prompt keeps
    its own ``max_new_tokens`` (two proposers' batches share one call: :func:`envgen.proposers.base.propose_together`).
    """

    name = "policy"
    per_prompt_budgets = True

    def __init__(self, generator: Generator, chat: Any, *, model_id: str = "policy"):
        super().__init__(model_id)
        self.generator = generator
        self.chat = chat
        self.records: list[Sampled] = []
        self.timer = _Timer()
        self._by_text: dict[str, Sampled] = {}

    @property
    def model_id(self) -> str:
        return str(self.model).rstrip("/").split("/")[-1] or "policy"

    def count_tokens(self, text: str) -> int:
        return len(self.chat.encode(text))

    def _generate(self, prompts: list[Prompt], *, max_new_tokens: int | list[int], temperature: float,
                  top_p: float, seed: int, n: int, stop: list[str] | None, tools: list[dict[str, Any]] | None,
                  schemas: list[dict[str, Any] | None] | None = None) -> list[Completion]:
        encoded = [self.chat.encode(p) if isinstance(p, str) else self.chat.prompt_ids(p, tools) for p in prompts]
        rows = [ids for ids in encoded for _ in range(n)]
        row_schemas = [sch for sch in schemas for _ in range(n)] if schemas is not None else None
        budgets = [b for b in budget_list(max_new_tokens, len(prompts)) for _ in range(n)]
        t0 = time.perf_counter()
        outs = self.generator.generate(rows, max_new_tokens=budgets, temperature=temperature, top_p=top_p,
                                       seed=seed, json_schemas=row_schemas)
        self.timer.seconds += time.perf_counter() - t0
        completions = []
        for ids, g in zip(rows, outs, strict=True):
            self.timer.tokens += len(g.ids)
            if g.finish == "error":
                completions.append(Completion(text="", prompt_tokens=len(ids), finish_reason="error", error=g.error))
                continue
            text = g.text if g.text is not None else self.chat.decode(g.ids)
            text, stopped = truncate_at_stop(text, stop)
            rec = Sampled(list(ids), list(g.ids), list(g.logprobs), text, g.finish)
            self.records.append(rec)
            self._by_text[text] = rec
            completions.append(Completion(text=text, prompt_tokens=len(ids), completion_tokens=len(g.ids),
                                          finish_reason="stop" if stopped else g.finish,
                                          meta={"prompt_ids": rec.prompt_ids, "completion_ids": rec.completion_ids}))
        return completions

    def record_for(self, text: str | None) -> Sampled | None:
        """The token record of the completion whose text is ``text`` (None if unknown)."""
        return self._by_text.get(text) if text is not None else None

    def take_records(self) -> list[Sampled]:
        out, self.records, self._by_text = self.records, [], {}
        return out

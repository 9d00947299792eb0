"""The ``vllm`` generation engine: vLLM colocated with the trainer (or a vLLM server), through TRL.

:class:`VLLMGenerator` is a :class:`~training.generation.Generator` over TRL's ``VLLMGeneration`` (built here,
or a TRL ``GRPOTrainer``'s own, ``trainer.vllm_generation``), which owns what is hard to get right: building a
colocated engine next to an accelerate/DeepSpeed trainer and pushing the trainer's weights into it (LoRA
adapters merged, ZeRO-3 parameters gathered, names mapped). On top of it:

* **one call per batch** (colocate): ``LLM.generate`` with one ``SamplingParams`` per row, so each row keeps
  its own token budget, seed (:func:`~gym_envs.seeding.stable_seed` of the call's seed and the row) and JSON
  Schema (vLLM's structured outputs with the schema's compact grammar in the request,
  ``StructuredOutputsParams(grammar=compact_json_grammar(schema))``, as envgen's ``vllm`` backend decodes:
  the engine TRL builds takes no structured-outputs config, and vLLM ignores a request's
  ``disable_any_whitespace``); free rows carry none. Log-probabilities are the sampled tokens'
  (``logprobs=0``; TRL builds the engine with ``logprobs_mode="processed_logprobs"``, the distribution after
  temperature). In ``server`` mode the rows go through TRL's client, one request per schema and budget;
* **weights** (:mod:`training.weight_sync`): a fresh engine is given the trainer's weights before its first
  batch (it loaded the checkpoint from disk, which need not be the model in memory); :meth:`sync` pushes them
  after each update; :meth:`generate` refuses while optimizer steps of a tracked optimizer are pending;
* **sleep** (``sleep=True``, colocate only: vLLM's sleep mode, ``enable_sleep_mode``): the engine sleeps at
  level 2 (weights and KV cache released) from :meth:`sleep` (the trainers call it before their update) to
  the next :meth:`generate`, which wakes the weights, pushes the trainer's and wakes the KV cache. The engine
  stays awake across all the calls of a round (every turn of the rollouts, both proposal streams), unlike
  TRL's own sleep mode, which sleeps after every ``generate`` and would push the weights once per turn.

The engine's ``enable_sleep_mode`` flag is TRL's switch for its own per-call sleeping; this class holds it off
while it pushes weights into an engine that is awake (TRL would wake mapped memory again) and reads
``_llm_weights_sleeping``, TRL's record that level 2 discarded the weights, when it wakes an engine TRL put
to sleep (tests/training/test_vllm_adapter.py pins both against the installed TRL).

* **a grammar from a prefix** (the format recovery's continuations, ``grammar_prefixes``): an engine built here
  carries our logits processor (:mod:`training.vllm_prefix`), and such a row asks for it in its
  ``extra_args`` (:func:`training.prefix_grammar.prefix_request`) instead of structured outputs, which would
  start the grammar at the row's first decoded token; :attr:`continues_grammar` is true. TRL builds no hook
  for an engine's logits processors, so the engine is built with ``LLM`` wrapped to add it
  (:func:`_with_processor`). A borrowed engine (a TRL trainer's) has none, and refuses such rows.

GRPO's multi-turn rollouts reuse the KV cache of each episode's earlier turns through vLLM's prefix caching
(on by default in vLLM's V1 engine; TRL resets the cache after every weight push).
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator, Sequence
from typing import Any

from envgen.backends.base import budget_list
from envgen.backends.vllm_offline import compact_json_grammar
from gym_envs.errors import exception_text
from gym_envs.seeding import stable_seed
from training.generation import Generated, Generator, vllm_available

__all__ = ["VLLMGenerator", "structured_outputs"]


@contextlib.contextmanager
def _with_processor(module: Any) -> Iterator[None]:
    """``module.LLM`` (TRL's ``vllm_generation`` module's name for ``vllm.LLM``) building engines that carry the
    prefix-grammar logits processor, for the length of the block."""
    from training.prefix_grammar import PROCESSOR

    real = module.LLM

    def llm(*args: Any, **kw: Any) -> Any:
        kw["logits_processors"] = [*(kw.get("logits_processors") or []), PROCESSOR]
        return real(*args, **kw)

    module.LLM = llm
    try:
        yield
    finally:
        module.LLM = real


def structured_outputs(schema: dict[str, Any]) -> Any:
    """The ``StructuredOutputsParams`` constraining a vLLM row to ``schema`` (compact JSON, as every backend:
    :func:`envgen.backends.vllm_offline.compact_json_grammar`)."""
    from vllm.sampling_params import StructuredOutputsParams

    return StructuredOutputsParams(grammar=compact_json_grammar(schema))


class VLLMGenerator(Generator):
    """Generation on vLLM (see the module docstring); needs ``vllm`` unless ``engine`` is given.

    Args:
        eos_ids: token ids that end a continuation.
        engine: an existing ``VLLMGeneration`` (a TRL trainer's ``vllm_generation``: the trainer syncs its
            weights itself); default: one built from the other arguments.
        model, accelerator, tokenizer: the trainer's model, its accelerator and tokenizer (to build one).
        mode: ``colocate`` (vLLM in this process, on the training GPU) or ``server`` (a ``trl vllm-serve``
            process at ``server_base_url``, or at ``server_host``:``server_port``; the weights reach it through an
            NCCL group on ``group_port``; ``server_timeout`` seconds to wait for it at start).
        gpu_memory_utilization, max_model_length: vLLM's memory share and context length (colocate).
        max_num_seqs: rows vLLM decodes at once (``generation.batch_size``; None: vLLM's default).
        sleep: vLLM's sleep mode between updates (colocate; module docstring).
        prefix_grammar: build the engine with the prefix-grammar logits processor (colocate; module docstring).
    """

    name = "vllm"
    shares_weights = False
    continues_grammar = False  #: true for an engine built here (the prefix-grammar logits processor)

    def __init__(self, *, eos_ids: Sequence[int], engine: Any = None, model: Any = None, accelerator: Any = None,
                 tokenizer: Any = None, mode: str = "colocate", gpu_memory_utilization: float = 0.3,
                 server_base_url: str | None = None, server_host: str | None = None, server_port: int = 8000,
                 group_port: int = 51216, server_timeout: float = 240.0, max_model_length: int | None = None,
                 max_num_seqs: int | None = None, sleep: bool = False, prefix_grammar: bool = True):
        self.eos_ids = sorted({int(e) for e in eos_ids})
        borrowed, carries = engine is not None, False
        if engine is None:
            if not vllm_available():
                from envgen.errors import install_hint
                from training.errors import ConfigError

                raise ConfigError(f"generation.engine is vllm but vLLM is not installed: {install_hint('vllm')}, "
                                  "or set generation.engine=transformers (--engine transformers)")
            import trl.generation.vllm_generation as trl_vllm

            # TRL names vllm.LLM in its module where vLLM imports
            carries = prefix_grammar and mode == "colocate" and hasattr(trl_vllm, "LLM")
            with _with_processor(trl_vllm) if carries else contextlib.nullcontext():
                engine = trl_vllm.VLLMGeneration(
                    model=model, accelerator=accelerator, processing_class=tokenizer, mode=mode,
                    gpu_memory_utilization=gpu_memory_utilization, server_base_url=server_base_url,
                    server_host=server_host or "0.0.0.0", server_port=server_port, group_port=group_port,
                    server_timeout=server_timeout, max_model_length=max_model_length, max_num_seqs=max_num_seqs,
                    enable_sleep_mode=sleep and mode == "colocate")
        self.engine = engine
        self.mode = getattr(engine, "mode", mode)
        #: rows go on under a grammar from a prefix: an engine built here, in this process, carries the processor
        self.continues_grammar = not borrowed and carries
        self.tokenizer = tokenizer  # the grammars of first_rejected (format recovery) and of prefix rows
        #: the engine sleeps between updates (colocate with vLLM's sleep mode on)
        self.sleep_mode = self.mode == "colocate" and bool(getattr(engine, "enable_sleep_mode", False))
        # asleep: TRL put a sleep-mode engine to sleep when it built it, and a borrowed one sleeps between calls
        self._awake = not self.sleep_mode
        # a fresh engine holds the checkpoint it loaded from disk; a borrowed one was synced by its trainer
        self._fresh = not borrowed

    # -- weights and sleep ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def _trl_sleep_off(self) -> Iterator[None]:
        """TRL's per-call sleep/wake held off (the engine is awake, and this class wakes and sleeps it)."""
        saved = getattr(self.engine, "enable_sleep_mode", False)
        self.engine.enable_sleep_mode = False
        try:
            yield
        finally:
            self.engine.enable_sleep_mode = saved

    def _push_weights(self) -> None:
        if not self._awake:
            return  # level 2 discarded the weights: waking pushes the trainer's current ones
        with self._trl_sleep_off():
            self.engine.sync_weights()
        self._fresh = False

    def wake(self) -> None:
        """Wake a sleeping engine: its weights (TRL's ``sync_weights`` wakes them, then pushes the trainer's)
        and its KV cache. A fresh engine gets the trainer's weights here too."""
        if self._awake:
            if self._fresh:
                self.sync()
            return
        eng = self.engine
        if getattr(eng, "_llm_weights_sleeping", True):
            import time

            t0 = time.perf_counter()
            eng.sync_weights()  # sleep mode on: TRL wakes the weights, then loads the trainer's
            eng._llm_weights_sleeping = False
            self.weights.synced(time.perf_counter() - t0)
        eng.llm.wake_up(tags=["kv_cache"])
        self._awake, self._fresh = True, False

    def sleep(self) -> None:
        """Sleep at level 2 (weights and KV cache released) until the next :meth:`generate`."""
        if not self.sleep_mode or not self._awake:
            return
        self.engine.llm.sleep(level=2)
        self.engine._llm_weights_sleeping = True  # TRL's record: the weights must be pushed again
        self._awake = False

    # -- generation -----------------------------------------------------------------------------------

    def raw_throughput(self, contexts: list[list[int]], budgets: Sequence[int], *,
                       seed: int = 0) -> dict[str, Any] | None:
        """Every row in one ``LLM.generate``, each to exactly its budget (``min_tokens`` = ``max_tokens``,
        ``ignore_eos``), no grammar, no log-probabilities: what the engine does with the hardware at this shape
        (:meth:`Generator.raw_throughput`). None in server mode (the server's rate is not this process's) or
        without rows; ``error`` instead of a rate when the engine failed."""
        import time

        from vllm import SamplingParams

        rows = [(list(c), int(b)) for c, b in zip(contexts, budgets, strict=True) if c and b > 0]
        if self.mode != "colocate" or not rows:
            return None
        self.wake()
        params = [SamplingParams(n=1, max_tokens=b, min_tokens=b, ignore_eos=True, temperature=1.0,
                                 seed=stable_seed(seed, i)) for i, (_, b) in enumerate(rows)]
        t0 = time.perf_counter()
        try:
            outs = self.engine.llm.generate([{"prompt_token_ids": c} for c, _ in rows], sampling_params=params,
                                            use_tqdm=False)
        except Exception as e:  # the boundary: a measure that failed says why, never a number
            return {"rows": len(rows), "error": exception_text(e)}
        seconds = time.perf_counter() - t0
        tokens = sum(len(o.token_ids) for req in outs for o in req.outputs)
        return {"rows": len(rows), "tokens": tokens, "seconds": seconds,
                "tokens_per_second": tokens / seconds if seconds > 0 else 0.0}
    def generate(self, contexts: list[list[int]], *, max_new_tokens: int | Sequence[int], temperature: float = 1.0,
                 top_p: float = 1.0, seed: int = 0, json_schemas: list[dict[str, Any] | None] | None = None,
                 grammar_prefixes: list[list[int] | None] | None = None) -> list[Generated]:
        schemas: list[dict[str, Any] | None] = (list(json_schemas) if json_schemas is not None
                                                 else [None] * len(contexts))
        if len(schemas) != len(contexts):
            raise ValueError(f"{len(schemas)} json_schemas for {len(contexts)} contexts")
        prefixes: list[list[int] | None] = (list(grammar_prefixes) if grammar_prefixes is not None
                                            else [None] * len(contexts))
        if len(prefixes) != len(contexts) or any(p and schemas[i] is None for i, p in enumerate(prefixes)):
            raise ValueError("grammar_prefixes: one per context, and only for contexts with a json_schema")
        if any(prefixes) and not self.continues_grammar:
            from training.errors import ConfigError

            raise ConfigError("this vLLM engine cannot go on under a grammar from a prefix it did not decode "
                              "(a borrowed or server engine has no envwright logits processor): build the "
                              "generator with its own colocated engine, or set generation.engine=transformers")
        budgets = budget_list(max_new_tokens, len(contexts))
        if not contexts:
            return []
        self.wake()
        self.weights.require_synced(self.name)
        if self.mode == "colocate":
            done = self._colocated(contexts, budgets, temperature, top_p, seed, schemas, prefixes)
            if self.call_log is not None:  # the raw measure by call (Generator.raw_by_call)
                self.call_log.append([(list(c), len(g.ids)) for c, g in zip(contexts, done, strict=True)])
            return done
        groups: dict[tuple[str, int], list[int]] = {}  # server: TRL's client sends one set of sampling params
        for i, (sch, b) in enumerate(zip(schemas, budgets, strict=True)):
            groups.setdefault((json.dumps(sch, sort_keys=True), b), []).append(i)
        out: list[Generated | None] = [None] * len(contexts)
        for (_, budget), idx in groups.items():
            rows = self._served([contexts[i] for i in idx], budget, temperature, top_p, schemas[idx[0]])
            for i, g in zip(idx, rows, strict=True):
                out[i] = g
        return [g for g in out if g is not None]

    def _params(self, budget: int, temperature: float, top_p: float, seed: int,
                schema: dict[str, Any] | None, prefix: list[int] | None = None) -> Any:
        from vllm import SamplingParams

        from training.prefix_grammar import prefix_request

        extra: dict[str, Any] = {}
        if schema is not None and prefix:  # our processor, from the prefix (structured outputs start at token 0)
            extra = {"extra_args": prefix_request(schema, prefix)}
        elif schema is not None:
            extra = {"structured_outputs": structured_outputs(schema)}
        return SamplingParams(n=1, max_tokens=budget, temperature=temperature, top_p=top_p if temperature > 0 else 1.0,
                              seed=seed, logprobs=0, stop_token_ids=list(self.eos_ids), **extra)

    def _colocated(self, contexts: list[list[int]], budgets: list[int], temperature: float, top_p: float,
                   seed: int, schemas: list[dict[str, Any] | None],
                   prefixes: list[list[int] | None]) -> list[Generated]:
        """Every row in one ``LLM.generate``, each with its own sampling params."""
        from trl.generation.vllm_generation import extract_logprobs

        try:
            params = [self._params(budgets[i], temperature, top_p, stable_seed(seed, i), schemas[i], prefixes[i])
                      for i in range(len(contexts))]
            outs = self.engine.llm.generate([{"prompt_token_ids": list(c)} for c in contexts],
                                            sampling_params=params, use_tqdm=False)
            logprobs, _ = extract_logprobs(outs)
        except Exception as e:  # the boundary: a failure is data, these rows end with an error
            msg = exception_text(e)
            return [Generated([], [], "error", msg) for _ in contexts]
        ids_rows = [list(o.token_ids) for req in outs for o in req.outputs]
        if logprobs is None:  # the engine scored no token: NaN, left out of the sampler-trainer gap
            logprobs = [[None] * len(ids) for ids in ids_rows]
        return [self._row(ids, lps) for ids, lps in zip(ids_rows, logprobs, strict=True)]

    def _served(self, contexts: list[list[int]], budget: int, temperature: float, top_p: float,
                schema: dict[str, Any] | None) -> list[Generated]:
        """Rows of one schema and budget through TRL's ``VLLMGeneration.generate`` (server mode)."""
        eng = self.engine
        eng.max_completion_length = budget
        eng.temperature = max(temperature, 1e-5)
        eng.top_p = top_p
        saved = dict(getattr(eng, "generation_kwargs", None) or {})
        if schema is not None:  # TRL builds StructuredOutputsParams from the dict
            eng.generation_kwargs = {**saved, "structured_outputs": {"grammar": compact_json_grammar(schema)}}
        try:
            _, completion_ids, logprobs, _ = eng.generate(prompts=contexts, images=None, num_generations=1)
        except Exception as e:  # the boundary: a failure is data, these rows end with an error
            msg = exception_text(e)
            return [Generated([], [], "error", msg) for _ in contexts]
        finally:
            eng.generation_kwargs = saved
        return [self._row(list(ids), lps) for ids, lps in zip(completion_ids, logprobs, strict=True)]

    def _row(self, ids: list[int], logprobs: Sequence[Any]) -> Generated:
        """A row from its token ids and TRL's ``(completion_len, num_logprobs)`` log-probabilities (a token vLLM
        could not score is NaN, left out of the sampler-trainer gap)."""
        flat = []
        for x in logprobs:
            v = x[0] if isinstance(x, list | tuple) else x
            flat.append(float(v) if v is not None else math.nan)
        return Generated(ids, flat, "stop" if ids and ids[-1] in self.eos_ids else "length")

"""The backend contract: a batch of prompts in, one :class:`Completion` per sample out.

Every model backend (``transformers``, ``vllm``, ``openai``, ``scripted``)
implements :meth:`Backend.generate` with the same signature and the same
ordering rule, so the proposer, the evaluator's policies and the trainer can
swap them by name:

* a prompt is either a chat (a list of ``{"role", "content"}`` messages, to
  which the backend applies the model's chat template, with ``tools=`` when
  given) or a plain string used as-is;
* the result has ``len(prompts) * n`` completions, prompt-major: the ``n``
  samples of prompt ``i`` are ``result[i * n:(i + 1) * n]``;
* ``temperature == 0`` means greedy decoding; otherwise sampling is seeded
  from ``seed`` (per prompt where the engine allows it: prompt ``i`` gets
  :func:`gym_envs.seeding.stable_seed` ``(seed, i)``), so the same call gives the same completions;
* ``stop`` strings end a completion and are not included in its text
  (``finish_reason == "stop"``); running out of ``max_new_tokens`` gives
  ``finish_reason == "length"``;
* a request that fails at generation time comes back as a completion with
  ``finish_reason == "error"`` and ``error`` set (a failure is data);
* a chat's messages may be an episode's (:mod:`gym_envs.messages`): the engine's bookkeeping keys
  (``raw``, ``step``) are dropped before the backend sees them;
* a backend that samples tokens itself (``token_level``: ``transformers``, ``vllm``) also continues token
  contexts (:meth:`Backend.generate_tokens`): the episode engine renders an episode as the trainer does and
  the backend samples from those exact tokens, so a model is evaluated on what it was trained on; each
  completion then carries its ``token_ids`` (the end-of-sequence token included when one was produced);
* ``max_new_tokens`` is one budget for every prompt or one per prompt (two proposal streams with their own
  budgets decode in one batch); ``_generate`` receives an int when every prompt has the same budget, and a
  list (one per prompt) otherwise, only on a backend that sets ``per_prompt_budgets`` (every built-in one
  does); another is called once per distinct budget;
* a prompt and its completion fit the model's context window: on a backend that knows the window
  (:attr:`Backend.context_window`) and the prompt's length (:meth:`Backend.prompt_length`: ``transformers``,
  ``vllm``), a prompt's budget is cut to what the window leaves after it, and a prompt that leaves less than
  ``min_new_tokens`` (or less than its budget, when that is smaller; at least 1) is not sent: its completions
  fail (``finish_reason == "error"``) with ``meta["error_code"] == "too_long"`` and an error naming both
  lengths (:func:`too_long_completion`). Each completion's ``meta["max_new_tokens"]`` is the budget it had;
* ``json_schema`` (one JSON Schema for every prompt, or one per prompt, ``None``
  for unconstrained ones) constrains decoding so the completion is a JSON text
  the schema admits: xgrammar's logits processor for ``transformers``, structured
  outputs for ``vllm``, ``response_format`` for ``openai``; the ``scripted``
  backend checks its canned answers against the schema. A constrained
  completion that is cut by ``max_new_tokens`` cannot be complete, so callers
  size the limit to the schema's worst case
  (:func:`envgen.blueprint.schema.max_completion_chars`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gym_envs.messages import chat_messages

__all__ = [
    "Backend",
    "Completion",
    "Message",
    "Prompt",
    "approx_tokens",
    "budget_list",
    "check_sampling",
    "prompt_text",
    "schema_list",
    "too_long_completion",
    "truncate_at_stop",
]

Message = dict[str, Any]
Prompt = list[Message] | str


def approx_tokens(text: str) -> int:
    """Approximate token count of ``text``: ``ceil(len / 4)`` (a fair estimate for BPE tokenizers)."""
    return (len(text) + 3) // 4


def check_sampling(*, max_new_tokens: int, temperature: float, top_p: float) -> None:
    """Refuse sampling settings no backend can honour, with a message that says the allowed range."""
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0 (0 is greedy), got {temperature}")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")


def budget_list(max_new_tokens: int | Sequence[int], n_prompts: int, *, name: str = "max_new_tokens") -> list[int]:
    """``max_new_tokens`` as one budget per prompt; refuses a list of the wrong length (``name``: the argument's
    name in that message)."""
    if isinstance(max_new_tokens, int):
        return [max_new_tokens] * n_prompts
    out = [int(b) for b in max_new_tokens]
    if len(out) != n_prompts:
        raise ValueError(f"{name} has {len(out)} entries for {n_prompts} prompts (give one budget, or one "
                         "per prompt)")
    return out


def too_long_completion(prompt_tokens: int, window: int, min_new_tokens: int, model: str) -> Completion:
    """The failed completion of a prompt of ``prompt_tokens`` that leaves less than ``min_new_tokens`` of the
    model's context ``window``: it was not sent (``meta["error_code"] == "too_long"``, the prompt's length in
    ``meta["prompt_length"]``; ``prompt_tokens`` is 0, since the model read nothing)."""
    from envgen.errors import FailureCode

    room = max(0, window - prompt_tokens)
    need = f"room for {min_new_tokens} new token{'s' * (min_new_tokens != 1)}"
    return Completion(text="", finish_reason="error",
                      error=f"the prompt is {prompt_tokens} tokens, which does not fit the context window of {model} "
                            f"({window} tokens) with {need} ({room} left): shorten the prompt (a smaller "
                            "document excerpt) or use a model with a longer context",
                      meta={"error_code": FailureCode.TOO_LONG, "prompt_length": prompt_tokens})


def schema_list(json_schema: dict[str, Any] | Sequence[dict[str, Any] | None] | None,
                n_prompts: int) -> list[dict[str, Any] | None]:
    """``json_schema`` as one entry (a schema or ``None``) per prompt; refuses a list of the wrong length."""
    if json_schema is None:
        return [None] * n_prompts
    if isinstance(json_schema, dict):
        return [json_schema] * n_prompts
    out = list(json_schema)
    if len(out) != n_prompts:
        raise ValueError(f"json_schema has {len(out)} entries for {n_prompts} prompts (give one schema, or one "
                         "per prompt)")
    for i, x in enumerate(out):
        if x is not None and not isinstance(x, dict):
            raise TypeError(f"json_schema[{i}] must be a JSON Schema dict or None, got {type(x).__name__}")
    return out


def _schemas_kwarg(schemas: list[dict[str, Any] | None]) -> dict[str, Any]:
    return {"schemas": schemas} if any(x is not None for x in schemas) else {}


def prompt_text(prompt: Prompt) -> str:
    """A chat rendered as plain text (``role: content`` lines), for token estimates and logs."""
    if isinstance(prompt, str):
        return prompt
    return "\n".join(f"{m.get('role', 'user')}: {m.get('content') or ''}" for m in prompt)


def truncate_at_stop(text: str, stop: Sequence[str] | None) -> tuple[str, bool]:
    """Cut ``text`` before the first stop string; returns ``(text, stopped)``."""
    if not stop:
        return text, False
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


@dataclass
class Completion:
    """One generated sample.

    ``prompt_tokens`` counts the prompt as the model saw it (chat template
    applied); ``completion_tokens`` the generated tokens (the end-of-sequence
    token included when one was produced). Backends without a tokenizer
    estimate both (:func:`approx_tokens`).
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = "stop"  #: ``stop``, ``length``, ``tool_calls`` or ``error``
    tool_calls: list[dict[str, Any]] | None = None  #: structured ``{name, arguments}`` calls (``openai``)
    error: str | None = None  #: why the request failed (``finish_reason == "error"``)
    token_ids: list[int] | None = None  #: the sampled tokens (:meth:`Backend.generate_tokens`)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.finish_reason != "error"

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Backend:
    """Base class of model backends. Subclasses set ``name`` and implement :meth:`_generate` (and, when they
    sample tokens themselves, set ``token_level`` and ``tokenizer`` and implement :meth:`generate_tokens`)."""

    name = "base"
    token_level = False  #: the backend continues token contexts (:meth:`generate_tokens`)
    per_prompt_budgets = False  #: ``_generate`` takes one ``max_new_tokens`` per prompt (module docstring)
    tokenizer: Any = None  #: the model's tokenizer, for a token-level backend
    context_window: int | None = None  #: the most tokens (prompt and completion) the model reads (None: unknown)

    def __init__(self, model: str | None = None):
        self.model = model

    @property
    def model_id(self) -> str:
        """A short name of the model for provenance (``llm:<model_id>``)."""
        return str(self.model) if self.model else self.name

    def generate(
        self,
        prompts: Sequence[Prompt],
        *,
        max_new_tokens: int | Sequence[int] = 512,
        temperature: float = 0.7,
        top_p: float = 1.0,
        seed: int = 0,
        n: int = 1,
        stop: Sequence[str] | None = None,
        tools: list[dict[str, Any]] | None = None,
        json_schema: dict[str, Any] | Sequence[dict[str, Any] | None] | None = None,
        min_new_tokens: int | Sequence[int] = 1,
    ) -> list[Completion]:
        """Generate ``n`` completions for every prompt, in one batch (see the module docstring);
        ``min_new_tokens`` (one, or one per prompt): the least room in the context window a prompt is sent with."""
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        prompts = list(prompts)
        budgets = budget_list(max_new_tokens, len(prompts))
        for b in budgets or [max_new_tokens if isinstance(max_new_tokens, int) else 1]:
            check_sampling(max_new_tokens=b, temperature=temperature, top_p=top_p)
        floors = budget_list(min_new_tokens, len(prompts), name="min_new_tokens")
        if any(f < 1 for f in floors):
            raise ValueError(f"min_new_tokens must be >= 1, got {min(floors)}")
        for i, p in enumerate(prompts):
            if not isinstance(p, str) and not (isinstance(p, list) and all(isinstance(m, dict) for m in p)):
                raise TypeError(f"prompt {i} must be a string or a list of message dicts, "
                                f"got {type(p).__name__}")
        if not prompts:
            return []
        prompts = [p if isinstance(p, str) else chat_messages(p) for p in prompts]
        schemas = schema_list(json_schema, len(prompts))
        refused = self._fit_window(prompts, budgets, floors, tools)
        send = [i for i in range(len(prompts)) if i not in refused]
        common: dict[str, Any] = {"temperature": temperature, "top_p": top_p, "seed": seed, "n": n,
                                  "stop": list(stop) if stop else None, "tools": tools}
        sent = self._dispatch([prompts[i] for i in send], [budgets[i] for i in send], [schemas[i] for i in send],
                              common) if send else []
        by_prompt = {i: sent[k * n:(k + 1) * n] for k, i in enumerate(send)}
        by_prompt.update((i, [replace(c, meta=dict(c.meta)) for _ in range(n)]) for i, c in refused.items())
        out = [c for i in range(len(prompts)) for c in by_prompt[i]]
        for c, b in zip(out, [b for b in budgets for _ in range(n)], strict=True):
            c.meta.setdefault("max_new_tokens", b)
        return out

    def _fit_window(self, prompts: list[Prompt], budgets: list[int], floors: list[int],
                    tools: list[dict[str, Any]] | None) -> dict[int, Completion]:
        """Cut each budget (in place) to what the context window leaves after its prompt; returns the failed
        completions of the prompts that leave too little room (module docstring), which are not sent."""
        window = self.context_window
        refused: dict[int, Completion] = {}
        if window is None:
            return refused
        for i, p in enumerate(prompts):
            length = self.prompt_length(p, tools)
            if length is None:
                continue
            floor = max(1, min(floors[i], budgets[i]))
            if window - length < floor:
                refused[i] = too_long_completion(length, window, floor, self.model_id)
            else:
                budgets[i] = min(budgets[i], window - length)
        return refused

    def _dispatch(self, prompts: list[Prompt], budgets: list[int], schemas: list[dict[str, Any] | None],
                  common: dict[str, Any]) -> list[Completion]:
        """``_generate`` over prompts that fit: one call, or one per distinct budget on a backend without
        ``per_prompt_budgets`` (reassembled in prompt order)."""
        n = common["n"]
        if len(set(budgets)) == 1 or self.per_prompt_budgets:
            out = self._generate(prompts, max_new_tokens=budgets[0] if len(set(budgets)) == 1 else budgets,
                                 **common, **_schemas_kwarg(schemas))
        else:
            parts: dict[int, list[int]] = {}
            for i, b in enumerate(budgets):
                parts.setdefault(b, []).append(i)
            by_prompt: dict[int, list[Completion]] = {}
            for b, idx in parts.items():
                done = self._generate([prompts[i] for i in idx], max_new_tokens=b, **common,
                                      **_schemas_kwarg([schemas[i] for i in idx]))
                for k, i in enumerate(idx):
                    by_prompt[i] = done[k * n:(k + 1) * n]
            out = [c for i in range(len(prompts)) for c in by_prompt.get(i, [])]
        if len(out) != len(prompts) * n:
            raise RuntimeError(f"backend {self.name!r} returned {len(out)} completions for "
                               f"{len(prompts)} prompts x n={n}")
        return out

    def _generate(self, prompts: list[Prompt], *, max_new_tokens: int | list[int], temperature: float,
                  top_p: float, seed: int, n: int, stop: list[str] | None, tools: list[dict[str, Any]] | None,
                  schemas: list[dict[str, Any] | None] | None = None) -> list[Completion]:
        """The backend's batch generation; ``schemas`` (one per prompt) is passed only when one is set, and
        ``max_new_tokens`` is a list (one per prompt) only when ``per_prompt_budgets`` is set."""
        raise NotImplementedError

    def generate_tokens(self, contexts: Sequence[Sequence[int]], *, max_new_tokens: int = 512,
                        temperature: float = 0.7, top_p: float = 1.0, seed: int = 0) -> list[Completion]:
        """One completion per token context, in one batch: the context is used as it is (no chat template),
        and each completion's ``token_ids`` are the sampled tokens (module docstring)."""
        raise NotImplementedError(f"the {self.name} backend samples text only (it continues chats, not tokens)")

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` for this model (exact where the backend has a tokenizer)."""
        return approx_tokens(text)

    def prompt_length(self, prompt: Prompt, tools: list[dict[str, Any]] | None = None) -> int | None:
        """Tokens of ``prompt`` as the model reads it (a chat with its template applied); None where the backend
        cannot count them exactly (then its budget is not fitted to the context window)."""
        return None

    def close(self) -> None:
        """Release what the backend holds (models, engines, thread pools)."""

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r})"

"""Policies: what maps an episode to the agent's next action.

Role: the one interface the runner drives, for models and for the checker's sanity baselines. A policy is
the episode engine's policy (:class:`gym_envs.engine.Policy`): ``act_batch`` receives
:class:`~gym_envs.episode.Episode` objects (the chat ``messages`` in OpenAI form with the system prompt that
describes the tools first, tool results as ``tool`` messages answering call ids; ``tools`` in OpenAI
``tools=`` form; the token context when the episode keeps one) and returns one action per episode: text
(``<tool_call>`` blocks or a plain message), a structured ``{"content", "tool_calls": [{"name",
"arguments"}]}``, an :class:`~gym_envs.episode.Action` of sampled tokens, or a :class:`PolicyFailure` when
it could not produce one (a failed request: a failure is data).

Registry (:data:`POLICIES`, built by :func:`make_policy`; :func:`policy_help` describes it):

- one **model policy** (:class:`ModelPolicy`) per model backend of :data:`envgen.backends.BACKENDS`
  (``transformers``, ``vllm``, ``openai``), over ``make_backend(name, model=..., **backend_options)``;
  ``act_batch`` answers every episode in one backend call (the runner advances episodes in lock-step for
  these). A backend that samples tokens itself (``transformers``, ``vllm``: ``Backend.token_level``) is
  driven **as in training**: the episode's token context (:class:`~gym_envs.messages.ChatFormat`, the
  trainer's rendering: turns appended as tokens, never re-rendered) goes in, sampled token ids come out, and
  an action that reaches ``max_new_tokens`` without ending its turn ends the episode (``turn_too_long``),
  as a training rollout does; ``tokens=False`` (or a chat template that cannot be appended to turn by turn)
  sends the chat instead, with ``tools=`` only when ``pass_tools=True`` (the system prompt already lists
  the tools). Each call's seed derives from the policy seed. Token counts land in ``Episode.usage``. A
  request that gives no completion (the backend raises, or returns ``finish_reason == "error"``) is a
  :class:`PolicyFailure` with ``backend=True``: a backend failure, not the model's.
- ``scripted``: :class:`ScriptedPolicy` (it takes the name of the ``scripted`` backend, which replays canned
  completions and has no use as an evaluated policy); ``model`` selects the script: ``reference`` replays
  each turn's reference calls (all in one step, as parallel calls, so a turn with more calls than BFCL's
  20-step limit still fits; ``calls_per_step=N`` paces them; a turn with a ``calls_per_message`` check in steps
  of at most its ``max``; a scenario turn's ``say`` items as plain messages, which the user answers) then the
  oracle reply
  (:func:`envgen.gate.oracle_reply`); ``empty`` ends every turn at once with an empty message; a path to a
  ``.jsonl`` file replays recorded actions (lines ``{"env_id", "task_id", "trial"?, "actions": [...]}`` or the
  records of a previous run's ``results.jsonl``), then ends turns with empty messages. Scripted policies never
  fail, so they measure the checker and the harness, not a model.

Options are typed (:class:`ModelPolicyOptions`, :class:`ScriptedPolicyOptions`, and the backend's own
options class for ``backend_options``), built through :func:`corpora.registry.build_config`: an option the
policy does not take is refused with the closest names. ``make_policy("scripted:empty")`` is shorthand for
``make_policy("scripted", model="empty")``. ``Policy.label`` names the policy in reports and in a library's
``task_stats``; the scripted reference is labelled ``reference``, as
:meth:`envgen.library.Library.suspicious_tasks` expects.
"""

from __future__ import annotations

import itertools
import json
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpora.registry import Registry, build_config
from envgen.backends import BACKENDS
from eval.errors import PolicyFailure
from gym_envs.episode import Action, Episode
from gym_envs.errors import exception_text
from gym_envs.messages import ChatFormat, ChatTemplateError
from gym_envs.seeding import stable_seed

__all__ = ["POLICIES", "SCRIPTS", "ModelPolicy", "ModelPolicyOptions", "Policy", "PolicyFailure", "ScriptedPolicy",
           "ScriptedPolicyOptions", "make_policy", "model_policies", "policy_help", "policy_options",
           "reference_actions"]

Answer = Any  # str | dict[str, Any] | Action | PolicyFailure
SCRIPTS = ("reference", "empty")


class Policy(ABC):
    """Maps episodes to actions. ``batched`` policies prefer lock-step batches of episodes; ``chat`` (a
    :class:`~gym_envs.messages.ChatFormat`) makes the runner keep every episode's token record, and
    ``action_tokens`` bounds each action's tokens then."""

    label: str = "policy"
    batched: bool = False
    chat: ChatFormat | None = None
    action_tokens: int | None = None

    @abstractmethod
    def act_batch(self, episodes: Sequence[Episode]) -> list[Answer]:
        """One action per episode, in order."""

    def act(self, episode: Episode) -> Answer:
        return self.act_batch([episode])[0]

    def close(self) -> None:  # noqa: B027  (optional hook)
        """Release the model or connection."""


# -- scripted -------------------------------------------------------------------------------------
def _recorded_actions(rec: dict[str, Any]) -> list[Answer]:
    if isinstance(rec.get("actions"), list):
        return list(rec["actions"])
    out: list[Answer] = []
    for m in rec.get("transcript") or rec.get("messages") or []:
        if m.get("role") != "assistant":
            continue
        if isinstance(m.get("raw"), str | dict):
            out.append(m["raw"])
            continue
        calls = [{"name": c["function"]["name"], "arguments": c["function"].get("arguments") or {}}
                 for c in m.get("tool_calls") or []]
        out.append({"content": m.get("content") or "", "tool_calls": calls})
    return out


@dataclass(kw_only=True)
class ScriptedPolicyOptions:
    """Options of the ``scripted`` policy."""

    calls_per_step: int | None = None  #: the reference's calls per step (0 or None: all of a turn's in one step)


class ScriptedPolicy(Policy):
    """The checker's sanity baselines: ``reference``, ``empty`` or a recorded JSONL file."""

    def __init__(self, script: str = "reference", *, calls_per_step: int | None = None):
        if calls_per_step is not None and calls_per_step < 1:
            raise ValueError("calls_per_step must be >= 1 (or 0 / unset: all of a turn's calls in one step)")
        self.calls_per_step = calls_per_step
        self.recorded: dict[tuple[str, str, int | None], list[Answer]] = {}
        if script in SCRIPTS:
            self.script = script
            self.label = "reference" if script == "reference" else f"scripted:{script}"
        else:
            path = Path(script)
            if not path.is_file():
                raise ValueError(f"scripted policy: {script!r} is neither one of {SCRIPTS} nor a JSONL file")
            self.script = "replay"
            self.label = f"scripted:replay:{path.name}"
            self._load(path)

    def _load(self, path: Path) -> None:
        with path.open(encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                    key = (str(rec["env_id"]), str(rec["task_id"]))
                except (json.JSONDecodeError, KeyError, TypeError) as e:
                    raise ValueError(f"{path}:{n}: expected a JSON object with env_id and task_id "
                                     f"({e})") from None
                actions = _recorded_actions(rec)
                trial = rec.get("trial")
                self.recorded.setdefault((*key, int(trial) if trial is not None else None), actions)
                self.recorded.setdefault((*key, None), actions)

    def act_batch(self, episodes: Sequence[Episode]) -> list[Answer]:
        return [self._act(ep) for ep in episodes]

    def _act(self, ep: Episode) -> Answer:
        if self.script == "empty":
            return {"content": "", "tool_calls": []}
        if self.script == "replay":
            actions = (self.recorded.get((ep.task.env_id, ep.task.task_id, ep.trial))
                       or self.recorded.get((ep.task.env_id, ep.task.task_id, None)) or [])
            done = sum(1 for m in ep.messages if m.get("role") == "assistant")
            return actions[done] if done < len(actions) else {"content": "", "tool_calls": []}
        items, reply = ep.reference()
        actions = reference_actions(items, self.calls_per_step)
        if ep.steps_in_turn < len(actions):
            return actions[ep.steps_in_turn]
        return {"content": reply, "tool_calls": []}


def reference_actions(items: Sequence[dict[str, Any]], per: int | None = None) -> list[dict[str, Any]]:
    """A turn's reference plan (:meth:`Episode.reference`: call dicts, with ``action`` numbering the actions that
    make calls together, and ``{"say": text}`` messages) as structured actions: each action's calls (at most
    ``per`` at a time), each ``say`` a plain message."""
    out: list[dict[str, Any]] = []
    run: list[dict[str, Any]] = []

    def flush() -> None:
        step = per or max(1, len(run))
        out.extend({"content": "", "tool_calls": run[k:k + step]} for k in range(0, len(run), step))
        run.clear()

    group: Any = None
    for item in items:
        if "say" in item:
            flush()
            out.append({"content": item["say"], "tool_calls": []})
            continue
        if run and item.get("action") != group:
            flush()
        group = item.get("action")
        run.append({"name": item["name"], "arguments": item.get("arguments") or {}})
    flush()
    return out


# -- models ---------------------------------------------------------------------------------------
@dataclass(kw_only=True)
class ModelPolicyOptions:
    """Options of a model policy (beside the backend's own, in ``backend_options``)."""

    max_new_tokens: int = 1024  #: tokens of one action
    temperature: float = 0.0  #: sampling temperature (0 is greedy)
    seed: int = 0  #: every call's seed derives from it
    pass_tools: bool = False  #: also pass ``tools=`` to the chat template or the API
    #: drive a token-level backend through the episode's token context, as training does (None: when the backend
    #: samples tokens and its chat template appends turn by turn; False: send the chat)
    tokens: bool | None = None
    backend_options: dict[str, Any] = field(default_factory=dict)  #: the backend's options (its Options class)

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError("max_new_tokens must be >= 1")
        if self.temperature < 0:
            raise ValueError("temperature must be >= 0")


class ModelPolicy(Policy):
    """A model behind an ``envgen.backends`` backend (see the module docstring); ``options`` are
    :class:`ModelPolicyOptions`' fields. ``backend`` gives a backend already built instead."""

    batched = True

    def __init__(self, backend_name: str, model: str | None, *, backend: Any = None, **options: Any):
        opts: ModelPolicyOptions = build_config(ModelPolicyOptions, options=options, owner=f"policy {backend_name!r}")
        if backend is None:
            if not model:
                raise ValueError(f"the {backend_name} policy needs --model (a model id or path)")
            from envgen.backends import make_backend

            backend = make_backend(backend_name, model=model, **opts.backend_options)
        self.backend = backend
        self.backend_name = backend_name
        self.model = model
        self.label = f"{backend_name}:{model}"
        self.max_new_tokens = opts.max_new_tokens
        self.temperature = opts.temperature
        self.seed = opts.seed
        self.pass_tools = opts.pass_tools
        self._calls = itertools.count()  # atomic under the GIL: safe when episodes run in threads
        self.chat = self._token_format(opts.tokens)
        self.action_tokens = self.max_new_tokens if self.chat is not None else None
        #: the model's context window, which bounds each episode's tokens (token-level only; None: unknown)
        self.context_window: int | None = getattr(backend, "context_window", None) if self.chat is not None else None

    def _token_format(self, tokens: bool | None) -> ChatFormat | None:
        """The token rendering of a backend that samples tokens (None: the chat goes to the backend)."""
        tokenizer = getattr(self.backend, "tokenizer", None)
        if tokens is False or not getattr(self.backend, "token_level", False) or tokenizer is None:
            if tokens:
                raise ValueError(f"the {self.backend_name} backend samples text only: drop tokens=true")
            return None
        try:
            return ChatFormat(tokenizer, pass_tools=self.pass_tools,
                              chat_template_kwargs=getattr(self.backend, "chat_template_kwargs", None))
        except ChatTemplateError as e:
            if tokens:
                raise
            warnings.warn(f"{self.label}: the chat goes to the backend whole each step, not as training renders it "
                          f"({e})", stacklevel=3)
            return None

    def _failure(self, why: str) -> PolicyFailure:
        return PolicyFailure(f"the {self.backend_name} backend failed: {why}", backend=True)

    def act_batch(self, episodes: Sequence[Episode]) -> list[Answer]:
        if not episodes:
            return []
        if self.chat is not None:
            return self._act_tokens(episodes)
        groups: dict[str, list[int]] = {}
        for i, ep in enumerate(episodes):
            key = json.dumps(ep.tools, sort_keys=True) if self.pass_tools else ""
            groups.setdefault(key, []).append(i)
        answers: list[Answer] = [None] * len(episodes)
        for idx in groups.values():
            batch = [episodes[i] for i in idx]
            kwargs: dict[str, Any] = {"tools": batch[0].tools} if self.pass_tools else {}
            try:
                completions = self.backend.generate([ep.chat() for ep in batch], max_new_tokens=self.max_new_tokens,
                                                    temperature=self.temperature,
                                                    seed=stable_seed(self.seed, next(self._calls)), **kwargs)
                if len(completions) != len(batch):
                    raise RuntimeError(f"backend returned {len(completions)} completions for {len(batch)} prompts")
            except Exception as e:  # the policy's boundary: no completion came back, a backend failure for each
                for i in idx:
                    answers[i] = self._failure(exception_text(e))
                continue
            for i, ep, c in zip(idx, batch, completions, strict=True):
                ep.add_usage(getattr(c, "prompt_tokens", 0), getattr(c, "completion_tokens", 0))
                calls = getattr(c, "tool_calls", None)
                if getattr(c, "finish_reason", None) == "error":
                    answers[i] = self._failure(getattr(c, "error", "") or "")
                else:
                    answers[i] = {"content": c.text or "", "tool_calls": calls} if calls else c.text
        return answers

    def _act_tokens(self, episodes: Sequence[Episode]) -> list[Answer]:
        """Sample from every episode's token context in one call (the training path)."""
        budgets = [ep.budget for ep in episodes]
        try:
            completions = self.backend.generate_tokens(
                [ep.context() for ep in episodes], temperature=self.temperature,
                max_new_tokens=max((b for b in budgets if b is not None), default=self.max_new_tokens),
                seed=stable_seed(self.seed, next(self._calls)))
            if len(completions) != len(episodes):
                raise RuntimeError(f"backend returned {len(completions)} completions for {len(episodes)} contexts")
        except Exception as e:  # the policy's boundary, as above
            return [self._failure(exception_text(e)) for _ in episodes]
        answers: list[Answer] = []
        for ep, c in zip(episodes, completions, strict=True):
            ep.add_usage(c.prompt_tokens, c.completion_tokens)
            if c.finish_reason == "error" or c.token_ids is None:
                answers.append(self._failure(c.error or "no token ids came back"))
            else:
                finish = "length" if c.finish_reason == "length" else "stop"
                answers.append(Action(ids=list(c.token_ids), finish=finish))
        return answers

    def close(self) -> None:
        close = getattr(self.backend, "close", None)
        if callable(close):
            close()


# -- registry -------------------------------------------------------------------------------------
PolicyFactory = Callable[..., Policy]
POLICIES: Registry[PolicyFactory] = Registry("policy")


def _model_factory(name: str) -> PolicyFactory:
    def factory(model: str | None = None, **opts: Any) -> Policy:
        return ModelPolicy(name, model, **opts)

    factory.__name__ = f"{name}_policy"
    return factory


def _scripted(model: str | None = None, **opts: Any) -> Policy:
    o: ScriptedPolicyOptions = build_config(ScriptedPolicyOptions, options=opts, owner="policy 'scripted'")
    return ScriptedPolicy(model or "reference", calls_per_step=o.calls_per_step or None)


POLICIES.register("scripted", _scripted)
for _name in BACKENDS.names():  # a model policy per model backend (scripted is the scripted policy's name)
    if _name not in POLICIES:
        POLICIES.register(_name, _model_factory(_name))


def policy_options(name: str) -> list[str]:
    """The options the policy a name names takes (``scripted:empty`` names ``scripted``)."""
    from corpora.registry import option_names

    base = name.partition(":")[0]
    POLICIES.get(base)  # an unknown name fails here, with the closest names
    return option_names(ScriptedPolicyOptions if base == "scripted" else ModelPolicyOptions)


def model_policies() -> list[str]:
    """The names of the model policies (one per model backend)."""
    return [n for n in POLICIES.names() if n != "scripted"]


def policy_help() -> str:
    """What ``--policy`` takes, from the registry."""
    return (f"{', '.join(model_policies())} (a model through the backend of that name: --model, "
            "--backend-option) or scripted (--model reference, empty or a JSONL of actions; scripted:empty ok).")


def make_policy(name: str, model: str | None = None, **opts: Any) -> Policy:
    """Build a policy by registry name (``scripted:empty`` == ``scripted`` with ``model="empty"``).

    Options are :class:`ModelPolicyOptions`' fields for a model policy (``backend_options`` for the backend)
    and :class:`ScriptedPolicyOptions`' for ``scripted``; an unknown one is refused with the closest names.
    """
    base, _, rest = name.partition(":")
    if rest:
        if model is not None and model != rest:
            raise ValueError(f"policy {name!r} already names its model; drop --model {model!r}")
        model = rest
    return POLICIES.get(base)(model=model, **opts)

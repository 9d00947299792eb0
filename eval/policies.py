"""Policies: what maps an episode's chat history to the agent's next action.

Role: the one interface the runner drives, for models and for the checker's sanity baselines.
A policy receives :class:`eval.suites.History` views (chat ``messages`` in OpenAI form with the
system prompt that describes the tools first, tool results as ``tool`` messages; ``tools`` in
OpenAI ``tools=`` form) and returns one action per history: text (``<tool_call>`` blocks or a
plain message) or a structured ``{"content", "tool_calls": [{"name", "arguments"}]}``, or a
:class:`PolicyFailure` when it could not produce one (a failed request: a failure is data).

Registry (:data:`POLICIES`, built by :func:`make_policy`):

- ``transformers``, ``vllm``, ``openai``: :class:`ModelPolicy` over
  ``envgen.backends.make_backend(name, model=..., **opts)``; ``act_batch`` sends all histories in
  one ``generate`` call (the runner advances active episodes in lockstep for these), with
  ``tools=`` only when ``pass_tools=True`` (the system prompt already lists the tools) and a
  per-call seed derived from the policy seed. Token counts land in ``History.usage``. A request that
  gives no completion (the backend raises, or returns ``finish_reason == "error"``) is a
  :class:`PolicyFailure` with ``backend=True``: a backend failure, not the model's.
- ``scripted``: :class:`ScriptedPolicy`, ``model`` selects the script: ``reference`` replays
  each turn's reference calls (all in one step, as parallel calls, so a turn with more calls than
  BFCL's 20-step limit still fits; ``calls_per_step=N`` paces them) then
  :func:`envgen.gate.oracle_reply`;
  ``empty`` ends every turn at once with an empty message; a path to a ``.jsonl`` file replays
  recorded actions (lines ``{"env_id", "task_id", "trial"?, "actions": [...]}`` or the records of
  a previous run's ``results.jsonl``), then ends turns with empty messages. Scripted policies
  never fail, so they measure the checker and the harness, not a model.

``make_policy("scripted:empty")`` is shorthand for ``make_policy("scripted", model="empty")``.
``Policy.label`` names the policy in reports and in a library's ``task_stats``; the scripted
reference is labelled ``reference``, as :meth:`envgen.library.Library.suspicious_tasks` expects.
"""

from __future__ import annotations

import itertools
import json
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

from corpora.registry import Registry
from eval.errors import PolicyFailure
from eval.suites import History
from gym_envs.errors import exception_text
from gym_envs.seeding import stable_seed

__all__ = ["POLICIES", "SCRIPTS", "ModelPolicy", "Policy", "PolicyFailure", "ScriptedPolicy", "make_policy",
           "openai_messages"]

Action = Any  # str | dict[str, Any] | PolicyFailure
SCRIPTS = ("reference", "empty")


class Policy(ABC):
    """Maps histories to actions. ``batched`` policies prefer lockstep batches of episodes."""

    label: str = "policy"
    batched: bool = False

    @abstractmethod
    def act_batch(self, histories: list[History]) -> list[Action]:
        """One action per history, in order."""

    def act(self, history: History) -> Action:
        return self.act_batch([history])[0]

    def close(self) -> None:  # noqa: B027  (optional hook)
        """Release the model or connection."""


# -- scripted -------------------------------------------------------------------------------------
def _recorded_actions(rec: dict[str, Any]) -> list[Action]:
    if isinstance(rec.get("actions"), list):
        return list(rec["actions"])
    out: list[Action] = []
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


class ScriptedPolicy(Policy):
    """The checker's sanity baselines: ``reference``, ``empty`` or a recorded JSONL file."""

    def __init__(self, script: str = "reference", *, calls_per_step: int | None = None):
        if calls_per_step is not None and calls_per_step < 1:
            raise ValueError("calls_per_step must be >= 1 (or 0 / unset: all of a turn's calls in one step)")
        self.calls_per_step = calls_per_step
        self.recorded: dict[tuple[str, str, int | None], list[Action]] = {}
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

    def act_batch(self, histories: list[History]) -> list[Action]:
        return [self._act(h) for h in histories]

    def _act(self, h: History) -> Action:
        if self.script == "empty":
            return {"content": "", "tool_calls": []}
        if self.script == "replay":
            actions = (self.recorded.get((h.task.env_id, h.task.task_id, h.trial))
                       or self.recorded.get((h.task.env_id, h.task.task_id, None)) or [])
            done = sum(1 for m in h.messages if m.get("role") == "assistant")
            return actions[done] if done < len(actions) else {"content": "", "tool_calls": []}
        calls, reply = h.reference()
        per = self.calls_per_step or max(1, len(calls))
        start = h.steps_in_turn * per
        if start < len(calls):
            return {"content": "", "tool_calls": calls[start:start + per]}
        return {"content": reply, "tool_calls": []}


# -- models ---------------------------------------------------------------------------------------
def openai_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages valid for an OpenAI-compatible API: a ``tool`` message must answer a call id of
    the preceding assistant message; any other tool output becomes a user message."""
    out: list[dict[str, Any]] = []
    open_ids: set[str] = set()
    for m in messages:
        m = {k: v for k, v in m.items() if k not in ("raw", "step")}
        if m.get("role") == "assistant":
            open_ids = {c["id"] for c in m.get("tool_calls") or []}
            if not m.get("tool_calls"):
                m.pop("tool_calls", None)
        elif m.get("role") == "tool":
            if m.get("tool_call_id") in open_ids:
                m = {"role": "tool", "tool_call_id": m["tool_call_id"], "content": m.get("content", "")}
            else:
                m = {"role": "user", "content": f"[tool output] {m.get('content', '')}"}
        else:
            open_ids = set()
        out.append(m)
    return out


class ModelPolicy(Policy):
    """A model behind an ``envgen.backends`` backend (see the module docstring)."""

    batched = True

    def __init__(self, backend_name: str, model: str | None, *, max_new_tokens: int = 1024,
                 temperature: float = 0.0, seed: int = 0, pass_tools: bool = False, backend: Any = None,
                 **backend_opts: Any):
        if max_new_tokens < 1:
            raise ValueError("max_new_tokens must be >= 1")
        if temperature < 0:
            raise ValueError("temperature must be >= 0")
        if backend is None:
            if not model:
                raise ValueError(f"the {backend_name} policy needs --model (a model id or path)")
            try:
                from envgen.backends import make_backend
            except ImportError as e:
                raise RuntimeError(f"the {backend_name} policy needs envgen.backends, which is not "
                                   f"importable here: {e}") from e
            backend = make_backend(backend_name, model=model, **backend_opts)
        self.backend = backend
        self.backend_name = backend_name
        self.model = model
        self.label = f"{backend_name}:{model}"
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.seed = seed
        self.pass_tools = pass_tools
        self._calls = itertools.count()  # atomic under the GIL: safe when episodes run in threads

    def _prompts(self, histories: list[History]) -> list[list[dict[str, Any]]]:
        if self.backend_name == "openai":
            return [openai_messages(h.messages) for h in histories]
        return [h.chat() for h in histories]

    def act_batch(self, histories: list[History]) -> list[Action]:
        if not histories:
            return []
        groups: dict[str, list[int]] = {}
        for i, h in enumerate(histories):
            key = json.dumps(h.tools, sort_keys=True) if self.pass_tools else ""
            groups.setdefault(key, []).append(i)
        actions: list[Action | None] = [None] * len(histories)
        for idx in groups.values():
            batch = [histories[i] for i in idx]
            kwargs: dict[str, Any] = {}
            if self.pass_tools:
                kwargs["tools"] = batch[0].tools
            seed = stable_seed(self.seed, next(self._calls))
            try:
                completions = self.backend.generate(self._prompts(batch), max_new_tokens=self.max_new_tokens,
                                                    temperature=self.temperature, seed=seed, **kwargs)
                if len(completions) != len(batch):
                    raise RuntimeError(f"backend returned {len(completions)} completions for "
                                       f"{len(batch)} prompts")
            except Exception as e:  # the policy's boundary: no completion came back, a backend failure for each
                for i in idx:
                    actions[i] = PolicyFailure(f"the {self.backend_name} backend failed: {exception_text(e)}",
                                               backend=True)
                continue
            for i, h, c in zip(idx, batch, completions, strict=True):
                h.add_usage(getattr(c, "prompt_tokens", 0), getattr(c, "completion_tokens", 0))
                calls = getattr(c, "tool_calls", None)
                if getattr(c, "finish_reason", None) == "error":
                    error = getattr(c, "error", "")
                    actions[i] = PolicyFailure(f"the {self.backend_name} backend failed: {error}", backend=True)
                else:
                    actions[i] = {"content": c.text or "", "tool_calls": calls} if calls else c.text
        return [a if a is not None else "" for a in actions]

    def close(self) -> None:
        close = getattr(self.backend, "close", None)
        if callable(close):
            close()


# -- registry -------------------------------------------------------------------------------------
PolicyFactory = Callable[..., Policy]
POLICIES: Registry[PolicyFactory] = Registry("policy")

_SCRIPTED_OPTS = {"calls_per_step"}


def _model_factory(name: str) -> PolicyFactory:
    def factory(model: str | None = None, **opts: Any) -> Policy:
        return ModelPolicy(name, model, **opts)

    factory.__name__ = f"{name}_policy"
    return factory


def _scripted(model: str | None = None, **opts: Any) -> Policy:
    kept = {k: v for k, v in opts.items() if k in _SCRIPTED_OPTS}
    if kept.get("calls_per_step") == 0:
        kept["calls_per_step"] = None
    return ScriptedPolicy(model or "reference", **kept)


for _name in ("transformers", "vllm", "openai"):
    POLICIES.register(_name, _model_factory(_name))
POLICIES.register("scripted", _scripted)


def make_policy(name: str, model: str | None = None, **opts: Any) -> Policy:
    """Build a policy by registry name (``scripted:empty`` == ``scripted`` with ``model="empty"``).

    Options reach :class:`ModelPolicy` (``max_new_tokens``, ``temperature``, ``seed``,
    ``pass_tools``, backend options) or :class:`ScriptedPolicy` (``calls_per_step``; the model
    options are ignored there).
    """
    base, _, rest = name.partition(":")
    if rest:
        if model is not None and model != rest:
            raise ValueError(f"policy {name!r} already names its model; drop --model {model!r}")
        model = rest
    return POLICIES.get(base)(model=model, **opts)

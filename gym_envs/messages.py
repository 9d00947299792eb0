"""The one message builder: what a model sees of an episode, as chat messages and as tokens.

Role: every place that shows an episode to a model (the episode engine, :mod:`gym_envs.episode`, for
training and evaluation alike; the backends that send chats) writes its messages here, so what the model
sees in evaluation is built by the same code as what it was trained on.

Messages (OpenAI form):

* ``system`` and ``user``: ``{"role", "content"}`` (:func:`user_message`);
* ``assistant`` (:func:`assistant_message`): ``content`` is the action's visible text (``<think>`` spans and
  tool-call blocks removed), ``tool_calls`` its calls as ``{"id": "call_<step>_<i>", "type": "function",
  "function": {"name", "arguments": JSON text}}``; the bookkeeping keys ``raw`` (the action exactly as the
  policy gave it: text, or a JSON-safe copy of a structured action) and ``step`` (the action's number in
  the episode, from 1) are kept for transcripts and replays;
* ``tool`` (:func:`tool_messages`): one per call's result, ``{"role": "tool", "tool_call_id", "name",
  "content"}``, answering the call of the same index; one per unparsable call, with ``tool_call_id`` None and
  ``name`` ``parse_error``.

:func:`chat_messages` drops the bookkeeping keys (what a backend receives); :func:`openai_messages` also makes
a chat valid for an OpenAI-compatible API (a ``tool`` message must answer a call id of the assistant message
before it).

Tokens (:class:`ChatFormat`): an episode is one token sequence: the prompt (system prompt with the tools, the
first instruction, the generation prompt), then alternating **model tokens** (an action, ending with the
end-of-turn token) and **environment tokens** (tool results or the next user message, up to the next
generation prompt). History is never re-rendered: each piece is appended as tokens, so what a model is
trained on is exactly what it saw and produced. Environment pieces are cut out of the chat template the way
TRL's tool loop does it (``GRPOTrainer._get_tool_suffix_ids``): render a short dummy conversation with and
without the new messages and keep what follows the dummy assistant turn's end-of-turn token. Templates that
re-render history (Qwen3 drops earlier turns' think blocks) are rendered with TRL's prefix-preserving
training variant (``trl.chat_template_utils``, when TRL is installed). This works for any template that ends
an assistant turn with the tokenizer's EOS token (TRL's bundled ``qwen3.jinja`` and the other ChatML-style
templates); :meth:`ChatFormat.check` refuses others with a :class:`ChatTemplateError` that says so.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from gym_envs.errors import ErrorKind
from gym_envs.parsing import ParsedAction

__all__ = ["BOOKKEEPING", "ChatFormat", "ChatTemplateError", "assistant_message", "call_id", "chat_messages",
           "openai_messages", "parse_error_message", "tool_messages", "user_message"]

#: keys of envwright's own on messages, dropped before a backend sees them
BOOKKEEPING = ("raw", "step")


class ChatTemplateError(ValueError):
    """A tokenizer whose chat template cannot be appended to turn by turn; the message says which to use."""


def call_id(step: int, index: int) -> str:
    """The id of call ``index`` of action ``step`` (what its ``tool`` message answers)."""
    return f"call_{step}_{index}"


def user_message(text: str) -> dict[str, Any]:
    """A user (or instruction) message."""
    return {"role": "user", "content": text}


def assistant_message(action: Any, parsed: ParsedAction, step: int) -> dict[str, Any]:
    """The assistant message of action number ``step`` (see the module docstring)."""
    msg: dict[str, Any] = {"role": "assistant", "content": parsed.content, "step": step}
    if parsed.calls:
        msg["tool_calls"] = [
            {"id": call_id(step, i), "type": "function",
             "function": {"name": c["name"], "arguments": json.dumps(c["arguments"], ensure_ascii=False)}}
            for i, c in enumerate(parsed.calls)]
    msg["raw"] = action if isinstance(action, str) else json.loads(json.dumps(action, default=str))
    return msg


def parse_error_message(error: str) -> dict[str, Any]:
    """The ``tool`` message of a call that could not be parsed."""
    return {"role": "tool", "tool_call_id": None, "name": "parse_error",
            "content": json.dumps({"error": error, "type": ErrorKind.PARSE_ERROR.value})}


def tool_messages(names: Sequence[str], contents: Sequence[str], errors: Sequence[str],
                  step: int) -> list[dict[str, Any]]:
    """The ``tool`` messages of action ``step``: one per call's result (``names[i]``, ``contents[i]``), one per
    unparsable call."""
    out = [{"role": "tool", "tool_call_id": call_id(step, i), "name": name, "content": text}
           for i, (name, text) in enumerate(zip(names, contents, strict=True))]
    return out + [parse_error_message(e) for e in errors]


def chat_messages(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages without the bookkeeping keys (:data:`BOOKKEEPING`)."""
    return [{k: v for k, v in m.items() if k not in BOOKKEEPING} for m in messages]


def openai_messages(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages valid for an OpenAI-compatible API: a ``tool`` message must answer a call id of the
    preceding assistant message; any other tool output becomes a user message."""
    out: list[dict[str, Any]] = []
    open_ids: set[str] = set()
    for m in chat_messages(messages):
        if m.get("role") == "assistant":
            open_ids = {c["id"] for c in m.get("tool_calls") or [] if c.get("id")}
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


# -- tokens ----------------------------------------------------------------------------------------
def _prefix_preserving_template(tokenizer: Any) -> str | None:
    """TRL's training variant of the tokenizer's template when the original re-renders history
    (Qwen3 drops earlier turns' think blocks); None when the original appends turns as they are."""
    try:
        from trl.chat_template_utils import get_training_chat_template, is_chat_template_prefix_preserving
    except ImportError:
        return None
    try:
        if is_chat_template_prefix_preserving(tokenizer):
            return None
        return get_training_chat_template(tokenizer)
    except Exception:  # kept broad: rendering any chat template may raise anything (jinja, the template's own
        # raise_exception); a template TRL does not know falls back to counting end-of-turn tokens
        return None


class ChatFormat:
    """Prompt, model and environment tokens of an episode for one tokenizer (module docstring).

    Args:
        tokenizer: a Hugging Face tokenizer with a chat template.
        pass_tools: also pass ``tools=`` to the template (the env's system prompt lists them anyway).
        chat_template_kwargs: extra template variables (e.g. ``{"enable_thinking": False}``).
    """

    def __init__(self, tokenizer: Any, *, pass_tools: bool = False,
                 chat_template_kwargs: dict[str, Any] | None = None):
        if not getattr(tokenizer, "chat_template", None):
            raise ChatTemplateError("the tokenizer has no chat template; give it one (training: "
                                    "model.chat_template: trl:qwen3)")
        if tokenizer.eos_token_id is None:
            raise ChatTemplateError("the tokenizer has no eos token; the end of an action cannot be detected")
        self.tokenizer = tokenizer
        self.pass_tools = pass_tools
        self.kwargs = dict(chat_template_kwargs or {})
        self.eos_id: int = int(tokenizer.eos_token_id)
        self.pad_id: int = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_id)
        self.suffix_template = _prefix_preserving_template(tokenizer)
        self.check()

    def render(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None,
               add_generation_prompt: bool) -> str:
        return self.tokenizer.apply_chat_template(chat_messages(messages), tools=tools if self.pass_tools else None,
                                                  add_generation_prompt=add_generation_prompt, tokenize=False,
                                                  **self.kwargs)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def prompt_ids(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> list[int]:
        """Tokens of a chat up to and including the generation prompt."""
        return self.encode(self.render(messages, tools=tools, add_generation_prompt=True))

    def assistant_ids(self, text: str) -> list[int]:
        """Tokens of an assistant action given as text (a teacher's, a scripted policy's): the text, then EOS."""
        return [*self.encode(text), self.eos_id]

    def _after_assistant(self, messages: list[dict[str, Any]], dummy: list[dict[str, Any]]) -> list[int]:
        kwargs = {"chat_template": self.suffix_template} if self.suffix_template else {}
        prefix = self.encode(self.tokenizer.apply_chat_template(dummy, add_generation_prompt=False, tokenize=False,
                                                                **kwargs, **self.kwargs))
        full = self.encode(self.tokenizer.apply_chat_template(dummy + chat_messages(messages),
                                                              add_generation_prompt=True, tokenize=False,
                                                              **kwargs, **self.kwargs))
        turns = prefix.count(self.eos_id)
        if not turns:
            raise ChatTemplateError("the chat template does not end an assistant turn with the tokenizer's eos token "
                                    f"({self.tokenizer.eos_token!r}); use a ChatML-style template (training: "
                                    "model.chat_template: trl:qwen3)")
        ends = [i for i, t in enumerate(full) if t == self.eos_id]
        if len(ends) <= turns:
            raise ChatTemplateError("the chat template renders no end-of-turn token after a new message; use a "
                                    "ChatML-style template (training: model.chat_template: trl:qwen3)")
        return full[ends[turns - 1] + 1:]

    def tool_suffix_ids(self, tool_messages: list[dict[str, Any]]) -> list[int]:
        """Environment tokens after an action with tool calls: the results and the next generation prompt."""
        name = tool_messages[0].get("name") or "tool"
        call = {"type": "function", "function": {"name": name, "arguments": {}}}
        dummy: list[dict[str, Any]] = [{"role": "user", "content": "dummy"},
                                       {"role": "assistant", "content": "", "tool_calls": [call]}]
        return self._after_assistant(tool_messages, dummy)

    def user_suffix_ids(self, content: str) -> list[int]:
        """Environment tokens after a final message: the next user message and the generation prompt."""
        dummy = [{"role": "user", "content": "dummy"}, {"role": "assistant", "content": "dummy"}]
        return self._after_assistant([user_message(content)], dummy)

    def decode(self, ids: list[int]) -> str:
        """Text of an action: up to the first EOS, special tokens such as ``<tool_call>`` kept."""
        if self.eos_id in ids:
            ids = ids[: ids.index(self.eos_id)]
        special = {self.pad_id}
        return self.tokenizer.decode([t for t in ids if t not in special], skip_special_tokens=False)

    def check(self) -> None:
        """Refuse templates whose turns cannot be appended as tokens (see the module docstring)."""
        self.user_suffix_ids("check")
        self.tool_suffix_ids([{"role": "tool", "name": "check", "content": "{}"}])

"""Token-level assembly of multi-turn episodes with the model's chat template.

An episode is one token sequence: the prompt (system prompt with the tools,
the first instruction, the generation prompt), then alternating **model
tokens** (an action, ending with the end-of-turn token) and **environment
tokens** (tool results or the next instruction, up to the next generation
prompt). History is never re-rendered: each piece is appended as tokens, so
what the model is trained on is exactly what it saw and produced.

Environment pieces are cut out of the chat template the way TRL's tool loop
does it (``GRPOTrainer._get_tool_suffix_ids``): render a short dummy
conversation with and without the new messages and keep what follows the
dummy assistant turn's end-of-turn token. Templates that re-render history
(Qwen3 drops earlier turns' think blocks) are rendered with TRL's
prefix-preserving training variant (``trl.chat_template_utils``). This works
for any template that ends an assistant turn with the tokenizer's EOS token
(TRL's bundled ``qwen3.jinja`` and the other ChatML-style templates);
:meth:`ChatFormat.check` refuses others with a message that says which
template to use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from training.errors import ConfigError

__all__ = ["ChatFormat", "load_chat_template"]


def load_chat_template(spec: str) -> str:
    """A template from ``trl:NAME`` (TRL's bundled ``NAME.jinja``) or a file path."""
    if spec.startswith("trl:"):
        import trl

        name = spec[4:].removesuffix(".jinja")
        path = Path(trl.__file__).parent / "chat_templates" / f"{name}.jinja"
        if not path.is_file():
            names = sorted(p.stem for p in path.parent.glob("*.jinja"))
            raise ConfigError(f"model.chat_template: TRL bundles no template {name!r}; choose one of "
                              f"{', '.join('trl:' + n for n in names)}")
        return path.read_text(encoding="utf-8")
    path = Path(spec)
    if not path.is_file():
        raise ConfigError(f"model.chat_template: no template file at {path}; use trl:qwen3 or a .jinja path")
    return path.read_text(encoding="utf-8")


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
    """Prompt, model and environment tokens of an episode for one tokenizer.

    Args:
        tokenizer: a Hugging Face tokenizer with a chat template.
        pass_tools: also pass ``tools=`` to the template (the env's system prompt lists them anyway).
        chat_template_kwargs: extra template variables (e.g. ``{"enable_thinking": False}``).
    """

    def __init__(self, tokenizer: Any, *, pass_tools: bool = False,
                 chat_template_kwargs: dict[str, Any] | None = None):
        if not getattr(tokenizer, "chat_template", None):
            raise ConfigError("the tokenizer has no chat template; set model.chat_template: trl:qwen3")
        if tokenizer.eos_token_id is None:
            raise ConfigError("the tokenizer has no eos token; the end of an action cannot be detected")
        self.tokenizer = tokenizer
        self.pass_tools = pass_tools
        self.kwargs = dict(chat_template_kwargs or {})
        self.eos_id: int = int(tokenizer.eos_token_id)
        self.pad_id: int = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_id)
        self.suffix_template = _prefix_preserving_template(tokenizer)
        self.check()

    # -- rendering --------------------------------------------------------------------------------
    def render(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None,
               add_generation_prompt: bool) -> str:
        return self.tokenizer.apply_chat_template(messages, tools=tools if self.pass_tools else None,
                                                  add_generation_prompt=add_generation_prompt, tokenize=False,
                                                  **self.kwargs)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def prompt_ids(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> list[int]:
        """Tokens of a chat up to and including the generation prompt."""
        return self.encode(self.render(messages, tools=tools, add_generation_prompt=True))

    def assistant_ids(self, text: str) -> list[int]:
        """Tokens of an assistant action written by someone else (a teacher): the text, then EOS."""
        return [*self.encode(text), self.eos_id]

    def _after_assistant(self, messages: list[dict[str, Any]], dummy: list[dict[str, Any]]) -> list[int]:
        kwargs = {"chat_template": self.suffix_template} if self.suffix_template else {}
        prefix = self.encode(self.tokenizer.apply_chat_template(dummy, add_generation_prompt=False, tokenize=False,
                                                                **kwargs, **self.kwargs))
        full = self.encode(self.tokenizer.apply_chat_template(dummy + messages, add_generation_prompt=True,
                                                              tokenize=False, **kwargs, **self.kwargs))
        turns = prefix.count(self.eos_id)
        if not turns:
            raise ConfigError("the chat template does not end an assistant turn with the tokenizer's eos token "
                              f"({self.tokenizer.eos_token!r}); set model.chat_template: trl:qwen3")
        ends = [i for i, t in enumerate(full) if t == self.eos_id]
        if len(ends) <= turns:
            raise ConfigError("the chat template renders no end-of-turn token after a new message; use a "
                              "ChatML-style template (model.chat_template: trl:qwen3)")
        return full[ends[turns - 1] + 1:]

    def tool_suffix_ids(self, tool_messages: list[dict[str, Any]]) -> list[int]:
        """Environment tokens after an action with tool calls: the results and the next generation prompt."""
        name = tool_messages[0].get("name") or "tool"
        call = {"type": "function", "function": {"name": name, "arguments": {}}}
        dummy: list[dict[str, Any]] = [{"role": "user", "content": "dummy"},
                                       {"role": "assistant", "content": "", "tool_calls": [call]}]
        return self._after_assistant(tool_messages, dummy)

    def user_suffix_ids(self, content: str) -> list[int]:
        """Environment tokens after a final message: the next instruction and the generation prompt."""
        dummy = [{"role": "user", "content": "dummy"}, {"role": "assistant", "content": "dummy"}]
        return self._after_assistant([{"role": "user", "content": content}], dummy)

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

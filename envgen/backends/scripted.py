"""The ``scripted`` backend: replays recorded completions, for tests and dry runs.

The script is a list of strings, a JSONL file (each line a JSON string or an
object with a ``text`` or ``completion`` field; ``model=PATH`` works too, so
``--backend scripted --model replies.jsonl`` runs from the command line), or a
callable ``fn(prompt) -> str`` (``prompt`` is the chat or the string).

Completions are handed out in call order, prompt-major, one per sample; when
the script runs out the backend raises
:class:`~envgen.errors.BackendError` (or starts over with
``cycle=True``). Every prompt seen is recorded in :attr:`ScriptedBackend.prompts`
so a test can assert what the model was asked. ``stop`` and
``max_new_tokens`` are honoured on the text (a token is taken as 4
characters); token counts are estimates. Under a ``json_schema`` a canned
completion that the schema does not admit comes back as an error (constrained
decoding could not have produced it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpora.registry import build_config
from envgen.backends.base import Backend, Completion, Prompt, approx_tokens, prompt_text, truncate_at_stop
from envgen.errors import BackendError

__all__ = ["ScriptedBackend", "ScriptedOptions", "load_script"]


def load_script(path: str | Path) -> list[str]:
    """Completions from a JSONL file (JSON strings, or objects with ``text`` / ``completion``)."""
    p = Path(path)
    if not p.is_file():
        raise BackendError(f"no script file at {p} (a JSONL file of completions)")
    out: list[str] = []
    for lineno, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as e:
            raise BackendError(f"{p}:{lineno}: not JSON ({e.msg}); each line must be a JSON string "
                               "or object") from None
        if isinstance(item, dict):
            item = item.get("text", item.get("completion"))
        if not isinstance(item, str):
            raise BackendError(f"{p}:{lineno}: expected a string or an object with a 'text' field")
        out.append(item)
    return out


@dataclass(kw_only=True)
class ScriptedOptions:
    """Options of the ``scripted`` backend."""

    #: the script: a list of strings, a JSONL file, or ``fn(prompt) -> str`` (default: ``model`` as a JSONL path)
    completions: Sequence[str] | str | Path | Callable[[Prompt], str] | None = None
    cycle: bool = False  #: start the script over when it runs out (else the backend raises)


class ScriptedBackend(Backend):
    """Hands out prepared completions in order; ``options`` are :class:`ScriptedOptions`' fields."""

    name = "scripted"
    per_prompt_budgets = True
    Options = ScriptedOptions

    def __init__(self, model: str | None = None, **options: Any):
        opts: ScriptedOptions = build_config(ScriptedOptions, options=options, owner="backend 'scripted'")
        super().__init__(model)
        completions, cycle = opts.completions, opts.cycle
        source = completions if completions is not None else model
        self._fn: Callable[[Prompt], str] | None = None
        self._script: list[str] = []
        if callable(source):
            self._fn = source
        elif isinstance(source, str | Path):
            self._script = load_script(source)
        elif source is not None:
            if any(not isinstance(s, str) for s in source):
                raise BackendError("scripted completions must be strings")
            self._script = list(source)
        else:
            raise BackendError("the scripted backend needs completions=[...], a JSONL path or a callable")
        self.cycle = cycle
        self.position = 0
        self.prompts: list[Prompt] = []  #: every prompt seen, in order (one entry per sample)

    @property
    def model_id(self) -> str:
        if self.model and not Path(str(self.model)).exists():
            return str(self.model)
        return "scripted"

    @property
    def remaining(self) -> int | None:
        """Completions left in the script (``None`` for a callable or a cycling script)."""
        return None if self._fn is not None or self.cycle else len(self._script) - self.position

    def _next(self, prompt: Prompt) -> str:
        if self._fn is not None:
            return str(self._fn(prompt))
        if self.position >= len(self._script):
            if not self.cycle or not self._script:
                raise BackendError(f"the scripted backend ran out of completions after {self.position} "
                                   "(give more, or cycle=True)")
            self.position = 0
        text = self._script[self.position]
        self.position += 1
        return text

    def _generate(self, prompts: list[Prompt], *, max_new_tokens: int | list[int], temperature: float,
                  top_p: float, seed: int, n: int, stop: list[str] | None, tools: list[dict[str, Any]] | None,
                  schemas: list[dict[str, Any] | None] | None = None) -> list[Completion]:
        budgets = [max_new_tokens] * len(prompts) if isinstance(max_new_tokens, int) else max_new_tokens
        out: list[Completion] = []
        for i, prompt in enumerate(prompts):
            schema = schemas[i] if schemas else None
            for _ in range(n):
                self.prompts.append(prompt)
                text, stopped = truncate_at_stop(self._next(prompt), stop)
                finish = "stop"
                if not stopped and approx_tokens(text) > budgets[i]:
                    text, finish = text[:4 * budgets[i]], "length"
                comp = Completion(text=text, prompt_tokens=approx_tokens(prompt_text(prompt)),
                                  completion_tokens=max(1, approx_tokens(text)), finish_reason=finish)
                out.append(_check_schema(comp, schema) if schema is not None else comp)
        return out


def _check_schema(comp: Completion, schema: dict[str, Any]) -> Completion:
    """A canned answer under a schema must be what constrained decoding could produce: else an error."""
    import jsonschema

    try:
        jsonschema.validate(json.loads(comp.text), schema)
    except (json.JSONDecodeError, jsonschema.ValidationError) as e:
        msg = getattr(e, "message", None) or getattr(e, "msg", str(e))
        return Completion(text=comp.text, prompt_tokens=comp.prompt_tokens, completion_tokens=comp.completion_tokens,
                          finish_reason="error", error=f"the scripted completion does not match the JSON schema "
                          f"decoding was constrained to: {msg}")
    return comp

"""The ``openai`` backend: any OpenAI-compatible ``/v1/chat/completions`` endpoint.

Works with the OpenAI API, a ``vllm serve`` or SGLang server, llama.cpp's
server and the like. Uses the ``openai`` client when it is installed (and
``use_client`` is not False), plain HTTP through :mod:`urllib` otherwise; both
send the same request body and read the same response fields.

Contract (beyond :mod:`envgen.backends.base`):

* ``base_url`` defaults to ``$OPENAI_BASE_URL`` or ``http://localhost:8000/v1``,
  ``api_key`` to ``$OPENAI_API_KEY`` or ``"EMPTY"``;
* a string prompt is sent as one user message; a chat is made valid for the API first
  (:func:`gym_envs.messages.openai_messages`: a ``tool`` message must answer a call id of the assistant
  message before it, any other tool output becomes a user message);
* a batch is sent as concurrent requests (a thread pool of ``max_workers``),
  one per prompt, each with ``n`` and its own seed
  (:func:`~gym_envs.seeding.stable_seed`);
* token counts come from the response's ``usage``; with ``n > 1`` the
  completion tokens are split evenly between the samples (the API reports one
  total); a response without ``usage`` gets estimates;
* structured tool calls in a response come back as ``Completion.tool_calls``
  (``{"name", "arguments"}``, arguments parsed from JSON where they parse);
* a request that still fails after ``max_retries`` retries (connection
  errors, 408/409/429/5xx) is a completion with ``finish_reason == "error"``.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from corpora.registry import build_config
from envgen.backends.base import Backend, Completion, Prompt, approx_tokens, prompt_text
from envgen.backends.repeats import short_repeats
from envgen.errors import BackendError
from gym_envs.errors import exception_text
from gym_envs.messages import openai_messages
from gym_envs.seeding import stable_seed

__all__ = ["OpenAIBackend", "OpenAIOptions"]

_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class _HttpError(Exception):
    def __init__(self, status: int | None, message: str):
        self.status = status
        super().__init__(message)


@dataclass(kw_only=True)
class OpenAIOptions:
    """Options of the ``openai`` backend."""

    base_url: str | None = None  #: the server (default: ``$OPENAI_BASE_URL`` or ``http://localhost:8000/v1``)
    api_key: str | None = None  #: the key (default: ``$OPENAI_API_KEY`` or ``"EMPTY"``)
    max_workers: int = 8  #: concurrent requests of one batch
    timeout: float = 600.0  #: seconds per request
    max_retries: int = 2  #: retries of a request that failed for a transient reason
    use_client: bool | None = None  #: use the ``openai`` package (None: when installed; False: plain HTTP)
    extra_body: dict[str, Any] = field(default_factory=dict)  #: more fields of every request body


class OpenAIBackend(Backend):
    """Chat completions from an OpenAI-compatible server; ``options`` are :class:`OpenAIOptions`' fields."""

    name = "openai"
    per_prompt_budgets = True
    Options = OpenAIOptions

    def __init__(self, model: str | None = None, **options: Any):
        opts: OpenAIOptions = build_config(OpenAIOptions, options=options, owner="backend 'openai'")
        base_url, api_key, max_workers, timeout = opts.base_url, opts.api_key, opts.max_workers, opts.timeout
        max_retries, use_client, extra_body = opts.max_retries, opts.use_client, opts.extra_body
        if not model:
            raise BackendError("the openai backend needs the served model's name (--model)")
        if max_workers < 1:
            raise BackendError("max_workers must be >= 1")
        super().__init__(model)
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "http://localhost:8000/v1").rstrip("/")
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        self.max_workers = max_workers
        self.timeout = timeout
        self.max_retries = max_retries
        self.extra_body = dict(extra_body or {})
        self._client: Any = None
        if use_client is not False:
            try:
                import openai
            except ImportError:
                if use_client:
                    raise BackendError("use_client=True but the 'openai' package is not installed: "
                                       "pip install openai") from None
            else:
                self._client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key, timeout=timeout,
                                             max_retries=max_retries)

    @property
    def uses_client(self) -> bool:
        return self._client is not None

    def _body(self, prompt: Prompt, *, max_new_tokens: int, temperature: float, top_p: float, seed: int,
              n: int, stop: list[str] | None, tools: list[dict[str, Any]] | None,
              schema: dict[str, Any] | None = None) -> dict[str, Any]:
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else openai_messages(prompt)
        body: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": max_new_tokens,
                                "temperature": temperature, "top_p": top_p, "n": n, "seed": seed}
        if stop:
            body["stop"] = stop
        if tools:
            body["tools"] = tools
        if schema is not None:
            name = re.sub(r"[^A-Za-z0-9_-]+", "_", str(schema.get("title") or "answer"))[:64] or "answer"
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": name, "schema": short_repeats(schema), "strict": True}}
        return body

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        if self._client is not None:
            extra = dict(self.extra_body)
            resp = self._client.chat.completions.create(**body, extra_body=extra or None)
            return resp.model_dump()
        data = json.dumps({**body, **self.extra_body}).encode()
        req = urllib.request.Request(f"{self.base_url}/chat/completions", data=data, method="POST",
                                     headers={"Content-Type": "application/json",
                                              "Authorization": f"Bearer {self.api_key}"})
        for attempt in range(self.max_retries + 1):
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as r:
                    return json.loads(r.read().decode("utf-8"))
            except urllib.error.HTTPError as e:
                detail = e.read().decode("utf-8", "replace")[:500]
                if e.code not in _RETRY_STATUS or attempt == self.max_retries:
                    raise _HttpError(e.code, f"HTTP {e.code} from {self.base_url}: {detail}") from None
            except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
                if attempt == self.max_retries:
                    raise _HttpError(None, f"cannot reach {self.base_url}: {e}") from None
            time.sleep(min(8.0, 0.5 * 2**attempt))
        raise AssertionError("unreachable")

    def _one(self, prompt: Prompt, index: int, n: int, **kw: Any) -> list[Completion]:
        body = self._body(prompt, n=n, **{**kw, "seed": stable_seed(kw["seed"], index)})
        try:
            resp = self._post(body)
        except Exception as e:  # the boundary: a failure is data, one bad request never sinks the batch
            err = exception_text(e)
            tokens = approx_tokens(prompt_text(prompt))
            return [Completion(text="", prompt_tokens=tokens, finish_reason="error", error=err)
                    for _ in range(n)]
        return self._parse(resp, prompt, n)

    @staticmethod
    def _parse(resp: dict[str, Any], prompt: Prompt, n: int) -> list[Completion]:
        choices = sorted(resp.get("choices") or [], key=lambda c: c.get("index", 0))
        usage = resp.get("usage") or {}
        texts = [((c.get("message") or {}).get("content") or "") for c in choices]
        p_tok = usage.get("prompt_tokens")
        c_tok = usage.get("completion_tokens")
        out: list[Completion] = []
        for c, text in zip(choices, texts, strict=True):
            calls = []
            for tc in (c.get("message") or {}).get("tool_calls") or []:
                fn = tc.get("function") or {}
                args: Any = fn.get("arguments")
                if isinstance(args, str):
                    try:
                        args = json.loads(args)
                    except json.JSONDecodeError:
                        pass
                calls.append({"name": fn.get("name"), "arguments": args if args is not None else {}})
            finish = c.get("finish_reason") or "stop"
            out.append(Completion(
                text=text,
                prompt_tokens=p_tok if p_tok is not None else approx_tokens(prompt_text(prompt)),
                completion_tokens=(-(-c_tok // max(1, len(choices))) if c_tok is not None
                                   else approx_tokens(text)),
                finish_reason=finish if finish in ("stop", "length", "tool_calls") else "stop",
                tool_calls=calls or None))
        while len(out) < n:  # a server that ignores n
            out.append(Completion(text="", finish_reason="error",
                                  error=f"the server returned {len(choices)} choices for n={n}"))
        return out[:n]

    def _generate(self, prompts: list[Prompt], *, max_new_tokens: int | list[int], temperature: float,
                  top_p: float, seed: int, n: int, stop: list[str] | None, tools: list[dict[str, Any]] | None,
                  schemas: list[dict[str, Any] | None] | None = None) -> list[Completion]:
        budgets = [max_new_tokens] * len(prompts) if isinstance(max_new_tokens, int) else max_new_tokens
        kw = {"temperature": temperature, "top_p": top_p, "seed": seed, "stop": stop, "tools": tools}
        workers = min(self.max_workers, len(prompts))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(self._one, p, i, n, **kw, max_new_tokens=budgets[i],
                                   schema=schemas[i] if schemas else None)
                       for i, p in enumerate(prompts)]
            return [c for f in futures for c in f.result()]

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

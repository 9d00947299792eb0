"""A prompt and its completion fit the model's context window, on every backend that knows both lengths.

:meth:`Backend.generate` cuts each prompt's budget to what the window leaves after it and does not send a prompt
that leaves less than ``min_new_tokens`` (a ``too_long`` completion instead); the vLLM backend reads its window
from the engine (``max_model_len``) and its prompts' lengths from the tokenizer, so a constrained world's
worst-case budget never reaches vLLM as it is; the LLM proposer counts such a document as ``too_long``, and the
generation pipeline tries no repair for it. No model needed (a stand-in tokenizer counts words)."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from envgen.backends.base import Backend, Completion, Prompt, prompt_text
from envgen.backends.scripted import ScriptedBackend
from envgen.errors import FailureCode


class Words(Backend):
    """A backend whose tokens are words, with a 20-token window; records what reaches ``_generate``."""

    name = "words"
    per_prompt_budgets = True
    context_window = 20

    def __init__(self) -> None:
        super().__init__("words-model")
        self.calls: list[tuple[list[str], Any]] = []

    def prompt_length(self, prompt: Prompt, tools: Any = None) -> int:
        return len(prompt_text(prompt).split())

    def _generate(self, prompts: list[Prompt], *, max_new_tokens: Any, n: int, **kw: Any) -> list[Completion]:
        self.calls.append(([str(p) for p in prompts], max_new_tokens))
        budgets = max_new_tokens if isinstance(max_new_tokens, list) else [max_new_tokens] * len(prompts)
        return [Completion("w " * b, completion_tokens=b, finish_reason="length") for b in budgets for _ in range(n)]


def test_budgets_are_cut_to_the_window_and_a_prompt_without_room_is_not_sent() -> None:
    b = Words()
    prompts = ["a " * 5, "a " * 15, "a " * 19, "a " * 25]  # rooms 15, 5, 1, none
    out = b.generate(prompts, max_new_tokens=10, min_new_tokens=4, n=2)
    assert b.calls == [([prompts[0], prompts[1]], [10, 5])]  # the last two never reach the model
    assert [c.completion_tokens for c in out[:4]] == [10, 10, 5, 5]
    assert [c.meta["max_new_tokens"] for c in out] == [10, 10, 5, 5, 10, 10, 10, 10]
    for c, length in zip(out[4:], (19, 19, 25, 25), strict=True):
        assert not c.ok and c.meta["error_code"] == FailureCode.TOO_LONG and c.meta["prompt_length"] == length
        assert c.prompt_tokens == 0 and c.completion_tokens == 0
        assert "does not fit the context window of words-model (20 tokens) with room for 4 new tokens" in c.error
    b.calls.clear()
    (small,) = b.generate(["a " * 19], max_new_tokens=1, min_new_tokens=4)  # its whole budget fits: sent
    assert small.ok and b.calls == [(["a " * 19], 1)]
    b.calls.clear()
    assert not any(c.ok for c in b.generate(["a " * 30, "a " * 20], max_new_tokens=4)) and b.calls == []
    b.context_window = None  # a window the backend does not know: nothing is cut
    b.generate(["a " * 30], max_new_tokens=7)
    assert b.calls == [(["a " * 30], 7)]
    with pytest.raises(ValueError, match="min_new_tokens must be >= 1"):
        b.generate(["a"], min_new_tokens=0)


class _Tokenizer:
    """vLLM's tokenizer as the backend reads it: words are tokens, the chat template joins the contents."""

    chat_template = "words"

    def apply_chat_template(self, messages: list[dict[str, Any]], *, tools: Any, add_generation_prompt: bool,
                            tokenize: bool, **kw: Any) -> str:
        assert not tokenize and add_generation_prompt
        return " ".join(m["content"] for m in messages)

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return [1] * len(text.split())


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    seen: dict[str, list[Any]] = {"chat": [], "generate": []}

    class SamplingParams:
        def __init__(self, **kw: Any):
            self.__dict__.update(kw)

    def output(n_prompt: int, params: Any) -> Any:
        return types.SimpleNamespace(prompt_token_ids=[0] * n_prompt, outputs=[
            types.SimpleNamespace(text="x", token_ids=[1], finish_reason="stop") for _ in range(params.n)])

    class LLM:
        def __init__(self, **kw: Any):
            self.model_config = types.SimpleNamespace(max_model_len=40)

        def get_tokenizer(self) -> Any:
            return _Tokenizer()

        def chat(self, prompts: list[Any], params: list[Any], **kw: Any) -> list[Any]:
            seen["chat"].append([(len(p[-1]["content"].split()), q.max_tokens)
                                 for p, q in zip(prompts, params, strict=True)])
            return [output(1, q) for q in params]

        def generate(self, prompts: list[Any], params: list[Any], use_tqdm: bool) -> list[Any]:
            pairs = list(zip(prompts, params, strict=True))
            seen["generate"].append([(len(p["prompt_token_ids"]), q.max_tokens) for p, q in pairs])
            return [output(len(p["prompt_token_ids"]), q) for p, q in pairs]

    sampling = types.SimpleNamespace(StructuredOutputsParams=None)
    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=LLM, SamplingParams=SamplingParams,
                                                                   sampling_params=sampling))
    return seen


def test_vllm_reads_its_window_from_the_engine_and_never_sends_past_it(fake_vllm: dict[str, list[Any]]) -> None:
    from envgen.backends import make_backend

    b = make_backend("vllm", "some/model")
    assert b.context_window == 40
    chats = [[{"role": "user", "content": "w " * k}] for k in (10, 38, 45)]
    ok, short, long = b.generate(chats, max_new_tokens=100_000)  # a world's worst case, far past the window
    assert fake_vllm["chat"] == [[(10, 30), (38, 2)]]  # each request's max_tokens is what the window leaves
    assert ok.ok and short.ok and not long.ok and long.meta["error_code"] == FailureCode.TOO_LONG
    c_fit, c_full = b.generate_tokens([[5] * 36, [5] * 40], max_new_tokens=10)
    assert fake_vllm["generate"] == [[(36, 4)]]
    assert c_fit.ok and not c_full.ok and c_full.meta["error_code"] == FailureCode.TOO_LONG


class WindowedScript(ScriptedBackend):
    """A scripted backend with a context window (its token estimate counts the prompt); records what is sent."""

    def __init__(self, window: int, **kw: Any):
        super().__init__(**kw)
        self.context_window = window
        self.sent: list[list[str]] = []

    def prompt_length(self, prompt: Prompt, tools: Any = None) -> int:
        return self.count_tokens(prompt_text(prompt))

    def _generate(self, prompts: list[Prompt], **kw: Any) -> list[Completion]:
        self.sent.append([prompt_text(p) for p in prompts])
        return super()._generate(prompts, **kw)


def _too_long_setup(tmp_path: Path) -> tuple[Any, Any, list[Any]]:
    """A blueprint proposer whose backend's window fits the short document's prompt (with 300 tokens to spare)
    but not the long one's."""
    from corpora import Document
    from envgen.proposers.llm import LLMProposer
    from tests.envgen.test_blueprint import JS, bp

    more = "".join(f"  drain{k}() {{ this.jobs = this.jobs.slice({k}); this.paused = false; }}\n" for k in range(60))
    long = Document.create(JS.text.replace("  pause()", more + "  pause()"), corpus="mem", path="big_queue.js")
    backend = WindowedScript(1, completions=lambda _p: bp().to_json(), cycle=True)
    prop = LLMProposer(backend, structure="blueprint", min_new_tokens=256)
    short_len, long_len = (backend.prompt_length(prop.messages_for(d)) for d in (JS, long))
    assert long_len > short_len + 300
    backend.context_window = short_len + 300
    return backend, prop, [JS, long]


def test_the_proposer_counts_a_document_that_does_not_fit_as_too_long(tmp_path: Path) -> None:
    backend, prop, (short, long) = _too_long_setup(tmp_path)
    fits, too_long = prop.propose_batch([short, long])
    assert len(backend.sent) == 1 and len(backend.sent[0]) == 1  # only the short document's prompt went out
    assert too_long.spec is None and too_long.meta["error_code"] == FailureCode.TOO_LONG
    assert "does not fit the context window" in too_long.error and too_long.prompt_tokens == 0
    assert fits.meta["error_code"] != FailureCode.TOO_LONG


def test_generation_tries_no_repair_for_a_prompt_that_does_not_fit(tmp_path: Path) -> None:
    from envgen.generate import GenerateConfig, run_generate
    from envgen.library import Library

    backend, prop, (short, long) = _too_long_setup(tmp_path)
    cfg = GenerateConfig(proposer="llm", backend="scripted", n=2, out=tmp_path / "lib", validation="inprocess",
                         max_retries=2, batch_size=2, proposer_options={"structure": "blueprint"})
    summary = run_generate(cfg, progress=False, proposer=prop, docs=[short, long])
    assert summary.rejected_by_reason.get(FailureCode.TOO_LONG) == 1
    assert all(len(call) == 1 for call in backend.sent)  # the long document's prompt, nor a repair, was never sent
    attempts = {a["doc_id"]: a for a in Library(tmp_path / "lib").attempts()}
    assert FailureCode.TOO_LONG in attempts[long.id]["codes"]

"""Model backends: the registry, ``scripted``, ``transformers`` (tiny Qwen3), ``openai`` (a real local
HTTP server) and ``vllm`` (import guard, and the request mapping against a stand-in module)."""

from __future__ import annotations

import json
import sys
import threading
import types
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from envgen.backends import (
    BACKENDS,
    Backend,
    BackendError,
    BackendNotInstalledError,
    Completion,
    make_backend,
)
from envgen.backends.base import truncate_at_stop
from envgen.backends.scripted import ScriptedBackend
from gym_envs.seeding import stable_seed

CHATS = [
    [{"role": "user", "content": "Member 7 wants to borrow 'Dune'. Do it."}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "How many books are out?"}],
]
TOOLS = [{"type": "function", "function": {
    "name": "find_book", "description": "Find a book by title.",
    "parameters": {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}}}]


# -- registry ------------------------------------------------------------------------------------


def test_registry_names_and_typo_suggestion():
    assert BACKENDS.names() == ["openai", "scripted", "transformers", "vllm"]
    with pytest.raises(KeyError, match="did you mean 'transformers'"):
        make_backend("transfomers", "x")


def test_make_backend_passes_instances_through():
    b = ScriptedBackend(completions=["a"])
    assert make_backend(b) is b


def test_generate_checks_its_arguments():
    b = ScriptedBackend(completions=["a"])
    with pytest.raises(ValueError, match="n must be"):
        b.generate(["x"], n=0)
    with pytest.raises(ValueError, match="temperature"):
        b.generate(["x"], temperature=-1)
    with pytest.raises(TypeError, match="prompt 0"):
        b.generate([{"role": "user"}])  # type: ignore[list-item]
    assert b.generate([]) == []


def test_truncate_at_stop():
    assert truncate_at_stop("abc</tool_call>rest", ["</tool_call>", "zzz"]) == ("abc", True)
    assert truncate_at_stop("abc", ["x"]) == ("abc", False)


# -- scripted ------------------------------------------------------------------------------------


def test_scripted_replays_in_order_and_records_prompts():
    b = make_backend("scripted", completions=["one", "two", "three", "four"])
    out = b.generate([CHATS[0], "plain"], n=2, max_new_tokens=50)
    assert [c.text for c in out] == ["one", "two", "three", "four"]
    assert b.prompts == [CHATS[0], CHATS[0], "plain", "plain"]
    assert all(c.prompt_tokens > 0 and c.completion_tokens > 0 and c.finish_reason == "stop" for c in out)
    with pytest.raises(BackendError, match="ran out of completions after 4"):
        b.generate(["again"])


def test_scripted_stop_length_cycle_and_callable():
    b = ScriptedBackend(completions=["hello<stop>tail", "x" * 100], cycle=True)
    a, long_, again = b.generate(["p", "q", "r"], max_new_tokens=5, stop=["<stop>"])
    assert (a.text, a.finish_reason) == ("hello", "stop")
    assert long_.finish_reason == "length" and len(long_.text) == 20
    assert again.text == "hello"
    echo = ScriptedBackend(completions=lambda p: f"echo {len(p)}")
    assert [c.text for c in echo.generate([CHATS[1], "abc"])] == ["echo 2", "echo 3"]


def test_scripted_from_jsonl_file(tmp_path):
    path = tmp_path / "replies.jsonl"
    path.write_text(json.dumps("first") + "\n\n" + json.dumps({"text": "second"}) + "\n", encoding="utf-8")
    b = make_backend("scripted", str(path))
    assert [c.text for c in b.generate(["a", "b"])] == ["first", "second"]
    assert b.model_id == "scripted"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(BackendError, match=r"bad\.jsonl:1"):
        ScriptedBackend(completions=bad)
    with pytest.raises(BackendError, match="needs completions"):
        ScriptedBackend()


# -- transformers --------------------------------------------------------------------------------


def test_transformers_batch_of_chats_with_token_counts(tiny_backend):
    out = tiny_backend.generate(CHATS, max_new_tokens=12, temperature=0.9, seed=1)
    assert len(out) == 2
    for chat, c in zip(CHATS, out, strict=True):
        assert isinstance(c, Completion) and isinstance(c.text, str)
        assert c.prompt_tokens == len(tiny_backend.encode(chat)) > 0
        assert 0 < c.completion_tokens <= 12
        assert c.finish_reason in ("stop", "length")


def test_transformers_seeded_sampling_is_deterministic(tiny_backend):
    import torch

    before = torch.random.get_rng_state()
    a = tiny_backend.generate(CHATS, max_new_tokens=12, temperature=1.0, seed=7)
    b = tiny_backend.generate(CHATS, max_new_tokens=12, temperature=1.0, seed=7)
    c = tiny_backend.generate(CHATS, max_new_tokens=12, temperature=1.0, seed=8)
    assert [x.text for x in a] == [x.text for x in b]
    assert [x.text for x in a] != [x.text for x in c]
    assert torch.equal(before, torch.random.get_rng_state())  # the global RNG is left alone


def test_transformers_left_padding_matches_unbatched_greedy(tiny_backend):
    alone = tiny_backend.generate(CHATS[:1], max_new_tokens=10, temperature=0)
    batched = tiny_backend.generate([CHATS[0], CHATS[1], "a much longer plain prompt " * 5],
                                    max_new_tokens=10, temperature=0)
    assert alone[0].text == batched[0].text


def test_transformers_n_strings_tools_and_chunks(tiny_qwen3_dir, tiny_backend):
    out = tiny_backend.generate([CHATS[0], "plain text"], max_new_tokens=4, temperature=0.8, n=3, seed=0)
    assert len(out) == 6 and all(c.completion_tokens > 0 for c in out)
    assert out[0].prompt_tokens == out[2].prompt_tokens != out[3].prompt_tokens
    with_tools = tiny_backend.generate(CHATS[:1], max_new_tokens=2, tools=TOOLS)
    assert with_tools[0].prompt_tokens > out[0].prompt_tokens
    assert "find_book" in tiny_backend.tokenizer.decode(tiny_backend.encode(CHATS[0], TOOLS))
    chunked = make_backend("transformers", str(tiny_qwen3_dir), device="cpu", batch_size=1)
    assert ([c.text for c in chunked.generate(CHATS, max_new_tokens=6, temperature=0)]
            == [c.text for c in tiny_backend.generate(CHATS, max_new_tokens=6, temperature=0)])
    assert chunked.model_id == tiny_qwen3_dir.name
    assert tiny_backend.count_tokens("hello world") > 0


def test_transformers_from_objects_wraps_a_loaded_model(tiny_backend):
    from envgen.backends.transformers_local import TransformersBackend

    wrapped = TransformersBackend.from_objects(tiny_backend.lm, tiny_backend.tokenizer, name="tiny")
    assert wrapped.model_id == "tiny"
    assert ([c.text for c in wrapped.generate(CHATS, max_new_tokens=5, temperature=0)]
            == [c.text for c in tiny_backend.generate(CHATS, max_new_tokens=5, temperature=0)])


def test_transformers_needs_a_model():
    with pytest.raises(BackendError, match="needs a model"):
        make_backend("transformers")


# -- openai (a real HTTP server) -----------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    requests: list[dict[str, Any]] = []  # shared on purpose: the test reads it

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        last = body["messages"][-1]["content"]
        if self.path != "/v1/chat/completions":
            return self._send(404, {"error": "not found"})
        if "FAIL" in last:
            return self._send(400, {"error": {"message": "bad request"}})
        choices = []
        for k in range(body.get("n", 1)):
            msg: dict[str, Any] = {"role": "assistant", "content": f"echo[{k}]: {last}"}
            if "CALL" in last:
                msg = {"role": "assistant", "content": None, "tool_calls": [{
                    "id": "c1", "type": "function",
                    "function": {"name": "find_book", "arguments": json.dumps({"title": "Dune"})}}]}
            choices.append({"index": k, "message": msg,
                            "finish_reason": "tool_calls" if "CALL" in last else "stop"})
        usage = {"prompt_tokens": 11, "completion_tokens": 5 * len(choices), "total_tokens": 11 + 5 * len(choices)}
        self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                         "choices": choices, "usage": usage})

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def chat_server() -> Iterator[str]:
    _Handler.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("use_client", [False, True], ids=["urllib", "openai-client"])
def test_openai_backend_against_a_local_server(chat_server, use_client, monkeypatch):
    if use_client:
        pytest.importorskip("openai")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    b = make_backend("openai", "served-model", base_url=chat_server, use_client=use_client, max_workers=4,
                     max_retries=0)
    assert b.uses_client is use_client
    prompts = [*CHATS, "plain prompt", "please FAIL", "please CALL"]
    out = b.generate(prompts, max_new_tokens=32, temperature=0.5, seed=3, n=2, stop=["END"], tools=TOOLS)
    assert len(out) == 10
    assert [c.text for c in out[:2]] == [f"echo[{k}]: {CHATS[0][0]['content']}" for k in range(2)]
    assert out[4].text == "echo[0]: plain prompt"
    assert all(c.prompt_tokens == 11 and c.completion_tokens == 5 for c in out[:6])
    assert out[6].finish_reason == out[7].finish_reason == "error" and "400" in (out[6].error or "")
    assert out[8].tool_calls == [{"name": "find_book", "arguments": {"title": "Dune"}}]
    assert out[8].finish_reason == "tool_calls"
    reqs = sorted(_Handler.requests, key=lambda r: json.dumps(r["body"]["messages"]))
    assert len(reqs) == 5 and all(r["path"] == "/v1/chat/completions" for r in reqs)
    assert all(r["auth"] == "Bearer sk-test" for r in reqs)
    body = next(r["body"] for r in reqs if r["body"]["messages"] == CHATS[0])
    assert body["model"] == "served-model" and body["n"] == 2 and body["max_tokens"] == 32
    assert body["stop"] == ["END"] and body["tools"] == TOOLS and body["seed"] == stable_seed(3, 0)
    assert len({r["body"]["seed"] for r in reqs}) == 5  # one seed per prompt


def test_openai_backend_unreachable_server_is_data():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    b = make_backend("openai", "m", base_url=f"http://127.0.0.1:{port}/v1", use_client=False, max_retries=0)
    [c] = b.generate(["hi"])
    assert c.finish_reason == "error" and "cannot reach" in (c.error or "") and not c.ok


def test_openai_backend_needs_a_model():
    with pytest.raises(BackendError, match="served model"):
        make_backend("openai")


# -- vllm ----------------------------------------------------------------------------------------


def test_vllm_missing_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` fail even where it is installed
    with pytest.raises(BackendNotInstalledError, match=r"envwright\[vllm\]"):
        make_backend("vllm", "Qwen/Qwen3-0.6B")


def test_vllm_backend_maps_requests_and_outputs(monkeypatch):
    calls: dict[str, Any] = {}

    class SamplingParams:
        def __init__(self, **kw: Any):
            self.__dict__.update(kw)

    def request_output(prompt: Any, params: SamplingParams) -> Any:
        outs = [types.SimpleNamespace(text=f"{k}:{params.seed}", token_ids=[1, 2, 3],
                                      finish_reason="length" if params.max_tokens < 5 else "stop")
                for k in range(params.n)]
        return types.SimpleNamespace(prompt_token_ids=[0] * 7, outputs=outs)

    class LLM:
        def __init__(self, **kw: Any):
            calls["init"] = kw

        def chat(self, messages, params, use_tqdm, tools=None, chat_template_kwargs=None):
            calls["chat"] = (messages, tools, chat_template_kwargs)
            return [request_output(m, p) for m, p in zip(messages, params, strict=True)]

        def generate(self, prompts, params, use_tqdm):
            calls["generate"] = prompts
            return [request_output(m, p) for m, p in zip(prompts, params, strict=True)]

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=LLM, SamplingParams=SamplingParams))
    b: Backend = make_backend("vllm", "some/model", tensor_parallel_size=2, max_model_len=4096,
                              chat_template_kwargs={"enable_thinking": False})
    assert calls["init"]["tensor_parallel_size"] == 2 and calls["init"]["max_model_len"] == 4096
    out = b.generate([CHATS[0], "plain", CHATS[1]], n=2, seed=5, tools=TOOLS, max_new_tokens=64)
    assert [c.text for c in out] == [f"{k}:{stable_seed(5, i)}" for i in range(3) for k in range(2)]
    assert all(c.prompt_tokens == 7 and c.completion_tokens == 3 for c in out)
    assert calls["chat"] == ([CHATS[0], CHATS[1]], TOOLS, {"enable_thinking": False})
    assert calls["generate"] == ["plain"]
    assert b.generate(["x"], max_new_tokens=2)[0].finish_reason == "length"


def test_transformers_shows_decoding_steps_on_a_bar(tiny_backend, monkeypatch):
    """Each generate call moves a progress bar once per decoding step (CPU batches take minutes) and closes it."""
    from envgen.backends import transformers_local

    bars: list[transformers_local.StepBar] = []
    real = transformers_local.StepBar

    def spy(total, rows):
        bar = real(total, rows)
        bars.append(bar)
        return bar

    monkeypatch.setattr(transformers_local, "StepBar", spy)
    out = tiny_backend.generate(CHATS, max_new_tokens=7, temperature=0)
    assert len(bars) == 1 and bars[0].total == 7
    assert bars[0].steps == max(c.completion_tokens for c in out)  # one update per step of the batch

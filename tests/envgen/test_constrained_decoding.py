"""Constrained decoding on every backend: what a model writes under a JSON Schema always parses.

* ``transformers``: xgrammar's logits processor on the tiny random Qwen3, with the real blueprint and
  free-stream schemas: every completion is a JSON text the schema admits, closed before its token limit;
* ``openai``: the request carries ``response_format`` with the schema (a real local HTTP server);
* ``vllm``: each prompt's ``SamplingParams`` carry the structured-outputs parameters (a stand-in module
  shaped like vLLM's API: ``vllm.sampling_params.StructuredOutputsParams``);
* ``scripted``: a canned answer the schema does not admit comes back as an error.
"""

from __future__ import annotations

import json
import sys
import types
from typing import Any

import pytest

from envgen.backends import make_backend
from envgen.backends.vllm_offline import compact_json_grammar
from envgen.blueprint.schema import blueprint_json_schema, max_completion_chars, parse_blueprint
from envgen.structure import spec_decoding_schema, spec_from_decoded
from tests.envgen.test_backends import _Handler, chat_server  # noqa: F401  (a fixture: a local chat server)

jsonschema = pytest.importorskip("jsonschema")

CHAT = [{"role": "user", "content": "Write the blueprint of a small lending library."}]
SMALL = {"type": "object", "properties": {"name": {"type": "string", "pattern": "^[a-z]{1,8}$"},
                                          "n": {"type": "integer", "minimum": 0, "maximum": 99}},
         "required": ["name", "n"], "additionalProperties": False}


def test_transformers_output_always_matches_the_schema(tiny_backend):
    pytest.importorskip("xgrammar")
    schema = blueprint_json_schema()
    limit = max_completion_chars(schema)
    out = tiny_backend.generate([CHAT] * 3, max_new_tokens=limit, temperature=1.0, seed=0, json_schema=schema)
    for c in out:
        assert c.finish_reason == "stop", c.text[-200:]  # the grammar closed the object before the limit
        jsonschema.validate(json.loads(c.text), schema)
        assert parse_blueprint(c.text).ok
        # keys come in the schema's order, the order the warm start trains on (Blueprint.to_json)
        assert list(json.loads(c.text)) == list(schema["properties"])


def test_transformers_per_prompt_schemas_and_unconstrained_rows(tiny_backend, monkeypatch):
    """Constrained and free rows, each with its own budget, decode in one ``generate`` call: the grammar masks
    only the constrained rows, and each completion is cut to its own budget."""
    pytest.importorskip("xgrammar")
    rows: list[int] = []
    real = tiny_backend.lm.generate

    def counting(*args: Any, **kw: Any) -> Any:
        rows.append(int(kw["input_ids"].shape[0]))
        return real(*args, **kw)

    monkeypatch.setattr(tiny_backend.lm, "generate", counting)
    prompts = [CHAT, "free text", CHAT]
    out = tiny_backend.generate(prompts, max_new_tokens=[64, 5, 64], temperature=0.8, seed=3,
                                json_schema=[SMALL, None, SMALL])
    assert rows == [3]
    for i in (0, 2):
        jsonschema.validate(json.loads(out[i].text), SMALL)
    assert out[1].completion_tokens <= 5 and out[1].finish_reason in ("stop", "length")
    again = tiny_backend.generate(prompts, max_new_tokens=[64, 5, 64], temperature=0.8, seed=3,
                                  json_schema=[SMALL, None, SMALL])
    assert [c.text for c in again] == [c.text for c in out]  # seeded: the same call gives the same text


def test_transformers_free_stream_schema_compiles_and_joins_lines(tiny_backend):
    pytest.importorskip("xgrammar")
    schema = spec_decoding_schema()
    [c] = tiny_backend.generate([CHAT], max_new_tokens=400, temperature=1.0, seed=1, json_schema=schema)
    if c.finish_reason == "stop":  # closed early: the text is a complete JSON object of the decoding form
        value = json.loads(c.text)
        jsonschema.validate(value, schema)
        joined = spec_from_decoded(value)
        assert isinstance(joined["code"], str) and isinstance(joined["state"]["schema_sql"], str)


def test_schema_bounds_are_finite_and_tight_enough():
    bp, spec = blueprint_json_schema(), spec_decoding_schema()
    assert 1000 < max_completion_chars(bp) < 10_000
    assert max_completion_chars(spec) < 20_000
    for bad in ({"type": "string"}, {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 1}},
                {"type": "integer"}):
        with pytest.raises(ValueError, match="unbounded"):
            max_completion_chars(bad)
    # every text a compact dump of a real blueprint produces is within the bound
    from tests.envgen.test_blueprint import written_blueprints

    for w in written_blueprints(4):
        assert len(w.to_json()) <= max_completion_chars(bp)


def test_schema_list_length_is_checked(tiny_backend):
    with pytest.raises(ValueError, match="json_schema has 1 entries for 2 prompts"):
        tiny_backend.generate([CHAT, CHAT], json_schema=[SMALL])


def test_scripted_backend_refuses_answers_the_schema_does_not_admit():
    b = make_backend("scripted", completions=['{"name": "ok", "n": 3}', '{"name": "NOPE", "n": 3}', "prose"])
    good, bad, prose = b.generate(["a", "b", "c"], json_schema=SMALL)
    assert good.ok and json.loads(good.text) == {"name": "ok", "n": 3}
    assert not bad.ok and "does not match the JSON schema" in (bad.error or "")
    assert not prose.ok


def test_openai_request_carries_response_format(chat_server):  # noqa: F811  (the imported fixture)
    b = make_backend("openai", "served", base_url=chat_server, use_client=False, max_retries=0)
    b.generate(["x", "y"], json_schema=[blueprint_json_schema(), None])
    bodies = {r["body"]["messages"][-1]["content"]: r["body"] for r in _Handler.requests}
    fmt = bodies["x"]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"] == blueprint_json_schema()
    assert fmt["json_schema"]["name"] == "envwright_blueprint_v1"
    assert "response_format" not in bodies["y"]


def test_vllm_sampling_params_carry_structured_outputs(monkeypatch):
    seen: list[Any] = []

    class SamplingParams:
        def __init__(self, **kw: Any):
            self.__dict__.update(kw)
            seen.append(self)

    class StructuredOutputsParams:
        def __init__(self, **kw: Any):
            self.kw = kw

    def output(params: Any) -> Any:
        return types.SimpleNamespace(prompt_token_ids=[0], outputs=[
            types.SimpleNamespace(text="{}", token_ids=[1], finish_reason="stop") for _ in range(params.n)])

    class LLM:
        def __init__(self, **kw: Any):
            pass

        def generate(self, prompts, params, use_tqdm):
            return [output(p) for p in params]

    sampling = types.SimpleNamespace(StructuredOutputsParams=StructuredOutputsParams)
    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=LLM, SamplingParams=SamplingParams,
                                                                   sampling_params=sampling))
    b = make_backend("vllm", "some/model")
    b.generate(["a", "b"], json_schema=[SMALL, None])
    assert seen[0].structured_outputs.kw == {"grammar": compact_json_grammar(SMALL)}
    assert not hasattr(seen[1], "structured_outputs")


def test_vllm_rows_carry_the_compact_grammar_the_transformers_backend_decodes():
    """A row sent as ``json=schema`` decoded tabs and newlines between keys on the H200: vLLM 0.26 ignores a
    request's ``disable_any_whitespace`` (only the engine's config sets it). The grammar in the request admits
    the compact JSON only, in the schema's key order, whatever engine serves it."""
    pytest.importorskip("xgrammar")
    from xgrammar.testing import _is_grammar_accept_string as accepts

    schema = {"type": "object", "properties": {"b": {"type": "string", "pattern": "^[a-z]{1,4}$"},
                                               "a": {"type": "integer", "minimum": 0, "maximum": 9}},
              "required": ["b", "a"], "additionalProperties": False}
    grammar = compact_json_grammar(schema)
    assert accepts(grammar, json.dumps({"b": "abc", "a": 5}))  # json.dumps' separators, as the warm start writes
    for wrong in ('{ "b": "abc", "a": 5}', '{"b":\t"abc", "a": 5}', '{"b": "abc",\n"a": 5}',
                  '{"a": 5, "b": "abc"}', '{"b": "abcde", "a": 5}'):
        assert not accepts(grammar, wrong), wrong
    assert compact_json_grammar(dict(schema)) == grammar  # by content


def test_compact_json_grammar_names_a_schema_xgrammar_cannot_compile():
    pytest.importorskip("xgrammar")
    from envgen.errors import BackendError

    with pytest.raises(BackendError, match="xgrammar cannot compile this JSON schema"):
        compact_json_grammar({"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}})

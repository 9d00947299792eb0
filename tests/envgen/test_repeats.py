"""Long regex repetitions cut for the grammar engines (:mod:`envgen.backends.repeats`).

* the rewrite keeps each pattern's language (hypothesis: classes, escapes, groups and single characters under
  bounded, exact and open repetitions, strings at and around every bound);
* no schema that goes to an engine keeps a bound over 128 (every structure, every builtin skill's world);
* through xgrammar a cut pattern still holds its bound, and each of the backends' doors sends the cut schema.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envgen.backends import make_backend
from envgen.backends.repeats import REPEAT_LIMIT, longest_repeat, short_pattern, short_repeats
from envgen.backends.vllm_offline import compact_json_grammar
from envgen.blueprint.schema import blueprint_json_schema
from envgen.skills.library import SkillLibrary, builtin_skills_dir
from envgen.structure import spec_decoding_schema
from envgen.world.blueprint import world_json_schema
from tests.envgen.test_backends import _Handler, chat_server  # noqa: F401  (a fixture: a local chat server)

# (atom, a string it matches, a string it does not)
ATOMS = [("[a-c ]", "b", "z"), ("[\\]x]", "]", "y"), ("\\{", "{", "}"), ("q", "q", "r"), ("(ab)", "ab", "a"),
         ("(?:x[yz])", "xz", "xx"), ("[^0-9]", "k", "5")]


def _patterns(doc: Any) -> list[str]:
    if isinstance(doc, dict):
        return [v for k, v in doc.items() if k == "pattern" and isinstance(v, str)] + \
            [p for k, v in doc.items() if k != "pattern" for p in _patterns(v)]
    if isinstance(doc, list):
        return [p for v in doc for p in _patterns(v)]
    return []


@settings(max_examples=150, deadline=None)
@given(atom=st.sampled_from(ATOMS), low=st.integers(0, 300), span=st.one_of(st.none(), st.integers(0, 300)),
       lead=st.sampled_from(["", "^", "^z"]), tail=st.sampled_from(["", "$", "!$"]))
def test_the_cut_pattern_matches_exactly_what_the_plain_one_does(atom: tuple[str, str, str], low: int,
                                                                  span: int | None, lead: str, tail: str) -> None:
    a, yes, no = atom
    high = None if span is None else low + span
    plain = f"{lead}{a}{{{low},{'' if high is None else high}}}{tail}"
    cut = short_pattern(plain)
    assert longest_repeat(cut) <= REPEAT_LIMIT
    if max(low, high or 0) <= REPEAT_LIMIT:
        assert cut == plain
    prefix = "z" if lead == "^z" else ""
    suffix = "!" if tail == "!$" else ""
    top = (high if high is not None else low + 130) + 2
    for n in sorted({0, max(low - 1, 0), low, low + 1, 127, 128, 129, 255, 256, 257, top - 2, top - 1, top}):
        if n > top:
            continue
        for body in (yes * n, yes * max(n - 1, 0) + no):
            text = prefix + body + suffix
            assert bool(re.fullmatch(plain, text)) == bool(re.fullmatch(cut, text)), (plain, cut, n)


def test_groups_and_nested_repetitions_are_cut_inside_and_out() -> None:
    for plain in (r"^(ab{0,200}){0,200}$", r"^x{300}$", r"^(?:[a-z]{1,150}-){2}$", r"^\{{0,300}[{]{0,140}$"):
        cut = short_pattern(plain)
        assert longest_repeat(plain) > REPEAT_LIMIT >= longest_repeat(cut)
        for text in ("", "a" + "b" * 199, "ab" * 130, "x" * 300, "x" * 299, "a" * 150 + "-" + "b-",
                     "{" * 300 + "{" * 140, "{" * 441):
            assert bool(re.fullmatch(plain, text)) == bool(re.fullmatch(cut, text)), (plain, text[:20], len(text))
    assert short_pattern(r"^[a-z][a-z0-9_]{1,39}$") == r"^[a-z][a-z0-9_]{1,39}$"
    assert short_pattern(r"^a{130,200}?$") == r"^a{130,200}?$"  # lazy: cutting it would make the rest optional
    assert longest_repeat(r"^[{0,900}]x{3}$") == 3  # a brace inside a class is a character, not a bound


def test_no_schema_an_engine_gets_keeps_a_bound_over_the_limit() -> None:
    plain = world_json_schema()
    assert max(longest_repeat(p) for p in _patterns(plain)) > REPEAT_LIMIT  # the world's prose fields: 160, 200
    schemas = [plain, blueprint_json_schema(), spec_decoding_schema()]
    schemas += [world_json_schema(s.blueprint) for s in SkillLibrary(builtin_skills_dir()) if s.blueprint]
    for schema in schemas:
        cut = short_repeats(schema)
        assert max((longest_repeat(p) for p in _patterns(cut)), default=0) <= REPEAT_LIMIT
        # only patterns change: the schema's shape and every other key are the same
        assert json.dumps(cut, sort_keys=True).count('"pattern"') == json.dumps(schema, sort_keys=True).count(
            '"pattern"')


def _one_string(pattern: str) -> dict[str, Any]:
    return {"type": "object", "properties": {"d": {"type": "string", "pattern": pattern}}, "required": ["d"],
            "additionalProperties": False}


def test_xgrammar_holds_the_bound_of_a_cut_pattern(tiny_backend) -> None:
    xgr = pytest.importorskip("xgrammar")
    grammar = tiny_backend.grammar(_one_string("^[a-c ]{0,200}$"))
    tok = tiny_backend.tokenizer

    def accepts(text: str) -> bool:
        m = xgr.GrammarMatcher(grammar)
        return all(m.accept_token(t) for t in tok.encode(text, add_special_tokens=False))

    assert accepts('{"d": "' + "ab " * 66 + 'ab"}')  # 200 characters
    assert accepts('{"d": ""}')
    assert not accepts('{"d": "' + "a" * 201)


def test_every_backend_door_sends_the_cut_schema(tiny_backend, chat_server, monkeypatch) -> None:  # noqa: F811
    pytest.importorskip("xgrammar")
    schema = _one_string("^[a-c]{0,300}$")
    assert "{0,300}" not in compact_json_grammar(schema) and "{0,127}" in compact_json_grammar(schema)
    sent: list[str] = []
    grammars = tiny_backend.__dict__.get("_grammars")
    if grammars is None:
        tiny_backend.grammar(_one_string("^a$"))
        grammars = tiny_backend.__dict__["_grammars"]
    real = grammars.compiler.compile_json_schema
    monkeypatch.setattr(grammars.compiler, "compile_json_schema",
                        lambda text, **kw: (sent.append(text), real(text, **kw))[1])
    tiny_backend.grammar(schema)
    assert sent and longest_repeat(json.loads(sent[0])["properties"]["d"]["pattern"]) <= REPEAT_LIMIT
    make_backend("openai", "served", base_url=chat_server, use_client=False, max_retries=0).generate(
        ["a long pattern"], json_schema=schema)
    body = next(r["body"] for r in _Handler.requests if r["body"]["messages"][-1]["content"] == "a long pattern")
    sent_pattern = body["response_format"]["json_schema"]["schema"]["properties"]["d"]["pattern"]
    assert longest_repeat(sent_pattern) <= REPEAT_LIMIT and schema["properties"]["d"]["pattern"] == "^[a-c]{0,300}$"

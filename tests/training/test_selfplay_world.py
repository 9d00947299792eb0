"""Self-play whose proposer writes worlds (``selfplay.proposer.structure: world``): both streams of the round
write world blueprints (the skill stream under the skill-narrowed world grammar), the gate judges the compiled
specs, p̂ and the proposer rewards are computed, kept worlds go into the library; the format recovery goes on
under the world grammar; the config's checks."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from envgen.skills.library import builtin_skills_dir
from envgen.world.blueprint import world_json_schema
from tests.envgen.world.store_world import store_world
from tests.training.conftest import SOLVER_MARK
from tests.training.test_selfplay import selfplay_config
from training.generation import ScriptedGenerator

LIFECYCLE = "lifecycle-state-machine"  #: a built-in skill: a status operation and a lifecycle on the main entity


def shop(n: int, *, skill: bool) -> str:
    """The corner shop world (its title numbered, so proposals of one prompt differ), as a skill-routed proposal
    writes it for the lifecycle skill (the main entity and a transition first) or as the free stream does."""
    w = json.loads(store_world(title=f"Corner shop {n}").to_json())
    if skill:
        w["entities"] = [e for e in w["entities"] if e["role"] == "main"] + \
            [e for e in w["entities"] if e["role"] != "main"]
        w["operations"] = sorted(w["operations"], key=lambda o: o["kind"] != "transition")
    return json.dumps(w)


class Worlds(ScriptedGenerator):
    """Proposals: world blueprints (the skill-routed ones shaped for the lifecycle skill), with the schema each
    row was decoded under recorded; ``unparsable``: every n-th free proposal is prose, the first included (its
    group then has spread: a proposer signal where the solver plays every world alike); the format recovery's
    continuation under the grammar is a world; the solver answers in words."""

    def __init__(self, tokenizer: Any, unparsable: int = 0) -> None:
        super().__init__(tokenizer, self.answer)
        self.count, self.free = itertools.count(), itertools.count()
        self.unparsable = unparsable
        self.rows: list[tuple[str, dict[str, Any] | None]] = []  # (the proposal's prompt, its schema)
        self.recovering = False

    def answer(self, context: str) -> str:
        if SOLVER_MARK in context:
            return "I looked into it; nothing more to do."
        k = next(self.count)
        skill = "follows the skill" in context
        if self.unparsable and not skill and not self.recovering and next(self.free) % self.unparsable == 0:
            return "I would rather not write a world."
        return shop(k, skill=skill)

    def generate(self, contexts: list[list[int]], **kw: Any) -> Any:
        self.recovering = bool(kw.get("grammar_prefixes"))
        schemas = kw.get("json_schemas") or [None] * len(contexts)
        for ctx, schema in zip(contexts, schemas, strict=True):
            text = self.tokenizer.decode(ctx, skip_special_tokens=False)
            if SOLVER_MARK not in text and not self.recovering:
                self.rows.append((text, schema))
        return super().generate(contexts, **kw)


def world_config(tiny_dir: Path, corpus: Path, out: Path, skills: Path, **selfplay: Any) -> Any:
    proposer = {"structure": "world", "constrained": True, "max_new_tokens": 3000, "n_examples": 0,
                "excerpt_tokens": 60, **selfplay.pop("proposer", {})}
    return selfplay_config(tiny_dir, corpus, out, {
        "rounds": 1, "skills": str(skills), "eval_envs": [], "solve_rate": "reward", "proposer": proposer,
        "round": {"n": 2, "alpha": 0.5, "oversample": 2.0, "group_size": 2, "validation": "inprocess"},
        **selfplay})


@pytest.fixture
def lifecycle_skills(tmp_path: Path) -> Path:
    """A skill library of one built-in skill, so every skill-stream group is routed to it."""
    d = tmp_path / "skills"
    shutil.copytree(builtin_skills_dir() / LIFECYCLE, d / LIFECYCLE)
    return d


def test_a_selfplay_round_writes_worlds_in_both_streams(tmp_path: Path, tiny_dir: Path, tokenizer: Any,
                                                        corpus_dir: Path, lifecycle_skills: Path) -> None:
    from envgen.library import Library
    from training.selfplay import SelfPlay

    cfg = world_config(tiny_dir, corpus_dir, tmp_path / "run", lifecycle_skills)
    gen = Worlds(tokenizer, unparsable=2)
    sp = SelfPlay(cfg, generator=gen)
    (h,) = sp.run()
    p = h["proposer"]
    # 2 groups of G=2: one routed to the skill, one free; every world parses, compiles and passes the gate (and
    # the skill-routed ones the skill's requirements, on the compiled spec); one free proposal is prose
    assert p["candidates"] == 4 and h["skills"]["routing"] == {LIFECYCLE: 1}
    assert p["validity_by_stream"] == {"skill": 1.0, "explore": 0.5}, p
    assert p["failures"]["codes"] == {"constrained_parse": 1}  # prose under the grammar: what cannot happen
    # the skill stream decoded under the skill-narrowed world grammar, with the skill in the prompt; the free
    # stream under the plain world grammar, without one
    narrowed = world_json_schema({"operations": ["status"], "states": True})
    skill_rows = [(t, s) for t, s in gen.rows if "follows the skill" in t]
    free_rows = [(t, s) for t, s in gen.rows if "follows the skill" not in t]
    assert len(skill_rows) == 2 and all(s == narrowed for _, s in skill_rows)
    assert all("The world must have operations that begin with one of kind transition or take" in t
               for t, _ in skill_rows)
    assert len(free_rows) == 2 and all(s == world_json_schema() for _, s in free_rows)
    # p̂ from the solver's episodes (1 task x k=2 episodes for each of the 3 worlds), and a proposer reward, for
    # each proposal; both roles trained
    assert h["solver"]["envs"] == 3 and h["solver"]["episodes"] == 3 * 2 and p["mean_solve_rate"] is not None
    assert h["samples"] == {"proposer": 4, "solver": 6} and h["update"]["proposer"]["trained_tokens"] > 0
    # kept worlds go into the library: compiled world specs (spec_version 2), one id per distinct world
    lib = Library(tmp_path / "run" / "library")
    kept = [lib.load(r["id"]) for r in lib.rows()]
    assert len(kept) == 2 and all(s.spec_version == 2 and s.id.startswith("llm-world-") for s in kept)
    assert {s.provenance.stream for s in kept} == {"skill", "explore"}


def test_format_recovery_goes_on_under_the_world_grammar(tmp_path: Path, tiny_dir: Path, tokenizer: Any,
                                                          corpus_dir: Path, lifecycle_skills: Path) -> None:
    """``selfplay.recovery`` with the world structure: the free stream writes worlds without the grammar, its
    prose proposals are continued under the world grammar (here the script's world) and learnt."""
    from training.selfplay import SelfPlay

    cfg = world_config(tiny_dir, corpus_dir, tmp_path / "run", lifecycle_skills,
                       proposer={"explore_constrained": False, "max_new_tokens": 6000},  # a world: ~3,500 tokens
                       recovery={"enabled": True})
    gen = Worlds(tokenizer, unparsable=2)
    sp = SelfPlay(cfg, generator=gen)
    (h,) = sp.run()
    rec = h["format_recovery"]
    assert h["proposer"]["validity_by_stream"]["explore"] == 0.5  # one of the two free proposals is prose
    assert rec["unparsed"] == rec["recovered"] == 1 and rec["update"]["trained_tokens"] > 0, rec
    assert all(s is None for t, s in gen.rows if "follows the skill" not in t)  # the free stream: no grammar


@pytest.mark.parametrize(("proposer", "recovery", "error"), [
    ({"structure": "worlds"}, {}, "did you mean 'world'"),
    ({"structure": "world", "explore_structure": "spec", "explore_constrained": False}, {"enabled": True},
     "blueprint or a world, not of a whole spec"),
    ({"structure": "world"}, {"enabled": True}, "explore_constrained=false"),
])
def test_world_selfplay_config_checks(tmp_path: Path, tiny_dir: Path, corpus_dir: Path, proposer: dict[str, Any],
                                      recovery: dict[str, Any], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        selfplay_config(tiny_dir, corpus_dir, tmp_path / "x", {"proposer": proposer, "recovery": recovery})
    ok = selfplay_config(tiny_dir, corpus_dir, tmp_path / "y", {
        "proposer": {"structure": "world", "explore_structure": "world", "explore_constrained": False},
        "recovery": {"enabled": True}})
    assert ok.selfplay.proposer.structure == "world"


def test_the_bundled_world_config_loads() -> None:
    from training.config import load_config

    cfg = load_config("selfplay-smollm2-world", [])
    assert cfg.selfplay.proposer.structure == "world" and cfg.proposer_sft.structure == "world"


def test_the_probe_counts_world_schema_failures_by_where_they_are() -> None:
    """The probe's failure report reads a world's schema problems as it reads a blueprint's (it crashed on them
    when a world's problems were plain strings)."""
    from types import SimpleNamespace

    from envgen.proposers.llm import LLMProposer
    from tests.envgen.test_blueprint import JS
    from training.selfplay_metrics import failures

    broken = json.loads(store_world().to_json())
    del broken["entities"][0]["key"]
    prop = LLMProposer("scripted", backend_options={"completions": [json.dumps(broken), "prose"]},
                       structure="world", constrained=False, n_examples=0)
    props = prop.propose_batch([JS, JS], seed=0)
    out = failures([*props, SimpleNamespace(spec=object(), meta={})])
    assert out["codes"] == {"blueprint_schema": 1, "no_json": 1}
    assert out["schema"] == {"entities: missing": 1}


def test_the_tiny_model_goes_on_under_the_world_grammar(tiny_dir: Path, tokenizer: Any) -> None:
    """The format recovery's grammar for the world structure (:func:`training.format_recovery.structure_grammar`):
    a world broken near its end is kept up to the break and the random tiny model, decoding under the real world
    grammar, finishes it into a world that parses."""
    from types import SimpleNamespace

    from transformers import AutoModelForCausalLM

    from envgen.errors import FailureCode
    from training.format_recovery import recovery_samples, structure_grammar
    from training.generation import TransformersGenerator

    schema, parses = structure_grammar("world")
    assert schema == world_json_schema()
    gen = TransformersGenerator(AutoModelForCausalLM.from_pretrained(tiny_dir), eos_ids=[int(tokenizer.eos_token_id)],
                                pad_id=int(tokenizer.pad_token_id or 0), tokenizer=tokenizer)
    good = json.dumps(store_world().model_dump(mode="json"), ensure_ascii=True)  # the long form: every key written
    cut = good.rindex('"difficulty": ') + len('"difficulty": ')
    broken = good[:cut] + "maybe hard}"  # the grammar wants null or a quoted level here
    assert not parses(broken) and parses(good)
    ids = [*tokenizer(broken, add_special_tokens=False)["input_ids"], int(tokenizer.eos_token_id)]
    record = SimpleNamespace(prompt_ids=list(tokenizer("Write a world:")["input_ids"]), completion_ids=ids)
    proposal = SimpleNamespace(spec=None, raw=broken, meta={"stream": "explore", "error_code": FailureCode.JSON_SYNTAX})
    samples, stats = recovery_samples([proposal], lambda raw: record, gen, schema, parses,
                                      decode=lambda t: tokenizer.decode(t, skip_special_tokens=True),
                                      max_new_tokens=len(ids) + 64, temperature=1.0, seed=0)
    assert stats["recovered"] == 1, stats
    text = tokenizer.decode(samples[0].completion_ids, skip_special_tokens=True)
    assert parses(text) and text.startswith(good[:cut - 16])
    with pytest.raises(ValueError, match="not a 'spec'"):
        structure_grammar("spec")


def test_bench_selfplay_follows_the_world_structure(tmp_path: Path) -> None:
    """``envwright bench selfplay --config selfplay-smollm2-world``: the warm start and self-play write worlds
    (a config where they differ is refused), and the fixed and held-out template sets are the AST world writer's."""
    from corpora import load_corpus
    from envgen.world.catalog import entries
    from training.bench.selfplay import bench_structure, phase_environments
    from training.config import load_config

    assert bench_structure(load_config("selfplay-smollm2-world", [])) == "world"
    assert bench_structure(load_config("selfplay-smollm2-h200", [])) == "blueprint"
    with pytest.raises(SystemExit, match="set both to blueprint or both to world"):
        bench_structure(load_config("selfplay-smollm2-world", ["selfplay.proposer.structure=blueprint"]))
    docs = {d.path: d for d in load_corpus("stdlib") if d.path in ("queue.py", "sched.py", "shelve.py", "bisect.py")}
    train, held = [docs["queue.py"], docs["sched.py"]], [docs["shelve.py"], docs["bisect.py"]]
    res = phase_environments(tmp_path, train, held, n_train=2, n_held=1, seed=0, structure="world")
    assert res["train_templates"] >= 1 and res["heldout_templates"] == 1
    specs = [json.loads(p.read_text()) for p in [*(tmp_path / "templates").glob("*.json"),
                                                 *(tmp_path / "heldout" / "template").glob("*.json")]]
    domains = {e.blueprint.title for e in entries()}
    assert specs and all(s["spec_version"] == 2 and s["id"].startswith("world-") for s in specs)
    assert all(s["title"] in domains for s in specs)  # a catalog domain hosting the document's operations

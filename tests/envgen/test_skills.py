"""Skills: rewards, the folder format, the controller's rules, the dual stream and the simulation."""

from __future__ import annotations

import json

import pytest

from envgen.proposers.base import Proposal
from envgen.skills import (
    Candidate,
    Controller,
    ControllerConfig,
    Skill,
    SkillLibrary,
    load_skill,
    run_validator,
    save_skill,
    select_dual_stream,
    skill_sp_reward,
    spade_reward,
)
from envgen.skills.round import Scored
from envgen.skills.simulate import SimulationConfig, run_simulation, summarize, synthetic_spec
from gym_envs.spec import parse_spec
from tests.fixtures.library_spec import SPEC


def test_rewards():
    assert skill_sp_reward(True, 0.5) == 1.0
    assert skill_sp_reward(True, 0.0) == 0.0 and skill_sp_reward(True, 1.0) == 0.0
    assert skill_sp_reward(True, 0.25) == pytest.approx(0.5)
    assert skill_sp_reward(False, 0.5) == 0.0
    assert skill_sp_reward(True, 0.5, parsed=False) == -1.0
    assert spade_reward(True, 0.5) == 1.0 and spade_reward(True, 0.3) == 0.0
    assert spade_reward(True, 0.2, parsed=False) == -1.0
    with pytest.raises(ValueError, match="solve rate"):
        skill_sp_reward(True, 1.5)


def _skill(sid: str, topic: str = "ledger", **kw) -> Skill:
    return Skill(id=sid, name=sid.title(), description=f"about {topic}", tags=[f"topic:{topic}"],
                 rules=["rule one"], hints=["hint"], examples=[synthetic_spec(topic, 1, 0)], **kw)


def test_skill_round_trip_and_disclosure(tmp_path):
    s = _skill("ledgers", validator="def validate(spec):\n    return []\n")
    s.stats.observe(0.5)
    save_skill(s, tmp_path / "ledgers")
    again = load_skill(tmp_path / "ledgers")
    assert again.rules == ["rule one"] and again.hints == ["hint"] and again.stats.attempts == 1
    assert again.examples[0].id == s.examples[0].id and again.validator
    lengths = [len(again.render(level)) for level in ("name", "summary", "rules", "full")]
    assert lengths == sorted(lengths) and lengths[0] < lengths[-1]
    assert "```json" in again.render("full") and "```json" not in again.render("rules")
    with pytest.raises(ValueError, match="level"):
        again.render("everything")
    with pytest.raises(ValueError, match="skill id"):
        Skill(id="Bad Id", name="x", description="y")


def test_validator_runs_sandboxed():
    ok = _skill("v-ok", validator="def validate(spec):\n    return [] if spec['tools'] else ['no tools']\n")
    assert run_validator(ok, parse_spec(SPEC)) == []
    picky = _skill("v-picky", validator=(
        "def validate(spec):\n"
        "    names = [t['name'] for t in spec['tools']]\n"
        "    return [] if 'transfer' in names else ['needs a transfer tool']\n"))
    assert run_validator(picky, parse_spec(SPEC)) == ["needs a transfer tool"]
    evil = _skill("v-evil", validator="import os\ndef validate(spec):\n    return []\n")
    problems = run_validator(evil, parse_spec(SPEC))
    assert problems and "import" in problems[0]
    looping = _skill("v-loop", validator="def validate(spec):\n    while True:\n        pass\n")
    from gym_envs.sandbox import Limits, make_executor

    ex = make_executor("worker", limits=Limits(call_timeout_s=0.5))
    try:
        problems = run_validator(looping, parse_spec(SPEC), executor=ex)
    finally:
        ex.close()
    assert problems and "Timeout" in problems[0]


def test_routing_prefers_frontier_and_prunes_easy(tmp_path):
    lib = SkillLibrary(tmp_path)
    for sid, topic in [("easy", "notes"), ("frontier", "ledger"), ("hard", "payroll")]:
        lib.add(_skill(sid, topic), iteration=0, why="test")
    ctl = Controller(lib, ControllerConfig(seed=1))
    w0 = ctl.weights()
    assert w0["easy"] == pytest.approx(w0["frontier"])  # no evidence yet: uniform
    for _ in range(8):
        ctl.record("easy", valid=True, solve_rate=1.0, iteration=1)
        ctl.record("frontier", valid=True, solve_rate=0.5, iteration=1)
        ctl.record("hard", valid=True, solve_rate=0.0, iteration=1)
    w = ctl.weights()
    assert w["frontier"] > 0.8 and w["frontier"] > w["easy"] and w["frontier"] > w["hard"]
    routed = ctl.route(100)
    assert routed.count("frontier") > 70
    assert ctl.prune(2) == ["easy"]
    assert "easy" in lib.archived and "easy" not in lib.skills
    assert (tmp_path / "_archive" / "easy" / "SKILL.md").exists()
    assert "pruned" in (tmp_path / "evolution.log").read_text()


def test_refine_with_backend(tmp_path):
    lib = SkillLibrary(tmp_path)
    lib.add(_skill("hard", "payroll"), iteration=0, why="test")

    class Backend:
        prompts: list = []

        def generate(self, prompts, **kw):
            self.prompts.extend(prompts)
            return [json.dumps({"rules": ["Make tasks shorter."], "hints": ["One table."]})] * len(prompts)

    backend = Backend()
    ctl = Controller(lib, ControllerConfig(refine_min_attempts=4), backend=backend)
    for _ in range(4):
        ctl.record("hard", valid=True, solve_rate=0.0, iteration=1)
    assert ctl.refine(1, {"hard": ["env x solved in 0% of rollouts"]}) == ["hard"]
    assert lib.get("hard").rules == ["Make tasks shorter."]
    assert "env x solved" in backend.prompts[0][-1]["content"]
    assert ctl.refine(2) == []  # no new evidence since the rewrite


def test_induction_novelty_and_merge(tmp_path):
    lib = SkillLibrary(tmp_path)
    lib.add(_skill("ledgers", "ledger"), iteration=0, why="test")
    ctl = Controller(lib)
    novel = Candidate(synthetic_spec("greenhouse", 5, 0), reward=0.9)
    dup = Candidate(synthetic_spec("ledger", 9, 0), reward=1.0)
    weak = Candidate(synthetic_spec("brewery", 3, 0), reward=0.2)
    induced, refused = ctl.induce(1, [novel, dup, weak])
    assert induced == ["induced-sim-greenhouse-0-5"]
    assert refused == [(dup.spec.id, "ledgers")]
    # a differently named skill with the same content merges, pooling statistics
    twin = _skill("money-book", "ledger")
    twin.stats.observe(0.4)
    lib.add(twin, iteration=1, why="test")
    lib.get("ledgers").stats.observe(0.6)
    merged = ctl.merge(2)
    assert merged == [("ledgers", "money-book")]
    assert lib.get("ledgers").stats.attempts == 2 and "money-book" in lib.archived


def test_dual_stream_selection():
    counter = iter(range(1, 100))

    def scored(stream, reward, valid=True):
        spec = synthetic_spec("ledger", next(counter), 0)
        return Scored(Proposal("d", spec), stream, "s" if stream == "skill" else None, valid, [], 0.5, reward)

    pool = [scored("skill", r) for r in (0.9, 0.1, 0.5)] + [scored("explore", r) for r in (0.3, 0.8)]
    pool.append(scored("explore", 5.0, valid=False))
    kept = select_dual_stream(pool, 4, 0.5)
    assert [k.reward for k in kept] == [0.9, 0.5, 0.8, 0.3]
    # a short stream is filled from the other
    kept = select_dual_stream(pool, 5, 0.8)
    assert len(kept) == 5 and all(k.valid for k in kept)


def test_simulation_reaches_frontier_and_evolves(tmp_path):
    hist = run_simulation(tmp_path, SimulationConfig(seed=2))
    s = summarize(hist)
    assert 0.4 <= hist[4]["mean_solve_rate_routed"] <= 0.6
    assert s["pruned"] and s["induced"] and s["refused"] and s["refined"]
    assert any(h["merged"] for h in hist)
    log = (tmp_path / "evolution.log").read_text()
    for event in ("added", "pruned", "refined", "merged", "refused"):
        assert event in log
    # routing mass moves toward skills near the frontier
    last = hist[-1]
    rates = last["skill_solve_rates"]
    near = [sid for sid, p in rates.items() if 0.25 <= p <= 0.75]
    routed_near = sum(n for sid, n in last["routing"].items() if sid in near)
    assert routed_near / max(1, sum(last["routing"].values())) > 0.5


def test_builtin_skill_copies_of_examples_do_not_drift():
    """Skill examples copied from gym_envs/examples must stay identical to the shipped example."""
    from envgen.skills import builtin_skills_dir
    from gym_envs.examples import list_examples, load_example

    shipped = {name: load_example(name) for name in list_examples()}
    copies = 0
    for path in builtin_skills_dir().glob("*/examples/*.json"):
        spec = load_skill(path.parent.parent).examples
        for ex in spec:
            if ex.id in shipped and path.name.endswith(f"{ex.id}.json"):
                assert ex == shipped[ex.id], f"{path} drifted from gym_envs/examples/{ex.id}.json"
                copies += 1
    assert copies >= 1


def test_whole_round_with_the_scripted_backend(tmp_path):
    """A real dual-stream round: the llm proposer over the scripted backend, the gate, skill validators,
    a solver, proposer rewards, library writes and the controller's end-of-round step."""
    from corpora import Document
    from envgen.library import Library
    from envgen.proposers.llm import LLMProposer
    from envgen.skills import RoundConfig, builtin_skills_dir, run_round
    from envgen.skills.library import SkillLibrary
    from gym_envs.examples import load_example

    skills = SkillLibrary.from_builtin(tmp_path / "skills")
    assert len(skills) >= 10 and (tmp_path / "skills" / "ledger-invariants").exists()
    assert builtin_skills_dir().exists()

    def completion(prompt) -> str:
        # answer with a valid example: the skill's own when the prompt names a skill, else a shipped one
        text = prompt[-1]["content"] if isinstance(prompt, list) else str(prompt)
        for s in skills:
            if f"Skill: {s.name}" in text:
                spec = s.examples[0]
                break
        else:
            spec = load_example("travel-booking")
        data = spec.model_dump(mode="json")
        data["id"] = f"round-{abs(hash(text)) % 10**8}"
        return "```json\n" + json.dumps(data) + "\n```"

    proposer = LLMProposer("scripted", backend_options={"completions": completion}, max_new_tokens=200_000)
    docs = [Document.create(f"class Box{i}:\n    def add(self, x):\n        self.x = x\n", corpus="mem",
                            path=f"box{i}.py") for i in range(4)]
    rates = iter([0.5, 1.0, 0.25, 0.0, 0.75, 0.5] * 4)
    controller = Controller(skills, ControllerConfig(seed=0))
    lib = Library(tmp_path / "lib")
    result = run_round(controller, proposer, docs, lambda specs: [next(rates) for _ in specs], iteration=1,
                       config=RoundConfig(n=2, alpha=0.5, oversample=2.0, group_size=1,
                                                              validation="inprocess"), library=lib)
    m = result.metrics()
    assert m["candidates"] == 4 and m["validity"] == 1.0 and m["kept"] == 2
    streams = sorted(s.stream for s in result.kept)
    assert streams == ["explore", "skill"]
    routed = [s for s in result.candidates if s.stream == "skill"]
    assert all(s.skill_id in skills.skills for s in routed)
    assert sum(skills.get(s.skill_id).stats.proposals for s in routed) >= len(routed)
    assert len(lib) >= 1 and all(r["stream"] in ("skill", "explore") for r in lib.rows())
    saved = json.loads((tmp_path / "skills" / routed[0].skill_id / "stats.json").read_text())
    assert saved["proposals"] >= 1  # statistics persisted by the controller's end-of-round step


def test_generate_with_skills_and_alpha(tmp_path):
    """`envwright generate --skills DIR --alpha A`: a share alpha of each batch is skill-conditioned."""
    from corpora import Document
    from envgen.generate import GenerateConfig, run_generate
    from envgen.library import Library
    from envgen.proposers.llm import LLMProposer
    from gym_envs.examples import load_all

    examples = load_all()
    seen: list[str] = []

    def completion(prompt) -> str:
        text = prompt[-1]["content"] if isinstance(prompt, list) else str(prompt)
        seen.append(text)
        data = examples[len(seen) % len(examples)].model_dump(mode="json")
        data["id"] = f"gen-skill-{len(seen)}"
        for t in data["tasks"]:  # distinct task texts, so no duplicate refusals
            for turn in t["turns"]:
                turn["instruction"] += f" (request {len(seen)})"
        return json.dumps(data)

    proposer = LLMProposer("scripted", backend_options={"completions": completion}, max_new_tokens=200_000)
    docs = [Document.create(f"class Bin{i}:\n    def put(self, x):\n        self.x = x\n", corpus="mem",
                            path=f"bin{i}.py") for i in range(4)]
    cfg = GenerateConfig(proposer="llm", backend="scripted", n=4, out=tmp_path / "lib", skills=tmp_path / "skills",
                         alpha=0.5, batch_size=4, validation="inprocess", max_retries=0)
    summary = run_generate(cfg, progress=False, proposer=proposer, docs=docs)
    assert summary.attempted == 4
    assert sum("Skill: " in t for t in seen) == 2  # alpha * batch documents were conditioned on a skill
    lib = Library(tmp_path / "lib")
    attempts = {a["doc_id"]: a for a in lib.attempts()}
    skilled = [a for a in attempts.values() if a["stream"] == "skill"]
    assert len(skilled) == 2 and all(a["skill_id"] for a in skilled)
    # the routed skill's validator runs on every environment the gate accepts: an example spec that does
    # not follow the skill is rejected with the skill named, and everything else is accepted
    from envgen.skills import SkillLibrary
    from envgen.skills.skill import run_validator

    skills = SkillLibrary(tmp_path / "skills")
    for a in skilled:
        if a["accepted"]:
            assert run_validator(skills.get(a["skill_id"]), lib.load(a["env_id"]), executor="inprocess") == []
        else:
            assert json.loads(a["codes"]) == ["skill_validator"]
            assert all(r.startswith(f"skill {a['skill_id']}:") for r in json.loads(a["reasons"]))
    assert summary.accepted == 4 - sum(1 for a in skilled if not a["accepted"])
    assert sorted(r["stream"] for r in lib.rows()) == sorted(a["stream"] for a in attempts.values() if a["accepted"])
    # generation counted every skill-conditioned proposal in the skill's usage stats, saved in the library
    used = {a["skill_id"] for a in skilled}
    assert sum(skills.get(s).stats.proposals for s in used) == 2
    assert sum(skills.get(s).stats.valid for s in used) == sum(1 for a in skilled if a["accepted"])

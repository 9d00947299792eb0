"""Model-written skills (induction, refinement) kept only when their probes pass; skill requirements as a
validator; the diff between two libraries (``envwright skills diff``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from corpora import Document
from envgen.blueprint.compiler import compile_blueprint
from envgen.blueprint.schema import OP_KINDS, RULE_KINDS, max_completion_chars
from envgen.proposers.llm import LLMProposer
from envgen.proposers.template.prompt import EXAMPLE_DOCUMENT
from envgen.proposers.template.writer import write_blueprint
from envgen.skills import Candidate, Controller, ControllerConfig, Skill, SkillLibrary
from envgen.skills.authoring import SkillWriter, parse_skill_json, skill_json_schema
from envgen.skills.requirements import requirement_problems, requirements_validator, structure_of
from gym_envs.examples import EXAMPLES_DIR
from gym_envs.spec import EnvSpec, load_spec

DOC = Document.create(EXAMPLE_DOCUMENT, corpus="mem", path="library.py")


def _env() -> EnvSpec:
    return compile_blueprint(write_blueprint(DOC, 0).blueprint, DOC, seed=0).spec


def _skill_answer(**blueprint: Any) -> str:
    req = {"operations": [], "rules": [], "states": False,
           "tasks": {"execute": 0, "read": 0, "read_then_write": 0, "missing_parameter": 0, "decline": 0}}
    req.update({k: v for k, v in blueprint.items() if k != "tasks"})
    req["tasks"].update(blueprint.get("tasks", {}))
    return json.dumps({"name": "Shelf catalogues", "description": "Books on shelves, counted in copies.",
                       "tags": ["library", "stock"], "rules": ["Count copies; never below zero."],
                       "hints": ["Ask about a title."], "blueprint": req}, separators=(", ", ": "))


def _backend(skill_text: str) -> Any:
    """A scripted backend: the skill for skill-writing prompts, the AST writer's blueprint for probes."""
    bp = write_blueprint(DOC, 0).blueprint.to_json()

    def completion(prompt: Any) -> str:
        return skill_text if "library of skills" in prompt[0]["content"] else bp

    return LLMProposer("scripted", backend_options={"completions": completion}, structure="blueprint").backend


def _writer(skill_text: str, **kw: Any) -> SkillWriter:
    backend = _backend(skill_text)
    proposer = LLMProposer(backend, structure="blueprint")
    return SkillWriter(backend, proposer, probes=2, executor="inprocess", **kw)


def test_schema_is_finite_and_parses_a_written_skill() -> None:
    assert 0 < max_completion_chars(skill_json_schema()) < 20_000
    assert "name" not in skill_json_schema(full=False)["properties"]
    import re

    props = skill_json_schema()["properties"]  # what the parser requires, the grammar guarantees
    rule, name = props["rules"]["items"]["pattern"], props["name"]["pattern"]
    assert re.match(rule, "Count copies.") and not re.match(rule, " ") and not re.match(rule, "")
    assert re.match(name, "Shelf catalogues") and not re.match(name, "  x") and not re.match(name, "ab")
    parsed = parse_skill_json(_skill_answer(operations=["adjust"], tasks={"read": 1}))
    assert isinstance(parsed, dict) and parsed["blueprint"] == {"operations": ["adjust"], "tasks": {"read": 1}}
    assert parse_skill_json("no json here") == "no JSON object"
    assert "missing" in parse_skill_json('{"rules": ["x"]}')
    assert "operations" in parse_skill_json(_skill_answer(operations=["teleport"]))


def test_requirements_validator_judges_any_spec() -> None:
    env = _env()
    kinds = {t.kind for t in env.tasks}
    assert requirement_problems({"tasks": {k: 1 for k in kinds}}, env, executor="inprocess") == []
    problems = requirement_problems({"tasks": {"decline": 3}, "states": True}, env, executor="inprocess")
    assert any("decline" in p for p in problems) and any("lifecycle" in p for p in problems)
    assert "REQUIRED = {'states': True}" in requirements_validator({"states": True})
    with pytest.raises(ValueError, match="unknown keys"):
        requirements_validator({"colour": "red"})


def _as_requirements(have: dict[str, Any]) -> dict[str, Any]:
    return {"operations": have["operations"], "rules": have["rules"], "states": have["states"],
            "tasks": {k: min(2, n) for k, n in have["tasks"].items() if n}}


@pytest.mark.parametrize("name", [*sorted(p.stem for p in EXAMPLES_DIR.glob("*.json")), "compiled"])
def test_structure_of_is_what_the_requirements_confirm(name: str) -> None:
    """Whatever a spec is reported to have, requiring it holds on the spec; whatever it lacks, requiring that
    fails: a skill asking for no more than an example's structure holds on the example."""
    spec = _env() if name == "compiled" else load_spec(EXAMPLES_DIR / f"{name}.json")
    have = structure_of(spec, executor="inprocess")
    assert have is not None and {"create", "get"} <= set(have["operations"])
    assert requirement_problems(_as_requirements(have), spec, executor="inprocess") == []
    for kind in set(OP_KINDS) - set(have["operations"]):
        assert requirement_problems({"operations": [kind]}, spec, executor="inprocess"), kind
    for kind in set(RULE_KINDS) - set(have["rules"]):
        assert requirement_problems({"rules": [kind]}, spec, executor="inprocess"), kind


def test_transfer_capacity_and_final_are_recognised_in_tool_code() -> None:
    """The three kinds the requirements could name but never confirm (a skill asking for one was refused on
    every example): moving an amount between rows or a row to another parent, a capacity check, final states."""
    assert "transfer" in structure_of(load_spec(EXAMPLES_DIR / "bank-ledger.json"), executor="inprocess")["operations"]
    assert "capacity" in structure_of(load_spec(EXAMPLES_DIR / "library-loans.json"), executor="inprocess")["rules"]
    code = (
        "def close_case(db, case_id):\n"
        "    row = db.query('SELECT * FROM cases WHERE id = ?', [case_id])[0]\n"
        "    if row['status'] in ['closed', 'void']:\n"
        "        raise ToolError('a final state')\n"
        "    db.execute('UPDATE cases SET status = ? WHERE id = ?', ['closed', case_id])\n")
    spec = {"tools": [{"name": "close_case"}], "code": code,
            "state": {"schema_sql": "CREATE TABLE cases (id TEXT PRIMARY KEY, status TEXT)"}, "tasks": []}
    have = structure_of(spec, executor="inprocess")
    assert have is not None and "final" in have["rules"] and "status" in have["operations"]
    assert "capacity" not in have["rules"] and "transfer" not in have["operations"]


REQUIREMENTS = [*({"operations": [k]} for k in OP_KINDS), *({"rules": [k]} for k in RULE_KINDS), {"states": True},
                {"operations": ["delete", "status", "transfer"], "rules": ["range", "enum"]},
                {"rules": ["non_negative", "final", "capacity"], "tasks": {"decline": 1}}]


@pytest.mark.parametrize("require", REQUIREMENTS, ids=str)
def test_the_compiler_supplies_every_requirement_a_skill_can_name(require: dict[str, Any]) -> None:
    """Whatever a skill's blueprint section asks for, the compiler adds when the model's blueprint lacks it, so
    a skill-routed proposal can meet its skill (delete, range, enum, capacity and final could not before)."""
    from envgen.blueprint.compiler import CompileOptions
    from envgen.gate import validate_spec

    spec = compile_blueprint(write_blueprint(DOC, 0).blueprint, DOC, seed=0,
                             options=CompileOptions(require=require)).spec
    assert requirement_problems(require, spec, executor="inprocess") == []
    assert validate_spec(spec, executor="inprocess").accepted


def test_skill_schema_within_an_example_allows_only_its_structure() -> None:
    import jsonschema
    import xgrammar

    have = {"operations": ["create", "get", "adjust"], "rules": ["unique"], "states": False,
            "tasks": {"execute": 1, "read": 2, "decline": 0}}
    schema = skill_json_schema(within=have)
    xgrammar.Grammar.from_json_schema(json.dumps(schema))  # the constrained decoder takes it
    bp = schema["properties"]["blueprint"]["properties"]
    assert bp["operations"]["items"]["enum"] == ["create", "get", "adjust"] and bp["states"]["enum"] == [False]
    assert bp["tasks"]["properties"]["read"]["maximum"] == 2 and bp["tasks"]["properties"]["decline"]["maximum"] == 0
    ok = json.loads(_skill_answer(operations=["adjust"], rules=["unique"], tasks={"read": 2}))
    jsonschema.validate(ok, schema)
    for bad in (_skill_answer(operations=["transfer"]), _skill_answer(states=True),
                _skill_answer(tasks={"decline": 1})):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(json.loads(bad), schema)
    bare = skill_json_schema(within={"operations": [], "rules": [], "states": True, "tasks": {}})
    xgrammar.Grammar.from_json_schema(json.dumps(bare))
    assert bare["properties"]["blueprint"]["properties"]["rules"]["maxItems"] == 0
    assert skill_json_schema()["properties"]["blueprint"]["properties"]["states"] == {"type": "boolean"}


def test_induction_decodes_within_its_example_and_says_what_it_has(tmp_path: Path) -> None:
    env = _env()
    have = structure_of(env, executor="inprocess")
    seen: list[tuple[Any, Any]] = []
    backend = _backend(_skill_answer(tasks={env.tasks[0].kind: 1}))
    real = backend.generate

    def generate(prompts: Any, **kw: Any) -> Any:
        seen.append((prompts, kw.get("json_schema")))
        return real(prompts, **kw)

    backend.generate = generate
    writer = SkillWriter(backend, LLMProposer(backend, structure="blueprint"), probes=1, executor="inprocess")
    ctl = Controller(SkillLibrary(tmp_path / "skills"), ControllerConfig(induce_min_reward=0.5), writer=writer)
    induced, _ = ctl.induce(1, [Candidate(env, reward=0.9, solve_rate=0.5, doc=DOC)])
    assert induced
    prompt, schema = next((p, s) for p, s in seen if s is not None and "tags" in s["properties"])
    assert "Its structure: operations " + ", ".join(have["operations"]) in prompt[0][1]["content"]
    assert schema == skill_json_schema(within=have)


def test_writer_induces_a_skill_whose_probes_pass(tmp_path: Path) -> None:
    lib = SkillLibrary(tmp_path / "skills")
    env = _env()
    kind = env.tasks[0].kind
    writer = _writer(_skill_answer(tasks={kind: 1}))
    ctl = Controller(lib, ControllerConfig(induce_min_reward=0.5), writer=writer)
    induced, refused = ctl.induce(3, [Candidate(env, reward=0.9, solve_rate=0.5, doc=DOC)])
    assert induced == ["induced-shelf-catalogues"] and refused == []
    skill = lib.get("induced-shelf-catalogues")
    assert skill.blueprint == {"tasks": {kind: 1}} and skill.examples[0].id == env.id and skill.added_iteration == 3
    assert skill.validator == requirements_validator(skill.blueprint) and "induced" in skill.tags
    log = (tmp_path / "skills" / "evolution.log").read_text()
    assert "written by the model" in log and "2 probe(s) passed" in log
    assert (tmp_path / "skills" / "induced-shelf-catalogues" / "validator.py").is_file()


def test_writer_refuses_candidates_that_fail(tmp_path: Path) -> None:
    env = _env()
    # the model asks for more decline tasks than its own example has: unconstrained, its validator fails on the
    # example; constrained, the decoding grammar (bounded to the example's structure) cannot write it
    lib = SkillLibrary(tmp_path / "a")
    too_many = _skill_answer(tasks={"decline": 2})
    ctl = Controller(lib, ControllerConfig(induce_min_reward=0.5), writer=_writer(too_many, constrained=False))
    assert ctl.induce(1, [Candidate(env, reward=0.9, doc=DOC)]) == ([], [])
    assert "own example" in ctl.rejected[0][1] and len(lib) == 0
    ctl = Controller(lib, ControllerConfig(induce_min_reward=0.5), writer=_writer(too_many))
    assert ctl.induce(1, [Candidate(env, reward=0.9, doc=DOC)]) == ([], [])
    assert "does not match the JSON schema" in ctl.rejected[0][1] and len(lib) == 0
    # probes the gate rejects
    lib = SkillLibrary(tmp_path / "b")
    writer = _writer(_skill_answer(), gate=lambda spec: ["synthetic: rejected"])
    ctl = Controller(lib, ControllerConfig(induce_min_reward=0.5), writer=writer)
    assert ctl.induce(1, [Candidate(env, reward=0.9, doc=DOC)]) == ([], [])
    assert "probes failed" in ctl.rejected[0][1]
    assert "induce-refused" in (tmp_path / "b" / "evolution.log").read_text()


def test_writer_refines_a_struggling_skill(tmp_path: Path) -> None:
    lib = SkillLibrary(tmp_path / "skills")
    lib.add(Skill(id="shelves", name="Shelves", description="books", rules=["old rule"], examples=[_env()],
                  blueprint={"tasks": {"decline": 3}}), iteration=0, why="test")
    refinement = json.dumps({"rules": ["Keep tasks short."], "hints": [], "blueprint": {
        "operations": [], "rules": [], "states": False,
        "tasks": {"execute": 1, "read": 0, "read_then_write": 0, "missing_parameter": 0, "decline": 0}}},
        separators=(", ", ": "))
    ctl = Controller(lib, ControllerConfig(refine_min_attempts=2), writer=_writer(refinement))
    for _ in range(2):
        ctl.record("shelves", valid=False, solve_rate=None, iteration=1)
    assert ctl.refine(1, {"shelves": ["needs 3 decline tasks"]}, [DOC]) == ["shelves"]
    s = lib.get("shelves")
    assert s.rules == ["Keep tasks short."] and s.blueprint == {"tasks": {"execute": 1}}
    assert ctl.refine(2, {}, [DOC]) == []  # no new evidence since
    # a rewrite whose probes fail is refused and the skill stays as it was
    ctl.writer = _writer(refinement, gate=lambda spec: ["synthetic: rejected"])
    for _ in range(2):
        ctl.record("shelves", valid=False, solve_rate=None, iteration=2)
    lib.get("shelves").rules = ["current"]
    assert ctl.refine(3, {}, [DOC]) == [] and lib.get("shelves").rules == ["current"]
    assert "refine-refused" in (tmp_path / "skills" / "evolution.log").read_text()


def test_skills_diff(tmp_path: Path) -> None:
    from envgen.cli import cli
    from envgen.skills.diff import diff_libraries

    a = SkillLibrary(tmp_path / "a")
    a.add(Skill(id="keep", name="Keep", description="d", rules=["r1"]), iteration=0, why="test")
    a.add(Skill(id="gone", name="Gone", description="d"), iteration=0, why="test")
    b = SkillLibrary(tmp_path / "b")
    for sid in ("keep", "gone"):
        b.save(a.get(sid))
    (tmp_path / "b" / "evolution.jsonl").write_text((tmp_path / "a" / "evolution.jsonl").read_text())
    keep = b.get("keep")
    keep.rules, keep.blueprint = ["r2"], {"states": True}
    keep.stats.proposals = 4
    b.save(keep)
    b.archive("gone", iteration=1, why="became easy")
    b.add(Skill(id="new-one", name="New", description="d"), iteration=1, why="induced")
    d = diff_libraries(tmp_path / "a", tmp_path / "b")
    assert d["added"] == ["new-one"] and d["archived"] == ["gone"] and d["restored"] == []
    assert d["changed"]["keep"]["rules"] == {"removed": ["r1"], "added": ["r2"]}
    assert d["changed"]["keep"]["blueprint"] == {"old": {}, "new": {"states": True}}
    assert d["stats"]["keep"]["proposals"] == {"old": 0, "new": 4}
    assert [e["event"] for e in d["events"]] == ["pruned", "added"]
    run = CliRunner(env={"COLUMNS": "250"}).invoke
    res = run(cli, ["skills", "diff", str(tmp_path / "a"), str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    assert "added: new-one" in res.output and "+ rules: r2" in res.output and "became easy" in res.output
    res = run(cli, ["skills", "diff", str(tmp_path / "a"), str(tmp_path / "b"), "--json"])
    assert json.loads(res.output)["archived"] == ["gone"]
    res = run(cli, ["skills", "diff", str(tmp_path / "a"), str(tmp_path / "nope")])
    assert res.exit_code != 0

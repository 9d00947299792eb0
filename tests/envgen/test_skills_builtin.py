"""The built-in skills (``envgen/skills/builtin``): they load, their examples pass the gate, their validators work.

One test is parametrised over every example of every built-in skill (the gate, in-process for speed), one over
every skill's validator on its own examples (sandboxed in a worker: they must find nothing), one over
cross-checks where a validator must object to another skill's example that lacks the structure it looks for, and
one over its own examples with that structure removed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envgen.gate import validate_spec
from envgen.skills.library import SkillLibrary, builtin_skills_dir
from envgen.skills.skill import DISCLOSURE_LEVELS, Skill, load_skill, run_validator
from gym_envs.sandbox import StateDB, WorkerExecutor
from gym_envs.spec import load_spec

BUILTIN = builtin_skills_dir()
SKILL_DIRS = sorted(p for p in BUILTIN.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
SKILL_IDS = [p.name for p in SKILL_DIRS]
EXAMPLES = sorted(BUILTIN.glob("*/examples/*.json"))
EMPTY_STATS = {"attempts": 0, "solve_sum": 0.0, "proposals": 0, "valid": 0, "reward_sum": 0.0, "last_used": None}

# (skill whose validator runs, example id of another skill that lacks the structure it requires, expected phrase)
CROSS_CHECKS = [
    ("records-crud", "bank-ledger", "no create tool"),
    ("ledger-invariants", "crm-contacts", "balance column"),
    ("scheduling-conflicts", "pharmacy-stock", "start and an end column"),
    ("inventory-stock-limits", "document-sharing", "stock column"),
    ("roles-permissions", "pharmacy-stock", "grants"),
    ("search-then-act", "employee-directory", "at least 3 related tables"),
    ("lifecycle-state-machine", "employee-directory", "status column"),
    ("missing-parameter", "crm-contacts", "no missing_parameter task"),
    ("decline-unsupported", "employee-directory", "decline tasks"),
    ("long-context-lookup", "hotel-front-desk", "200+ rows"),
    ("aggregate-reports", "parking-permits", "read tasks"),
    ("multi-turn-context", "employee-directory", "multi-turn tasks"),
]


@pytest.fixture(scope="module")
def worker():
    ex = WorkerExecutor()
    yield ex
    ex.close()


def _skill(skill_id: str) -> Skill:
    return load_skill(BUILTIN / skill_id)


def _example(example_id: str):
    (path,) = [p for p in EXAMPLES if p.stem.split("-", 1)[1] == example_id]
    return load_spec(path)


def test_at_least_ten_skills_load_with_complete_metadata():
    assert len(SKILL_DIRS) >= 10
    for folder in SKILL_DIRS:
        skill = load_skill(folder)
        assert skill.id == folder.name
        assert skill.added_iteration == 0 and skill.parent is None and not skill.archived
        assert skill.tags and skill.description.strip()
        assert 4 <= len(skill.rules) <= 8, skill.id
        assert 2 <= len(skill.hints) <= 5, skill.id
        assert 1 <= len(skill.examples) <= 2, skill.id
        assert skill.validator and "def validate(spec)" in skill.validator
        assert json.loads((folder / "stats.json").read_text()) == EMPTY_STATS
        assert not (folder / "__init__.py").exists()


def test_example_ids_are_unique_across_skills():
    ids = [load_spec(p).id for p in EXAMPLES]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    for p in EXAMPLES:  # file name: NN-<spec id>.json, as save_skill writes it
        assert p.stem.split("-", 1)[1] == load_spec(p).id


@pytest.mark.parametrize("path", EXAMPLES, ids=[f"{p.parent.parent.name}/{p.stem}" for p in EXAMPLES])
def test_example_passes_the_gate(path: Path):
    verdict = validate_spec(path, executor="inprocess")
    assert verdict.accepted, verdict.feedback()


@pytest.mark.parametrize("skill_id", SKILL_IDS)
def test_validator_accepts_its_own_examples(skill_id: str, worker):
    skill = _skill(skill_id)
    for ex in skill.examples:
        assert run_validator(skill, ex, executor=worker) == [], ex.id


@pytest.mark.parametrize(("skill_id", "example_id", "phrase"), CROSS_CHECKS,
                         ids=[f"{s}-on-{e}" for s, e, _ in CROSS_CHECKS])
def test_validator_rejects_example_without_its_structure(skill_id: str, example_id: str, phrase: str, worker):
    assert example_id not in [ex.id for ex in _skill(skill_id).examples]
    problems = run_validator(_skill(skill_id), _example(example_id), executor=worker)
    assert problems, f"{skill_id} accepted {example_id}"
    assert not any("validator error" in p or "does not load" in p for p in problems), problems
    assert any(phrase in p for p in problems), problems


def _drop_checks(spec: dict, kind: str, where=lambda task, turn_index: True) -> dict:
    for task in spec["tasks"]:
        for i, turn in enumerate(task["turns"]):
            if where(task, i):
                turn["checks"] = [c for c in turn["checks"] if c["kind"] != kind]
    return spec


def _ask_without_forbid(spec: dict) -> dict:
    return _drop_checks(spec, "calls", lambda task, i: task["kind"] == "missing_parameter" and i == 0)


def _decline_without_unchanged(spec: dict) -> dict:
    return _drop_checks(spec, "unchanged", lambda task, i: task["kind"] == "decline")


def _small_seed(spec: dict) -> dict:
    spec["state"]["seed_sql"] = spec["state"]["seed_sql"].replace("WHERE x < 300", "WHERE x < 50")
    return spec


# (skill, its example, a mutation that removes what the validator looks for, expected phrase)
MUTATIONS = [
    ("ledger-invariants", "budget-envelopes", lambda s: _drop_checks(s, "python"), "sums the balances"),
    ("missing-parameter", "hotel-front-desk", _ask_without_forbid, "forbids the write tool"),
    ("decline-unsupported", "parking-permits", _decline_without_unchanged, "add an unchanged check"),
    ("long-context-lookup", "employee-directory", _small_seed, "200+ rows"),
]


@pytest.mark.parametrize(("skill_id", "example_id", "mutate", "phrase"), MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_validator_flags_its_own_example_once_the_structure_is_removed(skill_id, example_id, mutate, phrase, worker):
    spec = mutate(_example(example_id).model_dump(mode="json"))
    problems = run_validator(_skill(skill_id), spec, executor=worker)
    assert any(phrase in p for p in problems), problems


def test_every_validator_is_cross_checked():
    assert {s for s, _, _ in CROSS_CHECKS} == set(SKILL_IDS)


def test_validator_survives_a_malformed_spec(worker):
    for skill_id in SKILL_IDS:
        problems = run_validator(_skill(skill_id), {"id": "x", "tasks": [], "tools": []}, executor=worker)
        assert problems and not any("validator error" in p for p in problems), (skill_id, problems)


@pytest.mark.parametrize("skill_id", SKILL_IDS)
def test_render_at_every_disclosure_level(skill_id: str):
    skill = _skill(skill_id)
    texts = {level: skill.render(level) for level in DISCLOSURE_LEVELS}
    assert texts["name"] == f"Skill: {skill.name}"
    assert skill.description in texts["summary"] and "Rules:" not in texts["summary"]
    assert all(r in texts["rules"] for r in skill.rules) and all(h in texts["rules"] for h in skill.hints)
    assert "Example environment" not in texts["rules"]
    assert texts["full"].startswith(texts["rules"]) and skill.examples[0].id in texts["full"]
    assert [len(texts[lv]) for lv in DISCLOSURE_LEVELS] == sorted(len(texts[lv]) for lv in DISCLOSURE_LEVELS)


def test_library_from_builtin_loads_them_all(tmp_path: Path):
    lib = SkillLibrary.from_builtin(tmp_path / "skills")
    assert sorted(lib.skills) == SKILL_IDS and len(lib) >= 10
    assert not list((tmp_path / "skills").rglob("__pycache__"))
    assert lib.get("ledger-invariants").validator == _skill("ledger-invariants").validator
    # distinct skills stay distinguishable by content
    for a in lib:
        for b in lib:
            if a.id < b.id:
                assert lib.similarity(a, b) < 0.3, (a.id, b.id)


def test_long_context_seeds_build_hundreds_of_rows_in_rw_mode():
    for spec in _skill("long-context-lookup").examples:
        db = StateDB()
        try:
            db.script(spec.state.schema_sql, mode="setup")
            db.script(spec.state.seed_sql, mode="rw")  # INSERT ... WITH RECURSIVE ... SELECT, as the runtime seeds
            assert max(db.row_counts().values()) >= 200, spec.id
        finally:
            db.close()

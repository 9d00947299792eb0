"""Skills condition worlds: a routed skill's requirements in the world prompt and the world decoding schema
(:mod:`envgen.world.requirements`), checked on the compiled spec; and the model-written world's id and typed
schema failures."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from envgen.blueprint.schema import max_completion_chars
from envgen.proposers.llm import LLMProposer
from envgen.proposers.world.prompt import build_world_messages
from envgen.skills.library import SkillLibrary, builtin_skills_dir
from envgen.skills.requirements import requirement_problems, structure_of
from envgen.skills.skill import Skill
from envgen.world.blueprint import WorldBlueprint, parse_world, world_json_schema
from envgen.world.compile import CompileError, compile_world
from envgen.world.requirements import needs_text, world_needs
from tests.envgen.test_blueprint import JS
from tests.envgen.world.store_world import store_world

jsonschema = pytest.importorskip("jsonschema")

World = dict[str, Any]


def shop() -> World:
    """The corner shop world as the JSON a model decodes (every property written)."""
    return json.loads(store_world().to_json())


def _first(items: list[dict[str, Any]], keep: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
    """``items`` with the first one ``keep`` holds for moved to the front."""
    hit = next(x for x in items if keep(x))
    return [hit] + [x for x in items if x is not hit]


def main_first(w: World) -> World:
    w["entities"] = _first(w["entities"], lambda e: e["role"] == "main")
    return w


def op_first(kind: str) -> Callable[[World], World]:
    def move(w: World) -> World:
        w["operations"] = _first(w["operations"], lambda o: o["kind"] == kind)
        return w
    return move


def with_category(w: World) -> World:
    main = next(e for e in w["entities"] if e["role"] == "main")
    main["fields"].insert(0, {"name": "channel", "kind": "category", "description": "", "values": ["web", "phone"],
                              "min": None, "max": None, "nullable": False})
    return w


def refusals_first(w: World) -> World:
    w["policy"].insert(0, {"kind": "forbid_state", "text": "Do not change the address of a shipped order.",
                           "op": "change_address", "field": None, "value": None, "states": ["shipped"]})
    w["policy"] = _first(w["policy"], lambda r: r["kind"] == "limit")
    w["policy"] = _first(w["policy"], lambda r: r["kind"] == "forbid_state")
    return w


def with_count(w: World) -> World:
    w["operations"].insert(0, {"name": "count_orders", "kind": "count", "entity": "order", "description": "",
                               "origin": "", "fields": [], "target": None, "sources": ["pending"], "order": "first",
                               "holder": None, "by": None, "conditions": [], "effects": [], "phrase": "",
                               "reasons": []})
    return w


def then(*steps: Callable[[World], World]) -> Callable[[World], World]:
    def run(w: World) -> World:
        for s in steps:
            w = s(w)
        return w
    return run


#: (a skill's requirements, the shop world made to have them, the shop world without them)
CASES: list[tuple[dict[str, Any], Callable[[World], World], Callable[[World], World]]] = [
    ({"operations": ["status"]}, op_first("transition"), op_first("update")),
    ({"operations": ["adjust"]}, op_first("adjust"), op_first("create")),
    ({"operations": ["transfer"]}, lambda w: w, op_first("adjust")),  # the shop has no transfer or move
    ({"states": True}, main_first, lambda w: w),  # the person entity comes first
    ({"rules": ["final"]}, then(main_first, op_first("transition")), then(op_first("transition"))),
    ({"rules": ["enum"]}, then(with_category, main_first), main_first),  # the order has no category field
    ({"rules": ["non_negative"]}, op_first("adjust"), op_first("update")),
    ({"tasks": {"decline": 2}}, refusals_first, lambda w: w),  # a confirm rule comes first
    ({"tasks": {"missing_parameter": 1}}, lambda w: w, lambda w: {**w, "operator": True}),
    ({"tasks": {"read": 1}}, with_count, lambda w: w),
]


@pytest.mark.parametrize(("req", "having", "lacking"), CASES, ids=[json.dumps(c[0]) for c in CASES])
def test_a_skills_requirements_narrow_the_world_schema(req: dict[str, Any], having: Callable[[World], World],
                                                       lacking: Callable[[World], World]) -> None:
    """A world that lacks what the skill requires is not admitted by the narrowed schema, though the plain world
    schema admits it; the same world given that structure is admitted, and compiled (a skill's task counts are the
    task writer's first drafts: ``require_tasks``) it passes the skill's check."""
    plain, narrowed = world_json_schema(), world_json_schema(req)
    good, bad = having(shop()), lacking(shop())
    if req == {"operations": ["transfer"]}:
        good["operations"].insert(0, {**copy.deepcopy(good["operations"][-1]), "name": "move_credit",
                                      "kind": "transfer"})
    jsonschema.validate(bad, plain)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, narrowed)
    jsonschema.validate(good, narrowed)
    assert max_completion_chars(narrowed) >= max_completion_chars(plain) - 64  # still a finite grammar
    spec = compile_world(WorldBlueprint.model_validate(good), env_id="shop-skill", seed=0,
                         require_tasks=req.get("tasks")).spec
    assert requirement_problems(req, spec, executor="inprocess") == []


@pytest.mark.parametrize(("req", "having"), [({"decline": 2}, refusals_first),
                                             ({"missing_parameter": 2}, lambda w: w), ({"read": 3}, with_count)])
def test_a_skills_task_counts_are_drafted_first(req: dict[str, int], having: Callable[[World], World]) -> None:
    """The world has no task mix: given the structure a family needs, ``require_tasks`` has the task writer draft
    the skill's kinds first (one request each, so a session cannot change the kind), where it otherwise writes
    fewer of them; deterministic, and within the world's task count."""
    bp = WorldBlueprint.model_validate(having(shop()))
    [(kind, least)] = req.items()
    plain = compile_world(bp, env_id="shop-tasks", seed=0).spec
    asked = compile_world(bp, env_id="shop-tasks", seed=0, require_tasks=req)
    assert sum(t.kind == kind for t in plain.tasks) < least <= sum(t.kind == kind for t in asked.spec.tasks)
    assert len(asked.spec.tasks) == len(plain.tasks) == 8
    again = compile_world(bp, env_id="shop-tasks", seed=0, require_tasks=req)
    assert again.spec.to_json() == asked.spec.to_json()
    assert requirement_problems({"tasks": req}, asked.spec, executor="inprocess") == []


def test_every_builtin_skill_narrows_to_a_finite_grammar_and_says_it_in_world_terms() -> None:
    for skill in SkillLibrary(builtin_skills_dir()):
        schema = world_json_schema(skill.blueprint)
        assert max_completion_chars(schema) > 0
        text = needs_text(world_needs(skill.blueprint))
        assert text.startswith("The world must have ") and " status" not in text  # world kinds, not v1's
        for kind in ("get", "find", "list", "status"):
            assert f"kind {kind}" not in text


def test_requirements_without_a_schema_counterpart_are_asked_in_the_prompt_only() -> None:
    needs = world_needs({"rules": ["capacity", "unique", "required"]})
    assert not needs.operations and not needs.main and not needs.policy
    assert any("capacity" in a for a in needs.asked)
    assert world_json_schema({"rules": ["unique", "required"]}) == world_json_schema()  # every world has them
    assert "capacity" in needs_text(needs)


def _skill(**req: Any) -> Skill:
    return Skill(id="ledger-test", name="Ledger test", description="balances moved by adjustments",
                 rules=["Every adjustment is refused below zero.", "Show the new balance."], blueprint=req)


def test_the_world_prompt_carries_the_routed_skill_and_only_then() -> None:
    prop = LLMProposer("scripted", backend_options={"completions": []}, structure="world", n_examples=0)
    skill = _skill(operations=["adjust"], rules=["non_negative"])
    chat = prop.messages_for(JS, skill)
    user = chat[-1]["content"]
    assert "follows the skill 'Ledger test': balances moved by adjustments" in user
    assert "- Every adjustment is refused below zero." in user
    assert "operations that begin with one of kind adjust" in user
    assert user.index("Ledger test") < user.index(f"Document ({JS.path})")
    assert prop.messages_for(JS) == build_world_messages(JS, excerpt_tokens=prop.excerpt_tokens, n_examples=0,
                                                         counter=prop.backend.count_tokens)  # the warm start's
    assert "follows the skill" not in prop.messages_for(JS)[-1]["content"]
    assert prop.schema_for(skill) == world_json_schema({"operations": ["adjust"], "rules": ["non_negative"]})
    assert prop.schema_for(None) == world_json_schema()


def test_a_routed_skills_task_counts_reach_the_world_compiler() -> None:
    skill = _skill(tasks={"decline": 2})
    prop = LLMProposer("scripted", backend_options={"completions": [json.dumps(refusals_first(shop()))]},
                       structure="world", n_examples=0)
    [p] = prop.propose_batch([JS], seed=2, skills=[skill])
    assert p.spec is not None and sum(t.kind == "decline" for t in p.spec.tasks) >= 2
    assert requirement_problems(skill.blueprint, p.spec, executor="inprocess") == []


def test_skill_routed_worlds_decode_under_the_narrowed_schema_and_hold_on_the_compiled_spec() -> None:
    """Through the scripted backend, which refuses an answer the schema does not admit (as constrained decoding
    could not write it): the shop without an adjust operation first is refused for a ledger skill; with it, it
    compiles and the skill's requirements hold on the spec (the adjust tool refuses a balance below 0)."""
    skill = _skill(operations=["adjust"], rules=["non_negative"])
    lacking, having = shop(), op_first("adjust")(shop())
    prop = LLMProposer("scripted", backend_options={"completions": [json.dumps(lacking), json.dumps(having)]},
                       structure="world", n_examples=0)
    refused, kept = prop.propose_batch([JS, JS], seed=1, skills=[skill, skill])
    assert refused.spec is None and refused.meta["error_code"] == "generation" and "schema" in (refused.error or "")
    assert kept.spec is not None and kept.meta["skill_id"] == "ledger-test" and kept.meta["stream"] == "skill"
    assert requirement_problems(skill.blueprint, kept.spec, executor="inprocess") == []


def test_the_requirements_check_reads_a_worlds_adjust_tool() -> None:
    """A world's ``adjust`` tool computes ``new = rec["x"] + amount``, refuses it below the field's min (0) and
    above its max, and stores it back: the requirements check counts it as an adjust operation, a non-negative
    rule and, with a max, a range rule (the world DDL has no CHECK on numbers)."""
    w = shop()
    credit = next(f for f in w["entities"][0]["fields"] if f["name"] == "credit")
    spec = compile_world(WorldBlueprint.model_validate(w), env_id="shop-adjust", seed=0).spec
    have = structure_of(spec, executor="inprocess")
    assert have is not None and "adjust" in have["operations"] and "non_negative" in have["rules"]
    assert "range" not in have["rules"]
    credit["max"] = 50_000
    bounded = compile_world(WorldBlueprint.model_validate(w), env_id="shop-adjust", seed=0).spec
    assert "range" in (structure_of(bounded, executor="inprocess") or {})["rules"]
    # without the adjust tool and the stock effect (a line refused when stock would go below 0): neither
    ops = [o for o in shop()["operations"] if o["kind"] not in ("adjust", "create")]
    plain = compile_world(WorldBlueprint.model_validate({**shop(), "operations": ops}), env_id="shop-plain",
                          seed=0).spec
    assert requirement_problems({"operations": ["adjust"], "rules": ["non_negative"]}, plain,
                                executor="inprocess") == ["the skill needs a adjust operation; no tool does one",
                                                          "the skill needs a non_negative rule; the tables have none"]


def test_model_worlds_of_one_prompt_get_ids_of_their_own() -> None:
    """G proposals of one prompt (one document, one seed: a self-play group) that write different worlds are
    different environments: their ids differ; the same world written twice gets the same id."""
    other = {**shop(), "title": "Corner shop two"}
    prop = LLMProposer("scripted", backend_options={"completions": [json.dumps(shop()), json.dumps(other),
                                                                    json.dumps(shop())]},
                       structure="world", n_examples=0)
    a, b, c = prop.propose_batch([JS, JS, JS], seed=4)
    assert a.spec is not None and b.spec is not None and c.spec is not None
    assert a.spec.id != b.spec.id and a.spec.id == c.spec.id and a.spec.id.startswith("llm-world-")


def test_a_world_that_breaks_its_schema_says_where_and_how() -> None:
    """As a v1 blueprint's: each schema problem's place and type, what a report counts."""
    broken = shop()
    broken["entities"][0]["key"] = {"name": "email"}
    parsed = parse_world(json.dumps(broken))
    assert parsed.code == "schema" and {"loc": "entities.0.key.kind", "type": "missing"} in parsed.errors
    prop = LLMProposer("scripted", backend_options={"completions": [json.dumps(broken)]}, structure="world",
                       constrained=False, n_examples=0)
    [p] = prop.propose_batch([JS], seed=0)
    assert p.spec is None and p.meta["error_code"] == "blueprint_schema"
    assert p.meta["schema_errors"][0] == {"loc": "entities.0.key.kind", "type": "missing"}


def test_skills_are_induced_from_and_probed_on_worlds() -> None:
    """``selfplay.write_skills`` with the world structure: a skill is induced from a world environment (its world
    blueprint in the prompt, its structure in the skill's terms bounding the section it writes) and probed with
    worlds written under it; a probe world that lacks what the skill asks is refused by its narrowed schema, and
    the candidate with it."""
    from envgen.skills.authoring import SkillWriter

    spec = compile_world(store_world(), env_id="shop-induce", seed=0).spec
    req = {"operations": ["adjust"], "rules": ["non_negative"], "states": False,
           "tasks": {"execute": 0, "read": 0, "read_then_write": 0, "missing_parameter": 0, "decline": 0}}
    answer = json.dumps({"name": "Store credit", "description": "Credit that adjustments never take below zero.",
                         "tags": ["credit"], "rules": ["Refuse credit below zero."], "hints": ["Ask the amount."],
                         "blueprint": req}, separators=(", ", ": "))
    asked: list[Any] = []

    def writer(probe_world: World) -> SkillWriter:
        def completion(prompt: Any) -> str:
            asked.append(prompt)
            return answer if "library of skills" in prompt[0]["content"] else json.dumps(probe_world)

        prop = LLMProposer("scripted", backend_options={"completions": completion}, structure="world", n_examples=0)
        return SkillWriter(prop.backend, prop, probes=1, executor="inprocess")

    [kept] = writer(op_first("adjust")(shop())).induce([(spec, 0.5, store_world().to_json(), JS)], 0,
                                                       lambda name: "store-credit")
    assert kept.kept and kept.skill is not None and kept.skill.blueprint == {"operations": ["adjust"],
                                                                             "rules": ["non_negative"]}, kept.why
    assert '"blueprint_version": 2' in asked[0][-1]["content"]  # the world blueprint it came from
    assert "operations that begin with one of kind adjust" in asked[1][-1]["content"]  # the probe's world prompt
    [refused] = writer(op_first("update")(shop())).induce([(spec, 0.5, None, JS)], 0, lambda name: "store-credit")
    assert not refused.kept and "probe" in refused.why and "schema" in refused.why


@pytest.mark.parametrize("key", ["entities", "operations"])
def test_the_plain_world_schema_requires_what_every_world_needs_to_compile(key: str) -> None:
    """A compact world may leave a list at its empty default out, but a world without entities or operations
    never compiles (``no operation changes anything``): the decoding schema, skill or not, requires both,
    non-empty, and still admits the shipped world and its compact JSON."""
    for schema in (world_json_schema(), world_json_schema({"operations": ["adjust"]})):
        assert key in schema["required"] and schema["properties"][key]["minItems"] >= 1
        for world in ({k: v for k, v in shop().items() if k != key}, {**shop(), key: []}):
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate(world, schema)
    jsonschema.validate(shop(), world_json_schema())
    jsonschema.validate(json.loads(WorldBlueprint.model_validate(shop()).to_json()), world_json_schema())
    with pytest.raises(CompileError, match="no operation"):
        compile_world(WorldBlueprint.model_validate({**shop(), "operations": []}), env_id="shop-none", seed=0)

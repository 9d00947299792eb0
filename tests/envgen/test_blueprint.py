"""Blueprints: the format, the one compiler (with its recorded repairs), the AST writer, skills as
structure, grounding, and the blueprint stream of the llm proposer (scripted backend)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from corpora import Document, SelectConfig, load_corpus, select_documents
from envgen.blueprint import (
    Blueprint,
    CompileError,
    CompileOptions,
    blueprint_json_schema,
    compile_blueprint,
    grounding,
    parse_blueprint,
)
from envgen.blueprint.grounding import data_model_names, name_occurs
from envgen.gate import validate_spec
from envgen.proposers.template import derive_compiled
from envgen.proposers.template.writer import write_blueprint

DOC = Document.create('''\
"""Bank accounts: deposits, withdrawals and transfers in cents."""


class Account:
    def __init__(self, owner: str, balance_cents: int = 0, frozen: bool = False):
        self.owner = owner
        self.balance_cents = balance_cents
        self.frozen = frozen


class Bank:
    def open_account(self, owner: str) -> Account: ...
    def find_account(self, owner: str) -> Account: ...
    def deposit(self, owner: str, amount_cents: int) -> None: ...
    def close_account(self, owner: str) -> None: ...
''', corpus="mem", path="bank.py")

JS = Document.create('''\
class JobQueue {
  constructor(name) { this.name = name; this.jobs = []; this.paused = false; }
  addJob(title, priority) { this.jobs.push({ title, priority, state: 'waiting' }); }
  getJob(id) { return this.jobs[id]; }
  removeJob(id) { this.jobs.splice(id, 1); }
  pause() { this.paused = true; }
}
module.exports = JobQueue;
''', corpus="mem", path="queue.js")


def bp(**over: Any) -> Blueprint:
    """A hand-written blueprint of the JavaScript queue (what a model writes)."""
    data = {
        "blueprint_version": 1, "title": "Job queue", "summary": "Jobs wait in named queues until they run.",
        "entities": [
            {"name": "job", "description": "a unit of work", "key": "title",
             "fields": [{"name": "title", "type": "string", "description": "what to do"},
                        {"name": "priority", "type": "integer", "description": "lower runs first"}],
             "parent": "job_queue", "states": ["waiting", "active", "done"]},
            {"name": "job_queue", "description": "a named queue", "key": "name",
             "fields": [{"name": "name", "type": "string", "description": "queue name"},
                        {"name": "paused", "type": "boolean", "description": "stopped"}],
             "parent": None, "states": []},
        ],
        "operations": [
            {"kind": "create", "entity": "job", "name": "add_job", "field": None, "target": None,
             "description": "from JobQueue.addJob"},
            {"kind": "status", "entity": "job", "name": "finish_job", "field": None, "target": "done",
             "description": "marks it done"},
        ],
        "rules": [{"kind": "range", "entity": "job", "field": "priority", "min": 1, "max": 9, "values": []}],
        "tasks": {"execute": 1, "read": 2, "read_then_write": 1, "missing_parameter": 1, "decline": 1},
    }
    data.update(over)
    return Blueprint.model_validate(data)


def written_blueprints(n: int) -> list[Blueprint]:
    docs = select_documents(load_corpus("stdlib"), SelectConfig(min_stateful_score=0.0, sample=n, seed=5,
                                                                languages=("python",)))
    return [write_blueprint(d).blueprint for d in docs]


# -- format ------------------------------------------------------------------------------------------


def test_schema_is_strict_and_the_blueprint_round_trips():
    schema = blueprint_json_schema()
    assert schema["required"] == ["blueprint_version", "title", "summary", "entities", "operations", "rules",
                                  "tasks", "difficulty"]
    assert schema["additionalProperties"] is False
    b = bp()
    again = parse_blueprint(b.to_json())
    assert again.ok and again.blueprint == b
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(json.loads(b.to_json()), schema)


@pytest.mark.parametrize(("text", "code"), [
    ("I think the document manages books.", "no_json"),
    ('{"blueprint_version": 1, "title": ', "json_syntax"),
    ("[1, 2]", "no_json"),
    ('{"blueprint_version": 2}', "schema"),
])
def test_bad_blueprints_are_typed_failures(text, code):
    parsed = parse_blueprint(text)
    assert not parsed.ok and parsed.code == code and parsed.error


def test_skill_requirements_narrow_the_schema():
    schema = blueprint_json_schema({"operations": ["adjust"], "rules": ["non_negative"], "states": True,
                                    "tasks": {"decline": 2}})
    props = schema["properties"]
    assert props["operations"]["minItems"] == 1
    assert props["operations"]["prefixItems"][0]["properties"]["kind"]["const"] == "adjust"
    assert props["rules"]["prefixItems"][0]["properties"]["kind"]["const"] == "non_negative"
    assert props["entities"]["prefixItems"][0]["properties"]["states"]["minItems"] == 2
    assert props["tasks"]["properties"]["decline"]["minimum"] == 2
    jsonschema = pytest.importorskip("jsonschema")
    with pytest.raises(jsonschema.ValidationError):  # a blueprint without an adjust operation is not admitted
        jsonschema.validate(json.loads(bp().to_json()), schema)


# -- the compiler ------------------------------------------------------------------------------------


def test_compiled_model_blueprint_passes_the_gate_and_is_deterministic():
    a = compile_blueprint(bp(), JS, seed=3, created_at="2026-01-01T00:00:00+00:00")
    b = compile_blueprint(bp(), JS, seed=3, created_at="2026-01-01T00:00:00+00:00")
    assert a.spec.to_json() == b.spec.to_json()
    assert compile_blueprint(bp(), JS, seed=4).spec.to_json() != a.spec.to_json()
    assert validate_spec(a.spec, executor="inprocess").accepted
    names = {t.name for t in a.spec.tools}
    assert {"add_job", "finish_job"} <= names
    prio = a.spec.tool("add_job").parameters["properties"]["priority"]
    assert (prio["minimum"], prio["maximum"]) == (1, 9)  # the range rule reached the tool schema ...
    assert 'CHECK ("priority" >= 1 AND "priority" <= 9)' in a.spec.state.schema_sql  # ... and the DDL
    assert a.spec.provenance.generator == "llm:unknown" and a.spec.source.doc_id == JS.id


def test_repairs_are_recorded_not_silent():
    messy = bp(entities=[
        {"name": "jobs", "description": "", "key": "priority",
         "fields": [{"name": "id", "type": "integer", "description": ""},
                    {"name": "status", "type": "string", "description": ""},
                    {"name": "priority", "type": "integer", "description": ""},
                    {"name": "priority", "type": "integer", "description": ""}],
         "parent": "nowhere", "states": ["open"]},
        {"name": "job", "description": "", "key": "name", "fields": [], "parent": None, "states": []},
    ], operations=[{"kind": "update", "entity": "ghost", "name": None, "field": None, "target": None,
                    "description": ""},
                   {"kind": "create", "entity": "job", "name": "class", "field": None, "target": None,
                    "description": ""}],
        rules=[{"kind": "unique", "entity": "job", "field": "colour", "min": None, "max": None, "values": []}])
    c = compile_blueprint(messy, JS)
    text = "\n".join(c.repairs)
    for expected in ("renamed to 'job'", "a second entity named 'job'", "'id' is not usable",
                     "'status' renamed to 'state'", "duplicate or reserved name", "not a string field",
                     "is not another entity", "at least two states", "unknown entity 'ghost'",
                     "'class' is not a valid", "unknown field 'colour'", "added get tool"):
        assert expected in text, (expected, c.repairs)
    assert validate_spec(c.spec, executor="inprocess").accepted


def test_skill_requirements_are_compiler_options():
    plain = bp(operations=[], rules=[])
    c = compile_blueprint(plain, JS, options=CompileOptions(require={"operations": ["adjust"],
                                                                     "rules": ["non_negative"],
                                                                     "tasks": {"decline": 2}}))
    adjust = [t for t in c.spec.tools if t.name.startswith("adjust_")]
    assert adjust and "amount" in adjust[0].parameters["properties"]
    assert sum(t.kind == "decline" for t in c.spec.tasks) == 2
    assert any(r.startswith("skill:") for r in c.repairs)
    assert validate_spec(c.spec, executor="inprocess").accepted


def test_an_adjust_that_would_overdraw_is_refused():
    from gym_envs.sandbox import make_executor

    b = bp(entities=[{"name": "account", "description": "", "key": "owner",
                      "fields": [{"name": "balance", "type": "integer", "description": "cents"}],
                      "parent": None, "states": []}],
           operations=[{"kind": "adjust", "entity": "account", "name": "deposit", "field": "balance",
                        "target": None, "description": ""}],
           rules=[{"kind": "non_negative", "entity": "account", "field": "balance", "min": None, "max": None,
                   "values": []}])
    spec = compile_blueprint(b, DOC).spec
    ex = make_executor("inprocess")
    try:
        s = ex.session(spec)
        row = s.call("get_account", {"account_id": 1}).result
        refused = s.call("deposit", {"account_id": 1, "amount": -(row["balance"] + 1)})
        assert not refused.ok and "would go below 0" in (refused.error or "")
        assert s.call("get_account", {"account_id": 1}).result["balance"] == row["balance"]
        s.close()
    finally:
        ex.close()


def test_nothing_usable_is_a_compile_error():
    empty = bp(entities=[{"name": "sqlite", "description": "", "key": "name", "fields": [], "parent": None,
                          "states": []}], operations=[], rules=[])
    with pytest.raises(CompileError, match="no usable entity"):
        compile_blueprint(empty, JS)


# -- the AST writer and the template proposer ------------------------------------------------------------


def test_ast_writer_blueprints_validate_and_compile_to_the_template_spec():
    w = write_blueprint(DOC, seed=0)
    assert w.blueprint.entities[0].name == "account"
    assert {o.name for o in w.blueprint.operations} >= {"open_account", "find_account"}
    assert any(r.kind == "non_negative" for r in w.blueprint.rules)  # balance_cents reads as a count
    compiled = derive_compiled(DOC, 0, created_at="2026-01-01T00:00:00+00:00")
    assert compiled.blueprint == w.blueprint and compiled.spec.provenance.generator == "template:ast"
    assert len(compiled.blueprint.to_json()) * 5 < len(compiled.spec.to_json(indent=None))  # compact
    assert validate_spec(compiled.spec, executor="inprocess").accepted


def test_ast_writer_needs_python():
    from envgen.errors import TemplateError

    with pytest.raises(TemplateError, match="not parsable Python"):
        write_blueprint(JS)


# -- grounding -----------------------------------------------------------------------------------------


def test_grounding_counts_entity_and_field_names_found_in_the_document():
    spec = compile_blueprint(bp(), JS).spec
    names = data_model_names(spec.state.schema_sql)
    assert "jobs" in names and "priority" in names and "id" not in names and "job_queue_id" not in names
    g = grounding(spec, JS)
    assert 0.5 < g <= 1.0
    assert grounding(spec, "nothing in common here") == 0.0
    idents_words = ({"add_job", "job_queue"}, {"job", "queue", "add"})
    assert name_occurs("jobQueue", *idents_words) and name_occurs("job_queues", *idents_words)
    assert not name_occurs("invoice", *idents_words)


# -- the blueprint stream of the llm proposer ----------------------------------------------------------


def test_llm_blueprint_stream_compiles_what_the_model_writes():
    from envgen.proposers.llm import LLMProposer

    long_title = json.loads(bp().to_json())
    long_title["title"] = "A title far longer than the forty-eight characters a title may take"
    answers = [bp().to_json(), "not json at all", '{"title": "Job queue",', json.dumps(long_title)]
    p = LLMProposer("scripted", backend_options={"completions": answers}, structure="blueprint",
                    constrained=False)
    good, prose, cut, schema = p.propose_batch([JS, DOC, JS, DOC], seed=0)
    assert good.spec is not None and good.meta["structure"] == "blueprint" and "blueprint" in good.meta
    assert good.spec.provenance.generator == "llm:scripted"
    # a failure keeps the parse's own code: no JSON, broken JSON, or a valid object that breaks the schema
    assert prose.spec is None and prose.meta["error_code"] == "no_json"
    assert cut.spec is None and cut.meta["error_code"] == "json_syntax"
    assert schema.spec is None and schema.meta["error_code"] == "blueprint_schema"
    assert schema.meta["schema_errors"] == [{"loc": "title", "type": "string_pattern_mismatch"}]
    assert "schema_errors" not in prose.meta and "title" in (schema.error or "")
    # a repair that fixes the schema break, or breaks the JSON instead, leaves no stale schema problems behind
    fixed, broken = LLMProposer("scripted", backend_options={"completions": [bp().to_json(), "{"]},
                                structure="blueprint", constrained=False).repair_batch(
        [(schema, "shorten the title"), (schema, "shorten the title")], seed=1)
    assert fixed.spec is not None and "schema_errors" not in fixed.meta
    assert broken.meta["error_code"] == "json_syntax" and "schema_errors" not in broken.meta
    # constrained: the scripted backend plays a grammar, so an answer outside the schema is a backend error
    strict = LLMProposer("scripted", backend_options={"completions": ["prose"]}, structure="blueprint")
    assert strict.constrained
    out = strict.propose(JS)
    assert out.spec is None and out.meta["error_code"] == "generation"


def test_the_blueprint_prompt_shows_an_example_and_the_document():
    from envgen.proposers.template.prompt import build_blueprint_messages, example_blueprint

    system, user = build_blueprint_messages(JS)
    assert "blueprint" in system["content"] and "adjust" in system["content"]
    assert example_blueprint() in user["content"] and "addJob" in user["content"]
    assert user["content"].rstrip().endswith("Blueprint:")


def test_deepened_holder_name_starts_with_a_letter() -> None:
    """A main entity whose last word is a number (``ipv_32``) still gets a valid holder name (``ipv_group``)."""
    from envgen.blueprint.render.model import Column, Entity
    from envgen.blueprint.schema import NAME_RE
    from envgen.proposers.template.deepen import _add_holder

    main = Entity(name="ipv_32", key=Column("label", "TEXT"), columns=[])
    data = {"entities": [{"name": "ipv_32", "parent": None}]}
    ent = _add_holder(data, main, set(), max_tables=3)
    assert ent is not None and NAME_RE.match(ent["name"]) and ent["name"].startswith("ipv_")
    assert data["entities"][0]["parent"] == ent["name"]



def test_writer_bug_skips_the_document_with_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """An invalid blueprint from the AST writer is a TemplateError (the document is skipped), not a crash."""
    from envgen.errors import TemplateError
    from envgen.proposers.template import writer

    def broken(*a: object, **k: object) -> object:
        from envgen.blueprint.schema import Blueprint

        return Blueprint.model_validate({"blueprint_version": 1})

    monkeypatch.setattr(writer, "_blueprint", broken)
    src = "class Inventory:\n    def add_item(self, name, qty):\n        self.items[name] = qty\n" \
          "    def update_qty(self, name, qty):\n        self.items[name] = qty\n"
    with pytest.raises(TemplateError, match="invalid blueprint"):
        writer.write_blueprint(type("D", (), {"text": src, "id": "t:inv", "path": "inv.py"})())


def test_update_of_an_entity_with_only_its_key_is_dropped_not_a_crash() -> None:
    """A second entity whose only field is its key has nothing to update: the operation is dropped (a repair)."""
    from envgen.blueprint.compiler import compile_blueprint
    from envgen.blueprint.schema import parse_blueprint

    bp = {"blueprint_version": 1, "title": "Tags", "summary": "tags and their notes",
          "entities": [
              {"name": "note", "description": "a note", "key": "title",
               "fields": [{"name": "title", "type": "string", "description": "its title"},
                          {"name": "body", "type": "string", "description": "its text"}],
               "parent": None, "states": []},
              {"name": "tag", "description": "a tag", "key": "label",
               "fields": [{"name": "label", "type": "string", "description": "its name"}],
               "parent": None, "states": []}],
          "operations": [{"kind": "update", "entity": "tag", "name": "update_tag", "field": "color",
                          "target": None, "description": ""},
                         {"kind": "update", "entity": "note", "name": "update_note", "field": "body",
                          "target": None, "description": ""}],
          "rules": [], "difficulty": None,
          "tasks": {"execute": 1, "read": 1, "read_then_write": 0, "missing_parameter": 0, "decline": 0}}
    parsed = parse_blueprint(bp)
    assert parsed.ok, parsed.error
    assert parsed.blueprint is not None
    compiled = compile_blueprint(parsed.blueprint, JS)  # raised IndexError before
    assert any("no field besides its key" in r for r in compiled.repairs), compiled.repairs


def test_a_completed_tool_whose_name_is_taken_gets_a_free_one() -> None:
    """The model named tools of other kinds with every name the compiler would give the main entity's update
    (update_/set_/change_item_count). The compiler still adds the update, under a free name; it crashed in
    the H200 self-play run with StopIteration (the hard difficulty's distractors look for the update)."""
    from envgen.blueprint.compiler import compile_blueprint
    from envgen.blueprint.schema import parse_blueprint

    names = {"adjust": "update_item_count", "get": "set_item_count", "list": "change_item_count"}
    bp = {"blueprint_version": 1, "title": "Shop", "summary": "",
          "entities": [{"name": "item", "description": "", "key": "name", "parent": None, "states": [],
                        "fields": [{"name": "count", "type": "integer", "description": ""}]}],
          "operations": [{"kind": k, "entity": "item", "name": n, "field": "count", "target": None,
                          "description": ""} for k, n in names.items()],
          "rules": [], "difficulty": "hard",
          "tasks": {"execute": 1, "read": 1, "read_then_write": 1, "missing_parameter": 1, "decline": 1}}
    parsed = parse_blueprint(bp)
    assert parsed.blueprint is not None, parsed.error
    for seed in range(6):
        compiled = compile_blueprint(parsed.blueprint, DOC, seed=seed)
        tools = [t.name for t in compiled.spec.tools]
        assert len(tools) == len(set(tools)) and set(names.values()) <= set(tools)
        assert any(t.name.rsplit("_", 1)[-1] == "2" for t in compiled.spec.tools), tools  # the renamed update


def test_the_description_lists_each_tables_columns_without_empty_slots():
    from envgen.blueprint.compiler import _description
    from envgen.blueprint.render.model import Column, Entity, EnvModel

    base = Entity("base_transport", Column("name", "TEXT"), [])  # a table with its key column only
    job = Entity("job", Column("title", "TEXT"), [Column("priority", "INTEGER")], parent=base,
                 status=["waiting", "done"])
    model = EnvModel([base, job], [], "queue", "queue.js", "Queue", "")
    text = _description(bp(summary="Jobs wait in queues."), model, "queue.js")
    assert text == ("Jobs wait in queues. A simulated store of base transports (name), jobs (title, priority, "
                    "status), modelled on queue.js.")

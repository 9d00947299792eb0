"""The antecedent rule: a turn's "it" / "its" / "the same" must leave exactly one record it can mean."""

from __future__ import annotations

import copy
from typing import Any

from envgen.gate import antecedents
from envgen.gate.antecedents import antecedent_problems, scan
from gym_envs.spec import parse_spec

_SPEC: dict[str, Any] = {
    "id": "antecedents", "title": "Gadgets", "description": "gadgets",
    "state": {"schema_sql": "CREATE TABLE owners (id INTEGER PRIMARY KEY, email TEXT UNIQUE);\n"
                            "CREATE TABLE gadgets (id INTEGER PRIMARY KEY, code TEXT UNIQUE, colour TEXT);",
              "seed_sql": "INSERT INTO owners VALUES (1, 'ada@example.com');\n"
                          "INSERT INTO gadgets VALUES (1, 'GDG-1001', 'red'), (2, 'GDG-1002', 'blue'), "
                          "(3, 'GDG-1003', 'green');"},
    "tools": [{"name": "paint", "description": "Paint a gadget.", "parameters": {
        "type": "object", "properties": {"code": {"type": "string"}, "colour": {"type": "string"}},
        "required": ["code", "colour"]}}],
    "code": "def paint(db, code, colour):\n"
            "    db.execute('UPDATE gadgets SET colour = ? WHERE code = ?', [colour, code])\n"
            "    return {'code': code, 'colour': colour}\n",
    "tasks": [{"id": "t0", "kind": "execute", "turns": [
        {"instruction": "I'm ada@example.com. Paint GDG-1001 black.",
         "checks": [{"kind": "sql", "query": "SELECT colour FROM gadgets WHERE code = 'GDG-1001'",
                     "expect": [["black"]]}],
         "reference": [{"name": "paint", "arguments": {"code": "GDG-1001", "colour": "black"}}]},
        {"instruction": "Now paint it white instead.",
         "checks": [{"kind": "sql", "query": "SELECT colour FROM gadgets WHERE code = 'GDG-1001'",
                     "expect": [["white"]]}],
         "reference": [{"name": "paint", "arguments": {"code": "GDG-1001", "colour": "white"}}]}]}],
}


def _spec(first: str | None = None, extra_call: bool = False, second: str | None = None) -> Any:
    d = copy.deepcopy(_SPEC)
    t0, t1 = d["tasks"][0]["turns"]
    if first is not None:
        t0["instruction"] = first
    if extra_call:
        t0["reference"].append({"name": "paint", "arguments": {"code": "GDG-1002", "colour": "black"}})
        t0["checks"].append({"kind": "sql", "query": "SELECT colour FROM gadgets WHERE code = 'GDG-1002'",
                             "expect": [["black"]]})
    if second is not None:
        t1["instruction"] = second
    return parse_spec(d)


def test_one_record_named_and_changed_is_a_clear_antecedent():
    assert antecedent_problems(_spec()) == []


def test_two_records_named_before_it_are_ambiguous():
    problems = antecedent_problems(_spec(first="I'm ada@example.com. Paint GDG-1001 black, not GDG-1003."))
    assert len(problems) == 1 and "'it' could mean any of 2 records of gadgets" in problems[0]


def test_two_records_changed_before_it_are_ambiguous():
    problems = antecedent_problems(_spec(extra_call=True))
    assert problems and "turn 2" in problems[0]


def test_a_record_named_in_the_same_turn_before_the_word_is_the_antecedent():
    spec = _spec(extra_call=True, second="What about GDG-1002? Paint that one white.")
    assert antecedent_problems(spec) == []


def test_the_speaker_is_never_it():
    """The email the user gives for themselves names a person, which "it" never means."""
    assert antecedent_problems(_spec(first="I'm ada@example.com, please paint GDG-1001 black.")) == []


def test_scan_counts_turns_that_refer_back_and_the_ambiguous_ones():
    refer, ambiguous, shown = scan([_spec(), _spec(extra_call=True)])
    assert (refer, ambiguous) == (2, 1) and shown and shown[0].startswith("antecedents:")


def test_the_gate_rejects_an_ambiguous_antecedent_as_rule_10():
    from envgen.gate import validate_spec

    good = validate_spec(_spec(), executor="inprocess")
    bad = validate_spec(_spec(extra_call=True), executor="inprocess")
    assert not any(r.rule == 10 for r in good.reasons)
    assert not bad.accepted and any(r.rule == 10 and r.code == "antecedent" for r in bad.reasons)


def test_tables_a_turn_leaves_as_they_were_are_not_dumped_again(monkeypatch: Any) -> None:
    """The rule asks the engine for each turn's tables with the digests of the dumps it holds, so a table a turn did
    not change comes back as "the same" (and the start state is dumped once for tasks with the same setup); what it
    finds is what dumping every table gives."""
    from envgen.world.compile import compile_world
    from gym_envs.sandbox.host import Session
    from tests.envgen.world.store_world import store_world

    world = compile_world(store_world(), env_id="antecedent-dumps", seed=3).spec
    specs = [_spec(), _spec(extra_call=True), world]
    dump = Session.dump
    rows: list[int] = []

    def counted(self: Session, tables: Any = None, limit: int = 50, **kw: Any) -> dict[str, Any]:
        out = dump(self, tables, limit, **kw)
        rows.append(sum(len(d.get("rows", ())) for d in out.values()))
        return out

    def every_table(self: Session, tables: Any = None, limit: int = 50, **kw: Any) -> dict[str, Any]:
        return counted(self, tables, limit)

    monkeypatch.setattr(Session, "dump", counted)
    found = [antecedents._antecedent_problems(s, None) for s in specs]
    held = sum(rows)
    rows.clear()
    monkeypatch.setattr(Session, "dump", every_table)
    assert [antecedents._antecedent_problems(s, None) for s in specs] == found
    assert found[1] and held < sum(rows) / 2


def test_what_the_rule_found_for_a_spec_is_kept(monkeypatch: Any) -> None:
    """A compiler's pass over a spec, then the gate's: the second finds the first's problems without playing the
    tasks again; a spec that differs in what the rule reads (a task's text, the seed) is played."""
    from gym_envs.sandbox.inprocess import InProcessExecutor

    monkeypatch.setattr(antecedents, "_FOUND", type(antecedents._FOUND)())
    opened: list[int] = []
    session = InProcessExecutor.session

    def counted(self: InProcessExecutor, *args: Any, **kw: Any) -> Any:
        opened.append(1)
        return session(self, *args, **kw)

    monkeypatch.setattr(InProcessExecutor, "session", counted)
    bad = _spec(extra_call=True)
    first = antecedent_problems(bad)
    assert first and len(opened) == 1
    assert antecedent_problems(parse_spec(bad.model_dump(mode="json"))) == first and len(opened) == 1
    assert antecedent_problems(_spec(extra_call=True, second="Now paint GDG-1001 white.")) == []  # no "it"
    d = bad.model_dump(mode="json")
    d["state"]["seed_sql"] += "\nINSERT INTO gadgets VALUES (4, 'GDG-1004', 'red');"
    assert antecedent_problems(parse_spec(d)) == first and len(opened) == 2

"""The check-kind registry: a kind registered in a test flows through the spec, scoring, show, the inspector, the
prompt, the gate, evaluation's tags, the decoding schema and the version 1 schema, each through the kind's own class;
names are validated, unknown kinds refused with the kinds listed."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any, ClassVar, Literal

import pytest
from click.testing import CliRunner

from corpora.errors import RegistryError
from envgen.cli import cli
from envgen.gate import validate_spec
from envgen.inspect.collect import collect_env
from envgen.prompts import build_messages, spec_system_prompt
from envgen.structure import spec_decoding_schema, spec_from_decoded
from eval.suites.generated import turn_tags
from gym_envs.checks import (
    CHECKS,
    BaseCheck,
    Cost,
    Probe,
    TurnView,
    Verdict,
    check_kind,
    kind_names,
    parse_check,
    register_check,
)
from gym_envs.checks import unregister_check as unregister
from gym_envs.cli import check_summary
from gym_envs.env import ToolEnv
from gym_envs.spec import SpecError, parse_spec
from gym_envs.spec_schema import json_schema
from tests.cli.specs import lending_spec, write_spec


class RowCountCheck(BaseCheck):
    """A toy kind: a table holds ``count`` rows (it reads the state through a ``sql`` probe)."""

    kind: Literal["row_count"] = "row_count"
    table: str
    count: int

    prompt: ClassVar[str] = '{"kind": "row_count", "table": "t", "count": 3}: table t holds 3 rows'
    cost: ClassVar[Cost] = "cheap"

    def probes(self, view: TurnView) -> list[Probe]:
        return [{"sql": f'SELECT count(*) FROM "{self.table}"'}]

    def verdict(self, view: TurnView, answers: list[Any]) -> Verdict:
        got = answers[0][0][0]
        return Verdict(got == self.count, f"{self.table} holds {got} rows")

    def summary(self) -> str:
        return f"{self.table} holds {self.count} rows"


@pytest.fixture
def toy() -> Iterator[type[BaseCheck]]:
    register_check(RowCountCheck)
    try:
        yield RowCountCheck
    finally:
        unregister("row_count")


def _toy_spec() -> dict[str, Any]:
    """The lending spec with the toy kind in place of its borrow turn's count of every loan."""
    spec = lending_spec()
    spec["tasks"][0]["turns"][0]["checks"][1] = {"kind": "row_count", "table": "loans", "count": 2}
    return spec


def test_built_in_kinds_are_registered_in_one_place_in_prompt_order() -> None:
    assert kind_names()[:5] == ["sql", "reply_contains", "unchanged", "calls", "python"]
    assert {"state", "confirmed", "calls_per_message", "judged"} <= set(kind_names())
    assert kind_names(1) == ["sql", "reply_contains", "unchanged", "calls", "python"]
    assert all(check_kind(n).model_fields["kind"].default == n for n in kind_names())


def test_an_unknown_kind_is_refused_naming_the_kinds_and_the_closest() -> None:
    with pytest.raises(ValueError, match=r"unknown check kind 'reply_contain'.*reply_contains"):
        parse_check({"kind": "reply_contain", "any_of": ["x"]})
    spec = lending_spec()
    spec["tasks"][0]["turns"][0]["checks"][0]["kind"] = "regex"
    with pytest.raises(SpecError, match=r"tasks\[0\]\.turns\[0\]\.checks\[0\]: unknown check kind 'regex'"):
        parse_spec(spec)


def test_registration_refuses_a_taken_name_and_a_class_without_a_kind() -> None:
    class Again(BaseCheck):
        kind: Literal["sql"] = "sql"

    with pytest.raises(RegistryError, match="already registered"):
        register_check(Again)

    class Nameless(BaseCheck):
        pass

    with pytest.raises(TypeError, match="needs a default"):
        register_check(Nameless)


def test_a_registered_kind_flows_through_spec_scoring_show_prompt_and_gate(toy: type[BaseCheck],
                                                                           tmp_path: Any) -> None:
    assert "row_count" in CHECKS and "row_count" in kind_names()
    spec = parse_spec(_toy_spec())
    check = spec.tasks[0].turns[0].checks[1]
    assert isinstance(check, RowCountCheck)
    assert json.loads(spec.to_json())["tasks"][0]["turns"][0]["checks"][1] == {"kind": "row_count",
                                                                               "table": "loans", "count": 2}
    # scoring: ToolEnv judges it on the state after the turn (the lending reference adds a loan)
    env = ToolEnv(spec, spec.tasks[0].id, executor="inprocess")
    env.reset(seed=0)
    _, _, _, _, info = env.step("Nothing.")
    assert info["checks"][1] == {"index": 1, "kind": "row_count", "passed": False, "detail": "loans holds 1 rows"}
    env.close()
    # show, the one-line summary, the schema
    assert check_summary({"kind": "row_count", "table": "loans", "count": 2}) == "loans holds 2 rows"
    path = write_spec(tmp_path / "toy.json", _toy_spec())
    shown = CliRunner().invoke(cli, ["show", "--executor", "inprocess", str(path)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "row_count: loans holds 2 rows" in shown.output
    assert "row_count" in json.dumps(json_schema()["$defs"]["Turn"])
    # the inspector's page shows its summary and its full text
    page = collect_env(spec, gate_mode="none")
    shown_check = page.tasks[0]["turns"][0]["checks"][1]
    assert shown_check["kind"] == "row_count" and shown_check["summary"] == "loans holds 2 rows"
    assert json.loads(shown_check["detail"]) == {"table": "loans", "count": 2}
    # the proposer's prompt lists it
    assert toy.prompt in spec_system_prompt()
    assert toy.prompt in build_messages(None, examples=[])[0]["content"]
    # the gate kills mutants through it (cheap, catches by default) and accepts the spec
    verdict = validate_spec(copy.deepcopy(_toy_spec()), executor="inprocess")
    assert verdict.accepted, verdict.reasons
    assert any("(row_count) failed" in m["detail"] for m in verdict.mutations if m["outcome"] == "killed")


def test_without_the_kind_registered_the_spec_is_refused() -> None:
    with pytest.raises(SpecError, match="unknown check kind 'row_count'"):
        parse_spec(_toy_spec())


class ReplyNamesCheck(BaseCheck):
    """A toy kind that reads the agent's message: the reply names ``name`` (its :meth:`answers`, so the gate's oracle
    says it, reply mutants are played against it and its string must be distinctive)."""

    kind: Literal["reply_names"] = "reply_names"
    name: str

    prompt: ClassVar[str] = '{"kind": "reply_names", "name": "x"}: the reply names x'

    def verdict(self, view: TurnView, answers: list[Any]) -> Verdict:
        named = self.name.lower() in view.reply.lower()
        return Verdict(named, f"the reply {'names' if named else 'does not name'} {self.name!r}")

    def answers(self) -> list[str]:
        return [self.name]


class NoLoansCheck(BaseCheck):
    """A toy kind that forbids a tool (its :meth:`forbidden_tools`) and carries a program decoded as lines and a field
    only version 2 has (its :attr:`decoded_lines` and :meth:`version_1_schema`)."""

    kind: Literal["no_lending"] = "no_lending"
    program: str = ""
    strict: bool = False

    decoded_lines: ClassVar[dict[str, int]] = {"program": 4}

    def verdict(self, view: TurnView, answers: list[Any]) -> Verdict:
        lent = [c for c in view.calls if c.name == "borrow_book"]
        return Verdict(not lent, "borrowed" if lent else "no loan")

    def forbidden_tools(self) -> list[str]:
        return ["borrow_book"]

    @classmethod
    def version_1_schema(cls, schema: dict[str, Any]) -> None:
        schema["properties"].pop("strict", None)


def _kind_node(schema: Any, kind: str) -> dict[str, Any]:
    """The object schema of check kind ``kind`` within ``schema`` (the decoding schema inlines its definitions)."""
    if isinstance(schema, dict):
        if schema.get("properties", {}).get("kind", {}).get("const") == kind:
            return schema
        schema = list(schema.values())
    for v in schema if isinstance(schema, list) else []:
        try:
            return _kind_node(v, kind)
        except LookupError:
            pass
    raise LookupError(kind)


@pytest.fixture
def kinds() -> Iterator[None]:
    register_check(ReplyNamesCheck)
    register_check(NoLoansCheck)
    try:
        yield
    finally:
        unregister("reply_names")
        unregister("no_lending")


def _author_spec(name: str) -> dict[str, Any]:
    """The lending spec whose author question is checked by the toy reply kind (and forbids lending)."""
    spec = lending_spec()
    spec["tasks"][1]["turns"][0]["checks"] = [{"kind": "reply_names", "name": name},
                                              {"kind": "unchanged", "tables": []},
                                              {"kind": "no_lending", "program": "a\nb"}]
    return spec


def test_a_kind_that_reads_the_reply_is_answered_by_the_oracle_and_kills_reply_mutants(kinds: None) -> None:
    verdict = validate_spec(_author_spec("Joyce"), executor="inprocess")
    assert verdict.accepted, verdict.reasons
    killed = [m for m in verdict.mutations if m["outcome"] == "killed" and "(reply_names) failed" in m["detail"]]
    assert killed, verdict.mutations
    # scoring: the reply that names the author passes, the one that does not fails
    spec = parse_spec(_author_spec("Joyce"))
    for reply, passed in (("It is James Joyce.", True), ("Frank Herbert.", False)):
        env = ToolEnv(spec, "author", executor="inprocess")
        env.reset(seed=0)
        _, _, _, _, info = env.step(reply)
        assert info["checks"][0]["kind"] == "reply_names" and info["checks"][0]["passed"] is passed
        env.close()


def test_a_kinds_answer_must_be_distinctive(kinds: None) -> None:
    verdict = validate_spec(_author_spec("Ulysses"), executor="inprocess")
    assert not verdict.accepted
    assert any("'Ulysses' is contained in the instruction" in r.message for r in verdict.reasons), verdict.reasons


def test_a_kinds_forbidden_tools_tag_the_turn_and_its_lines_shape_decoding(kinds: None) -> None:
    spec = parse_spec(_author_spec("Joyce"))
    assert spec.tasks[1].turns[0].checks[2].forbidden_tools() == ["borrow_book"]
    decline = spec.model_copy(deep=True)
    decline.tasks[1].kind = "decline"
    decline.tasks[1].turns[0].reference = []
    assert turn_tags(decline, decline.tasks[1]) == [{"role": "decline", "write_tools": ["borrow_book"]}]
    # the free stream decodes its program as lines (and joins them back); version 1 has no 'strict'
    node = _kind_node(spec_decoding_schema(), "no_lending")["properties"]
    assert node["program"]["type"] == "array" and node["program"]["maxItems"] == 4
    assert "strict" not in node and "strict" not in json_schema(1)["$defs"]["NoLoansCheck"]["properties"]
    assert "strict" in json_schema()["$defs"]["NoLoansCheck"]["properties"]
    assert spec_from_decoded({"kind": "no_lending", "program": ["x = 1", "y = 2"]}) == {"kind": "no_lending",
                                                                                       "program": "x = 1\ny = 2"}

"""The check-kind registry: a kind registered in a test flows through the spec, scoring, show, the prompt and the
gate; names are validated, unknown kinds refused with the kinds listed."""

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
from envgen.prompts import build_messages, spec_system_prompt
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
from gym_envs.spec import SpecError, json_schema, parse_spec
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

"""The spec owns the naming rules (gym_envs/ENVSPEC.md validity rule 8) and checks parameter schemas as JSON Schema.

A tool named like an adapter's own member (``reset``), a parameter that is a keyword (``from``), a
name the sandbox or TRL hides (``_x``) or a parameter schema with ``"type": "strng"`` used to pass the
gate and break an adapter (or reach a model through ``tools=``) later; now parsing refuses each with
the field, the tool and what to do.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gym_envs.spec import (
    MCP_CONTROL_TOOLS,
    RESERVED_PARAMETER_NAMES,
    RESERVED_TOOL_NAMES,
    SpecError,
    name_problem,
    naming_problems,
    parse_spec,
)
from tests.fixtures.library_spec import SPEC


def _refused(change: Any) -> str:
    data = copy.deepcopy(SPEC)
    change(data)
    with pytest.raises(SpecError) as err:
        parse_spec(data)
    return str(err.value)


def _tool(data: dict[str, Any], i: int = 0) -> dict[str, Any]:
    return data["tools"][i]


@pytest.mark.parametrize("name", ["reset", "get_reward", "env", *MCP_CONTROL_TOOLS, "envwright_anything",
                                  "_private", "class", "lambda", "with-dash", "9lives", "ünïcode"])
def test_bad_tool_names_are_refused_at_parse_time(name: str) -> None:
    text = _refused(lambda d: _tool(d).update(name=name))
    assert "tools[0].name" in text and repr(name) in text


@pytest.mark.parametrize("param", ["from", "class", "self", "db", "_hidden", "two words"])
def test_bad_parameter_names_are_refused_with_the_tool(param: str) -> None:
    text = _refused(lambda d: _tool(d, 1)["parameters"]["properties"].update({param: {"type": "string"}}))
    assert "tools[1].parameters" in text and "tool 'borrow_book'" in text and repr(param) in text


def test_parameter_schemas_are_valid_json_schema() -> None:
    text = _refused(lambda d: _tool(d, 1)["parameters"]["properties"]["member_id"].update(type="strng"))
    assert "tools[1].parameters: tool 'borrow_book': not a valid JSON Schema" in text
    assert "parameters.properties.member_id.type: 'strng' is not valid" in text
    text = _refused(lambda d: _tool(d, 0)["parameters"]["properties"]["title"].update(minLength="one"))
    assert "tool 'find_book'" in text and "parameters.properties.title.minLength" in text
    text = _refused(lambda d: _tool(d, 2)["parameters"].update(additionalProperties="no"))
    assert "tool 'list_loans'" in text and "parameters.additionalProperties" in text


def test_good_names_and_schemas_parse_and_the_lists_are_one_set() -> None:
    spec = parse_spec(copy.deepcopy(SPEC))
    assert naming_problems(spec) == []
    assert {"reset", "envwright_reset", "envwright_end_turn"} <= RESERVED_TOOL_NAMES
    assert {"db", "self"} == RESERVED_PARAMETER_NAMES
    assert name_problem("match") is None and name_problem("type", parameter=True) is None  # soft keywords are fine
    spec.tools[0].name = "envwright_tasks"  # not validated on assignment: what an adapter may still meet
    assert naming_problems(spec) == ["tool name 'envwright_tasks' is reserved by the MCP server (an episode-control "
                                     "tool)"]


def test_the_gate_reports_names_and_schemas_under_rule_8() -> None:
    from envgen.gate import validate_spec

    data = copy.deepcopy(SPEC)
    data["tools"][1]["parameters"]["properties"]["member_id"]["type"] = "strng"
    data["tools"][2]["parameters"]["properties"]["from"] = {"type": "string"}
    verdict = validate_spec(data, executor="inprocess")
    assert not verdict.accepted and verdict.codes == ["name", "parameter_schema"]
    assert str(verdict.reasons[0]).startswith("rule 8 (names): tools[1].parameters: tool 'borrow_book'")
    data = copy.deepcopy(SPEC)
    data["tools"][2]["parameters"]["properties"]["from"] = {"type": "string"}
    assert validate_spec(data, executor="inprocess").codes == ["name"]

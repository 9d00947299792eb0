"""spec_version 2: a policy, the rules each task tests, state checks; v1 documents still read unchanged."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from gym_envs.checks import StateCheck, TurnView
from gym_envs.checks.text import reply_contains
from gym_envs.env import ToolEnv, system_prompt
from gym_envs.spec import SpecError, parse_spec

EXAMPLE = Path(__file__).resolve().parents[2] / "gym_envs" / "examples" / "library-loans.json"


def _v1() -> dict:
    return json.loads(EXAMPLE.read_text())


def test_a_v1_document_reads_unchanged():
    spec = parse_spec(_v1())
    assert spec.spec_version == 1 and spec.policy == [] and all(t.policy == [] for t in spec.tasks)


def test_a_v1_document_that_uses_a_v2_field_is_refused_saying_so():
    d = _v1()
    d["policy"] = [{"text": "Be kind."}]
    with pytest.raises(SpecError, match="set spec_version to 2"):
        parse_spec(d)
    d["spec_version"] = 2
    assert parse_spec(d).policy[0].enforced == "policy"


def test_a_task_names_only_rules_the_policy_has():
    d = _v1()
    d.update(spec_version=2, policy=[{"text": "Be kind.", "enforced": "policy"}])
    d["tasks"][0]["policy"] = [2]
    with pytest.raises(SpecError, match=r"rules \[2\]"):
        parse_spec(d)


def test_an_unknown_version_is_refused_naming_the_versions_this_reader_knows():
    d = _v1()
    d["spec_version"] = 3
    with pytest.raises(SpecError, match="knows 1, 2"):
        parse_spec(d)


def test_the_system_prompt_states_the_numbered_policy():
    d = _v1()
    d.update(spec_version=2, policy=[{"text": "Never waive a fine."}, {"text": "Ask before renewing.",
                                                                        "enforced": "tool"}])
    prompt = system_prompt(parse_spec(d))
    assert "Policy:\n1. Never waive a fine.\n2. Ask before renewing." in prompt


def test_a_state_check_passes_on_the_state_the_reference_reaches_and_fails_elsewhere():
    d = _v1()
    spec = parse_spec(d)
    task = spec.tasks[0]
    env = ToolEnv(spec, task=task.id, executor="inprocess")
    env.reset(seed=0)
    for call in task.turns[0].reference:
        env.step({"content": "", "tool_calls": [call.model_dump()]})
    digests = env.session.digest()["tables"]
    env.close()
    d2 = copy.deepcopy(d)
    d2["spec_version"] = 2
    d2["tasks"][0]["turns"][0]["checks"] = [{"kind": "state", "digests": digests}]
    spec2 = parse_spec(d2)
    env = ToolEnv(spec2, task=task.id, executor="inprocess")
    env.reset(seed=0)
    for call in task.turns[0].reference:
        env.step({"content": "", "tool_calls": [call.model_dump()]})
    _, _, _, _, info = env.step("Done.")
    assert info["checks"][0]["kind"] == "state" and info["checks"][0]["passed"]
    env.reset(seed=0)
    _, _, _, _, info = env.step("Done.")  # doing nothing: another state
    env.close()
    assert not info["checks"][0]["passed"] and "books" in info["checks"][0]["detail"] + str(digests)


def test_a_state_digest_must_be_a_sha256():
    d = _v1()
    d["spec_version"] = 2
    d["tasks"][0]["turns"][0]["checks"] = [{"kind": "state", "digests": {"books": "abc"}}]
    with pytest.raises(SpecError, match="SHA-256"):
        parse_spec(d)


def test_the_state_check_compares_each_named_table():
    check = StateCheck(digests={"a": "1" * 64, "b": "2" * 64})
    assert check.probes(TurnView()) == [{"digests": ["a", "b"]}]
    v = check.verdict(TurnView(), [{"a": "1" * 64, "b": "3" * 64}])
    assert not v.passed and "['b']" in v.detail


def test_numbers_may_be_written_as_whole_words_in_a_reply():
    assert reply_contains("You have three pending orders.", "3")
    assert reply_contains("Just one.", "1")
    assert not reply_contains("Someone will call.", "1") and not reply_contains("Done.", "1")
    assert not reply_contains("You have thirty orders.", "3")


def test_failed_calls_is_a_v2_option_rollback_by_default_with_a_clear_error_for_other_values():
    d = _v1()
    assert parse_spec(d).failed_calls == "rollback"
    d["failed_calls"] = "keep"
    with pytest.raises(SpecError, match="spec_version 1 has no 'failed_calls': set spec_version to 2"):
        parse_spec(d)
    d["spec_version"] = 2
    assert parse_spec(d).failed_calls == "keep"
    for bad in ("keeps", "Rollback", None, 1, ["keep"]):
        d["failed_calls"] = bad
        with pytest.raises(SpecError) as info:
            parse_spec(d)
        text = str(info.value)
        assert f"failed_calls: {bad!r} is not a mode" in text and "'rollback'" in text and "'keep'" in text, text


def test_the_json_schema_lists_the_failed_call_modes_in_version_2_only():
    from gym_envs.spec_schema import json_schema

    prop = json_schema()["properties"]["failed_calls"]
    assert prop["enum"] == ["rollback", "keep"] and prop["default"] == "rollback"
    assert "failed_calls" not in json_schema(1)["properties"]


def test_what_this_project_writes_of_a_v1_spec_is_valid_under_the_v1_schema_and_reads_back_the_same():
    """The dump holds version 2 fields at their defaults (``policy: []``, ``failed_calls``, a calls check's
    ``ordered``, a reply check's ``scope``): a version 1 reader, which knows only the v1 schema, refused them."""
    import jsonschema

    from gym_envs.examples import list_examples, load_example
    from gym_envs.spec_schema import json_schema

    v1 = [s for s in (load_example(n) for n in list_examples()) if s.spec_version == 1]
    assert v1
    for spec in v1:
        for indent in (None, 2):
            doc = json.loads(spec.to_json(indent=indent))
            jsonschema.validate(doc, json_schema(1))
            assert "policy" not in doc and "failed_calls" not in doc
            assert parse_spec(doc) == spec

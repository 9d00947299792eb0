"""Loading BFCL v4 multi-turn entries: shapes, tool format, withheld functions."""

from __future__ import annotations

import pytest

pytest.importorskip("bfcl_eval")

from eval.bfcl import MULTI_TURN_CATEGORIES, BfclEntry, load_entries, load_entry
from eval.bfcl._backend import bfcl
from eval.bfcl.data import PYTHON_SYNTAX_HINT

_OPENAI_TYPES = {"string", "number", "integer", "boolean", "array", "object"}


def _types(schema: dict) -> list[str]:
    found = [schema["type"]] if "type" in schema else []
    for sub in schema.get("properties", {}).values():
        found += _types(sub)
    if isinstance(schema.get("items"), dict):
        found += _types(schema["items"])
    return found


@pytest.mark.parametrize("category", MULTI_TURN_CATEGORIES)
def test_category_loads_with_ground_truth(category: str) -> None:
    entries = load_entries(category)
    assert len(entries) == 200
    assert len({e.id for e in entries}) == len(entries)
    for entry in entries:
        assert entry.category == category
        assert entry.id.startswith(category + "_")
        assert entry.num_turns == len(entry.ground_truth) > 0
        assert all(messages and messages[0]["role"] == "user" for messages in entry.turns)
        assert set(entry.involved_classes) <= set(bfcl().class_file_path_mapping)
        assert all(isinstance(call, str) for turn in entry.ground_truth for call in turn)
    assert (category == "multi_turn_miss_func") == all(e.missed_function for e in entries)
    assert entries[0].long_context == (category == "multi_turn_long_context")


def test_functions_are_openai_format() -> None:
    entry = load_entry("multi_turn_base_0")
    assert [f["name"] for f in entry.functions][:2] == ["authenticate_twitter", "comment"]
    for doc in entry.functions:
        assert set(doc) == {"name", "description", "parameters"}
        assert doc["parameters"]["type"] == "object"
        assert set(_types(doc["parameters"])) <= _OPENAI_TYPES
        assert doc["description"].endswith(PYTHON_SYNTAX_HINT)


def test_withheld_functions_appear_at_their_turn() -> None:
    entry = load_entry("multi_turn_miss_func_0")
    assert entry.missed_function == {3: ["sort"]}
    names = [[f["name"] for f in entry.functions_for_turn(t)] for t in range(entry.num_turns)]
    assert all("sort" not in turn for turn in names[:3])
    assert names[3][-1] == "sort" and names[4] == names[3]
    assert entry.withheld_at(2) == {"sort"} and entry.withheld_at(3) == frozenset()
    assert entry.turns[3] == [{"role": "user", "content": bfcl().additional_function_prompt}]
    assert entry.is_holdout_turn(3) and not entry.is_holdout_turn(2)
    assert entry.ground_truth[2] == []  # the model cannot sort yet
    revealed = entry.functions_for_turn(3)[-1]
    assert not revealed["description"].endswith(PYTHON_SYNTAX_HINT)  # as in BFCL


def test_loading_options_and_independence() -> None:
    first = load_entries("multi_turn_base", limit=3)
    assert [e.id for e in first] == ["multi_turn_base_0", "multi_turn_base_1", "multi_turn_base_2"]
    picked = load_entries("multi_turn_base", ids=["multi_turn_base_7", "multi_turn_base_3"])
    assert [e.id for e in picked] == ["multi_turn_base_3", "multi_turn_base_7"]
    assert isinstance(load_entry("multi_turn_long_context_5"), BfclEntry)
    first[0].initial_config.clear()
    first[0].functions[0]["description"] = "changed"
    again = load_entry("multi_turn_base_0")
    assert again.initial_config and again.functions[0]["description"] != "changed"
    with pytest.raises(ValueError, match="not in"):
        load_entries("multi_turn_base", ids=["multi_turn_base_9999"])
    with pytest.raises(ValueError, match="did you mean 'multi_turn_miss_func'"):
        load_entries("multi_turn_miss_fun")

"""A tool's description states its rules for every record: none of the placeholders its code fills from one record
at run time (``{state}``, ``{key}``), and states said in words, over 40 generated worlds."""

from __future__ import annotations

import re

from envgen.world.model import Condition
from envgen.world.render import _rule_text
from tests.envgen.world.library40 import library40


def test_no_description_of_40_generated_worlds_shows_a_placeholder_or_a_code_name() -> None:
    rules = 0
    for built in library40():
        states = {s for e in built.blueprint.entities for s in e.states if "_" in s}
        for tool in built.spec.tools:
            text = tool.description
            assert not re.search(r"\{[a-z_]+\}", text), (tool.name, text)
            if "Refused when:" in text:
                rules += 1
                said = text.split("Refused when:", 1)[1]
                assert not [s for s in states if re.search(rf"\b{s}\b", said)], (tool.name, text)
    assert rules >= 40  # the check reads the rules of many tools, not of a corner of the library


def test_a_state_placeholder_is_said_as_the_states_the_guard_allows() -> None:
    allowed = Condition(kind="ref_state", message="That product is {state} and can no longer be ordered.",
                        values=["active", "back_order"], ref="product")
    assert _rule_text(allowed) == "That product is not active or back order and can no longer be ordered"
    bare = Condition(kind="ref_state", message="The claim is {state}: it is locked.", ref="claim")
    assert "{" not in _rule_text(bare) and "does not allow" in _rule_text(bare)

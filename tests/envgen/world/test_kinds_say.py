"""A category is said in words: the user asks for "old town", the tool takes the value ``old-town``."""

from __future__ import annotations

from envgen.world.kinds import kind


def test_a_category_value_is_said_as_words() -> None:
    assert kind("category").say("old-town", "USD") == "old town"
    assert kind("status").say("pending_customer", "USD") == "pending customer"
    assert kind("category").say("economy", "USD") == "economy"

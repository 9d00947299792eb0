"""How values of a kind are drawn and said: a category in words ("old town" for ``old-town``), a colour by name."""

from __future__ import annotations

import random
import re

from envgen.world.data import Pools
from envgen.world.kinds import kind
from envgen.world.model import Field


def test_a_category_value_is_said_as_words() -> None:
    assert kind("category").say("old-town", "USD") == "old town"
    assert kind("status").say("pending_customer", "USD") == "pending customer"
    assert kind("category").say("economy", "USD") == "economy"


def test_a_colour_is_a_colour_name() -> None:
    pools = Pools(random.Random(3))
    f = Field("colour", "color")
    drawn = {f.semantic.draw(pools, {"field": f, "row": {}}) for _ in range(40)}
    assert len(drawn) > 5 and all(re.fullmatch(r"[a-z]+", c) for c in drawn), drawn

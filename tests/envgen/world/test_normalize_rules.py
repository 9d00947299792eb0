"""The policy rules a world states for its tools' guards read as sentences (no template slot left in them)."""

from __future__ import annotations

from envgen.world.normalize import to_world
from tests.envgen.world.operator_world import operator_world


def test_a_room_guard_is_stated_with_its_container_in_place_of_the_key() -> None:
    world = to_world(operator_world())
    texts = [r.text for r in world.policy if r.kind == "tool" and r.op == "submit_job"]
    assert texts == ["`submit_job` refuses when: The queue of the printer is full. Explain why to the user."]
    assert not any("{" in r.text for r in world.policy)

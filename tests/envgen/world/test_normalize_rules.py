"""The policy rules a world states for its tools' guards read as sentences (no template slot left in them)."""

from __future__ import annotations

from envgen.world.normalize import to_world
from tests.envgen.world.operator_world import operator_world


def test_a_room_guard_is_stated_with_its_containers_key_as_a_slot() -> None:
    world = to_world(operator_world())
    texts = [r.text for r in world.policy if r.kind == "tool" and r.op == "submit_job"]
    key = next(e for e in world.entities if e.name == "printer").key.name.replace("_", " ")
    assert texts == [f"`submit_job` refuses when: The queue of <{key}> is full. Explain why to the user."]
    assert not any("{" in r.text for r in world.policy)


def test_a_message_that_names_its_record_by_key_reads_as_a_sentence_in_every_catalog_domain() -> None:
    """"Queue {key} is at its ticket limit" once read "Queue the support queue is at its ticket limit"."""
    from envgen.world.catalog import domain, entries

    for entry in entries():
        world = to_world(domain(entry.blueprint.id))
        for rule in world.policy:
            assert "{" not in rule.text and " the the " not in rule.text, rule.text
            for ent in world.entities:
                assert f"{ent.human.split()[-1]} the {ent.human}" not in rule.text.lower(), rule.text
                assert f"{ent.human} key" not in rule.text.lower(), rule.text

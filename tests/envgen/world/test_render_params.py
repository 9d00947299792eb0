"""A tool parameter's bounds are in the unit the tool takes: money in currency units, counts as they are."""

from __future__ import annotations

from envgen.world.normalize import to_world
from envgen.world.render import render_tools
from tests.envgen.world.operator_world import operator_world


def test_money_bounds_are_in_currency_units_and_count_bounds_unchanged() -> None:
    world = operator_world().model_dump()
    job = world["entities"][2]
    next(f for f in job["fields"] if f["name"] == "charge").update(min=500, max=250000)  # $5 to $2,500, in cents
    world["operations"].append({"name": "reprice_job", "kind": "update", "entity": "print_job",
                                "fields": ["charge", "copies"]})
    tools = {t["name"]: t for t in render_tools(to_world(operator_world(**world)))}
    props = tools["reprice_job"]["parameters"]["properties"]
    assert (props["charge"]["minimum"], props["charge"]["maximum"]) == (5, 2500)
    assert (props["copies"]["minimum"], props["copies"]["maximum"]) == (1, 50)


def test_a_transition_that_keeps_the_state_says_which_records_it_takes_and_no_move() -> None:
    world = operator_world().model_dump()
    world["operations"].append({"name": "rush_job", "kind": "transition", "entity": "print_job", "target": "queued",
                                "sources": ["queued"], "description": "Move a job to the front of its queue",
                                "phrase": "rush {record}"})
    tools = {t["name"]: t for t in render_tools(to_world(operator_world(**world)))}
    assert tools["rush_job"]["description"] == \
        "Move a job to the front of its queue. Refused when: the print job is not queued."
    assert tools["hold_job"]["description"].endswith("Refused when: only queued print jobs can be moved to held.")

"""What the task writer says is words: a state named ``awaiting_print`` is said "awaiting print"."""

from __future__ import annotations

import json
import re

from envgen.world.blueprint import WorldBlueprint
from envgen.world.compile import compile_world
from envgen.world.model import in_state, with_value
from tests.envgen.world.operator_world import operator_world
from tests.envgen.world.store_world import store_world


def test_a_state_with_an_underscore_is_said_as_words() -> None:
    raw = json.loads(operator_world().model_dump_json().replace('"queued"', '"awaiting_print"'))
    bp = WorldBlueprint.model_validate(raw)
    said = [turn.instruction for seed in range(3)
            for task in compile_world(bp, env_id="test-print-room", seed=seed, n_tasks=10).spec.tasks
            for turn in task.turns]
    assert not [s for s in said if "awaiting_print" in s]
    assert [s for s in said if "awaiting print" in s]


def test_a_record_named_by_a_moment_is_named_on_that_moment() -> None:
    raw = json.loads(operator_world().model_dump_json().replace(
        '{"name":"submitted_on","kind":"date"', '{"name":"starts_at","kind":"datetime"'))
    bp = WorldBlueprint.model_validate(raw)
    said = [turn.instruction for seed in range(4)
            for task in compile_world(bp, env_id="test-print-room", seed=seed, n_tasks=10).spec.tasks
            for turn in task.turns]
    assert not [s for s in said if "starts at" in s]
    assert [s for s in said if re.search(r"print job for printer PRN-\d+ on [A-Z][a-z]+ \d+ at \d\d:\d\d", s)]


def test_a_prepositional_state_follows_its_noun() -> None:
    assert in_state("in_repair", "devices") == "devices in repair"
    assert in_state("out_for_delivery", "order") == "order out for delivery"
    assert in_state("pending", "orders") == "pending orders"
    assert in_state("past_due", "subscriptions") == "past due subscriptions"
    raw = json.loads(operator_world().model_dump_json().replace('"held"', '"on_hold"'))
    bp = WorldBlueprint.model_validate(raw)
    said = [turn.instruction for seed in range(4)
            for task in compile_world(bp, env_id="test-print-room", seed=seed, n_tasks=10).spec.tasks
            for turn in task.turns]
    assert not [s for s in said if re.search(r"on hold print jobs?\b", s)]
    assert [s for s in said if re.search(r"print jobs? on hold\b", s)]


def test_generic_reasons_fit_the_speaker_and_the_field() -> None:
    def said(bp: WorldBlueprint, env_id: str) -> list[str]:
        return [turn.instruction for seed in range(6)
                for task in compile_world(bp, env_id=env_id, seed=seed, n_tasks=10).spec.tasks
                for turn in task.turns]

    staff = said(operator_world(), "test-print-room")  # no reasons of its own: generic ones, said by staff
    personal = ("moved recently", "noticed a typo", "with my family", "when I placed it", "promised to me")
    assert not [s for s in staff if any(p in s for p in personal)]
    assert [s for s in staff if re.search(r"(the details were|something changed|plans changed|no longer needed)", s)]
    customers = said(store_world(), "test-shop")  # a customer changing an address may have moved
    assert [s for s in customers if "moved recently" in s]


def test_a_value_with_a_unit_in_its_field_name_is_said_with_the_unit_after_it() -> None:
    assert with_value("weight_kg", "724") == "weight 724 kg"
    assert with_value("size_mb", "12.5") == "size 12.5 MB"
    assert with_value("copies", "3") == "copies 3"
    raw = operator_world().model_dump()
    raw["entities"][2]["fields"].append({"name": "size_mb", "kind": "number", "min": 1, "max": 90})
    next(o for o in raw["operations"] if o["name"] == "submit_job")["fields"] = ["copies", "size_mb"]
    bp = WorldBlueprint.model_validate(raw)
    said = [turn.instruction for seed in range(6)
            for task in compile_world(bp, env_id="test-print-room", seed=seed, n_tasks=10).spec.tasks
            for turn in task.turns]
    assert [s for s in said if re.search(r"size [\d.]+ MB", s)]
    assert not [s for s in said if "size mb" in s]

"""A converted τ² domain read by the realism measures' spec reader is τ²'s domain as the anchor reads τ²'s data.

``envwright stats --anchors`` reads τ² from its data files (:func:`envgen.realism.tau2_world`); the converted spec
is read like any generated environment (:func:`envgen.realism.world_of_spec`: each task's reference run from its
own starting state). Both must see the same tools, the same tasks with the same gold calls, and calls that fail
and write where τ²'s do.
"""

from __future__ import annotations

import dataclasses

import pytest

from envgen.realism import World, realism, tau2_world, world_of_spec
from eval.tau2 import _backend
from eval.tau2.convert import Conversion, convert
from tests.fixtures.tau2 import needs_tau2

pytestmark = needs_tau2

#: τ² tasks per domain: the first ones, and retail 12 (a gold action τ² itself refuses) and 40, 74 (writes
#: through most tools), airline 17 (flights, passengers and bags changed)
SAMPLE = {"retail": ["0", "1", "2", "12", "40", "74"], "airline": ["0", "1", "2", "17"]}


@pytest.fixture(scope="module", params=sorted(SAMPLE))
def read(request: pytest.FixtureRequest) -> tuple[str, Conversion, World, World]:
    """A domain's sample converted, and read by both readers: ``(name, conversion, spec's world, anchor's world)``."""
    name = request.param
    conv = convert(name, task_ids=SAMPLE[name])
    return name, conv, world_of_spec(conv.spec, "inprocess"), tau2_world(name)


def test_the_spec_reader_sees_the_tools_tasks_and_gold_calls_the_anchor_reads(
        read: tuple[str, Conversion, World, World]) -> None:
    name, conv, ours, anchor = read
    assert ours.problem is None and ours.has_results
    assert sorted(ours.tools) == sorted(anchor.tools)
    theirs = {t.id: t for t in anchor.tasks}
    tau2_tasks = {str(t.id): t for t in _backend.tasks(name)}
    types = {f["name"]: kind for f, kind in _backend.tool_schemas(name)}
    for task in ours.tasks:
        tau2_id = conv.tasks[task.id].tau2_id
        (turn,), (anchor_turn,) = task.turns, theirs[tau2_id].turns
        assert [(c.name, dict(c.arguments)) for c in turn.calls] == \
            [(c.name, dict(c.arguments)) for c in anchor_turn.calls]
        # τ²'s own environment answers the same calls: each fails in ours exactly when it fails in τ²'s
        played = _backend.replay(name, tau2_tasks[tau2_id], [_backend.Call(c.name, dict(c.arguments))
                                                             for c in turn.calls])
        assert [c.ok for c in turn.calls] == [not error for _, error in played.results], tau2_id
        # a call that succeeds changes the database exactly when τ² types its tool a write
        assert [c.writes for c in turn.calls if c.ok] == [types[c.name] == "write" for c in turn.calls if c.ok]
    # retail 12's gold return names another payment method than the order's: τ² refuses it, and so do we
    assert any(not c.ok for t in ours.tasks for c in t.turns[0].calls) == (name == "retail")


def test_the_measures_agree_where_both_readers_see_the_same_thing(read: tuple[str, Conversion, World, World]) -> None:
    name, _, world, anchor_world = read
    ours = realism([world])
    ids = set(SAMPLE[name])
    anchor = realism([dataclasses.replace(anchor_world, tasks=tuple(t for t in anchor_world.tasks if t.id in ids))])
    assert (ours.tasks, ours.turns) == (anchor.tasks, anchor.turns) == (len(ids), len(ids))
    assert ours.tools_per_env == anchor.tools_per_env == ours.tools_in_scope == anchor.tools_in_scope
    assert ours.row_id_turn_share == anchor.row_id_turn_share == 0.0  # τ²'s users name no row id
    assert ours.scenario_share == anchor.scenario_share == 1.0  # a simulated user in every task
    assert ours.policy_rules_per_env and ours.policy_rules_per_env >= 20  # the policy document's rules
    # the spec's first turn is the scenario's whole text (what the user knows, wants and must do), τ²'s anchor reads
    # only the reason for the call and what the user knows
    assert ours.first_turn_words is not None and anchor.first_turn_words is not None
    assert ours.first_turn_words >= anchor.first_turn_words

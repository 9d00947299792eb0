"""``eval.bfcl.realism``: BFCL multi-turn entries as realism worlds (tools in scope, user turns, replayed results)."""

from __future__ import annotations

import pytest

pytest.importorskip("bfcl_eval")

from envgen.realism import realism, trace_task
from eval.bfcl.data import load_entries
from eval.bfcl.realism import bfcl_world


def test_an_entry_is_a_world_with_its_tools_turns_and_results() -> None:
    entry = load_entries("multi_turn_base")[0]
    w = bfcl_world(entry)
    assert w.tools == tuple(d["name"] for d in entry.functions_for_turn(0)) and w.tables == ()
    task = w.tasks[0]
    assert len(task.turns) == entry.num_turns and task.tools_in_scope == len(w.tools)
    assert [len(t.calls) for t in task.turns] == [len(gt) for gt in entry.ground_truth]
    assert w.has_results and any(c.result is not None for t in task.turns for c in t.calls)
    assert trace_task(task).hop_depth >= 0
    plain = bfcl_world(entry, results=False)
    assert not plain.has_results and all(c.result is None for t in plain.tasks[0].turns for c in t.calls)


def test_a_few_entries_pool_into_figures() -> None:
    r = realism(bfcl_world(e) for e in load_entries("multi_turn_base")[:5])
    assert r.envs == 5 and r.tables_per_env is None and r.repeated_read_share is None
    assert r.tools_in_scope is not None and r.tools_in_scope > 10 and r.words_per_turn is not None
    assert r.policy_rules_per_env is None and r.hop_depth is not None

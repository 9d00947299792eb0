"""A new child record is asked for in its create's own words, and its target is not named by the thing added."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from envgen.world.blueprint import WorldBlueprint
from envgen.world.compile import compile_world
from envgen.world.tasks.families import Families
from tests.envgen.world.operator_world import operator_world


def _with_finishing(phrase: str, finishes: int = 12) -> WorldBlueprint:
    raw: dict[str, Any] = copy.deepcopy(operator_world().model_dump())
    raw["entities"].append({"name": "finish", "role": "catalog", "key": {"name": "finish_code", "kind": "code"},
                            "prefix": "FIN", "fields": [{"name": "title", "kind": "title"},
                                                        {"name": "price", "kind": "money"}], "rows": finishes})
    raw["entities"][3]["refs"].append({"name": "finish", "entity": "finish"})
    raw["entities"][3]["fields"].append({"name": "quantity", "kind": "quantity", "min": 1, "max": 5})
    raw["entities"][3]["rows"] = 200
    raw["operations"].append({"name": "apply_finish", "kind": "create", "entity": "job_note", "fields": ["quantity"],
                              "phrase": phrase})
    raw["vocabulary"] = {"titles": [f"{a} {b}" for a in ("Spiral", "Comb", "Thermal", "Wire", "Glued", "Sewn")
                                    for b in ("Binding", "Cover", "Spine", "Backing", "Wrap")]}
    return WorldBlueprint.model_validate(raw)


def test_an_added_line_is_asked_for_in_the_create_phrase() -> None:
    bp = _with_finishing("have {value} applied to {record}")
    adds = [t.turns[0].instruction for seed in range(4)
            for t in compile_world(bp, env_id="test-print-room", seed=seed, n_tasks=10).spec.tasks
            if t.id.endswith("_add_job_note")]
    assert adds and all(re.search(r"have (the|[a-z]+ of the) [A-Z][\w ]+ applied to ", s) for s in adds), adds


def test_a_record_is_never_named_by_the_thing_being_added_to_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # one finishing, and every job "holds" it: describing a job by its lines names the thing being added
    bp = _with_finishing("add {value} to {record}", finishes=1)
    monkeypatch.setattr(Families, "child_title", lambda self, target, cands: _only_title(bp, self))
    adds = [t.turns[0].instruction for seed in range(6)
            for t in compile_world(bp, env_id="test-print-room", seed=seed, n_tasks=10).spec.tasks
            if t.id.endswith("_add_job_note")]
    assert adds
    for text in adds:
        m = re.search(r"add (?:the|[a-z]+ of the) (.+?) to ", text)
        assert m is not None and text.count(m.group(1)) == 1, text


def _only_title(bp: WorldBlueprint, fam: Families) -> str:
    (row,) = fam.w.rows(fam.world.entity("finish"))
    return str(row["title"])


def test_taking_holding_freeing_and_moving_are_asked_for_in_the_operations_own_words() -> None:
    raw: dict[str, Any] = copy.deepcopy(operator_world().model_dump())
    job = raw["entities"][2]
    job["refs"].append({"name": "operator", "entity": "patron", "nullable": True})
    raw["operations"] += [
        {"name": "start_next_job", "kind": "take", "entity": "print_job", "target": "printing", "sources": ["queued"],
         "phrase": "start the next job on {record}"},
        {"name": "hand_job_to", "kind": "acquire", "entity": "print_job", "holder": "operator",
         "phrase": "hand {record} to {value}"},
        {"name": "take_job_back", "kind": "release", "entity": "print_job", "holder": "operator",
         "phrase": "take {record} back from its operator"},
        {"name": "reroute_job", "kind": "move", "entity": "print_job", "phrase": "send {record} to {value} instead"},
    ]
    bp = WorldBlueprint.model_validate(raw)
    said = {t.id: t.turns[0].instruction for seed in range(6)
            for t in compile_world(bp, env_id="test-print-room", seed=seed, n_tasks=12).spec.tasks}
    takes = [s for i, s in said.items() if "take_start_next_job" in i]
    holds = [s for i, s in said.items() if "hold_hand_job_to" in i]
    frees = [s for i, s in said.items() if "free_take_job_back" in i]
    assert takes and all(re.search(r"start the next job on printer PRN-\d+", s) for s in takes), takes
    assert holds and all(re.search(r"hand print job JOB-\d+ to [A-Z]", s) for s in holds), holds
    assert frees and all(re.search(r"take print job JOB-\d+ back from its operator", s) for s in frees), frees
    moves = [s for i, s in said.items() if "move_reroute_job" in i]
    assert moves and all(re.search(r"send print job JOB-\d+ to printer PRN-\d+ instead", s) for s in moves), moves
    assert not [s for s in said.values() if "as returned" in s]

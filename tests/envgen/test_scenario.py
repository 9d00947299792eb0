"""The shared scenario writer (``envgen.scenario``): the agent's questions go into the reference where they are asked,
a change to approve gets its ``confirmed`` check, and a task whose questions the scripted user would not answer is
refused (so the gate's rule 3 holds for every scenario task a compiler writes)."""

from __future__ import annotations

import copy
import random
from typing import Any

from envgen.scenario import Ask, ask_confirm, ask_record, ask_value, make_scenario_task


def _task() -> dict[str, Any]:
    return {"id": "t0", "kind": "read_then_write", "turns": [{
        "instruction": "Set the shelf of the book 'Dune' to 'Fiction'.",
        "checks": [{"kind": "sql", "query": "SELECT shelf FROM books WHERE id = 1", "expect": [["Fiction"]]}],
        "reference": [{"name": "find_book", "arguments": {"title": "Dune"}},
                      {"name": "set_shelf", "arguments": {"book_id": 1, "shelf": "Fiction"}}]}]}


def test_questions_go_where_they_are_asked_and_an_approval_gets_its_check() -> None:
    rng = random.Random(0)
    ask = ask_record(rng, "book", "book title|title")
    confirm = ask_confirm(rng, "set the shelf of the book 'Dune' to 'Fiction'")
    value = ask_value(rng, "new shelf|shelf")
    task = make_scenario_task(_task(), asks=[Ask(0, ask), Ask(0, value), Ask(1, confirm, confirms=True)],
                              facts={"book title|title": "Dune", "new shelf|shelf": "Fiction"}, confirm=["set_shelf"],
                              instruction="Please move one of the books to a new shelf.", persona="a reader",
                              goal="Move the book 'Dune' to shelf 'Fiction'.")
    assert task is not None
    (turn,) = task["turns"]
    assert [i.get("say") or i["name"] for i in turn["reference"]] == [ask, value, "find_book", confirm, "set_shelf"]
    assert turn["checks"][-1] == {"kind": "confirmed", "tools": ["set_shelf"]}
    assert turn["instruction"] == "Please move one of the books to a new shelf."
    assert task["scenario"]["facts"] == {"book title|title": "Dune", "new shelf|shelf": "Fiction"}


def test_a_question_the_scripted_user_would_not_answer_refuses_the_task() -> None:
    task = _task()
    before = copy.deepcopy(task)
    # the question names no fact the user knows: the user would say "I don't know."
    assert make_scenario_task(task, asks=[Ask(0, "What is your favourite colour?")],
                              facts={"new shelf|shelf": "Fiction"}, persona="", goal="Move it.") is None
    # a request to confirm that also asks for a fact is answered with the fact, not a yes
    assert make_scenario_task(task, asks=[Ask(1, "Which shelf? Shall I go ahead?", confirms=True)],
                              facts={"new shelf|shelf": "Fiction"}, persona="", goal="Move it.") is None
    # a fact name the scenario format refuses
    assert make_scenario_task(task, asks=[Ask(0, "What is the shelf?")], facts={"shelf?!": "B"}, persona="",
                              goal="Move it.") is None
    assert task == before  # a refused task is left as it was

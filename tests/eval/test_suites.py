"""Suites: registry, splits, the common episode loop over ToolEnv and BFCL, turn tags."""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path

import pytest

from eval.suites import SUITES, ExamplesSuite, LibrarySuite, eval_record, make_suite, split_of, turn_tags
from gym_envs.spec import TASK_KINDS, parse_spec
from tests.fixtures.library_spec import SPEC


@pytest.fixture(scope="module")
def examples() -> ExamplesSuite:
    suite = ExamplesSuite(executor="inprocess")
    yield suite
    suite.close()


def _task(suite, env_id: str, task_id: str):
    return next(t for t in suite.tasks() if t.env_id == env_id and t.task_id == task_id)


def test_registry_and_errors(tmp_path: Path) -> None:
    assert SUITES.names() == ["bfcl", "examples", "library", "tau2"]
    with pytest.raises(KeyError, match="did you mean 'library'"):
        make_suite("libary:x")
    with pytest.raises(ValueError, match="library:PATH"):
        make_suite("library")
    with pytest.raises(FileNotFoundError, match="no library"):
        make_suite(f"library:{tmp_path / 'nope'}")
    with pytest.raises(ValueError, match="no argument"):
        make_suite("examples:x")


def test_split_is_a_deterministic_hash_of_the_document() -> None:
    assert split_of("doc-1") == split_of("doc-1")
    counts = Counter(split_of(f"doc-{i}") for i in range(2000))
    assert 0.16 < counts["heldout"] / 2000 < 0.24
    assert split_of("doc-1", heldout_fraction=0.0) == "train" and split_of("x", heldout_fraction=1.0) == "heldout"


def test_examples_suite_lists_every_task(examples: ExamplesSuite) -> None:
    tasks = examples.tasks()
    assert len({t.key for t in tasks}) == len(tasks) >= 6
    assert {t.kind for t in tasks} <= set(TASK_KINDS)
    assert len(examples.tool_docs()) >= 5 and len(examples.task_texts()) == len(tasks)


def test_tool_env_episode_loop(examples: ExamplesSuite) -> None:
    ep = examples.episode(_task(examples, "bank-ledger", "pay-rent"), trial=0, seed=1)
    first = ep.reset()
    assert [m["role"] for m in ep.messages] == ["system", "user"] and ep.messages[1]["content"] == first
    assert "transfer" in ep.messages[0]["content"] and {t["function"]["name"] for t in ep.tools} >= {"transfer"}
    calls, reply = ep.reference()
    out = ep.step("<tool_call>{bad json</tool_call>")
    assert out is not None and not out.turn_ended and ep.messages[-1]["name"] == "parse_error"
    text = "".join(f'<tool_call>{json.dumps(c)}</tool_call>' for c in calls)
    out = ep.step(text)
    assert out is not None and not out.turn_ended and out.results[0]["ok"]
    assert ep.messages[-2]["role"] == "assistant" and ep.messages[-2]["raw"] == text
    assert ep.messages[-2]["tool_calls"][0]["function"]["name"] == calls[0]["name"]
    assert ep.messages[-1]["role"] == "tool"
    assert ep.messages[-1]["tool_call_id"] == ep.messages[-2]["tool_calls"][-1]["id"]
    out = ep.step(reply)
    assert out is not None and out.turn_ended and out.done and ep.done
    ep.settle()
    rec = eval_record(ep)
    assert rec["passed"] and rec["score"]["episode"] == 1.0 and rec["steps"] == 3
    assert rec["turns"][0]["calls"][0]["name"] == calls[0]["name"] and rec["turns"][0]["reply"] == reply
    assert rec["transcript"] is ep.messages


def test_multi_turn_episode_appends_the_next_instruction(examples: ExamplesSuite) -> None:
    task = _task(examples, "bank-ledger", "transfer-missing-amount")
    ep = examples.episode(task, trial=0, seed=0)
    ep.reset()
    out = ep.step("What amount should I transfer?")
    assert out is not None and out.turn_ended and not out.done and ep.turn == 1
    assert ep.messages[-1] == {"role": "user", "content": out.instruction}
    ep.settle()


def test_turn_tags_for_missing_parameter_and_decline(examples: ExamplesSuite) -> None:
    spec = examples.specs["bank-ledger"]
    ask = turn_tags(spec, spec.task("transfer-missing-amount"))
    assert ask[0] == {"role": "ask", "write_tools": ["transfer"]} and ask[1] == {}
    decline = turn_tags(spec, spec.task("external-wire"))
    assert decline[0] == {"role": "decline", "write_tools": ["freeze_account", "transfer"]}
    ep = examples.episode(_task(examples, "bank-ledger", "external-wire"), trial=0, seed=0)
    ep.reset()
    ep.step("I cannot wire money abroad.")
    ep.settle()
    assert eval_record(ep)["turns"][0]["tags"] == decline[0]  # the records carry them


def _library(root: Path):
    from envgen.library import Library

    lib = Library(root)
    for i in range(6):
        spec = copy.deepcopy(SPEC)
        spec["id"] = f"lib-{i}"
        spec["source"] = {"corpus": "test", "doc_id": f"doc-{i // 2}"}  # two envs per document
        spec["tasks"][0]["turns"][0]["instruction"] = f"Variant {i}: member 7 wants 'Dune'. Do it now {i}."
        lib.add(parse_spec(spec))
    return lib


def test_library_suite_splits_by_document_and_records_the_split(tmp_path: Path) -> None:
    lib = _library(tmp_path / "lib")
    everything = LibrarySuite(tmp_path / "lib", executor="inprocess")
    assert len(everything.tasks()) == 6
    by_doc: dict[str, set[str]] = {}
    for row in lib.rows():
        assert row["split"] in ("train", "heldout")
        by_doc.setdefault(row["doc_id"], set()).add(row["split"])
    assert all(len(s) == 1 for s in by_doc.values())  # one document, one side
    for split in ("train", "heldout"):
        part = LibrarySuite(tmp_path / "lib", split=split, executor="inprocess")
        assert {t.split for t in part.tasks()} <= {split}
        assert {t.env_id for t in part.tasks()} == {r["id"] for r in lib.rows() if r["split"] == split}
    lib.set_split("lib-0", "heldout")  # the catalog wins over the hash
    assert "lib-0" in {t.env_id for t in LibrarySuite(tmp_path / "lib", split="heldout").tasks()}
    with pytest.raises(ValueError, match="split"):
        LibrarySuite(tmp_path / "lib", split="test")


# -- BFCL ------------------------------------------------------------------------------------------
def test_bfcl_suite_episode_with_the_reference() -> None:
    pytest.importorskip("bfcl_eval")
    suite = make_suite("bfcl:base", limit=2)
    assert suite.name == "bfcl:base" and len(suite.tasks()) == 2
    task = suite.tasks()[0]
    ep = suite.episode(task, trial=0, seed=0)
    ep.reset()
    assert ep.messages[0]["role"] == "system" and ep.messages[1]["role"] == "user"
    while not ep.done:
        calls, reply = ep.reference()
        step = ep.steps_in_turn
        ep.step({"content": "", "tool_calls": [calls[step]]} if step < len(calls) else reply)
    ep.settle()
    rec = eval_record(ep)
    assert rec["passed"] and len(rec["turns"]) == task.n_turns
    assert all(t["checks"][0]["kind"] == "bfcl" for t in rec["turns"])
    assert len(suite.tool_docs()) > 5 and suite.task_texts()[0][0] == f"bfcl:base/{task.task_id}"
    with pytest.raises(ValueError, match="did you mean 'miss_func'"):
        make_suite("bfcl:miss_fun")


def test_bfcl_miss_func_tags_and_the_step_limit() -> None:
    pytest.importorskip("bfcl_eval")
    from eval.suites.bfcl import BfclEnv

    suite = make_suite("bfcl:miss_func", limit=1)
    task = suite.tasks()[0]
    ep = suite.episode(task, trial=0, seed=0, max_turn_steps=1)
    entry = suite.entries[task.task_id]
    reveal = min(entry.missed_function)
    tags = BfclEnv(entry, max_turn_steps=1).tags
    assert tags[reveal - 1]["role"] == "decline"
    assert set(tags[0]["withheld"]) == set(entry.missed_function[reveal])
    ep.reset()
    out = ep.step({"content": "", "tool_calls": [{"name": "ls", "arguments": {}}]})
    assert out is not None and out.done and ep.truncated  # BFCL force-terminates a turn over the step limit
    ep.settle()
    rec = eval_record(ep)
    assert not rec["passed"] and rec["turns"][-1]["error_type"] == "multi_turn:force_terminated"


def test_a_misspelt_suite_option_names_the_close_match() -> None:
    """Each suite builds its typed options through build_config: an option it does not take is refused."""
    from corpora.errors import UnknownNameError

    with pytest.raises(UnknownNameError, match="'wokers' for suite 'examples'; did you mean 'workers'"):
        make_suite("examples", wokers=2)
    with pytest.raises(UnknownNameError, match="'splt' for suite 'library'; did you mean 'split'"):
        make_suite("library:x", splt="train")
    with pytest.raises(UnknownNameError, match="'limt' for suite 'bfcl'; did you mean 'limit'"):
        make_suite("bfcl:base", limt=2)

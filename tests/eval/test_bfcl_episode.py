"""BfclEpisode: structured calls through BFCL's executor, validation, isolation, cleanup."""

from __future__ import annotations

import concurrent.futures
import gc
import json
import sys

import pytest

pytest.importorskip("bfcl_eval")

from eval.bfcl import (
    BfclEpisode,
    BfclEpisodeError,
    ToolCall,
    _backend,
    build_call_string,
    load_entries,
    load_entry,
    reference_trajectory,
    run_trajectory,
)

MATH_ENTRIES = ["multi_turn_base_32", "multi_turn_base_49", "multi_turn_base_57", "multi_turn_base_59"]


def _our_instance_keys() -> list[str]:
    return [k for k in list(_backend.bfcl().utils.__dict__) if k.startswith("envwright_")]


def test_call_matches_bfcl_execution_of_the_same_string() -> None:
    entry = load_entry("multi_turn_base_0")
    with BfclEpisode(entry) as episode:
        assert episode.begin_turn() == entry.turns[0]
        assert [t["name"] for t in episode.tools_for_turn()] == [f["name"] for f in entry.functions]
        assert episode.call("cd", {"folder": "document"}) == json.dumps(
            {"current_working_directory": "document"}
        )
        assert episode.call("mkdir", '{"dir_name": "temp"}') == "None"  # JSON string arguments
        listing = json.loads(episode.call("ls", {}))
        assert set(listing["current_directory_content"]) == {
            "final_report.pdf",
            "previous_report.pdf",
            "temp",
        }
        assert episode.calls[0].call_string == "cd(folder='document')"
        episode.end_turn()
        assert episode.turns_completed == 1 and episode.current_turn is None
        assert episode.executed_call_strings() == [
            ["cd(folder='document')", "mkdir(dir_name='temp')", "ls()"]
        ]


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("rm_everything", {}, "not available"),
        ("__import__", {}, "not available"),
        ("cd", {"folder); import os; os.system('x'": "a"}, "invalid argument name"),
        ("cd", {"class": "a"}, "invalid argument name"),
        ("cd", {"folder": object()}, "unsupported argument type"),
        ("cd", {"folder": float("nan")}, "non-finite"),
        ("cd", {"folder": {1: "a"}}, "not a string"),
        ("cd", "{not json", "not valid JSON"),
        ("cd", "[1, 2]", "must be a JSON object"),
    ],
)
def test_bad_calls_are_rejected_as_data(name: str, arguments: object, message: str) -> None:
    entry = load_entry("multi_turn_base_0")
    with BfclEpisode(entry) as episode:
        episode.begin_turn()
        before = repr(episode.instances["GorillaFileSystem"].root)
        result = episode.call(name, arguments)  # type: ignore[arg-type]
        assert result.startswith("Error during execution: ") and message in result
        assert repr(episode.instances["GorillaFileSystem"].root) == before
        assert episode.calls[-1].executed is False and episode.calls[-1].call_string is None
        episode.end_turn()
        assert episode.executed_call_strings() == [[]]


def test_string_arguments_stay_literals() -> None:
    payload = "x'); __import__('os').system('echo pwned') #\"\\n\x00"
    entry = load_entry("multi_turn_base_0")
    with BfclEpisode(entry) as episode:
        episode.begin_turn()
        episode.call("touch", {"file_name": "notes.txt"})
        episode.call("echo", {"content": payload, "file_name": "notes.txt"})
        assert json.loads(episode.call("cat", {"file_name": "notes.txt"})) == {"file_content": payload}
    assert build_call_string("f", {"a": [1, 2.5, None, True], "b": {"k": "v"}}) == (
        "f(a=[1, 2.5, None, True], b={'k': 'v'})"
    )


def test_backend_errors_are_results_and_turn_order_is_enforced() -> None:
    entry = load_entry("multi_turn_base_0")
    episode = BfclEpisode(entry)
    with pytest.raises(BfclEpisodeError):
        episode.call("ls", {})
    episode.begin_turn()
    with pytest.raises(BfclEpisodeError):
        episode.begin_turn()
    assert episode.call("cd", {"no_such_param": 1}).startswith("Error during execution: ")
    assert episode.calls[-1].executed  # BFCL ran it and returned its error string
    episode.close()
    with pytest.raises(BfclEpisodeError):
        episode.begin_turn()


def test_enforce_holdouts_rejects_withheld_functions() -> None:
    entry = load_entry("multi_turn_miss_func_0")
    strict = BfclEpisode(entry, enforce_holdouts=True)
    lenient = BfclEpisode(entry)
    for episode in (strict, lenient):
        episode.begin_turn()
    assert "not available in this turn" in strict.call("sort", {"file_name": "x"})
    assert "not available" not in lenient.call("sort", {"file_name": "x"})  # BFCL would run it
    strict.close()
    lenient.close()


def test_same_entry_episodes_do_not_share_state() -> None:
    entry = load_entry("multi_turn_base_0")
    first, second = BfclEpisode(entry), BfclEpisode(entry)
    first.begin_turn()
    second.begin_turn()
    first.call("cd", {"folder": "document"})
    first.call("mkdir", {"dir_name": "temp"})
    assert "temp" in first.call("ls", {})
    assert "temp" not in second.call("ls", {}) and "document" in second.call("ls", {})
    assert first.instances["GorillaFileSystem"] is not second.instances["GorillaFileSystem"]
    first.close()
    second.close()


def test_concurrent_episodes_match_sequential_ones() -> None:
    """Threads (with aggressive switching) give the same verdicts and results as serial runs.

    Includes MathAPI entries: ``logarithm`` sets the global ``mpmath.mp.dps``, so without the
    backend's lock concurrent episodes render different result strings.
    """
    entries = load_entries("multi_turn_base", ids=MATH_ENTRIES) + load_entries("multi_turn_base", limit=8)

    def run(entry):  # type: ignore[no-untyped-def]
        episode = run_trajectory(entry, reference_trajectory(entry))
        return episode.score().valid, [c.result for c in episode.calls]

    serial = {e.id: run(e) for e in entries}
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            parallel = list(pool.map(run, entries * 6))
    finally:
        sys.setswitchinterval(interval)
    for entry, outcome in zip(entries * 6, parallel, strict=True):
        assert outcome == serial[entry.id]
        assert outcome[0] is True


def test_backend_instances_are_released() -> None:
    entry = load_entry("multi_turn_base_4")
    baseline = set(_our_instance_keys())
    with BfclEpisode(entry) as episode:
        episode.run_turn(reference_trajectory(entry)[0])
        assert len(set(_our_instance_keys()) - baseline) == 2 * len(entry.involved_classes)
    assert set(_our_instance_keys()) == baseline
    forgotten = BfclEpisode(entry)
    forgotten.run_turn([ToolCall("ls", {})])
    del forgotten
    gc.collect()
    assert set(_our_instance_keys()) == baseline

"""The MCP server (``gym_envs.mcp_server``) through the official SDK's own client.

Over stdio (a server subprocess, as an MCP client starts it): the tool list mirrors the spec, every
task of an example played along its reference trajectory through MCP scores 1.0, bad arguments give
a clear tool error, and a hostile spec's tools (reading a file, importing ``os``, looping forever)
give error results while the server stays up. In process (``mcp.Client(server)``, no transport):
episode control and its errors.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install -e '.[mcp]')")

from mcp import Client, StdioServerParameters

from gym_envs.examples import example_path
from gym_envs.mcp_server import CONTROL_TOOLS, EpisodeHost, ReservedToolName, build_server
from gym_envs.spec import EnvSpec, SpecError, Turn, as_spec, load_spec

ROOT = Path(__file__).resolve().parents[2]
LAUNCH = ("import sys\nfrom gym_envs.mcp_server import EpisodeHost, serve_stdio\n"
          "host = EpisodeHost(sys.argv[1])\ntry:\n    serve_stdio(host)\nfinally:\n    host.close()\n")

HOSTILE = {
    "spec_version": 1, "id": "hostile-demo", "title": "Hostile", "description": "Tools that try to get out.",
    "state": {"schema_sql": "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);",
              "seed_sql": "INSERT INTO t VALUES (1, 'alive');"},
    "tools": [
        {"name": "read_file", "description": "Reads a host file.",
         "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
        {"name": "list_root", "description": "Imports os.", "parameters": {"type": "object", "properties": {}}},
        {"name": "spin", "description": "Loops forever.", "parameters": {"type": "object", "properties": {}}},
        {"name": "ping", "description": "Reads the table.", "parameters": {"type": "object", "properties": {}}}],
    "code": ("def read_file(db, path):\n    return open(path).read()\n\n"
             "def list_root(db):\n    import os\n    return os.listdir('/')\n\n"
             "def spin(db):\n    while True:\n        pass\n\n"
             "def ping(db):\n    return db.query('SELECT v FROM t')\n"),
    "tasks": [{"id": "t0", "kind": "read", "turns": [{
        "instruction": "Ping.", "checks": [{"kind": "reply_contains", "any_of": ["alive"]}],
        "reference": [{"name": "ping", "arguments": {}}]}]}],
}


def _stdio(spec_file: Path) -> StdioServerParameters:
    env = {"PYTHONPATH": str(ROOT)}  # and the pure-Python switch of CI's second runtime pass, when set
    return StdioServerParameters(command=sys.executable, args=["-c", LAUNCH, str(spec_file)], env=env,
                                 cwd=str(ROOT))


def _reply(turn: Turn) -> str:
    """The reference trajectory's final message (what the validity gate sends)."""
    parts = [c.any_of[0] for c in turn.checks if c.kind == "reply_contains"]
    return " ".join(parts) if parts else "Done."


def _json(result: Any) -> Any:
    return json.loads(result.content[0].text)


async def _play(client: Client, spec: EnvSpec, task_id: str) -> dict[str, Any]:
    """Reset to ``task_id``, make each turn's reference calls, end each turn; the last end_turn's answer."""
    started = await client.call_tool("envwright_reset", {"task": task_id, "seed": 0})
    assert not started.is_error, started.content[0].text
    assert _json(started)["instruction"] == spec.task(task_id).turns[0].instruction
    out: dict[str, Any] = {}
    for i, turn in enumerate(spec.task(task_id).turns):
        for call in turn.reference:
            r = await client.call_tool(call.name, call.arguments)
            assert not r.is_error, f"{task_id} turn {i}: {call.name} failed: {r.content[0].text}"
        out = _json(await client.call_tool("envwright_end_turn", {"reply": _reply(turn)}))
        assert out["turn_passed"], out
    return out


def test_stdio_tools_mirror_the_spec_and_every_reference_trajectory_scores_one() -> None:
    path = Path(example_path("library-loans"))
    spec = load_spec(path)

    async def main() -> None:
        async with Client(_stdio(path)) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert list(listed) == [t.name for t in spec.tools] + list(CONTROL_TOOLS)
            for tool in spec.tools:
                assert listed[tool.name].input_schema == tool.parameters
                assert listed[tool.name].description == tool.description
            for task in spec.tasks:
                final = await _play(client, spec, task.id)
                assert final["done"] and final["reward"] == 1.0 and final["episode_passed"], (task.id, final)
                assert final["score"] == {"episode": 1.0, "turns": 1.0, "checks": 1.0}

    anyio.run(main)


def test_stdio_bad_arguments_are_a_clear_tool_error() -> None:
    path = Path(example_path("library-loans"))

    async def main() -> None:
        async with Client(_stdio(path), mode="legacy") as client:  # the pre-2026 handshake, as older clients use
            r = await client.call_tool("borrow_book", {"member_id": "seven"})
            assert r.is_error
            err = _json(r)
            assert err["type"] == "InvalidArguments"
            assert "missing required argument 'book_id'" in err["error"]
            assert "'member_id' must be of type integer" in err["error"]
            r = await client.call_tool("no_such_tool", {})
            assert r.is_error and "no tool named 'no_such_tool'" in _json(r)["error"]
            ok = await client.call_tool("search_books", {"query": "Dune"})  # the episode carries on
            assert not ok.is_error and _json(ok)[0]["title"] == "Dune"

    anyio.run(main)


def test_stdio_hostile_tools_stay_contained(tmp_path: Path) -> None:
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(HOSTILE), encoding="utf-8")

    async def main() -> None:
        async with Client(_stdio(path)) as client:
            r = await client.call_tool("read_file", {"path": "/etc/passwd"})
            assert r.is_error and "root:" not in r.content[0].text
            assert "open" in _json(r)["error"]
            r = await client.call_tool("list_root", {})
            assert r.is_error and _json(r)["type"] == "SandboxViolation" and "'os'" in _json(r)["error"]
            with anyio.fail_after(30):  # the worker's wall-clock limit stops it, not the test
                r = await client.call_tool("spin", {})
            assert r.is_error and _json(r)["type"] == "Timeout"
            alive = await client.call_tool("ping", {})  # the server, and the episode, are still there
            assert not alive.is_error and _json(alive) == [{"v": "alive"}]
            assert len((await client.list_tools()).tools) == 4 + len(CONTROL_TOOLS)
            end = _json(await client.call_tool("envwright_end_turn", {"reply": "alive"}))
            assert end["done"] and end["reward"] == 1.0

    anyio.run(main)


# -- in process -------------------------------------------------------------------------------------


@pytest.fixture
def host() -> Any:
    h = EpisodeHost(example_path("library-loans"), task="borrow-dune", max_steps=4)
    yield h
    h.close()


def test_tool_calls_run_in_the_worker_sandbox(host: EpisodeHost) -> None:
    assert getattr(host.executor, "mode", None) == "worker"


def test_episode_control_in_process(host: EpisodeHost) -> None:
    async def main() -> None:
        async with Client(build_server(host)) as client:
            tasks = _json(await client.call_tool("envwright_tasks", {}))
            assert tasks["default_task"] == "borrow-dune"
            assert [t["id"] for t in tasks["tasks"]] == [t.id for t in host.spec.tasks]
            here = await client.call_tool("envwright_instruction", {})
            assert here.structured_content["turn"] == 0 and "Dune" in here.structured_content["instruction"]
            bad = await client.call_tool("envwright_reset", {"task": "nope"})
            assert bad.is_error and "no task 'nope'" in _json(bad)["error"]
            bad = await client.call_tool("envwright_reset", {"seed": -1})
            assert bad.is_error and "non-negative integer" in _json(bad)["error"]
            bad = await client.call_tool("envwright_end_turn", {})
            assert bad.is_error and "reply must be a string" in _json(bad)["error"]
            bad = await client.call_tool("envwright_instruction", {"x": 1})
            assert bad.is_error and "takes no argument" in _json(bad)["error"]
            # max_steps=4: the fourth step ends the episode, and says so
            for _ in range(3):
                await client.call_tool("search_books", {"query": "Dune"})
            last = await client.call_tool("search_books", {"query": "Dune"})
            assert not last.is_error and "limit of 4 steps" in last.content[1].text
            over = await client.call_tool("search_books", {"query": "Dune"})
            assert over.is_error and "envwright_reset" in _json(over)["error"]
            final = _json(await client.call_tool("envwright_instruction", {}))
            assert final["done"] and final["truncated"] and final["score"]["episode"] == 0.0
            again = _json(await client.call_tool("envwright_reset", {"seed": 3}))
            assert again["task_id"] == "borrow-dune" and again["steps"] == 0 and not again["done"]

    anyio.run(main)


def test_a_tool_named_like_a_control_tool_is_refused() -> None:
    spec = json.loads(json.dumps(HOSTILE))
    spec["tools"][3]["name"] = "envwright_reset"
    spec["code"] = spec["code"].replace("def ping(", "def envwright_reset(")
    spec["tasks"][0]["turns"][0]["reference"] = [{"name": "envwright_reset", "arguments": {}}]
    with pytest.raises(SpecError, match=r"tools\[3\].name: tool name 'envwright_reset' is reserved by the MCP server"):
        EpisodeHost(spec)  # the spec's naming rules reserve the control tools' names
    built = as_spec(json.loads(json.dumps(HOSTILE)))
    built.tools[3].name = "envwright_reset"  # a spec changed after parsing reaches the server's own check
    with pytest.raises(ReservedToolName, match=r"'envwright_reset' is reserved by the MCP server.*rename"):
        EpisodeHost(built)


def test_a_withheld_tool_is_listed_and_callable_from_the_turn_that_reveals_it() -> None:
    from gym_envs.sandbox import make_executor
    from tests.fixtures.withheld import withheld_spec

    executor = make_executor("inprocess")
    h = EpisodeHost(withheld_spec(), task="renew-later", executor=executor)

    async def main() -> None:
        async with Client(build_server(h)) as client:
            listed = [t.name for t in (await client.list_tools()).tools]
            assert "renew_loan" not in listed and "return_book" in listed
            early = await client.call_tool("renew_loan", {"loan_id": 15})
            unknown = await client.call_tool("xenew_loan", {"loan_id": 15})
            assert early.is_error and unknown.is_error
            assert _json(early) == json.loads(unknown.content[0].text.replace("xenew_loan", "renew_loan"))
            assert _json(early)["type"] == "UnknownTool"
            ended = _json(await client.call_tool("envwright_end_turn", {"reply": "I can't renew loans."}))
            assert ended["turn_passed"] and "New tools" in ended["next_instruction"]
            assert "renew_loan" in _json(await client.call_tool("envwright_instruction", {}))["instruction"]
            assert "renew_loan" in [t.name for t in (await client.list_tools()).tools]
            renewed = await client.call_tool("renew_loan", {"loan_id": 15})
            assert not renewed.is_error and _json(renewed)["renewals"] == 1

    try:
        anyio.run(main)
    finally:
        h.close()
        executor.close()

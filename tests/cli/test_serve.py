"""``envwright serve SPEC_OR_ID --mcp``: the command, over stdio and streamable HTTP on localhost.

The server's behaviour (tools, reference play, errors, containment) is tested in
``tests/gym_envs/test_mcp_server.py``; here: resolving SPEC_OR_ID (an environment of a library by
id), both transports end to end through the SDK's client, and the command's errors.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install -e '.[mcp]')")

from mcp import Client, StdioServerParameters

from envgen.cli import cli
from envgen.library import Library
from gym_envs.spec import parse_spec
from tests.fixtures.library_spec import SPEC

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def library(tmp_path: Path) -> Path:
    lib = Library(tmp_path / "lib")
    lib.add(parse_spec(SPEC))
    lib.close()
    return lib.root


async def _play_demo(client: Client) -> dict[str, Any]:
    """The demo task's reference trajectory through MCP; the last end_turn's answer."""
    names = [t.name for t in (await client.list_tools()).tools]
    assert names[:3] == ["find_book", "borrow_book", "list_loans"]
    for call in SPEC["tasks"][0]["turns"][0]["reference"]:
        assert not (await client.call_tool(call["name"], call["arguments"])).is_error
    first = json.loads((await client.call_tool("envwright_end_turn", {"reply": "Done."})).content[0].text)
    assert first["turn_passed"] and first["next_instruction"].startswith("How many")
    await client.call_tool("list_loans", {"member_id": 7})
    return json.loads((await client.call_tool("envwright_end_turn", {"reply": "two books"})).content[0].text)


def test_serve_an_environment_of_a_library_over_stdio(library: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "envgen", "serve", "library-demo",
                                                                 "--library", str(library), "--mcp"],
                                   env={"PYTHONPATH": str(ROOT)}, cwd=str(ROOT))

    async def main() -> None:
        async with Client(params) as client:
            final = await _play_demo(client)
            assert final["done"] and final["reward"] == 1.0 and final["episode_passed"]

    anyio.run(main)


def test_serve_over_streamable_http_on_localhost(library: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "envgen", "serve", "library-demo", "--library",
                             str(library), "--mcp", "--transport", "http", "--port", "0"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, cwd=str(ROOT),
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:  # the URL line, then drain stderr so the server never blocks on it
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if "http://" in line:
                ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        assert ready.wait(60) and any("http://" in x for x in lines), "".join(lines)
        url = re.search(r"http://127\.0\.0\.1:\d+/mcp", "".join(lines))
        assert url is not None, "".join(lines)

        async def main() -> None:
            async with Client(url.group(0)) as client:
                final = await _play_demo(client)
                assert final["reward"] == 1.0
            async with Client(url.group(0), mode="legacy") as client:  # a second client sees the same episode
                here = json.loads((await client.call_tool("envwright_instruction", {})).content[0].text)
                assert here["done"] and here["score"]["episode"] == 1.0

        anyio.run(main)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            rc = proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert rc == 0, "".join(lines)


def test_serve_errors_say_what_to_fix(library: Path, tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["serve", "library-demo", "--library", str(library)])
    assert r.exit_code == 2 and "--mcp" in r.output
    r = CliRunner().invoke(cli, ["serve", "library-dem", "--library", str(library), "--mcp"])
    assert r.exit_code == 1 and "did you mean 'library-demo'" in r.output
    r = CliRunner().invoke(cli, ["serve", "library-demo", "--mcp"])
    assert r.exit_code == 1 and "--library DIR" in r.output
    clash = json.loads(json.dumps(SPEC))
    clash["tools"][2]["name"] = "envwright_end_turn"
    clash["code"] = clash["code"].replace("def list_loans(", "def envwright_end_turn(")
    clash["tasks"][0]["turns"][1]["reference"][0]["name"] = "envwright_end_turn"
    path = tmp_path / "clash.json"
    path.write_text(json.dumps(clash))
    r = CliRunner().invoke(cli, ["serve", str(path), "--mcp"])
    # the spec's naming rules reserve the control tools' names: the spec does not even parse
    assert r.exit_code == 1 and "'envwright_end_turn' is reserved by the MCP server" in r.output
    r = CliRunner().invoke(cli, ["serve", "library-loans", "--mcp", "--task", "nope"])
    assert r.exit_code == 1 and "no task 'nope'" in r.output
    broken = json.loads(json.dumps(SPEC))
    broken["state"]["seed_sql"] = "INSERT INTO shelves VALUES (1);"
    path.write_text(json.dumps(broken))
    r = CliRunner().invoke(cli, ["serve", str(path), "--mcp"])
    assert r.exit_code == 1 and "cannot start an episode" in r.output and "no such table: shelves" in r.output
    assert "Traceback" not in r.output

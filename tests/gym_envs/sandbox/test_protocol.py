"""``gym_envs.sandbox.protocol``: frames, spliced replies and the call frames the worker executor builds."""

from __future__ import annotations

import json
import os

import pytest

from gym_envs.sandbox import WorkerExecutor
from gym_envs.sandbox.protocol import FrameReader as _FrameReader
from gym_envs.sandbox.protocol import splice as _splice
from gym_envs.sandbox.protocol import write_frame as _write_frame


def test_frames_and_splicing() -> None:
    r, w = os.pipe()
    try:
        _write_frame(w, b"hello")
        _write_frame(w, b"")
        _write_frame(w, b'{"a":1}')
        reader = _FrameReader(r)
        assert reader.read() == b"hello"
        assert reader.read() == b""
        assert reader.read(deadline=1e18) == b'{"a":1}'
        with pytest.raises(TimeoutError):
            reader.read(deadline=0.0)
    finally:
        os.close(r)
        os.close(w)
    resp = {"ok": True, "changes": 1, "result_json": '{"x":[1,"\\ud800"]}'}
    assert json.loads(_splice(resp)) == {"ok": True, "changes": 1, "result": {"x": [1, "\ud800"]}}
    batch = {"ok": True, "results": [resp, {"ok": False, "error": "e"}]}
    assert json.loads(_splice(batch))["results"][0]["result"] == {"x": [1, "\ud800"]}
    assert json.loads(_splice({"ok": True, "results": [{"passed": True}]})) == {"ok": True,
                                                                                "results": [{"passed": True}]}


@pytest.mark.parametrize("name", ["get", 'qu"ote', "üñï\u2028", "\ud800lone", "x" * 300])
def test_call_frames_are_the_requests_json(name: str) -> None:
    """The worker's call frames (built from remembered JSON of ids and names) are the request's JSON."""
    ex = WorkerExecutor.__new__(WorkerExecutor)  # _encode needs no worker
    for ep in ("123-4", name):
        req = {"op": "call", "ep": ep, "name": name, "arguments": {"a": (1, 2), "b": name}}
        for _ in range(2):  # the second time from the remembered strings
            frame = ex._encode(req)
            assert frame == json.dumps({**req, "arguments": {"a": [1, 2], "b": name}},
                                       separators=(",", ":")).encode()

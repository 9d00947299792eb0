"""Fixtures of the sandbox tests: one executor of each mode per module, and a host snapshot."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gym_envs.sandbox import Executor, InProcessExecutor, WorkerExecutor
from tests.gym_envs.sandbox.attacks import LIMITS, MODES, host_snapshot


@pytest.fixture(scope="module")
def executors() -> Iterator[dict[str, Executor]]:
    """An in-process executor and a worker executor with two workers, shared by a test module."""
    exs: dict[str, Executor] = {"inprocess": InProcessExecutor(LIMITS), "worker": WorkerExecutor(2, LIMITS)}
    yield exs
    for ex in exs.values():
        ex.close()


@pytest.fixture(params=MODES)
def ex(request: pytest.FixtureRequest, executors: dict[str, Executor]) -> Executor:
    """Each executor mode in turn."""
    return executors[request.param]


@pytest.fixture
def worker(executors: dict[str, Executor]) -> WorkerExecutor:
    """The worker executor."""
    w = executors["worker"]
    assert isinstance(w, WorkerExecutor)
    return w


@pytest.fixture
def host() -> Iterator[dict[str, Any]]:
    """Snapshot the host before a test and assert after it that nothing changed."""
    before = host_snapshot()
    yield before
    assert host_snapshot() == before, "the host process was changed"

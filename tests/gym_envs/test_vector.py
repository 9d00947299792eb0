"""ToolVectorEnv: the same answers as Gymnasium's SyncVectorEnv, with the sub-envs' work batched."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import gym_envs  # noqa: F401  (registers envwright/ToolEnv-v0)
from gym_envs.env import ToolEnv
from gym_envs.sandbox import Executor, WorkerExecutor, make_executor
from gym_envs.vector import ToolVectorEnv
from tests.fixtures.library_spec import SPEC
from tests.fixtures.trips import counted_trips

FIND = '<tool_call>{"name": "find_book", "arguments": {"title": "Dune"}}</tool_call>'
BORROW = '<tool_call>{"name": "borrow_book", "arguments": {"member_id": 7, "book_id": 3}}</tool_call>'
LIST = '<tool_call>{"name": "list_loans", "arguments": {"member_id": 7}}</tool_call>'
# per step, one action per env: env 0 passes its episode in five steps, env 1 is truncated at max_steps (5),
# env 2 fails a turn; all three go on past the end of an episode (autoreset)
STEPS = [
    [FIND, FIND, BORROW],
    [BORROW, LIST, "Done."],
    ["Borrowed.", FIND + LIST, LIST],
    [LIST, LIST, "No."],
    ["Member 7 has two books out.", FIND, FIND],
    [FIND, BORROW, BORROW],
    [BORROW, "ok", "Done."],
    ["Done.", LIST, LIST],
]


def plain(x: Any) -> Any:
    """Arrays and tuples as lists, recursively, so results can be compared with ==."""
    if isinstance(x, np.ndarray):
        return [plain(v) for v in x.tolist()] if x.dtype == object else x.tolist()
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [plain(v) for v in x]
    return x


def run(vec: Any) -> list[Any]:
    out = [plain(vec.reset(seed=5))]
    for actions in STEPS:
        out.append(plain(vec.step(actions)))
    out.append(plain(vec.reset(seed=[1, None, 3], options={"reset_mask": np.array([True, False, True])})))
    out.append(plain(vec.step(STEPS[0])))
    return out


def envs(executor: Executor) -> list[Any]:
    return [lambda: ToolEnv(SPEC, task="t0", executor=executor, max_steps=5) for _ in range(3)]


@pytest.mark.parametrize("mode", ["inprocess", "worker"])
@pytest.mark.parametrize("autoreset", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_same_answers_as_sync_vector_env(mode: str, autoreset: AutoresetMode) -> None:
    ex = make_executor(mode, workers=2)
    ours, theirs = ToolVectorEnv(envs(ex), autoreset_mode=autoreset), SyncVectorEnv(envs(ex), autoreset_mode=autoreset)
    try:
        got, expected = run(ours), run(theirs)
        assert got == expected
        flat = [r for r in expected[1:-2]]
        assert any(any(r[2]) for r in flat) and any(any(r[3]) for r in flat)  # terminations and truncations
        assert any(r[1][0] == 1.0 for r in flat)  # env 0 passed its episode
        if autoreset == AutoresetMode.SAME_STEP:
            assert any("final_obs" in r[4] for r in flat)
        assert plain(ours.call("score")) == plain(theirs.call("score"))
    finally:
        ours.close()
        theirs.close()
        ex.close()


def test_disabled_autoreset_needs_resets_as_sync_does() -> None:
    ex = make_executor("inprocess")
    ours = ToolVectorEnv(envs(ex), autoreset_mode=AutoresetMode.DISABLED)
    theirs = SyncVectorEnv(envs(ex), autoreset_mode=AutoresetMode.DISABLED)
    outcomes = []
    for vec in (ours, theirs):
        vec.reset(seed=0)
        steps = []
        for actions in STEPS:
            try:
                steps.append(plain(vec.step(actions)))
            except AssertionError:  # an env ended and was not reset
                break
        outcomes.append(steps)
    assert outcomes[0] == outcomes[1] and 0 < len(outcomes[0]) < len(STEPS)
    assert any(outcomes[0][-1][2]) or any(outcomes[0][-1][3])
    ours.close()
    theirs.close()


def test_make_vec_builds_it_and_batches_round_trips() -> None:
    ex = WorkerExecutor(2)
    trips = counted_trips(ex)
    vec = gym.make_vec("envwright/ToolEnv-v0", num_envs=4, spec=SPEC, task="t0", executor=ex)
    try:
        assert isinstance(vec, ToolVectorEnv) and vec.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
        obs, _ = vec.reset(seed=0)
        assert all(o.startswith("Member 7") for o in obs)
        trips.clear()
        obs, *_ = vec.step([FIND + LIST] * 4)  # eight tool calls: one round trip per worker
        assert sorted(trips) == [4, 4] and all('"Dune"' in o for o in obs)
        sync = gym.make_vec("envwright/ToolEnv-v0", num_envs=2, vectorization_mode="sync", spec=SPEC, task="t0",
                            executor="inprocess")
        assert type(sync) is SyncVectorEnv
        sync.close()
    finally:
        vec.close()
        ex.close()


def test_bad_arguments_are_refused_clearly() -> None:
    with pytest.raises(ValueError, match="num_envs"):
        ToolVectorEnv(spec=SPEC, task="t0")
    with pytest.raises(ValueError, match="not both"):
        ToolVectorEnv([lambda: ToolEnv(SPEC, executor="inprocess")], num_envs=1)
    with pytest.raises(TypeError, match="ToolEnv sub-envs directly"):
        ToolVectorEnv([lambda: gym.make("envwright/ToolEnv-v0", spec=SPEC, task="t0", executor="inprocess")])
    with pytest.raises(ValueError, match="disagree"):
        ToolVectorEnv(num_envs=1, spec=SPEC, max_episode_steps=3, max_steps=4)
    limited = gym.make_vec("envwright/ToolEnv-v0", num_envs=1, spec=SPEC, executor="inprocess", max_episode_steps=3)
    assert limited.get_attr("max_steps") == (3,)  # Gymnasium's name for it is taken, not dropped
    limited.close()
    vec = ToolVectorEnv(num_envs=2, spec=SPEC, task="t0", executor="inprocess")
    theirs = SyncVectorEnv([lambda: ToolEnv(SPEC, task="t0", executor="inprocess")] * 2)
    for bad, error in [([0], ValueError), ({"reset_mask": [True, False]}, TypeError),
                       ({"reset_mask": np.array([False, False])}, ValueError)]:
        kw: dict[str, Any] = {"seed": bad} if isinstance(bad, list) else {"options": bad}
        with pytest.raises(error) as ours_err:
            vec.reset(**kw)
        with pytest.raises(error) as their_err:
            theirs.reset(**kw)
        assert str(ours_err.value) == str(their_err.value)
    vec.close()
    theirs.close()

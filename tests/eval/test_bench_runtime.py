"""``envwright bench runtime`` at toy sizes: every mode runs the real tools without errors and the
report, JSON and plot carry every figure. No timing is asserted (the machines are noisy)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from envgen.cli import cli
from eval.bench import runtime, runtime_report


@pytest.fixture(scope="module")
def result() -> dict:
    return runtime.run(rows=20, calls=40, episodes=2, resets=10, rounds=2)


def test_every_mode_runs_the_tools_without_errors(result: dict) -> None:
    for tool in ("transfer", "get_balance"):
        res = result["tools"][tool]
        assert res["n_errors"] == 0, res["errors"]
        for mode in runtime_report.MODES:
            assert res[mode]["calls"] > 0 and res[mode]["median_us"] > 0 and res[mode]["steps_per_s"] > 0
        assert res["worker-batched"]["batch"] == 2
        floor = res["floor"]["round_medians_us"]
        assert len(floor) == 2 and all(len(res[m]["round_medians_us"]) == 2 for m in runtime_report.MODES)
        for mode in ("inprocess", "worker", "worker-batched"):  # paired by round: the median of two rounds
            rounds = res[mode]["round_medians_us"]
            assert res[mode]["ratio"] == pytest.approx((rounds[0] / floor[0] + rounds[1] / floor[1]) / 2)
            assert res[mode]["overhead_us"] == pytest.approx((rounds[0] - floor[0] + rounds[1] - floor[1]) / 2)
            assert res[mode]["ratio_of_medians"] == pytest.approx(res[mode]["median_us"] / res["floor"]["median_us"])
    reset = result["reset"]
    assert reset["rows"] == 20 and reset["episodes"] == 2
    assert all(reset[f"{what}_{mode}_us"] > 0 for what in ("session_open", "toolenv_reset")
               for mode in ("inprocess", "worker", "worker_batched"))
    vector = result["vector"]
    assert vector["envs"] == 2 and all(vector[n]["median_us"] > 0 for n in ("SyncVectorEnv", "ToolVectorEnv"))
    targets = {t["name"]: t["value"] for t in result["targets"]}
    assert targets["reset_worker_us"] == reset["session_open_worker_batched_us"]  # batched, as the trainer resets
    assert targets["worker_overhead_us"] == result["tools"]["transfer"]["worker-batched"]["overhead_us"]


def test_progress_tracking_is_timed_on_and_off_in_both_executors(result: dict) -> None:
    """The cost of ``track_progress`` (every training rollout's): the same reference episodes with it on and off;
    the extra time per turn is the paired difference, whatever its sign on a busy machine."""
    prog = result["progress"]
    assert prog["example"] == "library-loans" and prog["turns"] >= prog["tasks"] >= 1 and prog["checks_per_turn"] > 1
    for mode in ("inprocess", "worker"):
        m = prog[mode]
        assert m["turn_us"] > 0 and m["turn_progress_us"] > 0 and m["ratio"] > 0
        assert isinstance(m["extra_us"], float)


def test_the_breakdown_adds_layers_in_order(result: dict) -> None:
    layers = result["inprocess_breakdown"]
    assert list(layers) == [k for k, _ in runtime.LAYERS]
    total = 0.0
    for m in layers.values():  # each layer's cost over the floor is the sum of what the layers add
        total += m["adds_us"]
        assert m["over_floor_us"] == pytest.approx(total)
    assert layers["floor"]["over_floor_us"] == 0.0 and layers["floor"]["ratio"] == 1.0


def test_targets_and_report(result: dict, tmp_path: Path) -> None:
    from rich.console import Console

    names = [t["name"] for t in result["targets"]]
    assert names == list(runtime.TARGETS)
    assert all(isinstance(t["passed"], bool) for t in result["targets"])
    out = io.StringIO()
    runtime_report.print_report(result, Console(file=out, width=200))
    text = out.getvalue()
    for needle in ("transfer:", "get_balance:", "layer by layer", "Session.open", "ToolVectorEnv",
                   "tracking the progress fraction", "the scripted user", "targets"):
        assert needle in text
    pytest.importorskip("matplotlib")
    png = runtime_report.plot(result, tmp_path / "runtime.png")
    assert png is not None and png.read_bytes()[:4] == b"\x89PNG"


def test_command_writes_json_and_exits_by_the_targets(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    res = CliRunner().invoke(cli, ["bench", "runtime", "--rows", "10", "--calls", "20", "--episodes", "2",
                                   "--resets", "5", "--rounds", "1", "--json", str(path)])
    saved = json.loads(path.read_text())
    assert res.exit_code == (0 if all(t["passed"] for t in saved["targets"]) else 1), res.output
    assert "targets" in res.output


def test_the_scripted_user_is_measured_against_its_recorded_replies(result: dict) -> None:
    """The same conversation on both sides: the scenario episodes pass with the scripted user and with its replies
    looked up, and the ratio compares their environment time round by round."""
    users = result["users"]
    assert users["example"] == "shop-support" and users["user_replies_per_episode"] >= 1
    for mode in ("inprocess", "worker"):
        assert users[mode]["ratio"] > 0 and users[mode]["episode_us"] > 0
    target = next(t for t in result["targets"] if t["name"] == "scripted_user_ratio")
    assert target["value"] == users["worker"]["ratio"] and target["limit"] == 1.10


def test_a_recorded_user_holds_the_scripted_users_conversation() -> None:
    from eval.bench.runtime_users import RecordedUser, _plan
    from gym_envs.env import ToolEnv
    from gym_envs.examples import load_example
    from gym_envs.users import ScriptedUser, UserContext

    spec = load_example("shop-support")
    task = spec.task("cancel-with-confirmation")
    assert task.scenario is not None
    plan = [a for turn in _plan(task) for a in turn]
    replies = {a["content"]: ScriptedUser().reply(UserContext(task.scenario, 0, "", a["content"]))
               for a in plan if not a["tool_calls"]}
    for user in (ScriptedUser(), RecordedUser(replies)):
        env = ToolEnv(spec, task.id, executor="inprocess", user=user)
        env.reset(seed=0)
        for action in plan:
            *_, info = env.step(action)
        assert info["episode_passed"] and [s.reply for s in env.turns[0].said] == [
            "My email is ana@example.com.", "My order number is A-1042.", "Yes, please go ahead."]
        env.close()


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="rows must be >= 2"):
        runtime.run(rows=1)

"""The trainer's benchmarks (`envwright bench speed|precision|throughput|learning|selfplay`) at toy sizes on
CPU (slow), and their pieces (fast)."""

from __future__ import annotations

import json
import os
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from envgen.cli import cli
from training.bench.throughput import ReplayGenerator, reference_plan
from training.generation import Generated


def _bench(*args: str) -> None:
    result = CliRunner().invoke(cli, ["bench", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output


def test_reference_plan(spec: Any) -> None:
    plan = reference_plan(spec, "t0")
    assert len(plan) == 5 and plan[2] == "Done." and plan[-1] == "2"


class Fixed:
    eos_ids = [0]

    def generate(self, contexts: list[list[int]], **kw: Any) -> list[Generated]:
        return [Generated([7, 7, 7], [0.0] * 3, "length") for _ in contexts]


def test_replay_generator_hands_out_the_plan() -> None:
    gen = ReplayGenerator(Fixed(), {(1, 2): ["a", "b"], (3,): ["c"]}, [0])
    first = gen.generate([[1, 2], [1, 2], [3], [9]], max_new_tokens=3)
    assert [g.text for g in first] == ["a", "a", "c", None] and first[0].finish == "stop"
    second = gen.generate([[1, 2, 7, 7], [3, 7]], max_new_tokens=3)
    assert [g.text for g in second] == ["b", "Done."]


def test_speed_says_why_vllm_has_no_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where vLLM cannot run, the speed benchmark's vLLM row names the reason and holds no figures."""
    import importlib.util

    from training.bench.speed import _vllm_speed, vllm_unavailable
    from training.generation import vllm_available

    row = _vllm_speed(None, None, [[1, 2]], max_new_tokens=4, repeats=1, device="cpu")
    assert row["available"] is False and set(row) == {"available", "reason"}
    if not vllm_available():
        assert "pip install 'envwright[vllm]'" in row["reason"]
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "vllm" else real(name, *a))
    assert vllm_unavailable("cpu") == "vLLM needs a CUDA device; this run is on cpu"
    assert vllm_unavailable("cuda") is None


@pytest.mark.slow
@pytest.mark.parametrize("name", ["throughput", "learning", "speed", "precision"])
def test_bench_tiny(name: str, tmp_path: Path) -> None:
    _bench(name, "--out", str(tmp_path), "--tiny", "--device", "cpu")
    result = json.loads((tmp_path / f"{name}.json").read_text())
    assert result["benchmark"] == name and result["tiny"]
    if name == "throughput":
        assert result["complete"] and result["timed_steps"] >= 1 and result["episodes"] > 0
        assert result["rollout_tokens_per_second"] > 0 and 0 <= result["env_share_of_wall_time"] <= 1
    elif name == "speed":
        assert result["speedup"] > 0
        assert result["vllm"] == {"available": False, "reason": result["vllm"]["reason"]}  # CPU: why, no figures
        assert result["vllm_speedup"] is None
    elif name == "precision":
        from training.bench.speed import PRECISIONS

        assert list(result["setups"]) == [p[0] for p in PRECISIONS] and result["bf16_mixed_vs_fp32"] > 0
        assert all(s["tokens"] > 0 for s in result["setups"].values())
    else:
        assert {"untrained", "sft", "grpo"} <= set(result)
        assert all(result[stage]["generation_errors"] == 0 for stage in ("untrained", "sft", "grpo"))


def test_pass_rate_counts_generation_errors(chat: Any, spec: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A generation that fails ends its episode as data; the benchmark's figures say so rather than
    reporting a silent 0% pass rate."""
    import training.model as tm
    from training.bench.learning import _pass_rate
    from training.config import config_from_dict
    from training.generation import Generated, Generator
    from training.rollout import TaskRef

    class Broken(Generator):
        name = "broken"

        def generate(self, contexts: list[list[int]], **kw: Any) -> list[Generated]:
            return [Generated([], [], "error", "RuntimeError: index_copy_(): dtype") for _ in contexts]

    monkeypatch.setattr(tm, "make_generator", lambda cfg, model, tok: Broken())
    cfg = config_from_dict({"rollout": {"executor": "inprocess"}})
    res = _pass_rate(None, None, chat, [TaskRef(spec, "t0")] * 2, cfg)
    assert res["pass_rate"] == 0.0 and res["generation_errors"] == 2
    assert res["first_generation_error"].endswith("RuntimeError: index_copy_(): dtype")


def test_plot_learning_draws_the_stages_present(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from training.bench.learning import plot_learning

    stage = {"pass_rate": 0.25, "mean_check_fraction": 0.5}
    path = plot_learning({"heldout_tasks": 4, "untrained": stage, "sft": stage}, tmp_path / "l.png")
    assert path is not None and path.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="no stage figures"):
        plot_learning({"heldout_tasks": 4}, tmp_path / "none.png")


@pytest.mark.slow
def test_learning_stages_resume(tmp_path: Path) -> None:
    """``--stop-after sft`` saves the warm-started model; a second run starts at GRPO from it."""
    args = ["learning", "--out", str(tmp_path), "--tiny", "--device", "cpu"]
    _bench(*args, "--stop-after", "sft")
    first = json.loads((tmp_path / "learning.json").read_text())
    assert {"untrained", "sft"} <= set(first) and "grpo" not in first
    assert (tmp_path / "work" / "sft-model" / "config.json").is_file()
    assert (tmp_path / "learning.png").stat().st_size > 0  # a bar per stage so far
    _bench(*args)
    second = json.loads((tmp_path / "learning.json").read_text())
    assert second["resumed_from"].endswith("sft-model") and second["sft"] == first["sft"]
    assert second["grpo"]["reward_mode"] == "checks" and len(second["grpo"]["per_step"]) == 1
    assert (tmp_path / "work" / "grpo-model" / "config.json").is_file()  # the trained checkpoint, for eval


@pytest.mark.slow
def test_learning_keeps_the_untrained_figures_when_sft_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run whose SFT stage dies (out of GPU memory on the H100) keeps its untrained figures, and the re-run
    reuses them instead of measuring them again."""
    import training.loss
    from training.bench.learning import learning

    def oom(*a: object, **kw: object) -> dict[str, float]:
        raise RuntimeError("CUDA out of memory")

    with monkeypatch.context() as m:
        m.setattr(training.loss, "update", oom)
        with pytest.raises(RuntimeError, match="out of memory"):
            learning(tmp_path, tiny=True, device="cpu", stop_after="sft", sft_micro_batch=1)
    kept = json.loads((tmp_path / "learning.json").read_text())
    assert "untrained" in kept and "sft" not in kept
    done = learning(tmp_path, tiny=True, device="cpu", stop_after="sft", sft_micro_batch=1)
    assert done["untrained"] == kept["untrained"] and done["sft"]["micro_batch"] == 1


@pytest.mark.slow
def test_learning_on_generated_environments(tmp_path: Path) -> None:
    """The learning benchmark trains on a generated library and evaluates on held-out environments."""
    from envgen.generate import GenerateConfig, run_generate
    summary = run_generate(GenerateConfig(corpus="stdlib", n=6, out=tmp_path / "lib", workers=1), progress=False)
    assert summary.accepted >= 4
    out = tmp_path / "out"
    _bench("learning", "--out", str(out), "--tiny", "--device", "cpu", "--envs", str(tmp_path / "lib"),
           "--holdout-envs", "2")
    result = json.loads((out / "learning.json").read_text())
    assert result["holdout_envs"] == 2 and result["envs"] == [str(tmp_path / "lib")]
    assert result["heldout_tasks"] >= 1 and {"untrained", "sft", "grpo"} <= set(result)


@pytest.mark.slow
def test_bench_selfplay_tiny_phases_resume(tmp_path: Path) -> None:
    """`envwright bench selfplay --tiny`: every phase at toy size on CPU, stopped after the warm start
    and resumed by a second call that reuses what was done (minutes)."""
    out = tmp_path / "sp"
    _bench("selfplay", "--tiny", "--out", str(out), "--stop-after", "solver")
    state = json.loads((out / "work" / "state.json").read_text())
    assert {"proposer", "environments", "solver"} <= set(state) and "heldout" not in state
    warm = out / "work" / "warm" / "model" / "config.json"
    stamp = warm.stat().st_mtime
    _bench("selfplay", "--tiny", "--out", str(out))
    assert warm.stat().st_mtime == stamp  # the warm start was not redone
    res = json.loads((out / "selfplay.json").read_text())
    sp, base = res["selfplay"]["s0"], res["baseline"]["s0"]
    assert [r["round"] for r in sp["rounds"]] == [0, 1] and [r["round"] for r in base["rounds"]] == [0, 1]
    for r in sp["rounds"]:
        assert 0.0 <= r["acceptance"] <= 1.0 and r["heldout_pass_rate"] is not None and r["env_share"] < 1.0
        assert r["solver_episodes"] > 0
    # compute-matched: the baseline played the self-play run's solver episodes, round for round
    assert base["episodes"] == [r["solver_episodes"] for r in sp["rounds"]]
    assert [r["solver_episodes"] for r in base["rounds"]] == base["episodes"]
    assert sp["eval_final"] is not None and base["eval_final"] is not None
    assert set(res["targets"]) == {"acceptance_rise_points", "acceptance_met", "heldout_met", "heldout_checks_met",
                                   "env_share_max", "env_share_met", "probe_acceptance_rise_points",
                                   "probe_acceptance_met", "explore_acceptance_rise_points"}
    # the tiny bench probes 1 document (the H200 config 32): at round 0 and for the final policy
    assert [r["probe_acceptance"] is not None for r in sp["rounds"]] == [True, False]
    assert sp["probe_final"] is not None and res["targets"]["probe_acceptance_rise_points"] is not None
    probed = [json.loads(line) for line in (out / "selfplay-s0-probes.jsonl").open()]
    assert sorted({p["round"] for p in probed}) == [0, 2] and all("completion" in p for p in probed)
    # the config's update schedule (2 passes x 4 mini-batches) reaches both runs: a round with n samples that have an
    # advantage takes 2 x min(4, n) steps, and the tiny warm start's episodes differ enough to give rounds such samples
    for name in ("selfplay", "baseline"):
        updates = [json.loads(line)["update"] for line in (out / f"{name}-s0-metrics.jsonl").open()]
        taken = [(u["steps"] + u["skipped"], u["samples"]) for u in updates]
        assert all(n == 2 * min(4, live) for n, live in taken), (name, taken)
        assert max(u["steps"] for u in updates) > 1, (name, taken)
    assert res["environments"]["train_templates"] >= 1 and res["heldout_model"]["accepted"] >= 1
    for name in ("selfplay.md", "selfplay.png", "selfplay-s0-metrics.jsonl", "baseline-s0-metrics.jsonl"):
        assert (out / name).is_file(), name
    from training.config import load_config  # the run's settings beside its results, loadable as a config

    assert load_config(out / "config.yaml").selfplay.probe.documents == 1
    assert "| round | acceptance |" in (out / "selfplay.md").read_text()
    # the final held-out score per source: the held-out templates and the model-written snapshot
    by = res["comparison"]["by_source"]
    assert set(by) == {"template", "model"} and all({"selfplay", "baseline"} <= set(v) for v in by.values())
    assert "| template |" in (out / "selfplay.md").read_text()
    assert all(set(r["heldout_by_source"]) == {"template", "model"} for r in sp["rounds"] + base["rounds"])
    # both final policies played the same held-out episodes, which the report pairs
    n_final = len((out / "selfplay-s0-final-episodes.jsonl").read_text().splitlines())
    assert n_final > 0 and res["comparison"]["paired"]["all"]["episodes"] == n_final
    # ... and in progress fraction too (every rollout tracks it beside the mode that pays)
    prog = res["comparison"]["progress_fraction"]
    assert prog["paired"]["episodes"] == n_final and prog["selfplay"]["n"] == prog["baseline"]["n"] == 1
    assert all(r["heldout_progress"] is not None for r in sp["rounds"])
    assert "| selfplay, progress fraction |" in (out / "selfplay.md").read_text()


def _record_many(work: str, prefix: str, n: int) -> None:
    from training.bench.selfplay import _record

    for i in range(n):
        _record(Path(work), {f"{prefix}{i}": i})


def test_selfplay_state_keeps_the_phases_of_side_by_side_processes(tmp_path: Path) -> None:
    """`bench selfplay --parallel` runs each seed in its own process on one --out: their state writes
    re-read the file under a lock, so no process drops another's finished phases."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_record_many, args=(str(tmp_path), p, 40)) for p in ("a", "b", "c")]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    state = json.loads((tmp_path / "state.json").read_text())
    assert len(state) == 120 and state["b39"] == 39
    assert not list(tmp_path.glob(".state.json.*"))  # atomic writes leave no temporary file behind


def test_a_seed_already_running_is_refused_not_run_twice(tmp_path: Path) -> None:
    from training.bench.selfplay import _run_seeds, seed_phases
    from training.parallel import file_lock

    with file_lock(tmp_path / ".seed-3.lock") as mine:
        assert mine
        with pytest.raises(SystemExit, match=r"seed 3 of .* is being run by another process"):
            seed_phases(None, tmp_path, [], 3)
        with pytest.raises(SystemExit, match=r"seed 3 of .* is being run by another process"):  # before a child
            _run_seeds(None, tmp_path, [], [3], dict, isolate=True, parallel=False, stop_after=None, resume="")
    with file_lock(tmp_path / ".seed-3.lock", wait=False) as mine:
        assert mine  # released


def test_side_by_side_seeds_get_their_own_rendezvous_port_and_one_engine_start_lock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each side-by-side seed process is started with a ``MASTER_PORT`` of its own (on the H200 three seeds on
    accelerate's default 29500: two died with EADDRINUSE) and the one lock their engines start under; with
    engines isolated, a seed's self-play and baseline are two processes of its lane, one after the other."""
    import subprocess

    from training.bench import selfplay
    from training.config import config_from_dict
    from training.parallel import ENGINE_START_LOCK

    started: list[tuple[dict[str, str], dict[str, Any]]] = []

    class _Done:
        pid = 1

        def __init__(self, cmd: list[str], **kw: Any) -> None:
            started.append((kw["env"], json.loads(cmd[-1])))

        def poll(self) -> int:
            return 0

        def wait(self) -> int:
            return 0

    monkeypatch.setattr(subprocess, "Popen", _Done)
    monkeypatch.setenv("MASTER_PORT", "29500")
    cfg = config_from_dict({"selfplay": {"rounds": 1}})

    def job(**kw: Any) -> dict[str, Any]:
        return kw

    assert not selfplay._run_seeds(cfg, tmp_path, [], [0, 1, 2], job, isolate=True, parallel=True, stop_after=None,
                                   resume="again")
    ports = {env["MASTER_PORT"] for env, _ in started}
    assert len(started) == 6 and len(ports) == 3 and "29500" not in ports
    assert {env[ENGINE_START_LOCK] for env, _ in started} == {str(tmp_path / ".engine-start.lock")}
    assert all(env["MASTER_ADDR"] == "127.0.0.1" and env["PATH"] == os.environ["PATH"] for env, _ in started)
    by_seed = {s: [a["phases"] for _, a in started if a["seed"] == s] for s in (0, 1, 2)}
    assert by_seed == {s: [["selfplay"], ["baseline"]] for s in (0, 1, 2)}
    assert {a["processes"] for _, a in started} == {3}
    started.clear()
    selfplay._record(tmp_path, {"selfplay-s1": {}})  # done phases are not started again
    selfplay._run_seeds(cfg, tmp_path, [], [0, 1], job, isolate=False, parallel=True, stop_after=None, resume="")
    assert sorted((a["seed"], a["phases"]) for _, a in started) == [(0, ["selfplay", "baseline"]), (1, ["baseline"])]


def lane_job(args_json: str) -> None:
    """A child process of :func:`test_lanes_run_in_order_tee_one_lane_and_report_a_failure`."""
    args = json.loads(args_json)
    with open(args["file"], "a") as fh:
        fh.write(f"{args['name']} {args['processes']} {os.environ['MASTER_PORT']}\n")
    print(f"job {args['name']} says hello", flush=True)
    raise SystemExit(args.get("exit", 0))


def test_lanes_run_in_order_tee_one_lane_and_report_a_failure(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """:func:`training.bench.children.run_lanes` runs a lane's jobs one after another in processes of their own;
    one lane's output reaches the terminal and its log; a failed job stops its lane and the error names it, its
    exit status, its log and the command that resumes."""
    from training.bench.children import run_lanes

    entry = "tests.training.test_bench:lane_job"
    out = tmp_path / "jobs.txt"
    run_lanes(entry, {"one": [{"file": str(out), "name": "a"}, {"file": str(out), "name": "b"}]}, tmp_path,
              resume="x")
    assert [line.split()[:2] for line in out.read_text().splitlines()] == [["a", "1"], ["b", "1"]]
    assert "job a says hello" in capsys.readouterr().out  # teed to the terminal ...
    assert "job b says hello" in (tmp_path / "one.log").read_text()  # ... and to the log
    out.unlink()
    with pytest.raises(SystemExit) as err:
        run_lanes(entry, {"l1": [{"file": str(out), "name": "c", "exit": 3}, {"file": str(out), "name": "d"}],
                          "l2": [{"file": str(out), "name": "e"}, {"file": str(out), "name": "f"}]},
                  tmp_path, resume="envwright bench selfplay --out o")
    assert str(err.value) == (f"failed: l1 (exit 3, log {tmp_path / 'l1.log'}). Resume with: envwright bench "
                              "selfplay --out o")
    ran = {line.split()[0]: line.split()[1:] for line in out.read_text().splitlines()}
    assert set(ran) == {"c", "e", "f"} and {p for p, _ in ran.values()} == {"2"}
    assert ran["e"][1] == ran["f"][1] != ran["c"][1]  # a rendezvous port per lane
    assert "job c says hello" in (tmp_path / "l1.log").read_text()


def test_engines_start_one_at_a_time_under_the_launchers_lock(tmp_path: Path) -> None:
    """:func:`training.parallel.engine_start` holds the lock the launcher named while an engine starts (another
    process's start waits), and holds nothing in a plain command."""
    from training.parallel import ENGINE_START_LOCK, engine_start, file_lock

    lock = tmp_path / "start.lock"
    with engine_start({ENGINE_START_LOCK: str(lock)}), file_lock(lock, wait=False) as free:
        assert not free
    with engine_start({}), file_lock(lock, wait=False) as free:
        assert free


def test_free_ports_are_distinct_and_free() -> None:
    import socket

    from training.parallel import free_ports

    ports = free_ports(4)
    assert len(set(ports)) == 4
    for port in ports:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_side_by_side_seeds_share_the_gpu_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each side-by-side seed process caps its share of every GPU's memory (one process, or no GPU: no cap)."""
    import torch

    from training.bench.children import share_device

    caps: list[tuple[float, int]] = []
    monkeypatch.setattr(torch.cuda, "set_per_process_memory_fraction", lambda f, d: caps.append((f, d)))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert share_device(2) is None and caps == []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert share_device(1) is None and caps == []
    assert share_device(2) == pytest.approx(0.475) and caps == [(pytest.approx(0.475), 0), (pytest.approx(0.475), 1)]


def test_the_trainer_benchmarks_take_their_options() -> None:
    """Each benchmark is its own sub-command with its own options; several values follow one flag."""
    from envgen.cli.options import spread_values
    from training.bench.learning import command as learning
    from training.bench.selfplay import command as selfplay

    assert spread_values(learning.params, ["--envs", "a", "b", "--tiny", "--envs", "c"]) == [
        "--envs", "a", "--envs", "b", "--tiny", "--envs", "c"]
    ctx = selfplay.make_context("selfplay", ["--out", "x", "--seeds", "0", "1", "--tiny", "--parallel"])
    assert ctx.params["seeds"] == (0, 1) and ctx.params["tiny"] and ctx.params["parallel"]
    result = CliRunner().invoke(cli, ["bench", "speed", "--out", "x", "--steps", "2"])
    assert result.exit_code == 2 and "No such option '--steps'" in result.output


@pytest.mark.slow
def test_speed_on_a_real_checkpoint_and_its_plot(tmp_path: Path) -> None:
    """``bench speed --model FOLDER`` measures that checkpoint (its tokenizer's prompts, its shape in the result)
    and draws its plot."""
    from training.bench.common import tiny_model_dir

    model = tiny_model_dir(tmp_path / "m")
    _bench("speed", "--out", str(tmp_path / "out"), "--tiny", "--device", "cpu", "--model", str(model))
    result = json.loads((tmp_path / "out" / "speed.json").read_text())
    assert result["model"] == str(model) and result["model_shape"]["model_type"] == "qwen3"
    assert result["trl_default"]["tokens"] > 0 and result["fast"]["tokens"] > 0
    if find_spec("matplotlib") is not None:
        assert (tmp_path / "out" / "speed.png").stat().st_size > 0


def test_speed_refuses_a_missing_model(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["bench", "speed", "--out", str(tmp_path), "--tiny", "--device", "cpu",
                                      "--model", str(tmp_path / "nowhere")])
    assert result.exit_code != 0 and "give smollm2, a .gguf file or a checkpoint folder" in result.output


def test_plot_speed_draws_only_the_paths_with_figures(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from training.bench.speed import plot_speed

    row = {"tokens_per_second": 100.0}
    result = {"model": "m", "rows": 2, "prompt_tokens_mean": 10.0, "max_new_tokens": 4, "dtype": "bfloat16",
              "trl_default": row, "fast": {"tokens_per_second": 250.0}, "vllm": {"available": False, "reason": "x"}}
    path = plot_speed(result, tmp_path / "speed.png")
    assert path is not None and path.stat().st_size > 0


@pytest.fixture(scope="module")
def warm_bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny ``bench selfplay`` run stopped after its warm start (phases 1 to 3), to copy."""
    out = tmp_path_factory.mktemp("warm") / "sp"
    _bench("selfplay", "--tiny", "--out", str(out), "--stop-after", "solver")
    return out


def _copy_run(warm: Path, out: Path) -> list[str]:
    """A copy of the warm-started run at ``out`` (its paths rewritten), and the arguments that continue it."""
    import shutil

    shutil.copytree(warm, out)
    state = (out / "work" / "state.json").read_text().replace(str(warm), str(out))
    (out / "work" / "state.json").write_text(state)
    return ["selfplay", "--tiny", "--out", str(out), "--stop-after", "heldout"]


def _heldout_of(out: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """The held-out phase's record (less its seconds) and the environments it wrote (less their dates)."""
    record = {k: v for k, v in json.loads((out / "work" / "state.json").read_text())["heldout"].items()
              if k != "seconds"}
    files = {}
    for p in sorted((out / "work" / "heldout").rglob("*.json")):
        spec = json.loads(p.read_text())
        spec.get("provenance", {}).pop("created_at", None)
        spec.pop("created_at", None)
        files[str(p.relative_to(out))] = json.dumps(spec, sort_keys=True)
    return record, files


@pytest.mark.slow
def test_bench_selfplay_engine_phase_in_a_child_process(warm_bench: Path, tmp_path: Path) -> None:
    """``--child-processes`` (the default with vLLM) runs the held-out phase in a child process: a failing child
    names its log and the command to resume; a killed child is reported, and the same command then resumes
    and records what the driver's own process records (minutes)."""
    import signal
    import subprocess
    import sys
    import time

    import psutil

    # a child that fails (the warm model's weights are unreadable) names its log and the command to resume
    broken = _copy_run(warm_bench, tmp_path / "broken")
    for weights in (tmp_path / "broken" / "work" / "warm" / "model").glob("*.safetensors"):
        weights.write_bytes(b"not a checkpoint")
    result = CliRunner().invoke(cli, ["bench", *broken, "--child-processes"])
    log = tmp_path / "broken" / "work" / "heldout.log"
    assert result.exit_code == 1
    assert f"failed: heldout (exit 1, log {log}). Resume with: envwright bench {' '.join(broken)} " \
           "--child-processes" in result.output
    assert "Traceback" in log.read_text() and "heldout" not in json.loads(
        (tmp_path / "broken" / "work" / "state.json").read_text())
    # the driver's own process
    _bench(*_copy_run(warm_bench, tmp_path / "inproc"))
    # a child killed mid-phase: the driver says so and exits 1; the same command then resumes the phase
    args = [*_copy_run(warm_bench, tmp_path / "child"), "--child-processes"]
    driver = subprocess.Popen([sys.executable, "-m", "envgen", "bench", *args], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    child_log = tmp_path / "child" / "work" / "heldout.log"
    deadline = time.monotonic() + 300
    while not (child_log.is_file() and "Loading weights" in child_log.read_text()):
        assert driver.poll() is None and time.monotonic() < deadline, driver.communicate()[0]
        time.sleep(0.5)
    (child,) = psutil.Process(driver.pid).children()
    child.send_signal(signal.SIGKILL)
    output = driver.communicate(timeout=120)[0]
    assert driver.returncode == 1, output
    assert f"failed: heldout (killed by SIGKILL, log {child_log})" in output and "Resume with: envwright" in output
    assert "heldout" not in json.loads((tmp_path / "child" / "work" / "state.json").read_text())
    _bench(*args)
    assert _heldout_of(tmp_path / "child") == _heldout_of(tmp_path / "inproc")
    assert child_log.read_text().count("Loading weights: 100%") >= 2  # the log keeps the killed run's output

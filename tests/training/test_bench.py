"""The trainer's benchmarks (`envwright bench speed|precision|throughput|learning|selfplay`) at toy sizes on
CPU (slow), and their pieces (fast)."""

from __future__ import annotations

import json
import shutil
import statistics
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
    # the config's update schedule (2 passes x 4 mini-batches) reaches both runs: several steps a round
    for name in ("selfplay", "baseline"):
        lines = (out / f"{name}-s0-metrics.jsonl").read_text().splitlines()
        steps = [json.loads(line)["update"]["steps"] for line in lines]
        assert all(0 <= n <= 8 for n in steps) and max(steps) > 1, (name, steps)
    assert res["environments"]["train_templates"] >= 1 and res["heldout_model"]["accepted"] >= 1
    for name in ("selfplay.md", "selfplay.png", "selfplay-s0-metrics.jsonl", "baseline-s0-metrics.jsonl"):
        assert (out / name).is_file(), name
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


H200_SELFPLAY = Path(__file__).resolve().parents[2] / "training" / "results" / "h200" / "selfplay-v2"


def test_selfplay_report_of_the_h200_run(tmp_path: Path) -> None:
    """The report, re-rendered from the committed H200 run's metrics (seed 0, five rounds): pass rates, check
    fractions, the warm-start gap that is the noise of one held-out measurement, and the targets."""
    from training.bench.selfplay_report import merge

    res = merge(tmp_path, [H200_SELFPLAY])  # a merge of one result folder is its report, re-rendered
    sp, base = res["selfplay"]["s0"], res["baseline"]["s0"]
    assert [r["round"] for r in sp["rounds"]] == list(range(5)) and base["episodes"] == [16, 32, 32, 32, 32]
    assert sp["eval_final"] == pytest.approx(1 / 32) and base["eval_final"] == pytest.approx(2 / 32)
    assert sp["eval_final_reward"] == pytest.approx(0.6259, abs=1e-4)
    assert base["eval_final_reward"] == pytest.approx(0.6194, abs=1e-4)
    # round 0 of both is the warm start on the same tasks: 1/32 against 3/32 passed
    assert res["warm_start_gap"]["pass_rate"] == pytest.approx(2 / 32)
    assert res["warm_start_gap"]["reward"] == pytest.approx(abs(sp["rounds"][0]["heldout_reward"]
                                                                - base["rounds"][0]["heldout_reward"]))
    t = res["targets"]
    assert not t["heldout_met"] and t["heldout_checks_met"] and t["env_share_met"]
    assert t["probe_acceptance_rise_points"] is None and not t["probe_acceptance_met"]  # that run had no probe
    md = (tmp_path / "selfplay.md").read_text()
    assert "| held-out checks | baseline checks |" in md and "| selfplay, check fraction | 0.626 |" in md
    assert "noise of one measurement" in md and (tmp_path / "selfplay.png").stat().st_size > 10_000



def test_selfplay_report_of_the_h200_v3_run(tmp_path: Path) -> None:
    """``selfplay-v3/`` (8 optimizer steps a round, one seed) re-rendered from its committed metrics: the figures
    the README and h200.md quote, a kept skill a round, and the same steps in both runs."""
    from training.bench.selfplay_report import merge

    src = H200_SELFPLAY.parent / "selfplay-v3"
    res = merge(tmp_path, [src])
    sp, base = res["selfplay"]["s0"], res["baseline"]["s0"]
    assert [r["skills_added"] for r in sp["rounds"]] == [1] * 5 and sp["rounds"][-1]["skills_active"] == 17
    assert [r["acceptance"] for r in sp["rounds"]] == [1.0] * 5
    assert sp["eval_final"] == base["eval_final"] == 0.0
    assert sp["eval_final_reward"] == pytest.approx(0.5653, abs=1e-4)
    assert base["eval_final_reward"] == pytest.approx(0.5867, abs=1e-4)
    assert [round(r["heldout_reward"], 3) for r in sp["rounds"]] == [0.661, 0.672, 0.677, 0.656, 0.653]
    assert [round(r["heldout_reward"], 3) for r in base["rounds"]] == [0.653, 0.642, 0.682, 0.617, 0.645]
    t = res["targets"]
    assert t["heldout_met"] and not t["heldout_checks_met"] and t["env_share_met"]
    assert t["env_share_max"] == pytest.approx(0.0134, abs=1e-4) and t["probe_acceptance_rise_points"] is None
    assert all(r["heldout_by_source"] == {} for r in sp["rounds"])  # that run did not report sources
    # a run that did gets a panel more: the held-out check fraction by source, round by round
    from training.bench.selfplay_report import _plot

    plain = tmp_path / "plain.png"
    for r in res["selfplay"]["s0"]["rounds"]:  # no timing either: no last row of extra panels
        r["seconds_generation"] = None
    _plot(res, plain)
    for part in ("selfplay", "baseline"):
        for i, r in enumerate(res[part]["s0"]["rounds"]):
            r["heldout_by_source"] = {"template": 0.7 - 0.01 * i, "model": 0.6 + 0.01 * i}
        res[part]["s0"]["eval_final_by_source"] = {"/x/template": {"reward": 0.6}, "/x/model": {"reward": 0.65}}
    _plot(res, tmp_path / "by-source.png")
    from PIL import Image

    assert Image.open(tmp_path / "by-source.png").size[1] > Image.open(plain).size[1]
    for name in ("selfplay", "baseline"):  # compute-matched: 8 optimizer steps a round in both
        rows = [json.loads(line) for line in (src / f"{name}-s0-metrics.jsonl").read_text().splitlines()]
        assert [r["update"]["steps"] for r in rows] == [8] * 5 and all(r["update"]["clip_ratio"] > 0 for r in rows)


def test_selfplay_spread_of_the_h200_v3_seeds(tmp_path: Path) -> None:
    """``selfplay-v3/`` (seed 0) and ``selfplay-v3-s1/`` (seed 1, a later session, the probe on) merged: the
    spread, the probe's rise and the paired final comparison that the README and h200.md quote, and the
    committed merge is what the merge writes."""
    from training.bench.selfplay_report import merge

    root = H200_SELFPLAY.parent
    res = merge(tmp_path, [root / "selfplay-v3", root / "selfplay-v3-s1"])
    assert res["seeds"] == [0, 1]
    sp, base = res["selfplay"]["s1"], res["baseline"]["s1"]
    assert [r["acceptance"] for r in sp["rounds"]] == [1.0, 0.875, 1.0, 1.0, 1.0]
    assert [r["skills_added"] for r in sp["rounds"]] == [1] * 5 and sp["rounds"][-1]["skills_active"] == 17
    assert sp["rounds"][0]["probe_acceptance"] == 0.375 and sp["probe_final"] == 0.5
    assert [round(r["heldout_reward"], 3) for r in sp["rounds"]] == [0.697, 0.608, 0.694, 0.662, 0.666]
    assert [round(r["heldout_reward"], 3) for r in base["rounds"]] == [0.683, 0.646, 0.647, 0.6, 0.645]
    assert [r["solver_episodes"] for r in base["rounds"]] == [r["solver_episodes"] for r in sp["rounds"]]
    c = res["comparison"]
    assert c["selfplay"]["mean"] == pytest.approx(0.015625) and c["baseline"]["mean"] == pytest.approx(0.046875)
    assert c["check_fraction"]["selfplay"]["mean"] == pytest.approx(0.6204, abs=1e-4)
    assert c["check_fraction"]["baseline"]["mean"] == pytest.approx(0.6061, abs=1e-4)
    paired = c["paired"]["all"]  # seed 0's baseline wrote no episodes: seed 1 alone is paired
    assert c["paired"]["seeds"]["s0"]["episodes"] == 0 and c["paired"]["seeds"]["s1"] == paired
    assert (paired["episodes"], paired["better"], paired["worse"], paired["equal"]) == (32, 11, 7, 14)
    assert paired["mean"] == pytest.approx(0.0501, abs=1e-4) and paired["stderr"] == pytest.approx(0.0324, abs=1e-4)
    by = c["by_source"]
    assert round(by["model"]["selfplay"]["reward"]["mean"], 3) == 0.646
    assert round(by["template"]["baseline"]["reward"]["mean"], 3) == 0.631
    t = res["targets"]
    assert t["probe_acceptance_rise_points"] == 12.5 and not t["probe_acceptance_met"]
    assert not t["heldout_met"] and t["heldout_checks_met"] and t["env_share_met"]
    assert t["env_share_max"] == pytest.approx(0.0134, abs=1e-4)
    md = (tmp_path / "selfplay.md").read_text()
    assert "Seed 0:" in md and "| 0 | 1.000 | 1.000 | 0.375 | 0.625 | 0.408 |" in md  # a per-round table per seed
    committed = root / "selfplay-v3-spread"
    assert (tmp_path / "selfplay.md").read_text() == (committed / "selfplay.md").read_text()
    kept = json.loads((committed / "selfplay.json").read_text())
    assert kept["comparison"] == json.loads((tmp_path / "selfplay.json").read_text())["comparison"]
    for name in ("selfplay", "baseline"):  # 8 optimizer steps a round in both runs of seed 1 too
        rows = [json.loads(line) for line in (root / "selfplay-v3-s1" / f"{name}-s1-metrics.jsonl").open()]
        assert [r["update"]["steps"] for r in rows] == [8] * 5


def test_selfplay_report_of_the_h200_v4_run(tmp_path: Path) -> None:
    """``selfplay-v4/`` (the free stream writes without the grammar; seed 0; seed 1 was stopped after its round 0
    to give seed 0 the device) re-rendered: the figures the README and h200.md quote, the unfinished seed named
    and left out, and the committed report is what the merge writes."""
    from training.bench.selfplay_report import merge

    src = H200_SELFPLAY.parent / "selfplay-v4"
    res = merge(tmp_path, [src])
    assert res["seeds"] == [0] and res["merged_from"][0]["unfinished_seeds"] == [1]
    sp, base = res["selfplay"]["s0"], res["baseline"]["s0"]
    assert [r["acceptance"] for r in sp["rounds"]] == [0.75, 0.625, 0.625, 0.875, 1.0]
    assert [r["acceptance_explore"] for r in sp["rounds"]] == [0.5, 0.25, 0.25, 0.75, 1.0]
    assert sp["rounds"][0]["probe_acceptance"] == sp["probe_final"] == 17 / 32
    assert [r["solver_episodes"] for r in base["rounds"]] == [r["solver_episodes"] for r in sp["rounds"]]
    assert sp["eval_final"] == 0.0 and base["eval_final"] == 2 / 32
    assert sp["eval_final_reward"] == pytest.approx(0.6944, abs=1e-4)
    assert base["eval_final_reward"] == pytest.approx(0.5757, abs=1e-4)
    paired = res["comparison"]["paired"]["all"]
    assert (paired["episodes"], paired["better"], paired["worse"], paired["equal"]) == (32, 16, 6, 10)
    assert paired["mean"] == pytest.approx(0.1188, abs=1e-4) and paired["stderr"] == pytest.approx(0.0469, abs=1e-4)
    t = res["targets"]
    assert t["acceptance_rise_points"] == 25.0 and t["explore_acceptance_rise_points"] == 50.0
    assert t["probe_acceptance_rise_points"] == 0.0 and not t["probe_acceptance_met"]
    assert not t["heldout_met"] and t["heldout_checks_met"] and t["env_share_met"]
    md = (tmp_path / "selfplay.md").read_text()
    assert "Left out, unfinished (self-play or baseline stopped before its last round): seed 1 of" in md
    assert md == (src / "selfplay.md").read_text().replace("training/results/h200/selfplay-v4", str(src))
    kept = json.loads((src / "selfplay.json").read_text())
    assert kept["comparison"] == json.loads((tmp_path / "selfplay.json").read_text())["comparison"]
    rows = [json.loads(line) for line in (src / "selfplay-s0-metrics.jsonl").open()]
    # the free stream decoded without the grammar: its unparsable proposals were trained on (scored -1)
    assert all(r["update"]["proposer"]["samples"] == 8 for r in rows) and rows[1]["proposer"]["parsed"] < 1


def _assert_heldout(res: dict[str, Any], *, passed: tuple[int, int], checks: tuple[float, float],
                    paired: tuple[int, int, int, float, float], progress: tuple[float, float, float]) -> None:
    """A one-seed H200 report's held-out figures (seed 0, 32 episodes): passes of self-play and the baseline, their
    check fractions, the paired check-fraction difference (better, worse, equal, mean, standard error) and the
    progress fractions with their paired mean; the baseline played as many episodes a round as self-play."""
    sp, base = res["selfplay"]["s0"], res["baseline"]["s0"]
    assert [r["solver_episodes"] for r in base["rounds"]] == [r["solver_episodes"] for r in sp["rounds"]]
    assert (sp["eval_final"], base["eval_final"]) == (passed[0] / 32, passed[1] / 32)
    assert (sp["eval_final_reward"], base["eval_final_reward"]) == (pytest.approx(checks[0], abs=1e-4),
                                                                    pytest.approx(checks[1], abs=1e-4))
    p = res["comparison"]["paired"]["all"]
    assert (p["episodes"], p["better"], p["worse"], p["equal"]) == (32, *paired[:3])
    assert (p["mean"], p["stderr"]) == (pytest.approx(paired[3], abs=1e-3), pytest.approx(paired[4], abs=1e-3))
    prog = res["comparison"]["progress_fraction"]
    assert (prog["selfplay"]["mean"], prog["baseline"]["mean"], prog["paired"]["mean"]) == pytest.approx(
        progress, abs=1e-3)


def _assert_probe_and_targets(res: dict[str, Any], *, warm: float, final: float, rise: float,
                              probe_met: bool) -> None:
    """A one-seed H200 report's probe (seed 0: acceptance without the grammar at the warm start and of the final
    policy), its rise in points and whether that meets the +15 target; the held-out and environment targets met."""
    sp, t = res["selfplay"]["s0"], res["targets"]
    assert sp["rounds"][0]["probe_acceptance"] == warm and sp["probe_final"] == final
    assert t["probe_acceptance_rise_points"] == pytest.approx(rise) and t["probe_acceptance_met"] is probe_met
    assert t["heldout_met"] and t["heldout_checks_met"] and t["env_share_met"]


def _rerendered(tmp_path: Path, folder: str) -> tuple[Path, dict[str, Any]]:
    """A committed one-seed H200 run (``training/results/h200/FOLDER``) merged into ``tmp_path``: the folder and the
    report; its seed 0 finished both runs."""
    from training.bench.selfplay_report import merge

    src = H200_SELFPLAY.parent / folder
    res = merge(tmp_path, [src])
    assert res["seeds"] == [0] and not res["merged_from"][0].get("unfinished_seeds")
    return src, res


def test_selfplay_report_of_the_h200_v7_run(tmp_path: Path) -> None:
    """``selfplay-v7/`` (v6 with 16 format-recovery documents a round and a four-sample probe; seed 0)
    re-rendered: the figures the README and h200.md quote (the run that meets the acceptance target), and the
    committed report is what the merge writes."""
    src, res = _rerendered(tmp_path, "selfplay-v7")
    sp = res["selfplay"]["s0"]
    assert sp["rounds"][0]["probe_samples"] == 4
    _assert_heldout(res, passed=(1, 1), checks=(0.6848, 0.6106), paired=(14, 6, 12, 0.074, 0.031),
                    progress=(0.529, 0.387, 0.143))
    _assert_probe_and_targets(res, warm=62 / 128, final=115 / 128, rise=41.40625, probe_met=True)
    rows = [json.loads(line) for line in (src / "selfplay-s0-metrics.jsonl").open()]
    rec = [r["format_recovery"] for r in rows]
    assert [r["unparsed"] for r in rec] == [r["recovered"] for r in rec] == [8, 4, 6, 4, 7]
    assert [(r["documents"], r["documents_parsed"]) for r in rec] == [(16, 9), (16, 14), (16, 10), (16, 12), (16, 11)]
    assert all(r["update"]["samples"] == r["recovered"] for r in rec)
    probes = [json.loads(line) for line in (src / "selfplay-s0-probes.jsonl").open()]
    assert len(probes) == 256 and {p["sample"] for p in probes} == {0, 1, 2, 3}
    final = [p for p in probes if p["round"] == 5]
    assert sum(p["parsed"] for p in final) == 116 and sum(p["accepted"] for p in final) == 115
    assert sp["probe_pairs"] == {"documents": 32, "rounds": [0, 5], "gained": 27, "lost": 1,
                                 "p_value": pytest.approx(2 * 29 / 2**28)}  # 2 * P(X <= 1), X ~ Bin(28, 1/2)
    md = (tmp_path / "selfplay.md").read_text()
    assert "0.484 -> 0.898 (on the same 32 documents: 27 gained, 1 lost; sign test p 0.00)." in md
    assert md == (src / "selfplay.md").read_text()  # the committed report is the merge's
    # v4 to v7 share the warm start (config and seed): their round-0 probes together, 137 of 256
    warm = [(json.loads((src.parent / v / "selfplay.json").read_text())["selfplay"]["s0"]["rounds"][0], n)
            for v, n in (("selfplay-v4", 32), ("selfplay-v5", 32), ("selfplay-v6", 64), ("selfplay-v7", 128))]
    assert sum(round(r["probe_acceptance"] * n) for r, n in warm) == 137
    # the four-sample probe's cost: the warm start's batch of 128 proposals took 257 s, the final policy's 99 s
    assert [round(r["probe"]["seconds"]) for r in rows if "probe" in r] == [257]
    summary = json.loads((src / "selfplay-s0-summary.json").read_text())
    assert round(summary["probe_final"]["seconds"]) == 99


def test_selfplay_report_of_the_h200_v6_run(tmp_path: Path) -> None:
    """``selfplay-v6/`` (v5 with 8 more format-recovery documents a round and a two-sample probe; seed 0)
    re-rendered: the figures the README and h200.md quote, and the committed report is what the merge writes."""
    src, res = _rerendered(tmp_path, "selfplay-v6")
    sp = res["selfplay"]["s0"]
    assert sp["rounds"][0]["probe_samples"] == 2
    _assert_heldout(res, passed=(1, 0), checks=(0.6835, 0.6172), paired=(13, 9, 10, 0.066, 0.042),
                    progress=(0.527, 0.421, 0.106))
    _assert_probe_and_targets(res, warm=41 / 64, final=50 / 64, rise=14.0625, probe_met=False)
    rows = [json.loads(line) for line in (src / "selfplay-s0-metrics.jsonl").open()]
    rec = [r["format_recovery"] for r in rows]  # the free stream's and the extra documents' unparsed proposals
    assert [r["unparsed"] for r in rec] == [r["recovered"] for r in rec] == [6, 3, 2, 2, 3]
    assert [(r["documents"], r["documents_parsed"]) for r in rec] == [(8, 3), (8, 6), (8, 6), (8, 6), (8, 6)]
    assert all(r["documents_in_round_batch"] for r in rec)
    probes = [json.loads(line) for line in (src / "selfplay-s0-probes.jsonl").open()]
    assert len(probes) == 128 and {p["sample"] for p in probes} == {0, 1}
    final_errors = [p["error"] for p in probes if p["round"] == 5 and not p["accepted"]]
    assert len(final_errors) == 14 and sum("at most 8 items" in e for e in final_errors) == 3
    assert sp["probe_pairs"] == {"documents": 32, "rounds": [0, 5], "gained": 10, "lost": 5,
                                 "p_value": pytest.approx(0.3018, abs=1e-4)}  # 2 * P(X <= 5), X ~ Bin(15, 1/2)
    md = (tmp_path / "selfplay.md").read_text()
    assert "0.641 -> 0.781 (on the same 32 documents: 10 gained, 5 lost; sign test p 0.30)." in md
    assert md == (src / "selfplay.md").read_text()  # the committed report is the merge's
    # v4, v5 and v6 share the warm start (config and seed): their round-0 probes together, 75 of 128
    warm = [(json.loads((src.parent / v / "selfplay.json").read_text())["selfplay"]["s0"]["rounds"][0], n)
            for v, n in (("selfplay-v4", 32), ("selfplay-v5", 32), ("selfplay-v6", 64))]
    assert sum(round(r["probe_acceptance"] * n) for r, n in warm) == 75
    assert "seed 0 6/6 (+8, 3 parsed), 3/3 (+8, 6 parsed), 2/2 (+8, 6 parsed), 2/2 (+8, 6 parsed)" in md


def test_selfplay_report_of_the_h200_v5_run(tmp_path: Path) -> None:
    """``selfplay-v5/`` (v4's run with ``selfplay.format_recovery`` on; seed 0) re-rendered: the figures the
    README and h200.md quote, the probe's kept proposals, and the committed report is what the merge writes."""
    src, res = _rerendered(tmp_path, "selfplay-v5")
    sp = res["selfplay"]["s0"]
    assert [r["acceptance_explore"] for r in sp["rounds"]] == [0.5, 0.25, 0.5, 1.0, 0.25]
    _assert_heldout(res, passed=(1, 0), checks=(0.6792, 0.6446), paired=(10, 9, 13, 0.035, 0.037),
                    progress=(0.521, 0.494, 0.026))
    _assert_probe_and_targets(res, warm=17 / 32, final=20 / 32, rise=9.375, probe_met=False)
    rows = [json.loads(line) for line in (src / "selfplay-s0-metrics.jsonl").open()]
    rec = [r["format_recovery"] for r in rows]  # every unparsed free proposal recovered and learnt
    assert [r["unparsed"] for r in rec] == [r["recovered"] for r in rec] == [2, 3, 2, 0, 3]
    assert all(r["update"]["samples"] == r["recovered"] for r in rec)
    probes = [json.loads(line) for line in (src / "selfplay-s0-probes.jsonl").open()]
    first = {p["doc_id"]: p["accepted"] for p in probes if p["round"] == 0}
    last = {p["doc_id"]: p["accepted"] for p in probes if p["round"] == 5}
    assert first.keys() == last.keys() and len(first) == 32
    gained = sum(last[d] and not first[d] for d in first)
    lost = sum(first[d] and not last[d] for d in first)
    assert (gained, lost) == (9, 6)
    assert sp["probe_pairs"] == {"documents": 32, "rounds": [0, 5], "gained": 9, "lost": 6,
                                 "p_value": pytest.approx(0.6072, abs=1e-4)}  # 2 * P(X <= 6), X ~ Bin(15, 1/2)
    md = (tmp_path / "selfplay.md").read_text()
    assert "0.531 -> 0.625 (on the same 32 documents: 9 gained, 6 lost; sign test p 0.61)." in md
    assert md == (src / "selfplay.md").read_text().replace("training/results/h200/selfplay-v5", str(src))
    assert "seed 0 warm start: blueprint_schema 15; seed 0 final: blueprint_schema 12." in md
    assert ("Format recovery, round by round (free proposals recovered under the grammar and learnt / free "
            "proposals that did not parse): seed 0 2/2, 3/3, 2/2, 0/0, 3/3.") in md


def test_the_report_counts_the_format_recovery_documents(tmp_path: Path) -> None:
    """Runs with ``selfplay.format_recovery_documents`` show the extra documents beside each round's recovered /
    unparsed count; runs without format recovery (``selfplay-v4``) get no such line."""
    from training.bench.selfplay_report import merge

    src = tmp_path / "src"
    shutil.copytree(H200_SELFPLAY.parent / "selfplay-v5", src)
    rows = [json.loads(line) for line in (src / "selfplay-s0-metrics.jsonl").open()]
    for r in rows:
        r["format_recovery"].update(documents=8, documents_parsed=5, documents_in_round_batch=True)
    (src / "selfplay-s0-metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    merge(tmp_path / "out", [src])
    md = (tmp_path / "out" / "selfplay.md").read_text()
    assert ("the free stream's and the extra documents'; +N, M parsed: N more documents written only for this "
            "step, M of whose proposals parsed): seed 0 2/2 (+8, 5 parsed), 3/3 (+8, 5 parsed), 2/2 (+8, 5 parsed), "
            "0/0 (+8, 5 parsed), 3/3 (+8, 5 parsed).") in md
    assert "Format recovery" not in (H200_SELFPLAY.parent / "selfplay-v4" / "selfplay.md").read_text()


def test_the_pooled_selfplay_figures_the_readme_quotes() -> None:
    """The README's pooled self-play figures, from the committed reports of the six finished seed-runs since the
    step-budget fix (v3 seeds 0 and 1, v4, v5, v6, v7): held-out passes 4 against 6 of 192, and self-play's final
    check fraction ahead of the baseline's by +0.054 on average."""
    root = H200_SELFPLAY.parent
    runs = []
    for folder in ("selfplay-v3-spread", "selfplay-v4", "selfplay-v5", "selfplay-v6", "selfplay-v7"):
        res = json.loads((root / folder / "selfplay.json").read_text())
        runs += [(res["selfplay"][s], res["baseline"][s]) for s in res["selfplay"]
                 if res["selfplay"][s].get("eval_final") is not None and s in res["baseline"]]
    assert len(runs) == 6
    passes = [(round(sp["eval_final"] * 32), round(b["eval_final"] * 32)) for sp, b in runs]
    assert [sum(x) for x in zip(*passes, strict=True)] == [4, 6]
    gaps = [sp["eval_final_reward"] - b["eval_final_reward"] for sp, b in runs]
    assert statistics.fmean(gaps) == pytest.approx(0.054, abs=5e-4)
    assert [round(g, 3) for g in gaps] == [-0.021, 0.050, 0.119, 0.035, 0.066, 0.074]
    readme = (root.parents[2] / "README.md").read_text()
    assert "pass 4 vs 6 of 192, check fraction ahead by +0.054 on average" in readme


def test_probe_pairs_pair_the_first_and_last_probe_on_their_documents() -> None:
    """The probe's documents are fixed, so the first and the last probe pair up document by document: gained,
    lost, and the exact two-sided sign test on them; one probe, or none, gives no pairing."""
    from training.bench.selfplay_report import _probe_pairs

    def line(r: int, doc: str, ok: bool) -> str:
        return json.dumps({"round": r, "doc_id": doc, "accepted": ok})

    docs = [f"d{i}" for i in range(6)]
    first = [line(0, d, i < 2) for i, d in enumerate(docs)]  # d0, d1 accepted
    last = [line(5, d, i in (1, 2, 3, 4, 5)) for i, d in enumerate(docs)]  # d0 lost; d2..d5 gained
    middle = [line(2, d, False) for d in docs]  # only the first and the last probe count
    pp = _probe_pairs(first + middle + last)
    assert pp == {"documents": 6, "rounds": [0, 5], "gained": 4, "lost": 1, "p_value": pytest.approx(12 / 32)}
    assert _probe_pairs(first) is None and _probe_pairs([]) is None
    same = _probe_pairs(first + [line(5, d, i < 2) for i, d in enumerate(docs)])  # no change either way
    assert same is not None and (same["gained"], same["lost"], same["p_value"]) == (0, 0, 1.0)
    # several samples a document (acceptance_probe_samples): a document counts once, by its share accepted
    twice = [line(0, "a", True), line(0, "a", False), line(0, "b", False), line(0, "b", False),
             line(5, "a", True), line(5, "a", True), line(5, "b", True), line(5, "b", False)]
    both = _probe_pairs(twice)
    assert both is not None and (both["documents"], both["gained"], both["lost"]) == (2, 2, 0)


def test_the_report_says_why_probe_proposals_failed(tmp_path: Path) -> None:
    """Runs that record the probe's failure codes (``probe.failures``) get them in the report, warm start and final
    policy; runs that did not (``selfplay-v4``) get no such line."""
    from training.bench.selfplay_report import merge

    src = tmp_path / "src"
    shutil.copytree(H200_SELFPLAY.parent / "selfplay-v4", src)
    rows = [json.loads(line) for line in (src / "selfplay-s0-metrics.jsonl").open()]
    rows[0]["probe"]["failures"] = {"codes": {"blueprint_schema": 10, "json_syntax": 5}, "truncated": 3}
    rows[0]["probe"]["samples"] = 2  # acceptance_probe_samples: the report says so
    (src / "selfplay-s0-metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = json.loads((src / "selfplay-s0-summary.json").read_text())
    summary["probe_final"]["failures"] = {"codes": {"blueprint_schema": 3, "no_json": 15}, "truncated": 0,
                                          "schema": {"operations: too_long": 2, "title: string_pattern_mismatch": 1}}
    (src / "selfplay-s0-summary.json").write_text(json.dumps(summary))
    kept = [{"round": 0, "doc_id": "d", "parsed": False, "error_code": "json_syntax", "completion": "{"}]
    (src / "selfplay-s0-probes.jsonl").write_text(json.dumps(kept[0]) + "\n")
    res = merge(tmp_path / "out", [src])
    assert res["selfplay"]["s0"]["rounds"][0]["probe_failures"]["truncated"] == 3
    # the probe's proposals travel with the report (and with a merge of it)
    assert json.loads((tmp_path / "out" / "selfplay-s0-probes.jsonl").read_text()) == kept[0]
    md = (tmp_path / "out" / "selfplay.md").read_text()
    assert ("Why the probe's unparsed proposals failed: seed 0 warm start: blueprint_schema 10, json_syntax 5 (3 cut "
            "off by the token budget); seed 0 final: blueprint_schema 3, no_json 15; first schema problem: "
            "operations: too_long 2, title: string_pattern_mismatch 1.") in md
    assert "Acceptance without the grammar (the probe, 2 proposals a document), warm start" in md
    assert "Why the probe" not in (H200_SELFPLAY.parent / "selfplay-v4" / "selfplay.md").read_text()


def test_the_report_compares_the_progress_fraction_where_the_runs_scored_it(tmp_path: Path) -> None:
    """Final held-out episodes that carry the progress fraction (``score.progress``) give the comparison and the
    paired difference in it; runs from before it (``selfplay-v4``) give neither."""
    from training.bench.selfplay_report import merge

    src = tmp_path / "src"
    shutil.copytree(H200_SELFPLAY.parent / "selfplay-v4", src)
    for name, value in (("selfplay", 0.5), ("baseline", 0.25)):
        lines = [json.loads(line) for line in (src / f"{name}-s0-final-episodes.jsonl").open()]
        for e in lines:
            e["score"]["progress"] = value
        (src / f"{name}-s0-final-episodes.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
        summary = json.loads((src / f"{name}-s0-summary.json").read_text())
        summary["eval_final"]["progress"] = value
        (src / f"{name}-s0-summary.json").write_text(json.dumps(summary))
    res = merge(tmp_path / "out", [src])
    prog = res["comparison"]["progress_fraction"]
    assert prog["selfplay"]["mean"] == 0.5 and prog["baseline"]["mean"] == 0.25
    assert prog["paired"]["episodes"] == 32 and prog["paired"]["mean"] == pytest.approx(0.25)
    md = (tmp_path / "out" / "selfplay.md").read_text()
    assert "| selfplay, progress fraction | 0.500 |" in md and "in progress fraction" in md and "+0.250" in md
    assert "progress_fraction" not in merge(tmp_path / "plain", [H200_SELFPLAY.parent / "selfplay-v4"])["comparison"]


def test_merge_leaves_out_unfinished_seeds(tmp_path: Path) -> None:
    """A seed whose self-play or baseline did not finish is left out of a merge and named; a merge with no
    finished seed is an error that says to resume the run."""
    from training.bench.selfplay_report import merge

    v3 = H200_SELFPLAY.parent / "selfplay-v3"
    part = _as_seed(v3, tmp_path / "s1", 1)
    state = json.loads((part / "state.json").read_text())
    del state["baseline-s1"]
    (part / "state.json").write_text(json.dumps({**state, "seeds": [1]}))
    res = merge(tmp_path / "out", [v3, part])
    assert res["seeds"] == [0] and res["merged_from"][1] == {"folder": str(part), "seeds": [], "overrides":
                                                              state["overrides"], "unfinished_seeds": [1]}
    assert f"seed 1 of {part}" in (tmp_path / "out" / "selfplay.md").read_text()
    with pytest.raises(ValueError, match=r"no seed finished both its self-play and its baseline \(.*s1: seeds 1\)"):
        merge(tmp_path / "none", [part])


def test_the_probe_rise_runs_from_round_0_to_the_final_policy() -> None:
    """With a probe every few rounds, the rise is taken from round 0's probe to the final policy's
    (``probe_final``), else to the last round that was probed; a seed with one probe has no rise."""
    from training.bench.selfplay_report import _rises

    def run(probes: list[float | None], final: float | None) -> dict[str, object]:
        return {"rounds": [{"round": i, "probe_acceptance": a} for i, a in enumerate(probes)], "probe_final": final}

    res = {"selfplay": {"s0": run([0.25, None, None, None, None], 0.5), "s1": run([0.5, None, 0.75, None, None], None),
                        "s2": run([0.5, None, None], None)}}
    assert _rises(res, "probe_acceptance", "probe_final") == [25.0, 25.0]


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
    from training.bench.selfplay import _locked, seed_phases

    with _locked(tmp_path / ".seed-3.lock") as mine:
        assert mine
        with pytest.raises(SystemExit, match=r"seed 3 of .* is being run by another process"):
            seed_phases(None, tmp_path, [], 3)
    with _locked(tmp_path / ".seed-3.lock", wait=False) as mine:
        assert mine  # released


def test_side_by_side_seeds_share_the_gpu_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each side-by-side seed process caps its share of every GPU's memory (one process, or no GPU: no cap)."""
    import torch

    from training.bench.selfplay import share_device

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


def _as_seed(src: Path, dest: Path, seed: int, overrides: list[str] | None = None) -> Path:
    """A copy of a committed one-seed result folder under another seed number (a later session's run)."""
    dest.mkdir(parents=True)
    state = json.loads((src / "state.json").read_text())
    (old,) = state["seeds"]
    for name in ("selfplay", "baseline"):
        for part in ("metrics.jsonl", "summary.json"):
            (dest / f"{name}-s{seed}-{part}").write_bytes((src / f"{name}-s{old}-{part}").read_bytes())
        state[f"{name}-s{seed}"] = state.pop(f"{name}-s{old}")
    state["seeds"] = [seed]
    if overrides is not None:
        state["overrides"] = overrides
    (dest / "state.json").write_text(json.dumps(state))
    return dest


def test_merge_reports_the_spread_of_seeds_run_in_separate_sessions(tmp_path: Path) -> None:
    """``bench selfplay --merge``: one report over the seeds of two result folders; the acceptance probe and the
    held-out attempts (measurement) may differ between them, a training override may not, nor a seed repeat."""
    from training.bench.selfplay_report import merge

    v3 = H200_SELFPLAY.parent / "selfplay-v3"
    state = json.loads((v3 / "state.json").read_text())
    # seed 1: the probe on and two held-out attempts, as the next session may run it
    measured = [o for o in state["overrides"] if not o.startswith("selfplay.")] + ["selfplay.eval_attempts=2"]
    other = _as_seed(v3, tmp_path / "s1", 1, measured)
    _bench("selfplay", "--out", str(tmp_path / "merged"), "--merge", str(v3), str(other))
    res = json.loads((tmp_path / "merged" / "selfplay.json").read_text())
    assert res["seeds"] == [0, 1] and [m["seeds"] for m in res["merged_from"]] == [[0], [1]]
    spread = res["comparison"]["check_fraction"]["selfplay"]
    assert spread["n"] == 2 and spread["mean"] == pytest.approx(0.5653, abs=1e-4)
    assert "(2 seed(s);" in (tmp_path / "merged" / "selfplay.md").read_text()
    assert (tmp_path / "merged" / "baseline-s1-summary.json").is_file()
    with pytest.raises(ValueError, match="seed 0 is in both"):
        merge(tmp_path / "again", [v3, v3])
    lr = _as_seed(v3, tmp_path / "s2", 2, state["overrides"] + ["grpo.learning_rate=1e-5"])
    with pytest.raises(ValueError, match=r"trained differently \(overrides grpo.learning_rate: \(unset\) vs 1e-5\)"):
        merge(tmp_path / "bad", [v3, lr])
    with pytest.raises(ValueError, match="holds a run"):
        (tmp_path / "run" / "work").mkdir(parents=True)
        merge(tmp_path / "run", [v3])
    result = CliRunner().invoke(cli, ["bench", "selfplay", "--out", str(tmp_path / "x"), "--merge", str(v3), str(v3)])
    assert result.exit_code == 2 and "seed 0 is in both" in result.output


def test_merge_compares_every_resolved_setting(tmp_path: Path) -> None:
    """Runs recorded with their resolved config (``state["resolved"]``) merge only if every setting that shapes
    training agrees: a config file edited between sessions is caught although its name and overrides agree."""
    from training.bench.selfplay_report import merge
    from training.config import config_to_dict, load_config

    v3 = H200_SELFPLAY.parent / "selfplay-v3"
    state = json.loads((v3 / "state.json").read_text())

    def resolved(*sets: str) -> dict[str, Any]:
        cfg = load_config("selfplay-smollm2-h200", [*state["overrides"], *sets])
        return json.loads(json.dumps(config_to_dict(cfg), default=str))

    folders = []
    for seed, sets in ((0, ()), (1, ("selfplay.acceptance_probe=8",)), (2, ("grpo.num_iterations=1",))):
        d = _as_seed(v3, tmp_path / f"s{seed}", seed)
        st = json.loads((d / "state.json").read_text())
        st["resolved"] = resolved(*sets)
        (d / "state.json").write_text(json.dumps(st))
        folders.append(d)
    assert merge(tmp_path / "ok", folders[:2])["seeds"] == [0, 1]  # the probe is measurement
    with pytest.raises(ValueError, match=r"settings grpo.num_iterations: 2 vs 1"):
        merge(tmp_path / "bad", [folders[0], folders[2]])
    # a setting added after a run ran there as its default: the older run merges with a newer one that keeps it
    older = json.loads((folders[1] / "state.json").read_text())
    del older["resolved"]["selfplay"]["format_recovery"]
    (folders[1] / "state.json").write_text(json.dumps(older))
    assert merge(tmp_path / "older", folders[:2])["seeds"] == [0, 1]
    newer = json.loads((folders[0] / "state.json").read_text())
    newer["resolved"]["selfplay"]["format_recovery"] = True
    (folders[0] / "state.json").write_text(json.dumps(newer))
    with pytest.raises(ValueError, match=r"settings selfplay.format_recovery: True vs \(unset\)"):
        merge(tmp_path / "changed", folders[:2])


def test_the_final_policies_are_compared_episode_by_episode(tmp_path: Path) -> None:
    """Both runs score their final policy on the same held-out tasks with the same episode seeds; the report pairs
    those episodes (self-play minus baseline), which the merge carries along, and keeps them in OUT."""
    from training.bench.selfplay_report import merge

    src = _as_seed(H200_SELFPLAY.parent / "selfplay-v3", tmp_path / "run", 0)

    def lines(rewards: list[float]) -> str:
        eps = [{"round": 5, "heldout": True, "final": True, "env_id": f"env-{i // 2}", "task_id": "t", "seed": i % 2,
                "reward": r} for i, r in enumerate(rewards)]
        return "\n".join(json.dumps(e) for e in [*eps, {"round": 4, "heldout": True, "env_id": "env-0",
                                                         "task_id": "t", "seed": 0, "reward": 1.0}]) + "\n"

    (src / "selfplay-s0-final-episodes.jsonl").write_text(lines([1.0, 0.5, 0.5, 0.25]))
    (src / "baseline-s0-final-episodes.jsonl").write_text(lines([0.5, 0.5, 0.75, 0.25, 0.5]))  # one unmatched
    res = merge(tmp_path / "out", [src])
    p = res["comparison"]["paired"]["all"]
    assert (p["episodes"], p["better"], p["worse"], p["equal"]) == (4, 1, 1, 2)
    assert p["mean"] == pytest.approx(0.0625) and p["stderr"] == pytest.approx(0.15729, abs=1e-4)
    assert res["comparison"]["paired"]["seeds"]["s0"]["episodes"] == 4
    assert "self-play minus baseline check fraction +0.062" in (tmp_path / "out" / "selfplay.md").read_text()
    kept = (tmp_path / "out" / "baseline-s0-final-episodes.jsonl").read_text().splitlines()
    assert len(kept) == 5 and all(json.loads(x)["final"] for x in kept)


def test_the_plot_adds_the_panels_a_run_recorded(tmp_path: Path) -> None:
    """The plot's last row has the panels whose figures the runs recorded: by source (v4 on), the free format on
    the format-recovery documents (v6 on) and a round's seconds, split by generation's two parts where the round
    recorded them."""
    from training.bench.selfplay_report import (
        _extra_panels,
        _plot,
        _plot_by_source,
        _plot_recovery,
        _plot_round_time,
        merge,
    )

    v4 = merge(tmp_path / "v4", [H200_SELFPLAY.parent / "selfplay-v4"])
    v6 = merge(tmp_path / "v6", [H200_SELFPLAY.parent / "selfplay-v6"])
    assert _extra_panels(v4) == [_plot_by_source, _plot_round_time]
    assert _extra_panels(v6) == [_plot_by_source, _plot_recovery, _plot_round_time]
    rows = v6["selfplay"]["s0"]["rounds"]
    assert [r["format_documents_parsed"] for r in rows] == [3, 6, 6, 6, 6]
    assert all(r["seconds_generation"] < r["seconds"] and r["seconds_generation_proposals"] is None for r in rows)
    from matplotlib.figure import Figure

    def legend(res: dict[str, Any]) -> list[str]:
        ax = Figure().add_subplot()
        _plot_round_time(ax, res)
        return [t.get_text() for t in ax.get_legend().get_texts()]

    assert legend(v6) == ["generation", "update", "the rest"]
    for r in rows:  # a run that split generation's time (the record since v6)
        r["seconds_generation_proposals"] = r["seconds_generation"] / 2
    assert legend(v6) == ["generation: proposals", "generation: episodes", "update", "the rest"]
    _plot(v6, tmp_path / "split.png")
    assert (tmp_path / "split.png").stat().st_size > 10_000

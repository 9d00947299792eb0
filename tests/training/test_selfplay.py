"""Two self-play rounds end to end (tiny model, scripted text), metrics, checkpoints, and resume."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.training.conftest import selfplay_script, solver_plan
from training.config import TrainConfig, config_from_dict
from training.errors import CheckpointError
from training.generation import ScriptedGenerator


def selfplay_config(tiny_dir: Path, corpus: Path, out: Path, **run: Any) -> TrainConfig:
    return config_from_dict({
        "model": {"name_or_path": str(tiny_dir), "device": "cpu"},
        "rollout": {"max_turn_tokens": 64, "max_completion_tokens": 640, "max_steps": 8},
        "solver": {"num_generations": 2},
        "selfplay": {"rounds": 2, "corpus": str(corpus), "docs": 2, "tasks_per_env": 1,
                     "round": {"n": 1, "alpha": 0.5, "oversample": 3.0},
                     "proposer": {"max_new_tokens": 3000, "n_examples": 0, "excerpt_tokens": 60,
                                  "system_prompt": "Write one environment spec as JSON."}},
        "run": {"output_dir": str(out), "report_to": ["tensorboard"], **run},
        "grpo": {"per_device_train_batch_size": 4, "learning_rate": 1e-3}})


def test_two_selfplay_rounds_then_resume(tmp_path: Path, tiny_dir: Path, tokenizer: Any, corpus_dir: Path) -> None:
    from training.selfplay import SelfPlay

    run = tmp_path / "run"
    cfg = selfplay_config(tiny_dir, corpus_dir, run)
    sp = SelfPlay(cfg, generator=ScriptedGenerator(tokenizer, selfplay_script(solver_plan(wrong_every=2))))
    before = {n: p.detach().clone() for n, p in sp.model.named_parameters()}
    history = sp.run()
    assert [h["round"] for h in history] == [0, 1]
    for h in history:
        # three proposals a round: one skill-routed (fails its skill's validator), one unparsable, one valid
        assert h["proposer"]["candidates"] == 3 and h["proposer"]["parsed"] == pytest.approx(2 / 3)
        assert h["proposer"]["validity"] == pytest.approx(1 / 3) and h["proposer"]["kept"] == 1
        # the valid one was solved G=2 times: once right, once with the wrong book
        assert h["solver"]["episodes"] == 2 and h["solver"]["pass_rate"] == 0.5
        assert h["solver"]["solve_rate_histogram"]["counts"] == [0.0, 0.0, 1.0, 0.0, 0.0]
        assert h["samples"] == {"proposer": 3, "solver": 2}
        assert sum(h["skills"]["routing"].values()) == 2 and h["skills"]["weights"]
        assert h["update"]["samples"] >= 3 and h["update"]["trained_tokens"] > 0
        assert set(h["time"]) == {"generation", "environment", "validation", "update", "round"}
        assert h["throughput"]["tokens_per_second"] > 0
    assert any(not (p.detach() == before[n]).all() for n, p in sp.model.named_parameters())
    # the environment's state changed in the episodes (a loan was written)
    eps = [json.loads(x) for x in (run / "episodes.jsonl").read_text().splitlines()]
    assert len(eps) == 4 and {e["passed"] for e in eps} == {True, False}
    assert len(sp.library) >= 1 and (run / "library" / "specs").is_dir()
    assert any(r["solve_rate"] == 0.5 for r in sp.library.rows())  # the solver's results reached the catalog
    attempts = sum(s.stats.proposals for s in sp.controller.library)
    assert attempts == 4  # skill statistics updated: 2 skill-routed proposals a round
    lines = (run / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["step"] == 0
    assert any((run / "tensorboard").iterdir())
    ckpts = sorted(p.name for p in (run / "checkpoints").iterdir())
    assert ckpts == ["round-0000", "round-0001"]
    ck = run / "checkpoints" / "round-0000"
    assert (ck / "optimizer.pt").is_file() and (ck / "rng.pt").is_file() and (ck / "skills").is_dir()
    assert json.loads((ck / "state.json").read_text())["next_round"] == 1

    # resume from the first checkpoint: the second round is replayed exactly
    cfg2 = selfplay_config(tiny_dir, corpus_dir, run, resume=str(ck))
    script = selfplay_script(solver_plan(wrong_every=2))
    for _ in range(3):  # the proposer script's position after round 0
        script("proposer context")
    resumed = SelfPlay(cfg2, generator=ScriptedGenerator(tokenizer, script))
    assert resumed.start_round == 1
    assert resumed.optimizer.state_dict()["state"], "optimizer state restored"
    again = resumed.run()
    assert [h["round"] for h in again] == [1]
    for key in ("solver", "proposer", "samples"):
        assert again[0][key] == history[1][key]
    assert again[0]["update"]["loss"] == pytest.approx(history[1]["update"]["loss"], rel=1e-4)
    assert again[0]["skills"]["routing"] == history[1]["skills"]["routing"]


def test_resume_needs_a_checkpoint(tmp_path: Path, tiny_dir: Path, corpus_dir: Path) -> None:
    from training.selfplay import SelfPlay

    cfg = selfplay_config(tiny_dir, corpus_dir, tmp_path / "run", resume=str(tmp_path / "nowhere"))
    with pytest.raises(CheckpointError, match="not a checkpoint folder"):
        SelfPlay(cfg)

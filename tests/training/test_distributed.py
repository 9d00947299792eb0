"""Data-parallel solver training: two processes on CPU (gloo), launched by torchrun.

``accelerate launch --cpu --num_processes 2`` starts a single, non-distributed process (accelerate 1.16 sets no
``WORLD_SIZE`` for it), so the launcher here is torchrun; ``run.num_processes: 2`` makes the trainer refuse to
start in any other world (:func:`training.parallel.check_world`), so the run below is two processes or fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from training.tiny_model import build_tiny_qwen3

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_solver_two_processes(tmp_path: Path) -> None:
    """Batches of 2 a process with G=4: every GRPO group is split over the two processes (each plays its half,
    one episode a prompt, which TRL 1.16 needs: one completion a prompt)."""
    build_tiny_qwen3(tmp_path / "runs" / "tiny-qwen3")
    shutil.copy(ROOT / "training" / "configs" / "smoke-cpu.yaml", tmp_path)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
           "-m", "envgen", "train", "solver", "--config", "smoke-cpu.yaml",
           "--set", "grpo.max_steps=2", "--set", "run.report_to=[]", "--set", "run.num_processes=2",
           "--set", "rollout.sandbox_workers=4", "--set", "grpo.per_device_train_batch_size=2"]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "TRL_EXPERIMENTAL_SILENCE": "1"}
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count('"global_step": 2') == 1  # the main process reports, once
    assert "destroy_process_group() was not called" not in proc.stderr
    records = [json.loads(line) for line in (tmp_path / "runs" / "smoke" / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in records if "step_time" in r]
    assert len(steps) == 2  # one record per optimizer step, written by the main process only
    assert all(r["num_tokens"] > 0 for r in steps) and steps[1]["num_tokens"] > steps[0]["num_tokens"]
    assert (tmp_path / "runs" / "smoke" / "final" / "config.json").is_file()

"""Checkpoints of the self-play and distillation trainers: model, optimizer, round state, RNG.

Layout of ``RUN/checkpoints/round-NNNN/`` (written to a temporary folder and
renamed, so a killed run never leaves half a checkpoint)::

    model/          save_pretrained: full weights, or the LoRA adapter only; the tokenizer
    optimizer.pt    the optimizer's state_dict
    rng.pt          Python, NumPy, torch (CPU and CUDA) generator states
    state.json      {"round", "next_round", "trainer", "extra": {...}} (controller RNG, counters, ...)
    skills/         a copy of the skill library as it was after the round (self-play)

:func:`find_checkpoint` resolves ``run.resume`` (a checkpoint folder, or
``latest``); :func:`restore_rng` puts every generator back, so a resumed run
draws what the original run drew.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

from training.errors import CheckpointError

__all__ = ["capture_rng", "find_checkpoint", "load_state", "prune_checkpoints", "restore_rng", "save_checkpoint",
           "seed_everything"]


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's generators (CUDA included) with ``seed``."""
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def capture_rng() -> dict[str, Any]:
    """The state of every random generator (Python, NumPy, torch CPU and CUDA), for a checkpoint."""
    import numpy as np
    import torch

    state: dict[str, Any] = {"python": random.getstate(), "numpy": np.random.get_state(),
                             "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(state: dict[str, Any]) -> None:
    """Restore the generators from :func:`capture_rng`'s state."""
    import numpy as np
    import torch

    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _json_state(obj: Any) -> Any:
    if isinstance(obj, tuple):
        return {"__tuple__": [_json_state(x) for x in obj]}
    if isinstance(obj, list):
        return [_json_state(x) for x in obj]
    if isinstance(obj, dict):
        return {k: _json_state(v) for k, v in obj.items()}
    return obj


def _from_json_state(obj: Any) -> Any:
    if isinstance(obj, dict) and set(obj) == {"__tuple__"}:
        return tuple(_from_json_state(x) for x in obj["__tuple__"])
    if isinstance(obj, list):
        return [_from_json_state(x) for x in obj]
    if isinstance(obj, dict):
        return {k: _from_json_state(v) for k, v in obj.items()}
    return obj


def save_checkpoint(run_dir: str | Path, round_index: int, *, model: Any, tokenizer: Any, optimizer: Any,
                    trainer: str, extra: dict[str, Any] | None = None, skills_dir: str | Path | None = None) -> Path:
    """Write ``RUN/checkpoints/round-NNNN`` atomically; returns its path."""
    import torch

    root = Path(run_dir) / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"round-{round_index:04d}"
    tmp = root / f".round-{round_index:04d}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    model.save_pretrained(tmp / "model")
    tokenizer.save_pretrained(tmp / "model")
    torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    torch.save(capture_rng(), tmp / "rng.pt")
    if skills_dir is not None and Path(skills_dir).is_dir():
        shutil.copytree(skills_dir, tmp / "skills")
    state = {"round": round_index, "next_round": round_index + 1, "trainer": trainer,
             "extra": _json_state(extra or {})}
    (tmp / "state.json").write_text(json.dumps(state, indent=1))
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    return final


def load_state(path: str | Path) -> dict[str, Any]:
    """``state.json`` of a checkpoint, with tuples restored."""
    p = Path(path) / "state.json"
    if not p.is_file():
        raise CheckpointError(f"{path} is not a checkpoint (no state.json)")
    state = json.loads(p.read_text())
    state["extra"] = _from_json_state(state.get("extra", {}))
    return state


def find_checkpoint(resume: str | None, run_dir: str | Path) -> Path | None:
    """The checkpoint named by ``run.resume`` (``latest``: the newest under RUN/checkpoints)."""
    if not resume:
        return None
    if resume == "latest":
        found = sorted((Path(run_dir) / "checkpoints").glob("round-*"))
        found = [p for p in found if (p / "state.json").is_file()]
        return found[-1] if found else None
    p = Path(resume)
    if not (p / "state.json").is_file():
        raise CheckpointError(f"run.resume: {p} is not a checkpoint folder (expected RUN/checkpoints/round-NNNN "
                              "with a state.json, or 'latest')")
    return p


def prune_checkpoints(run_dir: str | Path, keep: int | None) -> list[Path]:
    """Delete all but the newest ``keep`` checkpoints; returns the deleted folders."""
    if keep is None:
        return []
    found = sorted((Path(run_dir) / "checkpoints").glob("round-*"))
    gone = found[:-keep] if len(found) > keep else []
    for p in gone:
        shutil.rmtree(p, ignore_errors=True)
    return gone


def load_training_state(path: str | Path, optimizer: Any) -> dict[str, Any]:
    """Restore the optimizer and the RNG from a checkpoint; returns its state."""
    import torch

    p = Path(path)
    state = load_state(p)
    optimizer.load_state_dict(torch.load(p / "optimizer.pt", map_location="cpu", weights_only=False))
    restore_rng(torch.load(p / "rng.pt", weights_only=False))
    return state

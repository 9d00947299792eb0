"""No SFT sample longer than the model's context window is trained on: it is left out, counted (``too_long``) and
warned about (training.loss.drop_too_long), in every path that builds SFT samples."""

from __future__ import annotations

import copy
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gym_envs.spec import as_spec
from tests.fixtures.library_spec import SPEC
from training.config import RolloutConfig
from training.distill import ReferenceTeacher, teacher_samples
from training.model import context_window
from training.rollout import TaskRef


def test_the_context_window_is_the_models_and_the_tokenizers_smaller_limit() -> None:
    model = SimpleNamespace(config=SimpleNamespace(max_position_embeddings=8192))
    assert context_window(model) == 8192
    assert context_window(model, SimpleNamespace(model_max_length=int(1e30))) == 8192  # a GGUF tokenizer: unset
    assert context_window(model, SimpleNamespace(model_max_length=4096)) == 4096
    assert context_window(SimpleNamespace(config=SimpleNamespace(n_positions=1024))) == 1024
    assert context_window(SimpleNamespace(config=SimpleNamespace())) is None


def _long_spec() -> Any:
    """The library demo with a book whose author text makes find_book's result about 3,900 characters."""
    spec = copy.deepcopy(SPEC)
    spec["id"] = "library-long"
    spec["state"]["seed_sql"] = spec["state"]["seed_sql"].replace("'Herbert'", "'" + "Frank Herbert; " * 260 + "'")
    return as_spec(spec)


def test_a_reference_trajectory_longer_than_the_tiny_models_window_is_skipped_and_counted(
        tiny_dir: Path, chat: Any) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    window = context_window(model, chat.tokenizer)
    assert window == model.config.max_position_embeddings
    tasks = [TaskRef(as_spec(copy.deepcopy(SPEC)), "t0"), TaskRef(_long_spec(), "t0")]
    cfg = RolloutConfig(executor="inprocess")
    every, none_long = teacher_samples(tasks, ReferenceTeacher(), chat, cfg, max_length=None)
    assert none_long == 0 and [s.length > window for s in every] == [False, True]  # the fixture is as meant
    with pytest.warns(UserWarning, match=rf"1 of 2 reference trajectories are longer than the model's context window "
                                         rf"\({window} tokens; the longest has {every[1].length}\).*too_long.*"
                                         r"rollout.max_observation_chars"):
        samples, too_long = teacher_samples(tasks, ReferenceTeacher(), chat, cfg, max_length=window)
    assert too_long == 1 and [s.meta["task"] for s in samples] == ["library-demo/t0"]
    assert all(s.length <= window for s in samples)

"""Replay throughput: serial, thread and process pools replay references correctly."""

from __future__ import annotations

import pytest

pytest.importorskip("bfcl_eval")

from eval.bfcl import replay_throughput


@pytest.mark.parametrize(("executor", "workers"), [("serial", 1), ("thread", 3), ("process", 2)])
def test_replay_throughput_counts_valid_episodes(executor: str, workers: int) -> None:
    result = replay_throughput("multi_turn_base", limit=6, workers=workers, executor=executor, repeats=2)  # type: ignore[arg-type]
    assert result.episodes == 12 and result.valid == 12
    assert result.episodes_per_second > 0 and result.workers == workers


def test_replay_throughput_validates_arguments() -> None:
    with pytest.raises(ValueError, match="workers"):
        replay_throughput(workers=0)
    with pytest.raises(ValueError, match="executor"):
        replay_throughput(executor="gpu", workers=2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="did you mean"):
        replay_throughput("multi_turn_bas")


@pytest.mark.slow
def test_full_base_replay_is_fast_enough() -> None:
    result = replay_throughput("multi_turn_base")
    assert result.valid == result.episodes == 200
    assert result.episodes_per_second > 20  # ~300/s on one core; generous floor for slow CI

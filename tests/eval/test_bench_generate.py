"""``envwright bench generate``'s digest-cache measurement at a toy size: both sides validate every environment
and reach the same verdicts. No timing is asserted (the machines are noisy)."""

from __future__ import annotations

from pathlib import Path

from envgen.generate import GenerateConfig, run_generate
from envgen.library import Library
from eval.bench.generate import _digest_cache


def test_the_digest_cache_measurement_validates_both_ways(tmp_path: Path) -> None:
    cfg = GenerateConfig(corpus="stdlib", proposer="template", n=1, out=tmp_path / "lib", workers=1)
    assert run_generate(cfg, progress=False).accepted == 1
    res = _digest_cache(Library(tmp_path / "lib"), 5, seed=3)
    assert res["envs"] == 1 and res["same_verdicts"] is True
    assert res["median_validation_ms_cache_off"] > 0 and res["median_validation_ms_cache_on"] > 0
    assert res["speedup"] == res["median_validation_ms_cache_off"] / res["median_validation_ms_cache_on"]

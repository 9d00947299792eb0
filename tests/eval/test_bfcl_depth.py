"""``eval.bfcl.depth``: BFCL multi-turn base's depth from its ground truth, beside ours in ``envwright stats``."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("bfcl_eval")

from eval.bfcl.depth import bfcl_depth
from eval.cli import reference_depths


def test_bfcl_multi_turn_base_depth() -> None:
    d = bfcl_depth("multi_turn_base")
    assert d.tasks == 200 and d.tables_per_env is None
    assert math.isclose(d.calls_per_task, 5.71, abs_tol=0.005)
    assert math.isclose(d.share_3_calls, 0.965, abs_tol=0.0005)
    assert math.isclose(d.turns_per_task, 3.67, abs_tol=0.005)
    assert reference_depths() == [("BFCL v4 multi-turn base (ground truth)", d)]


def test_the_stats_command_shows_bfcl_beside_the_library(tmp_path) -> None:
    from click.testing import CliRunner

    from envgen.library import Library
    from eval import cli
    from gym_envs.examples import example_path
    from gym_envs.spec import load_spec

    lib = Library(tmp_path / "lib")
    lib.add(load_spec(example_path("bank-ledger")))
    lib.close()
    out = CliRunner(env={"COLUMNS": "200"}).invoke(cli.stats_cmd, [str(tmp_path / "lib")])
    assert out.exit_code == 0, out.output
    assert "BFCL v4 multi-turn base" in out.output and "5.71" in out.output

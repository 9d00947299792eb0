"""Every "not installed" message takes its instruction from one helper (:func:`envgen.errors.install_hint`),
and every one that needs torch gives the README's CPU-first step; the CPU ``[train]`` extra pulls no triton
(constrained decoding's xgrammar, which declares it, is an extra of its own)."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from envgen.cli import cli
from envgen.errors import CPU_TORCH, BackendNotInstalledError, install_hint

ROOT = Path(__file__).resolve().parents[2]
TORCH, INDEX = CPU_TORCH


def _cpu_first(text: str) -> bool:
    """The README's order: the pinned CPU torch (and where it comes from elsewhere), then the extra."""
    text = " ".join(text.split())
    first, extra = text.find(f"pip install {TORCH}"), text.find("pip install 'envwright[train]'")
    return 0 <= first < extra and f"--index-url {INDEX}" in text


@pytest.mark.parametrize("package", ["torch", "transformers", "trl", "peft", "accelerate"])
def test_the_helper_gives_cpu_torch_first_for_the_train_extra(package: str) -> None:
    assert _cpu_first(install_hint(package))


def test_constrained_decoding_is_installed_without_triton_on_cpu() -> None:
    for package in ("xgrammar", "tvm_ffi"):
        hint = install_hint(package)
        assert "pip install --no-deps 'xgrammar>=0.1.25' apache-tvm-ffi" in hint and "[constrained]" in hint
    assert install_hint("openai") == "pip install 'envwright[openai]' (from a checkout: pip install -e '.[openai]')"


def test_a_missing_torch_says_cpu_first_on_every_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # as if torch were not installed
    from envgen.backends import make_backend

    with pytest.raises(BackendNotInstalledError) as err:  # generate --backend transformers, eval --policy ...
        make_backend("transformers", "some/model")
    assert _cpu_first(str(err.value))
    result = CliRunner().invoke(cli, ["eval", "--policy", "transformers", "--model", "m", "--suite", "examples",
                                      "--out", "unused-run"])
    assert result.exit_code == 1 and _cpu_first(result.output), result.output


def test_a_lazy_command_whose_extra_is_missing_says_cpu_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from envgen.cli.lazy import LazyEntry, LazyGroup

    (tmp_path / "ew_needs_torch.py").write_text("import ew_torch_that_is_missing\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    group = LazyGroup("t", lazy={"train": LazyEntry("ew_needs_torch:cmd", "needs torch", extra="train")}, prefix="t")
    result = CliRunner().invoke(group, ["train", "--help"])
    assert result.exit_code == 1 and _cpu_first(result.output), result.output


def test_no_other_module_writes_its_own_install_line_for_an_extra() -> None:
    """``pip install 'envwright[...]'`` is written by the helper alone (docstrings aside)."""
    found = []
    for path in sorted(ROOT.glob("*/**/*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(("tests/", ".")) or rel == "envgen/errors.py":
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"""["'].*pip install '?envwright\[""", line) and "``" not in line:
                found.append(f"{rel}:{n}: {line.strip()}")
    assert found == []


def test_the_train_extra_pulls_no_triton() -> None:
    """The extra xgrammar comes in (it declares triton) is its own, not [train]; the test extra keeps it."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {re.split(r"[<>=\[; ]", d)[0].lower() for d in extras["train"]}
    assert not names & {"xgrammar", "vllm", "triton"}
    assert any(d.startswith("xgrammar") for d in extras["constrained"])

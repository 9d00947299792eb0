"""The root command (envgen.cli): lazy loading, help, version, typo suggestions, unavailable sub-commands."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from envgen.cli import COMMANDS, cli
from envgen.cli.lazy import LazyEntry, LazyGroup

HEAVY = ("torch", "transformers", "gymnasium", "pydantic", "gym_envs", "eval", "training", "numpy", "rich")


def _run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])


def test_help_lists_every_command_without_importing_them() -> None:
    code = textwrap.dedent("""
        import json, sys
        from envgen.cli import main
        try:
            main(["--help"])
        except SystemExit as e:
            code = e.code
        print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
    """)
    proc = _run_python(code)
    assert proc.returncode == 0, proc.stderr
    *help_lines, last = proc.stdout.strip().splitlines()
    report = json.loads(last)
    assert report["code"] in (0, None)
    loaded = {m.split(".")[0] for m in report["modules"]}
    assert "torch" not in loaded
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    help_text = "\n".join(help_lines)
    for name in COMMANDS:
        assert name in help_text


def test_module_entry_point_help() -> None:
    """`python -m envgen` is the envwright command (what `accelerate launch -m envgen` starts)."""
    proc = subprocess.run([sys.executable, "-m", "envgen", "--help"], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stderr
    assert "validate" in proc.stdout and "bench" in proc.stdout
    assert proc.stdout.startswith("Usage: envwright")


def test_console_script_points_at_the_root() -> None:
    import tomllib

    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert pyproject["project"]["scripts"] == {"envwright": "envgen.cli:main"}


def test_version() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.output.startswith("envwright ")


@pytest.mark.parametrize(("typo", "expected"),
                         [("shwo", "show"), ("valdiate", "validate"), ("schem", "schema")])
def test_unknown_command_suggests_close_match(typo: str, expected: str) -> None:
    result = CliRunner().invoke(cli, [typo])
    assert result.exit_code == 2
    assert f"No such command '{typo}'" in result.output
    assert f"did you mean '{expected}'" in result.output


def test_nested_group_typo_suggests() -> None:
    result = CliRunner().invoke(cli, ["bench", "runtim"])
    assert result.exit_code == 2
    assert "did you mean 'runtime'" in result.output


def test_bench_help_lists_every_benchmark_without_importing_them() -> None:
    from envgen.cli.bench import BENCHMARKS

    code = textwrap.dedent("""
        import json, sys
        from envgen.cli import main
        try:
            main(["bench", "--help"])
        except SystemExit as e:
            code = e.code
        print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
    """)
    proc = _run_python(code)
    assert proc.returncode == 0, proc.stderr
    *help_lines, last = proc.stdout.strip().splitlines()
    report = json.loads(last)
    assert report["code"] in (0, None)
    assert not {m.split(".")[0] for m in report["modules"]} & set(HEAVY)
    help_text = "\n".join(help_lines)
    assert set(BENCHMARKS) == {"runtime", "generate", "validation", "proposer", "grammar", "induction", "tau2", "speed",
                               "precision", "throughput", "learning", "selfplay"}
    for name in BENCHMARKS:
        assert name in help_text


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_loads_or_says_why(name: str) -> None:
    """`envwright NAME --help` either shows help or a one-line "not available" error; never a traceback."""
    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in (0, 1), result.output
    if result.exit_code == 1:
        assert "not available yet" in result.output or "not installed" in result.output
        assert "Traceback" not in result.output


# -- the lazy table's failure modes, on a private group -----------------------------------------


@pytest.fixture
def fake_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "ew_fake_needs_dep.py").write_text(
        "import ew_package_that_does_not_exist\nimport click\ncmd = click.Command('x')\n")
    (tmp_path / "ew_fake_click.py").write_text(textwrap.dedent("""
        import click
        @click.command()
        @click.option("--name", default="x")
        def hello(name):
            click.echo("hello " + name)
        @click.group()
        def grp():
            "A group."
        @grp.command("fail")
        def fail():
            raise click.exceptions.Exit(4)
        def plain(count: int = 1):
            print("count", count)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    for mod in ("ew_fake_needs_dep", "ew_fake_click"):
        monkeypatch.delitem(sys.modules, mod, raising=False)
    return tmp_path


def _group() -> click.Group:
    table = {
        "ghost": LazyEntry("envgen.no_such_module_xyz:cmd", "A command still being built."),
        "noattr": LazyEntry("envgen.cli:no_such_attribute", "An attribute still being built."),
        "needs": LazyEntry("ew_fake_needs_dep:cmd", "Needs an extra.", extra="train"),
        "hello": LazyEntry("ew_fake_click:hello", "click command."),
        "grp": LazyEntry("ew_fake_click:grp", "click group."),
        "plain": LazyEntry("ew_fake_click:plain", "a plain function, not a command."),
    }
    return LazyGroup("t", lazy=table, prefix="t")


def test_missing_module_is_not_available_yet(fake_modules: Path) -> None:
    result = CliRunner().invoke(_group(), ["ghost", "--anything"])
    assert result.exit_code == 1
    assert "'t ghost' is not available yet" in result.output
    assert "envgen.no_such_module_xyz" in result.output
    assert "Traceback" not in result.output


def test_missing_attribute_is_not_available_yet(fake_modules: Path) -> None:
    result = CliRunner().invoke(_group(), ["noattr"])
    assert result.exit_code == 1
    assert "not available yet" in result.output and "no_such_attribute" in result.output


def test_missing_dependency_names_the_extra(fake_modules: Path) -> None:
    result = CliRunner().invoke(_group(), ["needs", "--help"])
    assert result.exit_code == 1
    assert "ew_package_that_does_not_exist" in result.output
    assert "pip install -e '.[train]'" in result.output


def test_click_command_and_group_targets(fake_modules: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(_group(), ["hello", "--name", "ew"]).output.strip() == "hello ew"
    result = runner.invoke(_group(), ["grp", "--help"])
    assert result.exit_code == 0 and "fail" in result.output and "Usage: t grp" in result.output
    assert runner.invoke(_group(), ["grp", "fail"]).exit_code == 4
    assert runner.invoke(_group(), ["grp", "nope"]).exit_code == 2


def test_a_target_that_is_not_a_command_says_so(fake_modules: Path) -> None:
    result = CliRunner().invoke(_group(), ["plain", "--count", "4"])
    assert result.exit_code == 1 and "is not a click command" in result.output


def test_help_does_not_import_targets(fake_modules: Path) -> None:
    result = CliRunner().invoke(_group(), ["--help"])
    assert result.exit_code == 0
    for name in ("ghost", "noattr", "needs", "hello", "grp"):
        assert name in result.output
    assert "ew_fake_needs_dep" not in sys.modules and "ew_fake_click" not in sys.modules


def test_entry_validation() -> None:
    with pytest.raises(ValueError, match="module:attribute"):
        LazyEntry("a.b", "x")

"""The root command: lazy loading, help, version, typo suggestions, unavailable sub-commands."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from envgen.command import COMMANDS, LazyEntry, LazyGroup, cli

HEAVY = ("torch", "transformers", "gymnasium", "pydantic", "gym_envs", "eval", "training", "numpy", "rich")


def _run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])


def test_help_lists_every_command_without_importing_them() -> None:
    code = textwrap.dedent("""
        import json, sys
        from envgen.command import main
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
    proc = subprocess.run([sys.executable, "-m", "envgen.command", "--help"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "validate" in proc.stdout and "bench" in proc.stdout


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
    assert "Did you mean 'runtime'" in result.output  # click's own group (bench): its wording


def test_bench_help_lists_subcommands() -> None:
    result = CliRunner().invoke(cli, ["bench", "--help"])
    assert result.exit_code == 0
    assert "runtime" in result.output and "generate" in result.output


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
    (tmp_path / "ew_fake_argv.py").write_text(textwrap.dedent("""
        SEEN = []
        def main(argv):
            SEEN.append(list(argv))
            print("argv=" + " ".join(argv))
            return 3 if "--fail" in argv else 0
    """))
    (tmp_path / "ew_fake_click.py").write_text(textwrap.dedent("""
        import click
        @click.command()
        @click.option("--name", default="x")
        def hello(name):
            click.echo("hello " + name)
        def typed(count: int = 1):
            print("count", count)
    """))
    (tmp_path / "ew_fake_typer.py").write_text(textwrap.dedent("""
        import typer
        app = typer.Typer(help="A typer app.", add_completion=False)
        @app.command("hi")
        def hi(name: str = "x"):
            print("hi " + name)
        @app.command("fail")
        def fail():
            raise typer.Exit(4)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    for mod in ("ew_fake_needs_dep", "ew_fake_argv", "ew_fake_click", "ew_fake_typer"):
        monkeypatch.delitem(sys.modules, mod, raising=False)
    return tmp_path


def _group() -> click.Group:
    table = {
        "ghost": LazyEntry("envgen.no_such_module_xyz:cmd", "A command still being built."),
        "noattr": LazyEntry("envgen.command:no_such_attribute", "An attribute still being built."),
        "needs": LazyEntry("ew_fake_needs_dep:cmd", "Needs an extra.", extra="train"),
        "runner": LazyEntry("ew_fake_argv:main", "argv main.", kind="argv"),
        "hello": LazyEntry("ew_fake_click:hello", "click command."),
        "typed": LazyEntry("ew_fake_click:typed", "plain function through typer."),
        "tapp": LazyEntry("ew_fake_typer:app", "a typer app."),
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


def test_argv_main_gets_every_argument(fake_modules: Path) -> None:
    result = CliRunner().invoke(_group(), ["runner", "--help", "-n", "3", "x"])
    assert result.exit_code == 0, result.output
    assert "argv=--help -n 3 x" in result.output
    failing = CliRunner().invoke(_group(), ["runner", "--fail"])
    assert failing.exit_code == 3
    assert "argv=--fail" in failing.output


def test_click_and_plain_function_targets(fake_modules: Path) -> None:
    assert CliRunner().invoke(_group(), ["hello", "--name", "ew"]).output.strip() == "hello ew"
    result = CliRunner().invoke(_group(), ["typed", "--count", "4"])
    assert result.exit_code == 0, result.output
    assert "count 4" in result.output
    result = CliRunner().invoke(_group(), ["typed", "--help"])
    assert result.exit_code == 0 and "--count" in result.output


def test_typer_app_target(fake_modules: Path) -> None:
    """Typer vendors its own click: its help, exits and errors must work behind the root group."""
    runner = CliRunner()
    result = runner.invoke(_group(), ["tapp", "hi", "--name", "ew"])
    assert (result.exit_code, result.output.strip()) == (0, "hi ew")
    result = runner.invoke(_group(), ["tapp", "--help"])
    assert result.exit_code == 0 and "hi" in result.output and "Usage: t tapp" in result.output
    assert runner.invoke(_group(), ["tapp", "fail"]).exit_code == 4
    assert runner.invoke(_group(), ["tapp", "nope"]).exit_code == 2


def test_help_does_not_import_targets(fake_modules: Path) -> None:
    result = CliRunner().invoke(_group(), ["--help"])
    assert result.exit_code == 0
    for name in ("ghost", "noattr", "needs", "runner", "hello", "typed"):
        assert name in result.output
    assert "ew_fake_needs_dep" not in sys.modules and "ew_fake_argv" not in sys.modules


def test_entry_validation() -> None:
    with pytest.raises(ValueError, match="kind"):
        LazyEntry("a:b", "x", kind="shell")
    with pytest.raises(ValueError, match="module:attribute"):
        LazyEntry("a.b", "x")

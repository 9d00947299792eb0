"""``envwright eval``, ``compare``, ``contamination`` and ``stats``: the evaluation commands.

Role: thin click commands over :mod:`eval.runner`, :mod:`eval.report` and
:mod:`eval.contamination`; the root command (:mod:`envgen.cli`) loads them lazily from here:
``eval_cmd``, ``compare_cmd``, ``contamination_cmd`` and ``stats_cmd`` (the benchmarks of
:mod:`eval.bench` are sub-commands of ``envwright bench``, :mod:`envgen.cli.bench`). ``stats_cmd`` is
envgen's ``stats`` (:func:`envgen.cli.stats.stats_command`) with BFCL multi-turn base beside the
library in its depth table (:func:`reference_depths`) and, with ``--anchors``, beside its realism figures
(:func:`reference_realism`): envgen never imports eval, so the command layer puts them together here.

Contract: user errors (an unknown policy or suite, a missing library, BFCL not installed) end
with one line naming the fix and exit status 1, never a traceback. A run whose every episode failed in
the model backend (no completion came back) measured nothing: ``eval`` writes its run folder, then says so
and exits 1; a run with some such episodes warns.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from envgen.errors import error_message

__all__ = ["compare_cmd", "contamination_cmd", "eval_cmd", "reference_depths", "reference_realism"]  # and stats_cmd

_USER_ERRORS = (ValueError, KeyError, FileNotFoundError, FileExistsError, ImportError, RuntimeError)


def _opt_value(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise click.BadParameter(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def _policy_help() -> str:
    from eval.policies import policy_help

    return policy_help()


def _missing(e: ModuleNotFoundError, extra: str) -> str:
    """A missing third-party package, with the extra that brings it."""
    from envgen.errors import install_hint

    package = (e.name or "").split(".")[0]
    return f"the package '{package}' is not installed. Install it: {install_hint(package, extra)}"


@click.command("eval", context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--policy", "--engine", "policy", required=True, help=_policy_help())
@click.option("--model", default=None, help="Model id/path; for scripted: reference, empty or a JSONL file.")
@click.option("--suite", "suites", multiple=True, required=True,
              help="library:PATH, examples, bfcl:base|miss_func|miss_param|long_context, "
                   "tau2:retail|airline|telecom (repeatable).")
@click.option("--k", default=1, show_default=True, type=int, help="Trials per task.")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Run folder (refused if it already holds a run, unless --overwrite).")
@click.option("--overwrite", is_flag=True, help="Replace the run already in --out.")
@click.option("--concurrency", default=4, show_default=True, type=int, help="Episodes in flight.")
@click.option("--limit", default=None, type=click.IntRange(min=1), help="First N tasks of each suite (>= 1).")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--split", default="all", show_default=True, type=click.Choice(["train", "heldout", "all"]),
              help="Library split (by a hash of each env's source document); τ²: train, or heldout for its test tasks.")
@click.option("--max-turn-steps", default=20, show_default=True, type=int, help="Actions per turn.")
@click.option("--executor", default="worker", show_default=True, type=click.Choice(["worker", "inprocess"]),
              help="Executor of generated environments (inprocess: trusted specs only).")
@click.option("--mode", default="auto", show_default=True, type=click.Choice(["auto", "lockstep", "threads"]),
              help="lockstep batches all active episodes per policy call (auto: for local models).")
@click.option("--max-new-tokens", default=1024, show_default=True, type=int)
@click.option("--temperature", default=0.0, show_default=True, type=float,
              help="Sampling temperature (use > 0 with --k > 1, else trials are identical).")
@click.option("--pass-tools/--no-pass-tools", default=False, show_default=True,
              help="Also pass tools= to the backend (the system prompt always lists them).")
@click.option("--backend-option", "--backend-opt", "backend_opts", multiple=True, metavar="KEY=VALUE",
              help="Extra option for the backend (JSON values), repeatable.")
@click.option("--tokens/--no-tokens", default=None,
              help="Drive a token-level backend (transformers, vllm) through each episode's tokens as training "
                   "renders them (default: when its chat template allows; --no-tokens sends the chat).")
@click.option("--calls-per-step", default=0, show_default=True, type=int,
              help="Scripted reference: calls per step (0: all of a turn's calls in one step).")
@click.option("--write-back/--no-write-back", default=None,
              help="Write solve rates to a library's catalog (default: every policy but scripted:empty).")
@click.option("--user-backend", default=None, metavar="BACKEND",
              help="A model plays the simulated user of scenario tasks (transformers, vllm, openai); default: each "
                   "task's scripted user.")
@click.option("--user-model", default=None, help="The user model's id or path (with --user-backend).")
@click.option("--user-option", "user_opts", multiple=True, metavar="KEY=VALUE",
              help="Option of the user model (max_new_tokens, temperature, backend_options; JSON values), repeatable.")
@click.option("--judge-backend", default=None, metavar="BACKEND",
              help="A model decides judged checks, reported apart from the score (default: they stay undecided).")
@click.option("--judge-model", default=None, help="The judge model's id or path (with --judge-backend).")
@click.option("--judge-option", "judge_opts", multiple=True, metavar="KEY=VALUE",
              help="Option of the judge model (as --user-option), repeatable.")
@click.option("--agreement", is_flag=True, help="Also check reference = 1 and empty = 0 per suite (τ²: and agreement "
              "with τ²'s own environment and evaluator).")
@click.option("--bootstrap", default=2000, show_default=True, type=int, help="Bootstrap resamples.")
@click.option("--progress/--no-progress", default=True, show_default=True)
def eval_cmd(policy: str, model: str | None, suites: tuple[str, ...], k: int, out: Path, overwrite: bool,
             concurrency: int,
             limit: int | None, seed: int, split: str, max_turn_steps: int, executor: str, mode: str,
             max_new_tokens: int, temperature: float, pass_tools: bool, backend_opts: tuple[str, ...],
             tokens: bool | None, calls_per_step: int, write_back: bool | None, user_backend: str | None,
             user_model: str | None, user_opts: tuple[str, ...], judge_backend: str | None, judge_model: str | None,
             judge_opts: tuple[str, ...], agreement: bool, bootstrap: int, progress: bool) -> None:
    """Score a policy on suites; writes results.jsonl, summary.json, report.md and report.html.

    An episode whose model backend gave no completion (a server that is down, an engine error) is a backend
    failure, not the model's: it is not scored and is counted apart. Exits 1 when every episode was one
    (the run folder is still written), and warns when some were. Scenario tasks are played against their
    scripted user, or a model's with --user-backend/--user-model; judged checks are decided by a judge model
    with --judge-backend/--judge-model and reported apart from the score."""
    from eval.runner import EvalConfig, run_eval

    opts: dict[str, Any] = {"max_new_tokens": max_new_tokens, "temperature": temperature,
                            "pass_tools": pass_tools, "tokens": tokens,
                            "backend_options": dict(_opt_value(o) for o in backend_opts)}
    if policy.partition(":")[0] == "scripted":
        if backend_opts:
            raise click.UsageError("--backend-option configures a model policy's backend; the scripted policy has "
                                   "none (it takes --calls-per-step)")
        opts = {"calls_per_step": calls_per_step}
    try:
        config = EvalConfig(policy=policy, model=model, suites=list(suites), k=k, out=out,
                            concurrency=concurrency, limit=limit, seed=seed, split=split,
                            max_turn_steps=max_turn_steps, executor=executor, mode=mode,
                            write_back=write_back, agreement=agreement, progress=progress, n_boot=bootstrap,
                            policy_opts=opts, overwrite=overwrite, user_backend=user_backend,
                            user_model=user_model, user_opts=dict(_opt_value(o) for o in user_opts),
                            judge_backend=judge_backend, judge_model=judge_model,
                            judge_opts=dict(_opt_value(o) for o in judge_opts))
        _require_plots()
        run = run_eval(config, log=lambda m: click.echo(m, err=True))
    except ModuleNotFoundError as e:
        raise click.ClickException(_missing(e, "eval")) from None
    except _USER_ERRORS as e:
        raise click.ClickException(error_message(e)) from None
    _print_summary(run.summary)
    for name, path in run.files.items():
        click.echo(f"{name}: {path}")
    _backend_verdict(run.summary)


def _backend_verdict(summary: dict[str, Any]) -> None:
    """Warn when some episodes failed in the model backend; exit 1 when every one did (nothing was measured)."""
    from eval.report import backend_note

    note = backend_note(summary)
    if note is None:
        return
    run = summary["run"]
    if run["backend_failures"] == run["episodes"]:
        raise click.ClickException(f"nothing was measured: {note} (check that the model server or engine runs and "
                                   "that --model and --backend-option name it)")
    click.secho(f"warning: {note}", err=True, fg="yellow")


def _require_plots() -> None:
    """The report's plots need matplotlib: fail before any episode runs, naming the extra."""
    from importlib.util import find_spec

    if find_spec("matplotlib") is None:
        from envgen.errors import install_hint

        raise ImportError("'envwright eval' draws its report's plots with matplotlib, which is not installed. "
                          f"Install the extra: {install_hint('matplotlib', 'eval')}")


def _print_summary(summary: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    from eval.report import _SUITE_HEAD, _suite_rows
    from gym_envs import display

    table = Table(title=display.text(f"policy {summary['run']['policy']}"))
    keep = ["suite", "tasks", "episodes", "pass@1", "95% CI", "pass^k", "checks", "errors", "backend failures"]
    for h in keep:
        table.add_column(h, overflow="fold", no_wrap=h == "95% CI", min_width=len(h))
    for row in _suite_rows(summary):
        cells = dict(zip(_SUITE_HEAD, row, strict=True))
        table.add_row(*(display.text(cells[h]) for h in keep))
    console = Console()
    console.print(table)
    user = summary["run"].get("user")
    if user:
        console.print(display.text(f"simulated user {user['model']}: {user['requests']} replies asked, "
                                   f"{user['failures']} failed"))
    for suite, block in (summary.get("judged") or {}).get("suites", {}).items():
        rate = "undecided" if block["pass_rate"] is None else f"{block['pass_rate']:.2f}"
        console.print(display.text(f"judged assertions {suite} (apart from the score): {block['passed']} of "
                                   f"{block['decided']} decided passed ({rate}; {block['assertions']} in all)"))
    for name, info in summary.get("runs", {}).items():
        console.print(display.text(f"throughput {name}: {info.get('episodes_per_s')} episodes/s "
                                   f"({info.get('episodes')} episodes in {info.get('seconds')} s)"))
        if "agreement" in info:
            a = info["agreement"]
            console.print(display.text(f"checker agreement {name}: reference pass rate "
                                       f"{a['reference_pass_rate']}, empty pass rate on state-changing tasks "
                                       f"{a['empty_pass_rate_state_changing']}, agrees {a['agrees']}"))
        for note in info.get("notes", []):
            console.print(display.text(f"{name}: {note}"))
        suspicious = (info.get("library") or {}).get("suspicious", [])
        if suspicious:
            names = ", ".join(f"{s['env_id']}/{s['task_id']}" for s in suspicious[:10])
            more = f" and {len(suspicious) - 10} more (see report.md)" if len(suspicious) > 10 else ""
            console.print(display.text(f"{len(suspicious)} suspicious tasks (every evaluated policy fails, the "
                                       f"reference passes): {names}{more}"))


@click.command("compare", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("run_a", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("run_b", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the comparison (.json or .md by suffix).")
@click.option("--bootstrap", default=2000, show_default=True, type=int)
@click.option("--seed", default=0, show_default=True, type=int)
def compare_cmd(run_a: Path, run_b: Path, out: Path | None, bootstrap: int, seed: int) -> None:
    """Compare two evaluation runs per suite and task kind, with bootstrap CIs of B - A."""
    from rich.console import Console
    from rich.table import Table

    from eval.report import _fmt, compare_markdown, compare_runs
    from gym_envs import display

    try:
        result = compare_runs(run_a, run_b, n_boot=bootstrap, seed=seed)
    except _USER_ERRORS as e:
        raise click.ClickException(error_message(e)) from None
    table = Table(title=display.text(f"A = {result['a']['policy']} ({run_a})\nB = {result['b']['policy']} "
                                     f"({run_b})"), box=None, header_style="bold underline",
                  caption="tasks: in A / in B (in both) when they differ; * the 95% CI of B - A excludes 0")
    table.add_column("suite / kind", overflow="fold", min_width=min(19, max(len(r["kind"]) + 2 for r in
                                                                          result["rows"]) if result["rows"] else 12))
    table.add_column("metric", no_wrap=True)
    table.add_column("tasks", no_wrap=True)
    for h in ("A", "B", "B - A"):
        table.add_column(h, justify="right", no_wrap=True)
    table.add_column("95% CI", no_wrap=True)
    last = None
    for r in result["rows"]:  # one label per (suite, kind): the suite on its "(all)" rows, then its kinds
        key = (r["suite"], r["kind"])
        if key == last:
            where = display.text("")
        elif r["kind"] == "(all)":
            where = display.text(r["suite"], "bold")
        else:
            where = display.text(f"  {r['kind']}")
        last = key
        ci = f"[{r['ci'][0]:.2f}, {r['ci'][1]:.2f}]" if r["ci"] else "–"
        same = r["tasks_a"] == r["tasks_b"] == r["common"]
        tasks = str(r["common"]) if same else f"{r['tasks_a']}/{r['tasks_b']} ({r['common']})"
        table.add_row(where, r["metric"], tasks, _fmt(r["a"]),
                      _fmt(r["b"]), _fmt(r["diff"]) + ("*" if r["significant"] else " "), ci)
    Console().print(table)
    if out is not None:
        text = json.dumps(result, indent=2) if out.suffix == ".json" else compare_markdown(result)
        out.write_text(text, encoding="utf-8")
        click.echo(f"wrote {out}")


@click.command("contamination", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("library")
@click.option("--suite", "benchmark", default="bfcl:base", show_default=True, help="The benchmark suite.")
@click.option("--top", default=10, show_default=True, type=int, help="Closest task pairs to list.")
@click.option("--shingle", default=3, show_default=True, type=int, help="Words per shingle.")
@click.option("--threshold", default=0.5, show_default=True, type=float, help="Similarity counted as a hit.")
@click.option("--out", default=None, type=click.Path(file_okay=False, path_type=Path),
              help="Folder for contamination.json and contamination.md.")
def contamination_cmd(library: str, benchmark: str, top: int, shingle: int, threshold: float,
                      out: Path | None) -> None:
    """Overlap between a generated library (a path or any suite spec) and a benchmark suite."""
    from eval.contamination import contamination_markdown, contamination_report

    spec = library if ":" in library or library == "examples" else f"library:{library}"
    try:
        report = contamination_report(spec, benchmark, k=shingle, top=top, threshold=threshold)
    except _USER_ERRORS as e:
        raise click.ClickException(error_message(e)) from None
    text = contamination_markdown(report)
    click.echo(text)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "contamination.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        (out / "contamination.md").write_text(text, encoding="utf-8")
        click.echo(f"wrote {out / 'contamination.json'} and {out / 'contamination.md'}")


def reference_depths() -> list[tuple[str, Any]]:
    """The benchmarks our depth figures are compared with: ``(name, Depth)``, or ``(name, why missing)``."""
    from eval.errors import BfclError

    name = "BFCL v4 multi-turn base (ground truth)"
    try:
        from eval.bfcl.depth import bfcl_depth

        return [(name, bfcl_depth("multi_turn_base"))]
    except (BfclError, ImportError) as e:
        return [(name, f"not available: {error_message(e)}")]


def reference_realism() -> list[tuple[str, Any]]:
    """The sets ``stats --anchors`` prints beside a library's realism figures: the shipped examples and
    τ²-bench (:func:`envgen.realism.anchors`), and BFCL multi-turn base (or why it is missing)."""
    from envgen.realism import anchors
    from eval.errors import BfclError

    name = "BFCL base"  # v4 multi-turn base
    try:
        from eval.bfcl.realism import bfcl_realism

        bfcl: Any = bfcl_realism("multi_turn_base")
    except (BfclError, ImportError) as e:
        bfcl = f"not available: {error_message(e)}"
    return [*anchors(), (name, bfcl)]


def __getattr__(name: str) -> Any:
    if name == "stats_cmd":  # built on first use: importing this module stays light
        from envgen.cli.stats import stats_command

        cmd = stats_command(reference_depths, reference_realism)
        globals()["stats_cmd"] = cmd
        return cmd
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

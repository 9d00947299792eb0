"""envgen's commands: ``validate``, ``generate`` and ``list`` (``stats`` is :mod:`envgen.cli.stats`).

Loaded lazily by the root command (:mod:`envgen.cli`), which maps each command
name to an attribute of this module; a command that is not defined here yet is
reported as "not available yet" there.

``validate PATH...`` runs the validity gate (:func:`envgen.gate.validate_spec`,
the rules of gym_envs/ENVSPEC.md) on spec files, on every ``*.json`` directly inside
a directory (a library's ``specs/``), on shipped examples named by their name, or on all of them with
``--all-examples``. It prints one row per spec with every rejection reason (or
one JSON object with ``--json``) and exits 1 when any spec is rejected or
cannot be found.
"""

from __future__ import annotations

import json
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from envgen.errors import error_message
from envgen.gate import GateBudget, Reason, Verdict, validate_spec
from gym_envs import display
from gym_envs.cli import EXECUTORS, example_names, locate_spec
from gym_envs.sandbox import make_executor

__all__ = ["generate", "library_table", "list_library", "open_library", "print_corrupt", "validate"]


@dataclass(frozen=True)
class _Input:
    """One thing to validate: a spec file, or a reference that could not be resolved."""

    label: str
    path: Path | None
    problem: str | None = None


def expand_inputs(refs: list[str], all_examples: bool) -> list[_Input]:
    """Files, directories (their ``*.json``, sorted) and example names, in the order given."""
    items: list[_Input] = []
    if all_examples:
        names = example_names()
        if names is None:
            raise click.ClickException("--all-examples: this installation ships no examples "
                                       "(gym_envs.examples is missing)")
        for name in names:
            items.append(_Input(name, locate_spec(name).path))
    for ref in refs:
        path = Path(ref).expanduser()
        if path.is_dir():
            folder = path / "specs" if (path / "specs").is_dir() else path  # a library: its specs/ folder
            files = sorted(p for p in folder.glob("*.json") if p.is_file())
            if not files:
                what = "the library" if folder != path else "directory"
                items.append(_Input(ref, None, f"no *.json spec files in {what} {folder} (a library keeps "
                                               "its specs in LIBRARY/specs/)"))
            items.extend(_Input(str(f), f) for f in files)
            continue
        try:
            items.append(_Input(ref, locate_spec(ref).path))
        except LookupError as e:
            items.append(_Input(ref, None, str(e)))
    return items


def _reasons_text(verdict: Verdict) -> Text:
    if verdict.accepted:
        return Text("")
    return display.text("\n".join(f"• {r}" for r in verdict.reasons), "red")


def _peek_id(path: Path | None) -> str | None:
    """The ``id`` field of a spec file that may not parse (for labelling a rejected row)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path else None
    except (OSError, ValueError):
        return None
    value = data.get("id") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def _table(rows: list[tuple[_Input, Verdict]], width: int = 80) -> Table:
    """One row per spec. With rejections, two columns (the spec with its verdict, and the reasons, which
    get the room); the spec column is capped so long paths fold instead of squeezing the reasons out."""
    any_rejected = any(not v.accepted for _, v in rows)
    table = Table(show_lines=any_rejected, title="Validity gate", title_justify="left", expand=any_rejected)
    table.add_column("spec", overflow="fold", max_width=max(24, min(48, width // 3)) if any_rejected else None)
    if any_rejected:
        table.add_column("reasons", ratio=1, overflow="fold")
    else:
        table.add_column("verdict", no_wrap=True)
        table.add_column("traj.", justify="right", no_wrap=True)
        table.add_column("time", justify="right", no_wrap=True)
    for item, v in rows:
        spec_id = v.spec_id or _peek_id(item.path)
        label = display.text(spec_id or item.label, "bold")
        if spec_id and item.label != spec_id:
            label.append(f"\n{display.clean(item.label)}", style="dim")
        verdict = Text("accepted", style="bold green") if v.accepted else Text("rejected", style="bold red")
        if any_rejected:
            label.append("\n")
            label.append_text(verdict)
            label.append(f" · {v.trajectories} traj. · {v.seconds:.2f}s", style="dim")
            if v.seeds:
                label.append(f"\nseed {v.seeds[0]} (--seed replays it)", style="dim")
            table.add_row(label, _reasons_text(v))
        else:
            table.add_row(label, verdict, str(v.trajectories), f"{v.seconds:.2f}s")
    return table


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, metavar="PATH...")
@click.option("--all-examples", is_flag=True, help="Validate every shipped example.")
@click.option("--executor", type=click.Choice(EXECUTORS), default="worker", show_default=True,
              help="Where spec code runs: 'worker' (isolated processes) or 'inprocess' (trusted specs only).")
@click.option("--seed", type=click.IntRange(0, 2**31 - 1), default=None,
              help="Replay a run: its first episode seed (a gate report's seeds[0]). Default: fresh seeds for each "
                   "spec, drawn so that no spec can predict them.")
@click.option("--budget-seconds", type=click.FloatRange(min=0, min_open=True), default=GateBudget.wall_s,
              show_default=True, help="Wall-time budget of one spec's run (rule 9).")
@click.option("--budget-calls", type=click.IntRange(min=1), default=GateBudget.calls, show_default=True,
              help="Tool calls and check evaluations one spec's run may make (rule 9).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
def validate(paths: tuple[str, ...], all_examples: bool, executor: str, seed: int | None, budget_seconds: float,
             budget_calls: int, as_json: bool) -> None:
    """Run the validity gate on spec files, directories of *.json, or shipped example names.

    Exits 1 when any spec is rejected (every reason is printed), 0 when all are accepted. Each spec's episode
    seeds are drawn fresh and printed with a rejection (and in --json); --seed replays a run.
    """
    if not paths and not all_examples:
        raise click.UsageError("give spec files, directories or example names, or --all-examples")
    items = expand_inputs(list(paths), all_examples)
    t0 = time.perf_counter()
    rows: list[tuple[_Input, Verdict]] = []
    err = Console(stderr=True)
    ex = make_executor(executor)
    budget = GateBudget(wall_s=budget_seconds, calls=budget_calls)
    try:
        with err.status("validating…") if err.is_terminal and not as_json else nullcontext():
            for item in items:
                if item.path is None:
                    verdict = Verdict(None, False, [Reason(1, "not_found", item.problem or "not found")],
                                      source=item.label)
                else:
                    verdict = validate_spec(item.path, executor=ex, seed=seed, budget=budget, source=str(item.path))
                rows.append((item, verdict))
    finally:
        ex.close()
    n_bad = sum(not v.accepted for _, v in rows)
    seconds = time.perf_counter() - t0
    if as_json:
        out = {"accepted": len(rows) - n_bad, "rejected": n_bad, "seconds": round(seconds, 3),
               "results": [v.to_dict() | {"input": item.label} for item, v in rows]}
        click.echo(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        console = Console(highlight=False)
        console.print(_table(rows, console.width))
        style = "bold red" if n_bad else "bold green"
        console.print(Text(f"{len(rows) - n_bad} accepted, {n_bad} rejected in {seconds:.1f}s", style=style))
    if n_bad:
        raise SystemExit(1)


# -- generate / list / stats ----------------------------------------------------------------------


class _SandboxChoice(click.Choice):
    """``--executor`` of ``generate``: where spec code runs, as on every command; 'local'/'ray' get a hint."""

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> object:
        if value in ("local", "ray"):
            self.fail(f"{value!r}: --executor names where spec code runs (auto, worker, inprocess), as on every "
                      f"other command; the parallel engine is --runner {value}", param, ctx)
        return super().convert(value, param, ctx)


def parse_backend_options(items: tuple[str, ...], option: str = "--backend-option") -> dict[str, object]:
    """``KEY=VALUE`` pairs (values read as YAML, so JSON works too) into a dict; UsageError on a bad one."""
    opts: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.UsageError(f"{option} must look like KEY=VALUE, got {item!r}")
        opts[key] = yaml.safe_load(value) if value else ""
    return opts


def parse_corpus_options(items: tuple[str, ...], corpus: str) -> dict[str, object]:
    """``--corpus-option KEY=VALUE`` pairs into the corpus loader's options, checked against the loader the
    corpus resolves to (UsageError naming its options on an unknown key).

    Values are read as YAML (``max_bytes=2000000``, ``include=["*.py", "*.go"]``, ``path_field=null``;
    ``None`` is ``null`` too); a value YAML cannot read (a glob such as ``*.py``) is kept as written.
    """
    opts: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise click.UsageError(f"--corpus-option must look like KEY=VALUE (e.g. text_field=code), got {item!r}")
        try:
            parsed = yaml.safe_load(value) if value else ""
        except yaml.YAMLError:
            parsed = value
        opts[key] = None if parsed == "None" else parsed
    if not opts:
        return opts
    from corpora import get_loader, resolve_spec
    from corpora.errors import did_you_mean

    try:
        loader = get_loader(resolve_spec(corpus)[0])
    except (KeyError, ValueError, OSError):
        return opts  # the corpus itself is wrong: the run says so, with its own message
    known = loader.options()
    for key in opts:
        if key not in known:
            raise click.UsageError(f"--corpus-option {key}: the {loader.name!r} corpus loader has no option {key!r}"
                                   f"{did_you_mean(key, known)} (its options: {', '.join(known)})")
    return opts


def _interrupted(e: Any, out: Path) -> None:
    """Say what an interrupted run saved and how to resume it (e: a GenerateInterrupted); exit 130."""
    s = e.summary
    click.echo(f"\nInterrupted. Saved in {out}: {s.attempted} of {e.todo} documents attempted and committed "
               f"({s.accepted} environments accepted). Documents not committed yet (at most one batch) were "
               "not saved. Re-run the same command to resume where it stopped.", err=True)
    raise SystemExit(130)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--corpus", default="stdlib", show_default=True,
              help="'stdlib', a PATH (source tree, .jsonl, .parquet) or 'hf:NAME'; 'tree:PATH' reads any folder "
                   "as a source tree.")
@click.option("--corpus-option", "corpus_options", multiple=True, metavar="KEY=VALUE",
              help="Corpus loader option, repeatable (value read as YAML): e.g. text_field=code, path_field=null, "
                   "encoding=cp1252, max_bytes=5000000, include='[\"*.go\"]'.")
@click.option("--proposer", default="world", show_default=True,
              help="'world' (a catalog service running the document's operations; no model), 'template' "
                   "(blueprint v1 from the AST, no model) or 'llm'.")
@click.option("--engine", "--backend", "backend", default=None,
              help="The engine (model backend) of --proposer llm: transformers, vllm, openai, scripted.")
@click.option("--model", default=None, help="Model name or path for the backend.")
@click.option("--backend-option", "--backend-opt", "backend_options", multiple=True, metavar="KEY=VALUE",
              help="Backend option, repeatable: e.g. gguf_file=x.gguf, device=cuda, base_url=http://host:8000/v1.")
@click.option("--n", "n", type=click.IntRange(min=1), default=20, show_default=True, help="Documents to attempt.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("library"), show_default=True,
              help="Library folder (specs + catalog).")
@click.option("--catalog-url", default=None, envvar="ENVWRIGHT_CATALOG_URL",
              help="SQLAlchemy URL of the catalog, e.g. postgresql+psycopg://user@host/db "
                   "(default: sqlite in --out; env: ENVWRIGHT_CATALOG_URL).")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Parallel worker processes.")
@click.option("--executor", "--validation", "validation", type=_SandboxChoice(["auto", "worker", "inprocess"]),
              default="auto", show_default=True,
              help="Where the gate runs spec code: worker (isolated processes), inprocess (trusted specs), or "
                   "auto (inprocess for the template proposer, worker for models).")
@click.option("--runner", "run_executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="Run the work on local processes or a Ray cluster.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--max-retries", type=click.IntRange(min=0), default=2, show_default=True,
              help="Repair rounds for the llm proposer (0: none).")
@click.option("--batch-size", type=click.IntRange(min=1), default=8, show_default=True,
              help="Documents per generation batch.")
@click.option("--skills", type=click.Path(path_type=Path), default=None,
              help="Skill library folder: condition a share --alpha of documents on routed skills.")
@click.option("--alpha", type=float, default=0.5, show_default=True, help="Share of skill-conditioned documents.")
@click.option("--structure", type=click.Choice(["spec", "blueprint", "world"]), default="spec", show_default=True,
              help="What the llm proposer writes: a whole spec (the free stream), a blueprint or a world blueprint "
                   "(envgen/world/WORLDS.md) that a compiler turns into one.")
@click.option("--constrained/--no-constrained", default=None,
              help="Decode under the structure's JSON Schema (default: on for blueprint and world, off for spec).")
@click.option("--max-new-tokens", type=int, default=None,
              help="Token limit per generation (constrained decoding raises it to the schema's worst case).")
@click.option("--temperature", type=float, default=None, help="Sampling temperature of the llm proposer (0: greedy).")
@click.option("--keep-tests", is_flag=True,
              help="Keep test code (tests/ folders, test_*.py, *_test.go, *.spec.ts, ...), dropped by default.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def generate(corpus: str, corpus_options: tuple[str, ...], proposer: str, backend: str | None, model: str | None,
             backend_options: tuple[str, ...], n: int, out: Path,
             catalog_url: str | None, workers: int, validation: str, run_executor: str, seed: int, max_retries: int,
             batch_size: int, skills: Path | None, alpha: float, structure: str, constrained: bool | None,
             max_new_tokens: int | None, temperature: float | None, keep_tests: bool, as_json: bool) -> None:
    """Generate validated environments from a corpus into a library (resumes a killed run).

    One run writes a library at a time: a run into a library that another live run is writing is refused,
    naming that run (its lock file is LIBRARY/generate.lock; a lock whose process is gone is taken over).

    Exits 1 when the corpus has no usable document or no environment was accepted (when every attempt
    failed in the model backend, those documents are not marked done: a re-run retries them); a run
    whose every attempt gave an environment the library already has is not a failure. Ctrl-C keeps
    what was committed; re-running the same command (the corpus path spelled any way) resumes.
    """
    from envgen.generate import GenerateConfig, GenerateInterrupted, run_generate

    copts = parse_corpus_options(corpus_options, corpus)
    opts = parse_backend_options(backend_options)
    popts: dict[str, object] = {"backend_options": opts} if opts else {}
    if proposer == "llm":
        popts["structure"] = structure
        if constrained is not None:
            popts["constrained"] = constrained
        if max_new_tokens is not None:
            popts["max_new_tokens"] = max_new_tokens
        if temperature is not None:
            popts["temperature"] = temperature
    elif structure != "spec" or constrained is not None:
        raise click.UsageError("--structure and --constrained apply to --proposer llm (the template proposer "
                               "always writes a blueprint from the document's AST)")
    try:
        cfg = GenerateConfig(corpus=corpus, proposer=proposer, backend=backend, model=model, n=n, out=out,
                             catalog_url=catalog_url, workers=workers, executor=run_executor, seed=seed,
                             max_retries=max_retries, batch_size=batch_size, validation=validation,
                             skills=skills, alpha=alpha, proposer_options=popts, corpus_options=copts,
                             keep_tests=keep_tests)
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    try:
        summary = run_generate(cfg, progress=not as_json)
    except GenerateInterrupted as e:
        _interrupted(e, cfg.out)
    except (KeyError, ValueError, OSError, RuntimeError) as e:
        raise click.ClickException(error_message(e)) from None
    if as_json:
        click.echo(json.dumps(summary.to_dict(), indent=1))
    else:
        _print_generate_summary(cfg, summary)
    if summary.redone_corrupt:
        shown = "; ".join(f"{i}: {why}" for i, why in list(summary.redone_corrupt.items())[:5])
        more = f" and {len(summary.redone_corrupt) - 5} more" if len(summary.redone_corrupt) > 5 else ""
        Console(stderr=True).print(display.text(
            f"{len(summary.redone_corrupt)} environments of this run had a corrupt spec file, kept as "
            f"specs/ID.json.corrupt; their documents were done again: {shown}{more}"), style="yellow")
    if summary.backend_failures:
        err = Console(stderr=True)
        err.print(Text(f"{summary.backend_failures} of {summary.attempted} documents failed in the model backend "
                       f"and are not marked done; re-run the same command to retry them. First error: "
                       f"{display.text(str(summary.first_backend_error))}",
                       style="bold red" if summary.only_backend_failures else "yellow"))
    if summary.attempted and not summary.accepted:
        if summary.only_duplicates:
            click.echo(f"Nothing new: each of the {summary.attempted} documents attempted gave an environment "
                       f"{cfg.out} already has (duplicates refused); the library is complete for this corpus.",
                       err=True)
            return
        where = (f"every attempt's reasons: envwright inspect {cfg.out} (its rejected proposals), the "
                 f"candidates in {cfg.out / 'rejected'}")
        listed = "the rejection reasons are listed above; " if summary.reason_examples and not as_json else ""
        raise click.ClickException(f"no environment was accepted from {summary.attempted} documents ({listed}"
                                   f"{where})")


def _print_generate_summary(cfg: Any, summary: Any) -> None:
    console = Console()
    t = Table(title=display.text(f"envwright generate: {cfg.corpus} / {cfg.proposer} -> {cfg.out}"))
    t.add_column("measure")
    t.add_column("value", justify="right")
    t.add_row("attempted", str(summary.attempted))
    t.add_row("accepted", f"{summary.accepted} ({summary.yield_rate:.0%})" if summary.attempted else "0")
    t.add_row("resumed (already done)", str(summary.skipped_resumed))
    for code, k in sorted(summary.rejected_by_reason.items(), key=lambda kv: -kv[1]):
        t.add_row(display.text(f"rejected: {code}"), str(k))
    t.add_row("duplicates refused", str(summary.duplicates))
    t.add_row("retries", str(summary.retries))
    t.add_row("tokens", str(summary.tokens))
    t.add_row("median validation", f"{summary.median_validation_ms:.1f} ms" if summary.validation_seconds else "-")
    t.add_row("time per accepted env", f"{summary.seconds_per_env:.3f} s" if summary.accepted else "-")
    t.add_row("wall time", f"{summary.wall_seconds:.1f} s")
    console.print(t)
    _print_reasons(console, summary)


def _print_reasons(console: Console, summary: Any) -> None:
    """Why attempts were rejected: a few distinct reasons per code, most frequent code first."""
    codes = [(code, k) for code, k in sorted(summary.rejected_by_reason.items(), key=lambda kv: -kv[1])
             if summary.reason_examples.get(code)]
    if not codes:
        return
    console.print(Text("Why attempts were rejected (a few reasons per code):", style="bold"))
    for code, k in codes:
        console.print(display.text(f"  {code} ({k}):"))
        for reason in summary.reason_examples[code]:
            console.print(display.text(f"    • {reason}", single_line=True))


def open_library(library: Path, catalog_url: str | None) -> Any:
    """An existing library, opened only to read it (nothing is written into it or beside its catalog)."""
    from envgen.library import Library

    try:
        return Library.open_readonly(library, catalog_url)
    except ValueError as e:
        raise click.ClickException(str(e)) from None


@click.command("list", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("library", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--proposer", default=None, help="Only envs whose generator starts with this (template, llm).")
@click.option("--stream", default=None, help="Only this stream: skill, explore, template, manual.")
@click.option("--skill", default=None, help="Only envs made with this skill id.")
@click.option("--doc", default=None, help="Only envs whose source document id contains this text.")
@click.option("--min-solve", type=float, default=None, help="Minimum solve rate.")
@click.option("--max-solve", type=float, default=None, help="Maximum solve rate.")
@click.option("--sort", default="created_at", show_default=True, help="Catalog column to sort by.")
@click.option("--desc", is_flag=True, help="Sort descending.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Show at most this many (>= 1).")
@click.option("--catalog-url", default=None, envvar="ENVWRIGHT_CATALOG_URL",
              help="SQLAlchemy URL of the catalog (default: sqlite in LIBRARY; env: ENVWRIGHT_CATALOG_URL).")
@click.option("--json", "as_json", is_flag=True)
def list_library(library: Path, proposer: str | None, stream: str | None, skill: str | None, doc: str | None,
                 min_solve: float | None, max_solve: float | None, sort: str, desc: bool, limit: int | None,
                 catalog_url: str | None, as_json: bool) -> None:
    """List the environments of a library, with filters and sorting.

    A listed environment whose spec file is corrupt (missing, not JSON, not a valid spec) is marked so, with
    the reason; so is a spec file in specs/ that has no catalog row and does not load."""
    lib = open_library(library, catalog_url)
    try:
        rows = lib.rows(proposer=proposer, stream=stream, skill=skill, doc=doc, min_solve=min_solve,
                        max_solve=max_solve, sort=sort, descending=desc, limit=limit)
        corrupt = lib.corrupt_specs(rows)
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    finally:
        lib.close()
    listed = {r["id"] for r in rows}
    stray = {i: why for i, why in corrupt.items() if i not in listed}
    if as_json:
        keep = ("id", "title", "doc_id", "proposer", "stream", "skill_id", "n_tools", "n_tasks", "solve_rate",
                "grounding", "created_at", "path")
        out = [{k: r[k] for k in keep} | {"corrupt": corrupt.get(r["id"])} for r in rows]
        out += [{k: None for k in keep} | {"id": i, "path": f"specs/{i}.json", "corrupt": why}
                for i, why in stray.items()]
        click.echo(json.dumps(out, indent=1))
        return
    console = Console()
    console.print(library_table(rows, console.width, corrupt))
    print_corrupt(console, corrupt, library)


def print_corrupt(console: Console, corrupt: dict[str, str], library: Path) -> None:
    """Name each corrupt spec file and its reason, and what to do about them."""
    if not corrupt:
        return
    console.print(Text(f"{len(corrupt)} corrupt spec file{'' if len(corrupt) == 1 else 's'} (not loaded by eval, "
                       "train or serve):", style="bold red"))
    for env_id, why in list(corrupt.items())[:20]:
        console.print(display.text(f"  {env_id}: {why}", single_line=True))
    if len(corrupt) > 20:
        console.print(f"  ... and {len(corrupt) - 20} more")
    console.print(display.text(f"Re-run the envwright generate command that made them (same --out {library}) to "
                               "redo their documents, or replace the files."))


def library_table(rows: list[dict[str, Any]], width: int, corrupt: dict[str, str] | None = None) -> Table:
    """The ``list`` table: ids are never cut. Wide terminals get one column per field; narrower ones
    stack the id (on a line of its own) over title, source and proposer, and wrap those. An id in
    ``corrupt`` is marked ``(corrupt spec file)``, and its solve rate shows as ``!``."""
    corrupt = corrupt or {}
    longest = max((len(r["id"]) + (20 if r["id"] in corrupt else 0) for r in rows), default=2)
    title = f"{len(rows)} env{'' if len(rows) == 1 else 's'}" + (
        f", {sum(r['id'] in corrupt for r in rows)} with a corrupt spec file" if set(corrupt) & {
            r["id"] for r in rows} else "")
    solve = ["!" if r["id"] in corrupt else "-" if r["solve_rate"] is None else f"{r['solve_rate']:.2f}"
             for r in rows]
    if width >= longest + 110:
        t = Table(title=title)
        t.add_column("id", no_wrap=True, min_width=longest)
        for name in ("title", "source", "proposer", "stream"):
            t.add_column(name, overflow="fold")
        for name in ("tools", "tasks", "solve"):
            t.add_column(name, justify="right", no_wrap=True)
        for r, sr in zip(rows, solve, strict=True):
            t.add_row(_id_cell(r["id"], corrupt), display.text(r["title"]), display.text(r["doc_id"] or "-"),
                      display.text(r["proposer"] or "-"), display.text(r["stream"] or "-"),
                      str(r["n_tools"]), str(r["n_tasks"]), sr)
        return t
    t = Table(title=title, show_lines=True)
    t.add_column("id / title / source · proposer · stream", overflow="fold", min_width=min(longest, width - 30))
    for name in ("tools", "tasks", "solve"):
        t.add_column(name, justify="right", no_wrap=True)
    for r, sr in zip(rows, solve, strict=True):
        cell = _id_cell(r["id"], corrupt, "bold")
        cell.append("\n" + display.clean(r["title"]))
        cell.append("\n" + display.clean(f"{r['doc_id'] or '-'} · {r['proposer'] or '-'} · {r['stream'] or '-'}"),
                    style="dim")
        t.add_row(cell, str(r["n_tools"]), str(r["n_tasks"]), sr)
    return t


def _id_cell(env_id: str, corrupt: dict[str, str], style: str = "") -> Text:
    cell = display.text(env_id, style)
    if env_id in corrupt:
        cell.append(" (corrupt spec file)", style="bold red")
    return cell

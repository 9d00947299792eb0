"""envgen's commands: ``validate``, ``generate``, ``list`` and ``stats``.

Loaded lazily by :mod:`envgen.command`, which maps each command name to an
attribute of this module; a command that is not defined here yet is reported
as "not available yet" there.

``validate PATH...`` runs the validity gate (:func:`envgen.validate.validate_spec`,
the six rules of ENVSPEC.md) on spec files, on every ``*.json`` directly inside
a directory, on shipped examples named by their name, or on all of them with
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

import click
import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from envgen.validate import Reason, Verdict, validate_spec
from gym_envs.cli import EXECUTORS, example_names, locate_spec
from gym_envs.sandbox import make_executor

__all__ = ["generate", "list_library", "stats", "validate"]


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
            files = sorted(p for p in path.glob("*.json") if p.is_file())
            if not files:
                items.append(_Input(ref, None, f"no *.json spec files in directory {ref}"))
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
    return Text("\n".join(f"• {r}" for r in verdict.reasons), style="red")


def _peek_id(path: Path | None) -> str | None:
    """The ``id`` field of a spec file that may not parse (for labelling a rejected row)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path else None
    except (OSError, ValueError):
        return None
    value = data.get("id") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def _table(rows: list[tuple[_Input, Verdict]]) -> Table:
    any_rejected = any(not v.accepted for _, v in rows)
    table = Table(show_lines=any_rejected, title="Validity gate", title_justify="left", expand=any_rejected)
    table.add_column("spec", overflow="fold")
    table.add_column("verdict", no_wrap=True)
    table.add_column("traj.", justify="right", no_wrap=True)
    table.add_column("time", justify="right", no_wrap=True)
    if any_rejected:
        table.add_column("reasons", ratio=1, min_width=30)
    for item, v in rows:
        spec_id = v.spec_id or _peek_id(item.path)
        label = Text(spec_id or item.label, style="bold")
        if spec_id and item.label != spec_id:
            label.append(f"\n{item.label}", style="dim")
        verdict = Text("accepted", style="bold green") if v.accepted else Text("rejected", style="bold red")
        cells: list[Text | str] = [label, verdict, str(v.trajectories), f"{v.seconds:.2f}s"]
        table.add_row(*cells, *([_reasons_text(v)] if any_rejected else []))
    return table


@click.command()
@click.argument("paths", nargs=-1, metavar="PATH...")
@click.option("--all-examples", is_flag=True, help="Validate every shipped example.")
@click.option("--executor", type=click.Choice(EXECUTORS), default="worker", show_default=True,
              help="Where spec code runs: 'worker' (isolated processes) or 'inprocess' (trusted specs only).")
@click.option("--seed", type=int, default=0, show_default=True, help="Episode seed of every trajectory.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
def validate(paths: tuple[str, ...], all_examples: bool, executor: str, seed: int, as_json: bool) -> None:
    """Run the validity gate on spec files, directories of *.json, or shipped example names.

    Exits 1 when any spec is rejected (every reason is printed), 0 when all are accepted.
    """
    if not paths and not all_examples:
        raise click.UsageError("give spec files, directories or example names, or --all-examples")
    items = expand_inputs(list(paths), all_examples)
    t0 = time.perf_counter()
    rows: list[tuple[_Input, Verdict]] = []
    err = Console(stderr=True)
    ex = make_executor(executor)
    try:
        with err.status("validating…") if err.is_terminal and not as_json else nullcontext():
            for item in items:
                if item.path is None:
                    verdict = Verdict(None, False, [Reason(1, "not_found", item.problem or "not found")],
                                      source=item.label)
                else:
                    verdict = validate_spec(item.path, executor=ex, seed=seed, source=str(item.path))
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
        console.print(_table(rows))
        style = "bold red" if n_bad else "bold green"
        console.print(Text(f"{len(rows) - n_bad} accepted, {n_bad} rejected in {seconds:.1f}s", style=style))
    if n_bad:
        raise SystemExit(1)


# -- generate / list / stats ----------------------------------------------------------------------


@click.command()
@click.option("--corpus", default="stdlib", show_default=True,
              help="'stdlib', a PATH (source tree, .jsonl, .parquet) or 'hf:NAME'.")
@click.option("--proposer", default="template", show_default=True, help="'template' (no model) or 'llm'.")
@click.option("--backend", default=None, help="Model backend for --proposer llm: transformers, vllm, openai, scripted.")
@click.option("--model", default=None, help="Model name or path for the backend.")
@click.option("--backend-option", "backend_options", multiple=True, metavar="KEY=VALUE",
              help="Backend option, repeatable: e.g. gguf_file=x.gguf, device=cuda, base_url=http://host:8000/v1.")
@click.option("--n", "n", type=int, default=20, show_default=True, help="Documents to attempt.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("library"), show_default=True,
              help="Library folder (specs + catalog).")
@click.option("--catalog-url", default=None, envvar="ENVWRIGHT_CATALOG_URL",
              help="SQLAlchemy URL of the catalog, e.g. postgresql+psycopg://user@host/db "
                   "(default: sqlite in --out; env: ENVWRIGHT_CATALOG_URL).")
@click.option("--workers", type=int, default=1, show_default=True, help="Parallel worker processes.")
@click.option("--executor", "run_executor", type=click.Choice(["local", "ray"]), default="local",
              show_default=True, help="Run the work on local processes or a Ray cluster.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--max-retries", type=int, default=2, show_default=True, help="Repair rounds for the llm proposer.")
@click.option("--batch-size", type=int, default=8, show_default=True, help="Documents per generation batch.")
@click.option("--validation", type=click.Choice(["auto", "worker", "inprocess"]), default="auto", show_default=True,
              help="Where the gate runs spec code (auto: in-process for template, isolated workers for models).")
@click.option("--skills", type=click.Path(path_type=Path), default=None,
              help="Skill library folder: condition a share --alpha of documents on routed skills.")
@click.option("--alpha", type=float, default=0.5, show_default=True, help="Share of skill-conditioned documents.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def generate(corpus: str, proposer: str, backend: str | None, model: str | None, backend_options: tuple[str, ...],
             n: int, out: Path,
             catalog_url: str | None, workers: int, run_executor: str, seed: int, max_retries: int, batch_size: int,
             validation: str, skills: Path | None, alpha: float, as_json: bool) -> None:
    """Generate validated environments from a corpus into a library (resumes a killed run)."""
    from envgen.generate import GenerateConfig, run_generate

    opts: dict[str, object] = {}
    for item in backend_options:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.UsageError(f"--backend-option must look like KEY=VALUE, got {item!r}")
        opts[key] = yaml.safe_load(value) if value else ""
    try:
        cfg = GenerateConfig(corpus=corpus, proposer=proposer, backend=backend, model=model, n=n, out=out,
                             catalog_url=catalog_url, workers=workers, executor=run_executor, seed=seed,
                             max_retries=max_retries, batch_size=batch_size, validation=validation,
                             skills=skills, alpha=alpha,
                             proposer_options={"backend_options": opts} if opts else {})
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    try:
        summary = run_generate(cfg, progress=not as_json)
    except (KeyError, ValueError, FileNotFoundError) as e:
        raise click.ClickException(str(e.args[0] if e.args else e)) from None
    if as_json:
        click.echo(json.dumps(summary.to_dict(), indent=1))
        return
    console = Console()
    t = Table(title=f"envwright generate: {cfg.corpus} / {cfg.proposer} -> {cfg.out}")
    t.add_column("measure")
    t.add_column("value", justify="right")
    t.add_row("attempted", str(summary.attempted))
    t.add_row("accepted", f"{summary.accepted} ({summary.yield_rate:.0%})")
    t.add_row("resumed (already done)", str(summary.skipped_resumed))
    for code, k in sorted(summary.rejected_by_reason.items(), key=lambda kv: -kv[1]):
        t.add_row(f"rejected: {code}", str(k))
    t.add_row("duplicates refused", str(summary.duplicates))
    t.add_row("retries", str(summary.retries))
    t.add_row("tokens", str(summary.tokens))
    t.add_row("median validation", f"{summary.median_validation_ms:.1f} ms")
    t.add_row("time per accepted env", f"{summary.seconds_per_env:.3f} s")
    t.add_row("wall time", f"{summary.wall_seconds:.1f} s")
    console.print(t)


@click.command("list")
@click.argument("library", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--proposer", default=None, help="Only envs whose generator starts with this (template, llm).")
@click.option("--stream", default=None, help="Only this stream: skill, explore, template, manual.")
@click.option("--skill", default=None, help="Only envs made with this skill id.")
@click.option("--doc", default=None, help="Only envs whose source document id contains this text.")
@click.option("--min-solve", type=float, default=None, help="Minimum solve rate.")
@click.option("--max-solve", type=float, default=None, help="Maximum solve rate.")
@click.option("--sort", default="created_at", show_default=True, help="Catalog column to sort by.")
@click.option("--desc", is_flag=True, help="Sort descending.")
@click.option("--limit", type=int, default=None)
@click.option("--catalog-url", default=None, envvar="ENVWRIGHT_CATALOG_URL",
              help="SQLAlchemy URL of the catalog (default: sqlite in LIBRARY; env: ENVWRIGHT_CATALOG_URL).")
@click.option("--json", "as_json", is_flag=True)
def list_library(library: Path, proposer: str | None, stream: str | None, skill: str | None, doc: str | None,
                 min_solve: float | None, max_solve: float | None, sort: str, desc: bool, limit: int | None,
                 catalog_url: str | None, as_json: bool) -> None:
    """List the environments of a library, with filters and sorting."""
    from envgen.library import Library

    try:
        lib = Library(library, catalog_url)
        rows = lib.rows(proposer=proposer, stream=stream, skill=skill, doc=doc, min_solve=min_solve,
                        max_solve=max_solve, sort=sort, descending=desc, limit=limit)
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    if as_json:
        keep = ("id", "title", "doc_id", "proposer", "stream", "skill_id", "n_tools", "n_tasks", "solve_rate",
                "grounding", "created_at", "path")
        click.echo(json.dumps([{k: r[k] for k in keep} for r in rows], indent=1))
        return
    t = Table("id", "title", "source", "proposer", "stream", "tools", "tasks", "solve", title=f"{len(rows)} envs")
    for r in rows:
        solve = "-" if r["solve_rate"] is None else f"{r['solve_rate']:.2f}"
        t.add_row(r["id"], r["title"][:40], (r["doc_id"] or "-")[:40], r["proposer"] or "-", r["stream"] or "-",
                  str(r["n_tools"]), str(r["n_tasks"]), solve)
    Console().print(t)


@click.command()
@click.argument("library", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--catalog-url", default=None, envvar="ENVWRIGHT_CATALOG_URL",
              help="SQLAlchemy URL of the catalog (default: sqlite in LIBRARY; env: ENVWRIGHT_CATALOG_URL).")
@click.option("--json", "as_json", is_flag=True)
def stats(library: Path, catalog_url: str | None, as_json: bool) -> None:
    """Yield per proposer and rejection reason, diversity and grounding of a library."""
    from envgen.library import Library
    from envgen.stats import library_stats

    try:
        st = library_stats(Library(library, catalog_url))
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    if as_json:
        click.echo(json.dumps(st.to_dict(), indent=1))
        return
    console = Console()
    t = Table("measure", "value", title=f"library {library}")
    t.add_row("environments", str(st.envs))
    t.add_row("attempts (accepted)", f"{st.attempts} ({st.accepted_attempts})")
    t.add_row("overall yield", f"{st.overall_yield:.1%}" if st.attempts else "-")
    for p, y in st.yield_by_proposer.items():
        t.add_row(f"yield: {p}", f"{y['accepted']}/{y['attempted']} = {y['yield']:.1%}")
    for code, k in st.rejections_by_reason.items():
        t.add_row(f"rejected: {code}", str(k))
    t.add_row("distinct tool-signature sets", str(st.distinct_signatures))
    t.add_row("mean pairwise task-text distance", f"{st.mean_task_distance:.3f}")
    t.add_row("grounded share (>= 0.5 of names)", f"{st.grounded_share:.1%}" if st.grounded_share == st.grounded_share
              else "-")
    t.add_row("mean grounding", f"{st.mean_grounding:.3f}")
    t.add_row("by stream", json.dumps(st.by_stream))
    t.add_row("solve-rate histogram", json.dumps(st.solve_rate_histogram))
    console.print(t)

"""``envwright inspect``: write (and optionally serve) the inspector's static site."""

from __future__ import annotations

import functools
import http.server
from pathlib import Path

import click

__all__ = ["inspect"]


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("source", metavar="LIBRARY_OR_SPEC")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder for the site: new, empty, or a site this command wrote before. A site of the same "
                   "library or spec is rebuilt (the output says so); a site of another one is refused unless "
                   "--force. Always refused when it holds files the inspector did not write, or holds or sits in "
                   "what is inspected.")
@click.option("--force", is_flag=True, help="Replace a site at --out that shows another library or spec.")
@click.option("--run", "runs", multiple=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              metavar="RUN_DIR", help="An evaluation run folder (envwright eval --out) whose episodes to link; "
                                      "repeatable.")
@click.option("--corpus", default=None, help="The corpus the library came from, to show source documents that are "
                                             "not in the standard library (a folder, .jsonl, .parquet or hf:NAME).")
@click.option("--gate", type=click.Choice(["auto", "stored", "run", "off"]), default="auto", show_default=True,
              help="Gate reports: the one stored at generation time (auto: else re-run the gate), only stored ones, "
                   "always re-run, or none.")
@click.option("--executor", type=click.Choice(["worker", "inprocess"]), default="worker", show_default=True,
              help="Where spec code runs to build seed rows (and re-run gates): isolated workers, or in this "
                   "process (trusted specs only).")
@click.option("--rows", type=click.IntRange(0, 1000), default=5, show_default=True, help="Seed rows per table.")
@click.option("--catalog-url", default=None, envvar="ENVWRIGHT_CATALOG_URL",
              help="SQLAlchemy URL of the library's catalog (default: sqlite in the library; env: "
                   "ENVWRIGHT_CATALOG_URL).")
@click.option("--serve", type=click.IntRange(0, 65535), default=None, metavar="PORT",
              help="Then serve the site on http://127.0.0.1:PORT until Ctrl-C (0 picks a free port).")
def inspect(source: str, out: Path, force: bool, runs: tuple[Path, ...], corpus: str | None, gate: str,
            executor: str, rows: int, catalog_url: str | None, serve: int | None) -> None:
    """Write a static HTML site to browse LIBRARY_OR_SPEC (a library folder, a spec file, a folder of specs, or
    an example's name): an index, one page per environment, rejected proposals, and linked eval episodes.

    Exits 1 when LIBRARY_OR_SPEC holds no spec that loads, or --out may not be used (see --out)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from envgen.inspect.site import build_site

    bar = Progress(TextColumn("inspect"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), transient=True)
    task = bar.add_task("envs", total=None)
    try:
        with bar:
            summary = build_site(source, out, runs=runs, corpus=corpus, gate=gate, executor=executor, rows=rows,
                                 catalog_url=catalog_url, force=force,
                                 progress=lambda done, total: bar.update(task, completed=done, total=total))
    except (FileNotFoundError, FileExistsError, ValueError) as e:
        raise click.ClickException(str(e)) from None
    for problem in summary.problems[:20]:
        click.echo(f"note: {problem}", err=True)
    if summary.replaced is not None:
        click.echo(f"replaced the site that was in {out}: {summary.replaced}", err=True)
    click.echo(f"wrote {summary.envs} environment pages, {summary.rejected} rejected proposals and "
               f"{summary.episodes} episodes from {summary.runs} runs in {summary.seconds:.1f} s")
    click.echo(f"open {summary.index.resolve().as_uri()}")
    if serve is not None:
        _serve(out, serve)


def _serve(root: Path, port: int) -> None:
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as httpd:
        click.echo(f"serving {root} on http://127.0.0.1:{httpd.server_address[1]}/ (Ctrl-C stops)")
        try:
            httpd.serve_forever()
        except KeyboardInterrupt:
            click.echo("stopped")

"""Commands that take environments elsewhere: ``export``, ``import`` and ``serve``.

Loaded lazily by the root command (:mod:`envgen.cli`).

* ``export LIBRARY --format hf --out DIR [--push-to-hub REPO]``: the library as a Hugging Face
  dataset folder (:func:`envgen.export.export_hf`), optionally uploaded as a dataset repository;
  prints the time it took.
* ``import SOURCE --out LIBRARY``: an export folder or Hub dataset back into a library
  (:func:`envgen.export.import_hf`): every spec re-validated by the gate, what fails refused per row
  (exit 1), the fresh gate reports kept.
* ``serve SPEC_OR_ID --mcp``: one environment as an MCP server over stdio or streamable HTTP
  (:mod:`gym_envs.mcp_server`). ``SPEC_OR_ID`` is a spec file, a shipped example's name, or the id
  of an environment in ``--library DIR``. Over stdio, stdout is the protocol channel, so everything
  this command says goes to stderr.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from envgen.errors import error_message

if TYPE_CHECKING:
    from envgen.library import Library

__all__ = ["export", "import_cmd", "serve"]


def _open_library(root: Path, catalog_url: str | None, *, create: bool) -> Library:
    """The library ``import`` writes (created when missing), or the one ``export`` only reads."""
    from envgen.library import Library

    if not create and not (root / "specs").is_dir():
        raise click.UsageError(f"{root} is not an envwright library (it has no specs/ folder)")
    try:
        return Library(root, catalog_url) if create else Library.open_readonly(root, catalog_url)
    except ValueError as e:
        raise click.UsageError(str(e)) from None


@click.command("export")
@click.argument("library", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--format", "fmt", type=click.Choice(["hf"]), default="hf", show_default=True,
              help="hf: a Hugging Face datasets folder (Parquet + dataset card).")
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Folder to write (must not exist).")
@click.option("--overwrite", is_flag=True, help="Replace an existing export at --out.")
@click.option("--push-to-hub", "repo_id", default=None, metavar="REPO",
              help="Then upload it as the dataset repository REPO (owner/name; login: HF_TOKEN or `hf auth login`).")
@click.option("--private", is_flag=True, help="With --push-to-hub: create the repository private.")
@click.option("--catalog-url", default=None, envvar="ENVWRIGHT_CATALOG_URL",
              help="SQLAlchemy URL of the catalog (default: sqlite in LIBRARY; env: ENVWRIGHT_CATALOG_URL).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def export(library: Path, fmt: str, out: Path, overwrite: bool, repo_id: str | None, private: bool,
           catalog_url: str | None, as_json: bool) -> None:
    """Export a library as a Hugging Face dataset (one row per task, plus an environments table)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from envgen.export import export_hf, push_to_hub

    if repo_id is not None and repo_id.count("/") != 1:
        raise click.UsageError(f"--push-to-hub takes a repository id owner/name, got {repo_id!r}")
    lib = _open_library(library, catalog_url, create=False)
    err = Console(stderr=True)
    bar = Progress(TextColumn("[bold]export"), BarColumn(), MofNCompleteColumn(), console=err, transient=True,
                   disable=as_json or not err.is_terminal)
    task = bar.add_task("export", total=None)
    try:
        with bar:
            summary = export_hf(lib, out, overwrite=overwrite, repo_id=repo_id,
                                progress=lambda done, total: bar.update(task, completed=done, total=total))
    except (FileExistsError, FileNotFoundError, ValueError) as e:
        raise click.ClickException(str(e)) from None
    finally:
        lib.close()
    if repo_id is not None:
        from gym_envs.errors import exception_text

        try:
            summary.repo_url = push_to_hub(out, repo_id, private=private)
        except Exception as e:  # the command's boundary: the network, credentials, the Hub; the export is kept
            raise click.ClickException(f"the export at {out} is complete, but pushing it to {repo_id} failed: "
                                       f"{exception_text(e)}") from None
    if as_json:
        click.echo(json.dumps({"out": str(summary.out), "format": fmt, "environments": summary.envs,
                               "tasks": summary.tasks, "seconds": round(summary.seconds, 3),
                               "bytes": summary.bytes, "repo_url": summary.repo_url}, indent=1))
        return
    click.echo(f"exported {summary.envs:,} environments ({summary.tasks:,} tasks) to {summary.out} in "
               f"{summary.seconds:.2f} s ({summary.bytes / 1e6:.1f} MB)")
    if summary.repo_url:
        click.echo(f"pushed to https://huggingface.co/datasets/{repo_id} ({summary.repo_url})")


@click.command("import")
@click.argument("source")
@click.option("--out", "library", type=click.Path(path_type=Path, file_okay=False), required=True,
              help="Library folder to add the environments to (created when missing).")
@click.option("--catalog-url", default=None, envvar="ENVWRIGHT_CATALOG_URL",
              help="SQLAlchemy URL of the catalog (default: sqlite in --out; env: ENVWRIGHT_CATALOG_URL).")
@click.option("--executor", type=click.Choice(["worker", "inprocess"]), default="worker", show_default=True,
              help="Where the gate runs each spec's code: isolated workers, or this process (exports you trust).")
def import_cmd(source: str, library: Path, catalog_url: str | None, executor: str) -> None:
    """Import an export (a folder from `envwright export`, or a Hub dataset owner/name) into a library.

    Every spec goes through the validity gate again, and a row is refused, with the reason, when the
    gate rejects it, when the row says it was not accepted (its valid flag or its gate report), or when
    its spec is damaged; the others are imported, each with its fresh gate report. Spec files are
    written byte for byte and catalog rows restored. Nothing is written when an environment conflicts
    with one already in the library (same id, different spec; or a near-duplicate). Exits 1 when any
    row was refused.
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from envgen.export import import_hf
    from gym_envs import display

    lib = _open_library(library, catalog_url, create=True)
    err = Console(stderr=True)
    bar = Progress(TextColumn("[bold]import: the gate on each spec"), BarColumn(), MofNCompleteColumn(),
                   console=err, transient=True, disable=not err.is_terminal)
    task = bar.add_task("import", total=None)
    try:
        with bar:
            summary = import_hf(source, lib, executor=executor,
                                progress=lambda done, total: bar.update(task, completed=done, total=total))
    except (FileNotFoundError, ValueError) as e:
        raise click.ClickException(str(e)) from None
    finally:
        lib.close()
    same = f" ({len(summary.present):,} already there, identical)" if summary.present else ""
    click.echo(f"imported {len(summary.added):,} environments into {summary.library}{same}, each with a fresh gate "
               f"report, in {summary.seconds:.2f} s")
    if summary.refused:
        for env_id, why in summary.refused.items():
            err.print(display.text(f"refused {env_id}: {why}", single_line=True), style="red")
        raise click.ClickException(f"{len(summary.refused):,} environment{'' if len(summary.refused) == 1 else 's'} "
                                   f"of {source} refused (reasons above); the others were imported")


def _resolve(ref: str, library: Path | None) -> Path:
    """A spec file for SPEC_OR_ID: an environment of ``library`` by id, a file, or a shipped example."""
    from corpora.errors import did_you_mean
    from gym_envs.cli import locate_spec

    if library is not None:
        if not (library / "specs").is_dir():
            raise click.UsageError(f"--library {library} is not an envwright library (it has no specs/ folder)")
        path = library / "specs" / f"{ref}.json"
        if path.is_file():
            return path
    try:
        return locate_spec(ref).path
    except LookupError as e:
        msg = str(e)
    if library is not None:
        ids = sorted(p.stem for p in (library / "specs").glob("*.json"))
        msg += f"; nor an environment of {library}{did_you_mean(ref, ids)}"
    else:
        msg += "; for an environment of a library, add --library DIR"
    raise click.ClickException(msg)


@click.command("serve")
@click.argument("spec_ref", metavar="SPEC_OR_ID")
@click.option("--mcp", is_flag=True, help="Serve it as an MCP server (the protocol this command speaks).")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True,
              help="stdio (for a client that starts the server) or streamable HTTP.")
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP: address to listen on.")
@click.option("--port", type=int, default=8000, show_default=True, help="HTTP: port (0 takes a free one).")
@click.option("--path", default="/mcp", show_default=True, help="HTTP: the endpoint's path.")
@click.option("--library", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Library in which SPEC_OR_ID may name an environment by id.")
@click.option("--task", default=None, help="Task of the first episode and of a reset without one (default: the first).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the first episode.")
@click.option("--max-steps", type=int, default=32, show_default=True, help="Tool calls and replies per episode.")
@click.option("--reward-mode", type=click.Choice(["episode", "turns", "checks", "progress"]), default="episode",
              show_default=True, help="gym_envs.env.REWARD_MODES (progress: checks without doing nothing's credit)")
def serve(spec_ref: str, mcp: bool, transport: str, host: str, port: int, path: str, library: Path | None,
          task: str | None, seed: int, max_steps: int, reward_mode: str) -> None:
    """Serve one environment: its tools plus episode control (reset, instruction, end turn) over MCP.

    Tool code runs in the isolated worker sandbox. One server holds one episode at a time.
    """
    if not mcp:
        raise click.UsageError("say which protocol to serve: --mcp (the Model Context Protocol; the only one so far)")
    from gym_envs.errors import LoadFailure
    from gym_envs.mcp_server import EpisodeHost, serve_http, serve_stdio
    from gym_envs.spec import SpecError, load_spec

    spec_file = _resolve(spec_ref, library)
    try:
        episode = EpisodeHost(load_spec(spec_file), task=task, seed=seed, max_steps=max_steps,
                              reward_mode=reward_mode)
    except (SpecError, KeyError, ValueError, OSError) as e:
        raise click.ClickException(error_message(e)) from None
    except LoadFailure as e:  # the spec's state or code does not load: say why, no traceback
        raise click.ClickException(f"cannot start an episode of {spec_file}: {e} (envwright validate "
                                   f"{spec_file} lists every problem)") from None
    spec = episode.spec
    about = f"{spec.id} ({len(spec.tools)} tools, {len(spec.tasks)} tasks, episode: {episode.default_task})"
    try:
        if transport == "stdio":
            click.echo(f"serving {about} over MCP on stdio", err=True)
            serve_stdio(episode)
        else:
            if host not in ("127.0.0.1", "localhost", "::1"):
                click.echo(f"warning: {host} is not a loopback address and the server has no authentication",
                           err=True)

            def announce(url: str) -> None:
                click.echo(f"serving {about} over MCP streamable HTTP at {url} (Ctrl-C stops)", err=True)
                sys.stderr.flush()

            serve_http(episode, address=host, port=port, path=path, announce=announce)
    except KeyboardInterrupt:
        pass
    except OSError as e:
        raise click.ClickException(f"cannot serve on {host}:{port}: {e}") from None
    finally:
        episode.close()

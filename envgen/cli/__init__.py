"""The ``envwright`` command: one table of sub-commands, each imported only when used.

Run it as ``envwright ...`` (the console script, ``envwright = "envgen.cli:main"``) or
``python -m envgen ...`` (:mod:`envgen.__main__`; what ``accelerate launch -m envgen train ...``
starts on every GPU). ``envwright --help`` and ``envwright --version`` import nothing but
:mod:`click` (no pydantic, gymnasium, torch, ...): the help text of every sub-command is kept in
:data:`COMMANDS`, next to the ``"module:attribute"`` string that says where the command lives; the
machinery is :mod:`envgen.cli.lazy`. Benchmarks are one nested group, ``envwright bench``
(:mod:`envgen.cli.bench`).

Every command of the project is a click command. The project's layering makes this package the only
place that may reach every package, and only through these tables. Where the commands live:

* environments: ``show``, ``schema`` (:mod:`gym_envs.cli`), ``play`` (:mod:`gym_envs.play`);
* envgen's own: ``validate``, ``generate``, ``list`` (:mod:`envgen.cli.library`), ``export``,
  ``import``, ``serve`` (:mod:`envgen.cli.interop`), ``skills`` (:mod:`envgen.skills.cli`),
  ``inspect`` (:mod:`envgen.inspect.cli`);
* evaluation: ``eval``, ``compare``, ``contamination``, ``stats`` (:mod:`eval.cli`; ``stats`` is
  envgen's, with BFCL's depth beside the library's);
* training: ``train``, ``plot`` (:mod:`training.cli`).

Contract for sub-command authors: put the click command at the ``module:attribute`` named below
(or change the string here), set ``context_settings={"help_option_names": ["-h", "--help"]}``, and
keep the module's top-level imports to what the command needs.
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from envgen.cli.lazy import HELP_OPTIONS, LazyEntry, LazyGroup

__all__ = ["COMMANDS", "cli", "main"]

ENV, LIB, EVAL, TRAIN = "Environments", "Library", "Evaluation", "Training"

#: Every sub-command of ``envwright``. The strings are the only coupling to the packages.
COMMANDS: dict[str, LazyEntry] = {
    "show": LazyEntry("gym_envs.cli:show", "Describe an environment: tools, tables, tasks, checks.",
                      section=ENV),
    "play": LazyEntry("gym_envs.play:play", "Play a task by hand (or from a script on stdin).", section=ENV),
    "schema": LazyEntry("gym_envs.cli:schema", "Print the JSON Schema of the environment spec.", section=ENV),
    "serve": LazyEntry("envgen.cli.interop:serve", "Serve one environment as an MCP server (stdio or HTTP).",
                       extra="mcp", section=ENV),
    "validate": LazyEntry("envgen.cli.library:validate", "Run the validity gate on spec files, folders or "
                          "examples.", section=ENV),
    "generate": LazyEntry("envgen.cli.library:generate", "Generate environments from a corpus into a library.",
                          section=LIB),
    "list": LazyEntry("envgen.cli.library:list_library", "List the environments of a library.", section=LIB),
    "stats": LazyEntry("eval.cli:stats_cmd", "Statistics of a library (yield, diversity, depth and realism; "
                       "--anchors: beside τ²-bench and BFCL).", section=LIB),
    "export": LazyEntry("envgen.cli.interop:export", "Export a library as a Hugging Face dataset (Parquet + "
                        "card).", extra="hf", section=LIB),
    "import": LazyEntry("envgen.cli.interop:import_cmd", "Import an exported dataset (folder or Hub) into a "
                        "library.", extra="hf", section=LIB),
    "skills": LazyEntry("envgen.skills.cli:skills", "Skill libraries: list, show, stats, export, diff, simulate.",
                        section=LIB),
    "inspect": LazyEntry("envgen.inspect.cli:inspect", "Write a static HTML site to browse a library or a spec.",
                         section=LIB),
    "eval": LazyEntry("eval.cli:eval_cmd", "Score a policy on suites (generated, BFCL, ...).",
                      extra="eval", section=EVAL),
    "compare": LazyEntry("eval.cli:compare_cmd", "Compare two evaluation runs side by side.", extra="eval",
                         section=EVAL),
    "contamination": LazyEntry("eval.cli:contamination_cmd",
                               "Measure overlap between a library's tasks and a benchmark's.", extra="eval",
                               section=EVAL),
    "bench": LazyEntry("envgen.cli.bench:bench", "Benchmarks: runtime, generation, proposer, and the trainer's "
                       "(speed, throughput, learning, precision, selfplay).", section=EVAL),
    "train": LazyEntry("training.cli:train", "GRPO self-play training (proposer + solver).", extra="train",
                       section=TRAIN),
    "plot": LazyEntry("training.cli:plot", "Plot training curves from a run folder.", extra="train",
                      section=TRAIN),
}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("envwright")
    except PackageNotFoundError:
        return "0+unknown"


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(f"envwright {_version()}")
        ctx.exit()


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": HELP_OPTIONS,
                                                              "max_content_width": 100})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and exit.")
def cli() -> None:
    """envwright: a self-generating gym of executable tool-use environments.

    Environments are JSON specs (tools, a SQLite backend, multi-turn tasks with
    state checks). Shipped examples can be named instead of a path, e.g.
    `envwright show NAME`.
    """


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point (``envwright = "envgen.cli:main"``; ``python -m envgen`` too)."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="envwright")

"""``envwright bench``: every benchmark of the project, one sub-command each, imported only when run.

The implementations live beside the code they measure: the runtime, generation and the proposer in
:mod:`eval.bench`, the trainer in :mod:`training.bench`. This table, like the root's
(:mod:`envgen.cli`), is the only coupling: ``envwright bench --help`` imports nothing but
:mod:`click`, and a benchmark whose extra is not installed says which one to install. Each
benchmark prints its figures and writes them where ``--out`` or ``--json`` says; its logs of past
runs are beside it (``eval/bench/results/``, ``training/results/h200/``).
"""

from __future__ import annotations

import click

from envgen.cli.lazy import HELP_OPTIONS, LazyEntry, LazyGroup

__all__ = ["BENCHMARKS", "bench"]

RUNTIME, TRAINER = "Environments and generation (CPU)", "The trainer (GPU; --tiny runs a toy size on CPU)"

#: Every benchmark: ``envwright bench NAME``.
BENCHMARKS: dict[str, LazyEntry] = {
    "runtime": LazyEntry("eval.bench.runtime:command", "Reset/step cost of the runtime: sandbox, worker, "
                         "vector env.", section=RUNTIME),
    "generate": LazyEntry("eval.bench.generate:command", "Generation throughput: validation time, yield, "
                          "scaling with workers.", section=RUNTIME),
    "validation": LazyEntry("eval.bench.validation:command", "The gate's CPU time per environment (median, p90) "
                            "and a record of its verdicts to compare across a change.", section=RUNTIME),
    "proposer": LazyEntry("eval.bench.proposer:command", "Does a model write environments? Free vs constrained, "
                          "spec vs blueprint, untrained vs warm-started.", extra="train", section=RUNTIME),
    "grammar": LazyEntry("eval.bench.grammar:command", "The grammar's CPU cost per token of constrained "
                         "decoding: the schemas as sent against as written.", extra="constrained", section=RUNTIME),
    "induction": LazyEntry("eval.bench.induction:command", "Does a model write skills that hold on their own "
                           "example? Unbounded vs within the example's structure.", extra="train", section=RUNTIME),
    "tau2": LazyEntry("eval.bench.tau2:command", "Do the converted τ² domains agree with τ²'s own environment and "
                      "evaluator? States, call results, verdicts.", extra="tau2", section=RUNTIME),
    "speed": LazyEntry("training.bench.speed:speed_command", "Generation tokens/s: TRL's default HF path, our "
                       "static-cache path and vLLM.", extra="train", section=TRAINER),
    "precision": LazyEntry("training.bench.speed:precision_command", "Generation tokens/s by model.dtype "
                           "(fp32, bf16-mixed, bf16).", extra="train", section=TRAINER),
    "throughput": LazyEntry("training.bench.throughput:command", "Rollout tokens/s, seconds per GRPO step, the "
                            "environment's share of wall time.", extra="train", section=TRAINER),
    "learning": LazyEntry("training.bench.learning:command", "Held-out pass rate untrained, after SFT, after "
                          "GRPO (SmolLM2-135M).", extra="train", section=TRAINER),
    "selfplay": LazyEntry("training.bench.selfplay:command", "Self-play against a compute-matched "
                          "fixed-environment baseline.", extra="train", section=TRAINER),
}


@click.group("bench", cls=LazyGroup, lazy=BENCHMARKS, prefix="envwright bench",
             context_settings={"help_option_names": HELP_OPTIONS, "max_content_width": 100})
def bench() -> None:
    """Benchmarks: the runtime, generation, a model proposer, and the trainer.

    `envwright bench NAME -h` gives a benchmark's options.
    """

"""Benchmarks of the runtime, of generation and of a model proposer: ``envwright bench runtime|generate|proposer``.

Each sub-module exposes ``run(...) -> dict`` (measurements and target verdicts,
JSON-serialisable) and ``command``, the click command that ``envwright bench``
(:mod:`envgen.cli.bench`) loads lazily and that prints a table. The logs of past
runs behind the README's figures are in ``eval/bench/results/``.
"""

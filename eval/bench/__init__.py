"""Throughput and latency benchmarks of envwright's components (``envwright bench ...``).

Each sub-module exposes ``run(...) -> dict`` (measurements and target verdicts,
JSON-serialisable) and ``main(argv) -> int`` (a CLI that prints a table).
"""

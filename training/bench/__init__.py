"""The trainer's benchmarks: ``envwright bench speed|precision|throughput|learning|selfplay``.

GPU benchmarks of the trainer, runnable on CPU at toy sizes (``--tiny``). Each writes
``OUT/<name>.json`` (and prints it); ``envwright bench`` (:mod:`envgen.cli.bench`) loads each
module's command lazily:

* :mod:`training.bench.speed` -- ``speed``: TRL's default HF generation, our fast path and vLLM on one model
  (random weights, or ``--model``); ``precision``: generation tokens/s by ``model.dtype``;
* :mod:`training.bench.throughput` -- rollout tokens/s, seconds per GRPO step, the environment's
  share of wall time;
* :mod:`training.bench.learning` -- held-out pass rate untrained, after SFT, after GRPO;
* :mod:`training.bench.selfplay` -- self-play against a compute-matched fixed-environment
  baseline (its figures: :mod:`training.bench.selfplay_report`; their tables and plots:
  :mod:`training.bench.selfplay_render`; merging sessions and checking committed results
  against the docs: :mod:`training.bench.selfplay_merge`; its phases in child processes, a lane of them per
  seed side by side: :mod:`training.bench.children`).

Shared pieces (the random-weight models, result files, options) are in :mod:`training.bench.common`;
the logs of past runs, their JSON and plots are in ``training/results/h200/``.
"""

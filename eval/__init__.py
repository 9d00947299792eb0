"""eval: score any policy by final state on generated suites and on BFCL v4 multi-turn.

Policies (:mod:`eval.policies`), suites (:mod:`eval.suites`, :mod:`eval.bfcl`), metrics
(:mod:`eval.metrics`), the concurrent runner (:mod:`eval.runner`), reports (:mod:`eval.report`),
contamination (:mod:`eval.contamination`) and benchmarks (:mod:`eval.bench`). Never imports ``training``.
"""

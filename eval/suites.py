"""Suites: named sets of tasks, and the one episode abstraction every suite is played through.

Role: give the runner a uniform multi-turn loop over generated environments (``ToolEnv``) and
public benchmarks (BFCL v4 multi-turn, through :mod:`eval.bfcl`), so a policy, the metrics and
the reports never know which kind of task they face.

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

import hashlib
import json
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpora.registry import Registry
from envgen.validate import oracle_reply
from eval.errors import FailureStage, PolicyFailure, episode_failure
from gym_envs.env import ToolEnv, step_many, tool_system_prompt
from gym_envs.errors import ErrorKind, did_you_mean
from gym_envs.parsing import parse_action
from gym_envs.sandbox import CallResult, Executor, make_executor
from gym_envs.spec import EnvSpec, Task, as_spec

__all__ = [
    "BFCL_VARIANTS",
    "SPLITS",
    "SUITES",
    "BfclSuite",
    "Episode",
    "ExamplesSuite",
    "History",
    "LibrarySuite",
    "StepOutcome",
    "Suite",
    "TaskRef",
    "episode_id",
    "make_suite",
    "split_of",
]

SPLITS = ("train", "heldout", "all")
BFCL_VARIANTS = {"base": "multi_turn_base", "miss_func": "multi_turn_miss_func",
                 "miss_param": "multi_turn_miss_param", "long_context": "multi_turn_long_context"}
_MAX_RESULT_CHARS = 4_000  # per call result kept in the turn records (the transcript keeps the full text)


def split_of(key: str, heldout_fraction: float = 0.2, salt: str = "envwright-split-v1") -> str:
    """``"heldout"`` or ``"train"`` for a document id, by a deterministic hash."""
    if not 0.0 <= heldout_fraction <= 1.0:
        raise ValueError(f"heldout_fraction must be in [0, 1], got {heldout_fraction}")
    u = int.from_bytes(hashlib.sha256(f"{salt}:{key}".encode()).digest()[:8], "big") / 2**64
    return "heldout" if u < heldout_fraction else "train"


# ================================================================================================
# Tasks and episodes
# ================================================================================================
@dataclass(frozen=True)
class TaskRef:
    """One task of a suite (an episode template): where it lives and what kind it is."""

    suite: str
    env_id: str
    task_id: str
    kind: str
    n_turns: int
    split: str | None = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def key(self) -> str:
        return f"{self.suite}/{self.env_id}/{self.task_id}"


@dataclass
class History:
    """What a policy sees of an episode: the chat so far, the tools, where it stands.

    ``reference()`` exposes the oracle plan of the current turn (calls and final message); only
    the scripted reference policy may use it. Policies may add token counts with ``add_usage``.
    """

    episode_id: str
    task: TaskRef
    trial: int
    seed: int
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    turn: int = 0
    steps_in_turn: int = 0
    usage: dict[str, int] = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0,
                                                             "calls": 0})
    _oracle: Callable[[int], tuple[list[dict[str, Any]], str]] | None = field(default=None, repr=False)

    def reference(self) -> tuple[list[dict[str, Any]], str]:
        """The current turn's reference calls (``{"name", "arguments"}``) and final message."""
        if self._oracle is None:
            raise RuntimeError("this episode has no reference trajectory")
        return self._oracle(self.turn)

    def chat(self) -> list[dict[str, Any]]:
        """The messages without envwright's bookkeeping keys (what a backend should receive)."""
        return [{k: v for k, v in m.items() if k not in ("raw", "step")} for m in self.messages]

    def add_usage(self, prompt_tokens: int = 0, completion_tokens: int = 0) -> None:
        self.usage["prompt_tokens"] += int(prompt_tokens or 0)
        self.usage["completion_tokens"] += int(completion_tokens or 0)
        self.usage["calls"] += 1


@dataclass
class StepOutcome:
    """What one action did."""

    observation: str
    turn_ended: bool
    done: bool
    tool_results: list[dict[str, Any]] = field(default_factory=list)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")


def episode_id(task: TaskRef, trial: int) -> str:
    """A unique id for trial ``trial`` of ``task``: a readable slug of ``suite/env/task/trial`` and a hash
    of those exact parts. The slug alone is lossy (env ``a-b`` with task ``c`` and env ``a`` with task
    ``b-c`` share it); the hash makes ids differ whenever the parts do. Letters, digits, ``_.-`` only, so
    it is safe as an HTML anchor and a file name."""
    parts = json.dumps([task.suite, task.env_id, task.task_id, trial], ensure_ascii=True)
    return f"{_slug(f'{task.key}/{trial}')}-{hashlib.sha256(parts.encode()).hexdigest()[:12]}"


def _assistant_message(action: Any, parsed: Any, step: int) -> dict[str, Any]:
    """The canonical (OpenAI-form) assistant message for an action, the action itself under ``raw``."""
    msg: dict[str, Any] = {"role": "assistant", "content": parsed.content, "step": step}
    if parsed.calls:
        msg["tool_calls"] = [
            {"id": f"call_{step}_{i}", "type": "function",
             "function": {"name": c["name"], "arguments": json.dumps(c["arguments"], ensure_ascii=False)}}
            for i, c in enumerate(parsed.calls)]
    # the action as the policy gave it: text, or a JSON-safe copy of a structured action
    msg["raw"] = action if isinstance(action, str) else json.loads(json.dumps(action, default=str))
    return msg


def _tool_messages(calls: list[dict[str, Any]], contents: list[str], errors: list[str],
                   step: int) -> list[dict[str, Any]]:
    out = [{"role": "tool", "tool_call_id": f"call_{step}_{i}", "name": c["name"], "content": text}
           for i, (c, text) in enumerate(zip(calls, contents, strict=True))]
    out += [{"role": "tool", "tool_call_id": None, "name": "parse_error",
             "content": json.dumps({"error": e, "type": ErrorKind.PARSE_ERROR.value})} for e in errors]
    return out


class Episode(ABC):
    """One play of one task (see the module docstring for the contract)."""

    def __init__(self, task: TaskRef, *, trial: int, seed: int, max_turn_steps: int):
        if max_turn_steps < 1:
            raise ValueError("max_turn_steps must be >= 1")
        self.task = task
        self.trial = trial
        self.seed = seed
        self.max_turn_steps = max_turn_steps
        self.episode_id = episode_id(task, trial)
        self.history = History(self.episode_id, task, trial, seed, [], [], _oracle=self.reference_turn)
        self.done = False
        self.truncated = False
        self.steps = 0
        self.error: str | None = None
        self.error_stage: FailureStage | None = None

    # -- API -----------------------------------------------------------------------------------
    @abstractmethod
    def reset(self) -> str:
        """Open the episode; returns the first user message (also appended to the history)."""

    @abstractmethod
    def step(self, action: Any) -> StepOutcome:
        """Apply one action (see the module docstring)."""

    @classmethod
    def step_many(cls, episodes: list[Episode], actions: list[Any]) -> list[StepOutcome | Exception]:
        """``episode.step(action)`` for several episodes of this class: the outcome, or the exception
        that step raised. Here they step one by one; a class whose episodes can share the work
        overrides it (:class:`ToolEnvEpisode` sends all their tool calls to a worker in one round trip)."""
        out: list[StepOutcome | Exception] = []
        for ep, action in zip(episodes, actions, strict=True):
            try:
                out.append(ep.step(action))
            except Exception as e:  # the batch's boundary: the exception is this episode's entry (runner: fail)
                out.append(e)
        return out

    @abstractmethod
    def reference_turn(self, turn: int) -> tuple[list[dict[str, Any]], str]:
        """The oracle's calls and final message for ``turn``."""

    @abstractmethod
    def score(self) -> dict[str, float]:
        """``{"episode", "turns", "checks"}`` (unplayed turns count as failed)."""

    @abstractmethod
    def turn_records(self) -> list[dict[str, Any]]:
        """Per turn: index, instruction, calls, reply, passed, checks, tags."""

    def close(self) -> None:  # noqa: B027  (optional hook)
        """Free the episode's resources (idempotent)."""

    def fail(self, stage: FailureStage, cause: BaseException | PolicyFailure | str = "") -> None:
        """End the episode because the harness or the policy failed at ``stage`` (recorded, never raised).

        The evaluator's boundary (:mod:`eval.errors`): every exception caught while an episode is
        played comes here."""
        self.error = episode_failure(stage, cause)
        self.error_stage = stage
        self.done = True

    def record(self) -> dict[str, Any]:
        """The JSON-able record of the episode (a line of ``results.jsonl``)."""
        try:
            score, turns = self.score(), self.turn_records()
        except Exception as e:  # the boundary: scoring a broken episode must not crash the run
            score, turns = {"episode": 0.0, "turns": 0.0, "checks": 0.0}, []
            if self.error is None:
                self.fail(FailureStage.SCORING, e)
        return {
            "episode_id": self.episode_id, "suite": self.task.suite, "env_id": self.task.env_id,
            "task_id": self.task.task_id, "kind": self.task.kind, "split": self.task.split,
            "trial": self.trial, "seed": self.seed,
            "passed": score["episode"] == 1.0 and self.error is None, "score": score,
            "steps": self.steps, "truncated": self.truncated, "error": self.error,
            "error_stage": self.error_stage and self.error_stage.value,
            "usage": dict(self.history.usage), "turns": turns, "transcript": self.history.messages,
        }


# -- generated environments ------------------------------------------------------------------------
def _turn_tags(spec: EnvSpec, task: Task) -> list[dict[str, Any]]:
    """Action-class tags of each turn of a generated task (see the module docstring)."""
    tags: list[dict[str, Any]] = []
    for i, turn in enumerate(task.turns):
        forbid = {n for c in turn.checks if c.kind == "calls" for n in c.forbid}
        role = None
        write = set(forbid)
        if task.kind == "missing_parameter" and not turn.reference and i + 1 < len(task.turns):
            role = "ask"
            write |= {c.name for c in task.turns[i + 1].reference}
        elif task.kind == "decline" and not turn.reference:
            role = "decline"
        tags.append({"role": role, "write_tools": sorted(write)} if role else {})
    return tags


class ToolEnvEpisode(Episode):
    """A task of a generated environment, played through :class:`gym_envs.env.ToolEnv`."""

    def __init__(self, spec: EnvSpec, task: TaskRef, *, executor: Executor, trial: int, seed: int,
                 max_turn_steps: int):
        super().__init__(task, trial=trial, seed=seed, max_turn_steps=max_turn_steps)
        self.spec = spec
        self.spec_task = spec.task(task.task_id)
        self.env = ToolEnv(spec, task.task_id, executor=executor,
                           max_steps=max_turn_steps * len(self.spec_task.turns))
        self.tags = _turn_tags(spec, self.spec_task)

    def reset(self) -> str:
        obs, info = self.env.reset(options={"task": self.task.task_id, "episode_seed": self.seed})
        self.history.messages[:] = [{"role": "system", "content": info["system_prompt"]},
                                    {"role": "user", "content": obs}]
        self.history.tools = self.spec.openai_tools()
        return obs

    def step(self, action: Any) -> StepOutcome:
        parsed = self._begin(action)
        return self._end(action, parsed, self.env.step(action))

    @classmethod
    def step_many(cls, episodes: list[Episode], actions: list[Any]) -> list[StepOutcome | Exception]:
        """Step the episodes' envs together (:func:`gym_envs.env.step_many`): the tool calls of all of
        them travel to each worker process in one round trip."""
        eps: list[ToolEnvEpisode] = episodes  # type: ignore[assignment]
        out: list[StepOutcome | Exception | None] = [None] * len(eps)
        live: list[tuple[int, Any]] = []
        for j, (ep, action) in enumerate(zip(eps, actions, strict=True)):
            try:
                live.append((j, ep._begin(action)))
            except Exception as e:  # the batch's boundary, as in Episode.step_many
                out[j] = e
        try:
            stepped: list[Any] = step_many([eps[j].env for j, _ in live], [actions[j] for j, _ in live],
                                           return_exceptions=True)
        except Exception as e:  # the batch's boundary: step_many itself refused (an env twice, say), all fail alike
            stepped = [e] * len(live)
        for (j, parsed), result in zip(live, stepped, strict=True):
            if isinstance(result, Exception):
                out[j] = result
                continue
            try:
                out[j] = eps[j]._end(actions[j], parsed, result)
            except Exception as e:  # the batch's boundary, as above
                out[j] = e
        return out  # type: ignore[return-value]

    def _begin(self, action: Any) -> Any:
        if self.done:
            raise RuntimeError("the episode is over")
        self.steps += 1
        self.history.steps_in_turn += 1
        return parse_action(action)

    def _end(self, action: Any, parsed: Any, stepped: tuple[str, float, bool, bool, dict[str, Any]]) -> StepOutcome:
        obs, _, terminated, truncated, info = stepped
        self.history.messages.append(_assistant_message(action, parsed, self.steps))
        results = info.get("tool_results") or []
        if results or info.get("parse_errors"):
            contents = [CallResult(**r).observation() for r in results]
            calls = [{"name": r["name"]} for r in results]
            errors = info.get("parse_errors") or []
            self.history.messages += _tool_messages(calls, contents, errors, self.steps)
        turn_ended = "turn_passed" in info
        self.done = terminated or truncated
        self.truncated = truncated
        if turn_ended and not self.done:
            self.history.turn += 1
            self.history.steps_in_turn = 0
            self.history.messages.append({"role": "user", "content": obs})
        return StepOutcome(obs, turn_ended, self.done, results)

    def reference_turn(self, turn: int) -> tuple[list[dict[str, Any]], str]:
        t = self.spec_task.turns[turn]
        return [{"name": c.name, "arguments": dict(c.arguments)} for c in t.reference], oracle_reply(t)

    def score(self) -> dict[str, float]:
        return self.env.score()

    def turn_records(self) -> list[dict[str, Any]]:
        out = []
        for t in self.env.turns:
            calls = []
            for c in t.calls:
                d = c.to_dict()
                text = c.observation()
                d["result"] = text if len(text) <= _MAX_RESULT_CHARS else text[:_MAX_RESULT_CHARS] + "..."
                calls.append(d)
            out.append({"index": t.index, "instruction": t.instruction, "calls": calls, "reply": t.reply,
                        "passed": t.passed, "scored": t.scored, "checks": [c.to_dict() for c in t.checks],
                        "tags": self.tags[t.index]})
        return out

    def close(self) -> None:
        self.env.close()


# ================================================================================================
# Suites
# ================================================================================================
class Suite(ABC):
    """A named set of tasks that can open episodes."""

    name: str = "suite"

    @abstractmethod
    def tasks(self) -> list[TaskRef]:
        """Every task of the suite, in a stable order."""

    @abstractmethod
    def episode(self, task: TaskRef, *, trial: int, seed: int, max_turn_steps: int = 20) -> Episode:
        """A new (not yet reset) episode of ``task``."""

    @abstractmethod
    def tool_docs(self) -> list[dict[str, Any]]:
        """Every tool as ``{"env_id", "name", "description", "parameters"}`` (for contamination)."""

    @abstractmethod
    def task_texts(self) -> list[tuple[str, str]]:
        """``(task key, all user instructions joined)`` per task (for contamination)."""

    def close(self) -> None:  # noqa: B027  (optional hook)
        """Release shared resources (executors)."""


class SpecSuite(Suite):
    """A suite over a list of environment specs (the base of ``library:`` and ``examples``)."""

    def __init__(self, name: str, specs: list[EnvSpec], *, executor: str | Executor = "worker",
                 workers: int = 1, splits: dict[str, str] | None = None):
        self.name = name
        self.specs = {s.id: s for s in specs}
        self.splits = splits or {}
        self._executor_arg = executor
        self._executor: Executor | None = executor if isinstance(executor, Executor) else None
        self._owns_executor = not isinstance(executor, Executor)
        self._workers = max(1, workers)
        self._lock = threading.Lock()

    @property
    def executor(self) -> Executor:
        with self._lock:
            if self._executor is None:
                self._executor = make_executor(str(self._executor_arg), workers=self._workers)
            return self._executor

    def tasks(self) -> list[TaskRef]:
        return [TaskRef(self.name, s.id, t.id, t.kind, len(t.turns), self.splits.get(s.id))
                for s in self.specs.values() for t in s.tasks]

    def episode(self, task: TaskRef, *, trial: int, seed: int, max_turn_steps: int = 20) -> Episode:
        return ToolEnvEpisode(self.specs[task.env_id], task, executor=self.executor, trial=trial, seed=seed,
                              max_turn_steps=max_turn_steps)

    def tool_docs(self) -> list[dict[str, Any]]:
        return [{"env_id": s.id, **t.model_dump()} for s in self.specs.values() for t in s.tools]

    def task_texts(self) -> list[tuple[str, str]]:
        return [(f"{self.name}/{s.id}/{t.id}", "\n".join(u.instruction for u in t.turns))
                for s in self.specs.values() for t in s.tasks]

    def close(self) -> None:
        with self._lock:
            if self._executor is not None and self._owns_executor:
                self._executor.close()
            self._executor = None if self._owns_executor else self._executor


class LibrarySuite(SpecSuite):
    """``library:PATH``: a generated library, optionally one split of it (see the module docstring)."""

    def __init__(self, path: str | Path, *, split: str = "all", heldout_fraction: float = 0.2,
                 executor: str | Executor = "worker", workers: int = 1, write_splits: bool = True):
        from envgen.library import Library

        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        root = Path(path)
        if not (root / "specs").is_dir() and not (root / "catalog.sqlite").exists():
            raise FileNotFoundError(f"no library at {root} (expected {root}/specs/ and a catalog)")
        self.library = Library(root)
        self.split = split
        specs, splits = [], {}
        for row in self.library.rows(sort="id"):
            which = row.get("split") or split_of(row.get("doc_id") or row["id"], heldout_fraction)
            if write_splits and not row.get("split"):
                self.library.set_split(row["id"], which)
            if split != "all" and which != split:
                continue
            specs.append(self.library.load(row["id"]))
            splits[row["id"]] = which
        super().__init__(f"library:{root}", specs, executor=executor, workers=workers, splits=splits)


def load_examples() -> list[EnvSpec]:
    """The shipped examples (via :mod:`gym_envs.examples` when present, else its JSON files)."""
    try:
        from gym_envs import examples as ex

        loaded = ex.load_all()  # type: ignore[attr-defined]
        items = loaded.values() if isinstance(loaded, dict) else loaded
        specs = [as_spec(x) for x in items]
    except (ImportError, AttributeError):
        folder = Path(__file__).resolve().parent.parent / "gym_envs" / "examples"
        specs = [as_spec(p) for p in sorted(folder.glob("*.json"))]
    if not specs:
        raise FileNotFoundError("no shipped example environments found in gym_envs/examples")
    return sorted(specs, key=lambda s: s.id)


class ExamplesSuite(SpecSuite):
    """``examples``: the hand-written example environments."""

    def __init__(self, *, executor: str | Executor = "worker", workers: int = 1):
        super().__init__("examples", load_examples(), executor=executor, workers=workers)


# -- BFCL ------------------------------------------------------------------------------------------
_BFCL_ORACLE_REPLIES = {"ask": "Some information is missing: could you tell me the exact value to use?",
                        "decline": "I cannot do that: none of the available functions can do it."}


def _bfcl_tags(entry: Any) -> list[dict[str, Any]]:
    tags: list[dict[str, Any]] = []
    for t in range(entry.num_turns):
        tag: dict[str, Any] = {}
        nxt = entry.ground_truth[t + 1] if t + 1 < entry.num_turns else []
        if not entry.ground_truth[t] and nxt:
            names = sorted({c.split("(", 1)[0].strip() for c in nxt})
            if entry.category == "multi_turn_miss_param":
                tag = {"role": "ask", "write_tools": names}
            elif entry.category == "multi_turn_miss_func":
                tag = {"role": "decline", "write_tools": sorted(set(names) | entry.withheld_at(t))}
        withheld = sorted(entry.withheld_at(t))
        if withheld:
            tag["withheld"] = withheld
        tags.append(tag)
    return tags


class BfclSuiteEpisode(Episode):
    """A BFCL multi-turn entry played through :class:`eval.bfcl.BfclEpisode`."""

    def __init__(self, entry: Any, task: TaskRef, *, trial: int, seed: int, max_turn_steps: int,
                 reference: Callable[[], list[list[Any]]]):
        super().__init__(task, trial=trial, seed=seed, max_turn_steps=max_turn_steps)
        self.entry = entry
        self._reference = reference
        self._ep: Any = None
        self._turns: list[dict[str, Any]] = []
        self._offered: set[str] = set()
        self._final: Any = None
        self.tags = _bfcl_tags(entry)

    def _open_turn(self) -> str:
        messages = self._ep.begin_turn()
        tools = self._ep.tools_for_turn()
        new = [t for t in tools if t["name"] not in self._offered]
        self._offered |= {t["name"] for t in tools}
        self.history.tools = [{"type": "function", "function": t} for t in tools]
        text = "\n".join(m.get("content", "") for m in messages)
        if new and self._turns:  # withheld functions revealed: show them (tools= users get them too)
            text += "\n\nNew tools (JSON Schema of each):\n" + "\n".join(json.dumps(t) for t in new)
        self._turns.append({"index": len(self._turns), "instruction": text, "calls": [], "reply": "",
                            "tags": self.tags[len(self._turns)]})
        self.history.messages.append({"role": "user", "content": text})
        return text

    def reset(self) -> str:
        from eval.bfcl import BfclEpisode

        self._ep = BfclEpisode(self.entry)
        tools = self._ep.tools_for_turn(0)
        classes = ", ".join(self.entry.involved_classes)
        system = tool_system_prompt(f"the tools of {classes}", "Help the user with their requests.", tools)
        self.history.messages[:] = [{"role": "system", "content": system}]
        return self._open_turn()

    def step(self, action: Any) -> StepOutcome:
        if self.done:
            raise RuntimeError("the episode is over")
        self.steps += 1
        self.history.steps_in_turn += 1
        parsed = parse_action(action)
        self.history.messages.append(_assistant_message(action, parsed, self.steps))
        turn = self._turns[-1]
        if parsed.is_message:
            turn["reply"] = parsed.content
            self._ep.end_turn()
            if self._ep.done:
                return self._finish("", turn_ended=True)
            self.history.turn += 1
            self.history.steps_in_turn = 0
            return StepOutcome(self._open_turn(), True, False)
        results = []
        for c in parsed.calls:
            text = self._ep.call(c["name"], c["arguments"])
            ok = not text.startswith("Error during execution")
            short = text if len(text) <= _MAX_RESULT_CHARS else text[:_MAX_RESULT_CHARS] + "..."
            rec = {"name": c["name"], "arguments": c["arguments"], "ok": ok, "result": short, "changes": None}
            turn["calls"].append(rec)
            results.append((rec, text))
        texts = [t for _, t in results]
        self.history.messages += _tool_messages(parsed.calls, texts, parsed.errors, self.steps)
        obs = json.dumps([t for _, t in results] + [{"error": e} for e in parsed.errors], ensure_ascii=False)
        if self.history.steps_in_turn >= self.max_turn_steps:  # BFCL force-terminates the entry
            self.truncated = True
            self._ep.end_turn()
            return self._finish(obs, turn_ended=True)
        return StepOutcome(obs, False, False, [r for r, _ in results])

    def _finish(self, obs: str, *, turn_ended: bool) -> StepOutcome:
        self.done = True
        self._final = self._ep.score()
        self._ep.close()
        return StepOutcome(obs, turn_ended, True)

    def reference_turn(self, turn: int) -> tuple[list[dict[str, Any]], str]:
        calls = self._reference()[turn]
        reply = _BFCL_ORACLE_REPLIES.get(str(self.tags[turn].get("role")), "Done.")
        return [{"name": c.name, "arguments": dict(c.arguments)} for c in calls], reply

    def _scored(self) -> Any:
        if self._final is None and self._ep is not None:
            self._final = self._ep.score()
        return self._final

    def score(self) -> dict[str, float]:
        final = self._scored()
        if final is None:
            return {"episode": 0.0, "turns": 0.0, "checks": 0.0}
        rate = final.turn_pass_rate
        return {"episode": 1.0 if final.valid else 0.0, "turns": rate, "checks": rate}

    def turn_records(self) -> list[dict[str, Any]]:
        final = self._scored()
        verdicts = final.turns if final is not None else []
        out = []
        for i, v in enumerate(verdicts):
            rec = self._turns[i] if i < len(self._turns) else {
                "index": i, "instruction": "", "calls": [], "reply": "", "tags": self.tags[i]}
            check = {"index": 0, "kind": "bfcl", "passed": v.passed,
                     "detail": v.reason if v.error_type is None else f"{v.error_type}: {v.reason}"}
            out.append({**rec, "passed": v.passed, "scored": i < len(self._turns), "checks": [check],
                        "error_type": v.error_type})
        return out

    def close(self) -> None:
        if self._ep is not None:
            self._ep.close()


class BfclSuite(Suite):
    """``bfcl:VARIANT``: one BFCL v4 multi-turn category."""

    def __init__(self, variant: str = "base", *, limit: int | None = None):
        from eval.bfcl import load_entries

        if variant not in BFCL_VARIANTS:
            raise ValueError(f"unknown BFCL variant {variant!r}{did_you_mean(variant, BFCL_VARIANTS, n=1)} "
                             f"(known: {', '.join(BFCL_VARIANTS)})")
        self.variant = variant
        self.name = f"bfcl:{variant}"
        self.category = BFCL_VARIANTS[variant]
        self.entries = {e.id: e for e in load_entries(self.category, limit=limit)}
        self._refs: dict[str, list[list[Any]]] = {}

    def _reference(self, entry_id: str) -> list[list[Any]]:
        if entry_id not in self._refs:
            from eval.bfcl import reference_trajectory

            self._refs[entry_id] = reference_trajectory(self.entries[entry_id])
        return self._refs[entry_id]

    def tasks(self) -> list[TaskRef]:
        return [TaskRef(self.name, self.category, e.id, self.variant, e.num_turns,
                        meta={"involved_classes": list(e.involved_classes)}) for e in self.entries.values()]

    def episode(self, task: TaskRef, *, trial: int, seed: int, max_turn_steps: int = 20) -> Episode:
        entry = self.entries[task.task_id]
        return BfclSuiteEpisode(entry, task, trial=trial, seed=seed, max_turn_steps=max_turn_steps,
                                reference=lambda: self._reference(entry.id))

    def tool_docs(self) -> list[dict[str, Any]]:
        seen: dict[str, dict[str, Any]] = {}
        for e in self.entries.values():
            for f in e.functions:
                seen.setdefault(f["name"], {"env_id": ",".join(e.involved_classes), **f})
        return list(seen.values())

    def task_texts(self) -> list[tuple[str, str]]:
        out = []
        for e in self.entries.values():
            texts = [m.get("content", "") for i, turn in enumerate(e.turns) if not e.is_holdout_turn(i)
                     for m in turn]
            out.append((f"{self.name}/{e.id}", "\n".join(texts)))
        return out


# ================================================================================================
# Registry
# ================================================================================================
SuiteFactory = Callable[..., Suite]
SUITES: Registry[SuiteFactory] = Registry("suite")


def _library(arg: str, *, split: str = "all", executor: str | Executor = "worker", workers: int = 1,
             limit: int | None = None, **_: Any) -> Suite:
    if not arg:
        raise ValueError("the library suite needs a path: library:PATH")
    return LibrarySuite(arg, split=split, executor=executor, workers=workers)


def _examples(arg: str, *, executor: str | Executor = "worker", workers: int = 1, **_: Any) -> Suite:
    if arg:
        raise ValueError(f"the examples suite takes no argument (got 'examples:{arg}')")
    return ExamplesSuite(executor=executor, workers=workers)


def _bfcl(arg: str, *, limit: int | None = None, **_: Any) -> Suite:
    return BfclSuite(arg or "base", limit=limit)


SUITES.register("library", _library)
SUITES.register("examples", _examples)
SUITES.register("bfcl", _bfcl)


def make_suite(spec: str, **options: Any) -> Suite:
    """Open a suite from its CLI spec (``library:PATH``, ``examples``, ``bfcl:base``, ...).

    Options: ``split`` (library), ``executor`` and ``workers`` (generated envs), ``limit`` (BFCL
    loads only the first ``limit`` entries; the runner applies ``limit`` to every suite).
    """
    name, _, arg = spec.partition(":")
    return SUITES.get(name)(arg, **options)

"""Suites of generated environments: ``library:PATH`` and ``examples``, played through ``ToolEnv``.

:class:`SpecSuite` is a suite over a list of specs; :class:`LibrarySuite` reads a generated library
(one split of it: :func:`~eval.suites.base.split_of`), :class:`ExamplesSuite` the shipped examples.
Each task is a :class:`ToolEnvEpisode`, which steps several episodes' envs together
(:func:`gym_envs.env.step_many`: one round trip per worker process).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from envgen.errors import error_message
from envgen.gate import oracle_reply
from eval.suites.base import (
    MAX_RESULT_CHARS,
    SPLITS,
    Episode,
    StepOutcome,
    Suite,
    TaskRef,
    assistant_message,
    split_of,
    tool_messages,
)
from gym_envs.env import ToolEnv, step_many
from gym_envs.parsing import parse_action
from gym_envs.sandbox import CallResult, Executor, make_executor
from gym_envs.spec import EnvSpec, SpecError, Task, as_spec

__all__ = ["ExamplesSuite", "LibrarySuite", "SpecSuite", "ToolEnvEpisode", "load_examples"]


def _turn_tags(spec: EnvSpec, task: Task) -> list[dict[str, Any]]:
    """Action-class tags of each turn of a generated task (see :mod:`eval.suites`)."""
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
        self.history.messages.append(assistant_message(action, parsed, self.steps))
        results = info.get("tool_results") or []
        if results or info.get("parse_errors"):
            contents = [CallResult(**r).observation() for r in results]
            calls = [{"name": r["name"]} for r in results]
            errors = info.get("parse_errors") or []
            self.history.messages += tool_messages(calls, contents, errors, self.steps)
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
                d["result"] = text if len(text) <= MAX_RESULT_CHARS else text[:MAX_RESULT_CHARS] + "..."
                calls.append(d)
            out.append({"index": t.index, "instruction": t.instruction, "calls": calls, "reply": t.reply,
                        "passed": t.passed, "scored": t.scored, "checks": [c.to_dict() for c in t.checks],
                        "tags": self.tags[t.index]})
        return out

    def close(self) -> None:
        self.env.close()


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
    """``library:PATH``: a generated library, optionally one split of it (see :mod:`eval.suites`).

    An environment whose spec file does not load (corrupt: missing, not JSON, not a valid spec) is skipped,
    never the whole library: :attr:`skipped` maps its id to why (the runner warns with it)."""

    def __init__(self, path: str | Path, *, split: str = "all", heldout_fraction: float = 0.2,
                 executor: str | Executor = "worker", workers: int = 1, write_splits: bool = True):
        from envgen.library import Library

        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        root = Path(path)
        if not (root / "specs").is_dir() and not (root / "catalog.sqlite").exists():
            raise FileNotFoundError(f"no library at {root} (expected {root}/specs/ and a catalog)")
        # only written to keep the splits it assigns; otherwise only read (nothing written into the folder)
        self.library = Library(root) if write_splits else Library.open_readonly(root)
        self.split = split
        self.skipped: dict[str, str] = {}  #: env id -> why its spec file was not loaded
        specs, splits = [], {}
        for row in self.library.rows(sort="id"):
            which = row.get("split") or split_of(row.get("doc_id") or row["id"], heldout_fraction)
            if write_splits and not row.get("split"):
                self.library.set_split(row["id"], which)
            if split != "all" and which != split:
                continue
            try:
                spec = self.library.load(row["id"])
            except (SpecError, OSError, ValueError) as e:
                why = self.library.corrupt_specs([row]).get(row["id"]) or error_message(e)
                self.skipped[row["id"]] = why
                continue
            specs.append(spec)
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
        folder = Path(__file__).resolve().parents[2] / "gym_envs" / "examples"
        specs = [as_spec(p) for p in sorted(folder.glob("*.json"))]
    if not specs:
        raise FileNotFoundError("no shipped example environments found in gym_envs/examples")
    return sorted(specs, key=lambda s: s.id)


class ExamplesSuite(SpecSuite):
    """``examples``: the hand-written example environments."""

    def __init__(self, *, executor: str | Executor = "worker", workers: int = 1):
        super().__init__("examples", load_examples(), executor=executor, workers=workers)

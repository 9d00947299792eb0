"""Suites of generated environments: ``library:PATH`` and ``examples``, played through ``ToolEnv``.

:class:`SpecSuite` is a suite over a list of specs; :class:`LibrarySuite` reads a generated library
(one split of it: :func:`~eval.suites.base.split_of`), :class:`ExamplesSuite` the shipped examples.
Each task's episode steps a :class:`~gym_envs.episode_env.ToolEnvAdapter` (the engine steps several episodes'
envs together: one round trip per worker process) with the turn tags of :func:`turn_tags` and the spec's
reference plan as its oracle. Tool results are cut at :data:`~gym_envs.engine.OBSERVATION_CHARS` characters,
as in training.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envgen.errors import error_message
from envgen.gate import oracle_reply
from eval.suites.base import MAX_RESULT_CHARS, SPLITS, Suite, split_of
from gym_envs.engine import OBSERVATION_CHARS
from gym_envs.env import ToolEnv
from gym_envs.episode import Episode, TaskRef
from gym_envs.episode_env import ToolEnvAdapter
from gym_envs.sandbox import Executor, make_executor
from gym_envs.spec import EnvSpec, Say, SpecError, Task, as_spec

__all__ = ["ExamplesOptions", "ExamplesSuite", "LibraryOptions", "LibrarySuite", "SpecSuite", "load_examples",
           "turn_tags"]


def turn_tags(spec: EnvSpec, task: Task) -> list[dict[str, Any]]:
    """Action-class tags of each turn of a generated task (see :mod:`eval.suites`): a turn whose ``expects`` is
    ``ask`` or ``decline`` has that role (its reference may read, to find out it must ask or decline); so has, without
    reference calls, a ``missing_parameter`` task's turn before the last (``ask``), a ``decline`` task's turn and, as
    BFCL's, a turn before one that reveals a withheld tool (``decline``). Every turn lists the tools still
    ``withheld`` at it."""
    tags: list[dict[str, Any]] = []
    for i, turn in enumerate(task.turns):
        forbid = {n for c in turn.checks for n in c.forbidden_tools()}
        role = None
        write = set(forbid)
        revealed = task.turns[i + 1].reveal_tools if i + 1 < len(task.turns) else []
        asks_for = task.kind == "missing_parameter" and i + 1 < len(task.turns)
        if turn.expects == "ask" or (asks_for and not turn.reference):
            role = "ask"
            if asks_for:
                write |= {c.name for c in task.turns[i + 1].calls()}
        elif turn.expects == "decline" or ((task.kind == "decline" or revealed) and not turn.reference):
            role = "decline"
            write |= set(revealed)
        tag: dict[str, Any] = {"role": role, "write_tools": sorted(write)} if role else {}
        withheld = sorted(task.withheld_at(i))
        if withheld:
            tag["withheld"] = withheld
        tags.append(tag)
    return tags


def _oracle(task: Task) -> Callable[[int], tuple[list[dict[str, Any]], str]]:
    """The reference plan of each turn of ``task``: its items as dicts (``{"name", "arguments", "action"}`` for a
    call, ``action`` numbering the actions of the turn that make calls together (:meth:`~gym_envs.spec.Turn.plan`);
    ``{"say": text}`` for a message the user answers) and the oracle's reply."""
    def reference_turn(turn: int) -> tuple[list[dict[str, Any]], str]:
        t = task.turns[turn]
        items: list[dict[str, Any]] = []
        for k, action in enumerate(t.plan()):
            if isinstance(action, Say):
                items.append({"say": action.say})
            else:
                items += [{"name": c.name, "arguments": dict(c.arguments), "action": k} for c in action]
        return items, oracle_reply(t)

    return reference_turn


@dataclass(kw_only=True)
class ExamplesOptions:
    """Options of the ``examples`` suite."""

    executor: str | Executor = "worker"  #: executor of the tool code: ``worker`` (isolated) or ``inprocess``
    workers: int = 1  #: worker processes of the executor


@dataclass(kw_only=True)
class LibraryOptions(ExamplesOptions):
    """Options of the ``library:PATH`` suite."""

    split: str = "all"  #: ``train``, ``heldout`` or ``all``
    heldout_fraction: float = 0.2  #: the share of documents held out (envs without a split in the catalog)
    write_splits: bool = True  #: store the splits it assigns in the catalog (False: open it read-only)


class SpecSuite(Suite):
    """A suite over a list of environment specs (the base of ``library:`` and ``examples``)."""

    Options = ExamplesOptions

    @classmethod
    def from_spec(cls, arg: str, options: Any) -> SpecSuite:
        raise ValueError("a spec suite is made from its specs (SpecSuite(name, specs)), not from a CLI spec")

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
        return [TaskRef(s, t.id, suite=self.name, split=self.splits.get(s.id))
                for s in self.specs.values() for t in s.tasks]

    def episode(self, task: TaskRef, *, trial: int, seed: int, max_turn_steps: int = 20) -> Episode:
        if max_turn_steps < 1:
            raise ValueError("max_turn_steps must be >= 1")
        spec = self.specs[task.env_id]
        spec_task = spec.task(task.task_id)
        steps = spec_task.step_budget(max_turn_steps * len(spec_task.turns))  # never fewer than the reference needs

        def make() -> ToolEnvAdapter:
            env = ToolEnv(spec, task.task_id, executor=self.executor, max_steps=steps,
                          max_observation_chars=OBSERVATION_CHARS)
            return ToolEnvAdapter(env, task.task_id, tags=turn_tags(spec, spec_task), max_result_chars=MAX_RESULT_CHARS)

        return Episode(task, make, trial=trial, seed=seed, oracle=_oracle(spec_task), max_actions=steps + 1)

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

    Options = LibraryOptions

    @classmethod
    def from_spec(cls, arg: str, options: Any) -> LibrarySuite:
        if not arg:
            raise ValueError("the library suite needs a path: library:PATH")
        return cls(arg, **vars(options))

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

    Options = ExamplesOptions

    @classmethod
    def from_spec(cls, arg: str, options: Any) -> ExamplesSuite:
        if arg:
            raise ValueError(f"the examples suite takes no argument (got 'examples:{arg}')")
        return cls(**vars(options))

    def __init__(self, *, executor: str | Executor = "worker", workers: int = 1):
        super().__init__("examples", load_examples(), executor=executor, workers=workers)

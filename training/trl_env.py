"""TRL ``environment_factory`` adapter: an :class:`~gym_envs.spec.EnvSpec` as a class with typed tool methods.

TRL 1.16's ``GRPOTrainer(environment_factory=...)`` runs its own tool loop: it renders the public
methods of the environment class as tools (from their signatures and docstrings, through
``transformers.utils.get_json_schema``), parses the model's tool calls, calls the methods and appends
what they return as tool messages, until the model answers without a tool call. This module builds
such a class from a spec, so generated environments plug into that loop unchanged::

    from training.solver import load_specs
    from training.trl_env import environment_dataset, environment_factories, envwright_reward

    specs = load_specs(["examples"])  # or a generated library folder
    trainer = GRPOTrainer(model=..., reward_funcs=[envwright_reward], train_dataset=environment_dataset(specs),
                          environment_factory=environment_factories(specs), args=GRPOConfig(...))

* :func:`environment_class` -- one method per tool, with a typed signature and a docstring made from
  the tool's JSON Schema (integer -> ``int``, number -> ``float``, string -> ``str``, boolean ->
  ``bool``, array -> ``list``, object -> ``dict``; optional parameters default to ``None``; an
  ``enum`` becomes ``(choices: [...])``). Each call is a structured action of a
  :class:`~gym_envs.env.ToolEnv` (same executor, guards and state as everywhere else: by default the
  isolated worker the validity gate judged the spec on, so spec code cannot tell training from the gate);
  the method returns the observation text the agent would see.
* **Turns**: every class also has the tool :data:`~gym_envs.turns.END_TURN_TOOL` ``(reply)``, which
  ends the current turn with the agent's reply (:func:`gym_envs.turns.end_turn`, the mechanism the MCP
  server's control tool of the same name uses) and returns the user's next instruction, or says the
  conversation is over; in a task with a scenario the simulated user may answer the reply instead (the
  same request goes on: ``{"user_reply": ...}``). So every task is served, whatever its number of turns: the
  model sees each later instruction as that tool's result (it sees no check verdict, as in the engine's own loop),
  but one that withholds a tool until a later turn (TRL lists the class's tools for the whole rollout, so it
  would offer the tool from the start: :func:`environment_dataset` leaves it out). A
  plain message (no tool call) ends TRL's rollout; the reward then ends the current turn with it, and
  the turns never reached count as failed.
* :func:`environment_dataset` -- one row per task: the first instruction as a chat prompt with a
  short system message (TRL's chat template lists the tools itself), and the ids ``reset`` reads.
* :func:`envwright_reward` -- a reward function (``reward_funcs=[envwright_reward]``): the episode is
  scored on its checks (``checks`` fraction by default; ``episode`` and ``turns`` as in
  :class:`~gym_envs.env.ToolEnv`), the same reward ToolEnv pays for the same calls and replies.

Names: the class's methods are the spec's tool names and their arguments the parameter names, so a
tool named ``reset`` or a parameter named ``from`` cannot be carried. The spec module owns those rules
(:func:`gym_envs.spec.naming_problems`; parsing refuses such specs). A spec that breaks them anyway (one
built or changed without parsing) is skipped by :func:`environment_factories` and
:func:`environment_dataset` with a warning that gives the reason (and how many tasks it takes with
it), so one bad spec never stops training on the others; :func:`environment_class` raises
``ValueError`` with the same reason.

TRL caps tool rounds with ``max_tool_calling_iterations``, not the env's ``max_steps``; a reference
play takes one round per reference call and one :data:`~gym_envs.turns.END_TURN_TOOL` call per turn
(``Task.reference_actions``), so ``solver.loop: trl`` caps them at the largest step budget of its tasks
(:func:`training.rollout.step_budget`: ``rollout.max_steps``, raised for a task whose reference needs more).
"""

from __future__ import annotations

import inspect
import json
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Optional

from gym_envs.env import REWARD_MODES, ToolEnv
from gym_envs.errors import ErrorKind
from gym_envs.sandbox import Executor, default_executor
from gym_envs.seeding import fresh_seed
from gym_envs.spec import EnvSpec, naming_problems
from gym_envs.turns import END_TURN_TOOL, end_turn

__all__ = ["SpecEnvironment", "environment_class", "environment_dataset", "environment_factories",
           "envwright_reward", "python_type", "trl_system_prompt", "usable_specs"]

_JSON_TYPES: dict[str, type] = {"integer": int, "number": float, "string": str, "boolean": bool, "array": list,
                                "object": dict}


def python_type(schema: dict[str, Any]) -> Any:
    """The Python annotation for a JSON Schema (``list[X]`` for typed arrays; ``str`` when untyped)."""
    t = schema.get("type")
    if isinstance(t, list):  # ["string", "null"]: the first non-null type
        t = next((x for x in t if x != "null"), "string")
    py = _JSON_TYPES.get(t or "string", str)
    if py is list and isinstance(schema.get("items"), dict) and schema["items"].get("type") in _JSON_TYPES:
        item = _JSON_TYPES[schema["items"]["type"]]
        return list[item]  # type: ignore[valid-type]
    return py


def trl_system_prompt(spec: EnvSpec) -> str:
    """The system message of :func:`environment_dataset` (the chat template adds the tool list)."""
    return (f"You are an assistant operating {spec.title}. {spec.description}\n\n"
            "Use the tools to do what the user asks. When the request is done, or if you need information "
            f"from the user, or if it cannot be done with these tools, send your reply to the user with "
            f"{END_TURN_TOOL}: it returns the user's next request, or says that the conversation is over. "
            "Then end with a short plain message (no tool call); a plain message ends the conversation.")


class SpecEnvironment:
    """Base class of the generated environment classes (one per spec; see :func:`environment_class`).

    ``reset(**row)`` starts the row's task (``task_id``; the spec's first task by default) on a fresh
    episode, with the row's ``episode_seed`` or one drawn fresh (:attr:`episode_seed`); tool methods act on it;
    :meth:`_finish` ends the turn with the final reply and returns the score. Instances are pooled and reused
    by TRL (``reset`` between rollouts). TRL offers every public method but ``reset`` and ``get_reward`` to the
    model as a tool, so the adapter's own methods are private.
    """

    spec: EnvSpec
    reward_mode: str = "checks"
    executor: str | Executor = "worker"

    def __init__(self) -> None:
        self.env = ToolEnv(self.spec, reward_mode=self.reward_mode, executor=self.executor,
                           max_steps=1_000_000)  # TRL bounds the tool rounds itself
        self.episode_seed: int | None = None  #: the current episode's seed
        self.result: dict[str, Any] | None = None

    def reset(self, **row: Any) -> None:
        task = row.get("task_id") or self.spec.tasks[0].id
        seed = row.get("episode_seed")
        # a row without a seed gets one drawn as the gate draws its own: spec code cannot single out training's
        self.episode_seed = int(seed) if seed is not None else fresh_seed()
        self.env.reset(seed=None, options={"task": task, "episode_seed": self.episode_seed})
        self.result = None
        return None  # the prompt already holds the instruction

    def _tool(self, name: str, arguments: dict[str, Any]) -> str:
        if self.env.done:
            return json.dumps({"error": "the episode is over", "type": ErrorKind.EPISODE_OVER.value})
        obs, _, _, _, _ = self.env.step({"name": name, "arguments": arguments})
        return obs

    def envwright_end_turn(self, reply: str) -> str:
        """Reply to the user: returns the user's answer (the request goes on), the user's next request, or says the
        conversation is over.

        Args:
            reply: your message to the user about this request (what you did, what you found, or what you need)
        """
        if self.env.done:
            return json.dumps({"error": "the conversation is over", "type": ErrorKind.EPISODE_OVER.value})
        if not isinstance(reply, str):
            return json.dumps({"error": f"{END_TURN_TOOL}: reply must be a string, not {type(reply).__name__}",
                               "type": ErrorKind.INVALID_ARGUMENTS.value})
        ended = end_turn(self.env, reply)
        if ended.done:
            return json.dumps({"conversation_over": True,
                               "note": "That was the user's last request: end with a short plain message."})
        if ended.user_reply is not None:  # the user answered: the same request goes on
            return json.dumps({"user_reply": ended.user_reply}, ensure_ascii=False)
        return json.dumps({"next_request": ended.next_instruction}, ensure_ascii=False)

    def _finish(self, reply: str) -> dict[str, Any]:
        """End the current turn with ``reply`` (unless the episode is over) and score the episode (once;
        later calls return the same result)."""
        if self.result is None:
            if not self.env.done:
                end_turn(self.env, reply)
            score = self.env.score()
            self.result = {"score": score, "reward": score[self.reward_mode], "passed": score["episode"] == 1.0,
                           "turns": [t.to_dict() for t in self.env.turns]}
        return self.result

    def _close(self) -> None:
        """Close the episode's session (the executor stays: it may be shared)."""
        self.env.close()


def _tool_method(name: str, description: str, parameters: dict[str, Any]) -> Callable[..., str]:
    props: dict[str, Any] = parameters.get("properties") or {}
    required = set(parameters.get("required") or [])
    ordered = sorted(props, key=lambda p: p not in required)  # required first: defaults must come last
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    doc_args = []
    for p in ordered:
        ann = python_type(props[p])
        if p in required:
            params.append(inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=ann))
        else:
            ann = Optional[ann]  # noqa: UP045 -- transformers' schema reader understands Optional
            params.append(inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None,
                                            annotation=ann))
        annotations[p] = ann
        text = " ".join(str(props[p].get("description") or f"the {p.replace('_', ' ')}").split())
        if isinstance(props[p].get("enum"), list):
            text += f" (choices: {json.dumps(props[p]['enum'])})"
        doc_args.append(f"    {p}: {text}")
    annotations["return"] = str
    signature = inspect.Signature(params, return_annotation=str)

    def method(self: SpecEnvironment, *args: Any, **kwargs: Any) -> str:
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError as e:
            return json.dumps({"error": f"{name}: {e}", "type": ErrorKind.INVALID_ARGUMENTS.value})
        arguments = {k: v for k, v in bound.arguments.items() if k != "self" and (v is not None or k in required)}
        return self._tool(name, arguments)

    summary = " ".join(description.split()) or f"The {name} tool."
    method.__name__ = method.__qualname__ = name
    method.__signature__ = signature  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    method.__doc__ = summary + ("\n\nArgs:\n" + "\n".join(doc_args) if doc_args else "")
    return method


def environment_class(spec: EnvSpec, *, reward_mode: str = "checks",
                      executor: str | Executor = "worker") -> type[SpecEnvironment]:
    """A :class:`SpecEnvironment` subclass with one typed method per tool of ``spec``.

    ``executor``: ``worker`` (default: isolated, with the limits the validity gate judges specs under, so
    nothing spec code can observe tells training from the gate), ``inprocess`` (trusted specs only: its
    process differs, and generated code could behave differently there than under the gate) or an
    :class:`~gym_envs.sandbox.Executor` to share. A shared executor is resolved once here.
    """
    if reward_mode not in REWARD_MODES:
        raise ValueError(f"reward_mode must be one of {', '.join(REWARD_MODES)}, not {reward_mode!r}")
    problems = naming_problems(spec)
    if problems:
        raise ValueError(f"environment {spec.id}: TRL's environment_factory cannot carry it: "
                         + "; ".join(problems))
    ex = executor if isinstance(executor, Executor) else default_executor(executor)
    members: dict[str, Any] = {"spec": spec, "reward_mode": reward_mode, "executor": ex,
                               "__doc__": f"{spec.title}: {spec.description}"}
    for tool in spec.tools:
        members[tool.name] = _tool_method(tool.name, tool.description, tool.parameters)
    cls_name = "".join(part.capitalize() for part in spec.id.replace("-", "_").split("_") if part) or "Spec"
    return type(f"{cls_name}Environment", (SpecEnvironment,), members)


def usable_specs(specs: Sequence[EnvSpec], *, warn: bool = True) -> tuple[list[EnvSpec], list[tuple[str, str]]]:
    """The specs TRL's loop can carry, and ``(env id, reason)`` for each one it cannot (its names break the
    spec's naming rules); with ``warn``, each skipped spec is reported with ``warnings.warn``."""
    ok: list[EnvSpec] = []
    skipped: list[tuple[str, str]] = []
    for s in specs:
        problems = naming_problems(s)
        if problems:
            skipped.append((s.id, "; ".join(problems)))
            if warn:
                warnings.warn(f"skipping environment {s.id!r}: TRL's environment_factory cannot carry it: "
                              f"{skipped[-1][1]}", stacklevel=3)
        else:
            ok.append(s)
    return ok, skipped


def environment_factories(specs: Sequence[EnvSpec], **kwargs: Any) -> Callable[[], SpecEnvironment] | \
        dict[str, Callable[[], SpecEnvironment]]:
    """TRL's ``environment_factory``: the class itself for one spec, ``{env id: class}`` for several
    (rows of :func:`environment_dataset` then carry ``environment``). Specs whose names TRL cannot carry
    are skipped with a warning (:func:`usable_specs`); ``ValueError`` if none is left."""
    specs, skipped = usable_specs(specs)
    if not specs:
        raise ValueError("no environment TRL's environment_factory can carry: "
                         + "; ".join(f"{i}: {why}" for i, why in skipped))
    classes: dict[str, Callable[[], SpecEnvironment]] = {s.id: environment_class(s, **kwargs) for s in specs}
    if len(classes) != len(specs):
        raise ValueError("environment ids must be distinct")
    return next(iter(classes.values())) if len(classes) == 1 else classes


def environment_dataset(specs: Sequence[EnvSpec], *, tasks_per_env: int | None = None, repeat: int = 1,
                        tasks: Sequence[tuple[str, str]] | None = None) -> Any:
    """A ``datasets.Dataset`` with one row per task (``repeat`` times): ``prompt`` (system + first
    instruction), ``env_id``, ``task_id`` and, for several environments, ``environment``.

    Every task is served, single- or multi-turn (later turns come through the turn-ending tool), but one that
    withholds a tool until a later turn (TRL offers an environment's tools from the first turn on). Those and
    the tasks of a spec TRL cannot carry (:func:`usable_specs`) are left out with a warning that says how many
    and why; ``ValueError`` if no task is left. ``tasks``: only these ``(env id, task id)`` pairs (e.g. a
    solver pool's training tasks). Pass the same ``specs`` to :func:`environment_factories`: with several,
    rows name their ``environment``."""
    from datasets import Dataset

    wanted = set(tasks) if tasks is not None else None
    picked = {s.id: [t for t in s.tasks if wanted is None or (s.id, t.id) in wanted] for s in specs}
    _warn_withheld({env_id: [t.id for t in ts if t.withheld_tools] for env_id, ts in picked.items()})
    chosen = {env_id: [t for t in ts if not t.withheld_tools][:tasks_per_env] for env_id, ts in picked.items()}
    usable, skipped = usable_specs(specs, warn=False)  # environment_factories warns about each spec it skips
    _warn_dropped({env_id: (len(chosen[env_id]), why) for env_id, why in skipped if chosen[env_id]},
                  sum(len(v) for v in chosen.values()))
    rows: dict[str, list[Any]] = {"prompt": [], "env_id": [], "task_id": []}
    several = len(usable) > 1  # as environment_factories: a dict of classes for several specs
    if several:
        rows["environment"] = []
    for spec in usable:
        for task in chosen[spec.id]:
            for _ in range(repeat):
                rows["prompt"].append([{"role": "system", "content": trl_system_prompt(spec)},
                                       {"role": "user", "content": task.turns[0].instruction}])
                rows["env_id"].append(spec.id)
                rows["task_id"].append(task.id)
                if several:
                    rows["environment"].append(spec.id)
    if not rows["prompt"]:
        why = "; ".join(f"{i}: {r}" for i, r in skipped) or "no spec has a task TRL can carry" + (
            " among the requested (env id, task id) pairs" if wanted is not None else "")
        raise ValueError(f"no tasks for the dataset: {why}")
    return Dataset.from_dict(rows)


def _warn_withheld(withholding: dict[str, list[str]]) -> None:
    """Warn that the tasks in ``withholding`` (env id -> task ids) are left out: TRL lists an environment's tools
    once for the whole rollout, so a tool a task withholds until a later turn would be offered from the start."""
    left = {env_id: ids for env_id, ids in withholding.items() if ids}
    if left:
        n = sum(len(ids) for ids in left.values())
        warnings.warn(f"TRL dataset: {n} task(s) left out that withhold a tool until a later turn (TRL's "
                      "environment_factory offers every tool from the first turn; envwright's own loop, "
                      "solver.loop: envwright, plays them): "
                      + "; ".join(f"{env_id}: {', '.join(ids)}" for env_id, ids in left.items()), stacklevel=3)


def _warn_dropped(dropped: dict[str, tuple[int, str]], total: int) -> None:
    """Warn that the tasks of the environments in ``dropped`` (env id -> (tasks, reason)) are left out."""
    if not dropped:
        return
    n = sum(k for k, _ in dropped.values())
    reasons = "; ".join(f"{env_id} ({k} tasks): {why}" for env_id, (k, why) in dropped.items())
    warnings.warn(f"TRL dataset: {n} of {total} tasks left out, those of {len(dropped)} environment(s) whose "
                  f"names TRL's environment_factory cannot carry: {reasons}", stacklevel=3)


def _final_reply(completion: Any) -> str:
    """The text of the last assistant message of a rollout (conversational or plain)."""
    if isinstance(completion, str):
        return completion
    for message in reversed(completion or []):
        if isinstance(message, dict) and message.get("role") == "assistant":
            content = message.get("content")
            if isinstance(content, list):  # content blocks
                return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
            return str(content or "")
    return ""


def envwright_reward(completions: list[Any], environments: list[Any] | None = None,
                     **kwargs: Any) -> list[float | None]:
    """Reward of each rollout: its environment's score after the final reply (``None`` for rows
    that have no :class:`SpecEnvironment`, which TRL ignores)."""
    if environments is None:
        raise ValueError("envwright_reward needs the environments: pass environment_factory=... to GRPOTrainer")
    out: list[float | None] = []
    for completion, env in zip(completions, environments, strict=True):
        if not isinstance(env, SpecEnvironment):
            out.append(None)
            continue
        out.append(float(env._finish(_final_reply(completion))["reward"]))
    return out

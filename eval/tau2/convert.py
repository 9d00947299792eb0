"""A τ² domain as one EnvSpec (spec_version 2), built by code from the installed package.

Role: :func:`convert` reads a domain through :mod:`eval.tau2._backend` and writes its spec: the database as
tables (``state``), τ²'s tool schemas with the hand-ported restricted code (:mod:`eval.tau2.domain`), the policy
document as description and rules (:mod:`eval.tau2.policy`), and one task per τ² task. The spec keeps a failed
call's writes (``failed_calls: "keep"``): τ²'s tools change its database in place, so one that raises after a
change (airline's ``book_reservation`` paying twice with one certificate) keeps it, and the ported code writes
each such change when τ² makes it. It also returns, per task,
what the agreement with τ² reads (:class:`Tau2Task`): τ²'s user scenario, the gold actions of every requestor, the
reward basis and the judged assertions.

Contract, per τ² task:

- **Starting state**: a task with an ``initial_state`` gets ``setup_sql``: the statements that turn the seed's rows
  into the rows of τ²'s environment after its ``set_state`` (τ²'s own code computes that state).
- **Checks** follow τ²'s reward basis: ``DB`` is a ``state`` check whose digests are those of τ²'s environment
  after the gold actions (replayed by τ²'s code, as its evaluator builds its reference), every table compared;
  ``COMMUNICATE`` is one ``reply_contains`` check per ``communicate_info`` string read as τ²'s evaluator reads it:
  in any message of the agent (``scope: conversation``), as text (``match: substring``). Each natural-language
  assertion is a ``judged`` check (decided only by a judge, reported apart, never in the score). ``ENV_ASSERTION``
  and ``ACTION`` are not converted: a task whose basis holds one, or ``NL_ASSERTION``, is not *evaluable*
  (:attr:`Tau2Task.evaluable`), and is still converted.
- **Reference**: the gold actions the assistant makes, with their arguments, in τ²'s order.
- **Instruction and user**: the turn's instruction is the user scenario's known info, reason for call, unknown info
  and task instructions (so the agent has what the scripted user cannot tell; with a model-backed user the suite
  replaces it with the user's own opening message, :meth:`eval.suites.tau2.Tau2Suite.open_conversations`, and the
  agent never sees the scenario, as in τ²); the task's ``scenario`` is the
  simulated user: τ²'s persona, the same text as its goal (what a model-backed user plays, as τ²'s user simulator
  does), no facts, a confirmation answered yes, any other question answered :data:`UNKNOWN`.
- **Kind**: ``read_then_write`` (reads and writes), ``execute`` (writes only), ``read``, or ``decline`` (no gold
  action: the request is to be refused), from τ²'s tool types.
- Task ids are τ²'s, with characters outside ``[A-Za-z0-9_.-]`` replaced and long ids shortened with a hash.
"""

from __future__ import annotations

import functools
import hashlib
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from eval.tau2 import _backend
from eval.tau2.domain import Domain, domain
from eval.tau2.policy import split_policy
from eval.tau2.tables import Rows, check_rows, digests, schema_sql, seed_sql, setup_statements
from gym_envs.checks import JudgedCheck, ReplyContainsCheck, StateCheck
from gym_envs.spec import EnvSpec, Provenance, Say, State, Task, TaskKind, Tool, ToolCall, Turn
from gym_envs.users import Scenario

__all__ = ["UNKNOWN", "Conversion", "Tau2Task", "convert", "task_id"]

#: the scripted user's answer to a question other than a confirmation (all it knows is in its first message)
UNKNOWN = "I've told you everything I know."

_EXPRESSED = frozenset({"DB", "COMMUNICATE"})  #: reward parts the spec's checks express


@dataclass(frozen=True)
class Tau2Task:
    """What the converter keeps beside one task of the spec."""

    id: str  #: the spec's task id
    tau2_id: str
    split: str | None  #: τ²'s split: ``train``, ``test``, or None (in neither)
    scenario: dict[str, Any]  #: τ²'s ``user_scenario`` (persona and instructions), as τ²'s user simulator reads it
    actions: list[dict[str, Any]]  #: τ²'s gold actions (``name``, ``arguments``, ``requestor``, ...)
    reward_basis: tuple[str, ...]
    communicate_info: tuple[str, ...]
    nl_assertions: tuple[str, ...]  #: judged assertions (reported apart, never scored here)
    judged: bool  #: ``NL_ASSERTION`` is in the reward basis: no reward without a judge

    @property
    def evaluable(self) -> bool:
        """Whether the spec's checks express τ²'s whole reward for this task (no judge, no unported part)."""
        return not self.judged and set(self.reward_basis) <= _EXPRESSED


@dataclass
class Conversion:
    """A converted domain: its spec, the side data of each task, the seed's rows and what it cost."""

    domain: Domain
    spec: EnvSpec
    tasks: dict[str, Tau2Task]
    rows: Rows
    seconds: float
    tau2_version: str
    by_tau2_id: dict[str, str] = field(default_factory=dict)


def task_id(tau2_id: str) -> str:
    """The spec's id of a τ² task."""
    clean = re.sub(r"[^A-Za-z0-9_.-]+", "-", tau2_id).strip("-") or "task"
    if len(clean) <= 64 and clean == tau2_id:
        return clean
    digest = hashlib.sha256(tau2_id.encode()).hexdigest()[:8]
    return f"{clean[:55]}-{digest}"


def _instruction(scenario: Any) -> str:
    ins = scenario.instructions
    if isinstance(ins, str):
        return ins.strip()
    parts = [ins.known_info, ins.reason_for_call, ins.unknown_info, ins.task_instructions]
    return "\n".join(p.strip() for p in parts if p and p.strip())


def _kind(actions: Sequence[Any], types: dict[str, str]) -> TaskKind:
    kinds = {types.get(a.name, "generic") for a in actions if a.requestor == "assistant"}
    if not actions:
        return "decline"
    if "write" in kinds:
        return "read_then_write" if "read" in kinds else "execute"
    return "read"


def _basis(task: Any) -> tuple[str, ...]:
    ec = task.evaluation_criteria
    return tuple(str(getattr(b, "value", b)) for b in (ec.reward_basis if ec is not None else ()))


def _task(d: Domain, task: Any, base: Rows, types: dict[str, str], split: str | None
          ) -> tuple[Task, Tau2Task]:
    ec = task.evaluation_criteria
    actions = list(ec.actions or []) if ec is not None else []
    basis = _basis(task)
    setup: list[str] = []
    if task.initial_state is not None:
        start = d.to_tables(_backend.db_dump(_backend.initial_environment(d.name, task)))
        setup = setup_statements(d.tables, base, start)
    checks: list[Any] = []
    if "DB" in basis:
        final = d.to_tables(_backend.db_dump(_backend.gold_environment(d.name, task)))
        checks.append(StateCheck(digests=digests(d.tables, final)))
    info = tuple(s for s in (ec.communicate_info or []) if s.strip()) if ec is not None else ()
    if "COMMUNICATE" in basis:
        checks += [ReplyContainsCheck(any_of=[s], scope="conversation", match="substring") for s in info]
    if not checks:  # a basis this spec cannot express: the state must at least stay τ²'s starting one
        start_rows = d.to_tables(_backend.db_dump(_backend.initial_environment(d.name, task)))
        checks.append(StateCheck(digests=digests(d.tables, start_rows)))
    nl = tuple(a for a in (ec.nl_assertions or []) if a.strip()) if ec is not None else ()
    checks += [JudgedCheck(assertion=a) for a in nl]
    ours = task_id(str(task.id))
    reference: list[ToolCall | Say] = [ToolCall(name=a.name, arguments=dict(a.arguments)) for a in actions
                                       if a.requestor == "assistant"]
    instruction = _instruction(task.user_scenario)
    user = Scenario(persona=str(task.user_scenario.persona or ""), goal=instruction, unknown=UNKNOWN)
    spec_task = Task(id=ours, kind=_kind(actions, types), setup_sql=setup, scenario=user,
                     turns=[Turn(instruction=instruction, checks=checks, reference=reference)])
    side = Tau2Task(
        id=ours, tau2_id=str(task.id), split=split, scenario=task.user_scenario.model_dump(mode="json"),
        actions=[a.model_dump(mode="json") for a in actions], reward_basis=basis, communicate_info=info,
        nl_assertions=nl, judged=_backend.judged(task))
    return spec_task, side


def _split_of(splits: dict[str, list[str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in ("train", "test"):
        out |= dict.fromkeys(splits.get(name, []), name)
    return out


def convert(name: str, *, task_ids: Sequence[str] | None = None, limit: int | None = None) -> Conversion:
    """Convert τ² domain ``name`` (its tasks ``task_ids`` — τ²'s ids —, or its first ``limit``, or all)."""
    started = time.perf_counter()
    d = domain(name)
    base = d.to_tables(_backend.db_dump(_backend.environment(name)))
    check_rows(d.tables, base)
    schemas = _backend.tool_schemas(name)
    types = {f["name"]: t for f, t in schemas}
    tools = [Tool(name=f["name"], description=f.get("description", ""), parameters=f["parameters"])
             for f, _ in schemas]
    description, rules = split_policy(_backend.policy(name), d.tool_enforced)
    split = _split_of(_backend.splits(name))
    chosen = _backend.tasks(name)
    if task_ids is not None:
        wanted = [str(t) for t in task_ids]
        known = {str(t.id): t for t in chosen}
        missing = [t for t in wanted if t not in known]
        if missing:
            raise ValueError(f"τ² {name} has no tasks {missing}")
        chosen = [known[t] for t in wanted]
    elif limit is not None:
        chosen = chosen[:limit]
    tasks: list[Task] = []
    side: dict[str, Tau2Task] = {}
    for t in chosen:
        spec_task, extra = _task(d, t, base, types, split.get(str(t.id)))
        tasks.append(spec_task)
        side[spec_task.id] = extra
    version = _backend.version()
    spec = EnvSpec(
        spec_version=2, id=f"tau2-{name}", title=d.title, description=description,
        provenance=Provenance(generator="manual", stream="manual"),
        state=State(schema_sql=schema_sql(d.tables), seed_sql=seed_sql(d.tables, base)), tools=tools, code=d.code,
        tasks=tasks, policy=rules, failed_calls="keep")
    return Conversion(d, spec, side, base, round(time.perf_counter() - started, 3), version,
                      {t.tau2_id: t.id for t in side.values()})


@functools.lru_cache(maxsize=8)
def converted(name: str, task_ids: tuple[str, ...] | None = None) -> Conversion:
    """:func:`convert` of the tasks ``task_ids`` of ``name`` (default: all), made once per process (the
    conversion is read, never changed, by its users)."""
    return convert(name) if task_ids is None else convert(name, task_ids=task_ids)

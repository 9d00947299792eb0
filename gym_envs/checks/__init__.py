"""Check kinds: one class per kind, registered by name; the spec and its schemas, ``show``, the inspector, the
prompts, evaluation and the gate read them from here.

Each kind is a :class:`~gym_envs.checks.base.BaseCheck` subclass in its own module: its pydantic model, its
evaluation (the state it reads through sandbox probes, and its verdict), its one-line summary, its prompt line,
what other parts read of it without knowing its kind (answer strings, forbidden tools, its version 1 schema, the
fields decoded as lines) and its adequacy hints for the validity gate. Scoring, presentation, evaluation and the
gate never test a check's ``kind``; only the writers that emit checks (the compilers, the skills) name kinds.
:data:`CHECKS` holds them by name (the ``kind`` of a check); the built-in
kinds are registered below, in one place, in the order prompts list them. :func:`parse_check` validates a check
through the registry, so :class:`gym_envs.spec.Turn` accepts every registered kind, and :func:`judge` scores a
turn's checks with one round trip to the sandbox (:mod:`gym_envs.checks.judge`).

Adding a kind is one module with its class and a test: define the subclass (``kind: Literal["name"] = "name"``,
its fields, ``verdict``, and what differs from the defaults), then :func:`register_check` it.
"""

from __future__ import annotations

from typing import Any

from corpora.errors import UnknownNameError, did_you_mean
from corpora.registry import Registry
from gym_envs.checks.base import MUTANTS, BaseCheck, CallView, Cost, Probe, Said, TurnView, Verdict
from gym_envs.checks.calls import CallPattern, CallsCheck
from gym_envs.checks.confirmed import ConfirmedCheck
from gym_envs.checks.judge import answers_of, judge
from gym_envs.checks.judged import JudgedCheck
from gym_envs.checks.per_message import CallsPerMessageCheck
from gym_envs.checks.python import PythonCheck
from gym_envs.checks.reply import ReplyContainsCheck
from gym_envs.checks.sql import SqlCheck
from gym_envs.checks.state import StateCheck
from gym_envs.checks.unchanged import UnchangedCheck

__all__ = ["CHECKS", "MUTANTS", "BaseCheck", "CallPattern", "CallView", "CallsCheck", "CallsPerMessageCheck",
           "ConfirmedCheck", "Cost", "JudgedCheck", "Probe", "PythonCheck", "ReplyContainsCheck", "Said", "SqlCheck",
           "StateCheck", "TurnView", "UnchangedCheck", "Verdict", "answers_of", "check_kind", "check_kinds",
           "judge", "kind_names", "parse_check", "register_check", "unregister_check"]

#: every check kind by name (its ``kind``)
CHECKS: Registry[type[BaseCheck]] = Registry("check kind")
_ORDER: list[str] = []  #: the names in registration order (prompts and schemas list them so)


def register_check(cls: type[BaseCheck]) -> type[BaseCheck]:
    """Register a check kind under the name its ``kind`` field defaults to (usable as a class decorator).

    Raises ``TypeError`` for a class that is no :class:`BaseCheck` or whose ``kind`` has no default name, and
    :class:`~corpora.errors.RegistryError` for a malformed or taken name."""
    if not (isinstance(cls, type) and issubclass(cls, BaseCheck)):
        raise TypeError(f"a check kind must subclass gym_envs.checks.BaseCheck, got {cls!r}")
    name = cls.model_fields["kind"].default
    if not isinstance(name, str):
        raise TypeError(f"{cls.__name__}: its 'kind' field needs a default, the kind's name "
                        "(kind: Literal['name'] = 'name')")
    CHECKS.register(name, cls)
    if name not in _ORDER:
        _ORDER.append(name)
    return cls


def unregister_check(name: str) -> None:
    """Remove a kind (a test's own)."""
    CHECKS.unregister(name)
    _ORDER.remove(name)


for _kind in (SqlCheck, ReplyContainsCheck, UnchangedCheck, CallsCheck, PythonCheck, StateCheck, ConfirmedCheck,
              CallsPerMessageCheck, JudgedCheck):
    register_check(_kind)


def check_kind(name: str) -> type[BaseCheck]:
    """The class of kind ``name``; :class:`~corpora.errors.UnknownNameError` (with close matches) if there is none."""
    return CHECKS.get(name)


def kind_names(version: int | None = None) -> list[str]:
    """The registered kinds' names, in registration order (those a ``version`` document may use, when given)."""
    return [n for n in _ORDER if version is None or CHECKS.get(n).since <= version]


def check_kinds(version: int | None = None) -> list[type[BaseCheck]]:
    """The registered kinds' classes, in registration order (those a ``version`` document may use, when given)."""
    return [CHECKS.get(n) for n in kind_names(version)]


def parse_check(value: Any) -> BaseCheck:
    """A check (a dict, or a check already made) validated by the class its ``kind`` names.

    Raises ``ValueError`` naming the kinds when ``kind`` is missing or unknown; a field's problem is raised by the
    kind's model as a ``ValidationError`` (with the field's location)."""
    if isinstance(value, BaseCheck):
        return value
    if not isinstance(value, dict):
        raise ValueError(f"a check is an object with a 'kind', one of {kind_names()}; got {type(value).__name__}")
    kind = value.get("kind")
    if kind is None:
        raise ValueError(f"a check needs a 'kind' field, one of {kind_names()}")
    try:
        cls = CHECKS.get(kind) if isinstance(kind, str) else None
    except UnknownNameError:
        cls = None
    if cls is None:
        raise ValueError(f"unknown check kind {kind!r}{did_you_mean(str(kind), kind_names())}; use one of "
                         f"{kind_names()}")
    return cls.model_validate(value)

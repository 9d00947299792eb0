"""What every check kind is: a pydantic model that also judges, summarises, prompts and advises the gate.

Role: :class:`BaseCheck` is the base class of the check kinds (gym_envs/ENVSPEC.md, "Check kinds"). Each kind is
one subclass in its own module of this package, registered by name (:mod:`gym_envs.checks`), and carries:

* its **model**: the subclass's pydantic fields (``kind`` is a ``Literal`` of its name) and validators;
* its **evaluation**: :meth:`BaseCheck.probes` (what it must read of the state, asked of the sandbox in one round
  trip for the whole turn: :mod:`gym_envs.checks.judge`) and :meth:`BaseCheck.verdict` (pure host code over the
  :class:`TurnView` and the probes' answers);
* its **presentation**: :meth:`BaseCheck.summary` (``envwright show``, the inspector), :meth:`BaseCheck.detail`
  (the full text) and :attr:`BaseCheck.prompt` (its line in a proposer's prompt);
* what other parts read of a check without knowing its kind: :meth:`BaseCheck.answers` (the strings a message
  must contain), :meth:`BaseCheck.forbidden_tools`, :meth:`BaseCheck.python_code`, :meth:`BaseCheck.question` (what
  a judge is asked), :attr:`BaseCheck.decoded_lines` and :meth:`BaseCheck.version_1_schema` (its schema under
  constrained decoding and in version 1);
* its **adequacy hints** for the validity gate: :meth:`BaseCheck.catches` (whether failing it catches a wrong
  trajectory of a kind of :data:`MUTANTS`), :attr:`BaseCheck.idle_passes` (doing nothing in a turn passes it by
  definition), :attr:`BaseCheck.cost` (the stage it is scored in), :meth:`BaseCheck.state_text` (the SQL or code
  it runs on the state), :meth:`BaseCheck.guards_all_writes` and :meth:`BaseCheck.max_calls_per_action`.

A **probe** is a plain JSON request the sandbox answers inside its call scope (``gym_envs.sandbox.engine``): ``{"sql":
query}`` (the rows of a read-only query), ``{"python": code}`` (the verdict of a ``check(db)`` function on the
read-only facade), ``{"digests": tables or None}`` (table digests now), ``{"marks": None}`` (the digests marked at
the turn's start) and ``{"columns": text}`` (the columns holding a text, with their values). Untrusted SQL and Python
run only there; a kind that needs another read of the state needs a new probe in the sandbox.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["MUTANTS", "BaseCheck", "CallView", "Cost", "Probe", "ProbeAnswer", "Said", "TurnView", "Verdict"]

#: The wrong trajectories the validity gate plays (gym_envs/ENVSPEC.md, validity rules 4, 5 and 7): ``noop`` (no call,
#: an empty reply), ``drop`` (a reference call left out), ``argument`` (one argument changed), ``retarget`` (the calls
#: aimed at another row), ``extra`` (one more write elsewhere), ``input`` (a write to what a check reads), ``reply``
#: (another final message), ``say`` (a ``say`` item of the reference left out), ``early`` (a tool the task still
#: withholds, called before the turn that reveals it).
MUTANTS = ("noop", "drop", "argument", "retarget", "extra", "input", "reply", "say", "early")

Probe = dict[str, Any]
ProbeAnswer = dict[str, Any]  #: ``{"ok": True, "value": ...}`` or ``{"ok": False, "error": str}``
Cost = Literal["local", "cheap", "costly"]


@dataclass(frozen=True)
class Verdict:
    """One check's verdict: passed or not, and why in one line."""

    passed: bool
    detail: str


@dataclass(frozen=True)
class CallView:
    """One tool call of a turn as checks see it."""

    name: str
    arguments: dict[str, Any]
    ok: bool  #: it succeeded
    action: int = 0  #: the action of the turn (counted from 0) that made it


@dataclass(frozen=True)
class Said:
    """A plain message of the agent within a turn that the user answered (the turn went on)."""

    text: str
    reply: str  #: the user's answer
    confirmed: bool  #: the answer confirms what the message asked
    action: int = 0  #: the action of the turn (counted from 0) it was


@dataclass(frozen=True)
class TurnView:
    """What a turn's checks judge besides the state: the agent's messages and calls (gym_envs/ENVSPEC.md).

    ``reply`` is the turn's final message; ``calls`` every call the turn attempted, in order; ``said`` the messages
    the user answered within the turn; ``history`` the agent's messages of the earlier turns (what a
    ``conversation``-scope reply check reads besides this turn's); ``answers`` the answer strings of every
    check of the turn (:meth:`BaseCheck.answers`; none of them is another candidate of the others)."""

    reply: str = ""
    calls: Sequence[CallView] = ()
    said: Sequence[Said] = ()
    history: Sequence[str] = ()
    answers: Sequence[str] = ()

    @property
    def succeeded(self) -> list[CallView]:
        """The calls that succeeded, in order."""
        return [c for c in self.calls if c.ok]

    def messages(self) -> list[str]:
        """Every message of the agent in the conversation up to the end of this turn, in order."""
        return [*self.history, *(s.text for s in self.said), self.reply]

    def events(self) -> list[CallView | Said]:
        """The turn's calls and answered messages in the order they were made."""
        merged: list[tuple[int, int, CallView | Said]] = [(c.action, 1, c) for c in self.calls]
        merged += [(s.action, 0, s) for s in self.said]
        return [e for _, _, e in sorted(merged, key=lambda x: (x[0], x[1]))]


class BaseCheck(BaseModel):
    """The base class of every check kind (module docstring). Subclasses set ``kind`` to a ``Literal`` of their
    registered name and override what differs from these defaults."""

    model_config = ConfigDict(extra="forbid")

    kind: str

    #: the spec_version that introduced the kind (a version 1 document may not use a kind of version 2)
    since: ClassVar[int] = 1
    #: the kind's line in a proposer's prompt (``{"kind": ...}``: what passes)
    prompt: ClassVar[str] = ""
    #: counted in scores and rewards (a ``judged`` check is reported apart)
    scored: ClassVar[bool] = True
    #: where the gate scores it: ``local`` (no state read unless :meth:`probes` asks), ``cheap``, ``costly``
    cost: ClassVar[Cost] = "local"
    #: doing nothing in a turn passes it by definition (it need not be judged as the turn begins)
    idle_passes: ClassVar[bool] = False
    #: it compares with table digests marked as the turn begins
    marks_turn: ClassVar[bool] = False
    #: fields a model writes as arrays of lines under constrained decoding, with the most lines of each
    #: (:mod:`envgen.structure`: inside a line there are no escape sequences, so decoding always closes)
    decoded_lines: ClassVar[dict[str, int]] = {}

    # -- evaluation ------------------------------------------------------------------------------------------
    def probes(self, view: TurnView) -> list[Probe]:
        """What the verdict must read of the state (sandbox probes, module docstring); none by default."""
        return []

    def verdict(self, view: TurnView, answers: list[Any]) -> Verdict:
        """The verdict on ``view``, with the values the sandbox gave for :meth:`probes` (in order; a probe that
        failed never gets here: the check fails with the probe's error)."""
        raise NotImplementedError

    # -- presentation ----------------------------------------------------------------------------------------
    def summary(self) -> str:
        """One line saying what the check requires."""
        return self.detail()

    def detail(self) -> str:
        """The check's full text (its fields but ``kind``)."""
        return json.dumps(self.model_dump(exclude={"kind"}), ensure_ascii=False)

    # -- what the spec's cross-checks and version rule read --------------------------------------------------
    def tool_names(self) -> list[str]:
        """The tool names the check refers to (each must be one of the spec's tools)."""
        return []

    def v2_features(self) -> list[str]:
        """What of this check only spec_version 2 has (empty for a version 1 check)."""
        return [f"'{self.kind}' checks"] if self.since >= 2 else []

    @classmethod
    def version_1_schema(cls, schema: dict[str, Any]) -> None:
        """Narrow the kind's JSON Schema (its ``$defs`` entry, in place) to what a spec_version 1 document may hold:
        drop the fields only version 2 has (nothing by default)."""

    # -- what other parts read of a check without knowing its kind -------------------------------------------
    def answers(self) -> list[str]:
        """The strings a message of the agent must contain for the check to pass, alternatives of one answer (the
        reference's oracle says the first); none for a kind that reads no message."""
        return []

    def forbidden_tools(self) -> list[str]:
        """The tools the check forbids calling in its turn (what tags a turn's write tools in evaluation)."""
        return []

    def python_code(self) -> str | None:
        """The restricted Python this check runs in the sandbox, if any (the gate looks in it for imports)."""
        return None

    def question(self) -> str | None:
        """What a judge model is asked about the conversation, for a kind the runtime never decides (``scored``
        false); None for a kind the runtime decides."""
        return None

    # -- adequacy hints for the validity gate ----------------------------------------------------------------
    def catches(self, mutant: str) -> bool:
        """Whether failing this check catches a wrong trajectory of kind ``mutant`` (:data:`MUTANTS`): true for a
        check of what the turn must produce; a kind that only sees part of it narrows it."""
        return True

    def state_text(self) -> str | None:
        """The SQL or Python this check runs on the state (what input-write mutants and pattern probes read)."""
        return None

    def matches_patterns(self) -> bool:
        """Whether it matches text by pattern or substring (``LIKE``, ``startswith``...): string arguments are then
        also mutated in every way such a match can miss (validity rule 5)."""
        return False

    def guards_all_writes(self) -> bool:
        """Whether any write at all fails it (then extra-write mutants need not be played)."""
        return False

    def max_calls_per_action(self) -> int | None:
        """The most calls one action may make for it to pass (a reference is played in actions that size)."""
        return None


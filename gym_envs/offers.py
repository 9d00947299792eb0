"""Which tools an episode offers: the methods of :class:`~gym_envs.env.ToolEnv` that keep a task's withheld
tools (spec_version 2, :mod:`gym_envs.availability`) from the agent until the turn that reveals them.

Role: :class:`Offers` holds the tools offered at the current turn (``_offered``, their dicts ``_tool_dicts``:
what ``info["tools"]`` and the engine's tool list show; the task's system prompt lists those it offers as it
begins, :meth:`Offers._opening_prompt`) and routes every tool call of the env through :meth:`Offers._call`. A
call of a tool not offered is answered here, without reaching the executor, exactly as a call of a name no tool
has (``UnknownTool``, :func:`gym_envs.errors.unknown_tool_message` naming the tools offered): the same for a tool
the task withholds, so a policy cannot tell the two apart. Availability is a function of the task and the turn
(:meth:`~gym_envs.spec.Task.withheld_at`), so a reset, a reset to a later turn
(:meth:`~gym_envs.replay.Replays.reset_to_turn`) and a restored checkpoint all offer what playing the turns
before would have.
"""

from __future__ import annotations

from typing import Any

from gym_envs.errors import ErrorKind, unknown_tool_message
from gym_envs.prompt import system_prompt
from gym_envs.sandbox import CallResult, Session
from gym_envs.sandbox.host import not_an_object
from gym_envs.spec import EnvSpec, Task

__all__ = ["Offers"]


class Offers:
    """The tool-availability methods of :class:`~gym_envs.env.ToolEnv` (see the module docstring)."""

    # what these methods use of ToolEnv, which sets it
    env_spec: EnvSpec
    task: Task | None
    session: Session | None
    _prompts: dict[frozenset[str], str]  #: a task's withheld tools -> its system prompt
    _all_tools: list[dict[str, Any]]  #: every tool of the spec, as ``{"name", "description", "parameters"}``
    _tool_dicts: list[dict[str, Any]]  #: the tools offered now
    _offered: frozenset[str]  #: their names
    _all_names: frozenset[str]  #: the names of every tool of the spec

    def _offer_at(self, turn: int) -> None:
        """Offer the tools the task offers at ``turn`` (-1: as it begins, before its first turn)."""
        assert self.task is not None
        hidden = self.task.withheld_at(turn)
        if not hidden:
            self._tool_dicts, self._offered = self._all_tools, self._all_names
            return
        self._tool_dicts = [t for t in self._all_tools if t["name"] not in hidden]
        self._offered = frozenset(t["name"] for t in self._tool_dicts)

    def _opening_prompt(self) -> str:
        """The system prompt of the current task: the tools it offers as it begins (one per withheld set)."""
        assert self.task is not None
        key = frozenset(self.task.withheld_tools)
        if key not in self._prompts:
            self._prompts[key] = system_prompt(self.env_spec, self.task)
        return self._prompts[key]

    def _refusal(self, name: str, arguments: Any) -> CallResult | None:
        """The result of a call to a tool not offered now, or None when ``name`` is offered. A name no tool has
        and a tool the task withholds get the same answer (a policy cannot tell them apart); arguments that are
        no JSON object are refused first, as the executor refuses them."""
        if name in self._offered:
            return None
        if arguments is not None and not isinstance(arguments, dict):
            return not_an_object(name)
        return CallResult(name, {} if arguments is None else arguments, False,
                          error=unknown_tool_message(name, self._offered), error_type=ErrorKind.UNKNOWN_TOOL.value)

    def _call(self, name: str, arguments: Any, *, offer_all: bool = False) -> CallResult:
        """One tool call in the current turn: refused when the tool is not offered, unless ``offer_all`` (every
        tool of the spec callable now: the validity gate's mutant that uses a withheld tool early)."""
        assert self.session is not None
        refused = None if offer_all else self._refusal(name, arguments)
        return refused if refused is not None else self.session.call(name, arguments)

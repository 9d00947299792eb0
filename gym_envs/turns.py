"""Ending a turn from a loop that parses the model's tool calls itself: the ``envwright_end_turn`` control.

The episode engine ends a turn when the model answers with a plain message. Loops that own the tool
calls (an MCP client, TRL's ``environment_factory`` loop) end a rollout on a plain message instead, so
they offer the agent a tool named :data:`END_TURN_TOOL` whose argument is its reply to the user. Both
call :func:`end_turn`: the reply ends the current turn of a :class:`~gym_envs.env.ToolEnv` (scored by
its checks exactly as a plain message in the engine's loop), and the :class:`TurnEnd` says what came of
it: the turn's verdicts and reward, then the next instruction or, once the episode is over, its score. In a task
with a scenario the task's user may answer the reply instead (``user_reply``): the turn goes on, nothing is
scored, and the answer is what the agent reads next.

Each front end shows the agent what it needs: the MCP server (:mod:`gym_envs.mcp_server`) answers with
the whole record (:meth:`TurnEnd.to_dict`); the TRL adapter (``training.trl_env``) shows only the next
instruction, since a policy in training sees no check verdicts, as in the engine's loop and evaluation.
The name is reserved by the spec's naming rules (:data:`gym_envs.spec.MCP_CONTROL_TOOLS`), so no
environment's own tool can take it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gym_envs.env import ToolEnv

__all__ = ["END_TURN_TOOL", "TurnEnd", "end_turn"]

#: The control tool whose call ends the current turn with its ``reply`` argument.
END_TURN_TOOL = "envwright_end_turn"


@dataclass(frozen=True)
class TurnEnd:
    """What ending one turn gave: the turn's verdicts and reward, then what comes next.

    ``next_instruction`` and ``next_turn`` are set while the episode goes on; ``score`` and
    ``episode_passed`` once it is over (after the last turn, or ``truncated`` by the step limit). When the task's
    user answered the reply (``user_reply``), the turn did not end: ``checks`` is empty, ``next_turn`` is the same
    turn and ``next_instruction`` the user's answer.
    """

    turn: int  #: the turn that ended (counted from 0)
    checks: list[dict[str, Any]]  #: each check's verdict (``CheckResult.to_dict``)
    turn_passed: bool
    reward: float  #: the step's reward in the env's reward mode
    done: bool  #: whether the episode is over
    next_instruction: str | None = None
    next_turn: int | None = None
    score: dict[str, float] | None = None
    episode_passed: bool | None = None
    truncated: bool = False
    user_reply: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-ready data: ``turn``, ``checks``, ``turn_passed``, ``reward``, ``done``, then
        ``next_instruction`` and ``next_turn``, or ``score``, ``episode_passed`` and ``truncated``."""
        out: dict[str, Any] = {"turn": self.turn, "checks": self.checks, "turn_passed": self.turn_passed,
                               "reward": self.reward, "done": self.done}
        if self.user_reply is not None:
            out["user_reply"] = self.user_reply
        if self.done:
            out.update(score=self.score, episode_passed=self.episode_passed, truncated=self.truncated)
        else:
            out.update(next_instruction=self.next_instruction, next_turn=self.next_turn)
        return out


def end_turn(env: ToolEnv, reply: str) -> TurnEnd:
    """End ``env``'s current turn with the agent's ``reply`` (one step, as a plain message is).

    Raises ``RuntimeError`` when the episode is over and ``TypeError`` when ``reply`` is not text
    (:meth:`ToolEnv.reply`); callers that answer an agent turn these into their own error results.
    """
    turn = env.turn_index
    obs, reward, terminated, truncated, info = env.reply(reply)
    common = {"turn": turn, "checks": info.get("checks", []), "turn_passed": bool(info.get("turn_passed")),
              "reward": reward, "done": terminated or truncated}
    user = info.get("user_reply")
    if terminated or truncated:
        return TurnEnd(**common, score=info["score"], episode_passed=info["episode_passed"], truncated=truncated,
                       user_reply=user)
    return TurnEnd(**common, next_instruction=obs, next_turn=env.turn_index, user_reply=user)

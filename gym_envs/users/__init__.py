"""Simulated users for tasks with a scenario (spec_version 2; gym_envs/ENVSPEC.md, "Conversations with a simulated
user").

:class:`Scenario` is the model of a task's ``scenario``; a :class:`UserSimulator` answers the agent's plain messages
with a :class:`UserReply` (or :data:`END_TURN`). :class:`ScriptedUser` is deterministic (``ToolEnv``'s default: the
gate, the tests, CPU training); :class:`ModelUser` has a model play the scenario (evaluation and GPU training, through
``envgen.users.make_user``). ``ToolEnv`` asks the user; the episode engine may ask a user of its own for a whole
batch at once and hand each environment the answer.
"""

from gym_envs.users.base import END_TURN, UserContext, UserReply, UserSimulator, is_confirmation
from gym_envs.users.model import GREETING, STOP, ModelUser, opening_chat, parse_reply, user_chat, user_instructions
from gym_envs.users.scenario import Scenario, fact_text
from gym_envs.users.scripted import CONFIRM_NO, CONFIRM_YES, ScriptedUser, facts_asked, scripted_reply

__all__ = ["CONFIRM_NO", "CONFIRM_YES", "END_TURN", "GREETING", "STOP", "ModelUser", "Scenario", "ScriptedUser",
           "UserContext", "UserReply", "UserSimulator", "fact_text", "facts_asked", "is_confirmation", "opening_chat",
           "parse_reply", "scripted_reply", "user_chat", "user_instructions"]

"""The validity gate's mutation testing of checks (gym_envs/ENVSPEC.md validity rules 4, 5 and 7).

A reward is only as good as the checks that pay it. This package derives wrong trajectories from each
turn's reference and requires the turn's checks to catch every one of them:

* :mod:`envgen.gate.values`: other valid values taken from the state (another existing id, another
  value of the argument's column, a value that does not exist);
* :mod:`envgen.gate.mutants`: the wrong trajectories of a turn (arguments replaced, calls dropped,
  the action aimed at another entity, an extra write elsewhere, replies that omit the answer or give
  another entity's value);
* :mod:`envgen.gate.adequacy`: plays them on a :class:`~gym_envs.env.ToolEnv`, judges each one
  (killed / tolerated / survived), checks that ``reply_contains`` strings are distinctive, and keeps
  the mutation score.

:func:`envgen.validate.validate_spec` runs it as part of the gate.
"""

from envgen.gate.adequacy import GENERIC_REPLIES, Finding, MutationRun, answer_problem, oracle_reply, reply_problems

__all__ = ["GENERIC_REPLIES", "Finding", "MutationRun", "answer_problem", "oracle_reply", "reply_problems"]

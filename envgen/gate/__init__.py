"""The validity gate: what makes a generated spec acceptable (gym_envs/ENVSPEC.md, "Validity").

:func:`validate_spec` runs a spec through :mod:`gym_envs` (isolated workers by
default) and returns a :class:`Verdict` whose ``reasons`` record every failed
rule. The rules and how each is decided:

1. **Parse.** The spec parses into ``EnvSpec`` (names unique, references to
   known tools); the code compiles under the sandbox policy; every tool has a
   top-level ``def NAME(db, ...)`` whose parameters are exactly the schema's
   properties, with a default for every optional one.
2. **State.** ``schema_sql`` (tables and indexes only) and ``seed_sql`` build the
   database inside the limits.
3. **Reference.** Replaying each task's reference calls raises no error and
   passes every check. The reference's final message of a turn is the first
   string of each ``reply_contains`` check (the oracle knows the answer), else
   ``"Done."``.
4. **No-op.** Doing nothing in a turn (no calls, an empty reply, after the
   reference's earlier turns) fails a check other than ``calls`` in every turn
   that changes the database or must answer (has ``reply_contains`` checks).
5. **Near-miss.** For every turn that makes calls, read turns included: the
   trajectory with one call dropped, and each trajectory with one argument
   replaced by another valid value taken from the state (another existing id,
   another existing value of the argument's column, a value that does not
   exist), fails a check of that turn, unless it leaves the same state and
   gives the same answer as the reference (then it is no wrong trajectory).
6. **Determinism.** A second run of the reference's calls from the same seed gives
   the same results and the same end state (a check's verdict is a function of the
   state, the reply and the calls, so the reward is the same too).
7. **Check adequacy.** More wrong trajectories fail (mutation testing of the
   checks, :mod:`envgen.gate`): the calls aimed at another entity of the same
   table, an extra state-changing call on another row, a reply that omits an
   answer and one that gives another entity's value. A failing ``calls`` check
   alone never catches a wrong trajectory. ``reply_contains`` strings are
   distinctive (at least 3 characters unless numeric; not in the instruction, a
   tool description or a generic reply). The surviving wrong trajectory is named
   in the reason; :attr:`Verdict.mutation_score` is the share caught.
8. **Names.** Tool and parameter names follow the spec's naming rules and
   parameter schemas are valid JSON Schema (:mod:`gym_envs.spec` refuses them
   at parse time; the gate reports them under this rule).

Rejection reasons carry the rule number, a short code and a message that says
what to fix (turns and checks counted from 1); they are fed back to LLM proposers
verbatim. Every wrong trajectory played for rules 4, 5 and 7 is also recorded, with
what became of it, in :attr:`Verdict.mutations` (the inspector shows them).

Layout: :mod:`~envgen.gate.rules` (:func:`validate_spec`), :mod:`~envgen.gate.verdict`,
:mod:`~envgen.gate.signature`; the mutation testing of rules 4, 5 and 7 in :mod:`~envgen.gate.values`
(other valid values taken from the state), :mod:`~envgen.gate.mutants` (the wrong trajectories of a turn),
:mod:`~envgen.gate.replies` (the oracle's reply and the distinctiveness of ``reply_contains`` strings) and
:mod:`~envgen.gate.adequacy` (plays them on a :class:`~gym_envs.env.ToolEnv`, judges each one: killed /
tolerated / survived, and keeps the mutation score).
"""

from envgen.gate.adequacy import GENERIC_REPLIES, Finding, MutationRun, answer_problem, oracle_reply, reply_problems
from envgen.gate.rules import uses_episode_random, validate_many, validate_spec
from envgen.gate.signature import signature_problems
from envgen.gate.verdict import RULES, Reason, Verdict

__all__ = ["GENERIC_REPLIES", "RULES", "Finding", "MutationRun", "Reason", "Verdict", "answer_problem", "oracle_reply",
           "reply_problems", "signature_problems", "uses_episode_random", "validate_many", "validate_spec"]

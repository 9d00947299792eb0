"""The validity gate: what makes a generated spec acceptable (gym_envs/ENVSPEC.md, "Validity").

:func:`validate_spec` runs a spec through :mod:`gym_envs` (isolated workers by default) and returns a
:class:`Verdict` whose ``reasons`` record every failed rule. The rules and how each is decided:

1. **Parse.** The spec parses into ``EnvSpec`` (names unique, references to known tools); the code
   compiles under the sandbox policy; every tool has a top-level ``def NAME(db, ...)`` whose parameters
   are exactly the schema's properties, with a default for every optional one
   (:func:`signature_problems`).
2. **State.** ``schema_sql`` (tables and indexes only) and ``seed_sql`` build the database inside the limits.
3. **Reference.** Replaying each task's reference calls raises no error and passes every check. The
   reference's final message of a turn is the first string of each ``reply_contains`` check (the oracle
   knows the answer), else ``"Done."`` (:func:`oracle_reply`).
4. **No-op.** Doing nothing in a turn (no calls, an empty reply, after the reference's earlier turns)
   fails a check other than ``calls`` in every turn that changes the database or must answer (has
   ``reply_contains`` checks).
5. **Near-miss.** For every turn that makes calls, read turns included: the trajectory with one call
   dropped, and each trajectory with one argument replaced by another valid value taken from the state
   (another existing id, another existing value of the argument's column, a value that does not exist;
   where a check of the turn matches text by pattern (``LIKE``, ``GLOB``, ``instr``, ``startswith``,
   ``endswith``, a regular expression), a string argument also with text added before it, added after
   it, changed inside, in another case, and empty), fails a check of that turn, unless it leaves the
   same state and gives the same answer as the reference (then it is no wrong trajectory).
6. **Determinism.** A second run of the reference's calls from the same seed gives the same results and
   the same end state (a check's verdict is a function of the state, the reply and the calls, so the
   reward is the same too). Each run draws its episode seeds fresh (:func:`gate_seeds`), so spec code
   cannot recognise the gate's episodes by their random draws; code that imports ``random`` is judged
   under a second seed as well, and every wrong trajectory must be judged alike under both. The verdict
   records the seeds (:attr:`Verdict.seeds`): ``validate_spec(spec, seed=verdict.seeds[0])`` replays it.
7. **Check adequacy.** More wrong trajectories fail (mutation testing of the checks,
   :mod:`envgen.gate.adequacy`): the calls aimed at another entity of the same table, an extra
   state-changing call on another row, a write to a table a ``sql`` or ``python`` check reads but the
   reference does not write (a setting the check takes its expected value from: alone, and after the
   reference's calls), a reply that omits an answer, one that gives another entity's value, one that
   lists every candidate value of the answer's column, and, in a turn where the task still withholds a tool
   (spec_version 2 ``withheld_tools``), the tool's call as a later turn makes it, played as if it were
   offered (the turn's checks must catch the write, whatever the runtime refuses). A failing ``calls``
   check alone never catches a wrong trajectory. ``reply_contains`` strings are distinctive (at least 3
   characters unless numeric; not in the instruction, a tool description or a generic reply). The
   surviving wrong trajectory is named in the reason; :attr:`Verdict.mutation_score` is the share caught.
8. **Names.** Tool and parameter names follow the spec's naming rules and parameter schemas are valid
   JSON Schema (:mod:`gym_envs.spec` refuses them at parse time; the gate reports them under this rule).
9. **Budget.** One spec's run stays within its :class:`GateBudget` (wall time and calls, whatever each
   call costs); a spec that uses it up is rejected with the budget that ran out and how much was used.

Rejection reasons carry the rule number, a short code and a message that says what to fix (turns and
checks counted from 1); they are fed back to LLM proposers verbatim. Every wrong trajectory played for
rules 4, 5 and 7 is also recorded, with what became of it, in :attr:`Verdict.mutations` (the inspector
shows them).

Where spec code runs: the gate plays on the executor it is given, an isolated worker by default. Every
mode that pays a reward (the TRL adapter, GRPO rollouts, evaluation, the MCP server, ``ToolEnv`` and
its vector env) runs a generated spec on the same kind of worker with the same limits by default, so
nothing spec code can observe (recursion depth, memory, hash order, its seed's draws) tells the gate's
episodes from those that pay; the in-process executor, which differs, is for trusted specs only.

Layout: :mod:`~envgen.gate.rules` (:func:`validate_spec`), :mod:`~envgen.gate.verdict`,
:mod:`~envgen.gate.signature`, :mod:`~envgen.gate.budget`; the mutation testing of rules 4, 5 and 7 in
:mod:`~envgen.gate.values` (other valid values taken from the state), :mod:`~envgen.gate.mutants` (the
wrong trajectories of a turn), :mod:`~envgen.gate.inputs` (the writable inputs a check reads),
:mod:`~envgen.gate.replies` (the oracle's reply and the distinctiveness of ``reply_contains`` strings) and
:mod:`~envgen.gate.adequacy` (plays them on a :class:`~gym_envs.env.ToolEnv`, judges each one: killed /
tolerated / survived, and keeps the mutation score), with :mod:`~envgen.gate.extras` (the writes a turn
must not make), :mod:`~envgen.gate.starts` (where a wrong trajectory starts: a checkpoint after the reference's
items it shares) and :mod:`~envgen.gate.scoring` (a wrong trajectory's checks, cheapest first).
"""

from envgen.gate.adequacy import GENERIC_REPLIES, Finding, MutationRun, answer_problem, oracle_reply, reply_problems
from envgen.gate.budget import BudgetExceeded, GateBudget
from envgen.gate.rules import gate_seeds, uses_episode_random, validate_many, validate_spec
from envgen.gate.signature import signature_problems
from envgen.gate.verdict import RULES, Reason, Verdict

__all__ = ["GENERIC_REPLIES", "RULES", "BudgetExceeded", "Finding", "GateBudget", "MutationRun", "Reason", "Verdict",
           "answer_problem", "gate_seeds", "oracle_reply", "reply_problems", "signature_problems",
           "uses_episode_random", "validate_many", "validate_spec"]

"""Tasks of a compiled environment: instructions, reference calls and state-pinning checks.

Role: given an :class:`~envgen.blueprint.render.model.EnvModel` (entities
with seed rows, operations) and a difficulty profile
(:mod:`envgen.blueprint.render.difficulty`), write the tasks of a task mix, covering
the task kinds of gym_envs/ENVSPEC.md with deep shapes: dependent chains (a lookup
whose answer the next call needs; list, pick by a rule, act; read a balance,
then decide), cross-entity tasks (transfers and moves with both sides checked,
cascades, aggregates over a relation), business rules that refuse, 2-5 turn
conversations that refer back ("the second one", "undo that", "the same
for ..."), batch requests (order-free, every effect checked) and distractors
(near-duplicate records and sibling tools, made by the compiler).

The package, along its seams: :mod:`.base` (the world, checks and phrasing),
:mod:`.writes` (one-change turns, ``execute`` shapes), :mod:`.reads` (read
turns, the ``read`` conversation), :mod:`.chains` (chains and cross-entity
tasks), :mod:`.rules` (refusals), :mod:`.talks` (conversations, asking back,
declining), :mod:`.scenarios` (scenario tasks: a simulated user asked for a
value or a record, or for approval, before the agent acts) and :mod:`.plan`
(which shapes, by mix and difficulty, and which slots are scenario tasks).

Contract (what the validity gate checks):

* Each instruction states every value its reference passes or that the
  reference reads from the state (ids, keys, new values, rules to pick by);
  values come from the seeded :class:`~envgen.blueprint.render.values.ValueMaker`,
  and a new value always differs from the current one.
* Every turn that writes pins each written row with exact values, every
  other row of each written table and every other table (``unchanged``), so
  doing nothing, dropping a write, aiming it at another row, perturbing any
  argument or writing anywhere else fails (validity rules 4, 5 and 7).
* Every turn that answers checks a distinct value with ``reply_contains``
  (no other entity's value contains it), requires the read tool and checks
  that nothing changed; a refusal checks what the reply gives (the value that
  is too low, or a refusal) and that nothing changed. ``missing_parameter``
  turn 1 and decline turns forbid the write tools and check that nothing
  changed.
* A scenario task's first turn holds the agent's questions (``say`` items),
  each answered by the scripted user; what the user withholds is not in the
  instruction, and a change to approve has a ``confirmed`` check.
* Each task starts from the seed rows; multi-turn tasks track their own
  changes between turns.
"""

from envgen.blueprint.render.tasks.base import DECLINE_WORDS
from envgen.blueprint.render.tasks.plan import TaskMaker, build_tasks

__all__ = ["DECLINE_WORDS", "TaskMaker", "build_tasks"]

"""A task family whose tool comes later: the person asks for a change the service cannot make yet, then says it can.

Role: a mixin of :class:`~envgen.world.tasks.families.Families` (its target comes from
:meth:`~envgen.world.tasks.targets.Targets.targets`). :meth:`Withheld.withheld_tool` writes a task that
withholds the tool of the change asked for (spec_version 2 ``withheld_tools``, as BFCL's ``miss_func``):

1. the person asks for a change to one of their records; the tool that makes it is not offered, so a careful
   agent says it cannot do that now and changes nothing (the turn's check: every table unchanged; the reads it
   may make to find the record move to the next turn, as in every refusal);
2. the person says, in their own words, that the capability is there now ("Good news: that option has just
   been switched on for you."), and asks again; this turn reveals the tool (``reveal_tools``) and the agent
   makes the change (checks pin the changed row and every table's digest).

Only a tool no other tool can stand in for is withheld (no other tool of the world writes a field it writes on
the same records), and none whose change the policy wants confirmed (the confirmation would split the turn
that reveals it). Tried in two worlds in three (a draw seeded by the environment's id, so the others draw their
tasks exactly as before), which gives about every other world one such task (a world without a tool that fits
gets none), and at most one per world (:func:`~envgen.world.tasks.write_tasks`).
"""

from __future__ import annotations

from envgen.world.model import Op
from envgen.world.phrase import sentence, verb_phrase
from envgen.world.tasks.base import Draft, DraftTurn
from envgen.world.tasks.targets import CHANGES, Targets
from gym_envs.seeding import stable_seed

__all__ = ["Withheld"]

_NEWS = [
    "Good news: that option has just been switched on for you.",
    "I just heard back from the support team, and you should be able to do this now.",
    "My manager says you were given access to this a few minutes ago.",
    "Update from our side: the system was upgraded a moment ago, so this should work for you now.",
    "Someone from IT just called to say the new feature is live.",
    "Okay, I've been told the service can handle this now.",
    "I got an email saying you now have what you need for this.",
    "Apparently they've just turned this on for you.",
    "The team says the change they were rolling out is done, so you can do this now.",
    "Right, I checked with the office and you're now allowed to do this.",
    "Sorry for the back and forth - the people upstairs enabled this for you just now.",
    "Ah, I see the maintenance notice is gone, so this should be possible again.",
]
"""How a person says the capability is there now (one is drawn per task)."""

_AGAIN = ["So please {goal} now.", "Could you {goal} after all?", "Can you try again and {goal}?",
          "Please go ahead and {goal}.", "Would you {goal} now?", "Then please {goal}.",
          "In that case, I'd still like you to {goal}.", "Could you have another go and {goal}?"]
"""How the person asks again (with the request's goal)."""


def _writes(op: Op) -> set[str]:
    """The fields of its own records ``op`` writes (``*``: the whole record, for a delete)."""
    if op.kind == "delete":
        return {"*"}
    own = {e.field for e in op.effects if e.ref is None}
    if op.kind == "take" or (op.kind == "transition" and not op.keeps_state):
        return own | {"state"}
    if op.kind in ("acquire", "release"):
        return own | ({op.holder} if op.holder else set())
    return own | set(op.fields)


class Withheld(Targets):
    """The withheld-tool family (a mixin: see the module docstring)."""

    def only_way(self, op: Op) -> bool:
        """Whether no other tool of the world writes what ``op`` writes on its records (else withholding ``op``
        would not stop an agent: it could make the change with the other tool)."""
        mine = _writes(op)
        return not any(_writes(o) & mine or "*" in _writes(o) for o in self.world.ops
                       if o is not op and o.writes and o.entity is op.entity and o.kind not in ("create", "escalate"))

    def withheld_tool(self) -> Draft | None:
        """A change asked for while its tool is withheld, then asked again once the person says it is there
        (module docstring); None when this world does not get one or has no change that fits."""
        if stable_seed("world withheld tool", self.w.sim.spec.id) % 3 == 0:  # two worlds in three try (some fail)
            return None
        ops = [o for o in self.world.ops if o.entity is self.main and o.kind in CHANGES and not self.confirm(o)
               and self.only_way(o)]
        if not ops:
            return None
        op = self.rng.choice(ops)
        for t, call in self.doable(op):
            voice, said = t.voice, t.said
            goal = verb_phrase(op).format(record=said.words, value=t.value)
            body = voice.ask(goal, voice.reason(op))
            again = sentence(voice.pick(_NEWS), voice.pick(_AGAIN).format(goal=goal))
            turns = [DraftTurn(sentence(voice.opener(), body), self.reach(t.find, t.row, said), kind="refuse",
                               body=body),
                     DraftTurn(again, [call], reveal=[op.name])]
            return Draft("read_then_write", f"withheld_{op.name}"[:40], turns, hops=said.hops + 1,
                         choose=said.choose, scope=t.scope["id"], withheld=[op.name])
        return None

"""Scenario tasks of a world: one request a simulated user makes, where the agent must ask (gym_envs/ENVSPEC.md,
"Conversations with a simulated user").

:func:`scenario_task` turns a one-turn draft into a task with a ``scenario``:

* **who is asking**: a person who did not say who they are (their name is in the opener, their account email or
  the phone number, postcode or city they are found by is not). It becomes a fact of the scenario, and the reference
  opens with the agent's question for it (a ``say`` item); the scripted user answers it (``My phone number is
  ...``). An agent that guesses cannot reach the record.
* **confirmation**: where a policy rule wants a change confirmed, the reference asks before the write (a ``say``
  item naming the change) and the turn gains a ``confirmed`` check on that tool. The user says yes.

The state and reply checks are the ones :meth:`~envgen.world.tasks.base.Writer.finish` derived from the draft's
calls: a ``say`` item changes nothing.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from envgen.world.model import human
from envgen.world.phrase import sentence
from envgen.world.tasks.base import Draft, DraftTurn

if TYPE_CHECKING:
    from envgen.world.tasks.base import Writer
    from envgen.world.tasks.families import Families

__all__ = ["scenario_ready", "scenario_task"]

#: a locator's fact names, the one the user says first (gym_envs.users.Scenario: ``name|alias``)
_LOCATOR_FACTS = {"postcode": "zip code|postcode|post code", "city": "city|town", "phone": "phone number|phone"}

_ASK_FACT = ["Could you tell me the {fact} on your account?", "Happy to help - what's the {fact} on your account?",
             "Before I look: could you give me your {fact}, please?", "Can you share the {fact} you registered with?",
             "Sure. Could you please provide your {fact} so I can find your account?"]
_ASK_CONFIRM = ["To confirm: I'll {action}. Shall I go ahead?", "I'm about to {action}. Do you want me to proceed?",
                "Just to check before I change anything: {action}. Is that okay?",
                "I can {action} now. Would you like me to go ahead?"]


def scenario_ready(draft: Draft) -> bool:
    """Whether a draft can become a scenario task: one request (a change a policy rule wants confirmed may be drafted
    as the request, then the user's "yes")."""
    if draft.kind == "missing_parameter" or draft.family.startswith("cross") or not draft.turns[0].body:
        return False
    kinds = [t.kind for t in draft.turns]
    return kinds in (["write"], ["read"], ["ask", "write"])


def _one_request(draft: Draft) -> Draft:
    """The draft as one turn: a request drafted as "ask, then yes" becomes the request with every call."""
    if len(draft.turns) == 1:
        return dataclasses.replace(draft, rules=list(draft.rules))
    ask, yes = draft.turns
    turn = DraftTurn(ask.say, [*ask.calls, *yes.calls], kind="write", answers=yes.answers, body=ask.body)
    return dataclasses.replace(draft, turns=[turn], rules=list(draft.rules))


def scenario_task(draft: Draft, fam: Families, writer: Writer, index: int) -> dict[str, Any] | None:
    """The scenario task of ``draft`` (see the module docstring), or None when it has nothing to ask: no
    identity to withhold and no change to confirm, or its checks cannot be derived."""
    draft = _one_request(draft)
    turn = draft.turns[0]
    voice = draft.voice
    facts: dict[str, str] = {}
    says: list[tuple[int, str]] = []  # (position in the reference, the agent's message)
    instruction = turn.say
    if voice is not None and not voice.operator and (voice.locator is not None or voice.key):
        name = _LOCATOR_FACTS[voice.locator[0]] if voice.locator is not None else _key_fact(fam)
        if name is not None:
            value = voice.locator[1] if voice.locator is not None else str(voice.key)
            facts[name] = value
            said = name.split("|", 1)[0]
            says.append((0, fam.rng.choice(_ASK_FACT).format(fact=said)))
            instruction = sentence(voice.opener(identify=False), turn.body)
            draft.rules += [r for r in fam.rules("verify") if r not in draft.rules]
    confirm = next((c for c in turn.calls if fam.confirm_rules_by_name(c["name"])), None)
    if confirm is not None:
        action = f"{human(confirm['name'])} for {_subject(confirm)}"
        says.append((turn.calls.index(confirm), fam.rng.choice(_ASK_CONFIRM).format(action=action)))
        draft.rules += [r for r in fam.confirm_rules_by_name(confirm["name"]) if r not in draft.rules]
    if not says:
        return None
    task = writer.finish(draft, index)
    if task is None:
        return None
    (t,) = task["turns"]
    reference: list[dict[str, Any]] = list(t["reference"])
    for pos, text in sorted(says, key=lambda s: -s[0]):  # from the back, so earlier positions stay valid
        reference.insert(pos, {"say": text})
    t["reference"] = reference
    t["instruction"] = instruction
    if confirm is not None:
        t["checks"].append({"kind": "confirmed", "tools": [confirm["name"]]})
    persona = f"{voice.name}, " + ("a member of staff" if voice.operator else "a customer") if voice is not None \
        else "a member of staff"
    task["id"] = f"t{index}_scenario_{draft.family}"[:64]
    task["scenario"] = {"persona": f"{persona} of {fam.world.title}", "goal": turn.body, "facts": facts,
                        "on_confirm": "yes"}
    return task


def _key_fact(fam: Families) -> str | None:
    """The fact name of the person's key (``email|email address``), or None when the world has no person."""
    p = fam.person
    if p is None:
        return None
    said = human(p.key.name)
    return f"{said}|email address|e-mail" if p.key.kind == "email" and said == "email" else said


def _subject(call: dict[str, Any]) -> str:
    """What a call acts on, as the agent names it: its first argument's value."""
    args = call.get("arguments") or {}
    return str(next(iter(args.values()))) if args else "your request"

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
calls: a ``say`` item changes nothing. The agent's messages and the task's scenario are written by
:mod:`envgen.scenario`, which the blueprint compiler's scenario tasks share.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from envgen.scenario import Ask, ask_confirm, ask_identity, make_scenario_task
from envgen.world.model import human
from envgen.world.phrase import sentence, verb_phrase
from envgen.world.tasks.base import Draft, DraftTurn

if TYPE_CHECKING:
    from envgen.world.tasks.base import Writer
    from envgen.world.tasks.families import Families

__all__ = ["scenario_ready", "scenario_task"]

#: a locator's fact names, the one the user says first (gym_envs.users.Scenario: ``name|alias``)
_LOCATOR_FACTS = {"postcode": "zip code|postcode|post code", "city": "city|town", "phone": "phone number|phone"}


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
    asks: list[Ask] = []
    instruction = turn.say
    if voice is not None and not voice.operator and (voice.locator is not None or voice.key):
        name = _LOCATOR_FACTS[voice.locator[0]] if voice.locator is not None else _key_fact(fam)
        if name is not None:
            value = voice.locator[1] if voice.locator is not None else str(voice.key)
            facts[name] = value
            asks.append(Ask(0, ask_identity(fam.rng, name)))
            instruction = sentence(voice.opener(identify=False), turn.body)
            draft.rules += [r for r in fam.rules("verify") if r not in draft.rules]
    confirm = next((c for c in turn.calls if fam.confirm_rules_by_name(c["name"])), None)
    if confirm is not None:
        draft.rules += [r for r in fam.confirm_rules_by_name(confirm["name"]) if r not in draft.rules]
    elif not asks:
        return None
    task = writer.finish(draft, index)
    if task is None:
        return None
    if confirm is not None:  # asked right before the write, after every read the finished reference makes
        asks.append(Ask(task["turns"][0]["reference"].index(confirm), ask_confirm(fam.rng, _action(fam, confirm)),
                        confirms=True))
    persona = f"{voice.name}, " + ("a member of staff" if voice.operator else "a customer") if voice is not None \
        else "a member of staff"
    task["id"] = f"t{index}_scenario_{draft.family}"[:64]
    return make_scenario_task(task, asks=asks, instruction=instruction, facts=facts,
                              confirm=[confirm["name"]] if confirm is not None else [],
                              persona=f"{persona} of {fam.world.title}", goal=turn.body)


def _key_fact(fam: Families) -> str | None:
    """The fact name of the person's key (``email|email address``), or None when the world has no person."""
    p = fam.person
    if p is None:
        return None
    said = human(p.key.name)
    return f"{said}|email address|e-mail" if p.key.kind == "email" and said == "email" else said


def _action(fam: Families, call: dict[str, Any]) -> str:
    """The change a call makes, as the agent states it before asking to go ahead: the operation's verb phrase on
    the record it names (``cancel order ORD-20417``, ``report device AST-1 as lost``)."""
    args = call.get("arguments") or {}
    op = next((o for o in fam.world.ops if o.name == call["name"]), None)
    if op is None:
        return f"{human(call['name'])} {_subject(call)}".strip()
    key = args.get(op.entity.key.name, _subject(call))
    value = next((str(v) for k, v in args.items() if k != op.entity.key.name), "")
    phrase = verb_phrase(op)
    if "{value}" in phrase and not value:
        return f"{human(call['name'])} {op.entity.named(key)}"
    return phrase.format(record=op.entity.named(key), value=value)


def _subject(call: dict[str, Any]) -> str:
    """What a call acts on, as the agent names it: its first argument's value."""
    args = call.get("arguments") or {}
    return str(next(iter(args.values()))) if args else "your request"

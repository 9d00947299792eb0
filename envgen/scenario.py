"""Scenario tasks of generated environments: the one place a compiled task becomes a conversation with a simulated
user (gym_envs/ENVSPEC.md, "Conversations with a simulated user").

Both compilers decide *what* the user withholds or must confirm: the world compiler
(:mod:`envgen.world.tasks.scenario`: who is asking, a change a policy rule wants confirmed) and the blueprint compiler
(:mod:`envgen.blueprint.render.tasks.scenarios`: a value or a record the request leaves out, a change the user wants
to approve first). This module writes it, the same way for both:

* the agent's messages of the reference: :func:`ask_identity` (who the user is), :func:`ask_value` (a value the
  request leaves out), :func:`ask_record` (which record it is about), :func:`ask_confirm` (a change, stated, and
  "shall I go ahead?"), each drawn from phrasings by the caller's seeded random source;
* :func:`make_scenario_task`: a finished task (the checks and reference the compiler derived from its calls) with
  those messages inserted into one turn's reference as ``say`` items, the turn's instruction as the user opens it,
  a ``confirmed`` check on each write the user must approve, and the ``scenario`` (persona, hidden goal, facts).

Contract: :func:`make_scenario_task` returns None, and the caller writes the task another way, when the scenario is
invalid (a fact name :class:`~gym_envs.users.scenario.Scenario` refuses) or when the scripted user would not answer a
message as the reference needs: a question about a fact must get the fact's value, a request to confirm must be
confirmed. So the gate's rule 3 (every ``say`` is answered) holds for every task written here. A ``say`` item changes
nothing, so the task's state and reply checks stay those of its calls.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, NamedTuple

from pydantic import ValidationError

from gym_envs.users.scenario import Scenario, fact_text
from gym_envs.users.scripted import scripted_reply

__all__ = ["Ask", "ask_confirm", "ask_identity", "ask_record", "ask_value", "fact_said", "make_scenario_task"]

_ASK_IDENTITY = ["Could you tell me the {fact} on your account?", "Happy to help - what's the {fact} on your account?",
                 "Before I look: could you give me your {fact}, please?",
                 "Can you share the {fact} you registered with?",
                 "Sure. Could you please provide your {fact} so I can find your account?"]
_ASK_VALUE = ["Sure. What should the {fact} be?", "Happy to. Which {fact} would you like?",
              "Could you tell me the {fact} you want?", "What {fact} should I set?"]
_ASK_RECORD = ["Which {thing} do you mean? Could you tell me its {fact}?",
               "Sure - could you give me the {fact} of the {thing}?",
               "Which one is it? Please tell me the {fact}.", "Can you tell me the {fact} of that {thing}?"]
_ASK_CONFIRM = ["To confirm: I'll {action}. Shall I go ahead?", "I'm about to {action}. Do you want me to proceed?",
                "Just to check before I change anything: {action}. Is that okay?",
                "I can {action} now. Would you like me to go ahead?"]


class Ask(NamedTuple):
    """A message of the agent in a scenario turn's reference."""

    at: int  #: its position: inserted before the reference item at this position of the finished turn
    text: str  #: what the agent says
    confirms: bool = False  #: a request to confirm (the user must say yes), else a question about a fact


def fact_said(name: str) -> str:
    """The name of a fact the user says (the first of ``name|alias``)."""
    return name.split("|", 1)[0]


def ask_identity(rng: random.Random, fact: str) -> str:
    """The agent asking who the user is, by the fact ``fact`` (a ``name|alias`` key) that finds their account."""
    return rng.choice(_ASK_IDENTITY).format(fact=fact_said(fact))


def ask_value(rng: random.Random, fact: str) -> str:
    """The agent asking for a value the request leaves out (``fact``: its ``name|alias`` key)."""
    return rng.choice(_ASK_VALUE).format(fact=fact_said(fact))


def ask_record(rng: random.Random, thing: str, fact: str) -> str:
    """The agent asking which ``thing`` the request is about, by the fact ``fact`` that names it (its key)."""
    return rng.choice(_ASK_RECORD).format(thing=thing, fact=fact_said(fact).removeprefix(thing + " "))


def ask_confirm(rng: random.Random, action: str) -> str:
    """The agent stating the change ``action`` ("cancel order A-1042") and asking whether to go ahead."""
    return rng.choice(_ASK_CONFIRM).format(action=action)


def make_scenario_task(task: dict[str, Any], *, asks: Sequence[Ask], persona: str, goal: str,
                       facts: dict[str, Any] | None = None, confirm: Sequence[str] = (), turn: int = 0,
                       instruction: str | None = None) -> dict[str, Any] | None:
    """``task`` (a finished task dict, changed in place) played against a simulated user; None when it cannot be.

    ``asks``: the agent's messages, each inserted as a ``say`` item before the reference item at its position
    (several at one position keep their order); ``turn``: the turn they go in (its ``instruction`` replaced when
    given); ``confirm``: the write tools the user must approve first (the turn gets a ``confirmed`` check on them);
    ``facts``: what the user knows and tells when asked. The user answers a request to confirm with yes. Returns None
    when the scenario is invalid or the scripted user would not answer a message as the reference needs (module
    docstring); then ``task`` is unchanged."""
    facts = dict(facts or {})
    scenario = {"persona": persona, "goal": goal, "facts": facts, "on_confirm": "yes"}
    try:
        model = Scenario.model_validate(scenario)
    except ValidationError:
        return None
    values = [fact_text(v).lower() for v in facts.values()]
    for ask in asks:
        reply = scripted_reply(model, ask.text)
        answered = reply.confirmed if ask.confirms else \
            reply.text is not None and any(v in reply.text.lower() for v in values)
        if not answered:
            return None
    t = task["turns"][turn]
    reference: list[dict[str, Any]] = list(t["reference"])
    for ask in sorted(reversed(asks), key=lambda a: -a.at):  # from the back, so earlier positions stay valid
        reference.insert(ask.at, {"say": ask.text})
    t["reference"] = reference
    if instruction is not None:
        t["instruction"] = instruction
    if confirm:
        t["checks"].append({"kind": "confirmed", "tools": list(dict.fromkeys(confirm))})
    task["scenario"] = scenario
    return task

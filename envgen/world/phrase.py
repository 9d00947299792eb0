"""How a person asks: openers, intents, reasons and references, varied by the world's seed.

Role: every sentence a task's user says is assembled here from parts (an opener that introduces the
persona, the goal in the domain's words, a reason, a politeness form), each part drawn from several
variants with the task's ``rng``. Requests state goals, not tools or fields: "I'd like to cancel my
order from January 14, I bought the wrong size" rather than "set the state of order 7 to cancelled".

Contract: nothing here names a row id; every choice comes from the ``rng`` passed in; :func:`verb_phrase`
reads an operation's ``phrase`` (``"cancel {record}"``) when the blueprint gives one and derives one
from the tool's name otherwise.
"""

from __future__ import annotations

import random
import re

from envgen.world.model import Op, human

__all__ = ["Voice", "also", "lowers", "verb_phrase", "verb_words"]

_GREETINGS = ["Hi", "Hello", "Hey there", "Good morning", "Good afternoon", "Hi there", "Hello again"]
_OPENERS_CUSTOMER = [
    "{greet}, this is {name}.", "{greet}! My name is {name}.", "{greet}, {name} here.", "{greet}. I'm {name}.",
    "{greet}, I'm {name} and I have an account with you.", "{greet} - {name} speaking.",
]
_IDENTITY = [
    "My email is {key}.", "The account is under {key}.", "You can find me under {key}.",
    "I'm registered as {key}.", "My account email is {key}.", "It's {key} if you need to look me up.",
]
_LOCATE = {
    "postcode": ["My zip code is {value}.", "The zip code on my account is {value}.", "I'm at zip code {value}.",
                 "My postcode is {value}, if that helps."],
    "city": ["I live in {value}.", "I'm based in {value}.", "The account is from {value}."],
    "phone": ["My phone number is {value}.", "You can reach me on {value}.", "The number on file is {value}."],
}
_OPENERS_OPERATOR = [
    "{greet}, {first} from the {team} here.", "{greet}! I'm covering the {team} today.",
    "{greet}, it's {first} from the {team}.", "{greet} - quick one from the {team}.",
    "{greet}. {first} here, I'm on shift with the {team}.",
]
_ASK = [
    "I'd like to {goal}.", "Could you {goal}?", "Can you please {goal}?", "I need to {goal}.",
    "Would you {goal} for me?", "Please {goal}.", "I was hoping you could {goal}.", "I want to {goal}.",
    "Is it possible to {goal}?", "Could you help me {goal}?",
]
_ASK_READ = [
    "Could you tell me {question}?", "I'd like to know {question}.", "Can you check {question}?",
    "Quick question: {question}?", "Would you look up {question}?", "I'm trying to find out {question}.",
]
_BECAUSE = ["- {reason}.", "because {reason}.", "since {reason}.", "as {reason}.", "{Reason}, so that would help."]
_THANKS = ["Thanks!", "Thank you.", "Thanks a lot.", "Appreciate it.", "Thanks in advance.", "", "", ""]
_YES = ["Yes", "Yep", "Sure", "Correct", "That's right", "Yes please", "Yes, that's the one", "Absolutely",
        "Confirmed", "Right"]
_GO = [", go ahead", ", please do it", " - proceed", ". Please go ahead and do that", ", you can do it now",
       ". Go for it", ", I confirm", ". Please continue"]
_AFTER = ["", "", " Thanks.", " Thank you!", " Appreciate the help.", " Cheers."]
_ALSO = ["Also, ", "One more thing: ", "While you're at it, ", "And ", "Oh, and ", "While I have you, ",
         "Another thing: ", "Before I forget, ", "Oh, and one more: ", "Next, ", "Also, since I'm here, "]
_GENERIC_REASONS = {
    "transition": ["plans changed", "I made a mistake when I placed it", "it is no longer needed",
                   "the situation changed this week", "I talked it over with my family"],
    "update": ["the old details were wrong", "the details were out of date", "the record needs correcting"],
    "adjust": ["we agreed on it last week", "it was promised to me", "the numbers changed",
               "of a correction that was agreed"],
    "create": ["I need it soon", "it was requested this morning", "we are running low",
               "it's for an upcoming event"],
    "move": ["the other one suits better", "it was put in the wrong place", "we are reorganising"],
    "delete": ["it is a duplicate", "it was created by mistake", "it is no longer relevant"],
    "acquire": ["it's needed today", "the usual one is busy", "it was booked for this"],
    "release": ["it's no longer needed", "the work is finished", "it should be free for others"],
    "take": ["we are ready for the next one", "the line is free now", "it's our turn"],
    "transfer": ["of an agreed correction", "it was booked to the wrong one", "we are rebalancing"],
}
#: why a field is changed, by its kind's group: (a customer's reasons, a member of staff's)
_UPDATE_REASONS: dict[str, tuple[list[str], list[str]]] = {
    "address": (["I moved recently", "the old address was wrong", "I'm staying somewhere else for a while"],
                ["the customer moved", "the address on file was wrong", "the customer sent a new address"]),
    "contact": (["I changed it recently", "the old one no longer works", "I don't use the old one any more"],
                ["the customer gave us new contact details", "the old contact details bounce",
                 "the customer asked us to update it"]),
    "wording": (["I noticed a typo", "the old wording was unclear", "the old one was out of date"],
                ["there was a typo in it", "the old wording was unclear", "it was out of date"]),
    "time": (["my plans changed", "the old date no longer works for me", "the schedule moved"],
             ["the schedule changed", "the old date no longer works", "the customer asked to move it"]),
    "amount": (["the old figure was wrong", "we agreed on a new figure", "the numbers changed"],
               ["the old figure was wrong", "a new figure was agreed", "the numbers changed"]),
}
_UPDATE_GROUP = {
    **dict.fromkeys(("street_address", "city", "country", "postcode"), "address"),
    **dict.fromkeys(("email", "phone", "username"), "contact"),
    **dict.fromkeys(("title", "description", "person_name", "company", "job_title", "file_name", "file_path"),
                    "wording"),
    **dict.fromkeys(("date", "datetime", "duration_minutes"), "time"),
    **dict.fromkeys(("money", "quantity", "count", "integer", "number", "percent"), "amount"),
}
#: a member of staff's reasons for a kind of operation whose generic reasons are a customer's own
_STAFF_REASONS = {
    "transition": ["the customer asked for it", "plans changed", "it is no longer needed",
                   "the situation changed this week"],
    "adjust": ["we agreed on it last week", "it was promised to the customer", "of a correction that was agreed"],
    "create": ["it was requested this morning", "we are running low", "it's for an upcoming event",
               "the customer needs it soon"],
}
#: words a code name may start with that are not its verb (``after_cancel``, ``on_close``, ``handle_read``)
_FUNCTION_WORDS = frozenset({"after", "before", "on", "when", "if", "while", "then", "and", "or", "to", "for", "with",
                             "by", "from", "at", "in", "of", "pre", "post", "handle"})
_TEAMS = ["front desk", "operations team", "service desk", "back office", "support team", "dispatch team"]


def verb_words(words: list[str]) -> list[str]:
    """A code name's words from its verb on: ``after_cancel`` is asked as "cancel", ``on_close`` as "close"."""
    while len(words) > 1 and words[0] in _FUNCTION_WORDS:
        words = words[1:]
    return words


_LOWERING = re.compile(r"^(?:take|knock|deduct|subtract|waive|remove|withdraw|lower|reduce|cut|redeem|spend|use|"
                       r"release)\b|\{value\}\s+off\b")


def lowers(op: Op) -> bool:
    """Whether a request for ``op`` (an ``adjust``) asks for its amount to come off the field: its phrase starts
    with a verb of lowering or takes the value off (``take {value} off the fines on {record}``, ``waive {value}
    of the fine``, ``redeem {value} points from {record}``). The call's amount is then negative."""
    return op.kind == "adjust" and bool(_LOWERING.search(op.phrase.strip().lower()))


def verb_phrase(op: Op) -> str:
    """What the operation does, as a request's verb phrase with ``{record}`` (and ``{value}``) slots."""
    if op.phrase:
        return op.phrase
    noun = op.entity.name
    words = verb_words([w for w in op.name.split("_") if w not in noun.split("_") and w not in (op.entity.table,)])
    verb = " ".join(words) or human(op.kind)
    if op.kind == "update":
        return f"change the {human(op.fields[0])} of {{record}} to {{value}}" if op.fields else f"{verb} {{record}}"
    if op.kind == "adjust":
        return f"add {{value}} to the {human(op.fields[0])} of {{record}}"
    if op.kind == "transition":
        return f"{verb} {{record}}" if verb != "transition" or op.target is None else f"mark {{record}} as {op.target}"
    return f"{verb} {{record}}"


class Voice:
    """One task's speaker: a persona (a person row or a staff member) and the ``rng`` of its choices."""

    def __init__(self, rng: random.Random, name: str, key: str | None, operator: bool):
        self.rng = rng
        self.name = name
        self.first = name.split(" ")[0]
        self.key = key
        self.operator = operator
        self.team = rng.choice(_TEAMS)
        self.locator: tuple[str, str] | None = None  #: (field kind, value): identified by name and this

    def pick(self, options: list[str]) -> str:
        return self.rng.choice(options)

    def opener(self, identify: bool = True) -> str:
        greet = self.pick(_GREETINGS)
        if self.operator:
            return self.pick(_OPENERS_OPERATOR).format(greet=greet, first=self.first, team=self.team)
        text = self.pick(_OPENERS_CUSTOMER).format(greet=greet, name=self.name)
        if identify:
            text = f"{text} {self.identity()}".strip()
        return text

    def identity(self) -> str:
        """How the speaker identifies: what they live by (with their name, said in the opener) or their key."""
        if self.locator is not None:
            return self.pick(_LOCATE[self.locator[0]]).format(value=self.locator[1])
        return self.pick(_IDENTITY).format(key=self.key) if self.key else ""

    def reason(self, op: Op) -> str:
        """Why the speaker asks for ``op``: the operation's own reasons, else ones that fit what it changes
        (an address is changed because someone moved, a title because of a typo) and who is asking."""
        pool = op.reasons or self._generic_reasons(op)
        reason = self.pick(pool)
        form = self.pick(_BECAUSE)
        return form.format(reason=reason, Reason=reason[:1].upper() + reason[1:])

    def _generic_reasons(self, op: Op) -> list[str]:
        if op.kind == "update" and op.fields:
            kinds = {f.name: f.kind for f in [op.entity.key, *op.entity.fields]}
            group = _UPDATE_GROUP.get(kinds.get(op.fields[0], ""))
            if group:
                return _UPDATE_REASONS[group][1 if self.operator else 0]
        if self.operator and op.kind in _STAFF_REASONS:
            return _STAFF_REASONS[op.kind]
        return _GENERIC_REASONS.get(op.kind, ["it would help me a lot"])

    def ask(self, goal: str, reason: str = "") -> str:
        goal = goal.rstrip("?. ")
        forms = [f for f in _ASK if not (" for me" in f and " for m" in goal)]  # not "... for my order for me"
        text = self.pick(forms).format(goal=goal)
        if reason:
            if reason.startswith(("-", "because", "since", "as")):  # the reason goes inside the question
                asked = text.endswith("?")
                text = text.rstrip(".?") + " " + reason
                if asked:
                    text = text.rstrip(".") + "?"
            else:
                text = text + " " + reason
        thanks = self.pick(_THANKS)
        return (text + (" " + thanks if thanks else "")).strip()

    def question(self, question: str) -> str:
        return self.pick(_ASK_READ).format(question=question.rstrip("?. "))

    def yes(self) -> str:
        """An explicit confirmation, in one of many words (a reply to "shall I go ahead?")."""
        return f"{self.pick(_YES)}{self.pick(_GO)}.{self.pick(_AFTER)}".replace("..", ".")

    def also(self) -> str:
        return also(self.rng)


def also(rng: random.Random) -> str:
    """How a person moves on to their next request in the same conversation (``Also, ``)."""
    return rng.choice(_ALSO)


def sentence(*parts: str) -> str:
    """Parts joined into one message, spaces normalised."""
    return re.sub(r"\s+", " ", " ".join(p for p in parts if p)).strip()

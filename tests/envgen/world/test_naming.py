"""How a person names a record, and the punctuation of a request (envgen.world.model.Entity.named, phrase.Voice)."""

from __future__ import annotations

import random
import re

from envgen.world.catalog import domain
from envgen.world.compile import compile_world
from envgen.world.model import Entity, Field
from envgen.world.phrase import Voice


def _entity(name: str, key_kind: str) -> Entity:
    return Entity(name=name, key=Field(name="key", kind=key_kind))


def test_a_title_key_is_said_as_a_name_and_a_code_key_after_the_noun() -> None:
    assert _entity("support_queue", "title").named("Login Problems") == "the Login Problems queue"
    assert _entity("folder", "title").named("Projects") == "the Projects folder"
    assert _entity("order", "code").named("ORD-1042") == "order ORD-1042"
    assert _entity("customer", "email").named("ada@example.com") == "customer ada@example.com"


def test_a_goal_that_ends_in_its_own_question_mark_is_not_asked_twice() -> None:
    for seed in range(40):
        voice = Voice(random.Random(seed), "Ada Byrne", None, operator=True)
        for text in (voice.ask("take the next ticket - which one comes up?"),
                     voice.question("how many tickets are open?")):
            assert not re.search(r"[?.][?.]", text.replace("...", "")), text


def test_no_turn_of_a_title_keyed_world_says_the_entity_noun_before_its_name() -> None:
    cw = compile_world(domain("support_tickets"), env_id="desk", seed=3)
    turns = [turn.instruction for task in cw.spec.tasks for turn in task.turns if turn.instruction]
    assert turns
    for text in turns:
        assert not re.search(r"\bsupport queue [A-Z]", text), text
        assert not re.search(r"[?.!][?.!]", text.replace("...", "")), text


def test_a_question_keeps_its_question_mark_when_a_reason_follows_inside_it() -> None:
    for seed in range(60):
        voice = Voice(random.Random(seed), "Ada Byrne", None, operator=False)
        for reason in ("since plans changed.", "because it arrived late.", "- it is a duplicate."):
            text = voice.ask("cancel order ORD-1042", reason)
            if text.split(" ")[0] in ("Could", "Can", "Would", "Is"):
                assert "?" in text, text
            assert not re.search(r"[?.][?.]", text), text


def test_a_goal_naming_the_speakers_record_is_never_asked_for_me_twice() -> None:
    for seed in range(60):
        text = Voice(random.Random(seed), "Ada Byrne", None, operator=False).ask("check me in for my booking")
        assert "for me" not in text.replace("for my", ""), text


def test_a_code_name_opening_with_a_function_word_is_asked_by_its_verb() -> None:
    from envgen.world.model import Op
    from envgen.world.phrase import verb_phrase

    sub = _entity("subscription", "code")
    assert verb_phrase(Op(name="after_cancel", kind="transition", entity=sub, target="cancelled")) == \
        "cancel {record}"
    assert verb_phrase(Op(name="on_close_subscription", kind="transition", entity=sub, target="closed")) == \
        "close {record}"


def test_a_reason_fits_the_field_a_change_writes_and_who_asks() -> None:
    from envgen.world.model import Op

    ticket = Entity(name="ticket", key=Field(name="number", kind="code"),
                    fields=[Field(name="subject", kind="title"), Field(name="address", kind="street_address"),
                            Field(name="due", kind="date")])
    said: dict[tuple[str, bool], set[str]] = {}
    for seed in range(60):
        for field in ("subject", "address", "due"):
            for operator in (False, True):
                op = Op(name=f"change_{field}", kind="update", entity=ticket, fields=[field])
                said.setdefault((field, operator), set()).add(
                    Voice(random.Random(seed), "Ada Byrne", None, operator=operator).reason(op))
    moved = re.compile(r"\bI moved\b")
    assert any(moved.search(r) for r in said[("address", False)])  # a customer's new address: they moved
    assert not any(moved.search(r) for key, rs in said.items() if key != ("address", False) for r in rs)
    assert any("typo" in r or "wording" in r for r in said[("subject", True)])
    assert not any(re.search(r"\b(I|my|me)\b", r) for (_, operator), rs in said.items() if operator for r in rs)
    transition = Op(name="cancel_ticket", kind="transition", entity=ticket)
    staff = {Voice(random.Random(s), "Ada Byrne", None, operator=True).reason(transition) for s in range(40)}
    assert not any("my family" in r for r in staff)  # a member of staff gives the customer's reason, not theirs

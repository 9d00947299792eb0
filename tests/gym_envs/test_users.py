"""Simulated users: the scripted user's rules, the model-backed user's chat and replies, and a scenario task
played through ToolEnv (the user answers within the turn, the checks see what was said)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gym_envs.env import ToolEnv
from gym_envs.examples import load_example
from gym_envs.turns import end_turn
from gym_envs.users import (
    CONFIRM_NO,
    CONFIRM_YES,
    END_TURN,
    GREETING,
    STOP,
    ModelUser,
    Scenario,
    ScriptedUser,
    UserContext,
    UserReply,
    is_confirmation,
    parse_reply,
    scripted_reply,
    user_chat,
)

SCENARIO = Scenario(goal="Cancel order A-1042.", persona="Ana, brief.",
                    facts={"email|e-mail": "ana@example.com", "order number|order code": "A-1042",
                           "zip code|postcode": 19122, "member": True},
                    unknown="No idea, sorry.")


@pytest.mark.parametrize(("message", "reply"), [
    ("What is your email?", "My email is ana@example.com."),
    ("Could you tell me the e-mail on the account?", "My email is ana@example.com."),  # an alternative name
    ("Please provide your zip code.", "My zip code is 19122."),  # a request, no question mark
    ("What's the code of your order?", "My order number is A-1042."),  # each word of a name
    ("What is your postcode and your email address?", "My email is ana@example.com. My zip code is 19122."),
    ("Are you a member?", "My member is yes."),
])
def test_the_scripted_user_answers_the_facts_a_question_names(message: str, reply: str) -> None:
    assert scripted_reply(SCENARIO, message) == UserReply(reply)


def test_a_fact_the_message_already_states_is_not_asked_for() -> None:
    """'Shall I cancel order A-1042?' names the order but states it: a request to confirm, not a question."""
    assert scripted_reply(SCENARIO, "Order A-1042 is pending. Can you confirm the order number A-1042 is right?") \
        == UserReply(CONFIRM_YES, confirmed=True)


@pytest.mark.parametrize("message", ["Shall I cancel it?", "I will cancel it now. Should I proceed?",
                                     "Do you want me to go ahead?", "Is that OK?", "Would you like me to cancel it?",
                                     "Please confirm that I may cancel it."])
def test_a_request_to_confirm_gets_on_confirm(message: str) -> None:
    assert scripted_reply(SCENARIO, message) == UserReply(CONFIRM_YES, confirmed=True)
    no = SCENARIO.model_copy(update={"on_confirm": "no"})
    assert scripted_reply(no, message) == UserReply(CONFIRM_NO, confirmed=False)


def test_other_questions_get_unknown_and_anything_else_ends_the_turn() -> None:
    assert scripted_reply(SCENARIO, "Which colour do you prefer?") == UserReply("No idea, sorry.")
    assert scripted_reply(SCENARIO, "Your order is cancelled. The email went out.") is END_TURN
    assert scripted_reply(SCENARIO, "Your order is cancelled.\nYour email has the details.") is END_TURN
    assert scripted_reply(SCENARIO, "The total is $4.50. Anything else?") == UserReply("No idea, sorry.")


def test_fact_names_are_words_and_a_v1_document_has_no_scenario() -> None:
    with pytest.raises(ValueError, match="fact name"):
        Scenario(goal="x", facts={"zip{code}": "1"})
    with pytest.raises(ValueError, match="empty value"):
        Scenario(goal="x", facts={"zip": " "})
    assert Scenario.fact_names("zip code|postcode") == ["zip code", "postcode"]


@pytest.mark.parametrize(("text", "yes"), [("Yes, go ahead.", True), ("sure", True), ("OK then", True),
                                           ("Please do.", True), ("No thanks.", False), ("Not yet.", False),
                                           ("My email is a@b.c", False)])
def test_a_reply_that_begins_with_a_yes_is_a_confirmation(text: str, yes: bool) -> None:
    assert is_confirmation(text) is yes


def test_the_model_user_reads_the_scenario_and_sees_the_conversation_from_its_side() -> None:
    ctx = UserContext(SCENARIO, 0, "Hi, cancel my order.", "What is your email?",
                      (("user", "Hi, cancel my order."), ("assistant", "Sure."), ("user", "Thanks.")), 1)
    chat = user_chat(ctx)
    assert chat[0]["role"] == "system" and "Cancel order A-1042." in chat[0]["content"]
    assert "- email: ana@example.com" in chat[0]["content"] and STOP in chat[0]["content"]
    assert [m["role"] for m in chat[1:]] == ["assistant", "user", "assistant", "user"]
    assert chat[-1]["content"] == "What is your email?"
    asked: list[Any] = []
    user = ModelUser(lambda chats: asked.append(chats) or ["Sure, go ahead.", f"Thanks! {STOP}", None])
    assert user.reply_batch([ctx, ctx, ctx]) == [UserReply("Sure, go ahead.", True), END_TURN, END_TURN]
    assert len(asked) == 1 and len(asked[0]) == 3  # one batch for every message
    assert parse_reply("  ") is END_TURN
    with pytest.raises(RuntimeError, match="gave 1 replies for 2"):
        ModelUser(lambda chats: ["x"]).reply_batch([ctx, ctx])


@pytest.fixture
def shop() -> Iterator[ToolEnv]:
    env = ToolEnv(load_example("shop-support"), "cancel-with-confirmation", executor="inprocess")
    yield env
    env.close()


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"name": name, "arguments": arguments}]}


def test_a_scenario_turn_goes_on_while_the_user_answers(shop: ToolEnv) -> None:
    obs, info = shop.reset(seed=0)
    assert obs == "Hi, I need to cancel an order I placed by mistake."
    obs, reward, term, trunc, info = shop.step("Sure. What is your email address?")
    assert obs == "My email is ana@example.com." and info["user_reply"] == obs
    assert "checks" not in info and (reward, term, trunc) == (0.0, False, False)
    shop.step(_call("find_customer", email="ana@example.com"))
    shop.step("And the order number, please?")
    shop.step(_call("get_order", code="A-1042"))
    obs, *_ = shop.step("I will cancel A-1042 and refund it. Shall I go ahead?")
    assert obs == CONFIRM_YES
    shop.step(_call("cancel_order", code="A-1042"))
    _, reward, term, _, info = shop.step("Done: A-1042 is cancelled and 37.50 goes back to your card.")
    assert term and reward == 1.0 and info["turn_passed"], info["checks"]
    turn = info["turn_results"][0]
    assert [s["confirmed"] for s in turn["said"]] == [False, False, True]
    assert turn["judged"] == [{"index": 6, "kind": "judged", "assertion": turn["judged"][0]["assertion"],
                               "passed": None, "detail": "undecided: no judge"}]
    assert len(info["checks"]) == 6 and shop.score() == {"episode": 1.0, "turns": 1.0, "checks": 1.0}
    assert [r for r, _ in shop.transcript].count("user") == 4


def test_a_write_without_the_confirmation_and_two_calls_at_once_fail_their_checks(shop: ToolEnv) -> None:
    shop.reset(seed=0)
    shop.step({"content": "", "tool_calls": [{"name": "get_order", "arguments": {"code": "A-1042"}},
                                             {"name": "cancel_order", "arguments": {"code": "A-1042"}}]})
    _, reward, _, _, info = shop.step("Cancelled; 37.50 is refunded.")
    failed = {c["kind"] for c in info["checks"] if not c["passed"]}
    assert failed == {"confirmed", "calls_per_message"} and reward == 0.0


def test_the_user_stops_answering_after_max_replies(shop: ToolEnv) -> None:
    shop.reset(seed=0)
    for _ in range(5):
        _, _, _, _, info = shop.step("Hmm, which colour was it?")
        assert info["user_reply"] == "I'm not sure, sorry."
    _, _, term, _, info = shop.step("Which colour was it?")
    assert term and "user_reply" not in info and not info["turn_passed"]


def test_an_engine_decided_reply_is_recorded_as_the_users(shop: ToolEnv) -> None:
    """The episode engine's own user (a model) answers for the env: the env records that answer, and an END_TURN
    ends the turn even where the scripted user would have answered."""
    shop.reset(seed=0)
    assert shop.user_context("Shall I?") is not None
    shop.preset_reply(UserReply("Yep, do it.", confirmed=True))
    _, _, _, _, info = shop.step("Shall I cancel A-1042?")
    assert info["user_reply"] == "Yep, do it." and shop.turns[-1].said[-1].confirmed
    shop.preset_reply(END_TURN)
    _, _, term, _, info = shop.step("What is your email?")
    assert term and "user_reply" not in info


def test_end_turn_passes_the_users_answer_on(shop: ToolEnv) -> None:
    shop.reset(seed=0)
    ended = end_turn(shop, "What is your order number?")
    assert not ended.done and ended.user_reply == "My order number is A-1042." and ended.next_turn == 0
    assert ended.to_dict()["user_reply"] == ended.next_instruction and ended.checks == []


def test_a_task_without_a_scenario_has_no_user() -> None:
    env = ToolEnv(load_example("shop-support"), "order-status", executor="inprocess", user=ScriptedUser())
    env.reset(seed=0)
    assert env.step("What is your order number?")[4]["user_reply"] == "My order number is C-3001."
    env.close()
    v1 = ToolEnv("library-loans", executor="inprocess")
    v1.reset(seed=0)
    assert v1.user_context("What is your member id?") is None
    _, _, _, _, info = v1.step("What is your member id?")
    assert "turn_passed" in info and "user_reply" not in info
    v1.close()
    with pytest.raises(TypeError, match="UserSimulator"):
        ToolEnv("library-loans", user="scripted")  # type: ignore[arg-type]


def test_a_model_user_opens_the_conversation_from_its_scenario_and_a_scripted_one_does_not() -> None:
    """The opening message: the model answers the agent's greeting under its instructions (the scenario never
    reaches the agent); nothing or only the stop token is no opening; a scripted user writes none (the task's
    instruction opens)."""
    seen: list[list[dict[str, str]]] = []

    def generate(chats: list[list[dict[str, str]]]) -> list[str | None]:
        seen.extend(chats)
        return ["Hi, I'd like to cancel an order.", STOP, None][: len(chats)]

    user = ModelUser(generate)
    assert user.open_batch([SCENARIO, SCENARIO, SCENARIO]) == ["Hi, I'd like to cancel an order.", None, None]
    system, greeting = seen[0]
    assert system["role"] == "system" and "Cancel order A-1042." in system["content"]
    assert greeting == {"role": "user", "content": GREETING}
    assert user.open_batch([]) == [] and ScriptedUser().open_batch([SCENARIO]) == [None]

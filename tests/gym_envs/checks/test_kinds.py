"""The check kinds of spec_version 2, each both ways: call patterns and order, reply scope, confirmed,
calls_per_message, judged, state; their models refuse what makes no sense; v1 documents may not use them."""

from __future__ import annotations

import pytest

from gym_envs.checks import (
    CallPattern,
    CallsCheck,
    CallsPerMessageCheck,
    CallView,
    ConfirmedCheck,
    JudgedCheck,
    ReplyContainsCheck,
    Said,
    StateCheck,
    TurnView,
    judge,
    parse_check,
)
from gym_envs.checks.calls import same_value
from gym_envs.checks.judged import judge_prompt, judge_verdict
from gym_envs.spec import SpecError, parse_spec
from tests.cli.specs import lending_spec


def _calls(*calls: tuple[str, dict, bool]) -> list[CallView]:
    return [CallView(n, a, ok, i) for i, (n, a, ok) in enumerate(calls)]


CANCEL = ("cancel_order", {"code": "A-1", "reason": "mistake"}, True)


@pytest.mark.parametrize(("pattern", "call", "passed"), [
    ({"name": "cancel_order", "arguments": {"code": "A-1", "reason": "mistake"}}, CANCEL, True),
    ({"name": "cancel_order", "arguments": {"code": "A-1"}}, CANCEL, False),  # exact: an argument more fails
    ({"name": "cancel_order", "arguments": {"code": "A-1"}, "match": "subset"}, CANCEL, True),
    ({"name": "cancel_order", "arguments": {"code": "A-2"}, "match": "subset"}, CANCEL, False),
    ({"name": "cancel_order", "arguments": {"code": "A-1", "reason": "x"}, "match": "keys", "keys": ["code"]},
     CANCEL, True),
    ({"name": "cancel_order", "arguments": {"code": "A-1", "reason": "x"}, "match": "keys",
      "keys": ["code", "reason"]}, CANCEL, False),
    ({"name": "cancel_order", "arguments": {"code": "A-1", "reason": "mistake"}},
     ("cancel_order", {"code": "A-1", "reason": "mistake"}, False), False),  # require counts successful calls
    ({"name": "refund", "match": "subset"}, CANCEL, False),
])
def test_a_required_call_pattern_matches_by_its_rule(pattern: dict, call: tuple, passed: bool) -> None:
    check = CallsCheck(require=[CallPattern.model_validate(pattern)])
    assert check.verdict(TurnView(calls=_calls(call)), []).passed is passed


def test_json_values_compare_by_value_but_booleans_only_with_booleans() -> None:
    assert same_value(2, 2.0) and same_value({"a": [1, "x"]}, {"a": [1.0, "x"]})
    assert not same_value(True, 1) and not same_value(1, "1") and not same_value([1, 2], [2, 1])
    check = CallsCheck(require=[CallPattern(name="f", arguments={"n": 2})])
    assert check.verdict(TurnView(calls=_calls(("f", {"n": 2.0}, True))), []).passed
    assert not check.verdict(TurnView(calls=_calls(("f", {"n": True}, True))), []).passed


def test_a_forbidden_pattern_counts_attempted_calls_and_leaves_other_arguments_alone() -> None:
    check = CallsCheck(forbid=[CallPattern(name="cancel_order", arguments={"code": "A-1"}, match="subset")])
    failed = ("cancel_order", {"code": "A-1"}, False)
    assert not check.verdict(TurnView(calls=_calls(failed)), []).passed  # tried, even though it failed
    assert check.verdict(TurnView(calls=_calls(("cancel_order", {"code": "B-2"}, True))), []).passed


def test_ordered_requires_the_items_in_their_order() -> None:
    check = CallsCheck(require=["get_order", "cancel_order"], ordered=True)
    right = _calls(("get_order", {}, True), ("cancel_order", {}, True))
    wrong = _calls(("cancel_order", {}, True), ("get_order", {}, True))
    assert check.verdict(TurnView(calls=right), []).passed
    v = check.verdict(TurnView(calls=wrong), [])
    assert not v.passed and "in this order" in v.detail
    assert CallsCheck(require=["get_order", "cancel_order"]).verdict(TurnView(calls=wrong), []).passed


def test_call_patterns_refuse_keys_that_make_no_sense() -> None:
    with pytest.raises(ValueError, match="needs 'keys'"):
        CallPattern(name="f", arguments={"a": 1}, match="keys")
    with pytest.raises(ValueError, match=r"keys \['b'\] have no value"):
        CallPattern(name="f", arguments={"a": 1}, match="keys", keys=["b"])
    with pytest.raises(ValueError, match="'keys' is for match 'keys'"):
        CallPattern(name="f", arguments={"a": 1}, keys=["a"])


def test_a_calls_check_catches_argument_mutants_only_when_its_patterns_pin_arguments() -> None:
    pinned = CallsCheck(require=[CallPattern(name="f", arguments={"a": 1})])
    assert pinned.catches("argument") and pinned.catches("retarget") and not pinned.catches("drop")
    assert not CallsCheck(require=["f"]).catches("argument")
    assert not CallsCheck(require=[CallPattern(name="f", match="subset")]).catches("argument")


def test_reply_scope_conversation_reads_every_message_of_the_agent() -> None:
    turn = ReplyContainsCheck(any_of=["37.50"])
    talk = ReplyContainsCheck(any_of=["37.50"], scope="conversation")
    said = [Said("The refund will be 37.50. Shall I go ahead?", "Yes, please go ahead.", True, 0)]
    view = TurnView("Done, it is cancelled.", said=said)
    assert not turn.verdict(view, []).passed
    v = talk.verdict(view, [])
    assert v.passed and "in the conversation" in v.detail
    assert talk.verdict(TurnView("Done.", history=["Your total was 37.50."]), []).passed  # an earlier turn
    assert not talk.verdict(TurnView("Done.", history=["Your total was 37.5001."]), []).passed


def test_reply_match_substring_finds_text_as_taus_evaluator_does() -> None:
    """``match: substring``: anywhere in a message, case-insensitive, the message's commas removed; a number or a
    list of the candidates is just text (τ²-bench's communicate rule), and no state is read."""
    text = ReplyContainsCheck(any_of=["Mastercard"], match="substring")
    answer = ReplyContainsCheck(any_of=["mastercard"])
    listing = TurnView("You paid with your mastercard, not your visa or amex.")
    held = [[("payment_methods.brand", ["mastercard", "visa", "amex"])]]
    assert text.verdict(listing, []).passed and text.probes(listing) == []
    assert not answer.verdict(listing, held).passed  # an answer may not list the candidates
    total = ReplyContainsCheck(any_of=["1234.5"], match="substring")
    assert total.verdict(TurnView("The total is $1,234.50."), []).passed  # commas removed, a prefix of 1234.50
    assert not ReplyContainsCheck(any_of=["1,234"], match="substring").verdict(TurnView("1,234"), []).passed
    talk = ReplyContainsCheck(any_of=["60"], scope="conversation", match="substring")
    view = TurnView("Done.", said=[Said("Your balance is 60. Shall I go ahead?", "Yes, please go ahead.", True, 0)])
    v = talk.verdict(view, [])
    assert v.passed and "as text in the conversation" in v.detail and "(as text)" in talk.summary()
    assert not ReplyContainsCheck(any_of=["60"], match="substring").verdict(view, []).passed  # the turn's reply


def test_confirmed_needs_a_confirmation_right_before_each_write() -> None:
    check = ConfirmedCheck(tools=["cancel_order"])
    yes = Said("Shall I cancel it?", "Yes, please go ahead.", True, 0)
    no = Said("Shall I cancel it?", "No, please don't.", False, 0)
    fact = Said("What is the order number?", "My order number is A-1.", False, 2)
    cancel = CallView("cancel_order", {"code": "A-1"}, True, 1)
    assert check.verdict(TurnView(said=[yes], calls=[cancel]), []).passed
    assert not check.verdict(TurnView(said=[no], calls=[cancel]), []).passed
    v = check.verdict(TurnView(calls=[cancel]), [])
    assert not v.passed and "nobody asked" in v.detail
    later = CallView("cancel_order", {"code": "A-1"}, True, 3)  # a question came between the yes and the write
    assert not check.verdict(TurnView(said=[yes, fact], calls=[cancel, later]), []).passed
    failed = CallView("cancel_order", {"code": "A-1"}, False, 1)  # an attempt counts, even one that failed
    assert not check.verdict(TurnView(calls=[failed]), []).passed
    assert check.verdict(TurnView(calls=[CallView("get_order", {}, True, 0)]), []).passed  # other tools are free
    assert check.verdict(TurnView(), []).passed and ConfirmedCheck.idle_passes


def test_calls_per_message_counts_the_calls_of_each_action() -> None:
    check = CallsPerMessageCheck(max=1)
    one_each = [CallView("a", {}, True, 0), CallView("b", {}, True, 1)]
    together = [CallView("a", {}, True, 0), CallView("b", {}, False, 0)]
    assert check.verdict(TurnView(calls=one_each), []).passed
    v = check.verdict(TurnView(calls=together), [])
    assert not v.passed and "2 tool calls" in v.detail
    assert check.max_calls_per_action() == 1
    with pytest.raises(ValueError):
        CallsPerMessageCheck(max=0)


def test_judged_is_never_scored_nor_catches_and_a_turn_needs_another_check() -> None:
    check = JudgedCheck(assertion="The agent apologised.")
    assert not check.scored and not check.catches("noop") and not check.catches("argument")
    results = judge(None, [check, ReplyContainsCheck(any_of=["7"])], TurnView("7 of them"))
    assert [(r.index, r.kind, r.passed) for r in results] == [(1, "reply_contains", True)]  # judged: not scored
    spec = lending_spec()
    spec["spec_version"] = 2
    spec["tasks"][1]["turns"][0]["checks"] = [{"kind": "judged", "assertion": "It names the author."}]
    with pytest.raises(SpecError, match="a turn needs a check that is scored"):
        parse_spec(spec)


def test_a_judges_answer_is_read_from_its_first_word() -> None:
    assert judge_verdict("YES, it did.") is True and judge_verdict("**No** - it never said so") is False
    assert judge_verdict("Maybe") is None
    chat = judge_prompt("The agent apologised.", [("user", "Hi"), ("assistant", "Sorry!")])
    assert "[assistant] Sorry!" in chat[1]["content"] and "The agent apologised." in chat[1]["content"]


def test_the_state_check_compares_each_named_table_digest() -> None:
    check = StateCheck(digests={"a": "1" * 64, "b": "2" * 64})
    assert check.probes(TurnView()) == [{"digests": ["a", "b"]}]
    assert check.verdict(TurnView(), [{"a": "1" * 64, "b": "2" * 64}]).passed
    v = check.verdict(TurnView(), [{"a": "1" * 64, "b": "3" * 64}])
    assert not v.passed and "['b']" in v.detail


@pytest.mark.parametrize(("check", "what"), [
    ({"kind": "confirmed", "tools": ["borrow_book"]}, "'confirmed' checks"),
    ({"kind": "calls_per_message", "max": 1}, "'calls_per_message' checks"),
    ({"kind": "judged", "assertion": "x"}, "'judged' checks"),
    ({"kind": "calls", "require": [{"name": "borrow_book", "match": "subset"}]}, "call patterns"),
    ({"kind": "calls", "require": ["borrow_book"], "ordered": True}, "'ordered'"),
    ({"kind": "reply_contains", "any_of": ["Dune"], "scope": "conversation"}, "'scope'"),
    ({"kind": "reply_contains", "any_of": ["Dune"], "match": "substring"}, "'match'"),
])
def test_a_v1_document_may_not_use_a_v2_check_feature(check: dict, what: str) -> None:
    spec = lending_spec()
    spec["tasks"][0]["turns"][0]["checks"].append(check)
    with pytest.raises(SpecError, match=f"spec_version 1 has no .*{what}.*set spec_version to 2"):
        parse_spec(spec)
    spec["spec_version"] = 2
    assert parse_spec(spec).tasks[0].turns[0].checks[-1].kind == check["kind"]


def test_a_check_names_only_the_specs_tools() -> None:
    spec = lending_spec()
    spec["spec_version"] = 2
    spec["tasks"][0]["turns"][0]["checks"].append({"kind": "confirmed", "tools": ["delete_book"]})
    with pytest.raises(SpecError, match=r"unknown tool names \['delete_book'\]"):
        parse_spec(spec)
    assert parse_check({"kind": "calls", "require": [{"name": "x", "arguments": {"a": 1}}]}).tool_names() == ["x"]

"""``envgen.realism.text``: the lexical rules (slugs, CRUD tool names, row ids in user text, turn skeletons),
each pinned both ways on examples."""

from __future__ import annotations

import pytest

from envgen.realism import Vocabulary, count_policy_rules, is_crud_tool, is_slug, names_row_id, skeleton
from envgen.realism.text import quoted_values, singular

SLUGS = ["number meadow", "readfunc raven", "parse_drift", "reader-iris", "super", "tls orchid"]
NOT_SLUGS = [
    "Bruschetta",  # a capitalised name
    "Ana Souza",  # a person
    "ana.souza@example.com",  # an email
    "2024-05-01",  # a date
    "SKU-1234", "W2378156", "#W2378156",  # codes
    "dressing on the side",  # a phrase of four words
    "no croutons",  # two words, one a function word: language, not a made-up name
    "/srv/pack/saffron", "canvas_ridge.txt",  # a path, a file name
    "reader iris delta",  # three words
    "reader2",  # a digit
    "", "   ",
]


@pytest.mark.parametrize("value", SLUGS)
def test_slugs_are_slugs(value: str) -> None:
    assert is_slug(value)


@pytest.mark.parametrize("value", NOT_SLUGS)
def test_real_looking_strings_are_not_slugs(value: str) -> None:
    assert not is_slug(value)


SHOP = Vocabulary.of(["orders", "order_items", "users", "products", "reservations", "queues"],
                     ["id", "status", "email", "name", "maxsize", "address"])
CRUD = ["update_order", "list_all_orders", "get_user_details", "find_user_id_by_email", "set_order_status",
        "getOrder", "delete_order_item", "update_queue_maxsize", "list", "modify_user_address", "search_products"]
NOT_CRUD = ["refund_order_item", "cancel_reservation", "modify_pending_order_address", "transfer_to_human_agents",
            "put_queue", "update_weather", "ship_order", "calculate"]


@pytest.mark.parametrize("name", CRUD)
def test_a_generic_verb_over_the_data_is_crud(name: str) -> None:
    assert is_crud_tool(name, SHOP)


@pytest.mark.parametrize("name", NOT_CRUD)
def test_a_domain_verb_or_a_word_beyond_the_data_is_not_crud(name: str) -> None:
    assert not is_crud_tool(name, SHOP)


def test_singular_forms() -> None:
    assert [singular(w) for w in ("orders", "categories", "boxes", "status", "address", "analysis")] == \
        ["order", "category", "box", "status", "address", "analysis"]


WRITERS = {"stream": frozenset({2, 7, 8}), "writer": frozenset({2, 7, 8})}  # writers have unique names too


@pytest.mark.parametrize("text", ["Archive the stream writers #2, #8 and #10.", "Move 385 from the event with id 8.",
                                  "Show record 8 please", "Fetch ID: 7 now", "Use writer #7"])
def test_explicit_row_ids_are_named(text: str) -> None:
    assert names_row_id(text, frozenset({2, 7, 8}), WRITERS)


@pytest.mark.parametrize("text", [
    "Table 4 just sat down with 3 guests.",  # table numbers are the table's only key: user-facing
    "Pay order 56 by card.", "Pay order #56 by card.",
    "You received your order #W2378156.",  # a text key
    "Item #99 please",  # 99 is no row of the environment
    "Exchange it to item ID 4107812777.",  # not one of the integer keys: τ²'s item ids are text keys
])
def test_user_facing_numbers_are_not_row_ids(text: str) -> None:
    assert not names_row_id(text, frozenset({1, 2, 3, 4, 56}), {"table": frozenset(), "order": frozenset()})


def test_a_surrogate_key_named_by_its_noun_is_a_row_id() -> None:
    surrogate = {"item": frozenset({3, 12})}  # menu items have unique names: their numbers are surrogates
    assert names_row_id("Add 2 Margherita pizzas (item 12).", frozenset({3, 12}), surrogate)
    assert names_row_id("add Items 3", frozenset({3, 12}), surrogate)
    assert not names_row_id("Add item 7.", frozenset({3, 12}), surrogate)
    assert not names_row_id("Add 2 Margherita pizzas.", frozenset({3, 12}), surrogate)


def test_without_tables_every_explicit_id_counts() -> None:
    assert names_row_id("Close ticket id 5.", None) and names_row_id("Close #5", None)
    assert not names_row_id("Order 12345 arrived.", None)


def test_skeletons_mask_values_and_the_data_words() -> None:
    writers = Vocabulary.of(["stream_writers", "writer_groups"], ["name", "label", "protocol"], ["path-dune"])
    browsers = Vocabulary.of(["module_browsers", "browser_folders"], ["path", "label"], ["/srv/a"])
    a = skeleton("Move the stream writer 'path-dune' to the writer group named 'tls-orchid'.", writers)
    b = skeleton("Move the module browser '/srv/a' to the browser folder named 'garnet'.", browsers)
    assert a == b == "move the <e> <str> to the <e> named <str> ."
    assert skeleton("Email ana@example.com on 2024-05-01 at 09:30 about 3 orders #7", SHOP) == \
        "<f> <email> on <date> at <time> about <num> <e> <id>"
    unquoted = Vocabulary.of(["menu_items"], ["name"], ["Margherita pizza"])
    assert skeleton("Add 2 Margherita pizzas please", unquoted) == "add <num> <key> please"
    assert skeleton("Cancel the order", SHOP) != skeleton("Refund the order", SHOP)


def test_quoted_values_skip_apostrophes_inside_words() -> None:
    assert quoted_values("What's the name of 'x y'? It's \"z\" and “w”.") == ["x y", "z", "w"]


def test_policy_rules_are_counted_from_lists_objects_and_text() -> None:
    class Policy:
        rules = ["a", "b", "c"]

    text = ("You must authenticate the user first. The store sells shoes. You should not give advice.\n"
            "- Never refund a delivered order.\n- Orders ship from Denver.")
    assert count_policy_rules(None) == 0 and count_policy_rules(["x", "y"]) == 2
    assert count_policy_rules(Policy()) == 3 and count_policy_rules({"rules": ["a"]}) == 1
    assert count_policy_rules(text) == 3

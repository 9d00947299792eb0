"""Stateful scores and identifiers."""

from __future__ import annotations

import pytest

from corpora import analyze, identifiers, method_category, snake_case, stateful_classes, stateful_score

from .conftest import PLAIN_SOURCE, STATEFUL_SOURCE, make_doc


def test_stateful_class_scores() -> None:
    doc = make_doc(STATEFUL_SOURCE)
    (inventory,) = stateful_classes(doc)
    assert inventory.name == "Inventory"
    assert inventory.crud == {
        "create": ("add_item",),
        "delete": ("remove_item",),
        "read": ("get_item",),
        "update": ("update_item",),
    }
    assert inventory.state == ("items",)
    assert inventory.mutating == ("add_item", "update_item", "remove_item")
    assert inventory.score == pytest.approx(4 + 4 / 8 + 0.5)
    assert stateful_score(doc) == pytest.approx(5.0)


def test_classes_without_crud_or_state_score_zero() -> None:
    assert stateful_score(make_doc(PLAIN_SOURCE)) == 0.0  # Point keeps state but has no CRUD method
    no_state = "class Reader:\n    def get(self, k):\n        return k\n"
    assert stateful_score(make_doc(no_state)) == 0.0


def test_dunder_containers_and_cls_state_count() -> None:
    text = (
        "class Bag:\n"
        "    _all = []\n"
        "    def __setitem__(self, k, v):\n        self._data[k] = v\n"
        "    def __getitem__(self, k):\n        return self._data[k]\n"
        "    @classmethod\n"
        "    def register(cls, x):\n        cls._all.append(x)\n"
    )
    (bag,) = stateful_classes(make_doc(text))
    assert set(bag.crud) == {"update", "read", "create"}
    assert bag.state == ("_all", "_data")


def test_document_score_sums_the_three_best_classes() -> None:
    one = "    def add(self, x):\n        self.items.append(x)\n"
    text = "".join(f"class C{i}:\n{one}" for i in range(5))
    assert len(stateful_classes(make_doc(text))) == 5
    assert stateful_score(make_doc(text)) == pytest.approx(3 * (1 + 1 / 8 + 0.5))


def test_syntax_errors_and_other_languages_are_data() -> None:
    broken = make_doc("class A(:\n    def get_x(self): self.x = 1\n")
    assert stateful_score(broken) == 0.0
    assert not analyze(broken).parsed
    assert "get_x" in identifiers(broken)
    js = make_doc(
        "class ShoppingCart {\n addItem(x) { this.itemCount += 1; }\n}\nfunction checkOut() {}\n", path="a.js"
    )
    assert stateful_score(js) == pytest.approx(1.25)  # one CRUD method that changes its state, as in Python
    assert {"shopping_cart", "item_count", "check_out"} <= identifiers(js)
    only_set_up = make_doc("class Point {\n constructor(x) { this.x = x; }\n getX() { return this.x; }\n}\n",
                           path="p.js")
    assert stateful_score(only_set_up) == 0.0  # state assigned once, never changed by a method


def test_identifiers_are_snake_case_without_dunders() -> None:
    names = identifiers(make_doc(STATEFUL_SOURCE))
    assert {"inventory", "add_item", "get_item", "update_item", "remove_item", "items", "helper"} <= names
    assert "init" not in names and "__init__" not in names
    fields = identifiers(
        make_doc(
            "class HTTPServer:\n    maxConnections: int = 3\n"
            "    def getName(self):\n        return self._cache\n"
        )
    )
    assert fields == {"http_server", "max_connections", "get_name", "cache"}


@pytest.mark.parametrize(
    ("name", "category"),
    [
        ("add_item", "create"),
        ("getName", "read"),
        ("_remove", "delete"),
        ("update", "update"),
        ("__delitem__", "delete"),
        ("__repr__", None),
        ("compute", None),
    ],
)
def test_method_category(name: str, category: str | None) -> None:
    assert method_category(name) == category


def test_snake_case() -> None:
    assert snake_case("XMLParser") == "xml_parser"
    assert snake_case("__private__name") == "private_name"


def test_one_verb_table_each_word_once() -> None:
    """corpora.verbs is the one verb list: analysis' CRUD categories (and envgen's template operations) read it."""
    from corpora.verbs import CRUD_CATEGORIES, OPERATIONS, VERBS, verb_category, verb_operation

    words = [w for _, _, ws in VERBS for w in ws]
    assert len(words) == len(set(words))  # no word in two rows
    assert {c for c, _, _ in VERBS} == set(CRUD_CATEGORIES) and {o for _, o, _ in VERBS} == {*OPERATIONS, None}
    assert (verb_category("cancel"), verb_operation("cancel")) == ("delete", "status")
    assert (verb_category("close"), verb_operation("close")) == ("update", "status")
    assert (verb_category("has"), verb_operation("has")) == ("read", None)  # a question: no tool of its own
    assert (verb_category("sort"), verb_operation("sort")) == ("update", None)
    assert method_category("cancel_order") == "delete" and method_category("has_key") == "read"
    assert verb_operation("compute") is None and verb_category("compute") is None


# Small realistic sources in the languages the llm proposer reads: each keeps state in a type and changes
# it in methods (the way that language does), so each is stateful; each "reader" twin only reads its state.
STATEFUL_SOURCES = {
    "go": ("store.go", """package store

import "errors"

type Bank struct {
	accounts map[string]int64
}

func NewBank() *Bank { return &Bank{accounts: map[string]int64{}} }

// Open opens an account.
func (b *Bank) Open(id string) error {
	if _, ok := b.accounts[id]; ok {
		return errors.New("exists")
	}
	b.accounts[id] = 0
	return nil
}

func (b *Bank) Deposit(id string, amount int64) { b.accounts[id] += amount }
"""),
    "rust": ("lib.rs", """use std::collections::HashMap;

pub struct Inventory { items: HashMap<String, u32> }

impl Inventory {
    pub fn new() -> Self { Inventory { items: HashMap::new() } }
    pub fn add_stock(&mut self, sku: &str, qty: u32) {
        *self.items.entry(sku.to_string()).or_insert(0) += qty;
    }
    pub fn remove_stock(&mut self, sku: &str, qty: u32) -> Result<(), String> {
        match self.items.get_mut(sku) {
            Some(n) if *n >= qty => { *n -= qty; Ok(()) }
            _ => Err("insufficient stock".into()),
        }
    }
}
"""),
    "java": ("Library.java", """package com.acme;

import java.util.HashMap;
import java.util.Map;

/** A lending library. */
public class Library {
    private final Map<String, String> books = new HashMap<>();
    private final Map<String, String> loans = new HashMap<>();

    public void addBook(String isbn, String title) { books.put(isbn, title); }

    public void lend(String isbn, String member) {
        if (loans.containsKey(isbn)) throw new IllegalStateException("already lent");
        loans.put(isbn, member);
    }
}
"""),
    "ruby": ("hotel.rb", """# A hotel.
class Hotel
  def initialize
    @rooms = {}
  end

  def add_room(number, beds)
    @rooms[number] = beds
  end

  def book(number, guest)
    raise "no room" unless @rooms.key?(number)
  end
end
"""),
    "typescript": ("cart.ts", """export class Cart {
  private items = new Map<string, number>();

  add(sku: string, qty: number): void {
    this.items.set(sku, (this.items.get(sku) ?? 0) + qty);
  }

  checkout(): number { return this.items.size; }
}
"""),
    "cpp": ("cache.hpp", """#pragma once
#include <string>
#include <unordered_map>
/// An LRU cache.
class Cache {
 public:
  explicit Cache(size_t cap);
  bool put(const std::string& key, const std::string& value);
  void evict(const std::string& key);
 private:
  size_t cap_;
  std::unordered_map<std::string, std::string> map_;
};
"""),
    "c": ("queue.h", """#ifndef QUEUE_H
#define QUEUE_H
#include <stddef.h>
typedef struct queue queue_t;
queue_t *queue_create(size_t capacity);
int queue_push(queue_t *q, int job);   /* -1 when full */
size_t queue_len(const queue_t *q);
#endif
"""),
}

READER_SOURCES = {
    "go": ("store.go", "package store\n\ntype Bank struct {\n\taccounts map[string]int64\n}\n\n"
                       "func (b *Bank) Get(id string) int64 { return b.accounts[id] }\n"),
    "java": ("Library.java", "public class Library {\n    private final String name;\n"
                             "    public Library(String name) { this.name = name; }\n"
                             "    public String getName() { return name; }\n}\n"),
    "ruby": ("hotel.rb", "class Hotel\n  def initialize\n    @rooms = {}\n  end\n\n"
                         "  def get_room(n)\n    @rooms[n]\n  end\nend\n"),
    "c": ("queue.h", "typedef struct queue queue_t;\nqueue_t *queue_create(size_t n);\n"
                     "size_t queue_len(const queue_t *q);\n"),
}


@pytest.mark.parametrize("language", sorted(STATEFUL_SOURCES))
def test_state_kept_by_a_type_and_changed_by_its_methods_counts_in_every_language(language: str) -> None:
    path, text = STATEFUL_SOURCES[language]
    doc = make_doc(text, path=path)
    assert doc.language == language
    assert stateful_score(doc) > 0.0, f"{language}: a type whose methods change its state scored 0"


@pytest.mark.parametrize("language", sorted(READER_SOURCES))
def test_state_that_no_method_changes_does_not_count(language: str) -> None:
    path, text = READER_SOURCES[language]
    assert stateful_score(make_doc(text, path=path)) == 0.0

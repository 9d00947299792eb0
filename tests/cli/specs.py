"""A small environment spec for the CLI tests: it passes every rule of the validity gate.

Written here (not taken from :mod:`gym_envs.examples`) so the CLI tests do not
depend on which examples ship.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

LENDING_CODE = '''
def find_book(db, title):
    rows = db.query("SELECT id, title, author, copies FROM books WHERE lower(title) = lower(?)", (title,))
    out = []
    for r in rows:
        out_now = db.query("SELECT count(*) AS n FROM loans WHERE book_id = ? AND returned_at IS NULL",
                           (r["id"],))[0]["n"]
        out.append({"id": r["id"], "title": r["title"], "author": r["author"],
                    "available": r["copies"] - out_now})
    return out


def borrow_book(db, member_id, book_id):
    if not db.query("SELECT id FROM members WHERE id = ?", (member_id,)):
        raise ToolError("no member with id " + str(member_id))
    book = db.query("SELECT copies FROM books WHERE id = ?", (book_id,))
    if not book:
        raise ToolError("no book with id " + str(book_id))
    n = db.query("SELECT count(*) AS n FROM loans WHERE book_id = ? AND returned_at IS NULL",
                 (book_id,))[0]["n"]
    if n >= book[0]["copies"]:
        raise ToolError("no copy of book " + str(book_id) + " is available")
    res = db.execute("INSERT INTO loans (member_id, book_id) VALUES (?, ?)", (member_id, book_id))
    return {"loan_id": res["lastrowid"]}


def list_loans(db, member_id):
    return db.query("SELECT l.id AS loan_id, b.title FROM loans l JOIN books b ON b.id = l.book_id "
                    "WHERE l.member_id = ? AND l.returned_at IS NULL ORDER BY l.id", (member_id,))
'''

LENDING_SPEC: dict[str, Any] = {
    "spec_version": 1,
    "id": "cli-test.lending",
    "title": "Lending Desk",
    "description": "A small library's lending desk: books, members and loans.",
    "provenance": {"generator": "manual", "stream": "manual"},
    "state": {
        "schema_sql": (
            "CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT NOT NULL, author TEXT NOT NULL, "
            "copies INTEGER NOT NULL);\n"
            "CREATE TABLE members (id INTEGER PRIMARY KEY, name TEXT NOT NULL);\n"
            "CREATE TABLE loans (id INTEGER PRIMARY KEY, member_id INTEGER NOT NULL, "
            "book_id INTEGER NOT NULL, returned_at TEXT);"
        ),
        "seed_sql": (
            "INSERT INTO books VALUES (1, 'Emma', 'Jane Austen', 1), (2, 'Ulysses', 'James Joyce', 2), "
            "(3, 'Dune', 'Frank Herbert', 2);\n"
            "INSERT INTO members VALUES (7, 'Ada'), (8, 'Grace');\n"
            "INSERT INTO loans (member_id, book_id, returned_at) VALUES (7, 1, NULL);"
        ),
    },
    "tools": [
        {"name": "find_book", "description": "Find books by exact title (case-insensitive).",
         "parameters": {"type": "object",
                        "properties": {"title": {"type": "string", "description": "Title."}},
                        "required": ["title"]}},
        {"name": "borrow_book", "description": "Lend a book to a member.",
         "parameters": {"type": "object", "properties": {"member_id": {"type": "integer"},
                                                         "book_id": {"type": "integer"}},
                        "required": ["member_id", "book_id"]}},
        {"name": "list_loans", "description": "A member's open loans.",
         "parameters": {"type": "object", "properties": {"member_id": {"type": "integer"}},
                        "required": ["member_id"]}},
    ],
    "code": LENDING_CODE,
    "tasks": [
        {"id": "borrow", "kind": "read_then_write", "turns": [
            {"instruction": "Member 7 wants to borrow 'Dune'. Do it.",
             "checks": [{"kind": "sql", "query": "SELECT count(*) FROM loans WHERE member_id = 7 "
                                                 "AND book_id = 3 AND returned_at IS NULL", "expect": [[1]]},
                        {"kind": "sql", "query": "SELECT count(*) FROM loans", "expect": [[2]]}],
             "reference": [{"name": "find_book", "arguments": {"title": "Dune"}},
                           {"name": "borrow_book", "arguments": {"member_id": 7, "book_id": 3}}]},
            {"instruction": "How many books does member 7 have out now?",
             "checks": [{"kind": "reply_contains", "any_of": ["2", "two"]},
                        {"kind": "unchanged", "tables": []}],
             "reference": [{"name": "list_loans", "arguments": {"member_id": 7}}]},
        ]},
        {"id": "author", "kind": "read", "turns": [
            {"instruction": "Who wrote 'Ulysses'?",
             "checks": [{"kind": "reply_contains", "any_of": ["Joyce"]}, {"kind": "unchanged", "tables": []}],
             "reference": [{"name": "find_book", "arguments": {"title": "Ulysses"}}]},
        ]},
    ],
}


def lending_spec() -> dict[str, Any]:
    """A fresh deep copy of the good spec (tests may mutate it)."""
    return copy.deepcopy(LENDING_SPEC)


def write_spec(path: Path, spec: dict[str, Any]) -> Path:
    path.write_text(json.dumps(spec, indent=2), encoding="utf-8")
    return path

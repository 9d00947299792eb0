"""Shared fixtures for the corpora tests: small source trees and The Stack-style records."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from corpora import Document
from corpora.loaders import registry

STATEFUL_SOURCE = '''"""An inventory of items."""

import json


class Inventory:
    """Items in stock."""

    def __init__(self):
        self.items = {}

    def add_item(self, name, qty):
        self.items[name] = qty

    def get_item(self, name):
        return self.items[name]

    def update_item(self, name, qty):
        self.items[name] = qty

    def remove_item(self, name):
        del self.items[name]


def helper(x):
    return json.dumps(x)
'''

PLAIN_SOURCE = '''"""Pure functions only."""


def double(x):
    return 2 * x


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def norm(self):
        return (self.x**2 + self.y**2) ** 0.5
'''


def make_doc(text: str, path: str = "mod.py", corpus: str = "t", language: str | None = None) -> Document:
    """A document built the way loaders build them."""
    return Document.create(text, corpus=corpus, path=path, language=language)


@pytest.fixture
def source_tree(tmp_path: Path) -> Path:
    """A small project: Python, JavaScript, a README, a binary, caches and a nested package."""
    root = tmp_path / "proj"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "__pycache__").mkdir()
    (root / "node_modules" / "dep").mkdir(parents=True)
    (root / "inventory.py").write_text(STATEFUL_SOURCE)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "plain.py").write_text(PLAIN_SOURCE)
    (root / "pkg" / "sub" / "app.js").write_text("function main() { return 1; }\r\n")
    (root / "README.md").write_text("# Project\n")
    (root / "data.bin").write_bytes(b"\x00\x01\x02")
    (root / "blob.py").write_bytes(b"x = 1\x00\x00")
    (root / "__pycache__" / "inventory.cpython-311.py").write_text("cached = True\n")
    (root / "node_modules" / "dep" / "index.js").write_text("module.exports = 1;\n")
    (root / "latin.py").write_bytes("# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n".encode("latin-1"))
    return root


@pytest.fixture
def stack_records() -> list[dict[str, object]]:
    """Records with The Stack's column names."""
    return [
        {"content": STATEFUL_SOURCE, "path": "src/inventory.py", "lang": "Python", "repo": "a/b", "stars": 3},
        {"content": PLAIN_SOURCE, "path": "src/plain.py", "lang": "Python", "repo": "a/b", "stars": 3},
        {
            "content": "int main() { return 0; }\n",
            "path": "main.cpp",
            "lang": "C++",
            "repo": "c/d",
            "stars": 0,
        },
    ]


@pytest.fixture
def clean_registry() -> Iterator[None]:
    """Remove loaders a test registers, keeping the built-ins."""
    before = set(registry.loader_names())
    yield
    for name in set(registry.loader_names()) - before:
        registry.LOADERS.unregister(name)

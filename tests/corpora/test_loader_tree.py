"""The tree loader."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpora import CorpusError, load_corpus
from corpora.loaders.tree import DEFAULT_EXCLUDE, compile_glob


def test_tree_loads_known_text_files_in_sorted_order(source_tree: Path) -> None:
    docs = list(load_corpus(str(source_tree)))
    assert [d.path for d in docs] == [
        "README.md",
        "inventory.py",
        "latin.py",
        "pkg/__init__.py",
        "pkg/plain.py",
        "pkg/sub/app.js",
    ]
    by_path = {d.path: d for d in docs}
    assert by_path["inventory.py"].id == "proj:inventory.py"
    assert by_path["pkg/sub/app.js"].language == "javascript"
    assert by_path["pkg/sub/app.js"].text == "function main() { return 1; }\n"  # CRLF normalised
    assert "café" in by_path["latin.py"].text  # PEP 263 cookie honoured
    assert by_path["README.md"].language == "markdown"


def test_tree_is_deterministic(source_tree: Path) -> None:
    first = [(d.id, d.sha256) for d in load_corpus(str(source_tree))]
    assert first == [(d.id, d.sha256) for d in load_corpus("tree:" + str(source_tree))]


def test_tree_globs_languages_and_options(source_tree: Path) -> None:
    py = [d.path for d in load_corpus(str(source_tree), include="*.py", corpus="mine")]
    assert py == ["inventory.py", "latin.py", "pkg/__init__.py", "pkg/plain.py"]
    nested = [d.path for d in load_corpus(str(source_tree), include=["pkg/**/*.py"])]
    assert nested == ["pkg/__init__.py", "pkg/plain.py"]
    js = [d.id for d in load_corpus(str(source_tree), languages=["JavaScript"], corpus="c")]
    assert js == ["c:pkg/sub/app.js"]
    no_pkg = [d.path for d in load_corpus(str(source_tree), exclude=(*DEFAULT_EXCLUDE, "pkg", "*.md"))]
    assert no_pkg == ["inventory.py", "latin.py"]
    everything = [d.path for d in load_corpus(str(source_tree), exclude=())]  # replaces the defaults
    assert "__pycache__/inventory.cpython-311.py" in everything and "node_modules/dep/index.js" in everything
    small = [d.path for d in load_corpus(str(source_tree), max_bytes=20)]
    assert "inventory.py" not in small and "README.md" in small


def test_tree_config_errors(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="not a directory"):
        load_corpus("tree:" + str(tmp_path / "nope"))
    with pytest.raises(CorpusError, match="max_bytes"):
        load_corpus(str(tmp_path), max_bytes=0)


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a/b/c.py", True),
        ("*.py", "a/b/c.pyc", False),
        ("a/*.py", "a/b/c.py", False),
        ("a/**/*.py", "a/b/c.py", True),
        ("a/**/*.py", "a/c.py", True),
        ("**/test_*.py", "x/test_a.py", True),
        ("[!_]*.py", "_private.py", False),
        ("?.py", "ab.py", False),
    ],
)
def test_compile_glob(pattern: str, path: str, expected: bool) -> None:
    assert compile_glob(pattern)(path) is expected

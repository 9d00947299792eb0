"""The tree loader."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from corpora import CorpusError, load_corpus
from corpora.loaders.tree import DEFAULT_EXCLUDE, TreeConfig, compile_glob, explain_tree, skip_reason


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


def _in_thread(fn: Callable[[], object], seconds: float = 20.0) -> object:
    """``fn()``'s result, failing (instead of hanging the suite) when it blocks for ``seconds``."""
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(fn()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"blocked for {seconds}s (a named pipe was opened?)"
    return result[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes need POSIX")
def test_a_named_pipe_is_skipped_unopened_and_counted(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    os.mkfifo(tmp_path / "pipe.py")  # opening it for reading would block until a writer comes
    docs = _in_thread(lambda: [d.path for d in load_corpus(str(tmp_path))])
    assert docs == ["a.py"]
    assert skip_reason(tmp_path / "pipe.py", max_bytes=1000) == "not a regular file (a named pipe)"
    why = _in_thread(lambda: explain_tree(TreeConfig(root=tmp_path)))
    assert why == f"{tmp_path} holds 2 files; 1 skipped as not a regular file: pipe.py (a named pipe)"
    with pytest.raises(CorpusError, match="neither a regular file nor a directory"):
        load_corpus("jsonl:" + str(tmp_path / "pipe.py"))

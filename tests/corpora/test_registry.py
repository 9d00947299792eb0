"""The loader registry: names, duplicates, suggestions, options."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import pytest

from corpora import (
    CorpusError,
    Document,
    LoaderOptions,
    UnknownNameError,
    get_loader,
    load_corpus,
    loader_names,
    register_loader,
)
from corpora.builtin import BUILTIN_LOADERS


@dataclass(kw_only=True)
class EchoConfig:
    source_field: ClassVar[str | None] = "text"
    text: str
    times: int = 1


def test_builtins_are_registered() -> None:
    assert set(BUILTIN_LOADERS) <= set(loader_names())
    entry = get_loader("jsonl")
    assert "text_field" in entry.options()
    assert entry.summary


@pytest.mark.usefixtures("clean_registry")
def test_custom_loader_is_reachable_by_spec() -> None:
    @register_loader("echo", config=EchoConfig)
    def load_echo(config: EchoConfig) -> Iterator[Document]:
        """Repeat a text."""
        for i in range(config.times):
            yield Document.create(config.text, corpus="echo", path=f"{i}.txt")

    docs = list(load_corpus("echo:hello", times=2))
    assert [d.id for d in docs] == ["echo:0.txt", "echo:1.txt"]
    assert docs[0].text == "hello"
    assert get_loader("echo").summary == "Repeat a text."


@pytest.mark.usefixtures("clean_registry")
def test_duplicates_are_refused() -> None:
    with pytest.raises(CorpusError, match="already registered"):
        register_loader("stdlib", config=EchoConfig)(lambda c: [])
    register_loader("echo2", config=EchoConfig)(lambda c: [])
    with pytest.raises(CorpusError, match="already registered"):
        register_loader("echo2", config=EchoConfig)(lambda c: [])


@pytest.mark.parametrize("name", ["", "x", "Bad", "9x", "a b", "a:b"])
def test_malformed_names_are_refused(name: str) -> None:
    with pytest.raises(CorpusError, match="must match"):
        register_loader(name, config=EchoConfig)


def test_config_must_be_a_dataclass_with_source_field() -> None:
    class NotADataclass:
        source_field = None

    with pytest.raises(CorpusError, match="dataclass"):
        register_loader("nope", config=NotADataclass)


def test_typo_gets_a_suggestion() -> None:
    with pytest.raises(UnknownNameError, match="did you mean 'stdlib'"):
        get_loader("stdlb")
    with pytest.raises(UnknownNameError, match="registered: "):
        get_loader("zzzzzz")


def test_unknown_option_gets_a_suggestion() -> None:
    with pytest.raises(UnknownNameError, match="did you mean 'max_bytes'"):
        load_corpus("stdlib", max_byte=10)


def test_source_given_twice_or_to_a_sourceless_loader() -> None:
    with pytest.raises(CorpusError, match="takes no source"):
        load_corpus("stdlib:/tmp")
    with pytest.raises(CorpusError, match="given twice"):
        load_corpus("jsonl:/a.jsonl", path="/b.jsonl")


@pytest.mark.usefixtures("clean_registry")
def test_loader_without_config_class_gets_loader_options() -> None:
    @register_loader("plain")
    def load_plain(config: LoaderOptions) -> list[Document]:
        return [Document.create(f"{config.source} {config.options}", corpus="plain", path="x.txt")]

    (doc,) = load_corpus("plain:src", anything=1)
    assert doc.text == "src {'anything': 1}"


def test_loader_that_needs_a_source_says_so() -> None:
    with pytest.raises(CorpusError, match=r"needs a source: use the spec 'tree:<root>'"):
        load_corpus("tree")

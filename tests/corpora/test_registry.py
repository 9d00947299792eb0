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


# -- the one Registry implementation (corpus loaders here; proposers, backends, policies, suites above) --
def test_registry_entry_points_are_lazy_and_cached() -> None:
    import sys

    from corpora.registry import Registry

    reg: Registry[object] = Registry("widget")
    reg.register("json-dumps", "json.decoder:JSONDecoder.decode")
    reg.register("plain", 42)
    assert reg.names() == ["json-dumps", "plain"] and "plain" in reg and "nope" not in reg
    import json.decoder

    assert reg.get("json-dumps") is json.decoder.JSONDecoder.decode and reg.get("plain") == 42
    reg2: Registry[object] = Registry("widget")
    reg2.register("never", "corpora_no_such_module_xyz:thing")
    assert "corpora_no_such_module_xyz" not in sys.modules  # nothing imported until get()
    with pytest.raises(CorpusError, match="does not import"):
        reg2.get("never")


def test_registry_refusals_and_suggestions() -> None:
    from corpora.errors import RegistryError
    from corpora.registry import Registry

    reg: Registry[object] = Registry("widget")
    entry = object()
    reg.register("alpha", entry)
    reg.register("alpha", entry)  # the same object again (a module imported twice) is fine
    with pytest.raises(RegistryError, match="already registered"):
        reg.register("alpha", object())
    with pytest.raises(RegistryError, match="must match"):
        reg.register("Alpha", object())
    with pytest.raises(RegistryError, match="entry point"):
        reg.register("beta", "not an entry point")
    with pytest.raises(KeyError, match=r"unknown widget 'alpah'; did you mean 'alpha'\? \(registered: alpha\)"):
        reg.get("alpah")  # an UnknownNameError is a KeyError (and a CorpusError) with a readable str
    try:
        reg.get("alpah")
    except UnknownNameError as e:
        assert str(e).startswith("unknown widget") and isinstance(e, CorpusError)

    @reg.register("gamma")
    def gamma() -> str:
        return "g"

    assert reg.get("gamma") is gamma
    reg.unregister("gamma")
    assert "gamma" not in reg


def test_builtin_loaders_do_not_import_their_modules_until_used() -> None:
    import subprocess
    import sys

    code = ("import sys, corpora; from corpora.loaders.registry import LOADERS; e = LOADERS.get('npm'); "
            "print(sorted(LOADERS.names())); print('corpora.loaders.npm' in sys.modules); "
            "e.fn; print('corpora.loaders.npm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": ":".join(sys.path)}).stdout.split("\n")
    assert out[:3] == [str(sorted(BUILTIN_LOADERS)), "False", "True"]


def test_did_you_mean_suggests_close_names_and_prefixes() -> None:
    from corpora.errors import did_you_mean

    assert did_you_mean("stdlb", ["stdlib", "tree"]) == "; did you mean 'stdlib'?"
    assert did_you_mean("zzz", ["stdlib"]) == ""
    assert did_you_mean("gen", ["generate", "list"], n=1) == "; did you mean 'generate'?"
    assert did_you_mean("b", ["bench", "list"]) == "; did you mean 'bench'?"  # a prefix counts too
    assert did_you_mean("hepl", ["help"], show=lambda c: f":{c}") == "; did you mean :help?"

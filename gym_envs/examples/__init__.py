"""Hand-written example environments, shipped as package data.

Each ``*.json`` file next to this module is one environment spec (``spec_version``
1 or 2, the contract in ``gym_envs/ENVSPEC.md``) written by a person, not a
proposer: ``provenance.generator`` is ``"manual"`` and ``source`` is null. Every
example passes the validity gate (:func:`envgen.gate.validate_spec`), and
together they use every task kind, every check kind and the scripted user
(``shop-support``'s scenario tasks), so they serve as smoke
tests of the runtime, as worked examples for proposers and as a small built-in
suite. The file name is the spec id::

    from gym_envs.examples import list_examples, load_example

    list_examples()                 # ['bank-ledger', 'calendar-scheduling', ...]
    spec = load_example("bank-ledger")

The specs are data: this module only finds and parses them.
"""

from __future__ import annotations

from pathlib import Path

from corpora.errors import did_you_mean
from gym_envs.spec import EnvSpec, load_spec

__all__ = ["EXAMPLES_DIR", "UnknownExample", "example_path", "list_examples", "load_all", "load_example"]

EXAMPLES_DIR: Path = Path(__file__).resolve().parent
"""The folder that holds the example specs (``<id>.json``)."""


class UnknownExample(KeyError):
    """No example has that name; the message suggests close matches."""

    def __str__(self) -> str:  # KeyError would print the message with quotes around it
        return str(self.args[0]) if self.args else "unknown example"


def list_examples() -> list[str]:
    """The names (spec ids) of the shipped examples, sorted."""
    return sorted(p.stem for p in EXAMPLES_DIR.glob("*.json"))


def example_path(name: str) -> Path:
    """The JSON file of example ``name`` (a trailing ``.json`` is accepted).

    Raises :class:`UnknownExample` (a ``KeyError``) naming the closest matches when
    there is no such example.
    """
    names = list_examples()
    stem = name.removesuffix(".json")
    if stem in names:
        return EXAMPLES_DIR / f"{stem}.json"
    hint = did_you_mean(stem, names, cutoff=0.5)
    raise UnknownExample(f"no example environment {name!r}{hint} (examples: {', '.join(names)})")


def load_example(name: str) -> EnvSpec:
    """Parse example ``name`` into a fresh :class:`EnvSpec` (raises ``SpecError`` if it is invalid)."""
    return load_spec(example_path(name))


def load_all() -> list[EnvSpec]:
    """Every example, in :func:`list_examples` order."""
    return [load_example(n) for n in list_examples()]

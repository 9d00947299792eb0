"""Teaching pairs for the proposer warm start: a document's prompt and an AST writer's answer, per structure.

An AST writer is the model's teacher: for every document it can read, the pair is (the prompt the model
proposer sends for the structure, the writer's blueprint as compact JSON), the exact prompt the model
sees at inference and the exact layout constrained decoding produces. :data:`TAUGHT_STRUCTURES` names the two:

* ``blueprint`` (blueprint_version 1): :func:`~envgen.proposers.template.prompt.build_blueprint_messages`
  and the template AST writer (:func:`~envgen.proposers.template.writer.write_blueprint`), which reads
  Python only;
* ``world`` (blueprint_version 2): :func:`~envgen.proposers.world.prompt.build_world_messages` and the AST
  world writer (:func:`~envgen.proposers.world.writer.write_world`), a catalog domain with the document's
  operations grafted on (a document whose code it cannot read still gets the domain).

:func:`split_documents` is the one split both the trainer (``envwright train
proposer``) and the benchmark (``envwright bench proposer``) use, so held-out
documents stay held out: a seeded hash of each document id decides, so adding
documents to a corpus never moves an old one between the sides (and the split does not depend on the
structure).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from envgen.errors import TemplateError
from gym_envs.seeding import stable_seed

__all__ = ["TAUGHT_STRUCTURES", "TeachingPair", "split_documents", "teaching_pairs"]

TAUGHT_STRUCTURES = ("blueprint", "world")
"""The structures of :data:`envgen.structure.STRUCTURES` that an AST writer teaches (a whole spec has none)."""

TokenCounter = Callable[[str], int]


@dataclass
class TeachingPair:
    """One supervised example of a blueprint stream."""

    doc_id: str
    messages: list[dict[str, str]]  #: the prompt (system + user)
    target: str  #: the blueprint JSON the model should write


def _bucket(doc_id: str, seed: int) -> float:
    return stable_seed(seed, doc_id) / 2**31


def split_documents(docs: Sequence[Any], holdout: float, seed: int = 0) -> tuple[list[Any], list[Any]]:
    """``(train, held_out)``: a document is held out when its seeded hash falls below ``holdout`` (a share)."""
    if not 0.0 <= holdout < 1.0:
        raise ValueError(f"holdout must be a share in [0, 1), got {holdout}")
    train: list[Any] = []
    held: list[Any] = []
    for d in docs:
        (held if _bucket(str(d.id), seed) < holdout else train).append(d)
    return train, held


def _teacher(structure: str) -> tuple[Callable[[Any, int], str],
                                      Callable[[Any, int, TokenCounter | None], list[dict[str, str]]]]:
    """``(answer(doc, seed), prompt(doc, excerpt_tokens, counter))`` of a structure."""
    if structure == "blueprint":
        from envgen.proposers.template.prompt import build_blueprint_messages
        from envgen.proposers.template.writer import write_blueprint

        return (lambda d, seed: write_blueprint(d, seed).blueprint.to_json(),
                lambda d, n, counter: build_blueprint_messages(d, excerpt_tokens=n, counter=counter))
    if structure == "world":
        from envgen.proposers.world.prompt import build_world_messages
        from envgen.proposers.world.writer import write_world

        return (lambda d, seed: write_world(d, seed).blueprint.to_json(),
                lambda d, n, counter: build_world_messages(d, excerpt_tokens=n, counter=counter))
    raise ValueError(f"unknown structure {structure!r}: choose one of {', '.join(TAUGHT_STRUCTURES)}")


def teaching_pairs(docs: Iterable[Any], *, seed: int = 0, excerpt_tokens: int = 900,
                   counter: TokenCounter | None = None,
                   structure: str = "blueprint") -> tuple[list[TeachingPair], list[str]]:
    """Pairs of ``structure`` (:data:`TAUGHT_STRUCTURES`) for every document its AST writer can read; also the ids of
    those it cannot (no blueprint)."""
    answer, prompt = _teacher(structure)
    pairs: list[TeachingPair] = []
    skipped: list[str] = []
    for d in docs:
        try:
            target = answer(d, seed)
        except TemplateError:
            skipped.append(str(d.id))
            continue
        pairs.append(TeachingPair(str(d.id), prompt(d, excerpt_tokens, counter), target))
    return pairs, skipped

"""Teaching pairs for the proposer warm start: a document's blueprint prompt and the AST writer's answer.

The AST writer is the model's teacher: for every document it can read, the
pair is (:func:`~envgen.proposers.template.prompt.build_blueprint_messages` of the
document, the writer's blueprint as compact JSON), the exact prompt the model
proposer sends and the exact layout constrained decoding produces.

:func:`split_documents` is the one split both the trainer (``envwright train
proposer``) and the benchmark (``envwright bench proposer``) use, so held-out
documents stay held out: a seeded hash of each document id decides, so adding
documents to a corpus never moves an old one between the sides.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from envgen.errors import TemplateError
from envgen.proposers.template.prompt import build_blueprint_messages
from envgen.proposers.template.writer import write_blueprint
from gym_envs.seeding import stable_seed

__all__ = ["TeachingPair", "split_documents", "teaching_pairs"]


@dataclass
class TeachingPair:
    """One supervised example of the blueprint stream."""

    doc_id: str
    messages: list[dict[str, str]]  #: the prompt (system + user)
    target: str  #: the blueprint JSON the model should write


def _bucket(doc_id: str, seed: int) -> float:
    return stable_seed(seed, doc_id) / 2**31


def split_documents(docs: Sequence[Any], holdout: float, seed: int = 0) -> tuple[list[Any], list[Any]]:
    """``(train, held_out)``: a document is held out when its seeded hash falls below ``holdout`` (a share)."""
    if not 0.0 <= holdout < 1.0:
        raise ValueError(f"holdout must be a share in [0, 1), got {holdout}")
    train, held = [], []
    for d in docs:
        (held if _bucket(str(d.id), seed) < holdout else train).append(d)
    return train, held


def teaching_pairs(docs: Iterable[Any], *, seed: int = 0, excerpt_tokens: int = 900,
                   counter: Callable[[str], int] | None = None) -> tuple[list[TeachingPair], list[str]]:
    """Pairs for every document the AST writer can read; also the ids of those it cannot (no blueprint)."""
    pairs: list[TeachingPair] = []
    skipped: list[str] = []
    for d in docs:
        try:
            bp = write_blueprint(d, seed).blueprint
        except TemplateError:
            skipped.append(str(d.id))
            continue
        messages = build_blueprint_messages(d, excerpt_tokens=excerpt_tokens, counter=counter)
        pairs.append(TeachingPair(str(d.id), messages, bp.to_json()))
    return pairs, skipped

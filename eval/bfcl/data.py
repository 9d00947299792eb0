"""BFCL v4 multi-turn entries, loaded from the installed ``bfcl-eval`` package.

Role: turn BFCL's question file, possible-answer file and per-class function docs into
:class:`BfclEntry` values that the episode runner and any policy can use without knowing BFCL's
file layout.

Contract:

- Data comes from ``bfcl_eval/data/BFCL_v4_<category>.json`` (JSON lines: ``id``, ``question``
  as a list of turns of chat messages, ``initial_config`` per backend class,
  ``involved_classes``, and in ``miss_func`` a ``missed_function`` map ``{"turn": [names]}``)
  and ``bfcl_eval/data/possible_answer/BFCL_v4_<category>.json`` (``ground_truth``: one list of
  Python call strings per turn). Function docs come from ``data/multi_turn_func_doc/*.json``,
  one file per backend class, concatenated in ``involved_classes`` order as BFCL does.
- Tool schemas are exactly what BFCL's FC inference sends an OpenAI model: the description
  gets BFCL's Python-syntax hint (:data:`PYTHON_SYNTAX_HINT`; not on withheld functions, as in
  BFCL), then ``convert_to_tool`` rules apply (``dict`` -> ``object``, ``float`` -> ``number``
  with ``format: float`` and a note in the description, unknown types -> ``string``); BFCL's
  non-standard ``response`` field is dropped, giving ``{name, description, parameters}``.
- Withheld functions (``miss_func``): a function listed under turn ``t`` is absent from the
  tools of turns ``< t`` and appended (in listed order) from turn ``t`` on. BFCL's question for
  such a turn is empty; like BFCL's FC inference, :attr:`BfclEntry.turns` holds BFCL's
  ``DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC`` user message there.
- ``excluded_function`` is kept for information only: the installed BFCL never reads it (all
  functions of the involved classes are offered), and neither do we.
- Entries are independent values: each load builds fresh objects (no shared mutable state).
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from corpora.errors import did_you_mean
from eval.bfcl._backend import bfcl
from eval.errors import BfclDataError

MULTI_TURN_CATEGORIES: Final[tuple[str, ...]] = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)
"""The BFCL v4 multi-turn categories this package supports."""

PYTHON_SYNTAX_HINT: Final = " Note that the provided function is in Python 3 syntax."
"""Appended by BFCL (``utils._get_language_specific_hint``) to the description of every function
offered from the first turn; withheld functions are revealed without it (a BFCL quirk we keep)."""

Message = dict[str, str]
FunctionDoc = dict[str, Any]


@dataclass(frozen=True)
class BfclEntry:
    """One BFCL multi-turn test entry with its ground truth. Treat as read-only."""

    id: str
    """BFCL's id, e.g. ``"multi_turn_base_0"`` (BFCL derives the category from it)."""
    category: str
    """One of :data:`MULTI_TURN_CATEGORIES`."""
    turns: list[list[Message]]
    """User messages per turn (holdout turns carry BFCL's "new functions" prompt)."""
    involved_classes: list[str]
    """Backend classes instantiated for this entry, e.g. ``["TwitterAPI", "GorillaFileSystem"]``."""
    initial_config: dict[str, Any]
    """Per-class scenario passed to ``_load_scenario`` (deep-copied by BFCL at instantiation)."""
    functions: list[FunctionDoc]
    """OpenAI-format docs of every function of the involved classes, withheld ones included."""
    missed_function: dict[int, list[str]]
    """Turn index -> names of the functions withheld until that turn (``miss_func`` only)."""
    ground_truth: list[list[str]]
    """BFCL's ground-truth call strings per turn (``[]``: the model should not act)."""
    excluded_function: list[str] = field(default_factory=list)
    """BFCL's ``excluded_function`` field; informational, unused by BFCL and by us."""

    @property
    def num_turns(self) -> int:
        return len(self.turns)

    @property
    def long_context(self) -> bool:
        """Whether BFCL loads the backends with their long-context filler (BFCL: by category)."""
        return "long_context" in self.category

    @functools.cached_property
    def function_names(self) -> frozenset[str]:
        """Every function of the involved classes (the names BFCL's executor dispatches)."""
        return frozenset(doc["name"] for doc in self.functions)

    def is_holdout_turn(self, turn: int) -> bool:
        """Whether withheld functions are revealed at ``turn``."""
        return turn in self.missed_function

    def withheld_at(self, turn: int) -> frozenset[str]:
        """Functions not yet offered at ``turn``."""
        return frozenset(
            name for reveal, names in self.missed_function.items() if reveal > turn for name in names
        )

    def functions_for_turn(self, turn: int) -> list[FunctionDoc]:
        """The tool docs offered at ``turn``, in BFCL's order (revealed ones appended)."""
        if not 0 <= turn < self.num_turns:
            raise IndexError(f"turn {turn} out of range for {self.id} ({self.num_turns} turns)")
        by_name = {doc["name"]: doc for doc in self.functions}
        all_missed = {name for names in self.missed_function.values() for name in names}
        docs = [doc for doc in self.functions if doc["name"] not in all_missed]
        for reveal in sorted(self.missed_function):
            if reveal <= turn:
                docs.extend(by_name[name] for name in self.missed_function[reveal] if name in by_name)
        return copy.deepcopy(docs)

    def to_bfcl_test_entry(self) -> dict[str, Any]:
        """The fields of BFCL's test entry its ``multi_turn_checker`` reads."""
        return {
            "id": self.id,
            "initial_config": copy.deepcopy(self.initial_config),
            "involved_classes": list(self.involved_classes),
        }


def check_category(category: str) -> str:
    """Return ``category`` if supported, else raise ``ValueError`` with a suggestion."""
    if category in MULTI_TURN_CATEGORIES:
        return category
    hint = did_you_mean(category, MULTI_TURN_CATEGORIES, n=1)
    raise ValueError(f"unknown BFCL multi-turn category {category!r}{hint} (known: {', '.join(MULTI_TURN_CATEGORIES)})")


def load_entries(
    category: str,
    *,
    limit: int | None = None,
    ids: Iterable[str] | None = None,
) -> list[BfclEntry]:
    """Load the entries of ``category`` (in BFCL's file order) with their ground truth.

    ``ids`` keeps only those ids (in file order); ``limit`` keeps the first ``limit`` after that.
    Raises :class:`~eval.errors.BfclNotInstalledError` if ``bfcl-eval`` is missing.
    """
    check_category(category)
    bfcl()  # fail early with the install hint, even when the raw files are cached
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None, got {limit}")
    questions, answers = _raw_category(category)
    wanted = set(ids) if ids is not None else None
    if wanted is not None and (unknown := wanted - {q["id"] for q in questions}):
        raise ValueError(f"ids not in {category}: {sorted(unknown)[:5]}")
    entries: list[BfclEntry] = []
    for question, answer in zip(questions, answers, strict=True):
        if wanted is not None and question["id"] not in wanted:
            continue
        if limit is not None and len(entries) >= limit:
            break
        entries.append(_build_entry(category, question, answer))
    return entries


def load_entry(entry_id: str) -> BfclEntry:
    """Load one entry by its BFCL id (the category is the id minus its trailing index)."""
    category = entry_id.rsplit("_", 1)[0]
    return load_entries(category, ids=[entry_id])[0]


def _build_entry(category: str, question: Mapping[str, Any], answer: Mapping[str, Any]) -> BfclEntry:
    entry_id = str(question["id"])
    if answer.get("id") != entry_id:
        raise BfclDataError(f"{category}: ground truth id {answer.get('id')!r} != entry id {entry_id!r}")
    raw_turns: list[list[Message]] = copy.deepcopy(question["question"])
    ground_truth: list[list[str]] = [list(turn) for turn in answer["ground_truth"]]
    if len(raw_turns) != len(ground_truth):
        raise BfclDataError(
            f"{entry_id}: {len(raw_turns)} question turns but {len(ground_truth)} ground-truth turns"
        )
    involved = [str(name) for name in question["involved_classes"]]
    missed = {int(turn): list(names) for turn, names in question.get("missed_function", {}).items()}
    prompt = bfcl().additional_function_prompt
    turns = [
        [{"role": "user", "content": prompt}] if (i in missed and not messages) else messages
        for i, messages in enumerate(raw_turns)
    ]
    functions = [doc for name in involved for doc in _class_functions(name)]
    withheld = {name for names in missed.values() for name in names}
    if unknown := withheld - {doc["name"] for doc in functions}:
        raise BfclDataError(f"{entry_id}: withheld functions {sorted(unknown)} are not in its classes")
    for doc in functions:
        if doc["name"] not in withheld:  # BFCL adds its hint after removing the withheld docs
            doc["description"] += PYTHON_SYNTAX_HINT
    return BfclEntry(
        id=entry_id,
        category=category,
        turns=turns,
        involved_classes=involved,
        initial_config=copy.deepcopy(question.get("initial_config", {})),
        functions=functions,
        missed_function=missed,
        ground_truth=ground_truth,
        excluded_function=list(question.get("excluded_function", []) or []),
    )


def to_openai_function(doc: Mapping[str, Any]) -> FunctionDoc:
    """Convert one BFCL (Gorilla) function doc to ``{name, description, parameters}``."""
    mapping = bfcl().gorilla_to_openapi
    parameters = copy.deepcopy(dict(doc.get("parameters", {})))
    parameters["type"] = "object"
    parameters["properties"] = _cast_properties(parameters.get("properties", {}), mapping)
    return {"name": doc["name"], "description": doc.get("description", ""), "parameters": parameters}


def _cast_properties(properties: Mapping[str, Any], mapping: Mapping[str, str]) -> dict[str, Any]:
    return {key: _cast_schema(dict(value), mapping) for key, value in properties.items()}


def _cast_schema(schema: dict[str, Any], mapping: Mapping[str, str]) -> dict[str, Any]:
    gorilla_type = schema.get("type")
    if gorilla_type == "float":
        schema["format"] = "float"
        schema["description"] = schema.get("description", "") + " This is a float type value."
    schema["type"] = mapping.get(gorilla_type, "string") if isinstance(gorilla_type, str) else "string"
    if "properties" in schema:
        schema["properties"] = _cast_properties(schema["properties"], mapping)
    if isinstance(schema.get("items"), dict):
        items = dict(schema["items"])
        items["type"] = mapping.get(items.get("type", "string"), "string")
        if "properties" in items:
            items["properties"] = _cast_properties(items["properties"], mapping)
        if isinstance(items.get("items"), dict):
            items["items"] = _cast_schema(dict(items["items"]), mapping)
        schema["items"] = items
    return schema


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise BfclDataError(f"BFCL data file not found: {path} (is bfcl-eval complete?)")
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


@functools.cache
def _raw_category_cached(category: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    # Cache the raw JSON lines (immutable strings); entries are re-parsed into fresh objects.
    data_dir = bfcl().data_dir
    questions = _read_jsonl(data_dir / f"BFCL_v4_{category}.json")
    answers = _read_jsonl(data_dir / "possible_answer" / f"BFCL_v4_{category}.json")
    if len(questions) != len(answers):
        raise BfclDataError(f"{category}: {len(questions)} entries but {len(answers)} ground truths")
    return tuple(json.dumps(q) for q in questions), tuple(json.dumps(a) for a in answers)


def _raw_category(category: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    questions, answers = _raw_category_cached(category)
    return [json.loads(q) for q in questions], [json.loads(a) for a in answers]


@functools.cache
def _class_docs_cached(class_name: str) -> str:
    mapping = bfcl().func_doc_file_mapping
    if class_name not in mapping:
        raise BfclDataError(f"no function docs for BFCL class {class_name!r}; known: {sorted(mapping)}")
    return json.dumps(_read_jsonl(bfcl().data_dir / "multi_turn_func_doc" / mapping[class_name]))


@functools.cache
def _class_functions_cached(class_name: str) -> str:
    docs = json.loads(_class_docs_cached(class_name))
    return json.dumps([to_openai_function(doc) for doc in docs])


def _class_functions(class_name: str) -> list[FunctionDoc]:
    """Fresh OpenAI-format docs of one class (converted once, copied per entry)."""
    functions: list[FunctionDoc] = json.loads(_class_functions_cached(class_name))
    return functions

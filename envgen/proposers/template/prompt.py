"""The blueprint stream's prompt: a document in, a blueprint (JSON) out.

:func:`build_blueprint_messages` is the one prompt a model proposer sends for
the blueprint stream, and the one the proposer warm start trains on
(``envwright train proposer`` pairs it with the AST writer's blueprint of the
same document), so the trained model sees at inference exactly what it saw in
training. It holds:

* a short system message: what a blueprint is, its fields and the fixed
  vocabularies (field types, operation kinds, rule kinds, task kinds);
* one worked example: a small built-in document and the AST writer's
  blueprint of it (computed, not hand-written, so it always matches the
  compiler and the schema);
* a routed skill's guidance, when a skill conditions the proposal (its
  structural requirements are in the decoding schema as well);
* the document excerpt (:func:`corpora.excerpt` within ``excerpt_tokens``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from envgen.blueprint.schema import FIELD_TYPES, OP_KINDS, RULE_KINDS
from gym_envs.spec import TASK_KINDS

__all__ = ["BLUEPRINT_SYSTEM", "EXAMPLE_DOCUMENT", "build_blueprint_messages", "example_blueprint", "skill_heading"]

TokenCounter = Callable[[str], int]

BLUEPRINT_SYSTEM = f"""\
You read a source document and write the blueprint of a tool-use environment based on it: one JSON object \
that says which records the document manages and how they are used. A compiler turns the blueprint into \
database tables, tools and tasks.
- "entities": the kinds of records, the main one first. Each has a singular snake_case "name", a \
"description", the "key" field that identifies a record (a string, such as a name or title), its "fields" \
(each with a "name", a "type" from {", ".join(FIELD_TYPES)}, and a "description"), the "parent" entity it \
belongs to (or null) and its lifecycle "states" (or []).
- "operations": the tools, kinds {", ".join(OP_KINDS)}; "name" is the tool's name taken from the document's \
own functions or methods, "field" is the field an update sets, an adjust changes or a transfer moves between \
two records (null: a transfer moves a record to another parent), "target" the state a status operation moves to.
- "rules": business rules, kinds {", ".join(RULE_KINDS)}, each about one entity's field ("capacity": how many \
records may belong to one; "final": states a record never leaves).
- "tasks": how many tasks of each kind ({", ".join(TASK_KINDS)}) to write; "difficulty": easy, medium or hard \
(how deep the tasks go), or null.
Use the document's own names for entities, fields and tools. Answer with the JSON object only."""

EXAMPLE_DOCUMENT = '''\
"""A small lending library: members borrow and return books."""


class Book:
    """A title on the shelves, with how many copies the library owns."""

    def __init__(self, title: str, author: str, copies: int = 1, year: int = 2000):
        self.title = title
        self.author = author
        self.copies = copies
        self.year = year


class Library:
    def __init__(self):
        self.books = {}

    def add_book(self, title: str, author: str, copies: int = 1) -> Book:
        self.books[title] = Book(title, author, copies)
        return self.books[title]

    def find_book(self, title: str) -> Book:
        return self.books[title]

    def set_copies(self, title: str, copies: int) -> None:
        self.books[title].copies = copies

    def remove_book(self, title: str) -> None:
        del self.books[title]

    def list_books(self) -> list:
        return list(self.books.values())
'''


class _Doc:
    id = "example:library.py"
    path = "library.py"
    corpus = "example"
    language = "python"
    metadata: dict[str, Any] = {"module": "library"}
    text = EXAMPLE_DOCUMENT
    sha256 = ""


@lru_cache(maxsize=1)
def example_blueprint() -> str:
    """The AST writer's blueprint of :data:`EXAMPLE_DOCUMENT`, as compact JSON."""
    from envgen.proposers.template.writer import write_blueprint

    return write_blueprint(_Doc(), seed=0).blueprint.to_json()


def skill_heading(skill: Any) -> str:
    """A routed skill as the structured streams' prompts show it: its name, description and first rules (the
    structure it requires is said by each stream in its own terms)."""
    parts = [f"This environment follows the skill '{getattr(skill, 'name', None) or getattr(skill, 'id', '')}'"]
    desc = getattr(skill, "description", "")
    if desc:
        parts[0] += f": {desc}"
    rules = list(getattr(skill, "rules", None) or [])[:4]
    if rules:
        parts.append("Its rules:\n" + "\n".join(f"- {r}" for r in rules))
    return "\n".join(parts)


def _skill_text(skill: Any) -> str:
    parts = [skill_heading(skill)]
    req = getattr(skill, "blueprint", None) or {}
    needs = []
    if req.get("operations"):
        needs.append("operations of kinds " + ", ".join(req["operations"]))
    if req.get("rules"):
        needs.append("rules of kinds " + ", ".join(req["rules"]))
    if req.get("states"):
        needs.append("lifecycle states on the main entity")
    for kind, n in (req.get("tasks") or {}).items():
        needs.append(f"at least {n} {kind} task(s)")
    if needs:
        parts.append("The blueprint must have " + "; ".join(needs) + ".")
    return "\n".join(parts)


def build_blueprint_messages(doc: Any, *, skill: Any = None, excerpt_tokens: int = 900,
                             counter: TokenCounter | None = None, n_examples: int = 1) -> list[dict[str, str]]:
    """The blueprint stream's chat for one document (see the module docstring)."""
    from envgen.prompts import document_excerpt

    parts: list[str] = []
    if n_examples > 0:
        parts.append(f"Document (library.py):\n```python\n{EXAMPLE_DOCUMENT}```\nBlueprint:\n{example_blueprint()}")
    if skill is not None:
        parts.append(_skill_text(skill))
    path = getattr(doc, "path", None) or getattr(doc, "id", None) or "document"
    lang = getattr(doc, "language", "") or ""
    fence = lang if lang and lang != "unknown" else ""
    parts.append(f"Document ({path}):\n```{fence}\n{document_excerpt(doc, excerpt_tokens, counter)}\n```\n"
                 "Blueprint:")
    return [{"role": "system", "content": BLUEPRINT_SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]

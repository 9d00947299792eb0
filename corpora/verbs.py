"""Method-name verbs: the project's one vocabulary of what a method's first word does to state.

Role: static analysis reads a method's first word (``add_item`` -> ``add``) to tell what the method
does. :mod:`corpora.analysis` counts CRUD categories (a document's stateful score, the excerpt's
priorities); the template proposer (``envgen``) turns methods into tools by operation. Both read
this one table.

Contract:

* :data:`VERBS` maps each operation to its first words; a word belongs to one operation:

  - ``create`` makes a new record (``add``, ``register``, ``enqueue``);
  - ``get`` reads one record by its key, ``find`` searches, ``list`` enumerates them all;
  - ``check`` asks a question about the state (``has``, ``contains``, ``exists``, ``count``);
  - ``update`` changes a field (``set``, ``rename``, ``increment``);
  - ``delete`` removes a record (``remove``, ``pop``, ``purge``);
  - ``status`` moves a record to another status (``close``, ``cancel``, ``approve``: the status
    each one reaches is the template proposer's business).

* :data:`CRUD_OF` maps each operation to its CRUD category: ``get``, ``find``, ``list`` and
  ``check`` read; ``status`` updates.
* Lookups take a lower-case word; anything else is ``None``.
"""

from __future__ import annotations

__all__ = ["CRUD_CATEGORIES", "CRUD_OF", "OPERATIONS", "VERBS", "verb_category", "verb_operation"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


VERBS: dict[str, frozenset[str]] = {
    "create": _words(
        "add create insert new make put push append register enqueue store save post spawn attach submit "
        "schedule open emit allocate build define declare extend"
    ),
    "get": _words("get fetch read load peek show describe retrieve view info"),
    "find": _words("find lookup search query locate resolve select match identify filter"),
    "list": _words("list iter items keys values all enumerate walk scan entries"),
    "check": _words("has contains exists count"),
    "update": _words(
        "update set modify edit rename move replace change patch adjust assign configure config increment "
        "decrement incr decr toggle write resize reset mark merge sort"
    ),
    "delete": _words(
        "remove delete del discard drop unregister dequeue purge erase evict destroy unlink pop clear truncate "
        "dispose"
    ),
    "status": _words(
        "close cancel expire release acquire detach finish stop shutdown abort pause resume suspend start "
        "enable disable lock unlock archive activate deactivate approve reject complete"
    ),
}
"""First words of method names, by the operation they name."""

OPERATIONS = tuple(VERBS)
"""The operations, in :data:`VERBS`' order."""

CRUD_CATEGORIES = ("create", "read", "update", "delete")

CRUD_OF: dict[str, str] = {"create": "create", "get": "read", "find": "read", "list": "read", "check": "read",
                           "update": "update", "delete": "delete", "status": "update"}
"""The CRUD category of each operation."""

_OPERATION: dict[str, str] = {verb: op for op, verbs in VERBS.items() for verb in verbs}


def verb_operation(word: str) -> str | None:
    """The operation a method's first word names (``add`` -> ``create``), or ``None``."""
    return _OPERATION.get(word)


def verb_category(word: str) -> str | None:
    """The CRUD category a method's first word names (``fetch`` -> ``read``), or ``None``."""
    op = _OPERATION.get(word)
    return None if op is None else CRUD_OF[op]

"""Method-name verbs: the project's one vocabulary of what a method's first word does to state.

Role: static analysis reads a method's first word (``add_item`` -> ``add``, :func:`snake_case` splitting
``addItem`` the same way) to tell what the method does. :mod:`corpora.analysis` needs its CRUD
category (a document's stateful score, the excerpt's priorities); the template proposer (``envgen``)
needs the operation a tool is made of. Both read this one table, where each verb is listed once with
both facts.

Contract:

* :data:`VERBS` is a tuple of rows ``(category, operation, words)``. ``category`` is the CRUD category
  (``create``, ``read``, ``update``, ``delete``). ``operation`` is the single-record operation a tool
  is made of, or ``None`` for a verb that reads or changes state as a whole rather than one record
  (``has``, ``count``, ``sort``, ``extend``, ``truncate``):

  - ``create`` makes a record; ``get`` reads one by its key, ``find`` searches, ``list`` enumerates;
  - ``update`` sets a field; ``delete`` removes a record;
  - ``status`` moves a record to another status (an update; ``cancel``, ``expire`` and ``detach``
    count as deletes). The status each verb reaches is the template proposer's business.

* A word appears in one row only. Lookups take a lower-case word; anything else is ``None``.
* :func:`method_category` reads a whole method name (``getName`` -> ``read``, ``__delitem__`` ->
  ``delete``): its first word after :func:`snake_case`, or the container dunder's category.
* :data:`MUTATORS` are the names of calls that change the container they are called on (Python's
  ``list``/``dict``/``set``/``deque`` methods).
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["CRUD_CATEGORIES", "MUTATORS", "OPERATIONS", "VERBS", "method_category", "snake_case", "verb_category",
           "verb_operation"]

CRUD_CATEGORIES = ("create", "read", "update", "delete")
OPERATIONS = ("create", "get", "find", "list", "update", "delete", "status")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


VERBS: tuple[tuple[str, str | None, frozenset[str]], ...] = (
    ("create", "create", _words("add create insert new make put push append register enqueue store save post spawn "
                                "attach submit schedule open emit allocate build define declare")),
    ("create", None, _words("extend")),
    ("read", "get", _words("get fetch read load peek show describe retrieve view info")),
    ("read", "find", _words("find lookup search query locate resolve select match identify")),
    ("read", "list", _words("list iter items keys values all enumerate walk scan entries")),
    ("read", None, _words("has contains exists count filter")),
    ("update", "update", _words("update set modify edit rename move replace change patch adjust assign configure "
                                "config increment decrement incr decr toggle write resize")),
    ("update", None, _words("reset mark merge sort")),
    ("update", "status", _words("release acquire enable disable close finish stop shutdown abort pause resume "
                                "suspend start lock unlock archive activate deactivate approve reject complete")),
    ("delete", "status", _words("cancel expire detach")),
    ("delete", "delete", _words("remove delete del discard drop unregister dequeue purge erase evict destroy unlink "
                                "pop clear")),
    ("delete", None, _words("truncate dispose")),
)
"""``(CRUD category, operation, first words)``: every verb, once (see the module docstring)."""

_CATEGORY: dict[str, str] = {w: category for category, _, words in VERBS for w in words}
_OPERATION: dict[str, str | None] = {w: operation for _, operation, words in VERBS for w in words}


def verb_category(word: str) -> str | None:
    """The CRUD category a method's first word names (``fetch`` -> ``read``), or ``None``."""
    return _CATEGORY.get(word)


def verb_operation(word: str) -> str | None:
    """The single-record operation a method's first word names (``add`` -> ``create``), or ``None``."""
    return _OPERATION.get(word)


_DUNDER_CATEGORY: dict[str, str] = {
    "__setitem__": "update",
    "__getitem__": "read",
    "__contains__": "read",
    "__iter__": "read",
    "__len__": "read",
    "__delitem__": "delete",
    "__iadd__": "create",
    "__isub__": "delete",
}

MUTATORS = _words(
    "append add appendleft extend insert update setdefault pop popitem popleft remove discard clear "
    "put put_nowait push sort reverse"
)
"""Calls that change the container they are called on."""

_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


@lru_cache(maxsize=65536)
def snake_case(name: str) -> str:
    """Return ``name`` in lower snake_case without surrounding underscores.

    >>> snake_case("OrderedDict"), snake_case("_maxsize"), snake_case("HTTPServer"), snake_case("getName")
    ('ordered_dict', 'maxsize', 'http_server', 'get_name')
    """
    words = _CAMEL_RE.sub("_", name.strip("_")).lower()
    return re.sub(r"_+", "_", words)


def method_category(name: str) -> str | None:
    """Return the CRUD category of a method name, or ``None``.

    >>> method_category("add_item"), method_category("getName"), method_category("__delitem__")
    ('create', 'read', 'delete')
    """
    if name.startswith("__") and name.endswith("__"):
        return _DUNDER_CATEGORY.get(name)
    first = snake_case(name).split("_", 1)[0]
    return verb_category(first)

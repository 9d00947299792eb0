"""Whether a document's operation reads as an operation of the service it is grafted onto.

Role: the AST world writer (:mod:`envgen.proposers.world.writer`) names a grafted tool after the document's
function (``Queue.put`` becomes ``put_print_job``). That only makes sense when the function's name says what
the service's operation does: ``put``, ``cancel`` and ``__len__`` do; ``add_edges_from``, ``phase3``,
``set_isolation_level`` and ``render_finish`` name code concepts a print shop or a help desk does not have,
and a tool named after them reads as nonsense ("phase1 my subscription"). This module is the lexicon that
decides it:

* :func:`graft_verb`: the service verb of a document function for one graft slot, or ``None``. The
  function's first word (after words such as ``after_``, ``on_``) must be one of :data:`GRAFT_VERBS` for
  the slot (through :data:`ALIASES`: ``popleft`` is ``pop``, ``qsize`` is ``count``, ``enterabs`` is
  ``schedule``; in an archive, ``write`` is ``upload``; a queue's ``put``, ``push`` and ``append`` create a
  record, where nothing else's do), and each of its other words a modifier
  (``put_nowait``, ``add_all``), a generic element word (``add_node``, ``pop_item``) or a word the service
  itself uses for the record (``cancel_order`` on orders). A dunder says its slot: ``__len__`` counts,
  ``__delitem__`` removes.
* :func:`update_field`: the field a ``set_<x>``/``change_<x>`` function changes, when the record has a field
  named ``<x>``; an update of no field the service has is not grafted.
* :func:`same_state`: the record's state a function's state word names (``closed``, ``cancelled``), by the
  word's stem, never by a loose spelling match (``closed`` is not ``published``).

Contract: pure functions of strings; a ``None`` means "do not graft".
"""

from __future__ import annotations

import re

from envgen.blueprint.render.words import STATUS_TARGET, word_set
from envgen.world.phrase import verb_words

__all__ = ["ALIASES", "GRAFT_VERBS", "PATTERN_ALIASES", "PATTERN_VERBS", "PLAIN_VERBS", "graft_verb", "name_words",
           "same_state", "update_field", "verb_target"]

#: The verbs that name each graft slot in a service: what a person asks a service to do with a record.
GRAFT_VERBS: dict[str, frozenset[str]] = {
    "create": word_set("add submit schedule register create book upload"),
    "take": word_set("get pop take dequeue next pull receive consume"),
    "count": word_set("count"),
    "remove": word_set("remove delete discard drop cancel unregister withdraw"),
    "change_state": frozenset(STATUS_TARGET) | word_set("open reopen"),
    "adjust": word_set("add deposit withdraw credit debit charge pay refund increment decrement increase decrease "
                       "adjust top"),
    "acquire": word_set("acquire lock reserve claim hold borrow checkout"),
    "release": word_set("release unlock free return"),
    "update": word_set("set update change modify edit assign replace"),
    "move": word_set("move transfer relocate reparent"),
}

#: Verbs that say no more than an operation's kind (add, remove, change, count). A grafted operation that takes
#: over a domain tool keeps that tool's name when its verb is one of them (``DiGraph.remove_node`` cancels an
#: order as the domain's ``cancel_order``); a verb of the document's own API names it (``Queue.put`` is
#: ``put_print_job``).
PLAIN_VERBS = word_set("add create insert append remove delete discard drop set update change modify edit replace "
                       "count move")

#: A code verb and the service verb it is said as.
ALIASES: dict[str, str] = {"popleft": "pop", "popitem": "pop", "appendleft": "append", "qsize": "count",
                           "len": "count", "size": "count", "length": "count", "recv": "receive",
                           "enterabs": "schedule", "reopen": "open"}

#: Verbs that name an operation only in a document of some patterns: a queue's ``put``, ``push`` or ``append``
#: puts a record in line (``put_print_job``), where a console's ``push``, a file list's ``append`` or a scheduler's
#: ``push`` creates no order or appointment.
PATTERN_VERBS: dict[str, dict[str, frozenset[str]]] = {
    p: {"create": word_set("put push append enqueue insert")} for p in ("queue", "stack")}

#: A code verb and the service verb it is said as in a document of one pattern: an archive's ``write`` puts a
#: member in (``ZipFile.write`` uploads a file); a stream's ``write`` creates no record of a service.
PATTERN_ALIASES: dict[str, dict[str, str]] = {"archive": {"write": "upload", "writestr": "upload", "addfile": "upload"}}

#: Words that qualify how an operation runs, not what it acts on (``put_nowait``, ``add_all``, ``pop_left``).
MODIFIERS = word_set("nowait now left right all one many back first last next new async")

#: Words a container's code uses for whatever it holds (``add_node``, ``pop_item``): the service's record.
ITEM_WORDS = word_set("item items element elements elem entry entries member members node nodes record records "
                      "value values object objects obj")

_DUNDER_SLOTS = {"__len__": ("count", "count"), "__delitem__": ("remove", "remove")}


def name_words(name: str) -> list[str]:
    """A function name's lowercase words: ``addTypeEqualityFunc`` and ``add_type_equality_func`` alike."""
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name.strip("_"))
    return [w for w in re.split(r"[^a-z0-9]+", s.lower()) if w]


def graft_verb(name: str, slot: str, record_words: set[str], pattern: str = "") -> str | None:
    """The service verb the document function ``name`` is said with in ``slot`` (a key of :data:`GRAFT_VERBS`),
    or None when its name does not read as that operation (see the module docstring). ``record_words``: the
    words the service uses for the record (its entity's name words); ``pattern``: the document's pattern
    (:data:`PATTERN_VERBS`, :data:`PATTERN_ALIASES`)."""
    if name.startswith("__"):
        said = _DUNDER_SLOTS.get(name)
        return said[1] if said is not None and said[0] == slot else None
    words = verb_words(name_words(name))
    if not words:
        return None
    verb = PATTERN_ALIASES.get(pattern, {}).get(words[0]) or ALIASES.get(words[0], words[0])
    if verb not in GRAFT_VERBS.get(slot, frozenset()) | PATTERN_VERBS.get(pattern, {}).get(slot, frozenset()):
        return None
    known = record_words | {_singular(w) for w in record_words}
    for w in words[1:]:
        if w not in MODIFIERS and w not in ITEM_WORDS and w not in known and _singular(w) not in known:
            return None
    return verb


def update_field(name: str, fields: list[str]) -> tuple[str, str] | None:
    """``(verb, field)`` of an update function named ``<verb>_<field>`` whose field the record has
    (``set_url`` and a ``url`` field; ``change_shipping_address``), else None."""
    if name.startswith("__"):
        return None
    words = verb_words(name_words(name))
    if len(words) < 2:
        return None
    verb = ALIASES.get(words[0], words[0])
    if verb not in GRAFT_VERBS["update"]:
        return None
    said = "_".join(words[1:])
    for f in fields:
        if said in (f, _singular(f)) or _singular(said) == f:
            return verb, f
    return None


def same_state(want: str | None, states: list[str]) -> str | None:
    """The state of ``states`` that ``want`` names: the same word, or the same stem (``cancelled`` and
    ``canceled``, ``complete`` and ``completed``); None when no state is that word."""
    if not want:
        return None
    if want in states:
        return want
    stem = want[:6] if len(want) >= 6 else want
    return next((s for s in states if len(stem) >= 4 and (s.startswith(stem) or want.startswith(s[:6]))
                 and len(s) >= 4), None)


def verb_target(verb: str) -> str | None:
    """The state a status verb moves a record to (``close`` -> ``closed``), or None."""
    return {**STATUS_TARGET, "open": "open"}.get(verb)


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word

"""The lexical rules of the realism measures: CRUD tool names, slug strings, row ids in user text, turn skeletons.

Role: small pure functions over strings (and the vocabulary of one environment), each stated here once and
used by :mod:`envgen.realism.measures` for our environments and for the anchors (the shipped examples,
τ²-bench, BFCL). Every rule is deliberately simple enough to read in a minute and is pinned by tests both
ways.

* :func:`is_crud_tool`: a tool is **CRUD** when the first word of its name is one of :data:`CRUD_VERBS`
  and every other word names the environment's data (an entity or field word of its
  :class:`Vocabulary`, singular or plural) or is a filler of :data:`FILLERS` (``all``, ``by``,
  ``details``...). ``update_order``, ``list_all_orders``, ``get_user_details``, ``find_user_id_by_email``
  are CRUD; ``refund_order_item`` and ``cancel_reservation`` are not (their verb is the domain's), and
  neither is ``modify_pending_order_address`` (``pending`` names a state, not data) or
  ``transfer_to_human_agents`` (``human agents`` are no table or field).
* :func:`is_slug`: a **slug** is 1 or 2 lowercase alphabetic words joined by a space, ``-`` or ``_``
  (``'number meadow'``, ``'reader-iris'``, ``parse_drift``, ``'super'``) with no function word
  (``'no croutons'`` reads as language, not a made-up name). Anything with a capital, a digit or other
  punctuation (names, emails, dates, codes, paths, file names) and anything of three or more words (a
  sentence) is not a slug.
* :func:`names_row_id`: a user turn **names an internal row id** when it says ``id 8`` (``ID: 8``, ``with id
  8``), ``row 8`` or ``record 8`` and the number is a value of one of the environment's integer primary
  keys; or ``#7`` or ``<noun> <n>`` (``<noun>`` a word of the table's name) where the number is a value of
  the integer primary key of a table *that has another unique column* (``item 12`` or ``#12`` when menu
  items have unique names: the number is a surrogate). A table whose integer key is its only key numbers
  its rows for people (``table 4`` in a restaurant, ``order 56``, ``order #56``): that is its user-facing
  key, as BFCL's users name the ids they own; and a text key (τ²'s ``item ID 4107812777``) is a
  user-facing key too. A source without tables (BFCL) counts every ``#7`` and ``id 8``.
* :func:`skeleton`: a turn's **skeleton** is its text with the values masked: emails, URLs, ISO dates and
  times, quoted strings, the environment's key values (text of its unique columns, as a whole word, plural
  too), ``#``-ids and numbers become placeholders; then lowercased, and the words of its table and column
  names become ``<e>`` and ``<f>`` (a run of one placeholder collapses to one), so one shape instantiated
  over many entities counts once.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["CRUD_VERBS", "FILLERS", "FUNCTION_WORDS", "Vocabulary", "is_crud_tool", "is_slug", "name_words",
           "names_row_id", "quoted_values", "singular", "skeleton", "word_count"]

#: The generic verbs of a CRUD API: they apply to any entity whatever the domain does (the issue's list,
#: add, get, find, list, set, update, adjust, move, transfer, delete, with their synonyms). ``put``, ``cancel``,
#: ``refund``, ``schedule``, ``acquire``... are a domain's own operations and are not here.
CRUD_VERBS: frozenset[str] = frozenset({
    "add", "adjust", "archive", "change", "count", "create", "delete", "edit", "fetch", "find", "get", "insert",
    "list", "lookup", "modify", "move", "patch", "query", "read", "register", "remove", "save", "search", "set",
    "show", "transfer", "update", "upsert", "view", "write",
})

#: Words a CRUD tool name may carry besides its verb and data words (``get_user_details``, ``list_all_x``,
#: ``find_x_by_name``).
FILLERS: frozenset[str] = frozenset({
    "all", "by", "data", "detail", "details", "entries", "entry", "field", "fields", "for", "from", "id", "ids",
    "in", "info", "information", "into", "new", "of", "on", "one", "record", "records", "to", "value", "values",
    "with",
})

#: Words that make a short lowercase string read as language rather than a made-up name.
FUNCTION_WORDS: frozenset[str] = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "from", "has", "have", "if", "in", "is", "it",
    "its", "no", "nor", "not", "of", "off", "on", "or", "so", "than", "that", "the", "this", "to", "too", "up",
    "very", "was", "with", "without",
})

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SLUG = re.compile(r"[a-z]+(?:[ _-][a-z]+)?")


def name_words(name: str) -> list[str]:
    """The lowercase words of an identifier: ``snake_case``, ``kebab-case``, ``camelCase`` or ``a.b``."""
    return [w for w in re.split(r"[^a-z0-9]+", _CAMEL.sub("_", name).lower()) if w]


def singular(word: str) -> str:
    """A rough English singular (``orders`` -> ``order``, ``categories`` -> ``category``, ``boxes`` -> ``box``)."""
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith(("sses", "xes", "ches", "shes", "zes")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


@dataclass(frozen=True)
class Vocabulary:
    """The words an environment names its data with: entity words (from table or collection names) and field
    words (from column or record-field names), kept in singular form; and its key values."""

    entities: frozenset[str] = frozenset()
    fields: frozenset[str] = frozenset()
    key_values: tuple[str, ...] = ()  #: text values of unique columns (record keys), for skeleton masking

    @classmethod
    def of(cls, tables: Iterable[str], fields: Iterable[str], key_values: Iterable[str] = ()) -> Vocabulary:
        """A vocabulary from table names and field names (split into words) and key values."""
        ents = {singular(w) for t in tables for w in name_words(t)} - FUNCTION_WORDS
        flds = {singular(w) for f in fields for w in name_words(f)} - ents - FUNCTION_WORDS
        keys = sorted({k.strip() for k in key_values if isinstance(k, str) and len(k.strip()) >= 3},
                      key=lambda k: (-len(k), k))
        return cls(frozenset(ents), frozenset(flds), tuple(keys[:5000]))

    @property
    def words(self) -> frozenset[str]:
        return self.entities | self.fields

    @functools.cached_property
    def key_pattern(self) -> re.Pattern[str] | None:
        """One regex matching any key value as a whole word (longest first), built once."""
        if not self.key_values:
            return None
        return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(k) for k in self.key_values) + r")(?:e?s)?(?!\w)",
                          re.I)


def is_crud_tool(name: str, vocab: Vocabulary) -> bool:
    """Whether a tool name is a generic CRUD verb over the environment's data (the rule in the module
    docstring)."""
    words = name_words(name)
    if not words or words[0] not in CRUD_VERBS:
        return False
    known = vocab.words
    return all(w in FILLERS or singular(w) in known or w in known for w in words[1:])


def is_slug(value: str) -> bool:
    """Whether a string is a 1-2-word lowercase slug (the rule in the module docstring)."""
    s = value.strip()
    if not _SLUG.fullmatch(s):
        return False
    return not any(w in FUNCTION_WORDS for w in re.split(r"[ _-]", s))


_QUOTED = re.compile(r"(?<![\w])'([^'\n]{1,200})'(?![\w])|\"([^\"\n]{1,200})\"|“([^”\n]{1,200})”|‘([^’\n]{1,200})’")


def quoted_values(text: str) -> list[str]:
    """The values a text quotes: ``'x'``, ``"x"``, ``“x”``, ``‘x’`` (an apostrophe inside a word is no quote)."""
    return [next(g for g in m.groups() if g is not None) for m in _QUOTED.finditer(text)]


_HASH_ID = re.compile(r"(?<![\w#])#\d+\b")
_ID_WORD = re.compile(r"\b(?:id|row|record)\b\s*(?:[:=#]|no\.?|number)?\s*#?\d+\b", re.I)
_NOUN_NUMBER = re.compile(r"\b([A-Za-z]+)\s+#?(\d+)\b")


def names_row_id(text: str, row_ids: frozenset[int] | None = None,
                 surrogate_keys: dict[str, frozenset[int]] | None = None) -> bool:
    """Whether a user turn names an internal row id (the rule in the module docstring). ``row_ids``: the
    values of the environment's integer primary keys (None: the source has no tables, so every ``#7`` or
    ``id 8`` counts); ``surrogate_keys`` maps an entity word (singular) to the integer primary key values of
    tables with another unique column."""
    surrogates = frozenset().union(*surrogate_keys.values()) if surrogate_keys else frozenset()
    for pattern, ids in ((_ID_WORD, row_ids), (_HASH_ID, surrogates if row_ids is not None else None)):
        for m in pattern.finditer(text):
            if ids is None or int(re.findall(r"\d+", m.group(0))[-1]) in ids:
                return True
    if surrogate_keys:
        for m in _NOUN_NUMBER.finditer(text):
            ids = surrogate_keys.get(singular(m.group(1)))
            if ids and int(m.group(2)) in ids:
                return True
    return False


_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_URL = re.compile(r"\bhttps?://\S+")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?\b")
_TIME = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?\b")
_NUMBER = re.compile(r"[$€£]?\d+(?:[.,]\d+)*%?")
_HASH_TOKEN = re.compile(r"#\w+")


def skeleton(text: str, vocab: Vocabulary | None = None) -> str:
    """A turn's skeleton: the text with its values masked (the rule in the module docstring)."""
    s = _EMAIL.sub(" <email> ", text)
    s = _URL.sub(" <url> ", s)
    s = _DATE.sub(" <date> ", s)
    s = _TIME.sub(" <time> ", s)
    s = _QUOTED.sub(" <str> ", s)
    pattern = vocab.key_pattern if vocab is not None else None
    if pattern is not None:
        s = pattern.sub(" <key> ", s)
    s = _HASH_TOKEN.sub(" <id> ", s)
    s = _NUMBER.sub(" <num> ", s).lower()
    out: list[str] = []
    for m in re.finditer(r"<\w+>|[a-z]+|[^\sa-z<>]", s):
        tok = m.group(0)
        if vocab is not None and tok.isalpha():
            base = singular(tok)
            if base in vocab.entities or tok in vocab.entities:
                tok = "<e>"
            elif base in vocab.fields or tok in vocab.fields:
                tok = "<f>"
        if tok.startswith("<") and out and out[-1] == tok:
            continue
        out.append(tok)
    return " ".join(out)


def word_count(text: str) -> int:
    """Words of a text (whitespace-separated tokens)."""
    return len(text.split())

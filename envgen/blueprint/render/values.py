"""Seeded value generation for the compiler: keys, column values, seed rows.

Role: make the rows of a generated database and the new values tasks ask
for. Every draw comes from the :class:`random.Random` it is given, so a
(document, seed) pair always gives the same values.

Contract:

* Values are plain SQL-safe literals: TEXT matches ``[A-Za-z0-9 _.@/:-]+``
  (never a quote), INTEGER is non-negative, REAL has a short exact decimal
  form that is never integral, BOOLEAN is stored as 0/1.
* :meth:`ValueMaker.key` never returns a value already in ``used``; keys look
  like the column they fill (a path for ``path``, a host for ``host``, ...)
  and mix the document's own words with generic ones.
* :meth:`ValueMaker.different` returns a value of the same column that
  differs from the one given.
"""

from __future__ import annotations

import random
import re
from typing import Any

from envgen.blueprint.render.model import Column, Entity
from envgen.blueprint.render.words import word_list

__all__ = ["GENERIC_WORDS", "ValueMaker", "sql_literal"]

GENERIC_WORDS = word_list(
    "amber birch cedar delta ember fjord garnet harbor indigo juniper kestrel lumen maple nimbus onyx pebble "
    "quartz raven sierra tundra umber violet willow yarrow zephyr aspen basalt coral dune falcon glacier heron "
    "iris jade lotus meadow nova orchid pine ridge saffron topaz vale wren alder bramble comet drift"
)
_ENCODINGS = ("utf-8", "latin-1", "ascii", "utf-16", "cp1252")
_LANGS = ("en", "fr", "de", "es", "it", "nl", "pt", "sv")
_COLORS = ("red", "green", "blue", "orange", "purple", "teal", "gray", "gold")
_EXTS = ("txt", "cfg", "log", "dat", "json", "csv", "ini")
_MODES = ("read", "write", "append", "binary", "text", "strict", "lenient")
_SAFE = re.compile(r"[^A-Za-z0-9 _.@/:-]")
_SIZES = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)


def sql_literal(value: Any) -> str:
    """A SQL literal for a generated value (TEXT never contains a quote, but quotes are doubled anyway)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


class ValueMaker:
    """Draws keys and values for one environment."""

    def __init__(self, rng: random.Random, words: list[str], literals: list[str]):
        self.rng = rng
        self.words = [w for w in words if 3 <= len(w) <= 10] or list(GENERIC_WORDS)
        self.literals = [_SAFE.sub("", s) for s in literals if 3 <= len(s) <= 14 and not s.isupper()]
        self.literals = [s for s in self.literals if s]

    # -- words ---------------------------------------------------------------------------------------
    def word(self) -> str:
        return self.rng.choice(self.words)

    def generic(self) -> str:
        return self.rng.choice(GENERIC_WORDS)

    # -- keys ----------------------------------------------------------------------------------------
    def key(self, column: Column, entity: Entity, used: set[str]) -> str:
        """A fresh unique key for ``entity`` (not in ``used``; added to it)."""
        for attempt in range(200):
            value = self._key_once(column.name, attempt)
            if value not in used:
                used.add(value)
                return value
        value = f"{entity.name}-{len(used) + 1}"
        used.add(value)
        return value

    def _key_once(self, name: str, attempt: int) -> str:
        w1, w2 = self.word(), self.generic()
        if attempt > 100:
            w2 = f"{w2}{self.rng.randint(2, 99)}"
        if re.search(r"(path|dir|folder|root|directory)$", name):
            return f"/srv/{w1}/{w2}"
        if re.search(r"(file|filename|file_name)$", name):
            return f"{w1}_{w2}.{self.rng.choice(_EXTS)}"
        if re.search(r"(host|hostname|domain|server)$", name):
            return f"{w1}-{w2}.example.org"
        if re.search(r"(url|uri|link)$", name):
            return f"https://{w2}.example.com/{w1}"
        if re.search(r"(email|address|sender|recipient)$", name):
            return f"{w1}.{w2}@example.com"
        if re.search(r"(user|username|owner|author)$", name):
            return f"{w2}_{w1}"
        if self.rng.random() < 0.5:
            return f"{w1}-{w2}"
        return f"{w2}-{w1}"

    # -- values --------------------------------------------------------------------------------------
    def value(self, column: Column) -> Any:
        """A value for a non-key column."""
        if column.enum:
            return self.rng.choice(column.enum)
        kind = column.sqltype
        if kind == "BOOLEAN":
            return self.rng.randint(0, 1)
        if kind == "INTEGER":
            return self._bounded(column, self._integer(column.name))
        if kind == "REAL":
            return self._bounded(column, self._real(column.name))
        return self._text(column.name)

    def _bounded(self, column: Column, value: Any) -> Any:
        """``value`` if it lies in the column's range (a blueprint's range rule), else a draw inside it."""
        lo = column.minimum if column.minimum is not None else 0
        hi = column.maximum
        if value >= lo and (hi is None or value <= hi):
            return value
        top = hi if hi is not None else lo + 500
        if column.sqltype == "INTEGER":
            return self.rng.randint(int(-(-lo // 1)), int(top))
        steps = max(1, int((top - lo) * 4))
        drawn = lo + self.rng.randint(0, steps) / 4
        return drawn + 0.25 if drawn.is_integer() and drawn + 0.25 <= top else drawn

    def different(self, column: Column, current: Any, avoid: Any = None) -> Any:
        """A value for ``column`` that differs from ``current`` (and from ``avoid``, when possible)."""
        if column.sqltype == "BOOLEAN":
            return 0 if current else 1
        for _ in range(50):
            value = self.value(column)
            if value != current and value != avoid:
                return value
        if column.sqltype == "INTEGER":
            return self._bounded(column, int(current or 0) + 7)
        if column.sqltype == "REAL":
            return self._bounded(column, float(current or 0) + 2.5)
        return f"{current}-{self.generic()}"

    def _integer(self, name: str) -> int:
        r, last = self.rng, name.rsplit("_", 1)[-1]
        if last == "port":
            return r.randrange(1024, 9999)
        if last == "year":
            return r.randint(1990, 2030)
        if last in ("priority", "level", "depth", "rank", "indent", "retries", "tries", "attempts"):
            return r.randint(1, 9)
        if last in ("size", "capacity", "maxsize", "bufsize", "blocksize", "limit", "width", "height", "maxlen"):
            return r.choice(_SIZES)
        if last in ("month",):
            return r.randint(1, 12)
        if last in ("day",):
            return r.randint(1, 28)
        if last in ("hour",):
            return r.randint(0, 23)
        if last in ("minute", "second"):
            return r.randint(0, 59)
        return r.randint(2, 500)

    def _real(self, name: str) -> float:
        r, last = self.rng, name.rsplit("_", 1)[-1]
        if last in ("ratio", "rate", "factor", "probability", "alpha", "threshold", "fraction", "weight"):
            return round(r.randint(1, 19) * 0.05, 2)
        if last in ("price", "cost", "amount", "balance"):
            value = r.randint(4, 4000) / 4
        else:
            value = r.randint(2, 480) / 4
        return value + 0.25 if value.is_integer() else value

    def _text(self, name: str) -> str:
        r, last = self.rng, name.rsplit("_", 1)[-1]
        if last in ("encoding", "charset"):
            return r.choice(_ENCODINGS)
        if last in ("lang", "language", "locale"):
            return r.choice(_LANGS)
        if last in ("color", "colour"):
            return r.choice(_COLORS)
        if last == "mode":
            return r.choice(_MODES)
        if re.search(r"(path|dir|folder|root|file|host|url|email|user|owner)$", name):
            return self._key_once(name, 0)
        if self.literals and r.random() < 0.3:
            return r.choice(self.literals)
        if r.random() < 0.5:
            return self.word()
        return f"{self.word()} {self.generic()}"

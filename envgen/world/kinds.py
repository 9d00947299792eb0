"""Semantic field kinds: what a world's field *means*, and so how it is stored, drawn, shown and asked for.

Role: a blueprint field says ``{"name": "email", "kind": "email"}``; the kind decides everything the
compiler needs about it, in one table (:data:`KINDS`):

* ``sqltype``: ``TEXT``, ``INTEGER``, ``REAL`` or ``BOOLEAN`` (stored 0/1);
* ``schema``: the JSON Schema fragment of a tool parameter of this kind (format hints, ranges);
* ``key``: whether the kind can be an entity's user-facing key (unique, what a person names a record by:
  an email, an order number, a file name; never an internal row id);
* ``draw``: a seeded value (:mod:`envgen.world.data` calls it with the world's value pools);
* ``say``: how a person writes a value in a request (``$1,250.00``, ``March 3, 2026``, ``'Ada Byrne'``).

Money is stored in cents (INTEGER) and shown with the world's currency; dates are ISO ``YYYY-MM-DD``
text, so SQL compares them; a ``code`` key is a prefix and digits (``ORD-20417``).

Contract: :func:`kind` raises :class:`KeyError` with a close match for an unknown name; every kind
in :data:`KINDS` has all five parts (a test walks them).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from corpora.errors import did_you_mean

if TYPE_CHECKING:
    from envgen.world.data import Pools

__all__ = ["KINDS", "Kind", "kind", "say_money"]

Draw = Callable[["Pools", dict[str, Any]], Any]
"""``draw(pools, ctx)``: a value; ``ctx`` holds the field (``field``), the row being filled (``row``) and,
for codes, the entity's prefix (``prefix``)."""


@dataclass(frozen=True)
class Kind:
    """One semantic kind (see the module docstring)."""

    name: str
    sqltype: str
    schema: dict[str, Any]
    key: bool
    draw: Draw
    say: Callable[[Any, str], str]  #: ``say(value, currency)``
    blurb: str  #: one line for envgen/world/WORLDS.md and the model's prompt


def say_money(cents: Any, currency: str = "USD") -> str:
    """``125000`` -> ``$1,250.00`` (``€``, ``£`` for EUR and GBP; else the code after the number)."""
    amount = int(cents) / 100
    text = f"{amount:,.2f}"
    sign = {"USD": "$", "EUR": "€", "GBP": "£"}.get(currency)
    return f"{sign}{text}" if sign else f"{text} {currency}"


def _say_text(v: Any, _c: str) -> str:
    return str(v)


def _say_words(v: Any, _c: str) -> str:
    """A category as a person says it: ``old-town`` -> ``old town``."""
    return str(v).replace("-", " ").replace("_", " ")


def _say_quoted(v: Any, _c: str) -> str:
    return f"'{v}'"


def _say_number(v: Any, _c: str) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _say_date(v: Any, _c: str) -> str:
    d = _dt.date.fromisoformat(str(v)[:10])
    return f"{d:%B} {d.day}, {d.year}"


def _say_datetime(v: Any, _c: str) -> str:
    t = _dt.datetime.fromisoformat(str(v))
    return f"{t:%B} {t.day} at {t:%H:%M}"


def _say_bool(v: Any, _c: str) -> str:
    return "yes" if v else "no"


def _say_percent(v: Any, _c: str) -> str:
    return f"{v}%"


def _say_minutes(v: Any, _c: str) -> str:
    v = int(v)
    return f"{v // 60} h {v % 60} min" if v >= 90 and v % 60 else (f"{v // 60} hours" if v >= 120 and not v % 60
                                                                      else f"{v} minutes")


def _text(n: int) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": n}


_INT = {"type": "integer"}


def _k(name: str, sqltype: str, schema: dict[str, Any], key: bool, draw: Draw, say: Callable[[Any, str], str],
       blurb: str) -> Kind:
    return Kind(name, sqltype, schema, key, draw, say, blurb)


def _pool(name: str) -> Draw:
    return lambda pools, ctx: pools.pick(name)


KINDS: dict[str, Kind] = {k.name: k for k in [
    _k("person_name", "TEXT", _text(60), True, lambda p, c: p.person(c)["name"], _say_text,
       "a person's full name (Ada Byrne)"),
    _k("email", "TEXT", {**_text(80), "format": "email"}, True, lambda p, c: p.person(c)["email"], _say_text,
       "an email address, matching the row's person when it has one"),
    _k("phone", "TEXT", _text(24), True, lambda p, c: p.phone(), _say_text, "a phone number"),
    _k("username", "TEXT", _text(40), True, lambda p, c: p.person(c)["username"], _say_text,
       "a login name (ada_byrne_41)"),
    _k("street_address", "TEXT", _text(80), False, _pool("street_address"), _say_text, "a street address"),
    _k("city", "TEXT", _text(40), False, _pool("city"), _say_text, "a city"),
    _k("country", "TEXT", _text(40), False, _pool("country"), _say_text, "a country"),
    _k("postcode", "TEXT", _text(12), False, _pool("postcode"), _say_text, "a postal code"),
    _k("company", "TEXT", _text(60), True, _pool("company"), _say_text, "a company name"),
    _k("job_title", "TEXT", _text(60), False, _pool("job"), _say_text, "a job title"),
    _k("title", "TEXT", _text(80), True, lambda p, c: p.title(c), _say_quoted,
       "a human title of a thing (a product, a book, an event): words from the domain's vocabulary"),
    _k("description", "TEXT", _text(200), False, lambda p, c: p.sentence(c), _say_quoted,
       "a sentence of free text (a note, a reason)"),
    _k("code", "TEXT", _text(24), True, lambda p, c: p.code(c), _say_text,
       "a reference code a person reads off a receipt or a screen (ORD-20417)"),
    _k("file_name", "TEXT", _text(80), True, lambda p, c: p.file_name(c), _say_quoted, "a file name (q3-report.pdf)"),
    _k("file_path", "TEXT", _text(160), True, lambda p, c: p.file_path(c), _say_quoted,
       "a path (/srv/archive/2026/q3-report.pdf)"),
    _k("url", "TEXT", {**_text(160), "format": "uri"}, True, lambda p, c: p.url(c), _say_text, "a web address"),
    _k("hostname", "TEXT", _text(80), True, lambda p, c: p.hostname(c), _say_text, "a host name (db-3.example.org)"),
    _k("ip_address", "TEXT", _text(40), True, _pool("ipv4"), _say_text, "an IPv4 address"),
    _k("version", "TEXT", _text(16), False, lambda p, c: p.version(), _say_text, "a version number (2.4.1)"),
    _k("color", "TEXT", _text(24), False, _pool("safe_color_name"), _say_text, "a colour name"),
    _k("language", "TEXT", _text(24), False, _pool("language"), _say_text, "a language name"),
    _k("category", "TEXT", _text(40), False, lambda p, c: p.category(c), _say_words,
       "one of a few domain categories (the field's values, or the domain's)"),
    _k("status", "TEXT", _text(24), False, lambda p, c: p.category(c), _say_words,
       "a lifecycle state (the entity's states)"),
    _k("money", "INTEGER", {"type": "number", "minimum": 0, "description": "an amount in the world's currency"},
       False, lambda p, c: p.money(c), lambda v, cur: say_money(v, cur),
       "an amount of money (stored in cents, shown as $1,250.00)"),
    _k("quantity", "INTEGER", {**_INT, "minimum": 0}, False, lambda p, c: p.quantity(c), _say_number,
       "a small count of items"),
    _k("count", "INTEGER", {**_INT, "minimum": 0}, False, lambda p, c: p.integer(c, 0, 500), _say_number,
       "a count (seats, pages, capacity)"),
    _k("integer", "INTEGER", _INT, False, lambda p, c: p.integer(c, 0, 1000), _say_number, "a whole number"),
    _k("number", "REAL", {"type": "number"}, False, lambda p, c: p.real(c, 0, 1000), _say_number,
       "a measurement with decimals (weight in kg, distance in km)"),
    _k("percent", "INTEGER", {**_INT, "minimum": 0, "maximum": 100}, False, lambda p, c: p.integer(c, 0, 100),
       _say_percent, "a percentage"),
    _k("rating", "INTEGER", {**_INT, "minimum": 1, "maximum": 5}, False, lambda p, c: p.integer(c, 1, 5),
       _say_number, "a rating from 1 to 5"),
    _k("duration_minutes", "INTEGER", {**_INT, "minimum": 0}, False, lambda p, c: p.minutes(c), _say_minutes,
       "a duration in minutes"),
    _k("date", "TEXT", {**_text(10), "format": "date", "description": "YYYY-MM-DD"}, False,
       lambda p, c: p.date(c), _say_date, "a calendar date (YYYY-MM-DD)"),
    _k("datetime", "TEXT", {**_text(16), "description": "YYYY-MM-DDTHH:MM"}, False, lambda p, c: p.datetime(c),
       _say_datetime, "a date and time (YYYY-MM-DDTHH:MM)"),
    _k("boolean", "BOOLEAN", {"type": "boolean"}, False, lambda p, c: p.boolean(c), _say_bool, "yes or no"),
]}
"""Every semantic kind, by name."""


def kind(name: str) -> Kind:
    """The kind called ``name``; an unknown name raises :class:`KeyError` naming the closest kind."""
    try:
        return KINDS[name]
    except KeyError:
        raise KeyError(f"unknown field kind {name!r}{did_you_mean(name, KINDS)} (kinds: {', '.join(KINDS)})") from None

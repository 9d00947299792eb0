"""Realistic, seeded values for a world's rows: people, addresses, money, dates, codes, titles.

Role: :class:`Pools` is what every :class:`~envgen.world.kinds.Kind` draws from. Text that needs a
real-world generator (names, streets, cities, companies, job titles, IP addresses) comes from
`Faker <https://faker.readthedocs.io>`_ (offline, deterministic with a seed): a pool of each is made
once per process with a fixed Faker seed (:func:`faker_pool`), and an environment draws from the pools
with its own :class:`random.Random`. So a ``(document, seed)`` pair always gives the same rows, and a
library of hundreds of environments pays for Faker once, not once per value.

Everything else (money, counts, dates, codes, file names, titles from the domain's vocabulary) is drawn
from the environment's ``rng`` directly, shaped by the field's name and the domain (:class:`Vocabulary`):
a ``due_date`` lies ahead of the world's today, a ``created_at`` behind it; a ``price`` is tens of
dollars, a ``store_credit`` or ``wallet_balance`` at most a few hundred and a ``balance`` thousands.

Contract: no value contains a quote character or a control character; dates are ISO text; money is in
cents; :meth:`Pools.person` gives one consistent person per row (the name, email and username of a row
agree).
"""

from __future__ import annotations

import datetime as dt
import functools
import random
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PHASES", "TODAY", "Line", "Pools", "Vocabulary", "begins", "created_day", "date_side", "day_part",
           "faker_pool", "state_phase"]

#: what a file of each extension is (``report``, ``photo``), and when or which version (``q3``, ``final``)
_DOCS = ("report", "invoice", "contract", "minutes", "proposal", "summary", "statement", "agenda", "estimate",
         "letter", "notes", "checklist", "handbook", "quote")
_FILE_NOUNS: dict[str, tuple[str, ...]] = {
    "pdf": _DOCS, "docx": _DOCS, "txt": ("notes", "readme", "log", "changelog", "todo", "summary"),
    "xlsx": ("budget", "timesheet", "inventory", "forecast", "expenses", "schedule", "price-list"),
    "csv": ("export", "inventory", "contacts", "transactions", "orders", "attendance"),
    "png": ("photo", "scan", "diagram", "screenshot", "floor-plan", "logo"),
    "jpg": ("photo", "scan", "site-photo", "receipt", "floor-plan"),
}
_FILE_WHEN = ("q1", "q2", "q3", "q4", "2025", "2026", "final", "draft", "v2", "signed", "march", "april")

#: words of a money field a customer holds with a service, spent in small sums: a store's credit, an app's wallet
_HELD = ("wallet", "gift", "prepaid", "stored_value", "voucher")

#: words of a title that place it in a part of the day: the first and last hour it may start at
_DAY_PARTS: dict[str, tuple[int, int]] = {
    "breakfast": (7, 9), "morning": (6, 10), "sunrise": (6, 7), "brunch": (10, 12), "lunchtime": (12, 13),
    "lunch": (12, 13), "midday": (11, 13), "noon": (12, 12), "afternoon": (13, 16), "matinee": (13, 15),
    "teatime": (15, 17), "evening": (18, 20), "night": (19, 22), "nightly": (19, 22), "late": (21, 22),
    "midnight": (23, 23),
}
_WEEKEND = {"weekend", "saturday", "sunday"}
_ARTICLES = ("The ", "A ", "An ")

TODAY = dt.date(2026, 3, 16)
"""The world's today: fixed, so a task's "next week" and a row's ``due_date`` agree in every run."""

_POOL_SIZE = 400
_CLEAN = re.compile(r"['\"\\\x00-\x1f]")
_EMAIL_DOMAINS = ("example.com", "example.net", "example.org", "mail.example.com", "post.example.net")
_FUTURE = ("due", "deadline", "expires", "expiry", "scheduled", "start", "starts", "begin", "departure", "departs",
           "arrival", "arrives",
           "appointment", "next", "until", "end", "ends", "checkin", "check_in", "checkout", "check_out", "event",
           "pickup", "renews", "valid", "visit", "return")
_PAST = ("created", "opened", "placed", "joined", "signed", "registered", "born", "birth", "hired", "since",
         "last", "updated", "modified", "received", "shipped", "paid", "closed", "issued", "purchased", "booked",
         "borrowed", "filed", "submitted", "posted", "applied", "enrolled", "incident", "occurred", "reported",
         "printed", "logged", "ordered", "archived", "published", "requested", "sent", "uploaded", "started",
         "returned")
#: words of a day ahead that begins what the record is for (a pickup, a departure, a visit); other days ahead end it
#: (a return, a due day, an expiry)
_START = ("start", "starts", "begin", "begins", "pickup", "departure", "departs", "arrival", "arrives", "checkin",
          "check_in", "visit", "appointment", "event", "scheduled")
#: words of a day behind on which what the record is for began (a ride's start, a loan's borrowing day)
_BEGAN = ("started", "borrowed", "picked", "checked", "departed", "boarded", "joined")
#: words of a day behind on which a record came to be: what refers to the record comes after it
_CREATED = ("created", "opened", "joined", "registered", "since", "issued", "started", "placed", "booked", "signed",
            "enrolled", "applied", "filed", "submitted", "ordered", "purchased", "hired")

PHASES = ("new", "booked", "under_way", "lapsed", "over", "void", "open")
"""What a record's lifecycle state says of its dates (:func:`state_phase`):

* ``new``: just asked for and waiting to be handled (pending, queued, submitted): its days behind are recent;
* ``booked``: a thing to come is reserved (confirmed, booked, scheduled): its days ahead, and the days on which the
  records it refers to begin (a booked flight's departure), lie ahead;
* ``under_way``: begun and not over (checked in, picked up, in progress): its days that begin it are behind and
  recent, the days that end it ahead;
* ``lapsed``: its end has passed while it stays open (overdue, past due, expired): its days ahead are behind;
* ``over``: it happened (delivered, completed, flown; and any state the world calls final): its days ahead are behind
  today, after its days behind, and so are the days the records it refers to begin (a flown booking's flight);
* ``void``: it was called off (cancelled, refunded, rejected): nothing follows about the records it refers to (a
  final one has its days ahead behind, as a finished record);
* ``open``: anything else (active, on hold): its days ahead lie ahead."""

_PHASE_WORDS: dict[str, tuple[str, ...]] = {
    "lapsed": ("overdue", "past_due", "expired", "lapsed", "late"),
    "void": ("cancelled", "canceled", "refunded", "rejected", "denied", "revoked", "withdrawn", "dropped", "deleted",
             "destroyed", "void", "voided", "declined", "yanked", "reversed", "no_show", "abandoned", "failed"),
    "over": ("completed", "complete", "done", "delivered", "flown", "used", "attended", "checked_out", "returned",
             "packed", "fulfilled", "finished", "departed", "landed", "arrived", "served", "closed",
             "resolved", "solved", "ended", "unloaded", "redeemed", "hired", "reimbursed", "paid_out"),
    "under_way": ("checked_in", "in_progress", "picked_up", "in_use", "boarding", "in_transit", "out_for_delivery",
                  "printing", "picking", "loaned", "borrowed", "started", "underway", "ongoing", "seated", "cooking"),
    "new": ("pending", "new", "placed", "queued", "waiting", "requested", "submitted", "reported", "filed", "applied",
            "tentative", "draft", "processing", "preparing", "screening", "review", "awaiting", "received"),
    "booked": ("confirmed", "booked", "reserved", "scheduled", "guaranteed", "upcoming", "registered", "planned",
               "waitlisted", "enrolled", "paid"),
}


@functools.cache
def faker_pool(provider: str, size: int = _POOL_SIZE) -> tuple[str, ...]:
    """``size`` distinct values of a Faker provider (``"city"``, ``"company"``...), made once per process.

    The Faker instance is seeded with a constant, so the pool is the same in every process of one Faker
    version; quotes and control characters are removed.
    """
    from faker import Faker

    fake = Faker("en_US")
    fake.seed_instance(20260316)
    fn = getattr(fake, provider)
    out: dict[str, None] = {}
    for _ in range(size * 4):
        value = _CLEAN.sub("", str(fn())).strip()
        if value:
            out[value] = None
        if len(out) >= size:
            break
    return tuple(out)


@dataclass
class Line:
    """One kind of thing titles name: its titles, the adjectives that fit each of them, and what a record titled
    from it has with it (the value of its category field, a price range in currency units)."""

    titles: list[str]
    adjectives: list[str] = field(default_factory=list)
    category: str | None = None
    price: tuple[int, int] | None = None


@dataclass
class Vocabulary:
    """The domain's words that values are made of (from the domain catalog, or the blueprint's nouns)."""

    titles: list[str] = field(default_factory=list)  #: names of things of no kind (rooms, courses)
    adjectives: list[str] = field(default_factory=list)  #: to vary those titles (``Compact``, ``Deluxe``)
    lines: list[Line] = field(default_factory=list)  #: names of things by kind, each with its adjectives
    notes: list[str] = field(default_factory=list)  #: sentences for free-text fields (notes, reasons)
    categories: list[str] = field(default_factory=list)  #: values of a category field without its own
    prefixes: dict[str, str] = field(default_factory=dict)  #: entity name -> code prefix (``order`` -> ``ORD``)
    extensions: list[str] = field(default_factory=lambda: ["pdf", "docx", "xlsx", "csv", "png", "txt"])


_GENERIC_NOTES = [
    "Please call before delivery", "Customer asked for a paper receipt", "Leave at the front desk",
    "Follow up next week", "Urgent: needed before the weekend", "Second request from the same person",
    "Approved by the team lead", "Waiting on a reply from the supplier", "Handle with care",
    "Reported through the web form", "Gift: do not include the invoice", "Requested a morning slot",
]


class Pools:
    """Value sources for one environment (see the module docstring); every draw comes from ``rng``."""

    def __init__(self, rng: random.Random, vocabulary: Vocabulary | None = None, currency: str = "USD"):
        self.rng = rng
        self.vocab = vocabulary or Vocabulary()
        self.currency = currency
        self._codes: dict[str, set[int]] = {}

    # -- Faker pools ---------------------------------------------------------------------------------
    def pick(self, provider: str) -> str:
        return self.rng.choice(faker_pool(provider))

    def person(self, ctx: dict[str, Any]) -> dict[str, str]:
        """One person per row: the row's name, email and username agree."""
        row = ctx.setdefault("row", {})
        found = row.get("__person")
        if found is None:
            first = self.rng.choice(faker_pool("first_name"))
            last = self.rng.choice(faker_pool("last_name"))
            n = self.rng.randint(1, 999)
            local = self.rng.choice([f"{first}.{last}", f"{first[0]}{last}", f"{first}{n}", f"{first}_{last}{n}"])
            found = {"name": f"{first} {last}", "email": f"{local.lower()}@{self.rng.choice(_EMAIL_DOMAINS)}",
                     "username": f"{first.lower()}_{last.lower()}_{n}"}
            row["__person"] = found
        return found

    def phone(self) -> str:
        r = self.rng
        return f"+1-{r.randint(201, 989)}-{r.randint(200, 999)}-{r.randint(0, 9999):04d}"

    # -- the domain's vocabulary ---------------------------------------------------------------------
    def lines(self) -> list[Line]:
        """The lines titles are drawn from: the vocabulary's lines, its flat titles as one more line of no kind
        (with the flat adjectives), or Faker's words when it has no titles at all."""
        out = list(self.vocab.lines)
        if self.vocab.titles or not out:
            titles = self.vocab.titles or [w.capitalize() for w in faker_pool("word")[:60]]
            out.append(Line(list(titles), list(self.vocab.adjectives)))
        return out

    def title(self, ctx: dict[str, Any]) -> str:
        """A title, every title as likely as another, with an adjective of its own line 70% of the time. The line
        stays with the row (``row["__line"]``): the row's category, money and time of day follow from it."""
        pairs = [(line, t) for line in self.lines() for t in line.titles]
        line, base = self.rng.choice(pairs)
        title = base
        if line.adjectives and self.rng.random() < 0.7 and not base.startswith(_ARTICLES):
            title = f"{self.rng.choice(line.adjectives)} {base}"  # (never "Evening The Tempest")
        row = ctx.setdefault("row", {})
        row["__line"], row["__title"] = line, title
        return title

    def sentence(self, ctx: dict[str, Any]) -> str:
        return self.rng.choice(self.vocab.notes or _GENERIC_NOTES)

    def category(self, ctx: dict[str, Any]) -> str:
        """One of the field's values (else the vocabulary's categories); for a ``category`` field of a row titled
        from a line, the line's category when it is one of them."""
        f = ctx.get("field")
        values = list(getattr(f, "enum", None) or []) or self.vocab.categories or ["standard", "priority", "basic"]
        line = (ctx.get("row") or {}).get("__line")
        if getattr(f, "kind", "category") == "category" and line is not None and line.category in values:
            return str(line.category)
        return self.rng.choice(values)

    def code(self, ctx: dict[str, Any]) -> str:
        """A prefix and five digits, distinct within the prefix (``ORD-20417``)."""
        prefix = ctx.get("prefix") or "REF"
        used = self._codes.setdefault(prefix, set())
        while True:
            n = self.rng.randint(10000, 99999)
            if n not in used:
                used.add(n)
                return f"{prefix}-{n}"

    def file_name(self, ctx: dict[str, Any]) -> str:
        """A file a person keeps: what the document is, then when, whose or which version (``q3-report.pdf``,
        ``site-photo-harris.jpg``); an image is a photo or a scan, a sheet a budget or a list."""
        ext = self.rng.choice(self.vocab.extensions)
        nouns = _FILE_NOUNS.get(ext, _FILE_NOUNS["pdf"])
        qualifier = self.rng.choice([*_FILE_WHEN, self.rng.choice(faker_pool("last_name")).lower()])
        noun = self.rng.choice(nouns)
        stem = f"{qualifier}-{noun}" if qualifier in _FILE_WHEN[:6] else f"{noun}-{qualifier}"
        return f"{re.sub(r'[^a-z0-9-]', '', stem)}.{ext}"

    def file_path(self, ctx: dict[str, Any]) -> str:
        root = self.rng.choice(["/srv/archive", "/home/shared", "/data/projects", "/var/reports"])
        return f"{root}/{self.rng.choice(['2025', '2026'])}/{self.file_name(ctx)}"

    def url(self, ctx: dict[str, Any]) -> str:
        host = self.hostname(ctx)
        path = "-".join(self.rng.sample([w.lower() for w in faker_pool("word")], 2))
        return f"https://{host}/{path}"

    def hostname(self, ctx: dict[str, Any]) -> str:
        word = self.rng.choice(faker_pool("word")).lower()
        return f"{word}-{self.rng.randint(1, 40)}.{self.rng.choice(['example.com', 'example.org', 'internal.net'])}"

    def version(self) -> str:
        r = self.rng
        return f"{r.randint(0, 5)}.{r.randint(0, 20)}.{r.randint(0, 9)}"

    # -- numbers and dates, shaped by the field's name -----------------------------------------------
    def _name(self, ctx: dict[str, Any]) -> str:
        return str(getattr(ctx.get("field"), "name", "") or "")

    def _bounds(self, ctx: dict[str, Any], lo: float, hi: float) -> tuple[float, float]:
        f = ctx.get("field")
        low = getattr(f, "minimum", None)
        high = getattr(f, "maximum", None)
        lo = max(lo, low) if low is not None else lo
        hi = min(hi, high) if high is not None else hi
        return (lo, hi) if lo <= hi else (hi, hi)

    def money(self, ctx: dict[str, Any]) -> int:
        """Cents: a price tens of dollars, a fee a few, money a customer holds with a service (store credit, a
        wallet, a gift card) up to a few hundred, a deposit hundreds, a balance, limit or budget thousands."""
        name = self._name(ctx)
        if any(w in name for w in _HELD) or ("credit" in name and "limit" not in name):
            lo, hi = 0, 400
        elif "deposit" in name:
            lo, hi = 100, 1500
        elif any(w in name for w in ("balance", "limit", "budget", "salary", "rent")):
            lo, hi = 200, 12000
        elif any(w in name for w in ("fee", "charge", "fine", "tip", "shipping", "penalty")):
            lo, hi = 2, 60
        else:
            lo, hi = 5, 600
        line = (ctx.get("row") or {}).get("__line")
        if line is not None and line.price is not None:  # a thing's price goes with what it is (a chair, a mug)
            lo, hi = line.price
        low, high = self._bounds(ctx, lo * 100, hi * 100)
        cents = self.rng.randint(int(low), int(high))
        return cents - cents % 5 if cents > 1000 else cents

    def integer(self, ctx: dict[str, Any], lo: int, hi: int) -> int:
        a, b = self._bounds(ctx, lo, hi)
        return self.rng.randint(int(a), int(b))

    def quantity(self, ctx: dict[str, Any]) -> int:
        """A count of items in one line: mostly 1 to 3."""
        a, b = self._bounds(ctx, 1, 12)
        return max(int(a), min(int(b), self.rng.choice([1, 1, 1, 2, 2, 3, 4, 6])))

    def real(self, ctx: dict[str, Any], lo: float, hi: float) -> float:
        a, b = self._bounds(ctx, lo, hi)
        return round(self.rng.uniform(a, b), 1) or 0.5

    def minutes(self, ctx: dict[str, Any]) -> int:
        return self.rng.choice([15, 20, 30, 45, 60, 75, 90, 120, 150, 180])

    def boolean(self, ctx: dict[str, Any]) -> int:
        return int(self.rng.random() < 0.4)

    def _day_offset(self, ctx: dict[str, Any]) -> int:
        """Days from today to the field's day: on the side its name says (:func:`date_side`), moved by the record's
        phase (``ctx["phase"]``, :data:`PHASES`) and never before the day the record it belongs to was made
        (``ctx["floor"]``: days back to it)."""
        name = self._name(ctx)
        side = date_side(name)
        phase = ctx.get("phase") or "open"
        row = ctx.get("row") or {}
        floor = max(1, int(ctx.get("floor") or 400))
        starts = _named(name, _START)
        if side > 0 and (phase in ("over", "lapsed") or (phase == "void" and ctx.get("final"))
                         or (phase == "under_way" and starts)):
            # its day ahead has passed: after its days behind (a delivered order's delivery day, a picked-up car's
            # pickup, an overdue loan's due day); a day that began it is recent
            back = _days_back(row)
            back = min(back, 8) if phase == "under_way" else back
            return -self.rng.randint(1, max(1, back - 1))
        if side > 0:  # (a second day ahead ends what the first begins: a rental's return after its pickup)
            begun = _days_ahead(row)
            return begun + self.rng.randint(1, 14) if begun else self.rng.randint(1, 120)
        if side < 0:
            recent = phase == "new" or (phase == "under_way" and _named(name, _BEGAN))
            return -self.rng.randint(1, min(floor, 14 if recent else 400))
        return self.rng.randint(-min(floor, 200), 60)

    def date(self, ctx: dict[str, Any]) -> str:
        """A day on the side of today the field's name puts it (:func:`date_side`), as the record's phase has it
        (:meth:`_day_offset`): a day ahead of a record that is over (a delivered order's delivery day, a completed
        visit) lies between the row's latest past day and today."""
        return (TODAY + dt.timedelta(days=self._day_offset(ctx))).isoformat()

    def datetime(self, ctx: dict[str, Any]) -> str:
        """A date and time, on the side of today :meth:`date` says; a row whose title names a part of the day or the
        week (``Morning Yoga``, ``Matinee``, ``Weekend Bootcamp``) is on it (:func:`day_part`)."""
        day = TODAY + dt.timedelta(days=self._day_offset(ctx))
        hours, weekend = day_part(str((ctx.get("row") or {}).get("__title") or ""))
        if weekend and day.weekday() < 5:  # that week's Saturday or Sunday; the one before, for a day in the past
            day += dt.timedelta(days=5 - day.weekday() + self.rng.randint(0, 1)) if day >= TODAY else \
                -dt.timedelta(days=day.weekday() + 1 + self.rng.randint(0, 1))
        lo, hi = hours or (8, 18)
        return f"{day.isoformat()}T{self.rng.randint(lo, hi):02d}:{self.rng.choice([0, 15, 30, 45]):02d}"


def date_side(name: str) -> int:
    """Which side of today a date field's name puts it: ``1`` ahead (``due_date``, ``valid_until``), ``-1`` behind
    (``placed_on``, ``started_on``), ``0`` either; whole words first (``started_on`` is behind although it contains
    "start"; ``paid_until`` is ahead), then parts of words."""
    words = set(name.split("_"))
    if words & set(_FUTURE) or (not words & set(_PAST) and any(w in name for w in _FUTURE)):
        return 1
    return -1 if any(w in name for w in _PAST) else 0


def state_phase(state: str | None, final: bool = False) -> str:
    """What a lifecycle state says of a record's dates (:data:`PHASES`), by its words: ``flown`` is ``over``,
    ``checked_in`` ``under_way``, ``past_due`` ``lapsed``; a state the world calls ``final`` and no word places is
    ``over``; None (no lifecycle) and an unknown state are ``open``. Whole states first, then their words, in the
    order of :data:`_PHASE_WORDS` (``cancelled`` before anything, ``overdue`` before ``due``)."""
    if not state:
        return "open"
    words = state.lower().split("_")
    for match in (lambda w: state.lower() == w, lambda w: "_" not in w and w in words):
        for phase, vocab in _PHASE_WORDS.items():
            if any(match(w) for w in vocab):
                return "over" if final and phase not in ("void", "lapsed") else phase
    return "over" if final else "open"


def begins(name: str) -> bool:
    """Whether a day ahead named ``name`` begins what its record is for (a pickup, a departure), not ends it."""
    return _named(name, _START)


def created_day(name: str) -> bool:
    """Whether a day behind named ``name`` is when its record came to be (``created_on``, ``opened_on``)."""
    return _named(name, _CREATED)


def _named(name: str, vocab: tuple[str, ...]) -> bool:
    words = set(name.lower().split("_"))
    return bool(words & set(vocab)) or any("_" in w and w in name.lower() for w in vocab)


def _days_back(row: dict[str, Any]) -> int:
    """Days from the row's latest day before today (a date or date-time value drawn already) to today; 121 if none."""
    days = [(TODAY - d).days for v in row.values() if isinstance(v, str) and (d := _day(v)) is not None and d < TODAY]
    return min(days, default=121)


def _days_ahead(row: dict[str, Any]) -> int:
    """Days from today to the row's latest day ahead of it drawn already; 0 if none."""
    return max([(d - TODAY).days for v in row.values() if isinstance(v, str) and (d := _day(v)) is not None
                and d > TODAY], default=0)


def _day(value: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(value[:10]) if re.match(r"\d{4}-\d{2}-\d{2}", value) else None
    except ValueError:
        return None


def day_part(title: str) -> tuple[tuple[int, int] | None, bool]:
    """The hours (first and last starting hour) a title's words place it in, and whether they place it on a
    weekend: ``Morning Spin`` -> ``((6, 10), False)``; ``Weekend Matinee`` -> ``((13, 15), True)``; ``(None, False)``
    for a title that names no time."""
    words = set(re.findall(r"[a-z]+", title.lower()))
    hours = next((h for w, h in _DAY_PARTS.items() if w in words), None)
    return hours, bool(words & _WEEKEND)

"""Word tables of the compiler and the AST writer: verbs by operation, name-based type hints, stop words.

Role: the vocabulary that maps a document's method names to operations
(``add_item`` → create of ``item``; the verbs are :mod:`corpora.verbs`) and its attribute / parameter names to
SQLite types (``timeout`` → REAL, ``is_open`` → BOOLEAN). Pure data plus two
lookups; no analysis happens here.
"""

from __future__ import annotations

import re

from corpora.verbs import verb_operation

__all__ = ["STATUS_INITIAL", "STATUS_TARGET", "STOP_WORDS", "hint_type", "verb_kind", "word_list", "word_set"]


def word_list(text: str) -> tuple[str, ...]:
    """The whitespace-separated words of ``text``, in order."""
    return tuple(text.split())


def word_set(text: str) -> frozenset[str]:
    """The whitespace-separated words of ``text``."""
    return frozenset(text.split())



STATUS_TARGET: dict[str, str] = {
    "close": "closed", "cancel": "cancelled", "expire": "expired", "release": "released",
    "acquire": "acquired", "detach": "detached", "finish": "finished", "stop": "stopped",
    "shutdown": "shut_down", "abort": "aborted", "pause": "paused", "resume": "active",
    "suspend": "suspended", "start": "running", "enable": "enabled", "disable": "disabled",
    "lock": "locked", "unlock": "unlocked", "archive": "archived", "activate": "active",
    "deactivate": "inactive", "approve": "approved", "reject": "rejected", "complete": "completed",
}
"""The status a status verb moves a row to."""

STATUS_INITIAL: dict[str, str] = {
    "close": "open", "cancel": "pending", "approve": "pending", "reject": "pending", "complete": "pending",
    "finish": "pending", "start": "idle", "stop": "running", "lock": "unlocked", "unlock": "locked",
    "acquire": "free", "release": "held", "enable": "disabled", "disable": "enabled", "resume": "paused",
}
"""The initial status of rows when the first status verb is this one (default ``active``)."""

STOP_WORDS = word_set(
    "self cls none true false args kwargs init new the and for not with from this that into "
    "none object return value values get set add del is has can str int float bool dict list "
    "tuple type func obj tmp temp foo bar baz spam eggs ham test tests main default data info "
    "base impl other result results res ret val arg param params kw kws item items key keys "
    "elem node util utils lambda yield pass raise class def import except finally while async "
    "await global nonlocal assert repr hash len iter next call enter exit getattr setattr "
    "getitem setitem delitem contains http https www com org net html"
)
"""Words never used as generated values (too generic or Python syntax)."""

_BOOL_PREFIX = ("is_", "has_", "can_", "should_", "allow_", "use_", "enable_", "no_", "skip_", "show_", "keep_")
_BOOL_JOINED = re.compile(r"^(is(?!sue|olat|bn)|has(?!h)|can(?!cel|on|vas))[a-z]{3,}$")
_BOOL_WORDS = word_set(
    "enabled disabled closed active verbose strict readonly recursive visible hidden locked "
    "done ready dirty cancelled canceled finished running paused quiet force dry_run daemon "
    "debug blocking shared optional required deprecated public private archived pinned starred "
    "muted"
)
_REAL_WORDS = word_set(
    "timeout interval delay ratio rate factor scale weight price cost amount balance score "
    "threshold probability alpha temperature elapsed duration latitude longitude percent "
    "fraction volume"
)
_INT_WORDS = word_set(
    "count size num number len length limit port index idx pos position offset level depth "
    "width height lineno line col column year month day hour minute second priority capacity "
    "maxsize retries tries attempts pid uid gid total indent tabsize bufsize blocksize age rank "
    "quantity qty max min seq serial version maxlen backlog flags order stock errors_count"
)
_TEXT_WORDS = word_set(
    "name title label key path filename dirname host hostname url uri prefix suffix mode "
    "encoding text msg message description desc tag kind category command cmd user username "
    "email address domain lang language format fmt sep delimiter charset method scheme protocol "
    "owner author subject topic comment note section word pattern ident identifier dest root "
    "ext extension locale alias nickname color colour summary sender recipient family group "
    "channel queue realm region zone city country state_name directory folder target source"
)


def verb_kind(word: str) -> str | None:
    """The operation a method's first word maps to (``add`` → ``create``; :mod:`corpora.verbs`), or ``None``."""
    return verb_operation(word)


def hint_type(name: str) -> str | None:
    """A SQLite type suggested by a snake_case name alone, or ``None`` when the name says nothing."""
    if name.startswith(_BOOL_PREFIX) or name in _BOOL_WORDS or _BOOL_JOINED.match(name):
        return "BOOLEAN"
    last = name.rsplit("_", 1)[-1]
    first = name.split("_", 1)[0]
    if name in _REAL_WORDS or last in _REAL_WORDS:
        return "REAL"
    if name in _INT_WORDS or last in _INT_WORDS or (first in ("max", "min", "num", "n") and "_" in name):
        return "INTEGER"
    if name in _TEXT_WORDS or last in _TEXT_WORDS or re.search(r"(name|path|file|dir|url)$", name):
        return "TEXT"
    return None

"""The domain catalog: hand-written worlds (``envgen/world/domains/*.yaml``), validated, with what each can host.

Role: each YAML file is one **world blueprint** (:class:`~envgen.world.blueprint.WorldBlueprint`, the
format of ``envgen/world/WORLDS.md``) plus two top-level keys of **catalog metadata** kept outside the
blueprint (:class:`DomainMeta`):

* ``patterns``: the document patterns (:data:`PATTERNS`) the domain can host: a queue, a lock, a ledger...
  A writer that reads a document with that pattern (``asyncio.Queue``) picks a domain that hosts it;
* ``hosts``: per pattern, which of the domain's entities, fields, references and states plays each of
  the pattern's roles (:data:`PATTERN_ROLES`): ``queue: {container: printer, item: print_job,
  capacity: queue_limit, waiting: queued, taken: printing}``.

Contract:

* :func:`domains` returns every domain, sorted by id; :func:`domain` one by id (an unknown id raises
  :class:`UnknownDomain`, a :class:`KeyError`, with a close-match suggestion); :func:`entries` and
  :func:`entry` return them with their metadata; :func:`hosting` the domains that can host a pattern.
  Each call returns fresh copies: a caller may change what it gets.
* A file is valid only when its blueprint validates, its id is its file name, its metadata validates and
  every role names something the blueprint has, of the right sort (:meth:`DomainMeta.problems`). A bad
  file raises :class:`CatalogError` naming the file and each field at fault; the whole catalog is loaded
  (and checked) at the first call.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from corpora.errors import did_you_mean
from envgen.world.blueprint import EntitySpec, WorldBlueprint

__all__ = ["DOMAINS_DIR", "PATTERNS", "PATTERN_ROLES", "CatalogEntry", "CatalogError", "DomainMeta", "Role",
           "UnknownDomain", "domain", "domains", "entries", "entry", "hosting", "load_domain"]

DOMAINS_DIR: Path = Path(__file__).resolve().parent / "domains"
"""The folder of the catalog's YAML files (package data)."""

Pattern = Literal["queue", "stack", "lock", "scheduler", "ledger", "archive", "registry", "lifecycle", "set", "tree",
                  "generic"]
PATTERNS: tuple[str, ...] = Pattern.__args__  # type: ignore[attr-defined]
"""The document patterns a domain can host."""


@dataclass(frozen=True)
class Role:
    """One role of a pattern: what it names in the blueprint.

    ``sort`` is ``entity`` (an entity's name), ``field`` (a field of the entity playing role ``of``),
    ``state`` (a lifecycle state of that entity) or ``ref`` (a reference of that entity).
    ``parent``: for an entity role, the role whose entity it refers to: through its owner reference (it belongs
    there) when ``owned``, through any reference otherwise. ``kinds``: for a field role, the semantic kinds it
    may have (empty: any)."""

    name: str
    sort: Literal["entity", "field", "state", "ref"]
    doc: str
    of: str | None = None
    parent: str | None = None
    owned: bool = True
    required: bool = True
    kinds: tuple[str, ...] = ()


_INTS = ("count", "integer", "quantity")
_AMOUNTS = ("money", "count", "integer", "quantity", "number")
_QUEUE = (Role("container", "entity", "the record that holds the waiting items (a printer, a dock)"),
          Role("item", "entity", "what waits in it (a print job)", parent="container"),
          Role("capacity", "field", "the container's integer bound on waiting items", of="container", required=False,
               kinds=_INTS),
          Role("waiting", "state", "the item's state while it waits", of="item"),
          Role("taken", "state", "the item's state once taken", of="item"))
PATTERN_ROLES: dict[str, tuple[Role, ...]] = {
    "queue": _QUEUE,
    "stack": _QUEUE,
    "lock": (Role("resource", "entity", "what one holder at a time takes (a desk, a laptop)"),
             Role("holder", "ref", "the resource's nullable reference to who holds it", of="resource")),
    "scheduler": (Role("calendar", "entity", "whose time is booked (a clinician, a room)"),
                  Role("event", "entity", "what is booked (an appointment)", parent="calendar", owned=False),
                  Role("when", "field", "the event's date or time", of="event", kinds=("date", "datetime")),
                  Role("cancelled", "state", "the event's state once cancelled", of="event", required=False)),
    "ledger": (Role("account", "entity", "what holds a balance"),
               Role("balance", "field", "the account's amount", of="account", kinds=_AMOUNTS),
               Role("entry", "entity", "a posting against an account", parent="account", required=False)),
    "archive": (Role("archive", "entity", "the container of stored members (a box, a bundle)"),
                Role("member", "entity", "a stored member (a document)", parent="archive"),
                Role("name", "field", "the member's name inside the archive", of="member",
                     kinds=("file_name", "file_path", "title", "code"))),
    "registry": (Role("entry", "entity", "what is registered under a unique key (a package)"),
                 Role("owner", "entity", "who registers entries", required=False),
                 Role("version", "field", "the entry's version", of="entry", required=False, kinds=("version",))),
    "lifecycle": (Role("record", "entity", "what moves through states"),
                  Role("initial", "state", "its first state", of="record"),
                  Role("final", "state", "a state it never leaves", of="record")),
    "set": (Role("container", "entity", "what has members (a course section, a mailing list)"),
            Role("member", "entity", "one membership, at most once per container", parent="container",
                 owned=False)),
    "tree": (Role("root", "entity", "the top level (a drive)"),
             Role("branch", "entity", "the middle level (a folder)", parent="root"),
             Role("leaf", "entity", "the bottom level (a file)", parent="branch")),
    "generic": (),
}
"""Each pattern's roles, in the order a ``hosts`` entry lists them."""


class CatalogError(ValueError):
    """A catalog file that is not a valid domain; the message names the file and each field at fault."""


class UnknownDomain(KeyError):
    """No catalog domain (or pattern) has that name; the message suggests close matches."""

    def __str__(self) -> str:  # KeyError would print the message with quotes around it
        return str(self.args[0]) if self.args else "unknown domain"


class DomainMeta(BaseModel):
    """A domain's catalog metadata (the YAML's ``patterns`` and ``hosts`` keys; see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    patterns: list[Pattern] = Field(min_length=1, description="the document patterns the domain can host")
    hosts: dict[Pattern, dict[str, str]] = Field(
        default_factory=dict, description="per pattern, role name -> the entity, field, reference or state playing it")

    def problems(self, bp: WorldBlueprint) -> list[str]:
        """Why this metadata does not fit ``bp`` (``hosts.queue.item: ...``); empty when it does."""
        out = [f"patterns: {p!r} is listed twice" for i, p in enumerate(self.patterns) if p in self.patterns[:i]]
        for p in self.patterns:
            if p not in self.hosts and PATTERN_ROLES[p]:
                roles = ", ".join(r.name for r in PATTERN_ROLES[p])
                out.append(f"hosts.{p}: missing: say which entity plays each role ({roles})")
        ents = {e.name: e for e in bp.entities}
        for p, given in self.hosts.items():
            if p not in self.patterns:
                out.append(f"hosts.{p}: {p!r} is not in patterns")
            out += _host_problems(p, given, ents)
        return out


def _host_problems(pattern: str, given: dict[str, str], ents: dict[str, EntitySpec]) -> list[str]:
    """Why the roles ``given`` for ``pattern`` do not fit the entities ``ents`` (``hosts.<pattern>.<role>: ...``)."""
    roles = {r.name: r for r in PATTERN_ROLES[pattern]}
    where = f"hosts.{pattern}"
    out = [f"{where}.{k}: {pattern} has no role {k!r}{did_you_mean(k, roles)} (roles: {', '.join(roles) or 'none'})"
           for k in given if k not in roles]
    for role in roles.values():
        value = given.get(role.name)
        if value is None:
            if role.required:
                out.append(f"{where}.{role.name}: missing ({role.doc})")
            continue
        if role.sort == "entity":
            problem = _entity_problem(role, value, given, ents)
        else:
            holder = ents.get(given.get(role.of or "", ""))
            problem = None if holder is None else _member_problem(role, value, holder)  # else: reported on its own
        if problem:
            out.append(f"{where}.{role.name}: {problem}")
    return out


def _entity_problem(role: Role, value: str, given: dict[str, str], ents: dict[str, EntitySpec]) -> str | None:
    ent = ents.get(value)
    if ent is None:
        return f"no entity {value!r}{did_you_mean(value, ents)}"
    other = given.get(role.parent or "")
    if other is None or other not in ents:
        return None
    owner = next((r.entity for r in ent.refs if r.owner), None)
    if role.owned and owner != other:
        return f"{value!r} must belong to the {role.parent} {other!r} (an owner reference), but its owner is {owner!r}"
    if not role.owned and not any(r.entity == other for r in ent.refs):
        return f"{value!r} must refer to the {role.parent} {other!r} (a reference)"
    return None


def _member_problem(role: Role, value: str, holder: EntitySpec) -> str | None:
    """A state, reference or field role ``value`` of the entity ``holder``."""
    if role.sort == "state":
        return None if value in holder.states else f"{value!r} is not a state of {holder.name} ({holder.states})"
    if role.sort == "ref":
        ref = next((r for r in holder.refs if r.name == value), None)
        if ref is None:
            return f"{holder.name} has no reference {value!r}{did_you_mean(value, [r.name for r in holder.refs])}"
        return None if ref.nullable else f"the reference {value!r} of {holder.name} must be nullable (free when null)"
    fields = {f.name: f for f in holder.fields}
    f = fields.get(value)
    if f is None and value != holder.key.name:
        return f"{holder.name} has no field {value!r}{did_you_mean(value, fields)}"
    if f is None:
        return None
    if role.kinds and f.kind not in role.kinds:
        return f"{holder.name}.{value} is a {f.kind} field; {role.name} needs one of {role.kinds}"
    return None


@dataclass(frozen=True)
class CatalogEntry:
    """One catalog domain: its blueprint, its metadata and its file."""

    blueprint: WorldBlueprint
    meta: DomainMeta
    path: Path

    @property
    def id(self) -> str:
        return self.blueprint.id

    def host(self, pattern: str) -> dict[str, str] | None:
        """The roles of ``pattern`` in this domain (``{}`` for ``generic``), or None when it cannot host it."""
        if pattern not in self.meta.patterns:
            return None
        return dict(self.meta.hosts.get(pattern, {}))  # type: ignore[call-overload]

    def copy(self) -> CatalogEntry:
        return CatalogEntry(self.blueprint.model_copy(deep=True), self.meta.model_copy(deep=True), self.path)


def _errors(e: ValidationError, prefix: str = "") -> list[str]:
    return [f"{prefix}{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in e.errors()]


# libyaml's safe loader when PyYAML's wheel has it (10x faster: the 30 domains load in 0.6 s, not 6 s, once per
# process); the pure-Python one reads the same documents the same way
_SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_domain(path: str | Path) -> CatalogEntry:
    """One domain file, checked (see the module docstring); a bad file raises :class:`CatalogError`."""
    path = Path(path)
    try:
        raw: Any = yaml.load(path.read_text(encoding="utf-8"), Loader=_SAFE_LOADER)
    except (OSError, yaml.YAMLError) as e:
        raise CatalogError(f"{path}: cannot read the domain: {e}") from None
    if not isinstance(raw, dict):
        raise CatalogError(f"{path}: a domain file is a YAML mapping (a world blueprint with patterns and hosts), "
                           f"got {type(raw).__name__}")
    meta_raw = {k: raw.pop(k) for k in ("patterns", "hosts") if k in raw}
    problems: list[str] = []
    bp: WorldBlueprint | None = None
    meta: DomainMeta | None = None
    try:
        bp = WorldBlueprint.model_validate(raw)
    except ValidationError as e:
        problems += _errors(e)
    try:
        meta = DomainMeta.model_validate(meta_raw)
    except ValidationError as e:
        problems += _errors(e)
    if bp is not None and bp.id != path.stem:
        problems.append(f"id: {bp.id!r} must be the file's name, {path.stem!r}")
    if bp is not None and meta is not None:
        problems += meta.problems(bp)
    if problems or bp is None or meta is None:
        raise CatalogError(f"{path}: not a valid catalog domain:\n  " + "\n  ".join(problems))
    return CatalogEntry(bp, meta, path)


@functools.cache
def _load_all(folder: Path) -> dict[str, CatalogEntry]:
    found = [load_domain(p) for p in sorted(folder.glob("*.yaml"))]
    return {e.id: e for e in sorted(found, key=lambda e: e.id)}


def entries() -> list[CatalogEntry]:
    """Every catalog domain with its metadata, sorted by id."""
    return [e.copy() for e in _load_all(DOMAINS_DIR).values()]


def entry(domain_id: str) -> CatalogEntry:
    """The catalog domain ``domain_id`` with its metadata; an unknown id raises :class:`KeyError`."""
    found = _load_all(DOMAINS_DIR)
    if domain_id not in found:
        raise UnknownDomain(f"no catalog domain {domain_id!r}{did_you_mean(domain_id, found)} "
                       f"(domains: {', '.join(found)})")
    return found[domain_id].copy()


def domains() -> list[WorldBlueprint]:
    """Every catalog domain's blueprint, sorted by id."""
    return [e.blueprint for e in entries()]


def domain(domain_id: str) -> WorldBlueprint:
    """The blueprint of catalog domain ``domain_id``; an unknown id raises :class:`KeyError` with a suggestion."""
    return entry(domain_id).blueprint


def hosting(pattern: str) -> list[CatalogEntry]:
    """The domains that can host ``pattern``, sorted by id; an unknown pattern raises :class:`KeyError`."""
    if pattern not in PATTERNS:
        raise UnknownDomain(f"unknown pattern {pattern!r}{did_you_mean(pattern, PATTERNS)} "
                            f"(patterns: {', '.join(PATTERNS)})")
    return [e for e in entries() if pattern in e.meta.patterns]

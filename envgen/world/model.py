"""The world model: the typed middle layer between a blueprint (v2) and the spec the compiler renders.

A **world** is a small service a person would use: a domain and a persona, entities with user-facing
keys and semantic fields, operations that behave like the document's code (preconditions and effects),
and a policy. Everything here is plain data; :mod:`envgen.world.render` turns it into DDL, rows, tool
schemas and tool code, and :mod:`envgen.world.tasks` writes tasks over it.

Contract:

* Every entity has an integer ``id`` primary key that never reaches the agent: tools take and return
  **keys** (``order_number``, ``email``); a relation is stored as ``<entity>_id`` and shown as the
  related record's key.
* Names are snake_case identifiers; tables are plural (:attr:`Entity.table`).
* An operation's ``kind`` is one of :data:`OP_KINDS`; its ``conditions`` and ``effects`` add the
  document's guards and updates to what the kind does (see :class:`Condition` and :class:`Effect`).
* Policy rules (:class:`PolicyRule`) are either enforced by a tool (``enforced="tool"``: the tool refuses)
  or only by the policy text (``"policy"``): only an agent that reads the policy passes their tasks.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from envgen.world.kinds import Kind, kind

__all__ = ["LOCATOR_KINDS", "OP_KINDS", "POLICY_KINDS", "READ_KINDS", "Condition", "Effect", "Entity", "Field", "Op",
           "PolicyRule",
           "Ref", "World", "human", "in_state", "plural", "with_value"]

OP_KINDS = ("lookup", "search", "create", "update", "transition", "adjust", "transfer", "move", "delete", "take",
            "count", "total", "acquire", "release", "escalate")
"""What a tool does:

* ``lookup``: one record by its key, with its related records' keys;
* ``search``: the records that belong to a record (``order``s of a ``customer``), optionally filtered by state;
* ``create``: a new record (its key drawn by the system for a ``code`` key), refused when its container is full;
* ``update``: set fields of a record; ``transition``: move a record to the ``target`` state from ``sources``;
* ``adjust``: add a signed amount to a number field; ``transfer``: move an amount between two records;
* ``move``: put a record under another parent record; ``delete``: remove a record;
* ``take``: the oldest (``order: first``) or newest (``last``) record of a container in the source state,
  moved to the target state and returned (a queue's ``get``, a stack's ``pop``); refused when none waits;
* ``acquire`` / ``release``: set / clear a record's holder (a reference to a person), refused when taken / free;
* ``count`` / ``total``: computed reads (how many records of a container, the sum of a field);
* ``escalate``: hand the conversation to a person (records a ticket; the policy says when).
"""

READ_KINDS = ("lookup", "search", "count", "total")
LOCATOR_KINDS = ("postcode", "city", "phone")
"""What a person gives besides their name to be found without their key (a person search filters on it)."""
POLICY_KINDS = ("confirm", "limit", "forbid_state", "own_records", "verify", "tool", "info")
"""* ``confirm``: the agent states the change and waits for an explicit yes before ``op`` (policy only);
* ``limit``: ``op`` with ``field`` over ``value`` is not done; the agent escalates instead (policy only);
* ``forbid_state``: ``op`` is not done on a record in one of ``states`` although the tool allows it (policy only);
* ``own_records``: the agent acts only on the records of the person it is talking to (policy only);
* ``verify``: the person is identified by ``field`` before any record is read or changed (policy only);
* ``tool``: a rule a tool enforces (its condition's message), stated so the agent can explain a refusal;
* ``info``: a rule about conduct (no invented information, one question at a time)."""


def plural(word: str) -> str:
    """A simple English plural of the last word of a snake_case name."""
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def human(name: str) -> str:
    """``order_item`` -> ``order item``."""
    return name.replace("_", " ")


_UNITS = frozenset({"kg", "g", "lb", "lbs", "kb", "mb", "gb", "tb", "km", "m", "cm", "mm", "l", "ml", "kwh", "pct"})


def with_value(name: str, said: str) -> str:
    """A field and its value as a person says them: ``copies 3``; a name ending in a unit puts the unit after the
    value (``weight_kg`` 724 is ``weight 724 kg``, ``size_mb`` 12.5 is ``size 12.5 MB``)."""
    words = name.split("_")
    if len(words) > 1 and words[-1] in _UNITS:
        unit = words[-1] if words[-1] in ("kg", "g", "lb", "lbs", "km", "m", "cm", "mm", "l", "ml") else \
            "%" if words[-1] == "pct" else words[-1].upper()
        return f"{human('_'.join(words[:-1]))} {said}{'' if unit == '%' else ' '}{unit}"
    return f"{human(name)} {said}"


_PREPOSITIONS = frozenset({"in", "on", "out", "under", "at", "off", "for", "with", "without", "awaiting"})


def in_state(state: str, noun: str) -> str:
    """``noun`` qualified by a record state as a person says it: an adjective before (``pending orders``,
    ``past due subscriptions``), a prepositional state after (``devices in repair``, ``food orders out for
    delivery``, ``buildings under renovation``)."""
    said = human(state)
    first = said.split(" ", 1)[0]
    return f"{noun} {said}" if " " in said and first in _PREPOSITIONS else f"{said} {noun}"


@dataclass
class Field:
    """A stored field of an entity (never ``id``, never a relation)."""

    name: str
    kind: str
    description: str = ""
    enum: list[str] | None = None  #: allowed values (a ``category`` or ``status`` field)
    minimum: float | None = None
    maximum: float | None = None
    unique: bool = False
    nullable: bool = False  #: may be NULL (a holder, an optional date)

    @property
    def semantic(self) -> Kind:
        return kind(self.kind)

    @property
    def sqltype(self) -> str:
        return self.semantic.sqltype

    @property
    def human(self) -> str:
        return human(self.name)


@dataclass
class Ref:
    """A reference from one entity to another, stored as ``<name>_id`` and shown as the other's key."""

    name: str  #: the relation's name (``customer``, ``assigned_to``)
    entity: Entity
    owner: bool = False  #: the record belongs to the referenced one (the parent: capacity, listing)
    nullable: bool = False

    @property
    def column(self) -> str:
        return f"{self.name}_id"

    @property
    def param(self) -> str:
        """How tools name it, in arguments and results: the referenced key, qualified by the relation
        (``customer_email``, ``product_sku``; ``order_number`` already names its ``order``)."""
        key = self.entity.key.name
        return key if key.startswith(self.name) else f"{self.name}_{key}"


@dataclass
class Entity:
    """A table of records of one kind."""

    name: str  #: singular snake_case (``order``)
    key: Field  #: the user-facing key (unique)
    fields: list[Field] = dataclasses.field(default_factory=list)
    refs: list[Ref] = dataclasses.field(default_factory=list)
    states: list[str] = dataclasses.field(default_factory=list)  #: the lifecycle, the first one initial
    final: list[str] = dataclasses.field(default_factory=list)  #: states a record never leaves
    description: str = ""
    rows: int = 50  #: how many seed rows
    prefix: str = ""  #: a ``code`` key's prefix (``ORD``)
    capacity: str | None = None  #: the integer field bounding how many child records a record holds
    role: str = "record"  #: ``person`` (the user), ``main``, ``container``, ``catalog``, ``child``, ``record``

    @property
    def table(self) -> str:
        return plural(self.name)

    @property
    def human(self) -> str:
        return human(self.name)

    @property
    def humans(self) -> str:
        return human(self.table)

    @property
    def parent(self) -> Ref | None:
        return next((r for r in self.refs if r.owner), None)

    def named(self, key: object) -> str:
        """How a person names one record by its key: ``order ORD-1042``, ``customer ada@example.com``; a
        record whose key is a title is named as a name is (``the Login Problems queue``, ``the Projects
        folder``), by the last word of the entity's name."""
        if self.key.kind == "title":
            return f"the {key} {self.name.split('_')[-1].replace('_', ' ')}"
        return f"{self.human} {key}"

    @property
    def active_states(self) -> list[str]:
        """The states a record still counts in (towards its container's capacity): all but the final ones."""
        return [s for s in self.states if s not in self.final]

    def field(self, name: str) -> Field | None:
        if name == self.key.name:
            return self.key
        return next((f for f in self.fields if f.name == name), None)

    def columns(self) -> list[str]:
        """Stored columns but ``id``, in table order: references, key, fields, ``state``."""
        return [*(r.column for r in self.refs), self.key.name, *(f.name for f in self.fields),
                *(["state"] if self.states else [])]


@dataclass
class Condition:
    """A guard a tool checks before it changes anything; a failed guard raises ``ToolError(message)``.

    ``kind``:

    * ``state_in``: the record's state is one of ``values``;
    * ``compare``: the record's ``field`` compared (``op``: ``<``, ``<=``, ``>``, ``>=``, ``==``, ``!=``) with
      the argument ``arg`` or the constant ``value`` holds (``field`` may be ``ref.field`` to read a
      referenced record);
    * ``room``: the parent record holds fewer child records (in ``values`` states, or all) than its
      capacity field says;
    * ``ref_state``: the referenced record ``ref`` is in one of ``values``.
    """

    kind: str
    message: str
    values: list[str] = dataclasses.field(default_factory=list)
    field: str | None = None
    op: str = ">="
    arg: str | None = None
    value: Any = None
    ref: str | None = None


@dataclass
class Effect:
    """A change a tool makes besides its kind's own: ``set`` ``field`` to the argument ``arg``, the constant
    ``value`` or ``"today"``; ``add`` the argument (or constant) to ``field`` (``sign`` -1 subtracts); ``shift`` a
    date or datetime ``field`` by ``value`` days times ``sign`` (a renewal's new due date, a postponed visit; a
    missing date shifts from today); on the referenced record ``ref`` when it is given (a product's ``stock``
    goes down when an item is created)."""

    kind: str  #: ``set``, ``add``, ``shift`` or ``copy`` (``field`` takes the value of ``source``: ``ref.field``)
    field: str
    arg: str | None = None
    value: Any = None
    sign: int = 1
    ref: str | None = None
    scale: str | None = None  #: ``add`` multiplies the amount by this field of the record (quantity x price)
    source: str | None = None  #: ``copy``: the referenced record's field to copy (``product.price``)


@dataclass
class Op:
    """One tool."""

    name: str
    kind: str
    entity: Entity
    description: str = ""
    origin: str = ""  #: the document's function it is modelled on (``Queue.put``)
    #: create/update: the fields it takes; adjust/transfer/total: the number it changes
    fields: list[str] = dataclasses.field(default_factory=list)
    target: str | None = None  #: transition/take: the state it moves to (a transition without one keeps the state)
    sources: list[str] = dataclasses.field(default_factory=list)  #: transition/take/count: the states it acts on
    order: str = "first"  #: take: ``first`` (FIFO) or ``last`` (LIFO)
    holder: str | None = None  #: acquire/release: the reference that holds the record
    by: str | None = None  #: search/count/total: the reference to filter by (a parent)
    conditions: list[Condition] = dataclasses.field(default_factory=list)
    effects: list[Effect] = dataclasses.field(default_factory=list)
    phrase: str = ""  #: how a person asks for it: ``"cancel {record}"`` (``{value}``: the new value or amount)
    reasons: list[str] = dataclasses.field(default_factory=list)  #: why a person would ask for it

    @property
    def writes(self) -> bool:
        return self.kind not in READ_KINDS

    @property
    def keeps_state(self) -> bool:
        """Whether a ``transition`` leaves the record in the state it found it in: it has no ``target`` (any of its
        ``sources`` stays as it is), or its one source is its target (a renewal of an active loan)."""
        return self.kind == "transition" and (self.target is None or self.sources == [self.target])


@dataclass
class PolicyRule:
    """One rule of the environment's policy (see :data:`POLICY_KINDS`)."""

    kind: str
    text: str
    op: str | None = None  #: the tool it is about
    field: str | None = None
    value: Any = None
    states: list[str] = dataclasses.field(default_factory=list)

    @property
    def enforced(self) -> str:
        return "tool" if self.kind == "tool" else "policy"


@dataclass
class World:
    """Everything a spec is rendered from."""

    title: str
    domain: str  #: what the service is (``an online home-goods store``)
    persona: str  #: who the user is (``a customer of the store``)
    summary: str
    entities: list[Entity]
    ops: list[Op]
    policy: list[PolicyRule] = dataclasses.field(default_factory=list)
    currency: str = "USD"
    operator: bool = False  #: the user is staff acting on anyone's records (else a customer acting on their own)
    path: str = ""  #: the source document
    words: list[str] = dataclasses.field(default_factory=list)  #: the domain's words (for grounding and phrasing)
    parts: list[World] = dataclasses.field(default_factory=list)  #: a composed world's parts (:mod:`.compose`)
    prefix: str = ""  #: a part's tool prefix in a composed world

    def entity(self, name: str) -> Entity:
        for e in self.entities:
            if e.name == name:
                return e
        raise KeyError(f"no entity {name!r}; entities are {[e.name for e in self.entities]}")

    def op(self, name: str) -> Op:
        for o in self.ops:
            if o.name == name:
                return o
        raise KeyError(f"no operation {name!r}")

    def ops_of(self, kind: str, entity: Entity | None = None) -> list[Op]:
        return [o for o in self.ops if o.kind == kind and (entity is None or o.entity is entity)]

    @property
    def person(self) -> Entity | None:
        return next((e for e in self.entities if e.role == "person"), None)

    def children(self, parent: Entity) -> list[Entity]:
        """Entities whose records belong to ``parent``'s."""
        return [e for e in self.entities if e.parent is not None and e.parent.entity is parent]

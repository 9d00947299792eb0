"""The world blueprint (``blueprint_version`` 2): a service a person would use, as a compact typed proposal.

A world blueprint names a **domain** and a **persona**, the service's **entities** (at least four, with
user-facing keys, semantic fields and relations), its **operations** (kinds from
:data:`envgen.world.model.OP_KINDS`, named after the document's API, with the code's guards as
``conditions`` and its updates as ``effects``), a **policy** (rules from
:data:`envgen.world.model.POLICY_KINDS`, some enforced only by the policy) and the domain's
**vocabulary** (the words titles and notes are made of). The format is documented in
``envgen/world/WORLDS.md``; these pydantic models are its one source.

Three writers fill it: the domain catalog (``envgen/world/domains/*.yaml``, hand-written worlds that are
blueprints too), the AST writer (:mod:`envgen.proposers.world.writer`: a catalog domain with the document's own
operations grafted on) and a model, decoding under :func:`world_json_schema`. One compiler
(:mod:`envgen.world.compile`) turns any of them into a spec.

Contract: :func:`parse_world` never raises for bad input; it returns a :class:`ParsedWorld` whose
``error`` says what to fix. Cross-references (an operation's entity, a reference's target) are checked
by :func:`to_world`, which records every repair it makes and raises
:class:`~envgen.errors.CompileError` only when nothing usable is left.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from envgen.completions import balanced_objects
from envgen.world.kinds import KINDS

__all__ = ["WORLD_VERSION", "ParsedWorld", "WorldBlueprint", "parse_world", "world_json_schema"]

WORLD_VERSION = 2
MAX_ENTITIES = 6
MAX_FIELDS = 8
MAX_OPERATIONS = 22
MAX_POLICY = 10
_NAME = r"^[a-z][a-z0-9_]{1,39}$"
_VALUE = r"^[a-z0-9][a-z0-9_-]{0,23}$"
_KEY_KINDS = tuple(k.name for k in KINDS.values() if k.key)


def _text(n: int) -> str:
    """ASCII prose of at most ``n`` characters, without quotes or backslashes (no escapes in JSON)."""
    return r"^[A-Za-z0-9 ,.;:()'/_{}%$&+=-]{0," + str(n) + r"}$"


Name = Annotated[str, Field(pattern=_NAME, description="snake_case, 2-40 characters, starts with a letter")]
ToolName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{1,63}$")]
Value = Annotated[str, Field(pattern=_VALUE, description="lowercase, 1-24 characters")]
Int = Annotated[int, Field(ge=-1_000_000, le=1_000_000)]
Word = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9 &'-]{0,39}$")]
FieldKind = Literal[tuple(KINDS)]  # type: ignore[valid-type]
KeyKind = Literal[_KEY_KINDS]  # type: ignore[valid-type]
OpKind = Literal["lookup", "search", "create", "update", "transition", "adjust", "transfer", "move", "delete",
                 "take", "count", "total", "acquire", "release", "escalate"]
PolicyKind = Literal["confirm", "limit", "forbid_state", "own_records", "verify", "tool", "info"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class KeySpec(_Model):
    """An entity's user-facing key: what a person names a record by."""

    name: Name
    kind: KeyKind  # type: ignore[valid-type]


class FieldSpec(_Model):
    """A stored field: its semantic kind decides its type, its values and how it is said."""

    name: Name
    kind: FieldKind  # type: ignore[valid-type]
    description: str = Field(default="", pattern=_text(80))
    values: list[Value] = Field(default_factory=list, max_length=8, description="allowed values, or []")
    min: int | None = Field(default=None, ge=-1_000_000, le=1_000_000)
    max: int | None = Field(default=None, ge=-1_000_000, le=1_000_000)
    nullable: bool = False


class RefSpec(_Model):
    """A reference to another entity's record (stored as ``<name>_id``, shown as its key)."""

    name: Name
    entity: Name
    owner: bool = Field(default=False, description="the record belongs to the referenced one (its parent)")
    nullable: bool = False


class EntitySpec(_Model):
    """A kind of record: one table."""

    name: Name = Field(description="singular noun: 'order', 'appointment'")
    role: Literal["person", "main", "container", "catalog", "child", "record"] = "record"
    description: str = Field(default="", pattern=_text(80))
    key: KeySpec
    prefix: str | None = Field(default=None, pattern=r"^[A-Z]{2,4}$", description="a code key's prefix")
    fields: list[FieldSpec] = Field(default_factory=list, max_length=MAX_FIELDS)
    refs: list[RefSpec] = Field(default_factory=list, max_length=3)
    states: list[Value] = Field(default_factory=list, max_length=6, description="lifecycle, initial first")
    final: list[Value] = Field(default_factory=list, max_length=3)
    capacity: Name | None = Field(default=None, description="the integer field bounding its child records")
    rows: int | None = Field(default=None, ge=0, le=400)


class ConditionSpec(_Model):
    """A guard a tool checks (see :class:`envgen.world.model.Condition`)."""

    kind: Literal["state_in", "compare", "room", "ref_state", "not_empty", "free", "held"]
    message: str = Field(pattern=_text(160), description="the refusal, in the document's words")
    values: list[Value] = Field(default_factory=list, max_length=6)
    field: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9_.]{1,60}$")
    op: Literal["<", "<=", ">", ">=", "==", "!="] = ">="
    arg: Name | None = None
    value: Int | None = None
    ref: Name | None = None


class EffectSpec(_Model):
    """A change besides the operation's own (see :class:`envgen.world.model.Effect`)."""

    kind: Literal["set", "add", "copy", "shift"]
    field: Name
    arg: Name | None = None
    value: Int | Value | None = None
    sign: Literal[1, -1] = 1
    ref: Name | None = None
    scale: Name | None = None
    source: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9_]{1,39}[.][a-z][a-z0-9_]{1,39}$")


class OperationSpec(_Model):
    """One tool."""

    name: ToolName
    kind: OpKind
    entity: Name
    description: str = Field(default="", pattern=_text(160))
    origin: str = Field(default="", pattern=r"^[A-Za-z0-9_.]{0,60}$", description="Class.method it is modelled on")
    fields: list[Name] = Field(default_factory=list, max_length=6)
    target: Value | None = None
    sources: list[Value] = Field(default_factory=list, max_length=6)
    order: Literal["first", "last"] = "first"
    holder: Name | None = None
    by: Name | None = None
    conditions: list[ConditionSpec] = Field(default_factory=list, max_length=4)
    effects: list[EffectSpec] = Field(default_factory=list, max_length=3)
    phrase: str = Field(default="", pattern=_text(80), description="how a person asks: 'cancel {record}'")
    reasons: list[Annotated[str, Field(pattern=_text(80))]] = Field(default_factory=list, max_length=4,
                                                                     description="why a person would ask")


class PolicySpec(_Model):
    """One policy rule."""

    kind: PolicyKind
    text: str = Field(pattern=_text(200))
    op: ToolName | None = None
    field: Name | None = None
    value: Int | None = None
    states: list[Value] = Field(default_factory=list, max_length=4)


class TitleLine(_Model):
    """One kind of thing the world's titles name (lamps, curries, savings pots): its titles, the adjectives that fit
    every one of them, and what a record titled from it has with it: its ``category`` (the value of the record's
    category field) and its ``price`` (``[low, high]`` in currency units, for the record's money fields)."""

    titles: list[Word] = Field(min_length=1, max_length=20)
    adjectives: list[Word] = Field(default_factory=list, max_length=8)
    category: Value | None = None
    price: list[Annotated[int, Field(ge=0, le=1_000_000)]] = Field(
        default_factory=list, max_length=2, description="[low, high] in currency units, or empty")

    @model_validator(mode="after")
    def _price_range(self) -> TitleLine:
        if self.price and (len(self.price) != 2 or self.price[0] > self.price[1]):
            raise ValueError(f"price {self.price} must be [low, high] with low <= high (currency units), or empty")
        return self


class Vocabulary(_Model):
    """The domain's words: what titles and notes are made of.

    ``titles`` and ``adjectives`` make titles of things that come in no kinds; ``lines`` group the titles of things
    that do, so that a record's adjective, category and price follow from the one draw of its title (both may be
    given: the flat titles are then one more line, of no category)."""

    titles: list[Word] = Field(default_factory=list, max_length=40)
    adjectives: list[Word] = Field(default_factory=list, max_length=20)
    lines: list[TitleLine] = Field(default_factory=list, max_length=10)
    notes: list[Annotated[str, Field(pattern=_text(100))]] = Field(default_factory=list, max_length=16)
    categories: list[Value] = Field(default_factory=list, max_length=8)

    def all_titles(self) -> list[str]:
        """Every title: the flat ones, then each line's."""
        return [*self.titles, *(t for line in self.lines for t in line.titles)]


class WorldBlueprint(_Model):
    """A world (see the module docstring and envgen/world/WORLDS.md)."""

    blueprint_version: Literal[2] = 2
    id: str = Field(default="", pattern=r"^[a-z0-9_]{0,40}$", description="a catalog domain's id, or ''")
    title: str = Field(pattern=_text(48))
    domain: str = Field(pattern=_text(80), description="what the service is: 'an online home-goods store'")
    persona: str = Field(pattern=_text(80), description="who the user is: 'a customer of the store'")
    operator: bool = Field(default=False, description="the user is staff acting on anyone's records")
    currency: Literal["USD", "EUR", "GBP"] = "USD"
    entities: list[EntitySpec] = Field(min_length=1, max_length=MAX_ENTITIES)
    operations: list[OperationSpec] = Field(max_length=MAX_OPERATIONS)
    policy: list[PolicySpec] = Field(default_factory=list, max_length=MAX_POLICY)
    vocabulary: Vocabulary = Field(default_factory=Vocabulary)
    difficulty: Literal["easy", "medium", "hard"] | None = None

    def to_json(self) -> str:
        """Compact JSON: a key at its default is left out (a world is read back with the defaults filled in),
        which keeps a model's whole world inside a small model's context."""
        compact = self.model_dump(mode="json", exclude_defaults=True)
        return json.dumps({"blueprint_version": self.blueprint_version, **compact}, ensure_ascii=True)


def world_json_schema(constraints: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON Schema a model decodes a world blueprint under (the properties without a default required, every
    property in order, so that the compact :meth:`WorldBlueprint.to_json` is what it decodes; entities and
    operations, which the compiler needs, required and non-empty), optionally
    narrowed by a skill's ``constraints`` (its ``blueprint`` section, :attr:`envgen.skills.Skill.blueprint`) to
    the world structure they ask for (:mod:`envgen.world.requirements`: the first operations of the kinds
    required, the main entity's lifecycle, policy rules a refusal tests, a self-service user)."""
    from envgen.blueprint.schema import _strict  # one strictifier for both blueprint versions

    raw = WorldBlueprint.model_json_schema()
    schema = _strict(raw, raw.get("$defs", {}), optional_defaults=True)
    schema["required"].insert(0, "blueprint_version")  # the version says which blueprint it is: always written
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"envwright world blueprint v{WORLD_VERSION}"
    from envgen.world.requirements import narrow_world_schema, require_compilable, world_needs

    require_compilable(schema)
    if constraints:
        narrow_world_schema(schema, world_needs(constraints))
    return schema


@dataclass
class ParsedWorld:
    """A world blueprint, or a typed failure (``no_json``, ``json_syntax``, ``not_object``, ``schema``)."""

    blueprint: WorldBlueprint | None
    code: str | None = None
    error: str | None = None
    problems: list[str] = field(default_factory=list)
    #: ``schema``: each problem's place and pydantic error type, in the order of ``problems``, e.g.
    #: ``{"loc": "entities.0.key", "type": "missing"}`` (what a report counts; ``problems`` is what the model reads)
    errors: list[dict[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.blueprint is not None


def parse_world(data: str | dict[str, Any]) -> ParsedWorld:
    """A :class:`WorldBlueprint` from model output (JSON text, possibly with prose around it) or a dict."""
    if isinstance(data, str):
        bodies = balanced_objects(data)
        if not bodies:
            return ParsedWorld(None, "no_json", "no JSON object found: answer with one world blueprint object")
        try:
            obj = json.loads(bodies[0])
        except (json.JSONDecodeError, RecursionError) as e:
            return ParsedWorld(None, "json_syntax", f"the blueprint is not valid JSON ({getattr(e, 'msg', e)})")
    else:
        obj = copy.deepcopy(data)
    if not isinstance(obj, dict):
        return ParsedWorld(None, "not_object", f"the blueprint must be a JSON object, got {type(obj).__name__}")
    try:
        return ParsedWorld(WorldBlueprint.model_validate(obj))
    except ValidationError as e:
        errs = e.errors()
        problems = [f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in errs]
        kinds = [{"loc": ".".join(str(p) for p in err["loc"]) or "<root>", "type": str(err["type"])} for err in errs]
        return ParsedWorld(None, "schema", "the world blueprint does not match its schema: " + "; ".join(problems[:8]),
                           problems, kinds)

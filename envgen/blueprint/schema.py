"""The blueprint format (``blueprint_version`` 1): a compact, typed proposal of what a document manages.

A blueprint says *what* an environment is about, in about a tenth of a spec's
tokens; the compiler (:mod:`envgen.blueprint.compiler`) decides *how*: DDL, seed
rows, tool schemas, restricted tool code, tasks, checks and references. The
format is documented in ``envgen/blueprint/BLUEPRINT.md``; the pydantic models
here are its one source, and :func:`blueprint_json_schema` derives from them the
JSON Schema that every model backend decodes under (so what a model writes
always parses).

Contract:

* Every string is bounded and ASCII (a pattern with an explicit length), every
  array has ``maxItems`` and every integer a range, so a grammar-constrained
  completion has a worst case of :func:`max_completion_chars` characters and
  never runs into the token limit half-way (a constrained proposal that fails
  to parse is a bug).
* The decoding schema lists every property as required, in a fixed order, with
  ``additionalProperties: false``; optional values are written as ``null``.
* Features a grammar engine may lack (``uniqueItems``, cross-references such as
  "an operation's entity is one of the entities") are not in the schema: the
  compiler enforces them and records each repair.
* :func:`parse_blueprint` never raises for bad input: it returns a
  :class:`ParsedBlueprint` with ``code`` (``no_json``, ``json_syntax``,
  ``not_object``, ``schema``) and an ``error`` in words a model can act on.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from envgen.completions import balanced_objects
from gym_envs.spec import TASK_KINDS

__all__ = [
    "BLUEPRINT_KEYS",
    "BLUEPRINT_VERSION",
    "DIFFICULTIES",
    "FIELD_TYPES",
    "NAME_RE",
    "OP_KINDS",
    "RULE_KINDS",
    "Blueprint",
    "BlueprintEntity",
    "BlueprintField",
    "Operation",
    "ParsedBlueprint",
    "Rule",
    "TaskMix",
    "blueprint_json_schema",
    "check_blueprint_requirements",
    "max_completion_chars",
    "parse_blueprint",
]

BLUEPRINT_VERSION = 1
FIELD_TYPES = ("string", "integer", "number", "boolean")
OP_KINDS = ("create", "get", "find", "list", "update", "delete", "status", "adjust", "transfer")
RULE_KINDS = ("unique", "required", "range", "non_negative", "enum", "states", "capacity", "final")
DIFFICULTIES = ("easy", "medium", "hard")
"""How deep the compiled tasks go (:mod:`envgen.blueprint.render.difficulty`): chain length, turns, distractors."""

MAX_ENTITIES = 3
MAX_FIELDS = 5
MAX_STATES = 4
MAX_OPERATIONS = 8
MAX_RULES = 4
MAX_ENUM_VALUES = 4
MAX_TASKS_PER_KIND = 3
BOUND = 1_000_000  #: |min| and |max| of a range rule

_NAME = r"^[a-z][a-z0-9_]{1,39}$"
NAME_RE = re.compile(_NAME)  #: what an entity, field or state name must match
_VALUE = r"^[a-z0-9][a-z0-9_-]{0,23}$"


def _text(n: int) -> str:
    """ASCII prose of at most ``n`` characters, without quotes or backslashes (no escapes in JSON)."""
    return r"^[A-Za-z0-9 ,.;:()'/_-]{0," + str(n) + r"}$"


Name = Annotated[str, Field(pattern=_NAME, description="snake_case, 2-40 characters, starts with a letter")]
ToolName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{1,63}$", description="snake_case, 2-64 characters")]
Value = Annotated[str, Field(pattern=_VALUE, description="a state or enum value: lowercase, 1-24 characters")]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BlueprintField(_Model):
    """One field of an entity (never ``id``; a relation is the entity's ``parent``)."""

    name: Name
    type: Literal["string", "integer", "number", "boolean"]
    description: str = Field(pattern=_text(60), description="what the field holds, as the document says")


class BlueprintEntity(_Model):
    """A kind of record the document manages: one table."""

    name: Name = Field(description="singular noun: 'account', 'event', 'cache_entry'")
    description: str = Field(pattern=_text(60))
    key: Name = Field(description="the identifying field: a unique string people use to name a record")
    fields: list[BlueprintField] = Field(max_length=MAX_FIELDS)
    parent: Name | None = Field(description="the entity each record belongs to (a relation), or null")
    states: list[Value] = Field(max_length=MAX_STATES,
                                description="lifecycle states, the first one initial; [] for none")


class Operation(_Model):
    """One tool: an operation on an entity."""

    kind: Literal["create", "get", "find", "list", "update", "delete", "status", "adjust", "transfer"]
    entity: Name
    name: ToolName | None = Field(description="the tool's name, from the document's own verbs, or null")
    field: Name | None = Field(description="update: the field it sets; adjust: the number it changes; transfer: "
                                           "the number it moves between two records, or null to move a record "
                                           "to another parent; else null")
    target: Value | None = Field(description="status: the state it moves a record to; else null")
    description: str = Field(pattern=_text(60), description="what it does, in the document's words")


class Rule(_Model):
    """A business rule from the fixed vocabulary (``RULE_KINDS``)."""

    kind: Literal["unique", "required", "range", "non_negative", "enum", "states", "capacity", "final"]
    entity: Name
    field: Name | None = Field(description="the field the rule is about; capacity: the number field holding how "
                                           "many records belong to one (or null); null for 'states', 'final'")
    min: int | None = Field(ge=-BOUND, le=BOUND, description="range: lowest allowed value")
    max: int | None = Field(ge=-BOUND, le=BOUND, description="range: highest allowed value; capacity: the same "
                                                             "capacity for every record when field is null")
    values: list[Value] = Field(max_length=MAX_ENUM_VALUES,
                                description="enum: the allowed values; states: the lifecycle; final: the states "
                                            "a record never leaves; else []")


class TaskMix(_Model):
    """How many tasks of each kind to write (the compiler keeps the total between 4 and 8)."""

    execute: int = Field(ge=0, le=MAX_TASKS_PER_KIND)
    read: int = Field(ge=0, le=MAX_TASKS_PER_KIND)
    read_then_write: int = Field(ge=0, le=MAX_TASKS_PER_KIND)
    missing_parameter: int = Field(ge=0, le=MAX_TASKS_PER_KIND)
    decline: int = Field(ge=0, le=MAX_TASKS_PER_KIND)

    def counts(self) -> dict[str, int]:
        return {k: int(getattr(self, k)) for k in TASK_KINDS}


class Blueprint(_Model):
    """What a document manages (see the module docstring and envgen/blueprint/BLUEPRINT.md)."""

    blueprint_version: Literal[1]
    title: str = Field(pattern=_text(48), description="a short name of the simulated system")
    summary: str = Field(pattern=_text(120), description="one sentence: what it manages and its rules")
    entities: list[BlueprintEntity] = Field(min_length=1, max_length=MAX_ENTITIES,
                                            description="the main entity first")
    operations: list[Operation] = Field(max_length=MAX_OPERATIONS)
    rules: list[Rule] = Field(max_length=MAX_RULES)
    tasks: TaskMix
    difficulty: Literal["easy", "medium", "hard"] | None = Field(
        default=None, description="how deep the tasks go: chains, turns, distractors; null for the default")

    def to_json(self) -> str:
        """Compact JSON in the exact layout constrained decoding produces (``", "`` and ``": "`` separators)."""
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=True)


# -- the decoding schema ------------------------------------------------------------------------------


def _strict(node: Any, defs: dict[str, Any], *, optional_defaults: bool = False) -> Any:
    """Inline ``$ref``s, drop titles and defaults, and make every property required, in order (with
    ``optional_defaults``: only those the model requires, those without a default, so that a compact
    blueprint that leaves defaults out decodes too)."""
    if isinstance(node, list):
        return [_strict(x, defs, optional_defaults=optional_defaults) for x in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _strict(defs[node["$ref"].rsplit("/", 1)[-1]], defs, optional_defaults=optional_defaults)
    out = {}
    for k, v in node.items():
        if k == "properties":
            out[k] = {name: _strict(sub, defs, optional_defaults=optional_defaults) for name, sub in v.items()}
        elif k not in ("title", "default", "$defs", "required"):
            out[k] = _strict(v, defs, optional_defaults=optional_defaults)
    if out.get("type") == "object" and "properties" in out:
        needed = set(node.get("required", ())) if optional_defaults else set(out["properties"])
        out["required"] = [name for name in out["properties"] if name in needed]
        out["additionalProperties"] = False
    return out


def blueprint_json_schema(constraints: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON Schema a blueprint is decoded under, optionally narrowed by a skill's ``constraints``.

    ``constraints`` (a skill's ``blueprint`` section, :attr:`envgen.skills.Skill.blueprint`) may hold
    ``rules`` (rule kinds the blueprint's first rules must have), ``operations`` (operation kinds its
    first operations must have), ``states`` (``true``: the main entity has at least two lifecycle
    states) and ``tasks`` (the least count per task kind). They are written with ``prefixItems``,
    ``minItems`` and ``minimum``, which xgrammar, vLLM's structured outputs and OpenAI's strict
    ``json_schema`` all enforce. The compiler also adds what a skill requires and a blueprint lacks.
    """
    raw = Blueprint.model_json_schema()
    schema = _strict(raw, raw.get("$defs", {}))
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"envwright blueprint v{BLUEPRINT_VERSION}"
    if constraints:
        _narrow(schema, constraints)
    return schema


def _require_first(array: dict[str, Any], firsts: list[dict[str, Any]]) -> None:
    """Make ``array``'s first items these schemas (``prefixItems`` plus ``minItems``)."""
    firsts = firsts[: int(array.get("maxItems", len(firsts)))]
    if firsts:
        array["prefixItems"] = firsts
        array["minItems"] = max(int(array.get("minItems", 0)), len(firsts))


def _with_const(item: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(item)
    out["properties"][key] = {"const": value, "type": "string"}
    return out


def _narrow(schema: dict[str, Any], c: dict[str, Any]) -> None:
    props = schema["properties"]
    rule_kinds = list(dict.fromkeys(k for k in c.get("rules", []) if k in RULE_KINDS))
    rules = props["rules"]
    _require_first(rules, [_with_const(rules["items"], "kind", k) for k in rule_kinds])
    op_kinds = list(dict.fromkeys(k for k in c.get("operations", []) if k in OP_KINDS))
    ops = props["operations"]
    _require_first(ops, [_with_const(ops["items"], "kind", k) for k in op_kinds])
    if c.get("states"):
        ents = props["entities"]
        main = copy.deepcopy(ents["items"])
        main["properties"]["states"]["minItems"] = 2
        _require_first(ents, [main])
    for kind, low in (c.get("tasks") or {}).items():
        if kind in TASK_KINDS:
            props["tasks"]["properties"][kind]["minimum"] = min(int(low), MAX_TASKS_PER_KIND)


def max_completion_chars(schema: dict[str, Any]) -> int:
    """An upper bound on the characters of any JSON text the decoding schema admits (compact separators).

    Every token the grammar allows is at least one ASCII character, so this also bounds the tokens of a
    constrained completion; backends raise ``max_new_tokens`` to it so no completion is cut short.
    """
    return _max_chars(schema)


def _pattern_chars(pattern: str) -> int:
    """Longest string a ``^...{m,n}$``-style pattern admits (one leading class plus its repeat bound)."""
    bound = pattern.rsplit("{", 1)[-1].split("}")[0].split(",")[-1] if "{" in pattern else ""
    if not bound.isdigit():
        raise ValueError(f"unbounded string pattern in a decoding schema: {pattern!r}")
    return 1 + int(bound)


def _max_chars(node: dict[str, Any]) -> int:
    if "anyOf" in node:
        return max(_max_chars(x) for x in node["anyOf"])
    if "enum" in node:
        return max(len(json.dumps(v)) for v in node["enum"])
    if "const" in node:
        return len(json.dumps(node["const"]))
    t = node.get("type")
    if t == "object":
        props = node.get("properties", {})
        sizes = [len(json.dumps(k)) + 2 + _max_chars(v) for k, v in props.items()]
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            if "maxProperties" not in node:
                raise ValueError(f"unbounded object in a decoding schema: {node}")
            name = 2 + _pattern_chars(node.get("propertyNames", {}).get("pattern", ""))
            sizes += [name + 2 + _max_chars(extra)] * int(node["maxProperties"])
        return 2 + sum(sizes) + 2 * max(0, len(sizes) - 1)
    if t == "array":
        n = int(node.get("maxItems", -1))
        if n < 0:
            raise ValueError(f"unbounded array in a decoding schema: {node}")
        first = [_max_chars(x) for x in node.get("prefixItems", [])][:n]
        sizes = first + [_max_chars(node["items"])] * (n - len(first))
        return 2 + sum(sizes) + 2 * max(0, n - 1)
    if t == "string":
        if "maxLength" in node:
            return 2 + int(node["maxLength"])
        return 2 + _pattern_chars(node.get("pattern", ""))
    if t == "integer":
        if "minimum" not in node or "maximum" not in node:
            raise ValueError(f"unbounded integer in a decoding schema: {node}")
        return max(len(str(int(node["minimum"]))), len(str(int(node["maximum"]))))
    if t == "boolean":
        return 5
    if t == "null":
        return 4
    raise ValueError(f"unbounded node in a decoding schema: {node}")


# -- parsing ------------------------------------------------------------------------------------------


@dataclass
class ParsedBlueprint:
    """The result of :func:`parse_blueprint`: a blueprint, or a typed failure that says what to fix."""

    blueprint: Blueprint | None
    code: str | None = None  #: ``no_json``, ``json_syntax``, ``not_object``, ``schema``
    error: str | None = None
    problems: list[str] = field(default_factory=list)
    #: ``schema``: each problem's place and pydantic error type, in the order of ``problems``, e.g.
    #: ``{"loc": "operations", "type": "too_long"}`` (what a report counts; ``problems`` is what the model reads)
    errors: list[dict[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.blueprint is not None


def parse_blueprint(data: str | dict[str, Any]) -> ParsedBlueprint:
    """A :class:`Blueprint` from model output (JSON text, possibly with prose around it) or a dict."""
    if isinstance(data, str):
        bodies = balanced_objects(data)
        body = bodies[0] if bodies else None
        if body is None:
            return ParsedBlueprint(None, "no_json", "no JSON object found: answer with one blueprint object")
        try:
            obj = json.loads(body)
        except (json.JSONDecodeError, RecursionError) as e:
            msg = getattr(e, "msg", str(e))
            return ParsedBlueprint(None, "json_syntax", f"the blueprint is not valid JSON ({msg})")
    else:
        obj = copy.deepcopy(data)
    if not isinstance(obj, dict):
        return ParsedBlueprint(None, "not_object", f"the blueprint must be a JSON object, got {type(obj).__name__}")
    try:
        return ParsedBlueprint(Blueprint.model_validate(obj))
    except ValidationError as e:
        errs = e.errors()
        problems = [f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in errs]
        kinds = [{"loc": ".".join(str(p) for p in err["loc"]) or "<root>", "type": str(err["type"])} for err in errs]
        return ParsedBlueprint(None, "schema", "the blueprint does not match its schema: " + "; ".join(problems[:8]),
                               problems, kinds)


#: the keys of a skill's ``blueprint`` section: what it requires of a blueprint (a world: envgen.world.requirements)
BLUEPRINT_KEYS = ("operations", "rules", "states", "tasks")


def check_blueprint_requirements(req: Any, where: str = "blueprint") -> dict[str, Any]:
    """A skill's ``blueprint`` section, validated and normalised (lists deduplicated, counts as ints).

    Raises ``ValueError`` naming the bad key or kind and the allowed ones.
    """
    if req is None:
        return {}
    if not isinstance(req, dict):
        raise ValueError(f"{where} must be a mapping with keys {', '.join(BLUEPRINT_KEYS)}, got {req!r}")
    unknown = sorted(set(req) - set(BLUEPRINT_KEYS))
    if unknown:
        raise ValueError(f"{where}: unknown keys {unknown}; the keys are {', '.join(BLUEPRINT_KEYS)}")
    out: dict[str, Any] = {}
    for key, vocab in (("operations", OP_KINDS), ("rules", RULE_KINDS)):
        kinds = req.get(key) or []
        if not isinstance(kinds, list) or any(k not in vocab for k in kinds):
            raise ValueError(f"{where}.{key} must be a list of {', '.join(vocab)}; got {kinds!r}")
        if kinds:
            out[key] = list(dict.fromkeys(kinds))
    if req.get("states") not in (None, True, False):
        raise ValueError(f"{where}.states must be true or false, got {req['states']!r}")
    if req.get("states"):
        out["states"] = True
    tasks = req.get("tasks") or {}
    if not isinstance(tasks, dict):
        raise ValueError(f"{where}.tasks must map task kinds to least counts, e.g. {{decline: 2}}")
    for kind, n in tasks.items():
        if kind not in TASK_KINDS or isinstance(n, bool) or not isinstance(n, int) \
                or not 1 <= n <= MAX_TASKS_PER_KIND:
            raise ValueError(f"{where}.tasks.{kind}: a task kind of {', '.join(TASK_KINDS)} with a count in "
                             f"1..{MAX_TASKS_PER_KIND}; got {n!r}")
    if tasks:
        out["tasks"] = {k: int(tasks[k]) for k in TASK_KINDS if k in tasks}
    return out

"""The compiler's environment model: entities, columns and operations.

Role: the typed middle layer between a blueprint (normalized by
:mod:`envgen.blueprint.normalize`; the AST writer designs one from a document's
analysis, :mod:`envgen.proposers.template.build`) and the emitted spec (tools,
code, tasks). Everything here is plain data plus the naming rules shared by every
stage, so that a table, its tool parameters and its checks always agree.

Contract:

* Names produced here are valid Python identifiers, not keywords, not builtins
  the generated code relies on, never starting with ``_``, at most 40
  characters; table names are plural snake_case and are always quoted in SQL.
* ``Column.sqltype`` is one of ``INTEGER``, ``REAL``, ``TEXT``, ``BOOLEAN``
  (stored as ``INTEGER`` 0/1, exposed to tools as JSON booleans).
* Operation kinds: ``create``, ``get`` (by id), ``find`` (by key), ``list``
  (optional filter), ``update`` (one column), ``delete``, ``status`` (move the
  ``status`` column to a target value), ``adjust`` (add a signed amount to a
  number column; refused when a ``minimum`` would be crossed), ``transfer``
  (with a column: move an amount of it from one row to another, both sides
  in one call, refused on an overdraft or past a ``maximum``; without one:
  move a row to another parent row, refused when that one is full).
* Column rules (from a blueprint's rules): ``unique`` text columns, a
  ``minimum``/``maximum`` range on numbers, an ``enum`` of allowed values.
* Entity rules: a ``capacity`` (how many child rows a row may hold: a fixed
  number or one of its integer columns) and ``final`` lifecycle states (a
  status tool never moves a row out of one).
"""

from __future__ import annotations

import keyword
import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

__all__ = [
    "Column",
    "Entity",
    "EnvModel",
    "Op",
    "entity_word",
    "human",
    "plural",
    "safe_name",
    "singular",
    "snake",
]

SQL_TYPES = ("INTEGER", "REAL", "TEXT", "BOOLEAN")
JSON_TYPES = {"INTEGER": "integer", "REAL": "number", "TEXT": "string", "BOOLEAN": "boolean"}

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_RESERVED = (
    set(keyword.kwlist)
    | {"print", "printed", "breakpoint", "exec", "eval", "compile", "globals", "locals", "vars", "super",
       "str", "repr", "bool", "dict", "int", "float", "len", "list", "isinstance", "ToolError",
       "status", "found", "result", "clash", "record", "done", "need_text", "as_record", "load_row",
       "by_key", "BOOLEAN_COLUMNS", "rowid", "oid", "parent_row", "held_count"}
)
"""Names a column or tool parameter must not have: keywords, names RestrictedPython refuses, builtins and
locals the generated tool code uses, and the managed ``status`` column."""
_SKIP = {"id", "db", "self", "cls"}
_RENAMES = {"status": "state", "done": "is_done", "result": "outcome", "found": "is_found", "record": "entry",
            "list": "list_name", "print": "printout", "len": "length", "str": "text", "dict": "mapping",
            "bool": "flag", "int": "number", "float": "amount", "class": "category", "from": "source",
            "import": "module_name", "global": "scope", "pass": "passed", "return": "returned",
            "yield": "yielded", "in": "inside", "is": "is_value", "async": "is_async"}


@lru_cache(maxsize=65536)
def snake(name: str) -> str:
    """``OrderedDict`` → ``ordered_dict``; ``_maxsize`` → ``maxsize``; accents dropped (``ñame`` → ``name``)."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    words = _CAMEL.sub("_", ascii_name.strip("_")).lower()
    words = re.sub(r"[^a-z0-9_]", "_", words)
    return re.sub(r"_+", "_", words).strip("_")


@lru_cache(maxsize=65536)
def safe_name(name: str, *, max_len: int = 40) -> str | None:
    """A usable column / parameter name from ``name`` (reserved ones renamed: ``status`` → ``state``), or None."""
    s = snake(name)[:max_len].strip("_")
    if s in _SKIP or len(s) < 2 or not s[0].isalpha():
        return None
    if s in _RESERVED:
        s = _RENAMES.get(s, f"{s}_value")
    return None if s in _RESERVED else s


def entity_word(name: str) -> str | None:
    """A snake_case entity name (it is only used inside longer identifiers), or ``None``."""
    s = snake(name)
    return s if len(s) >= 2 and s[0].isalpha() else None


def plural(word: str) -> str:
    """A simple English plural of the last word of a snake_case name."""
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def singular(noun: str) -> str:
    """A simple English singular of a noun (``categories`` → ``category``, ``boxes`` → ``box``)."""
    if noun.endswith("ies") and len(noun) > 4:
        return noun[:-3] + "y"
    if noun.endswith(("sses", "xes", "ches", "shes")):
        return noun[:-2]
    if noun.endswith("s") and not noun.endswith(("ss", "us", "is", "os")) and len(noun) > 3:
        return noun[:-1]
    return noun


def human(name: str) -> str:
    """``max_size`` → ``max size``."""
    return snake(name).replace("_", " ")


@dataclass
class Column:
    """One column of a table (never ``id`` and never a foreign key)."""

    name: str
    sqltype: str
    origin: str = ""  #: the attribute / parameter of the document it came from
    enum: list[str] | None = None
    required: bool = True
    description: str = ""  #: what the column holds (a blueprint field's description)
    unique: bool = False  #: no two rows share a value (the key is always unique)
    minimum: float | None = None  #: lowest allowed value of a number column (None: 0, the default floor)
    maximum: float | None = None  #: highest allowed value of a number column

    @property
    def human(self) -> str:
        return human(self.name)

    @property
    def json_type(self) -> str:
        return JSON_TYPES[self.sqltype]

    @property
    def storage(self) -> str:
        return "INTEGER" if self.sqltype == "BOOLEAN" else self.sqltype


@dataclass
class Entity:
    """A table: rows of one kind of thing the document manages."""

    name: str  #: singular snake_case, used in tool names ("item")
    key: Column  #: unique TEXT column used to find rows by name
    columns: list[Column]  #: value columns (not id, key, status or foreign key)
    origin: str = ""  #: "Inventory" or "Inventory.add_item": where the entity was found
    doc: str = ""  #: first docstring line of the origin class, if any
    parent: Entity | None = None  #: rows belong to a row of this entity
    status: list[str] | None = None  #: allowed values of a ``status`` column (first = initial)
    rows: list[dict[str, Any]] = field(default_factory=list)
    capacity: int | None = None  #: at most this many child rows per row (a fixed capacity rule)
    capacity_column: Column | None = None  #: or as many as this integer column of the row says
    final: list[str] = field(default_factory=list)  #: states a status tool never moves a row out of

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
    def id_param(self) -> str:
        return f"{self.name}_id"

    @property
    def fk(self) -> str | None:
        return self.parent.id_param if self.parent is not None else None

    def all_columns(self) -> list[Column]:
        """Key and value columns (the ones a create call states)."""
        return [self.key, *self.columns]

    def stored_columns(self) -> list[str]:
        """Names of the table's columns but ``id``, in table order: the parent's id, key, values, status."""
        cols = [self.parent.id_param] if self.parent is not None else []
        cols += [c.name for c in self.all_columns()]
        if self.status:
            cols.append("status")
        return cols

    @property
    def limited(self) -> bool:
        """Whether a capacity rule bounds how many child rows a row holds."""
        return self.capacity is not None or self.capacity_column is not None

    def room(self, row: dict[str, Any]) -> int | None:
        """How many child rows ``row`` may hold (None: no capacity rule)."""
        if self.capacity_column is not None:
            return int(row[self.capacity_column.name])
        return self.capacity

    def column(self, name: str) -> Column | None:
        for c in self.all_columns():
            if c.name == name:
                return c
        return None


@dataclass
class Op:
    """One tool: an operation on an entity."""

    kind: str  #: create / get / find / list / update / delete / status / adjust / transfer
    entity: Entity
    tool: str  #: the tool's name
    origin: str = ""  #: the document method it is modelled on ("Inventory.add_item")
    column: Column | None = None  #: the column an update writes, an adjust or a transfer changes
    target: str | None = None  #: the status value a status op sets
    note: str = ""  #: what the tool does in the document's words (a blueprint operation's description)

    @property
    def writes(self) -> bool:
        return self.kind in ("create", "update", "delete", "status", "adjust", "transfer")

    @property
    def moves(self) -> bool:
        """A transfer that moves a row to another parent row (rather than an amount between rows)."""
        return self.kind == "transfer" and self.column is None


@dataclass
class EnvModel:
    """Everything a spec is rendered from."""

    entities: list[Entity]
    ops: list[Op]
    module: str  #: dotted module name or path stem
    path: str
    title: str
    summary: str  #: one line on what the document is
    words: list[str] = field(default_factory=list)  #: vocabulary from the document

    def ops_of(self, kind: str, entity: Entity | None = None) -> list[Op]:
        return [o for o in self.ops if o.kind == kind and (entity is None or o.entity is entity)]

    def op(self, kind: str, entity: Entity | None = None) -> Op | None:
        found = self.ops_of(kind, entity)
        return found[0] if found else None

    @property
    def write_tools(self) -> list[str]:
        return [o.tool for o in self.ops if o.writes]

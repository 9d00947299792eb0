"""From a blueprint to the compiler's typed model: names, columns, relations, operations and rules.

Role: the first half of the compiler (:mod:`envgen.blueprint.compiler`). A
blueprint only promises its JSON Schema; everything the schema cannot say is
enforced here, and every change is recorded as a *repair* (a short sentence
naming the place and the reason), so a model's output is never silently
rewritten:

* names: singular entity names, column names that are valid, unreserved
  identifiers (``status`` → ``state``, ``id`` dropped), no duplicates
  (``uniqueItems`` is not in the schema);
* the key: the identifying field must be a string; otherwise the first
  string field, or a new ``name`` column;
* relations: a parent must be another entity, with no cycles; tables come out
  parents first;
* operations: unknown entities or fields dropped, a status target moved into
  the entity's states, tool names made valid and unique, and the tools every
  main entity needs (create, get, find, list, update) completed;
* rules (``RULE_KINDS``): applied to their column (or, for ``capacity`` and
  ``final``, to their entity), or dropped when the entity or field is unknown
  or the rule does not fit it;
* a transfer: with a number field it moves an amount between two records;
  without one it moves a record to another parent (a relation it needs);
* a skill's requirements (compiler options): the features it asks for are
  added when the blueprint lacks them.

Nothing here draws values; :class:`Normalizer` only uses ``rng`` for the same
choices the template proposer makes (a tool verb, an update column).
"""

from __future__ import annotations

import keyword
import random
import re
from typing import Any

from envgen.blueprint.render.model import Column, Entity, Op, safe_name, singular, snake
from envgen.blueprint.render.ops import complete_ops, free_tool_name, join_tool_name
from envgen.blueprint.render.words import STATUS_TARGET
from envgen.blueprint.schema import MAX_STATES, Blueprint, BlueprintEntity, Operation, Rule

__all__ = ["RESERVED_TOOL_NAMES", "Normalizer"]

_SQL_TYPES = {"string": "TEXT", "integer": "INTEGER", "number": "REAL", "boolean": "BOOLEAN"}
_KEY_HINTS = ("name", "title", "label", "key", "code", "username", "email", "path", "host", "url")
_FALLBACK = (("priority", "INTEGER", "how urgent it is (1-9)"), ("notes", "TEXT", "free-form notes"))
_MAX_VALUE_COLUMNS = 4
_VERB_OF_TARGET = {target: verb for verb, target in reversed(list(STATUS_TARGET.items()))}

RESERVED_TOOL_NAMES = frozenset(
    set(keyword.kwlist)
    | {"need_text", "as_record", "load_row", "by_key", "BOOLEAN_COLUMNS", "ToolError", "db", "print", "dict",
       "list", "len", "str", "int", "float", "bool", "isinstance", "sorted", "min", "max", "sum", "range"}
)
"""Names a tool may not have: Python keywords, the generated code's helpers and the builtins it uses."""

_TOOL = re.compile(r"^[a-z][a-z0-9_]{1,63}$")


def _numbers(ent: Entity) -> list[Column]:
    """The entity's number columns (integer or real), in order."""
    return [c for c in ent.columns if c.sqltype in ("INTEGER", "REAL")]


class Normalizer:
    """Turns one blueprint into entities and operations, collecting repairs in ``self.repairs``."""

    def __init__(self, bp: Blueprint, rng: random.Random, require: dict[str, Any] | None = None):
        self.bp = bp
        self.rng = rng
        self.require = dict(require or {})
        self.repairs: list[str] = []
        self.entities: dict[str, Entity] = {}  #: by entity name, in blueprint order (main first)
        self.parents: dict[str, str] = {}

    def repair(self, where: str, what: str) -> None:
        self.repairs.append(f"{where}: {what}")

    # -- entities -----------------------------------------------------------------------------------
    def entity_name(self, raw: str) -> str | None:
        words = [w for w in snake(raw).split("_") if w]
        while words and words[0].startswith("sqlite"):
            words = words[1:]
        if not words:
            return None
        words[-1] = singular(words[-1])
        name = "_".join(words)[:24].strip("_")
        return name if len(name) >= 2 and name[0].isalpha() and not keyword.iskeyword(name) else None

    def build_entities(self) -> None:
        for i, be in enumerate(self.bp.entities):
            where = f"entities[{i}] ({be.name})"
            name = self.entity_name(be.name)
            if name is None:
                self.repair(where, "the name is not usable as a table name; entity dropped")
                continue
            if name in self.entities:
                self.repair(where, f"a second entity named {name!r}; dropped (names must be unique)")
                continue
            if name != be.name:
                self.repair(where, f"renamed to {name!r} (singular, valid table name)")
            self.entities[name] = self.entity(be, name, where, main=not self.entities)
        if not self.entities:
            return
        for i, be in enumerate(self.bp.entities):
            name = self.entity_name(be.name)
            if name in self.entities and be.parent is not None:
                self.link(name, be.parent, f"entities[{i}] ({be.name}).parent")

    def entity(self, be: BlueprintEntity, name: str, where: str, main: bool) -> Entity:
        taken = {"id", f"{name}_id", "status"}
        columns: list[Column] = []
        seen: set[str] = set()
        for j, f in enumerate(be.fields):
            col = self.column(f.name, _SQL_TYPES[f.type], f.description, f"{where}.fields[{j}]", taken | seen)
            if col is not None:
                columns.append(col)
                seen.add(col.name)
        key = self.key(be, columns, where, taken)
        values = [c for c in columns if c is not key]
        if len(values) > _MAX_VALUE_COLUMNS:
            self.repair(where, f"{len(values)} value fields; kept the first {_MAX_VALUE_COLUMNS}")
            values = values[:_MAX_VALUE_COLUMNS]
        if main and not any(c.sqltype != "BOOLEAN" for c in values):
            for col_name, sqltype, desc in _FALLBACK:
                if col_name not in {c.name for c in values} | {key.name}:
                    values.append(Column(col_name, sqltype, "", description=desc))
                    self.repair(where, f"no usable non-boolean field; added {col_name!r}")
                    break
        for c in values:
            c.required = c.sqltype != "BOOLEAN"
        ent = Entity(name, key, values, "", be.description)
        ent.status = self.states(list(be.states), f"{where}.states")
        return ent

    def column(self, raw: str, sqltype: str, description: str, where: str, taken: set[str]) -> Column | None:
        name = safe_name(raw)
        if name is None:
            self.repair(where, f"field {raw!r} is not usable (reserved, too short or 'id'); dropped")
            return None
        if name.endswith("_id") or name in taken:
            why = "a relation is the entity's parent" if name.endswith("_id") else "a duplicate or reserved name"
            self.repair(where, f"field {name!r} dropped ({why})")
            return None
        if name != raw:
            self.repair(where, f"field {raw!r} renamed to {name!r} (reserved or not snake_case)")
        return Column(name, sqltype, "", description=description)

    def key(self, be: BlueprintEntity, columns: list[Column], where: str, taken: set[str]) -> Column:
        wanted = safe_name(be.key)
        match = next((c for c in columns if c.name == wanted), None)
        if match is not None and match.sqltype == "TEXT":
            return match
        if match is None and wanted is not None and wanted not in taken and not wanted.endswith("_id"):
            return Column(wanted, "TEXT", "", description=f"the {wanted.replace('_', ' ')} that identifies it")
        texts = [c for c in columns if c.sqltype == "TEXT"]
        hinted = [c for c in texts if c.name in _KEY_HINTS or c.name.endswith(("_name", "_title", "_key"))]
        pick = (hinted or texts or [None])[0]
        why = f"key {be.key!r} is {'not a string field' if match is not None else 'not usable'}"
        if pick is not None:
            self.repair(where, f"{why}; the string field {pick.name!r} identifies records instead")
            return pick
        used = {c.name for c in columns} | taken
        entity = snake(be.name) or "record"
        # the first name no field has (a field ``list`` is renamed ``list_name``, so ``<entity>_name`` can be taken)
        name = next(n for n in ("name", f"{entity}_name", "label", f"{entity}_label", "title", *(
            f"name_{i}" for i in range(2, len(used) + 3))) if n not in used)
        self.repair(where, f"{why}; added a string key {name!r}")
        return Column(name, "TEXT", "", description="the name that identifies it")

    def states(self, values: list[str], where: str) -> list[str] | None:
        out = [snake(v) for v in values]
        out = [v for v in dict.fromkeys(out) if v and v[0].isalpha()]
        if len(out) < len(values):
            self.repair(where, "duplicate or unusable states dropped")
        if len(out) == 1:
            self.repair(where, "a lifecycle needs at least two states; dropped")
            return None
        return out or None

    def link(self, child: str, raw_parent: str, where: str) -> None:
        parent = self.entity_name(raw_parent)
        if parent not in self.entities or parent == child:
            self.repair(where, f"parent {raw_parent!r} is not another entity; relation dropped")
            return
        up = parent
        while up in self.parents:
            up = self.parents[up]
            if up == child:
                self.repair(where, f"parent {raw_parent!r} would make a cycle; relation dropped")
                return
        self.parents[child] = parent
        self.entities[child].parent = self.entities[parent]

    def ordered(self) -> list[Entity]:
        """Entities parents first (seed rows of a child need its parent's ids), otherwise in blueprint order."""
        out: list[Entity] = []

        def add(e: Entity) -> None:
            if e.parent is not None and e.parent not in out:
                add(e.parent)
            if e not in out:
                out.append(e)

        for e in self.entities.values():
            add(e)
        return out

    # -- rules --------------------------------------------------------------------------------------
    def apply_rules(self) -> None:
        """Every rule, ``states`` first (a ``final`` rule names states another rule may introduce)."""
        order = sorted(range(len(self.bp.rules)), key=lambda i: self.bp.rules[i].kind != "states")
        for i in order:
            rule = self.bp.rules[i]
            self.rule(rule, f"rules[{i}] ({rule.kind})")

    def rule(self, rule: Rule, where: str) -> None:
        ent = self.entities.get(self.entity_name(rule.entity) or "")
        if ent is None:
            self.repair(where, f"unknown entity {rule.entity!r}; rule dropped")
            return
        if rule.kind == "states":
            if ent.status:
                self.repair(where, f"{ent.name} already has states; rule dropped")
            else:
                ent.status = self.states(list(rule.values), where)
            return
        if rule.kind == "final":
            self.final(ent, rule, where)
            return
        if rule.kind == "capacity":
            self.capacity(ent, rule, where)
            return
        col = ent.column(safe_name(rule.field or "") or "")
        if col is None:
            self.repair(where, f"unknown field {rule.field!r} of {ent.name}; rule dropped")
            return
        numeric = col.sqltype in ("INTEGER", "REAL")
        if rule.kind == "unique":
            if col is ent.key or col.sqltype != "TEXT":
                why = "the key is always unique" if col is ent.key else "unique applies to string fields"
                self.repair(where, f"{why}; rule dropped")
            else:
                col.unique = True
        elif rule.kind == "required":
            if col.sqltype == "BOOLEAN":
                self.repair(where, "a boolean field always has a value; rule dropped")
            col.required = col.sqltype != "BOOLEAN"
        elif rule.kind in ("range", "non_negative") and not numeric:
            self.repair(where, f"{rule.kind} applies to number fields, {col.name!r} is not one; rule dropped")
        elif rule.kind == "non_negative":
            col.minimum = max(0, col.minimum or 0)
        elif rule.kind == "range":
            self.range(col, rule, where)
        elif rule.kind == "enum":
            self.enum(ent, col, rule, where)

    def range(self, col: Column, rule: Rule, where: str) -> None:
        lo, hi = rule.min, rule.max
        if lo is not None and hi is not None and lo > hi:
            lo, hi = hi, lo
            self.repair(where, "min was above max; swapped")
        if lo is not None and lo < 0:
            self.repair(where, f"min {lo} raised to 0 (numbers here are never negative)")
            lo = 0
        if hi is not None and hi < (lo or 0) + 2:
            self.repair(where, f"max {hi} leaves too little room above the minimum; dropped")
            hi = None
        col.minimum = lo
        col.maximum = hi

    def final(self, ent: Entity, rule: Rule, where: str) -> None:
        """States no status tool moves a record out of (never the initial one: nothing would move)."""
        if not ent.status:
            self.repair(where, f"{ent.name} has no states; rule dropped")
            return
        wanted = [snake(v) for v in rule.values]
        kept = [v for v in dict.fromkeys(wanted) if v in ent.status[1:]]
        if len(kept) < len(wanted):
            self.repair(where, f"final states must be later states of {ent.name} ({', '.join(ent.status[1:])}); "
                               "the others dropped")
        if not kept:
            return
        ent.final = list(dict.fromkeys([*ent.final, *kept]))

    def capacity(self, ent: Entity, rule: Rule, where: str) -> None:
        """How many child records a record holds: one of its integer fields, or a fixed ``max``."""
        if not any(e.parent is ent for e in self.entities.values()):
            self.repair(where, f"no entity belongs to {ent.name} (a capacity counts the records that belong to "
                               "one); rule dropped")
            return
        if rule.field is not None:
            col = ent.column(safe_name(rule.field) or "")
            if col is not None and col.sqltype == "INTEGER" and col is not ent.key:
                ent.capacity_column = col
                col.minimum = max(1, int(col.minimum or 0))
                return
            self.repair(where, f"field {rule.field!r} is not an integer field of {ent.name}"
                               + ("; the fixed max is used" if rule.max else "; rule dropped"))
        if rule.max is not None and rule.max >= 1:
            ent.capacity = int(min(rule.max, 1000))
        elif rule.field is None:
            self.repair(where, "a capacity needs an integer field or a max of at least 1; rule dropped")

    def enum(self, ent: Entity, col: Column, rule: Rule, where: str) -> None:
        values = list(dict.fromkeys(rule.values))
        if col.sqltype != "TEXT" or col is ent.key or len(values) < 2:
            why = ("enum applies to non-key string fields" if col.sqltype != "TEXT" or col is ent.key
                   else "an enum needs at least two distinct values")
            self.repair(where, f"{why}; rule dropped")
            return
        col.enum = values

    # -- operations ---------------------------------------------------------------------------------
    def build_ops(self, main: Entity) -> list[Op]:
        ops: list[Op] = []
        for i, op in enumerate(self.bp.operations):
            made = self.op(op, f"operations[{i}] ({op.kind} {op.entity})", ops)
            if made is not None:
                ops.append(made)
        self.require_features(main, ops)
        mine = [o for o in ops if o.entity is main]
        completed = complete_ops(main, mine, self.rng, taken={o.tool for o in ops})
        for o in completed:
            if o not in mine:
                self.repair("operations", f"added {o.kind} tool {o.tool!r} (every main entity has create, get, "
                                          "find, list and update)")
        others = [o for o in ops if o.entity is not main]
        for ent in self.entities.values():
            if ent is main:
                continue
            have = {o.kind for o in others if o.entity is ent}
            needs = ["find"] if ent is main.parent or ent.parent is None else ["create", "list"]
            for kind in needs:
                if kind not in have:
                    tool = self.unique_tool(self.default_tool(kind, ent, None), completed + others)
                    others.append(Op(kind, ent, tool, ""))
                    self.repair("operations", f"added {kind} tool {tool!r} for {ent.name}")
        return completed + others

    def update_column(self, op: Operation, ent: Entity, where: str) -> Column | None:
        """The column an update sets: the named one, else the first non-boolean one (None: only a key)."""
        col = ent.column(safe_name(op.field or "") or "")
        if col is not None:
            return col
        free = [c for c in ent.columns if c.sqltype != "BOOLEAN"] or ent.columns
        if not free:
            self.repair(where, f"{ent.name} has no field besides its key to update; operation dropped")
            return None
        self.repair(where, f"field {op.field!r} is not a field of {ent.name}; updates {free[0].name!r} instead")
        return free[0]

    def op(self, op: Operation, where: str, done: list[Op]) -> Op | None:
        ent = self.entities.get(self.entity_name(op.entity) or "")
        if ent is None:
            self.repair(where, f"unknown entity {op.entity!r}; operation dropped")
            return None
        col: Column | None = None
        target: str | None = None
        if op.kind == "update":
            col = self.update_column(op, ent, where)
            if col is None:
                return None
        elif op.kind == "adjust":
            col = ent.column(safe_name(op.field or "") or "")
            if col is None or col.sqltype not in ("INTEGER", "REAL"):
                nums = _numbers(ent)
                if not nums:
                    self.repair(where, f"{ent.name} has no number field to adjust; operation dropped")
                    return None
                self.repair(where, f"field {op.field!r} is not a number field; adjusts {nums[0].name!r} instead")
                col = nums[0]
        elif op.kind == "transfer":
            made = self.transfer_column(op, ent, where)
            if made is False:
                return None
            col = made if isinstance(made, Column) else None
        elif op.kind == "status":
            if not ent.status:
                self.repair(where, f"{ent.name} has no states; status operation dropped")
                return None
            target = snake(op.target or "")
            if target not in ent.status[1:]:
                target = ent.status[1] if len(ent.status) > 1 else None
                self.repair(where, f"target {op.target!r} is not a later state of {ent.name}; moves to {target!r}")
            if target is None:
                return None
        ident = (op.kind, ent.name, col.name if col else target or "")
        if any((o.kind, o.entity.name, o.column.name if o.column else o.target or "") == ident for o in done):
            self.repair(where, "the same operation twice; dropped")
            return None
        limit = {"update": 2, "status": 2, "adjust": 2, "transfer": 2}.get(op.kind, 1)
        if sum(1 for o in done if o.kind == op.kind and o.entity is ent) >= limit:
            self.repair(where, f"more than {limit} {op.kind} tool(s) for {ent.name}; dropped")
            return None
        tool = self.tool_name(op.name, op.kind, ent, col, target, where)
        desc = op.description.strip()
        origin = desc[5:].strip() if desc.startswith("from ") else ""
        built = Op(op.kind, ent, self.unique_tool(tool, done, where), origin, column=col, target=target)
        built.note = "" if origin else desc
        return built

    def transfer_column(self, op: Operation, ent: Entity, where: str) -> Column | bool | None:
        """The number a transfer moves between records, None to move records between parents, False: dropped."""
        nums = _numbers(ent)
        if op.field is not None:
            col = ent.column(safe_name(op.field) or "")
            if col is not None and col.sqltype in ("INTEGER", "REAL"):
                return col
            if ent.parent is None and nums:
                self.repair(where, f"field {op.field!r} is not a number field; moves {nums[0].name!r} instead")
                return nums[0]
            if ent.parent is not None:
                self.repair(where, f"field {op.field!r} is not a number field; moves {ent.humans} to another "
                                   f"{ent.parent.human} instead")
                return None
        elif ent.parent is not None:
            return None
        elif nums:
            self.repair(where, f"{ent.name} belongs to no other entity; the transfer moves {nums[0].name!r} "
                               "between records instead")
            return nums[0]
        self.repair(where, f"{ent.name} has neither a number field nor a parent to transfer; operation dropped")
        return False

    def tool_name(self, raw: str | None, kind: str, ent: Entity, col: Column | None, target: str | None,
                  where: str) -> str:
        if raw:
            name = snake(raw)[:64].strip("_")
            if _TOOL.match(name) and name not in RESERVED_TOOL_NAMES:
                return name
            self.repair(where, f"tool name {raw!r} is not a valid, unreserved identifier; renamed")
        return self.default_tool(kind, ent, col, target)

    def default_tool(self, kind: str, ent: Entity, col: Column | None, target: str | None = None) -> str:
        if kind == "list":
            return join_tool_name("list", ent.table)
        if kind == "update" and col is not None:
            return join_tool_name("rename", ent.name) if col is ent.key else join_tool_name("set", ent.name, col.name)
        if kind == "adjust" and col is not None:
            return join_tool_name("adjust", ent.name, col.name)
        if kind == "transfer":
            if col is None:
                return join_tool_name("move", ent.name)
            return join_tool_name("transfer", ent.name, col.name)
        if kind == "status":
            verb = _VERB_OF_TARGET.get(target or "")
            return join_tool_name(verb, ent.name) if verb else join_tool_name("mark", ent.name, target or "")
        verb = {"create": "add", "get": "get", "find": "find", "delete": "delete"}[kind]
        return join_tool_name(verb, ent.name)

    def unique_tool(self, name: str, done: list[Op], where: str = "operations") -> str:
        alt = free_tool_name(name, {o.tool for o in done}, tries=20)
        if alt != name:
            self.repair(where, f"tool name {name!r} already used; renamed {alt!r}")
        return alt

    # -- skills -------------------------------------------------------------------------------------
    def require_features(self, main: Entity, ops: list[Op]) -> None:
        """Add what a skill requires (``require``) and the blueprint lacks (each a repair)."""
        req = self.require
        kinds = set(req.get("operations") or [])
        rules = set(req.get("rules") or [])
        if (req.get("states") or "states" in rules or "status" in kinds) and not main.status:
            main.status = ["active", "closed"]
            self.repair("skill", f"the skill needs a lifecycle; {main.name} gets states active, closed")
        if "delete" in kinds and not any(o.kind == "delete" and o.entity is main for o in ops):
            self.add_op("delete", main, ops)
            self.repair("skill", f"the skill needs a delete tool on {main.name}; added")
        if "status" in kinds and main.status and not any(o.kind == "status" and o.entity is main for o in ops):
            target = main.status[-1]
            self.add_op("status", main, ops, target=target)
            self.repair("skill", f"the skill needs a status transition; added one to {target!r}")
        if "adjust" in kinds and not any(o.kind == "adjust" for o in ops):
            nums = _numbers(main)
            if not nums:
                col = Column(self.free_column(main, "balance"), "INTEGER", "", description="the amount it holds")
                main.columns.append(col)
                nums = [col]
                self.repair("skill", f"the skill needs a balance; {main.name} gets an integer {col.name!r}")
            self.add_op("adjust", main, ops, column=nums[0])
            self.repair("skill", f"the skill needs an adjust tool on {nums[0].name!r}; added")
        if "transfer" in kinds and not any(o.kind == "transfer" for o in ops):
            nums = _numbers(main)
            moved: Column | None = nums[0] if nums else None
            if moved is None and main.parent is None:
                moved = Column(self.free_column(main, "balance"), "INTEGER", "", description="the amount it holds")
                main.columns.append(moved)
                self.repair("skill", f"the skill needs a transfer; {main.name} gets an integer {moved.name!r}")
            self.add_op("transfer", main, ops, column=moved)
            self.repair("skill", f"the skill needs a transfer tool on {main.name}; added")
        self.require_rules(main, ops)

    def require_rules(self, main: Entity, ops: list[Op]) -> None:
        """The rules a skill requires that the blueprint lacks (each a repair)."""
        for rule in self.require.get("rules") or []:
            if rule == "non_negative":
                nums = _numbers(main)
                if not any(c.minimum == 0 for c in nums):
                    col = next((c for c in nums if c.minimum is None), None) or self.number_column(main, rule)
                    col.minimum = 0
                    self.repair("skill", f"the skill needs a non-negative rule; applied to {col.name!r}")
            elif rule == "range":
                nums = _numbers(main)
                if not any(c.maximum is not None for c in nums):
                    col = next(iter(nums), None) or self.number_column(main, rule)
                    col.minimum = 0 if col.minimum is None else col.minimum
                    col.maximum = max(1000, int(col.minimum) + 1)
                    self.repair("skill", f"the skill needs a range rule; {col.name!r} runs from {col.minimum:g} to "
                                         f"{col.maximum:g}")
            elif rule == "enum":
                if not any(c.enum for e in self.entities.values() for c in e.columns):
                    name = self.free_column(main, "category")
                    main.columns.append(Column(name, "TEXT", "", enum=["general", "special"],
                                               description="the kind of record"))
                    self.repair("skill", f"the skill needs an enum; {main.name} gets a {name!r} of general or "
                                         "special")
            elif rule == "final":
                self.require_final(main, ops)
            elif rule == "capacity":
                self.require_capacity(main)

    def number_column(self, main: Entity, rule: str) -> Column:
        """A new integer column of the main entity, for a rule on a number it lacks."""
        col = Column(self.free_column(main, "quantity"), "INTEGER", "", description="how many it holds")
        main.columns.append(col)
        self.repair("skill", f"the skill needs a {rule} rule on a number; {main.name} gets an integer {col.name!r}")
        return col

    @staticmethod
    def free_column(ent: Entity, base: str) -> str:
        """``base``, or ``base_2``, ``base_3``... : a column name the entity does not use yet."""
        return free_tool_name(base, {c.name for c in ent.columns} | {ent.key.name, "id", "status"})

    def add_op(self, kind: str, main: Entity, ops: list[Op], *, column: Column | None = None,
               target: str | None = None) -> None:
        """Append a ``kind`` operation on ``main`` under its default tool name (numbered when taken)."""
        tool = self.unique_tool(self.default_tool(kind, main, column, target), ops)
        ops.append(Op(kind, main, tool, "", column=column, target=target))

    def require_final(self, main: Entity, ops: list[Op]) -> None:
        """A final state of the main entity, and a status tool that refuses to move a record out of it (the
        lifecycle the ``final`` requirement names; as the deepening pass writes one)."""
        if not main.status:
            main.status = ["active", "closed"]
            self.repair("skill", f"the skill needs a final state; {main.name} gets states active, closed")
        if not main.final:
            if len(main.status) < 3 and len(main.status) < MAX_STATES and "archived" not in main.status:
                main.status.append("archived")
            main.final = [main.status[-1]]
            self.repair("skill", f"the skill needs a final state; {main.final[0]!r} of {main.name} is one")
        mine = [o for o in ops if o.kind == "status" and o.entity is main]
        for target in (main.final[0], next((s for s in main.status[1:] if s not in main.final), None)):
            if target is not None and not any(o.target == target for o in mine):
                self.add_op("status", main, ops, target=target)
                self.repair("skill", f"the skill needs a final state; added a status tool to {target!r}")

    def require_capacity(self, main: Entity) -> None:
        """A capacity on the entity whose records others belong to (the main one, or its parent)."""
        holder = main if any(e.parent is main for e in self.entities.values()) else main.parent
        if holder is None or holder.capacity is not None or holder.capacity_column is not None:
            return
        holder.capacity = 5
        self.repair("skill", f"the skill needs a capacity; a {holder.name} holds at most 5 records")


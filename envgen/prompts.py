"""Prompts for LLM proposers: what the model is asked to write (:mod:`envgen.completions` reads it back).

Building (:func:`build_messages`, :func:`build_repair_messages`):

* the **system message** is a compact version of the contract in gym_envs/ENVSPEC.md:
  the fields, the restricted-Python rules of the tool code, the check kinds (each kind's own prompt line, read
  from the registry of :mod:`gym_envs.checks` when the messages are built: :func:`spec_system_prompt`) and the
  validity rules the gate enforces (the reserved names imported from :mod:`gym_envs.spec`);
* the **user message** holds one or two example specs (a routed skill's
  examples when a skill is given, else the shipped examples of
  :mod:`gym_envs.examples`, else a small built-in one), each as compact JSON
  trimmed to a token budget by dropping tasks; the skill's guidance
  (``skill.render(level)``); the document excerpt (``corpora.excerpt`` within
  ``excerpt_tokens``); the instruction to answer with one JSON object in a
  ```` ```json ```` fence;
* a **repair** conversation is the original system and user messages, the
  previous answer, and the gate's feedback (bullet reasons) with the request
  to return the corrected full JSON.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any

from gym_envs.checks import check_kinds
from gym_envs.parsing import strip_think
from gym_envs.sandbox import ALLOWED_MODULES
from gym_envs.spec import (
    MCP_CONTROL_TOOLS,
    RESERVED_PARAMETER_NAMES,
    RESERVED_PREFIXES,
    RESERVED_TOOL_NAMES,
    EnvSpec,
    parse_spec,
)

__all__ = [
    "BUILTIN_EXAMPLE",
    "SYSTEM_PROMPT",
    "build_messages",
    "build_repair_messages",
    "builtin_example",
    "check_lines",
    "document_excerpt",
    "messages_sha256",
    "render_example",
    "shipped_examples",
    "skill_id_of",
    "spec_system_prompt",
]

TokenCounter = Callable[[str], int]


def check_lines() -> str:
    """One line per check kind a spec_version 1 document may use, each kind's own prompt line, read from the
    registry (:mod:`gym_envs.checks`) when the prompt is built."""
    return "\n".join(f"- {kind.prompt}" for kind in check_kinds(1) if kind.prompt)


def spec_system_prompt() -> str:
    """The system message of a spec proposer (module docstring), with the check kinds registered now."""
    return _SYSTEM.replace("{CHECK_LINES}", check_lines())


_SYSTEM = f"""\
You design executable tool-use environments for training AI agents. An environment is ONE JSON object \
(spec_version 1) that simulates a small stateful system: a SQLite database, tools the agent can call, \
Python code that implements the tools, and tasks whose checks inspect the database after the agent acts.

# Fields
- "spec_version": 1
- "id": a lowercase slug of 3 to 80 characters from a-z 0-9 _ . - (for example "warehouse-stock")
- "title", "description": what the system is and its business rules (the agent reads them)
- "state": {{"schema_sql": "CREATE TABLE ...;" (CREATE TABLE / CREATE INDEX only), \
"seed_sql": "INSERT INTO ...;" (the starting rows)}}
- "tools": [{{"name": "snake_case_name", "description": "...", "parameters": {{"type": "object", \
"properties": {{"arg": {{"type": "integer"}}}}, "required": ["arg"]}}}}]
- "code": Python source with one top-level function per tool: def TOOL_NAME(db, arg, other_arg=None): ...
- "tasks": [{{"id": "t1", "kind": "...", "turns": [{{"instruction": "what the user asks", "checks": [...], \
"reference": [{{"name": "tool_name", "arguments": {{...}}}}]}}]}}]
Do not write "source" or "provenance": they are filled in for you.

# Tool code (it runs in a restricted Python sandbox)
- After db, a function's parameters are exactly its tool's schema properties, with the same names; every \
property not listed in "required" needs a default value.
- db.query(sql, params) returns a list of dict rows; db.execute(sql, params) returns {{"rowcount", \
"lastrowid"}}. One SQL statement per call; pass values as ? parameters, e.g. \
db.query("SELECT * FROM items WHERE id = ?", (item_id,)).
- To report an error the agent should see: raise ToolError("message") (ToolError is built in; do not \
import it).
- No name may start with an underscore (functions, variables, arguments). No classes, generator functions \
(yield), open, eval, exec, getattr, type, globals or str.format; f-strings are fine.
- Only these imports: {", ".join(ALLOWED_MODULES)}.
- Deterministic: no current date or time (write dates as fixed strings), no unseeded randomness. Return \
JSON values (dict, list, str, int, float, bool, None).

# Tasks
"kind" is one of: execute (carry out a change), read (answer a question; the state must not change), \
read_then_write (look something up, then change it), missing_parameter (a needed value is missing: the agent \
must ask, and the next turn supplies it), decline (the tools cannot do it: the agent must say so and change \
nothing). Each turn is one user instruction; "reference" is the correct sequence of tool calls for that \
turn. Check kinds, evaluated on the database after the turn:
{{CHECK_LINES}}

# A spec is accepted only if
1. It is valid JSON with the fields above, unique tool names and task ids, a function for every tool.
2. schema_sql and seed_sql run on SQLite.
3. Replaying each turn's reference calls raises no error and passes every check of that turn: compute each \
expected value from the seed rows and the reference calls, exactly.
4. For every turn that changes the database or answers a question, doing nothing fails at least one check \
(a "calls" check alone never counts).
5. Wrong trajectories fail a check other than "calls", in every turn: a reference call dropped or one of its \
arguments set to another value (another existing id or value, one that does not exist); the calls aimed at \
another row; an extra write on another row; a reply that omits the answer or gives another row's value. \
So check the exact rows the turn must produce, that nothing else changed (an unchanged check on the other \
tables, the rest of the written table pinned), and every answer with reply_contains.
6. reply_contains strings are distinctive: at least 3 characters unless a number, and not contained in the \
instruction, a tool description or a reply like "Done.".
7. Running the same calls again gives the same results.
8. Tool and parameter names are Python identifiers, not keywords, not starting with \
{" or ".join(RESERVED_PREFIXES)}; no tool \
is named {", ".join(sorted(RESERVED_TOOL_NAMES - set(MCP_CONTROL_TOOLS)))}; no parameter is named \
{" or ".join(sorted(RESERVED_PARAMETER_NAMES))}. Parameter schemas are valid JSON Schema.
"""

SYSTEM_PROMPT = spec_system_prompt()  #: the system message with the built-in check kinds

OUTPUT_INSTRUCTION = ("Output exactly one JSON object, the complete environment, inside a ```json fenced "
                      "block, and nothing after it.")

TASK_INSTRUCTION = (
    "Design a NEW environment grounded in this document: model the records and operations it deals with as "
    "SQLite tables and tools (2 to 5 tools, a few seed rows, 2 to 4 tasks of different kinds). Keep it small "
    "and consistent: every reference call must succeed on the seed data and every check must pass after the "
    "reference calls. " + OUTPUT_INSTRUCTION)

REPAIR_INSTRUCTION = (
    "The environment you wrote was rejected by the validator. Fix every problem listed:\n{feedback}\n\n"
    "Return the corrected full JSON object (every field, not only the changes) inside one ```json fenced "
    "block.")

# -- examples ------------------------------------------------------------------------------------

_EXAMPLE_CODE = '''\
def find_product(db, name):
    rows = db.query("SELECT id, name, price, stock FROM products WHERE name = ?", (name,))
    if not rows:
        raise ToolError("no product named " + name)
    return rows[0]


def adjust_stock(db, product_id, delta, reason):
    rows = db.query("SELECT stock FROM products WHERE id = ?", (product_id,))
    if not rows:
        raise ToolError("unknown product id " + str(product_id))
    if delta == 0:
        raise ToolError("delta must not be zero")
    stock = rows[0]["stock"] + delta
    if stock < 0:
        raise ToolError("only " + str(rows[0]["stock"]) + " in stock")
    db.execute("UPDATE products SET stock = ? WHERE id = ?", (stock, product_id))
    db.execute("INSERT INTO movements (product_id, delta, reason) VALUES (?, ?, ?)",
               (product_id, delta, reason))
    return {"product_id": product_id, "stock": stock}
'''

BUILTIN_EXAMPLE: dict[str, Any] = {
    "spec_version": 1,
    "id": "shop-stock-room",
    "title": "a small shop's stock room",
    "description": "Products with prices and stock levels. Staff look products up and record restocks, "
                   "sales and damaged units; every change is logged in movements. Stock never goes below 0.",
    "state": {
        "schema_sql": "CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, "
                      "price REAL NOT NULL, stock INTEGER NOT NULL CHECK (stock >= 0));\n"
                      "CREATE TABLE movements (id INTEGER PRIMARY KEY, product_id INTEGER NOT NULL "
                      "REFERENCES products(id), delta INTEGER NOT NULL, reason TEXT NOT NULL);",
        "seed_sql": "INSERT INTO products (id, name, price, stock) VALUES (1, 'kettle', 24.5, 4), "
                    "(2, 'teapot', 18.0, 0), (3, 'mug', 6.0, 30);",
    },
    "tools": [
        {"name": "find_product", "description": "Look a product up by its exact name.",
         "parameters": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
        {"name": "adjust_stock",
         "description": "Add (positive delta) or remove (negative delta) units of a product, "
                        "with the reason.",
         "parameters": {"type": "object", "properties": {
             "product_id": {"type": "integer"}, "delta": {"type": "integer"},
             "reason": {"type": "string", "enum": ["restock", "sale", "damage"]}},
             "required": ["product_id", "delta", "reason"]}},
    ],
    "code": _EXAMPLE_CODE,
    "tasks": [
        {"id": "restock-teapots", "kind": "read_then_write", "turns": [
            {"instruction": "We just received 12 teapots. Put them into stock.",
             "checks": [{"kind": "sql", "query": "SELECT stock FROM products WHERE name = 'teapot'",
                         "expect": [[12]]},
                        {"kind": "sql", "query": "SELECT product_id, delta, reason FROM movements",
                         "expect": [[2, 12, "restock"]]}],
             "reference": [{"name": "find_product", "arguments": {"name": "teapot"}},
                           {"name": "adjust_stock",
                            "arguments": {"product_id": 2, "delta": 12, "reason": "restock"}}]}]},
        {"id": "kettles", "kind": "read_then_write", "turns": [
            {"instruction": "How many kettles do we have?",
             "checks": [{"kind": "reply_contains", "any_of": ["4", "four"]},
                        {"kind": "unchanged", "tables": []}],
             "reference": [{"name": "find_product", "arguments": {"name": "kettle"}}]},
            {"instruction": "A customer just bought 3 of them. Record the sale.",
             "checks": [{"kind": "sql", "query": "SELECT id, stock FROM products ORDER BY id",
                         "expect": [[1, 1], [2, 0], [3, 30]], "ordered": True},
                        {"kind": "sql", "query": "SELECT product_id, delta, reason FROM movements",
                         "expect": [[1, -3, "sale"]]}],
             "reference": [{"name": "adjust_stock",
                            "arguments": {"product_id": 1, "delta": -3, "reason": "sale"}}]}]},
        {"id": "reprice", "kind": "decline", "turns": [
            {"instruction": "Change the price of mugs to 7.50.",
             "checks": [{"kind": "unchanged", "tables": []},
                        {"kind": "calls", "forbid": ["adjust_stock"]}],
             "reference": []}]},
    ],
}


def builtin_example() -> EnvSpec:
    """The small built-in example spec (valid under the gate; used when no other example fits)."""
    return parse_spec(BUILTIN_EXAMPLE, source="envgen.prompts.BUILTIN_EXAMPLE")


def shipped_examples() -> list[EnvSpec]:
    """The example specs of :mod:`gym_envs.examples` (the built-in example when that package is absent)."""
    try:
        from gym_envs.examples import list_examples, load_example
    except ImportError:
        return [builtin_example()]
    out: list[EnvSpec] = []
    for name in list_examples():
        try:
            ex = load_example(name)
            out.append(ex if isinstance(ex, EnvSpec) else parse_spec(ex))
        except (ValueError, OSError):  # a broken example (SpecError, bad JSON, unreadable) must not stop generation
            continue
    return out or [builtin_example()]


def _json(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)


def render_example(spec: EnvSpec, budget_tokens: int | None = None,
                   counter: TokenCounter | None = None) -> str | None:
    """An example as compact JSON without ``source``/``provenance``, within ``budget_tokens``.

    Tasks are dropped (keeping one of each kind first) until it fits; ``None``
    when even one task does not fit.
    """
    count = counter or _approx
    data = spec.model_dump(mode="json", exclude={"source", "provenance"}, exclude_none=True)
    tasks = data.pop("tasks")
    seen: set[str] = set()
    order = []
    for t in tasks:
        if t["kind"] not in seen:
            seen.add(t["kind"])
            order.append(t)
    order += [t for t in tasks if t not in order]
    kept: list[dict[str, Any]] = []
    for t in order:
        trial = [x for x in tasks if x in (*kept, t)]
        if budget_tokens is None or count(_json({**data, "tasks": trial})) <= budget_tokens:
            kept.append(t)
    if not kept:
        return None
    return _json({**data, "tasks": [x for x in tasks if x in kept]})


def _approx(text: str) -> int:
    return (len(text) + 3) // 4


def _pick(pool: Sequence[EnvSpec], k: int, key: str, budget: int | None,
          counter: TokenCounter | None) -> list[str]:
    """``k`` rendered examples from ``pool``, rotated deterministically by ``key``."""
    if k <= 0 or not pool:
        return []
    start = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % len(pool)
    rotated = [*pool[start:], *pool[:start]]
    out: list[str] = []
    per_example = budget // k if budget else None
    for spec in rotated:
        text = render_example(spec, per_example, counter)
        if text is not None:
            out.append(text)
        if len(out) == k:
            break
    return out


# -- building ------------------------------------------------------------------------------------


def _skill_text(skill: Any, level: Any) -> str:
    render = getattr(skill, "render", None)
    if callable(render):
        return str(render(level)).strip()
    parts = []
    rules = list(getattr(skill, "rules", None) or [])
    hints = list(getattr(skill, "hints", None) or [])
    if rules:
        parts.append("Rules:\n" + "\n".join(f"- {r}" for r in rules))
    if hints:
        parts.append("Hints:\n" + "\n".join(f"- {h}" for h in hints))
    return "\n".join(parts)


def skill_id_of(skill: Any) -> str | None:
    """A skill's id (``id``, ``skill_id`` or ``name`` attribute)."""
    if skill is None:
        return None
    for attr in ("id", "skill_id", "name"):
        v = getattr(skill, attr, None)
        if isinstance(v, str) and v:
            return v
    return None


def document_excerpt(doc: Any, budget_tokens: int, counter: TokenCounter | None = None) -> str:
    """The document's text within ``budget_tokens`` (``corpora.excerpt`` for corpus documents)."""
    from corpora import Document, excerpt, truncate_text

    if isinstance(doc, Document):
        return excerpt(doc, budget_tokens, counter=counter)
    return truncate_text(str(getattr(doc, "text", doc)), budget_tokens, counter or _approx)


def build_messages(doc: Any, *, skill: Any = None, examples: Sequence[EnvSpec] | None = None,
                   n_examples: int = 1, excerpt_tokens: int = 1500, example_tokens: int | None = 3500,
                   counter: TokenCounter | None = None, skill_level: Any = "rules",
                   system_prompt: str | None = None) -> list[dict[str, str]]:
    """The proposer's chat for one document (see the module docstring)."""
    pool: Sequence[EnvSpec] | None = None
    if skill is not None and getattr(skill, "examples", None):
        pool = list(skill.examples)
    if not pool:
        pool = examples if examples is not None else shipped_examples()
    doc_id = str(getattr(doc, "id", ""))
    rendered = _pick(pool, n_examples, doc_id, example_tokens, counter)
    if not rendered and n_examples > 0:
        rendered = _pick([builtin_example()], 1, doc_id, None, counter)
    parts: list[str] = []
    for i, ex in enumerate(rendered):
        label = "An example" if len(rendered) == 1 else f"Example {i + 1}"
        parts.append(f"{label} of a complete, valid environment (for the format only; do not copy its "
                     f"domain):\n```json\n{ex}\n```")
    if skill is not None:
        text = _skill_text(skill, skill_level)
        if text:
            parts.append(f"Follow this skill ({skill_id_of(skill) or 'routed skill'}):\n{text}")
    path = getattr(doc, "path", None) or doc_id or "document"
    lang = getattr(doc, "language", "") or ""
    fence = lang if lang and lang != "unknown" else ""
    parts.append(f"The document ({path}):\n```{fence}\n{document_excerpt(doc, excerpt_tokens, counter)}\n```")
    parts.append(TASK_INSTRUCTION)
    return [{"role": "system", "content": system_prompt or spec_system_prompt()},
            {"role": "user", "content": "\n\n".join(parts)}]


def build_repair_messages(messages: Sequence[dict[str, str]], previous_output: str,
                          feedback: str) -> list[dict[str, str]]:
    """The original system and user messages, the previous answer, and the gate's feedback."""
    base = [dict(m) for m in messages if m.get("role") in ("system", "user")][:2]
    feedback = feedback.strip() or "- the environment was rejected"
    answer = strip_think(previous_output, keep_unclosed=True).strip() or "(empty answer)"
    return [*base, {"role": "assistant", "content": answer},
            {"role": "user", "content": REPAIR_INSTRUCTION.format(feedback=feedback)}]


def messages_sha256(messages: Sequence[dict[str, Any]] | str) -> str:
    """SHA-256 of a prompt (canonical JSON of the messages)."""
    if isinstance(messages, str):
        text = messages
    else:
        text = json.dumps(list(messages), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()

"""The environment spec (``spec_version`` 1 and 2): the contract in ``gym_envs/ENVSPEC.md``.

An environment is data: one JSON document that a proposer (a model, a skill, a template or a person) emits and
that :mod:`gym_envs.env` interprets. This module owns the pydantic models, loading and saving (atomic), and
:class:`SpecError`, whose message names every offending field (``tasks[0].turns[1].checks[0].expect``) and says
what is wrong with it. Its JSON Schema is :mod:`gym_envs.spec_schema`'s.

Check kinds are one class each in :mod:`gym_envs.checks`, registered by name: a turn's ``checks`` are validated by
the class their ``kind`` names (:func:`gym_envs.checks.parse_check`), so a kind registered later is accepted too,
and the JSON Schema lists the registered kinds. A task's ``scenario`` is :class:`gym_envs.users.Scenario`. A version
1 document that uses what only version 2 has (each check kind's :meth:`~gym_envs.checks.BaseCheck.v2_features`, the
v2 fields) is refused, saying to set ``spec_version`` to 2.

It also owns the naming rules every adapter relies on (gym_envs/ENVSPEC.md validity rule 8): tool and parameter
names are Python identifiers, not keywords, and not names the shipped adapters keep for themselves
(:data:`RESERVED_TOOL_NAMES`, :data:`RESERVED_PARAMETER_NAMES`, the prefixes in :data:`RESERVED_PREFIXES`; the MCP
server's episode-control tools are :data:`MCP_CONTROL_TOOLS`). Adapters import these and :func:`naming_problems`
from here rather than keeping lists of their own. A tool's ``parameters`` must be a valid JSON Schema (checked with
``jsonschema`` against the schema's own draft, 2020-12 by default), so a typo such as ``"type": "strng"`` is refused
with the tool and the path.

Nothing here executes the spec; see :mod:`gym_envs.sandbox` for that.
"""

from __future__ import annotations

import functools
import json
import keyword
import os
import re
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PlainValidator,
    SerializeAsAny,
    Tag,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from gym_envs.availability import availability_problems
from gym_envs.checks import (
    BaseCheck,
    kind_names,
    parse_check,
)
from gym_envs.spec_v1 import version_1_document
from gym_envs.users.scenario import Scenario

SPEC_VERSION: Literal[2] = 2
"""The newest version this reader knows; it reads every version in :data:`SPEC_VERSIONS`."""
SPEC_VERSIONS = (1, 2)
ID_PATTERN = r"^[a-z0-9][a-z0-9_.-]{2,80}$"
NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
TASK_KINDS = ("execute", "read", "read_then_write", "missing_parameter", "decline")
CHECK_KINDS = tuple(kind_names())  #: the built-in check kinds (:data:`gym_envs.checks.CHECKS` holds every kind)
STREAMS = ("skill", "explore", "template", "manual")
STEP_MARGIN = 4  #: actions an episode may take beyond its task's reference (:meth:`Task.step_budget`)
SETUP_KEYWORDS = ("INSERT", "UPDATE", "DELETE", "REPLACE")  #: what a task's ``setup_sql`` statements may begin with

TaskKind = Literal["execute", "read", "read_then_write", "missing_parameter", "decline"]
#: what a tool call that fails leaves of its writes (the sandbox's ``FAILED_CALLS``): ``rollback``, nothing (the
#: default); ``keep``, the writes it made before it failed (tools that change their state in place, as τ²-bench's)
FailedCalls = Literal["rollback", "keep"]

#: Members of the class TRL's ``environment_factory`` adapter (``training.trl_env``) makes of a spec; a tool
#: method of the same name would replace them (TRL calls ``reset`` itself and never offers it as a tool).
TRL_RESERVED = frozenset({"reset", "get_reward", "env", "result", "spec", "reward_mode", "executor"})
#: The episode-control tools the MCP server (``envwright serve --mcp``) lists next to an environment's tools.
MCP_CONTROL_TOOLS = ("envwright_tasks", "envwright_reset", "envwright_instruction", "envwright_end_turn")
#: Tool names no spec may use: every adapter's own names.
RESERVED_TOOL_NAMES = TRL_RESERVED | frozenset(MCP_CONTROL_TOOLS)
#: Parameter names no tool may use: ``db`` is the injected database handle, ``self`` the TRL method's instance.
RESERVED_PARAMETER_NAMES = frozenset({"db", "self"})
#: Name prefixes kept for the system: ``_`` (private to the sandbox, and hidden from the model by TRL) and
#: ``envwright_`` (the controls an adapter adds next to the tools; any new adapter names its own this way).
RESERVED_PREFIXES = ("_", "envwright_")
_WHO = {**dict.fromkeys(TRL_RESERVED, "TRL's environment_factory adapter (a method of its environment class)"),
        **dict.fromkeys(MCP_CONTROL_TOOLS, "the MCP server (an episode-control tool)")}


def name_problem(name: Any, *, parameter: bool = False) -> str | None:
    """Why ``name`` cannot be a tool name (or, with ``parameter``, a parameter name), or None."""
    what = "parameter" if parameter else "tool"
    if not isinstance(name, str) or not re.match(NAME_PATTERN, name):
        return (f"{what} name {name!r} is not a Python identifier (ASCII letters, digits and '_', not starting "
                "with a digit, at most 64 characters)")
    if keyword.iskeyword(name):
        return f"{what} name {name!r} is a Python keyword; adapters expose names as Python identifiers"
    if parameter and name in RESERVED_PARAMETER_NAMES:
        return f"parameter name {name!r} is reserved ({'the injected database' if name == 'db' else 'the instance'})"
    if not parameter and name in RESERVED_TOOL_NAMES:
        return f"tool name {name!r} is reserved by {_WHO[name]}"
    prefix = next((p for p in RESERVED_PREFIXES if name.startswith(p)), None)
    if prefix is not None:
        return f"{what} name {name!r} starts with {prefix!r}, which is reserved for the system"
    return None


def naming_problems(spec: Any) -> list[str]:
    """Every naming-rule violation of a spec's tools (for adapters that meet a spec built without parsing)."""
    out: list[str] = []
    for tool in getattr(spec, "tools", []):
        problem = name_problem(tool.name)
        if problem:
            out.append(problem)
        props = (tool.parameters or {}).get("properties") or {}
        out += [f"tool {tool.name!r}: {p}" for n in props if (p := name_problem(n, parameter=True))]
    return out


@functools.lru_cache(maxsize=16)
def _meta_validator(cls: Any) -> Any:
    return cls(cls.META_SCHEMA)


@functools.lru_cache(maxsize=4096)
def _schema_errors(schema_json: str) -> tuple[str, ...]:
    """Errors of a JSON Schema (given as JSON text) against its draft's meta-schema."""
    from jsonschema import Draft202012Validator, validators

    schema = json.loads(schema_json)
    meta = _meta_validator(validators.validator_for(schema, default=Draft202012Validator))
    found = sorted(meta.iter_errors(schema), key=lambda e: [str(p) for p in e.absolute_path])
    out = []
    for e in found[:5]:
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path)
        out.append(f"parameters{path}: {e.message}")
    return tuple(out)


class SpecError(ValueError):
    """A spec that does not satisfy the contract.

    ``problems`` is a list of ``(location, message)`` pairs; ``str(err)`` lists
    them one per line so a person (or a model being repaired) can fix each.
    """

    def __init__(self, problems: list[tuple[str, str]], source: str | None = None):
        self.problems = problems
        self.source = source
        head = f"invalid environment spec{f' {source}' if source else ''}"
        lines = [f"  {loc or '<root>'}: {msg}" for loc, msg in problems]
        super().__init__(head + ":\n" + "\n".join(lines))

    @property
    def reasons(self) -> list[str]:
        return [f"{loc or '<root>'}: {msg}" for loc, msg in self.problems]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, str_strip_whitespace=False)


class Source(_Model):
    """Grounding: the corpus document the environment was derived from."""

    corpus: str = Field(description="Corpus name, e.g. 'stdlib' or a path.")
    doc_id: str = Field(description="Document id inside the corpus.")
    path: str | None = Field(default=None, description="Document path inside the corpus.")
    sha256: str | None = Field(default=None, description="SHA-256 of the document text.")


class Provenance(_Model):
    """Who made the spec, how, and from what."""

    generator: str = Field(description="'template:NAME', 'llm:MODEL' or 'manual'.")
    skill_id: str | None = None
    stream: Literal["skill", "explore", "template", "manual"] = "manual"
    prompt_sha256: str | None = None
    seed: int | None = None
    created_at: str | None = Field(default=None, description="ISO-8601 timestamp.")
    parents: list[str] = Field(default_factory=list)

    @field_validator("generator")
    @classmethod
    def _generator_form(cls, v: str) -> str:
        if v != "manual" and not re.match(r"^(template|llm|skill):.+$", v):
            raise ValueError("must be 'manual', 'template:NAME', 'llm:MODEL' or 'skill:ID'")
        return v


class State(_Model):
    """The backend database: DDL plus seed rows."""

    schema_sql: str = Field(description="SQLite DDL: CREATE TABLE / CREATE INDEX statements only.")
    seed_sql: str = Field(default="", description="INSERT statements that fill the tables.")


class Tool(_Model):
    """One tool in OpenAI function format."""

    name: str = Field(pattern=NAME_PATTERN)
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})

    @field_validator("name")
    @classmethod
    def _usable_name(cls, v: str) -> str:
        problem = name_problem(v)
        if problem:
            raise ValueError(f"{problem}; rename the tool (and its function in the code)")
        return v

    @field_validator("parameters")
    @classmethod
    def _object_schema(cls, v: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        tool = f"tool {info.data['name']!r}: " if isinstance(info.data.get("name"), str) else ""
        if v.get("type") != "object":
            raise ValueError(f"{tool}must be a JSON Schema with \"type\": \"object\"")
        props = v.get("properties", {})
        if not isinstance(props, dict):
            raise ValueError(f"{tool}'properties' must be an object mapping argument names to schemas")
        for name, schema in props.items():
            problem = name_problem(name, parameter=True)
            if problem:
                raise ValueError(f"{tool}{problem}; rename it in the schema and in the tool's function")
            if not isinstance(schema, dict):
                raise ValueError(f"{tool}schema of argument {name!r} must be an object")
        required = v.get("required", [])
        if not isinstance(required, list) or any(r not in props for r in required):
            missing = [r for r in required if r not in props] if isinstance(required, list) else required
            raise ValueError(f"{tool}'required' names arguments that are not in 'properties': {missing}")
        try:
            text = json.dumps(v, sort_keys=True)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{tool}parameters are not plain JSON: {e}") from None
        errors = _schema_errors(text)
        if errors:
            raise ValueError(f"{tool}not a valid JSON Schema: " + "; ".join(errors))
        return v


class ToolCall(_Model):
    """A call as the agent (or a reference trajectory) makes it."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class Say(_Model):
    """A message of the agent within a turn (spec_version 2, in a scenario task's reference): the scripted user
    answers it and the turn goes on."""

    say: str = Field(min_length=1, description="The agent's message (a question the scripted user answers).")


def _reference_item(v: Any) -> str:
    return "say" if isinstance(v, Say) or (isinstance(v, Mapping) and "say" in v) else "call"


#: a reference item: a tool call, or (spec_version 2) a message of the agent
ReferenceItem = Annotated[Annotated[ToolCall, Tag("call")] | Annotated[Say, Tag("say")],
                          Discriminator(_reference_item)]

#: a check of any registered kind (:mod:`gym_envs.checks`), validated by its kind's class
Check = Annotated[SerializeAsAny[BaseCheck], PlainValidator(parse_check, json_schema_input_type=dict[str, Any])]


class PolicyRule(_Model):
    """One rule of the environment's policy (spec_version 2): the solver's system prompt states it."""

    text: str = Field(min_length=1, description="The rule, as the agent reads it.")
    enforced: Literal["tool", "policy"] = Field(
        default="policy", description="'tool': a tool refuses what the rule forbids; 'policy': only the policy "
                                      "says so (only an agent that reads it passes the tasks testing it).")


class Turn(_Model):
    """One user instruction with the checks scored after it and a reference solution."""

    instruction: str = Field(min_length=1)
    checks: list[Check] = Field(min_length=1)
    reference: list[ReferenceItem] = Field(default_factory=list)
    reveal_tools: list[str] = Field(default_factory=list, description="spec_version 2: tools of the task's "
                                    "withheld_tools offered from this turn on (its instruction shows them).")
    expects: Literal["ask", "decline"] | None = Field(
        default=None, description="spec_version 2: the turn asks for no action and no answer: 'ask' (the agent asks "
        "the user first: a missing value, a yes before a write) or 'decline' (it says the request cannot or may not "
        "be served); either way nothing changes, and its reference holds the reads that find that out.")

    @field_validator("checks")
    @classmethod
    def _one_scored(cls, v: list[BaseCheck]) -> list[BaseCheck]:
        if not any(c.scored for c in v):
            raise ValueError("a turn needs a check that is scored (a judged check alone is never decided by the "
                             "runtime)")
        return v

    def calls(self) -> list[ToolCall]:
        """The reference's tool calls, in order (its ``say`` items left out)."""
        return [c for c in self.reference if isinstance(c, ToolCall)]

    def pace(self) -> int | None:
        """The most calls one action may make for the turn's checks to pass (a ``calls_per_message`` check's
        ``max``), or None."""
        limits = [n for c in self.checks if (n := c.max_calls_per_action()) is not None]
        return min(limits) if limits else None

    def plan(self) -> list[list[ToolCall] | Say]:
        """The reference as the agent's actions (:func:`reference_plan` at the turn's :meth:`pace`)."""
        return reference_plan(self.reference, self.pace())


def reference_plan(items: Sequence[ToolCall | Say], pace: int | None = None) -> list[list[ToolCall] | Say]:
    """A reference's items as actions (gym_envs/ENVSPEC.md, "A reference with say items"): each run of calls in one
    action, or in actions of at most ``pace`` calls; each ``say`` an action of its own."""
    out: list[list[ToolCall] | Say] = []
    run: list[ToolCall] = []
    for item in [*items, None]:
        if isinstance(item, ToolCall):
            run.append(item)
            continue
        step = pace or max(1, len(run))
        out += [run[k:k + step] for k in range(0, len(run), step)]
        run = []
        if item is not None:
            out.append(item)
    return out


class Task(_Model):
    """One episode: a list of turns."""

    id: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    kind: TaskKind
    turns: list[Turn] = Field(min_length=1)
    policy: list[int] = Field(default_factory=list, description="spec_version 2: the policy rules (1-based "
                                                                "numbers) this task tests.")
    setup_sql: list[str] = Field(default_factory=list, description="spec_version 2: statements (INSERT, UPDATE, "
                                 "DELETE or REPLACE, one each) run in order when an episode of this task starts, "
                                 "after the env's seed: the task's own starting state.")
    scenario: Scenario | None = Field(default=None, description="spec_version 2: the simulated user the agent "
                                                                "talks to.")
    withheld_tools: list[str] = Field(default_factory=list, description="spec_version 2: tools not offered as "
                                      "the task begins; a later turn's reveal_tools offers each.")

    @field_validator("setup_sql")
    @classmethod
    def _writes_only(cls, v: list[str]) -> list[str]:
        for i, stmt in enumerate(v):
            head = re.sub(r"^\s*(--[^\n]*\n|/\*.*?\*/|\s)*", "", stmt, flags=re.S).split(None, 1)
            if not head or head[0].upper() not in SETUP_KEYWORDS:
                raise ValueError(f"statement {i}: a setup statement is one INSERT, UPDATE, DELETE or REPLACE, got "
                                 f"{stmt[:40]!r}")
        return v

    def withheld_at(self, turn: int) -> frozenset[str]:
        """The tools not offered at turn ``turn`` (from 0): withheld, and not revealed by it or a turn before."""
        if not self.withheld_tools:
            return frozenset()
        return frozenset(self.withheld_tools).difference(*(t.reveal_tools for t in self.turns[: turn + 1]))

    def reference_actions(self) -> int:
        """The actions the reference takes at most: one per reference item (a call, a ``say``) and a reply ending
        each turn (a ToolEnv with a smaller ``max_steps`` may truncate a passing attempt)."""
        return sum(len(t.reference) for t in self.turns) + len(self.turns)

    def step_budget(self, configured: int, margin: int | None = None) -> int:
        """The actions an episode of this task may take (trainers and evaluation read it): ``configured``, never
        fewer than :meth:`reference_actions` plus ``margin`` (:data:`STEP_MARGIN` by default: a retry after a tool
        error, one more read), so no task is unsolvable by its step limit."""
        return max(configured, self.reference_actions() + (STEP_MARGIN if margin is None else margin))


class EnvSpec(_Model):
    """A whole environment. See gym_envs/ENVSPEC.md for every field's meaning."""

    spec_version: Literal[1, 2] = 1
    id: str = Field(pattern=ID_PATTERN)
    title: str = Field(min_length=1)
    description: str = ""
    source: Source | None = None
    provenance: Provenance = Field(default_factory=lambda: Provenance(generator="manual"))
    state: State
    tools: list[Tool] = Field(min_length=1)
    code: str
    tasks: list[Task] = Field(min_length=1)
    policy: list[PolicyRule] = Field(default_factory=list, description="spec_version 2: the rules the agent must "
                                                                       "follow (the system prompt states them).")
    failed_calls: FailedCalls = Field(
        default="rollback", description="spec_version 2: what a tool call that fails leaves of its writes: "
                                        "'rollback' (none: the state is as before the call; the default) or 'keep' "
                                        "(the writes it made before it failed stay, as τ²-bench's tools leave them).")

    @field_validator("failed_calls", mode="before")
    @classmethod
    def _failed_calls_mode(cls, v: Any) -> Any:
        if not isinstance(v, str) or v not in get_args(FailedCalls):
            raise ValueError(f"{v!r} is not a mode: use 'rollback' (a tool call that fails leaves no writes; the "
                             "default) or 'keep' (the writes a failed call made before it failed stay)")
        return v

    @model_validator(mode="after")
    def _cross_references(self) -> EnvSpec:
        problems: list[str] = []
        tool_names = [t.name for t in self.tools]
        dupes = sorted({n for n in tool_names if tool_names.count(n) > 1})
        if dupes:
            problems.append(f"tools: duplicate tool names {dupes}")
        task_ids = [t.id for t in self.tasks]
        dupes = sorted({n for n in task_ids if task_ids.count(n) > 1})
        if dupes:
            problems.append(f"tasks: duplicate task ids {dupes}")
        known = set(tool_names)
        problems += self._version_problems()
        for ti, task in enumerate(self.tasks):
            bad = [n for n in task.policy if not 1 <= n <= len(self.policy)]
            if bad:
                problems.append(f"tasks[{ti}].policy: rules {bad} are not numbers of the policy's "
                                f"{len(self.policy)} rules")
            problems += availability_problems(f"tasks[{ti}]", task, known)
            for ui, turn in enumerate(task.turns):
                where = f"tasks[{ti}].turns[{ui}]"
                for ci, item in enumerate(turn.reference):
                    if isinstance(item, ToolCall) and item.name not in known:
                        problems.append(f"{where}.reference[{ci}].name: unknown tool {item.name!r}")
                    if isinstance(item, Say) and task.scenario is None:
                        problems.append(f"{where}.reference[{ci}]: a 'say' item needs the task's scenario (the "
                                        "user who answers it)")
                for ki, check in enumerate(turn.checks):
                    unknown = [n for n in check.tool_names() if n not in known]
                    if unknown:
                        problems.append(f"{where}.checks[{ki}]: unknown tool names {unknown}")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def _version_problems(self) -> list[str]:
        """What a spec_version 1 document uses that only version 2 has."""
        if self.spec_version >= 2:
            return []
        used: list[str] = []
        if self.policy:
            used.append("'policy'")
        if any(t.policy for t in self.tasks):
            used.append("a task's 'policy'")
        if any(t.setup_sql for t in self.tasks):
            used.append("a task's 'setup_sql'")
        if any(t.scenario is not None for t in self.tasks):
            used.append("a task's 'scenario'")
        if any(isinstance(i, Say) for t in self.tasks for u in t.turns for i in u.reference):
            used.append("'say' items")
        used += dict.fromkeys(f for t in self.tasks for u in t.turns for c in u.checks for f in c.v2_features())
        if any(t.withheld_tools or any(u.reveal_tools for u in t.turns) for t in self.tasks):
            used.append("'withheld_tools' and 'reveal_tools'")
        if any(u.expects for t in self.tasks for u in t.turns):
            used.append("a turn's 'expects'")
        if self.failed_calls != "rollback":
            used.append("'failed_calls'")
        return [f"spec_version 1 has no {', '.join(used)}: set spec_version to 2"] if used else []

    # -- convenience -------------------------------------------------------------------------
    def task(self, task_id: str | int | None = None) -> Task:
        """Return a task by id or index (default: the first); KeyError lists the ids."""
        if task_id is None:
            return self.tasks[0]
        if isinstance(task_id, int):
            return self.tasks[task_id]
        for t in self.tasks:
            if t.id == task_id:
                return t
        raise KeyError(f"no task {task_id!r} in {self.id}; tasks are {[t.id for t in self.tasks]}")

    def tool(self, name: str) -> Tool:
        for t in self.tools:
            if t.name == name:
                return t
        raise KeyError(name)

    def openai_tools(self, task: Task | None = None, turn: int = 0) -> list[dict[str, Any]]:
        """Tools as the OpenAI / chat-template ``tools=`` list: all of them, or with ``task`` those it offers at
        ``turn`` (:meth:`Task.withheld_at`)."""
        hidden = task.withheld_at(turn) if task is not None else frozenset()
        return [{"type": "function", "function": t.model_dump()} for t in self.tools if t.name not in hidden]

    def to_json(self, indent: int | None = 2) -> str:
        """The spec as JSON; a spec_version 1 spec without the version 2 fields the dump holds at their defaults
        (:func:`version_1_document`), so it is valid under the version 1 schema."""
        if self.spec_version >= 2:
            return self.model_dump_json(indent=indent, exclude_none=False)
        return json.dumps(version_1_document(self.model_dump(mode="json", exclude_none=False)), indent=indent,
                          ensure_ascii=False, separators=(",", ":") if indent is None else None)


_TAGS = ("call", "say", "str", "CallPattern")  #: union branch labels pydantic puts in an error's location


def _format_errors(err: ValidationError) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for e in err.errors():
        loc_parts: list[str] = []
        branch = None
        for part in e["loc"]:
            if isinstance(part, int):
                loc_parts.append(f"[{part}]")
            elif part in _TAGS and loc_parts and loc_parts[-1].startswith("["):
                branch = part  # a union branch: not a real field
            else:
                loc_parts.append(("." if loc_parts else "") + str(part))
        if branch == "str" and isinstance(e.get("input"), dict):
            continue  # a call pattern given as an object: its own branch says what is wrong
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown field (not part of the environment spec; remove it or check its spelling)"
        elif e["type"] == "missing":
            msg = "required field is missing"
        elif e["type"] == "literal_error" and loc_parts and loc_parts[-1].endswith("kind"):
            msg = f"{msg} (got {e.get('input')!r})"
        elif e["type"] == "string_pattern_mismatch":
            msg = f"{e.get('input')!r} does not match {e['ctx']['pattern']}"
        msg = msg.removeprefix("Value error, ")
        out.append(("".join(loc_parts), msg))
    return out


def parse_spec(data: Mapping[str, Any] | str | bytes, source: str | None = None) -> EnvSpec:
    """Parse a dict or JSON text into an :class:`EnvSpec`, raising :class:`SpecError`."""
    if isinstance(data, str | bytes):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as e:
            raise SpecError([("", f"not valid JSON: {e}")], source) from None
    if not isinstance(data, Mapping):
        raise SpecError([("", f"expected a JSON object, got {type(data).__name__}")], source)
    version = data.get("spec_version", 1)
    if version not in SPEC_VERSIONS:
        raise SpecError([("spec_version", f"unsupported version {version!r}; this reader knows "
                                          f"{', '.join(map(str, SPEC_VERSIONS))}")], source)
    try:
        return EnvSpec.model_validate(dict(data))
    except ValidationError as e:
        raise SpecError(_format_errors(e), source) from None


def load_spec(path: str | os.PathLike[str]) -> EnvSpec:
    """Load a spec from a JSON file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"no environment spec at {p}") from None
    return parse_spec(text, source=str(p))


def as_spec(obj: EnvSpec | Mapping[str, Any] | str | os.PathLike[str]) -> EnvSpec:
    """Accept a spec, a dict, JSON text or a path; return an :class:`EnvSpec`."""
    if isinstance(obj, EnvSpec):
        return obj
    if isinstance(obj, Mapping):
        return parse_spec(obj)
    if isinstance(obj, str) and obj.lstrip().startswith("{"):
        return parse_spec(obj)
    return load_spec(obj)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` atomically (temp file in the same folder, fsync, rename).

    The file gets the mode a plain ``open(path, "w")`` would give it (``0o666`` less the process
    umask, which the kernel applies when the temporary file is created with that mode), not the
    ``0o600`` of ``tempfile.mkstemp``.
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    while True:
        tmp = p.parent / f".{p.name}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
            break
        except FileExistsError:  # a name another writer drew: draw again
            continue
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def save_spec(spec: EnvSpec, path: str | os.PathLike[str]) -> Path:
    """Save a spec as pretty JSON, atomically. Returns the path."""
    atomic_write_text(path, spec.to_json() + "\n")
    return Path(path)

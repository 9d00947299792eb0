"""Wrong trajectories derived from a turn's reference: the mutants of the check-adequacy rule.

Role: for one turn of one task, with what its reference run saw (:class:`RefTurn`: the state at the
start of the turn, the reference calls' results, the oracle reply), list the :class:`Mutant`
trajectories whose checks must fail (gym_envs/ENVSPEC.md, validity rules 5 and 7):

* **argument** (rule 5): each argument of each reference call, read calls included, replaced by
  other valid values taken from the state (:func:`envgen.gate.values.argument_values`): another
  existing id (the same action aimed at another entity of the table; two of them for a write, in
  case one cannot take it), another existing value of the argument's column, a value of the right
  type that exists nowhere; in a turn with a check that matches text by pattern or substring
  (:func:`matches_patterns`), a string argument also with each of
  :func:`envgen.gate.values.pattern_probes` (text added before it, after it, changed inside, another
  case, the empty string), since such a check can miss one kind of change and catch another;
* **drop** (rule 5): the reference without one of its calls;
* **retarget** (rule 7): every argument that names an entity (its id, its key, any of its column
  values) moved together to another row of the same table;
* **say** (rule 5, scenario turns): the reference without one of its ``say`` items (the agent's messages the
  user answers: a question, a request to confirm);
* **extra** (rule 7): the reference plus one more state-changing call on another row (the turn's own
  write aimed elsewhere, a tool no reference calls (:func:`unused_tool_calls`), or a write another
  reference makes);
* **early** (rule 7): in a turn where the task still withholds a tool, the reference plus that tool's call as
  a later turn's reference makes it once revealed (:func:`early_mutants`), played as if it were offered;
* **reply** (rule 7, scored without replaying: the reference calls with another final message): a
  reply that omits one answer, replies that give another entity's value instead of it (another
  value of the answer's column, another element of the list the answer was read from), and, for a
  string answer, a reply that lists every candidate: the answer with every other such value.

A mutant's reply is either fixed (reply mutants) or *derived* (:func:`derive_reply`): the oracle
reply with each answer that was read from a reference call's result replaced by what the mutant's
corresponding call returned at the same place (a lookup of the wrong record answers with the wrong
record's value). Answers that cannot be traced stay as the oracle states them, so that only the
state can tell such a mutant apart (the strongest test of the state checks).

A mutant keeps the reference's ``say`` items where they stand (:func:`trajectory`: each before the call it preceded
in the reference), but for those a ``say`` mutant leaves out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from envgen.gate.values import (
    Snapshot,
    answer_text,
    argument_values,
    is_numeric,
    pattern_probes,
    same_answer,
)
from gym_envs.spec import EnvSpec, Say, Task, ToolCall, Turn

__all__ = ["GENERIC_REPLY", "Locator", "Mutant", "RefTurn", "argument_mutants", "call_dicts", "call_mutants",
           "derive_reply", "early_mutants", "extra_mutant", "key_text", "locate_answers", "matches_patterns",
           "reply_mutants", "say_mutants", "short_call", "trajectory", "unused_tool_calls"]

GENERIC_REPLY = "Done."
_MAX_NODES = 4_000  # nodes of one result walked when locating an answer
_REPLY_ALTERNATIVES = 3  # other entities' values tried per answer
_SHOTGUN = 60  # other values a reply that lists every candidate names at most


@dataclass
class RefTurn:
    """What the reference run saw at one turn."""

    task: Task
    index: int
    start: Snapshot  #: the state at the start of the turn
    results: list[Any] = field(default_factory=list)  #: the reference calls' CallResults
    reply: str = GENERIC_REPLY  #: the oracle reply
    digest: str = ""  #: the state digest after the turn
    passed: bool = False
    checks: list[dict[str, Any]] = field(default_factory=list)  #: the reference's check results
    locators: list[Locator | None] = field(default_factory=list)  #: where each answer was read
    stopped: bool = False  #: a mutant of this turn survived: the turn is rejected, try no more
    extra_made: int = 0  #: extra-write mutants made for this turn
    extra_tries: int = 0  #: extra calls tried for this turn (one that changes nothing is no mutant)
    extra_tried: set[str] = field(default_factory=set)  #: the extra calls tried (JSON keys)
    done_in_place: set[str] = field(default_factory=set)  #: mutants judged in the reference's episode
    dirty: bool = False  #: a mutant made in the reference's episode changed its state
    mutants: tuple[int, list[Mutant]] | None = None  #: the call mutants, and how many results they were made with
    #: the argument mutants of each call, by its index and whether it wrote (:func:`argument_mutants`)
    argument_made: dict[tuple[int, bool], list[Mutant]] = field(default_factory=dict)
    history: list[str] = field(default_factory=list)  #: the agent's messages of the turns before (says, replies)
    unanswered: str | None = None  #: a ``say`` of the reference the scripted user did not answer ("": its reply)
    ends: bool = True  #: the oracle's reply ended the turn

    @property
    def turn(self) -> Turn:
        return self.task.turns[self.index]

    @property
    def calls(self) -> list[ToolCall]:
        return self.turn.calls()

    @property
    def says(self) -> list[Say]:
        """The reference's ``say`` items, in order."""
        return [i for i in self.turn.reference if isinstance(i, Say)]

    @property
    def effectful(self) -> list[int]:
        return [i for i, r in enumerate(self.results) if r.changes > 0]

    @property
    def answers(self) -> list[str]:
        """The answer each check that reads a message wants (its first string, what the oracle says)."""
        return [a[0] for c in self.turn.checks if (a := c.answers())]

    @property
    def answering(self) -> bool:
        """Whether the turn's output is an answer: it has reply checks, or it only reads (it makes
        calls, changes nothing) in a turn that is not about asking back or declining (its ``expects``, or its
        task's kind, says so). The reads of such a turn find out that it must ask or decline; no reply reads them."""
        if self.answers:
            return True
        return (bool(self.results) and not self.effectful and self.turn.expects is None
                and self.task.kind not in ("missing_parameter", "decline"))


@dataclass
class Mutant:
    """One wrong trajectory of a turn."""

    rule: int  #: 5 (near-miss: argument, drop) or 7 (adequacy: retarget, extra, reply, input)
    kind: str  #: argument, drop, retarget, extra, reply, input
    label: str  #: what was changed, for people and for self-repair
    calls: list[ToolCall]
    origin: list[int | None]  #: per call, the index of the reference call it stands for
    reply: str | None = None  #: a fixed reply (reply mutants); None: derived from the calls' results
    says: tuple[int, ...] | None = None  #: the reference's ``say`` items it keeps (by their order); None: all
    _key: str | None = field(default=None, repr=False, compare=False)

    def key(self) -> str:
        """The trajectory as text (its calls, the says it keeps and fixed reply): equal for the same wrong
        trajectory."""
        if self._key is None:
            self._key = key_text([[c.name, c.arguments] for c in self.calls]) + \
                f"|{self.says}|{self.reply}"
        return self._key


def trajectory(ref: RefTurn, m: Mutant | None = None) -> list[ToolCall | Say]:
    """The items a mutant plays in its turn (the reference's when ``m`` is None): its calls, with the reference's
    ``say`` items it keeps each placed before the first of its calls that stands for a reference call the say
    preceded (a call standing for no reference call comes after every say)."""
    if m is None:
        return list(ref.turn.reference)
    before: list[int] = []  # per say (in order), how many reference calls came before it
    seen = 0
    for item in ref.turn.reference:
        if isinstance(item, Say):
            before.append(seen)
        else:
            seen += 1
    says = ref.says
    keep = [j for j in range(len(says)) if m.says is None or j in m.says]
    out: list[ToolCall | Say] = []
    for call, origin in zip(m.calls, m.origin, strict=True):
        at = len(ref.calls) if origin is None else origin
        while keep and before[keep[0]] <= at:
            out.append(says[keep.pop(0)])
        out.append(call)
    out += [says[j] for j in keep]
    return out


def call_dicts(calls: Iterable[ToolCall]) -> list[dict[str, Any]]:
    """Calls as the env takes them (``{"name", "arguments"}``)."""
    return [{"name": c.name, "arguments": c.arguments} for c in calls]


def say_mutants(ref: RefTurn) -> list[Mutant]:
    """The reference without each of its ``say`` items (validity rule 5, scenario turns)."""
    says = ref.says
    same: list[int | None] = list(range(len(ref.calls)))
    return [Mutant(5, "say", f"without the message {s.say[:80]!r}", ref.calls, same,
                   says=tuple(k for k in range(len(says)) if k != j)) for j, s in enumerate(says)]


def short_call(call: ToolCall, limit: int = 160) -> str:
    """``name({"arg": value})`` in one line."""
    text = f"{call.name}({json.dumps(call.arguments, ensure_ascii=False, default=str)})"
    return text if len(text) <= limit else text[: limit - 3] + "..."


_KEY_ENCODER = json.JSONEncoder(sort_keys=True, default=str)
_C_MAKE_ENCODER = getattr(json.encoder, "c_make_encoder", None)
#: the C encoder ``_KEY_ENCODER`` makes for each call, made once (no cycle check: a key is made of a trajectory's calls)
_C_KEY = _C_MAKE_ENCODER(None, str, json.encoder.encode_basestring_ascii, None, ": ", ", ", True, False, True) \
    if _C_MAKE_ENCODER is not None else None


def key_text(value: Any) -> str:
    """``value`` as JSON text with sorted keys (what JSON cannot write, as its ``str``): the key of a call or a
    trajectory, ``json.dumps(value, sort_keys=True, default=str)``."""
    if _C_KEY is None or value.__class__ is str:
        return _KEY_ENCODER.encode(value)
    return "".join(_C_KEY(value, 0))


# -- calls -----------------------------------------------------------------------------------------


def call_mutants(spec: EnvSpec, ref: RefTurn) -> list[Mutant]:
    """Argument, drop, retarget and say mutants of a turn (deduplicated, the reference itself excluded).
    Computed once per turn (once its reference results are known) and kept on ``ref``."""
    if ref.mutants is not None and ref.mutants[0] == len(ref.results):
        return ref.mutants[1]
    calls = ref.calls
    same = list(range(len(calls)))
    out: list[Mutant] = []
    for ci, call in enumerate(calls):
        rest = calls[:ci] + calls[ci + 1:]
        out.append(Mutant(5, "drop", f"without call {ci + 1} {short_call(call)}", rest,
                          same[:ci] + same[ci + 1:]))
        out += argument_mutants(spec, ref, ci)
    out += _retargets(ref)
    out += say_mutants(ref)
    made = _dedupe(out, ref)
    ref.mutants = (len(ref.results), made)
    return made


def matches_patterns(turn: Turn) -> bool:
    """Whether a check of the turn matches text by pattern or substring (its kind says: a ``sql`` check with ``LIKE``,
    ``GLOB``, ``REGEXP``, ``MATCH``, ``instr`` or ``substr``; a ``python`` check with an ``in`` test or a string
    method or regular expression that looks inside text, ...)."""
    return any(check.matches_patterns() for check in turn.checks)


def argument_mutants(spec: EnvSpec, ref: RefTurn, ci: int) -> list[Mutant]:
    """The argument mutants of call ``ci`` of the turn (each argument replaced by other values): a function of the
    turn's start state, its calls and whether call ``ci`` wrote, so made once for each (kept on ``ref``; a new list
    each time)."""
    writes = ci in ref.effectful
    made = ref.argument_made.get((ci, writes))
    if made is None:
        made = ref.argument_made[(ci, writes)] = _argument_mutants(spec, ref, ci, writes)
    return list(made)


def _argument_mutants(spec: EnvSpec, ref: RefTurn, ci: int, writes: bool) -> list[Mutant]:
    calls = ref.calls
    call = calls[ci]
    same = list(range(len(calls)))
    try:
        props = spec.tool(call.name).parameters.get("properties", {})
    except KeyError:
        props = {}
    probe = matches_patterns(ref.turn)
    out: list[Mutant] = []
    for arg, value in call.arguments.items():
        col = ref.start.column_of(arg, value)
        n = 2 if writes and col is not None and col.distinct else 1  # a write aimed at two other rows
        values = argument_values(col, value, props.get(arg, {}) if isinstance(props, dict) else {}, n)
        if probe and isinstance(value, str):
            values += pattern_probes(value)
        for new, why in values:
            changed = ToolCall(name=call.name, arguments={**call.arguments, arg: new})
            what = (f"aimed at {col.table} row {new!r} instead of {value!r} ({arg})"
                    if col is not None and col.name == "id" and why == "another existing id"
                    else f"with {arg}={new!r} ({why}) instead of {value!r}")
            out.append(Mutant(5, "argument", f"{call.name} {what}", [*calls[:ci], changed, *calls[ci + 1:]], same))
    return out


def _entity_targets(ref: RefTurn) -> list[tuple[str, Any]]:
    """``(table, id)`` of the rows the turn's calls name by id."""
    found: list[tuple[str, Any]] = []
    for call in ref.calls:
        for arg, value in call.arguments.items():
            col = ref.start.column_of(arg, value)
            if col is not None and col.name == "id" and value in col.values and (col.table, value) not in found:
                found.append((col.table, value))
    return found


def _retargets(ref: RefTurn) -> list[Mutant]:
    out: list[Mutant] = []
    for table, rid in _entity_targets(ref):
        rows = ref.start.rows(table)
        row = next((r for r in rows if r.get("id") == rid), None)
        others = [r for r in rows if r.get("id") != rid]
        if row is None or not others:
            continue
        other = others[-1]
        calls, changed = [], 0
        for call in ref.calls:
            args = dict(call.arguments)
            for arg, value in call.arguments.items():
                col = ref.start.column_of(arg, value)
                if col is not None and col.table == table and col.name in row and _equal(row[col.name], value) \
                        and other.get(col.name) is not None:
                    args[arg] = other[col.name]
                    changed += 1
            calls.append(ToolCall(name=call.name, arguments=args))
        if changed >= 2:  # one changed argument is an argument mutant already
            out.append(Mutant(7, "retarget", f"the same calls aimed at {table} row {other['id']!r} instead of "
                              f"{rid!r}: {'; '.join(short_call(c, 100) for c in calls)}", calls,
                              list(range(len(calls)))))
    return out


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.lower() == b.lower()
    return bool(a == b) and type(a) is not bool and type(b) is not bool


def _dedupe(mutants: Iterable[Mutant], ref: RefTurn) -> list[Mutant]:
    seen = {Mutant(0, "", "", ref.calls, []).key()}
    out = []
    for m in mutants:
        k = m.key()
        if k not in seen:
            seen.add(k)
            out.append(m)
    return out


def extra_writes(spec: EnvSpec, ref: RefTurn, pool: list[ToolCall]) -> list[tuple[ToolCall, str]]:
    """Candidate extra state-changing calls for a turn, best first: its own writes aimed at another
    row, then writes other references make (each tool's first); each with its key (the JSON text of its tool and
    arguments, :func:`~envgen.gate.extras.call_key`'s)."""
    out: list[tuple[ToolCall, str]] = []
    for ci in ref.effectful:
        call = ref.calls[ci]
        for arg, value in call.arguments.items():
            col = ref.start.column_of(arg, value)
            if col is None or col.name != "id":
                continue
            for new, why in argument_values(col, value, {}, 2):
                if why == "another existing id":
                    aimed = ToolCall(name=call.name, arguments={**call.arguments, arg: new})
                    out.append((aimed, key_text([aimed.name, aimed.arguments])))
                    break
    own = {key_text([c.name, c.arguments]) for c in ref.calls}
    by_tool: dict[str, list[tuple[ToolCall, str]]] = {}
    for c, key in zip(pool, _keys(pool), strict=True):
        if key not in own:
            by_tool.setdefault(c.name, []).append((c, key))
    own_tools = {ref.calls[i].name for i in ref.effectful}
    rounds = max((len(v) for v in by_tool.values()), default=0)
    names = sorted(by_tool, key=lambda n: n in own_tools)
    for k in range(rounds):  # one call of each tool, other tools first, then the next of each
        for name in names:
            if k < len(by_tool[name]):
                out.append(by_tool[name][k])
    seen: set[str] = set()
    unique = []
    for c, key in out:
        if key not in seen:
            seen.add(key)
            unique.append((c, key))
    return unique


def unused_tool_calls(spec: EnvSpec, start: Snapshot, used: Iterable[str]) -> list[ToolCall]:
    """One call of each tool that no reference makes, with arguments taken from the state ``start``: an
    ``<entity>_id`` an existing id of its table, another argument an existing value of the column of its
    name (an allowed value of an enum, a value of its type where nothing fits). The extra-write mutants
    try them first: a task must not pay a trajectory that adds a write no reference makes (the outside red
    team's ``purge_payments()`` after the requested change was paid 1.0). A call that changes nothing (one
    that fails, unless its spec keeps a failed call's writes) is no mutant."""
    used = set(used)
    out = []
    for tool in spec.tools:
        if tool.name in used:
            continue
        props = tool.parameters.get("properties") or {}
        args: dict[str, Any] = {}
        for name in tool.parameters.get("required") or []:
            value = _state_value(start, name, props.get(name) or {})
            if value is _NOTHING:
                break
            args[name] = value
        else:
            out.append(ToolCall(name=tool.name, arguments=args))
    return out


_NOTHING = object()


def _state_value(start: Snapshot, name: str, schema: dict[str, Any]) -> Any:
    """A valid-looking value for argument ``name`` from the state (see :func:`unused_tool_calls`)."""
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    kind = schema.get("type")
    if name == "id" or name.endswith("_id"):
        ids = start.id_columns(name)
        if ids:
            return ids[0].values[0]
    cols = [c for c in start.columns() if c.name == name and c.values]
    if cols:
        return cols[0].values[0]
    return {"integer": 1, "number": 1, "string": "x", "boolean": True, "array": [], "object": {}}.get(
        kind if isinstance(kind, str) else "", _NOTHING)


_POOL_KEYS: dict[int, tuple[list[ToolCall], list[str]]] = {}


def _keys(pool: list[ToolCall]) -> list[str]:
    """The JSON keys of a pool's calls (the pool of one spec is kept while its mutants are made)."""
    got = _POOL_KEYS.get(id(pool))
    if got is None or got[0] is not pool or len(got[1]) != len(pool):
        _POOL_KEYS.clear()
        got = _POOL_KEYS[id(pool)] = (pool, [key_text([c.name, c.arguments])
                                              for c in pool])
    return got[1]


def early_mutants(ref: RefTurn) -> list[Mutant]:
    """The reference plus a call of a tool the task still withholds at this turn, as the reference makes it once
    the tool is revealed (the first call of each such tool): the agent acting before it may. Played as if the
    tool were offered, whatever the runtime refuses, so the turn's checks themselves must catch the write."""
    task, ti = ref.task, ref.index
    hidden = task.withheld_at(ti)
    out: list[Mutant] = []
    seen: set[str] = set()
    for later, turn in enumerate(task.turns[ti + 1:], ti + 2):
        for call in turn.calls():
            if call.name in hidden and call.name not in seen:
                seen.add(call.name)
                out.append(Mutant(7, "early", f"with {short_call(call)} after the reference calls, before turn {later} "
                                  f"reveals {call.name}", [*ref.calls, call], [*range(len(ref.calls)), None]))
    return out


def extra_mutant(ref: RefTurn, call: ToolCall) -> Mutant:
    """The reference plus the extra write ``call`` (one of :func:`extra_writes`)."""
    return Mutant(7, "extra", f"with an extra call {short_call(call)} after the reference calls",
                  [*ref.calls, call], [*range(len(ref.calls)), None])


# -- replies ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Locator:
    """Where an answer was read: result of reference call ``call`` at ``path`` (``"#len"``: a list's length)."""

    call: int
    path: tuple[Any, ...]

    @property
    def key(self) -> str | None:
        return next((p for p in reversed(self.path) if isinstance(p, str) and p != "#len"), None)


def _walk(node: Any, path: tuple[Any, ...], budget: list[int]) -> Iterator[tuple[tuple[Any, ...], Any]]:
    budget[0] -= 1
    if budget[0] < 0:
        return
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, (*path, k), budget)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, (*path, i), budget)


def _id_like(key: Any) -> bool:
    return isinstance(key, str) and (key == "id" or key.endswith("_id"))


def locate_answers(ref: RefTurn) -> list[Locator | None]:
    """Per answer (see :attr:`RefTurn.answers`), where the reference read it (the last call that
    holds it), or None. A number is only traced to a list's length or a field that is no id."""
    out: list[Locator | None] = []
    for answer in ref.answers:
        numeric = is_numeric(answer)
        found: Locator | None = None
        for ci in reversed(range(len(ref.results))):
            r = ref.results[ci]
            if not r.ok:
                continue
            for path, node in _walk(r.result, (), [_MAX_NODES]):
                if isinstance(node, list) and numeric and answer.strip() == str(len(node)):
                    found = Locator(ci, (*path, "#len"))
                    break
                if isinstance(node, dict | list):
                    continue
                if numeric and (not path or _id_like(path[-1])):
                    continue
                if same_answer(answer_text(node), answer):
                    found = Locator(ci, path)
                    break
            if found is not None:
                break
        out.append(found)
    return out


def _get(node: Any, path: tuple[Any, ...]) -> tuple[bool, Any]:
    for p in path:
        if p == "#len":
            return (True, len(node)) if isinstance(node, list) else (False, None)
        in_list = isinstance(p, int) and isinstance(node, list) and 0 <= p < len(node)
        if in_list or (isinstance(p, str) and isinstance(node, dict) and p in node):
            node = node[p]
        else:
            return False, None
    return True, node


def compose(parts: list[str]) -> str:
    text = " ".join(p for p in parts if p)
    return text or GENERIC_REPLY


def derive_reply(ref: RefTurn, locators: list[Locator | None], mutant: Mutant, results: list[Any]) -> str:
    """The reply of a mutant: the oracle's answers, each one that was read from a reference call replaced
    by what the mutant's call standing for it returned at the same place (when it returned it)."""
    parts = list(ref.answers)
    for k, loc in enumerate(locators):
        if loc is None:
            continue
        j = next((j for j, o in enumerate(mutant.origin) if o == loc.call), None)
        if j is None or j >= len(results) or not results[j].ok:
            continue
        ok, value = _get(results[j].result, loc.path)
        if ok and not isinstance(value, dict | list):
            parts[k] = answer_text(value)
    return compose(parts) if ref.answers else ref.reply


def _alternatives(ref: RefTurn, loc: Locator | None, answer: str,
                  limit: int = _REPLY_ALTERNATIVES) -> list[tuple[str, str]]:
    """Other entities' values for ``answer``: ``(text, where it comes from)``, closest first, at most ``limit``."""
    found: list[tuple[str, str]] = []
    if loc is not None and loc.path and loc.path[-1] != "#len":
        r = ref.results[loc.call]
        for i, p in enumerate(loc.path):
            if not isinstance(p, int):
                continue
            ok, parent = _get(r.result, loc.path[:i])
            if ok and isinstance(parent, list):
                for j in range(len(parent)):
                    if j != p:
                        got, v = _get(r.result, (*loc.path[:i], j, *loc.path[i + 1:]))
                        if got and not isinstance(v, dict | list):
                            found.append((answer_text(v), f"element {j} of {ref.calls[loc.call].name}'s result"))
    key = loc.key if loc is not None else None
    if key is not None or not is_numeric(answer):
        cols = ref.start.columns_holding(answer, name=key)
        if key is not None:
            cols = [c for c in cols if c.name == key] or ([] if is_numeric(answer) else cols)
        for col in cols[:2]:
            found += [(answer_text(v), f"another row's {col.label}") for v in col.values if v is not None]
    low = answer.strip().lower()
    uniq: dict[str, tuple[str, str]] = {}
    for text, where in found:
        k = text.strip().lower()
        if k and not same_answer(text, answer) and k not in uniq:
            uniq[k] = (text, where)
    # values a reply check could confuse with the answer (one contains the other) first; stable otherwise
    ranked = sorted(uniq.values(), key=lambda tw: low not in tw[0].lower() and tw[0].lower() not in low)
    return ranked[:limit]


def reply_mutants(ref: RefTurn, locators: list[Locator | None]) -> list[Mutant]:
    """Replies that omit one answer, and replies that give another entity's value instead of it."""
    answers = ref.answers
    out: list[Mutant] = []
    same = list(range(len(ref.calls)))
    for k, answer in enumerate(answers):
        omitted = compose(answers[:k] + answers[k + 1:])
        out.append(Mutant(7, "reply", f"the reference calls and the reply {omitted!r}, which omits {answer!r}",
                          ref.calls, same, omitted))
        if ref.task.kind == "decline" or ref.turn.expects == "decline":
            continue
        numeric = is_numeric(answer)
        others = _alternatives(ref, locators[k], answer, _REPLY_ALTERNATIVES if numeric else _SHOTGUN)
        for text, where in others[:_REPLY_ALTERNATIVES]:
            reply = compose([*answers[:k], text, *answers[k + 1:]])
            out.append(Mutant(7, "reply", f"the reference calls and the reply {reply!r}, which gives {where} "
                              f"instead of {answer!r}", ref.calls, same, reply))
        if not numeric:  # (a reply naming more numbers than the runtime's cap passes no numeric check)
            every = [text for text, _ in others]
            if every:
                shown = ", ".join(repr(t) for t in every[:3]) + (", ..." if len(every) > 3 else "")
                out.append(Mutant(7, "reply", f"the reference calls and a reply that lists every candidate: {answer!r} "
                                  f"with {len(every)} other values ({shown})", ref.calls, same,
                                  compose([*answers, *every])))
    return out

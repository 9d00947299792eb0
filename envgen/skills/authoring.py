"""Skills written by the model: induction from successful exploration environments, refinement from failures.

:class:`SkillWriter` asks a model backend (in self-play: the policy itself) to write
skills as JSON, decoded under :func:`skill_json_schema` so even a weak model writes
something that parses:

* **induction** (:meth:`SkillWriter.induce`): an exploration environment with a high
  proposer reward (its solver succeeded about half the time) is shown to the model
  (title, tables, tools, task kinds and, when it came from the blueprint or world stream, its
  blueprint, and its structure in the skill's terms); the model writes a new skill:
  name, description, tags, rules, hints and the blueprint structure such environments
  need (:attr:`Skill.blueprint`). Constrained, that section is decoded **within the
  example's structure** (:func:`envgen.skills.requirements.structure_of`: only the
  operations and rules it has, a lifecycle only if it has one, no more tasks of a kind),
  so the skill holds on its example by construction; the model chooses what to ask for.
  On the H200 the unbounded section asked for structure its example lacked in every
  round, and no induced skill was kept. The skill's example is the environment; its
  validator is the requirements validator
  (:func:`envgen.skills.requirements.requirements_validator`);
* **refinement** (:meth:`SkillWriter.refine`): a struggling skill's rules, hints and
  requirements are rewritten from its failure traces.

A written skill is a **candidate**. It is kept only if

1. its validator holds on its own example (induction: the skill describes the
   environment it came from), and
2. its **probes** pass: the proposer writes ``probes`` environments under the
   candidate (its rules in the prompt, its requirements in the decoding schema and
   the compiler), and each must pass the gate and the candidate's validator.

Every decision is returned with its reason, so the controller logs why a candidate
was kept or refused. Generation and probing are batched: one backend call writes the
candidates of a round that share a decoding schema, one proposer call writes all their
probes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from envgen.blueprint.schema import OP_KINDS, RULE_KINDS, _text
from envgen.skills.requirements import requirement_problems, requirements_validator, structure_of
from envgen.skills.skill import Skill, check_blueprint_requirements, run_validator
from gym_envs.errors import exception_text
from gym_envs.spec import TASK_KINDS, EnvSpec

__all__ = ["SkillWriter", "Written", "parse_skill_json", "skill_json_schema"]

_TAG = r"^[a-z][a-z0-9-]{1,23}$"


def _starting(first: str, rest: int) -> str:
    """``_text`` prose that starts with ``first`` (then at most ``rest`` more characters)."""
    return "^" + first + _text(rest)[1:]


def skill_json_schema(*, full: bool = True, within: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON Schema a model-written skill decodes under (``full=False``: a refinement, without
    name, description and tags). Every string, array and number is bounded (a finite grammar).

    ``within`` (what an example environment has: :func:`envgen.skills.requirements.structure_of`)
    bounds the skill's blueprint section to it: only operations and rules the example has, a lifecycle
    only if it has one, no more tasks of a kind than it has. A skill induced from the example then
    holds on it by construction, and the model still chooses which of its structure the skill asks for.
    """

    def strings(pattern: str, most: int, least: int = 0) -> dict[str, Any]:
        return {"type": "array", "items": {"type": "string", "pattern": pattern}, "minItems": least, "maxItems": most}

    def kinds(allowed: Sequence[str], most: int) -> dict[str, Any]:
        if not allowed:
            return {"type": "array", "items": {"type": "string"}, "maxItems": 0}
        return {"type": "array", "items": {"type": "string", "enum": list(allowed)},
                "maxItems": min(most, len(allowed))}

    have = within or {}
    counts = have.get("tasks") or {}
    tasks = {"type": "object", "properties": {
        k: {"type": "integer", "minimum": 0, "maximum": min(2, int(counts.get(k, 0))) if within else 2}
        for k in TASK_KINDS}, "required": list(TASK_KINDS), "additionalProperties": False}
    ops = [k for k in OP_KINDS if k in have.get("operations", [])] if within else list(OP_KINDS)
    rules = [k for k in RULE_KINDS if k in have.get("rules", [])] if within else list(RULE_KINDS)
    states: dict[str, Any] = {"type": "boolean"} if not within or have.get("states") else {"type": "boolean",
                                                                                            "enum": [False]}
    blueprint = {"type": "object", "properties": {
        "operations": kinds(ops, 3), "rules": kinds(rules, 2), "states": states, "tasks": tasks},
        "required": ["operations", "rules", "states", "tasks"], "additionalProperties": False}
    # what parse_skill_json requires, the grammar guarantees: a name that starts with a word, rules that
    # start with a letter (SmolLM2 wrote a blank rule under a pattern that allowed one, and lost the skill)
    props: dict[str, Any] = {}
    if full:
        props["name"] = {"type": "string", "pattern": _starting(r"[A-Za-z]{3}", 45)}
        props["description"] = {"type": "string", "pattern": _text(160)}
        props["tags"] = strings(_TAG, 4)
    props["rules"] = strings(_starting("[A-Za-z]", 159), 4, 1)
    props["hints"] = strings(_text(160), 2)
    props["blueprint"] = blueprint
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def _first_object(text: str) -> Any:
    text = re.sub(r"<think>.*?(</think>|$)", "", text, flags=re.S)
    m = re.search(r"\{.*\}", text, re.S)
    if not m:
        return None
    try:
        return json.loads(m.group(0))
    except json.JSONDecodeError:
        return None


def parse_skill_json(text: str, *, full: bool = True) -> dict[str, Any] | str:
    """A model-written skill as a dict (keys of :func:`skill_json_schema`), or the reason it is unusable."""
    obj = _first_object(text)
    if not isinstance(obj, dict):
        return "no JSON object"
    keys = ("name", "description", "tags", "rules", "hints", "blueprint") if full else ("rules", "hints", "blueprint")
    missing = [k for k in keys if k not in obj]
    if missing:
        return f"missing {missing}"
    rules = [str(r).strip() for r in obj.get("rules") or [] if str(r).strip()]
    if not rules:
        return "no rules"
    req = dict(obj.get("blueprint") or {})
    req["tasks"] = {k: v for k, v in (req.get("tasks") or {}).items() if v}
    try:
        req = check_blueprint_requirements(req)
    except ValueError as e:
        return str(e)
    out: dict[str, Any] = {"rules": rules, "hints": [str(h).strip() for h in obj.get("hints") or [] if str(h).strip()],
                           "blueprint": req}
    if full:
        name = str(obj.get("name") or "").strip()
        if not re.search(r"[A-Za-z]{3}", name):
            return "the name has no word"
        out.update(name=name, description=str(obj.get("description") or "").strip() or name,
                   tags=[str(t) for t in obj.get("tags") or []])
    return out


_SYSTEM = ("You maintain a library of skills: reusable guidance for a model that writes tool-use environments "
           "(tables, tools, tasks with checks) from source documents. A skill has a name, a description, tags, "
           "rules and hints in plain words, and the blueprint structure its environments need: operation kinds ("
           + ", ".join(OP_KINDS) + "), rule kinds (" + ", ".join(RULE_KINDS) + "), whether the main record has "
           "lifecycle states, and the least number of tasks of each kind (" + ", ".join(TASK_KINDS) + "). "
           "Answer with one JSON object.")


def describe_env(spec: EnvSpec, blueprint: str | None = None) -> str:
    """A compact description of an environment for a skill-writing prompt."""
    tables = re.findall(r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?[\"`\[]?(\w+)", spec.state.schema_sql, re.I)
    kinds: dict[str, int] = {}
    for t in spec.tasks:
        kinds[t.kind] = kinds.get(t.kind, 0) + 1
    tools = "\n".join(f"- {t.name}({', '.join(t.parameters.get('properties', {}))}): {t.description[:100]}"
                      for t in spec.tools[:10])
    lines = [f"Environment: {spec.title}", spec.description[:300], f"Tables: {', '.join(tables)}", f"Tools:\n{tools}",
             "Tasks: " + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))]
    if blueprint:
        lines.append(f"Its blueprint: {blueprint[:1500]}")
    return "\n".join(lines)


def describe_structure(have: dict[str, Any]) -> str:
    """What an environment has (:func:`envgen.skills.requirements.structure_of`), in the skill's terms."""
    tasks = ", ".join(f"{n} {k}" for k, n in have.get("tasks", {}).items() if n)
    return (f"Its structure: operations {', '.join(have.get('operations', [])) or 'none'}; rules "
            f"{', '.join(have.get('rules', [])) or 'none'}; a lifecycle (status column): "
            f"{'yes' if have.get('states') else 'no'}; tasks: {tasks or 'none'}.")


def induction_messages(spec: EnvSpec, solve_rate: float | None, blueprint: str | None = None,
                       structure: dict[str, Any] | None = None) -> list[dict[str, str]]:
    rate = "an unknown share" if solve_rate is None else f"{solve_rate:.0%}"
    shape = f"\n{describe_structure(structure)}" if structure else ""
    return [{"role": "system", "content": _SYSTEM},
            {"role": "user", "content": (
                f"{describe_env(spec, blueprint)}{shape}\n\nThis environment was written without a skill, and the "
                f"solver succeeded in {rate} of its episodes: a useful difficulty. Write a new skill that makes more "
                "environments like it: a name, a description, tags, rules and hints, and the blueprint structure "
                "this environment has (do not ask for more tasks of a kind than it has).")}]


def refinement_messages(skill: Skill, failures: Sequence[str]) -> list[dict[str, str]]:
    fails = "\n".join(f"- {f}" for f in list(failures)[:12]) or "- (no traces recorded)"
    st = skill.stats
    return [{"role": "system", "content": _SYSTEM},
            {"role": "user", "content": (
                f"{skill.render('rules')}\n\nRequired structure: {json.dumps(skill.blueprint)}\n\nStatistics: "
                f"validity {st.validity_rate}, mean solve rate {st.mean_solve_rate} over {st.attempts} environments."
                f"\n\nRecent failures:\n{fails}\n\nRewrite the rules, hints and required structure so that "
                "environments made with this skill are valid and solved about half the time.")}]


@dataclass
class Written:
    """One candidate skill and the decision on it."""

    skill: Skill | None  #: the candidate (None when the model's answer was unusable)
    kept: bool
    why: str


ProbeCheck = Callable[[EnvSpec, Skill], list[str]]


class SkillWriter:
    """Writes candidate skills with a backend and keeps those whose probes pass (module docstring).

    Args:
        backend: an envgen backend (``generate(prompts, ..., json_schema=...)``).
        proposer: the proposer the probes are written with (``propose_batch(docs, skills=...)``).
        probes: probe environments per candidate (0: no probing; the example check still applies).
        executor: where the gate and the validators run.
        constrained: decode under :func:`skill_json_schema`.
        gate: ``gate(spec) -> reasons`` (default: :func:`envgen.gate.validate_spec`).
    """

    def __init__(self, backend: Any, proposer: Any, *, probes: int = 2, executor: Any = "worker",
                 constrained: bool = True, max_new_tokens: int = 768, temperature: float = 0.7,
                 gate: Callable[[EnvSpec], list[str]] | None = None):
        if probes < 0:
            raise ValueError("probes must be >= 0")
        self.backend = backend
        self.proposer = proposer
        self.probes = probes
        self.executor = executor
        self.constrained = constrained
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.gate = gate or self._gate

    def _gate(self, spec: EnvSpec) -> list[str]:
        from envgen.gate import validate_spec

        return [str(r) for r in validate_spec(spec, executor=self.executor).reasons]

    def write(self, chats: list[list[dict[str, str]]], *, full: bool, seed: int,
               within: Sequence[dict[str, Any] | None] | None = None) -> list[dict[str, Any] | str]:
        """The model's skills for ``chats``; ``within[i]`` bounds chat i's blueprint section (constrained
        decoding: :func:`skill_json_schema`). Chats that share a schema are generated in one batch."""
        if not chats:
            return []
        bounds = list(within) if within is not None else [None] * len(chats)
        groups: dict[str, list[int]] = {}
        for i, b in enumerate(bounds):
            groups.setdefault(json.dumps(b, sort_keys=True), []).append(i)
        out: list[dict[str, Any] | str] = [""] * len(chats)
        for idx in groups.values():
            schema = skill_json_schema(full=full, within=bounds[idx[0]]) if self.constrained else None
            limit = self.max_new_tokens
            if schema is not None:
                from envgen.blueprint.schema import max_completion_chars

                limit = max(limit, max_completion_chars(schema))
            failed = ""
            try:
                outs = self.backend.generate([chats[i] for i in idx], max_new_tokens=limit,
                                             temperature=self.temperature, seed=seed, json_schema=schema)
            except Exception as e:  # the boundary: a backend that fails leaves every candidate of the batch unusable
                outs = [None] * len(idx)
                failed = f"generation failed: {exception_text(e)}"
            for i, c in zip(idx, outs, strict=True):
                out[i] = (failed if c is None else parse_skill_json(getattr(c, "text", c), full=full)
                          if getattr(c, "ok", True) else f"generation failed: {c.error}")
        return out

    def validator_problems(self, skill: Skill, spec: EnvSpec) -> list[str]:
        """The candidate's validator and requirements on one spec."""
        out = run_validator(skill, spec, executor=self.executor) if skill.validator else []
        if not skill.validator or skill.validator != requirements_validator(skill.blueprint):
            out += requirement_problems(skill.blueprint, spec, executor=self.executor)
        return out

    def probe(self, skills: Sequence[Skill], docs: Sequence[Any], *, seed: int) -> list[list[str]]:
        """For each skill, the problems of its probes (empty: every probe passed the gate and the validator)."""
        if self.probes == 0 or not skills:
            return [[] for _ in skills]
        rows = [(i, doc) for i, doc in enumerate(docs) for _ in range(self.probes)]
        props = self.proposer.propose_batch([d for _, d in rows], seed=seed, skills=[skills[i] for i, _ in rows])
        out: list[list[str]] = [[] for _ in skills]
        for (i, _), p in zip(rows, props, strict=True):
            if p.spec is None:
                out[i].append(f"a probe did not compile: {p.error}")
                continue
            problems = self.gate(p.spec) or self.validator_problems(skills[i], p.spec)
            out[i] += [f"probe {p.spec.id}: {x}" for x in problems[:2]]
        return out

    def induce(self, items: Sequence[tuple[EnvSpec, float | None, str | None, Any]], iteration: int,
               make_id: Callable[[str], str]) -> list[Written]:
        """Candidate skills from ``(spec, solve_rate, blueprint, doc)`` exploration environments."""
        within = [structure_of(s, executor=self.executor) for s, _, _, _ in items]
        answers = self.write([induction_messages(s, p, bp, w) for (s, p, bp, _), w in zip(items, within, strict=True)],
                              full=True, seed=iteration, within=within)
        cands: list[tuple[int, Skill]] = []
        out: list[Written] = []
        for k, ((spec, _, _, _), ans) in enumerate(zip(items, answers, strict=True)):
            if isinstance(ans, str):
                out.append(Written(None, False, f"the model's skill for {spec.id} is unusable: {ans}"))
                continue
            skill = Skill(id=make_id(ans["name"]), name=ans["name"][:80], description=ans["description"],
                          tags=["induced", *ans["tags"]], rules=ans["rules"], hints=ans["hints"], examples=[spec],
                          validator=requirements_validator(ans["blueprint"]), added_iteration=iteration,
                          parent=spec.provenance.skill_id, blueprint=ans["blueprint"])
            own = self.validator_problems(skill, spec)
            if own:
                out.append(Written(skill, False, f"its validator fails on its own example {spec.id}: {own[0]}"))
                continue
            cands.append((k, skill))
            out.append(Written(skill, True, ""))
        self._judge([out[k] for k, _ in cands], [items[k][3] for k, _ in cands], seed=iteration)
        for w, (k, _) in zip([out[k] for k, _ in cands], cands, strict=True):
            if w.kept:
                w.why = f"written by the model from exploration env {items[k][0].id}; {w.why}"
        return out

    def refine(self, skills: Sequence[Skill], failures: dict[str, list[str]], docs: Sequence[Any],
               iteration: int) -> list[Written]:
        """Rewritten copies of ``skills`` (the originals are untouched), each kept only if its probes pass."""
        answers = self.write([refinement_messages(s, failures.get(s.id, [])) for s in skills], full=False,
                              seed=iteration)
        out: list[Written] = []
        for s, ans in zip(skills, answers, strict=True):
            if isinstance(ans, str):
                out.append(Written(None, False, f"the model's rewrite is unusable: {ans}"))
                continue
            new = Skill(id=s.id, name=s.name, description=s.description, tags=list(s.tags), rules=ans["rules"],
                        hints=ans["hints"], examples=list(s.examples), validator=s.validator, stats=s.stats,
                        added_iteration=s.added_iteration, parent=s.parent, blueprint=ans["blueprint"])
            if s.validator == requirements_validator(s.blueprint) or not s.validator:
                new.validator = requirements_validator(new.blueprint) if new.blueprint else s.validator
            out.append(Written(new, True, ""))
        judged = [w for w in out if w.kept]
        self._judge(judged, [docs[i % len(docs)] if docs else None for i in range(len(judged))], seed=iteration)
        return out

    def _judge(self, written: list[Written], docs: list[Any], *, seed: int) -> None:
        """Probe every kept candidate; refuse those whose probes fail (in place)."""
        usable = [(w, d) for w, d in zip(written, docs, strict=True) if w.skill is not None and d is not None]
        problems = self.probe([w.skill for w, _ in usable], [d for _, d in usable], seed=seed)  # type: ignore[misc]
        for (w, _), probs in zip(usable, problems, strict=True):
            if probs:
                w.kept, w.why = False, f"its probes failed: {probs[0]}"
            else:
                w.why = (f"its {self.probes} probe(s) passed the gate and its validator" if self.probes
                         else "not probed (probes: 0)")
        for w, d in zip(written, docs, strict=True):
            if d is None and self.probes and w.kept:
                w.kept, w.why = False, "no document to probe it on"

"""A skill: what conditions a proposer, as a folder on disk.

Layout of one skill folder::

    SKILL/
      SKILL.md        front matter (id, name, description, tags, added_iteration, parent, and
                      ``blueprint``: the structure the skill requires, see below)
                      then "## Rules" and "## Hints" bullet lists
      examples/*.json example environment specs (valid EnvSpec JSON)
      validator.py    optional restricted code: ``def validate(spec) -> list[str]``; the helpers
                      of ``validator_helpers.py`` (``tables``, ``functions``, ...) are prepended
      stats.json      attempts, solve-rate sum, validity, last use

A skill's ``blueprint`` section (:attr:`Skill.blueprint`) states the structure it
requires of a blueprint, in the blueprint's own vocabulary: ``operations`` (operation
kinds, e.g. ``[adjust]``), ``rules`` (rule kinds, e.g. ``[non_negative]``), ``states``
(``true``: the main entity has a lifecycle) and ``tasks`` (the least count per task
kind, e.g. ``{decline: 2}``). The blueprint stream narrows its decoding schema with it
(:func:`envgen.blueprint.schema.blueprint_json_schema`) and the compiler adds what a
blueprint still lacks; the world stream narrows the world schema with the world structure
that does the same (:mod:`envgen.world.requirements`); :func:`check_blueprint_requirements`
refuses unknown kinds.

A skill renders itself at four levels of progressive disclosure (``name``,
``summary``, ``rules``, ``full``) for proposer prompts. Its validator runs in
the sandbox (:mod:`gym_envs.sandbox`, as a one-tool spec) with the executor's
limits; a validator that crashes or times out yields a reason, never an
exception.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from envgen.blueprint.schema import BLUEPRINT_KEYS, check_blueprint_requirements
from gym_envs.spec import EnvSpec, load_spec, parse_spec

__all__ = ["BLUEPRINT_KEYS", "DISCLOSURE_LEVELS", "Skill", "SkillStats", "check_blueprint_requirements", "load_skill",
           "run_validator", "save_skill"]

DISCLOSURE_LEVELS = ("name", "summary", "rules", "full")
_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{1,63}$")
@dataclass
class SkillStats:
    """Usage statistics of a skill (pooled when skills merge)."""

    attempts: int = 0  #: environments proposed under this skill that were valid and solved G times
    solve_sum: float = 0.0  #: sum of their solve rates
    proposals: int = 0  #: every proposal made under this skill
    valid: int = 0  #: proposals the gate accepted
    reward_sum: float = 0.0  #: sum of proposer rewards
    last_used: int | None = None  #: iteration of last use
    recent_solve_rate: float | None = None  #: exponential moving average of solve rates (weight 0.3 on new)
    proposals_at_refine: int = 0  #: ``proposals`` when the skill was last refined

    def observe(self, solve_rate: float, weight: float = 0.3) -> None:
        """Account one solved environment's solve rate."""
        self.attempts += 1
        self.solve_sum += solve_rate
        r = self.recent_solve_rate
        self.recent_solve_rate = solve_rate if r is None else (1 - weight) * r + weight * solve_rate

    @property
    def mean_solve_rate(self) -> float | None:
        return self.solve_sum / self.attempts if self.attempts else None

    @property
    def validity_rate(self) -> float | None:
        return self.valid / self.proposals if self.proposals else None

    def pooled(self, other: SkillStats) -> SkillStats:
        last = [x for x in (self.last_used, other.last_used) if x is not None]
        recent = [(x.recent_solve_rate, x.attempts) for x in (self, other) if x.recent_solve_rate is not None]
        pooled_recent = (sum(r * n for r, n in recent) / max(1, sum(n for _, n in recent))) if recent else None
        return SkillStats(self.attempts + other.attempts, self.solve_sum + other.solve_sum,
                          self.proposals + other.proposals, self.valid + other.valid,
                          self.reward_sum + other.reward_sum, max(last) if last else None, pooled_recent,
                          self.proposals_at_refine + other.proposals_at_refine)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"mean_solve_rate": self.mean_solve_rate, "validity_rate": self.validity_rate}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SkillStats:
        keys = {"attempts", "solve_sum", "proposals", "valid", "reward_sum", "last_used", "recent_solve_rate",
                "proposals_at_refine"}
        return cls(**{k: v for k, v in d.items() if k in keys})


@dataclass
class Skill:
    """Routing metadata, rules, hints, examples, an executable validator and usage stats."""

    id: str
    name: str
    description: str
    tags: list[str] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    examples: list[EnvSpec] = field(default_factory=list)
    validator: str | None = None
    stats: SkillStats = field(default_factory=SkillStats)
    added_iteration: int = 0
    parent: str | None = None
    archived: bool = False
    #: structure required of a blueprint (``operations``, ``rules``, ``states``, ``tasks``; module docstring)
    blueprint: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not _ID.match(self.id):
            raise ValueError(f"skill id {self.id!r} must match {_ID.pattern}")
        if not self.name.strip():
            raise ValueError(f"skill {self.id}: name must be non-empty")
        self.blueprint = check_blueprint_requirements(self.blueprint, f"skill {self.id}: blueprint")

    def render(self, level: str = "rules", max_examples: int = 1) -> str:
        """Text for a proposer prompt at a disclosure level (``name`` < ``summary`` < ``rules`` < ``full``)."""
        if level not in DISCLOSURE_LEVELS:
            raise ValueError(f"level must be one of {DISCLOSURE_LEVELS}, got {level!r}")
        out = [f"Skill: {self.name}"]
        if level == "name":
            return out[0]
        out.append(self.description)
        if level in ("rules", "full"):
            if self.rules:
                out.append("Rules:\n" + "\n".join(f"- {r}" for r in self.rules))
            if self.hints:
                out.append("Hints:\n" + "\n".join(f"- {h}" for h in self.hints))
        if level == "full":
            for ex in self.examples[:max_examples]:
                out.append("Example environment:\n```json\n" + ex.to_json(indent=None) + "\n```")
        return "\n\n".join(out)

    def fingerprint_text(self) -> str:
        """All task texts of the examples (for novelty and merging)."""
        return "\n".join(turn.instruction for ex in self.examples for t in ex.tasks for turn in t.turns)

    def tool_tokens(self) -> set[str]:
        """Words of tool names and parameter names of the examples."""
        toks: set[str] = set()
        for ex in self.examples:
            for tool in ex.tools:
                toks.update(w for w in tool.name.lower().split("_") if w)
                toks.update(tool.parameters.get("properties", {}))
        return toks


# -- disk format -----------------------------------------------------------------------------------

_FRONT = re.compile(r"^---\n(.*?)\n---\n?(.*)$", re.S)


def _bullets(body: str, heading: str) -> list[str]:
    m = re.search(rf"^##\s+{heading}\s*$(.*?)(?=^##\s|\Z)", body, flags=re.M | re.S | re.I)
    if not m:
        return []
    return [line.strip()[2:].strip() for line in m.group(1).splitlines() if line.strip().startswith(("- ", "* "))]


def load_skill(folder: str | Path) -> Skill:
    """Read a skill folder; errors name the file and what to fix."""
    folder = Path(folder)
    md = folder / "SKILL.md"
    if not md.exists():
        raise FileNotFoundError(f"{folder} is not a skill: it has no SKILL.md")
    m = _FRONT.match(md.read_text(encoding="utf-8"))
    if not m:
        raise ValueError(f"{md}: must start with a '---' YAML front matter block")
    meta = yaml.safe_load(m.group(1)) or {}
    missing = [k for k in ("id", "name", "description") if not meta.get(k)]
    if missing:
        raise ValueError(f"{md}: front matter lacks {missing}")
    try:
        blueprint = check_blueprint_requirements(meta.get("blueprint"), "blueprint")
    except ValueError as e:
        raise ValueError(f"{md}: front matter {e}") from None
    examples = [load_spec(p) for p in sorted((folder / "examples").glob("*.json"))]
    validator = (folder / "validator.py").read_text(encoding="utf-8") if (folder / "validator.py").exists() else None
    stats_path = folder / "stats.json"
    stats = SkillStats.from_dict(json.loads(stats_path.read_text())) if stats_path.exists() else SkillStats()
    return Skill(id=str(meta["id"]), name=str(meta["name"]), description=str(meta["description"]),
                 tags=list(meta.get("tags") or []), rules=_bullets(m.group(2), "Rules"),
                 hints=_bullets(m.group(2), "Hints"), examples=examples, validator=validator, stats=stats,
                 added_iteration=int(meta.get("added_iteration") or 0), parent=meta.get("parent"),
                 archived=bool(meta.get("archived", False)), blueprint=blueprint)


def skill_markdown(skill: Skill) -> str:
    meta = {"id": skill.id, "name": skill.name, "description": skill.description, "tags": skill.tags,
            "added_iteration": skill.added_iteration, "parent": skill.parent, "archived": skill.archived}
    if skill.blueprint:
        meta["blueprint"] = skill.blueprint
    body = [f"# {skill.name}", "", skill.description, "", "## Rules", *[f"- {r}" for r in skill.rules], "",
            "## Hints", *[f"- {h}" for h in skill.hints], ""]
    return "---\n" + yaml.safe_dump(meta, sort_keys=False).strip() + "\n---\n" + "\n".join(body)


def save_skill(skill: Skill, folder: str | Path) -> Path:
    """Write a skill folder atomically (a temporary sibling folder renamed into place)."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        (tmp / "SKILL.md").write_text(skill_markdown(skill), encoding="utf-8")
        (tmp / "examples").mkdir()
        for i, ex in enumerate(skill.examples):
            (tmp / "examples" / f"{i:02d}-{ex.id}.json").write_text(ex.to_json() + "\n", encoding="utf-8")
        if skill.validator:
            (tmp / "validator.py").write_text(skill.validator, encoding="utf-8")
        (tmp / "stats.json").write_text(json.dumps(skill.stats.to_dict(), indent=1) + "\n", encoding="utf-8")
        if folder.exists():
            old = folder.with_name(f".{folder.name}.old")
            if old.exists():
                shutil.rmtree(old)
            folder.rename(old)
            tmp.rename(folder)
            shutil.rmtree(old)
        else:
            tmp.rename(folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder


# -- the validator, sandboxed ----------------------------------------------------------------------

_WRAPPER = '''

def run_skill_validator(db, spec):
    problems = validate(spec)
    if not isinstance(problems, list):
        raise ToolError("validate(spec) must return a list of strings")
    return [str(p) for p in problems]
'''


def validator_helpers() -> str:
    """Source of the helpers prepended to every validator (``envgen/skills/validator_helpers.py``)."""
    text = (Path(__file__).parent / "validator_helpers.py").read_text(encoding="utf-8")
    return re.sub(r'^""".*?"""\n', "", text, count=1, flags=re.S)  # the module docstring stays behind


def _validator_spec(code: str) -> EnvSpec:
    return parse_spec({
        "id": "skill-validator", "title": "skill validator",
        "state": {"schema_sql": "CREATE TABLE unused (id INTEGER PRIMARY KEY);", "seed_sql": ""},
        "tools": [{"name": "run_skill_validator", "description": "run validate(spec)",
                   "parameters": {"type": "object", "properties": {"spec": {"type": "object"}},
                                  "required": ["spec"]}}],
        "code": validator_helpers() + "\n\n" + code + _WRAPPER,
        "tasks": [{"id": "t", "kind": "read", "turns": [{"instruction": "-", "checks": [
            {"kind": "reply_contains", "any_of": ["-"]}]}]}],
    })


def run_validator(skill: Skill, spec: EnvSpec | dict[str, Any], executor: Any = "worker") -> list[str]:
    """Run the skill's validator on a spec in the sandbox; returns problems (empty = fine)."""
    if not skill.validator:
        return []
    from gym_envs.sandbox import LoadFailure, default_executor

    ex = default_executor(executor) if isinstance(executor, str) else executor
    data = spec.model_dump(mode="json") if isinstance(spec, EnvSpec) else spec
    try:
        session = ex.session(_validator_spec(skill.validator))
    except LoadFailure as e:
        return [f"skill {skill.id}: its validator does not load: {e}"]
    try:
        result = session.call("run_skill_validator", {"spec": data})
    finally:
        session.close()
    if not result.ok:
        return [f"skill {skill.id}: validator error: {result.error_type}: {result.error}"]
    return list(result.result)

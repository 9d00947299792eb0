"""A folder of skills that co-evolves with the model, with a readable evolution log.

``ROOT/<skill_id>/`` holds active skills, ``ROOT/_archive/<skill_id>/`` pruned or
merged ones (archived, never deleted). Every change is appended to
``ROOT/evolution.log`` (one line a person can read) and ``ROOT/evolution.jsonl``
(the same event as data).

Similarity between skills (and between a skill and a candidate environment) is
content-based: Jaccard similarity of tool-signature tokens (tool-name words and
parameter names of their example environments) averaged with the similarity
of their task texts, so two skills with different names but the same tools
and tasks are recognised as duplicates, and two with similar names but
different content are not.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from corpora.errors import did_you_mean
from corpora.similarity import jaccard, text_similarity
from envgen.skills.skill import Skill, load_skill, save_skill
from gym_envs.spec import EnvSpec

__all__ = ["SkillLibrary", "builtin_skills_dir", "content_similarity", "spec_tokens"]


def builtin_skills_dir() -> Path:
    """The folder of the built-in skills shipped as package data."""
    return Path(__file__).parent / "builtin"


def spec_tokens(spec: EnvSpec) -> set[str]:
    """The tool-signature tokens of a spec: its tool names' words and their parameter names."""
    toks: set[str] = set()
    for tool in spec.tools:
        toks.update(w for w in tool.name.lower().split("_") if w)
        toks.update(tool.parameters.get("properties", {}))
    return toks


def content_similarity(a_tokens: set[str], a_text: str, b_tokens: set[str], b_text: str) -> float:
    """Mean of tool-signature Jaccard and task-text similarity, in [0, 1]."""
    return 0.5 * jaccard(a_tokens, b_tokens) + 0.5 * text_similarity(a_text, b_text)


class SkillLibrary:
    """Active and archived skills in a folder."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.skills: dict[str, Skill] = {}
        self.archived: dict[str, Skill] = {}
        for d in sorted(p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
            s = load_skill(d)
            self.skills[s.id] = s
        arch = self.root / "_archive"
        if arch.exists():
            for d in sorted(p for p in arch.iterdir() if p.is_dir() and not p.name.startswith(".")):
                s = load_skill(d)
                self.archived[s.id] = s

    @classmethod
    def from_builtin(cls, root: str | Path) -> SkillLibrary:
        """Start a library in ``root`` as a copy of the built-in skills (if ``root`` is empty)."""
        root = Path(root)
        if not root.exists() or not any(root.iterdir()):
            shutil.copytree(builtin_skills_dir(), root, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.py[co]", "__init__.py"))
        return cls(root)

    def __iter__(self) -> Iterator[Skill]:
        return iter(self.skills.values())

    def __len__(self) -> int:
        return len(self.skills)

    def get(self, skill_id: str) -> Skill:
        if skill_id in self.skills:
            return self.skills[skill_id]
        if skill_id in self.archived:
            return self.archived[skill_id]
        raise KeyError(f"no skill {skill_id!r}{did_you_mean(skill_id, [*self.skills, *self.archived], n=1)}")

    # -- changes -------------------------------------------------------------------------------
    def save(self, skill: Skill) -> None:
        where = self.root / "_archive" if skill.archived else self.root
        save_skill(skill, where / skill.id)
        (self.archived if skill.archived else self.skills)[skill.id] = skill

    def add(self, skill: Skill, *, iteration: int, why: str) -> None:
        if skill.id in self.skills or skill.id in self.archived:
            raise ValueError(f"a skill with id {skill.id!r} already exists")
        self.save(skill)
        self.log("added", skill.id, iteration, why)

    def archive(self, skill_id: str, *, iteration: int, why: str, event: str = "pruned") -> None:
        skill = self.skills.pop(skill_id)
        skill.archived = True
        save_skill(skill, self.root / "_archive" / skill.id)
        shutil.rmtree(self.root / skill_id, ignore_errors=True)
        self.archived[skill_id] = skill
        self.log(event, skill_id, iteration, why)

    def log(self, event: str, skill_id: str, iteration: int, why: str, **data: Any) -> None:
        now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        line = f"[iter {iteration:>3}] {event:<8} {skill_id}: {why}"
        with open(self.root / "evolution.log", "a", encoding="utf-8") as f:
            f.write(line + "\n")
        with open(self.root / "evolution.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps({"time": now, "iteration": iteration, "event": event, "skill": skill_id,
                                "why": why, **data}) + "\n")

    def events(self) -> list[dict[str, Any]]:
        p = self.root / "evolution.jsonl"
        if not p.exists():
            return []
        return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]

    # -- similarity ----------------------------------------------------------------------------
    def similarity(self, a: Skill, b: Skill) -> float:
        return content_similarity(a.tool_tokens(), a.fingerprint_text(), b.tool_tokens(), b.fingerprint_text())

    def most_similar(self, tokens: set[str], text: str) -> tuple[str | None, float]:
        """The active skill closest in content to (tokens, text), and the similarity."""
        best, score = None, 0.0
        for s in self.skills.values():
            sim = content_similarity(tokens, text, s.tool_tokens(), s.fingerprint_text())
            if sim > score:
                best, score = s.id, sim
        return best, score

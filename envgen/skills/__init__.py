"""Skill Self-Play: skills on disk, a co-evolving controller, the dual stream, proposer rewards.

* :mod:`envgen.skills.skill` -- the skill folder format, disclosure levels, sandboxed validators;
* :mod:`envgen.skills.library` -- a folder of skills with an evolution log, content similarity;
* :mod:`envgen.skills.controller` -- routing, pruning, refinement, induction, merging;
* :mod:`envgen.skills.round` -- one dual-stream round (skill-conditioned + exploration);
* :mod:`envgen.skills.rewards` -- proposer rewards (Skill-SP, SPADE);
* :mod:`envgen.skills.simulate` -- the controller against synthetic solver competences.
"""

from envgen.skills.controller import Candidate, Controller, ControllerConfig
from envgen.skills.library import SkillLibrary, builtin_skills_dir, content_similarity
from envgen.skills.rewards import proposer_reward, skill_sp_reward, spade_reward
from envgen.skills.round import RoundConfig, RoundResult, run_round, select_dual_stream
from envgen.skills.skill import Skill, SkillStats, load_skill, run_validator, save_skill

__all__ = [
    "Candidate",
    "Controller",
    "ControllerConfig",
    "RoundConfig",
    "RoundResult",
    "Skill",
    "SkillLibrary",
    "SkillStats",
    "builtin_skills_dir",
    "content_similarity",
    "load_skill",
    "proposer_reward",
    "run_round",
    "run_validator",
    "save_skill",
    "select_dual_stream",
    "skill_sp_reward",
    "spade_reward",
]

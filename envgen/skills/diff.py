"""The difference between two skill libraries (``envwright skills diff A B``): what a round of self-play changed.

Self-play saves the library after every round (``RUN/skill-rounds/round-NNNN``);
:func:`diff_libraries` compares two such folders (or any two libraries):

* ``added`` -- active in B, unknown in A (a new skill: induced, or copied in);
* ``archived`` -- active in A, archived in B (pruned or merged away);
* ``restored`` -- archived in A, active in B;
* ``changed`` -- active in both with different content: per field, the old and new
  value (``name``, ``description``, ``tags``, ``blueprint``, ``validator`` as
  changed or not, ``examples`` by id), and for ``rules`` and ``hints`` the lines
  removed and added;
* ``stats`` -- skills whose usage statistics moved (proposals, validity, recent solve rate);
* ``events`` -- evolution-log events B has that A has not (what happened in between, with reasons).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envgen.skills.library import SkillLibrary
from envgen.skills.skill import Skill

__all__ = ["diff_libraries"]

_FIELDS = ("name", "description", "tags", "blueprint")


def _lines(old: list[str], new: list[str]) -> dict[str, list[str]]:
    return {"removed": [x for x in old if x not in new], "added": [x for x in new if x not in old]}


def _changes(a: Skill, b: Skill) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in _FIELDS:
        if getattr(a, f) != getattr(b, f):
            out[f] = {"old": getattr(a, f), "new": getattr(b, f)}
    for f in ("rules", "hints"):
        d = _lines(getattr(a, f), getattr(b, f))
        if d["removed"] or d["added"]:
            out[f] = d
    if (a.validator or "") != (b.validator or ""):
        out["validator"] = {"old": bool(a.validator), "new": bool(b.validator), "changed": True}
    ea, eb = [e.id for e in a.examples], [e.id for e in b.examples]
    if ea != eb:
        out["examples"] = _lines(ea, eb)
    return out


def _stats(a: Skill, b: Skill) -> dict[str, Any] | None:
    keys = ("proposals", "valid", "attempts", "recent_solve_rate")
    sa, sb = a.stats, b.stats
    if all(getattr(sa, k) == getattr(sb, k) for k in keys):
        return None
    return {k: {"old": getattr(sa, k), "new": getattr(sb, k)} for k in keys if getattr(sa, k) != getattr(sb, k)}


def diff_libraries(a: str | Path, b: str | Path) -> dict[str, Any]:
    """The difference from library ``a`` to library ``b`` (see the module docstring)."""
    for p in (a, b):
        if not Path(p).is_dir():
            raise FileNotFoundError(f"{p} is not a skill library folder")
    la, lb = SkillLibrary(a), SkillLibrary(b)
    known_a = set(la.skills) | set(la.archived)
    out: dict[str, Any] = {
        "a": str(a), "b": str(b),
        "added": sorted(s for s in lb.skills if s not in known_a),
        "archived": sorted(s for s in la.skills if s in lb.archived),
        "restored": sorted(s for s in la.archived if s in lb.skills),
        "changed": {}, "stats": {},
    }
    for sid in sorted(set(la.skills) & set(lb.skills)):
        ch = _changes(la.skills[sid], lb.skills[sid])
        if ch:
            out["changed"][sid] = ch
        st = _stats(la.skills[sid], lb.skills[sid])
        if st:
            out["stats"][sid] = st
    seen = {(e.get("time"), e.get("event"), e.get("skill")) for e in la.events()}
    out["events"] = [e for e in lb.events() if (e.get("time"), e.get("event"), e.get("skill")) not in seen]
    return out

"""Difficulty: how deep a compiled environment's tasks go, a knob of the blueprint and the compiler.

A blueprint may say ``"difficulty": "easy" | "medium" | "hard"`` (null: the
compiler's default, ``medium``), and :class:`~envgen.blueprint.compiler.CompileOptions`
may override it (the self-play proposer and the skill controller move the
frontier this way). A :class:`Profile` is what the level means to the task
writer and the compiler:

* **turns**: the range of turns of a conversation (later turns refer back);
* **batch**: how many records a batch request names;
* **near_duplicates**: distractor rows added to the main table, each a copy of
  a seed row under a near-identical key (its words swapped or one word
  changed) with one value changed, so that shallow matching picks the wrong
  record (the gate's near-miss mutants include the closest values first);
* **siblings**: distractor tools: an ``adjust`` beside an ``update`` of the
  same number (and the reverse), so "set it to 5" and "add 5 to it" need
  different tools.

:func:`add_distractors` applies the last two to an environment model and
returns what it added, in words (the compiler records them with its repairs).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from envgen.blueprint.render.model import Entity, EnvModel, Op
from envgen.blueprint.schema import DIFFICULTIES

__all__ = ["DEFAULT_DIFFICULTY", "PROFILES", "Profile", "add_distractors", "profile_of"]

DEFAULT_DIFFICULTY = "medium"


@dataclass(frozen=True)
class Profile:
    """What one difficulty level means (see the module docstring)."""

    name: str
    turns: tuple[int, int]
    batch: int
    near_duplicates: int
    siblings: bool


PROFILES: dict[str, Profile] = {
    "easy": Profile("easy", (1, 2), 2, 0, False),
    "medium": Profile("medium", (2, 3), 2, 1, False),
    "hard": Profile("hard", (3, 5), 3, 2, True),
}


def profile_of(level: str | None) -> Profile:
    """The profile of a difficulty level (None: the default); raises ``ValueError`` naming the levels."""
    name = level or DEFAULT_DIFFICULTY
    if name not in PROFILES:
        raise ValueError(f"unknown difficulty {level!r}; use one of {', '.join(DIFFICULTIES)}")
    return PROFILES[name]


_SPLIT = re.compile(r"([-_./@ ]+)")


def near_key(key: str, taken: set[str], words: list[str], rng: random.Random) -> str | None:
    """A key close to ``key`` that neither contains it nor is contained in it: two of its words swapped,
    else one word replaced; None when none is free."""
    parts = _SPLIT.split(key)
    idx = [i for i, p in enumerate(parts) if p and not _SPLIT.fullmatch(p)]
    tries: list[str] = []
    if len(idx) >= 2:
        a, b = idx[-2], idx[-1]
        swapped = list(parts)
        swapped[a], swapped[b] = parts[b], parts[a]
        tries.append("".join(swapped))
    for w in rng.sample(words, min(6, len(words))):
        if idx:
            changed = list(parts)
            changed[idx[0]] = w
            tries.append("".join(changed))
    low = key.lower()
    taken_low = {t.lower() for t in taken}
    for t in tries:
        tl = t.lower()
        if t and tl != low and low not in tl and tl not in low and tl not in taken_low:
            return t
    return None


def _fits(ent: Entity, src: dict[str, Any]) -> bool:
    """Whether a copy of ``src`` (same parent row) stays within the parent's capacity."""
    parent = ent.parent
    if parent is None or not parent.limited:
        return True
    prow = next((p for p in parent.rows if p["id"] == src[parent.id_param]), None)
    room = parent.room(prow) if prow is not None else None
    return room is not None and sum(1 for r in ent.rows if r[parent.id_param] == src[parent.id_param]) < room


def _near_duplicates(ent: Entity, n: int, rng: random.Random, words: list[str], max_rows: int,
                     children: list[Entity]) -> list[str]:
    if n <= 0:
        return []
    if len(ent.rows) < 2 or any(c.unique for c in ent.columns):  # a unique column cannot hold a copy
        return []
    added: list[str] = []
    taken = {str(r[ent.key.name]) for r in ent.rows}
    for src in rng.sample(ent.rows, min(n, len(ent.rows))):
        key = near_key(str(src[ent.key.name]), taken, words, rng)
        if key is None or not _fits(ent, src):
            continue
        row: dict[str, Any] = dict(src)
        if len(ent.rows) >= max_rows:  # the table is full: the copy takes the place of its last row
            last = max(ent.rows, key=lambda r: r["id"])
            if last is src or any(r.get(ent.id_param) == last["id"] for ch in children for r in ch.rows):
                continue
            ent.rows.remove(last)
        row["id"] = max(r["id"] for r in ent.rows) + 1
        row[ent.key.name] = key
        nums = [c for c in ent.columns if c.sqltype in ("INTEGER", "REAL")]
        if nums:  # one value differs, so a rule that picks by value still has one answer
            c = rng.choice(nums)
            step = 1 if c.sqltype == "INTEGER" else 0.25
            lo = c.minimum if c.minimum is not None else 0
            up = row[c.name] + step
            row[c.name] = up if c.maximum is None or up <= c.maximum else max(lo, row[c.name] - step)
        ent.rows.append(row)
        taken.add(key)
        added.append(f"difficulty: near-duplicate {ent.human} {key!r} of {src[ent.key.name]!r} added")
    return added


def _siblings(model: EnvModel, main: Entity) -> list[str]:
    """An adjust beside each update of a number of ``main`` (and the reverse), with free tool names."""
    added: list[str] = []
    names = {o.tool for o in model.ops}
    for op in list(model.ops):
        if op.entity is not main or op.column is None or op.column.sqltype not in ("INTEGER", "REAL"):
            continue
        twin = {"update": "adjust", "adjust": "update"}.get(op.kind)
        if twin is None or any(o.kind == twin and o.entity is main and o.column is op.column for o in model.ops):
            continue
        verb = "adjust" if twin == "adjust" else "set"
        tool = f"{verb}_{main.name}_{op.column.name}"[:64].rstrip("_")
        if tool in names:
            continue
        model.ops.append(Op(twin, main, tool, "", column=op.column))
        names.add(tool)
        added.append(f"difficulty: sibling tool {tool!r} ({twin} of {op.column.name!r}) added beside {op.tool!r}")
        break
    return added


def add_distractors(model: EnvModel, profile: Profile, rng: random.Random, words: list[str],
                    max_rows: int = 200) -> list[str]:
    """Add the profile's distractor rows (a table keeps at most ``max_rows``) and tools to ``model`` (rows
    filled); what was added, in words."""
    main = next(o.entity for o in model.ops if o.kind == "update")
    children = [e for e in model.entities if e.parent is main]
    added = _near_duplicates(main, profile.near_duplicates, rng, words or ["alt", "other", "copy"], max_rows,
                             children)
    if profile.siblings:
        added += _siblings(model, main)
    return added

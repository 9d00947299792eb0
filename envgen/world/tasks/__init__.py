"""The world compiler's task writer: families of requests a person makes, run to derive their checks.

:func:`write_tasks` draws a mix of families (:mod:`.families`) for one world, finishes each draft on the
simulator (:mod:`.base`) and returns the tasks with their family names. The mix aims at what the targets
of a realistic library ask for: writes found through another record (two hops), filter-and-choose steps,
at least two policy tasks, a refusal by a tool, a question, a request that first needs the user's
identity, and in about every other world one request whose tool is offered only once the user says it is
there (:mod:`.withheld`).

Some one-request drafts become **scenario tasks** (:mod:`.scenario`): a simulated user who must be asked who they
are, or to confirm a change, before the agent acts.

Most other tasks are **sessions** (:func:`session`): once a request is drafted, the same person goes on with one
or two more about their own records ("Also, ..."), each drawn on the world as the earlier requests left it
(:meth:`~envgen.world.tasks.base.Writer.after`), so what it says and expects holds at that point of the
conversation. A careful agent does not repeat a read it already made, so the next request's reference drops
the identical reads.
"""

from __future__ import annotations

import random
from typing import Any

from envgen.world.data import Pools
from envgen.world.model import World
from envgen.world.phrase import also
from envgen.world.sim import Simulator
from envgen.world.tasks.base import Draft, DraftTurn, Writer
from envgen.world.tasks.families import Families
from envgen.world.tasks.scenario import scenario_ready, scenario_task

__all__ = ["write_tasks"]

_PLAN = ["write_goal", "take_next", "add_to_container", "withheld_tool", "hold_resource", "policy_refusal",
         "catalog_goal",
         "free_resource", "followup", "take_empty", "move_record", "count_question", "transfer_amount",
         "catalog_choice", "tool_refusal", "policy_refusal", "add_line", "missing_identity", "read_question",
         "account_adjust", "write_goal", "catalog_goal"]


_SESSION = ["write_goal", "read_question", "add_line", "tool_refusal", "policy_refusal", "write_goal", "add_line"]
"""The families a session's next request is drawn from (each acts for the pinned person only)."""

_STAFF_SESSION = ["take_next", "move_record", "count_question", "free_resource", "hold_resource", "add_to_container",
                  "transfer_amount", "write_goal", "read_question", "tool_refusal", "policy_refusal"]
"""The families a member of staff's next request is drawn from (about any record: staff act for no one person)."""

_SESSION_ODDS = (0.9, 0.6)
"""The chance a task goes on with a second request, and with a third after that."""

_SCENARIO_ODDS = 0.8
"""The chance a one-request draft is written as a scenario task (a simulated user who must be asked who they are,
or to confirm a change: :mod:`.scenario`)."""

_MAX_REFUSALS = 2
"""Policy refusals a part gets at most: the other policy tasks (a confirmation, asking who is calling) and the
families that act make up the rest."""


_KIND_FAMILIES = {
    "decline": ("policy_refusal",),
    "read": ("read_question", "count_question", "catalog_choice"),
    "missing_parameter": ("missing_identity",),
    "execute": ("take_next", "add_to_container", "hold_resource", "free_resource", "move_record", "transfer_amount"),
    "read_then_write": ("write_goal", "add_line", "catalog_goal"),
}
"""The families whose one-request drafts are tasks of each kind: what ``require`` draws first."""

_REQUIRED_TRIES = 4
"""Drafts asked of each family (of each part) for a required kind before the writer gives up on that kind."""


def write_tasks(world: World, sim: Simulator, pools: list[Pools], rng: random.Random, n: int,
                require: dict[str, int] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Up to ``n`` tasks over ``world`` and each one's family (see the module docstring). ``pools``: one per
    part of a composed world (one in all otherwise). ``require`` (a skill's least task counts by kind, e.g.
    ``{"decline": 2}``): tasks of those kinds are drafted first, each as one request (a session or a scenario could
    change its kind), as far as the world's structure lets its families write them; the rest as usual."""
    writer = Writer(world, sim, rng)
    parts = world.parts or [world]
    fams = [Families(writer, pool, part if world.parts else None) for part, pool in zip(parts, pools, strict=True)]
    tasks: list[dict[str, Any]] = []
    names: list[str] = []
    seen: set[str] = set()
    refusals = {id(f): 0 for f in fams}
    for kind, least in (require or {}).items():
        _draft_kind(kind, least, fams, writer, n, tasks, names, seen, refusals)
    withheld = False  # a world gets at most one task that withholds a tool
    attempts = 0
    while len(tasks) < n and attempts < 3 * len(_PLAN):
        name = _PLAN[attempts % len(_PLAN)]
        fam = fams[attempts % len(fams)]
        attempts += 1
        if (name == "policy_refusal" and refusals[id(fam)] >= _MAX_REFUSALS) or (name == "withheld_tool" and withheld):
            continue
        draft: Draft | None = getattr(fam, name)()
        if draft is not None and len(fams) > 1 and attempts % 3 == 0:
            other = fams[attempts % len(fams)]
            second = other.write_goal() if other is not fam else None
            draft = join_drafts(draft, second, fam) if second is not None and not other.self_service else draft
        if draft is None:
            continue
        text = draft.turns[0].say
        if text in seen:
            continue
        task = None
        if name == "missing_identity" and fam.rng.random() < _SCENARIO_ODDS:  # the scenario form: asked, not told
            plain = fam.write_goal()
            task = scenario_task(plain, fam, writer, len(tasks)) if plain is not None and scenario_ready(plain) \
                else None
            if task is not None and task["scenario"]["facts"] and plain is not None:
                seen.add(text)
                tasks.append(task)
                names.append("scenario_missing_identity")
                continue
            task = None
        if scenario_ready(draft) and fam.rng.random() < _SCENARIO_ODDS:
            task = scenario_task(draft, fam, writer, len(tasks))
            if task is not None:
                seen.add(text)
                tasks.append(task)
                names.append(f"scenario_{name}")
                continue
        joined = session(draft, fam)
        if joined is not draft:
            task = writer.finish(confirmed(joined, fam), len(tasks))
        if task is None:
            task = writer.finish(confirmed(draft, fam), len(tasks))
        if task is None:
            continue
        seen.add(text)
        refusals[id(fam)] += name == "policy_refusal"
        withheld = withheld or name == "withheld_tool"
        tasks.append(task)
        names.append(draft.family if draft.family.startswith("cross") else name)
    return tasks, names


def _draft_kind(kind: str, least: int, fams: list[Families], writer: Writer, n: int, tasks: list[dict[str, Any]],
                names: list[str], seen: set[str], refusals: dict[int, int]) -> None:
    """Tasks of ``kind`` until ``tasks`` holds ``least`` of them (or ``n`` tasks, or the kind's families write no
    more), each one request of a family of :data:`_KIND_FAMILIES`; appended in place (``write_tasks``'s
    ``require``)."""
    for name, fam in [(name, fam) for _ in range(_REQUIRED_TRIES) for name in _KIND_FAMILIES.get(kind, ())
                      for fam in fams]:
        if sum(t["kind"] == kind for t in tasks) >= least or len(tasks) >= n:
            return
        if name == "policy_refusal" and refusals[id(fam)] >= _MAX_REFUSALS:
            continue
        draft: Draft | None = getattr(fam, name)()
        if draft is None or draft.kind != kind or draft.turns[0].say in seen:
            continue
        task = writer.finish(confirmed(draft, fam), len(tasks))
        if task is None or task["kind"] != kind:
            continue
        seen.add(draft.turns[0].say)
        refusals[id(fam)] += name == "policy_refusal"
        tasks.append(task)
        names.append(name)


def session(first: Draft, fam: Families) -> Draft:
    """``first`` followed by up to two more requests of the same speaker (module docstring): the same person,
    or a member of staff; ``first`` itself when no further request fits."""
    if first.kind == "missing_parameter" or first.family.startswith("cross"):
        return first
    owner = fam.w.row(fam.scope_ent, first.scope) if fam.scope_ent is not None and first.scope is not None else None
    if owner is None and not first.staff:
        return first
    names = _SESSION if owner is not None else _STAFF_SESSION
    draft = first
    for odds in _SESSION_ODDS:
        if fam.rng.random() >= odds:
            break
        after = fam.w.after([c for t in draft.turns for c in t.calls])
        if after is None:
            break
        main, fam.w, fam.pin = fam.w, after, owner
        try:
            nxt = None
            for name in fam.rng.sample(names, k=len(names)):
                cand = getattr(fam, name)()
                if cand is not None and cand.turns[0].body and cand.kind != "missing_parameter" and \
                        _same_speaker(first, cand, fam):
                    nxt = cand
                    break
        finally:
            fam.w, fam.pin = main, None
        if nxt is None:
            break
        draft = _append(draft, nxt, fam)
    return draft


def _same_speaker(first: Draft, cand: Draft, fam: Families) -> bool:
    """Whether ``cand`` is asked by whoever asked ``first``: the same scope record's owner, or staff (who ask about
    any record, also of a scope whose owners do not ask themselves)."""
    if first.scope is not None:
        return cand.scope == first.scope
    return cand.staff or (cand.scope is not None and not fam.self_service)


def _append(draft: Draft, nxt: Draft, fam: Families) -> Draft:
    """``nxt`` asked after ``draft`` in one conversation: its opener becomes "Also, ...", and the reads the
    conversation already made (finding the person, the record) leave its reference: the agent has their results."""
    done = [c for t in draft.turns for c in t.calls]
    reads = {o.name for o in fam.world.ops if not o.writes}
    people = {e.name for e in (fam.person, fam.scope_ent) if e is not None}
    finds = {o.name for o in fam.world.ops if o.kind in ("search", "lookup") and o.entity.name in people}
    found = fam.self_service and any(c["name"] in finds for c in done)  # the speaker was found: not again
    head = nxt.turns[0]
    calls = [c for c in head.calls if not ((c["name"] in reads and c in done) or (found and c["name"] in finds))]
    body = head.body
    say = also(fam.rng) + body[:1].lower() + body[1:] if not body.startswith(("I ", "I'")) \
        else also(fam.rng) + body
    turns = [*draft.turns, DraftTurn(say, calls, kind=head.kind, answers=head.answers, forbid=head.forbid,
                                     body=body), *nxt.turns[1:]]
    kinds = {t.kind for t in turns}
    kind = "read_then_write" if "write" in kinds else "read" if any(t.answers for t in turns) else "decline"
    return Draft(kind, f"session_{draft.family}"[:40] if not draft.family.startswith("session") else draft.family,
                 turns, hops=max(draft.hops, nxt.hops), choose=draft.choose or nxt.choose,
                 rules=draft.rules + [r for r in nxt.rules if r not in draft.rules], scope=draft.scope,
                 staff=draft.staff, withheld=draft.withheld + nxt.withheld)


def confirmed(draft: Draft, fam: Families) -> Draft:
    """The draft with every change a policy rule wants confirmed asked first: the turn that asks for it changes
    nothing (the agent states the change and waits), and a "yes" turn makes it. Every family goes through this,
    so an agent that follows the confirmation rules passes every task."""
    turns: list[DraftTurn] = []
    rules = list(draft.rules)
    for i, t in enumerate(draft.turns):
        needs = [c for c in t.calls if fam.confirm_rules_by_name(c["name"])]
        asked = i > 0 and draft.turns[i - 1].kind == "ask"
        if t.kind != "write" or not needs or asked:
            turns.append(t)
            continue
        first = t.calls.index(needs[0])
        turns.append(DraftTurn(t.say, t.calls[:first], kind="ask", forbid=[c["name"] for c in needs], reveal=t.reveal))
        turns.append(DraftTurn(fam.w.voice(None).yes(), t.calls[first:], answers=t.answers))
        rules += [r for c in needs for r in fam.confirm_rules_by_name(c["name"]) if r not in rules]
    if len(turns) == len(draft.turns):
        return draft
    return Draft(draft.kind if draft.kind != "execute" else "read_then_write", draft.family, turns, draft.hops,
                 draft.choose, rules, withheld=draft.withheld)


def join_drafts(first: Draft, second: Draft, fam: Families) -> Draft | None:
    """One conversation with a request to one service, then one to another (a composed world's task)."""
    if first.kind in ("decline", "missing_parameter") or second.kind != "read_then_write" or not second.turns[0].body:
        return first  # (only a staff member's request joins another: a customer's is about their own account)
    also = fam.rng.choice(["Also, ", "One more thing: ", "While I have you, ", "Oh, and "])
    body = second.turns[0].body or second.turns[0].say
    turns = [*first.turns, DraftTurn(also + body[:1].lower() + body[1:], second.turns[0].calls),
             *second.turns[1:]]
    return Draft("read_then_write", f"cross_{first.family}"[:40], turns, hops=max(first.hops, second.hops),
                 choose=first.choose or second.choose, rules=first.rules + second.rules,
                 withheld=first.withheld + second.withheld)

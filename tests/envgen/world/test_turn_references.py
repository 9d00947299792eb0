"""Each turn's reference holds the calls that turn needs: a turn that declines or asks back keeps the reads that
find out it must (whose record, in which state), and the turn after it does not carry them. Checked over a library
of 40 generated worlds, running every reference on the world's own simulator."""

from __future__ import annotations

from typing import Any

from envgen.world.sim import Simulator
from gym_envs.spec import EnvSpec
from tests.envgen.world.library40 import library40


def _strings(value: Any, out: set[str]) -> set[str]:
    """The strings of 3 characters or more in a JSON value (keys, titles, emails: what names a record), lowercased."""
    if isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)
    elif isinstance(value, str) and len(value) >= 3:
        out.add(value.lower())
    return out


def unneeded_reads(spec: EnvSpec) -> list[str]:
    """The reference reads no part of their own turn needs.

    A read ``c`` of a turn is needed when:

    * the user named what it reads in this turn (an argument is in the instruction, or in the facts the simulated
      user gives);
    * a later call of the turn goes on with what it read (shares an argument with it), or takes a value that ``c``
      found (in its result, not in its arguments);
    * the turn's answer is in its result;
    * or it is the last call of a turn that changes nothing: the record the agent answers from, or judges before
      it declines or asks back;
    * or it reads the next page of a listing the turn read (the same search or lookup at the ``offset`` the page
      before gave as ``next_offset``, or a lookup's ``<table>_next_offset``): a choice among the records needs all
      of them.
    """
    out: list[str] = []
    sim = Simulator(spec)
    try:
        for task in spec.tasks:
            run = sim.run()
            facts = " ".join(task.scenario.facts.values()) if task.scenario is not None else ""
            for ti, turn in enumerate(task.turns):
                calls = turn.calls()
                results = run.calls([{"name": c.name, "arguments": dict(c.arguments)} for c in calls])
                said = f"{turn.instruction} {facts}".lower()
                answers = [a.lower() for c in turn.checks for a in c.answers()]
                quiet = not any(r.changes for r in results)
                for k, (call, res) in enumerate(zip(calls, results, strict=True)):
                    if res.changes:
                        continue
                    args = _strings(dict(call.arguments), set())
                    later = set().union(*(_strings(dict(c.arguments), set()) for c in calls[k + 1:]))
                    found = _strings(res.result, set()) - args
                    page = dict(call.arguments).get("offset")
                    continues = page is not None and any(
                        p.name == call.name and isinstance(r.result, dict)
                        and page in {v for f, v in r.result.items() if f == "next_offset" or f.endswith("_next_offset")}
                        and {k: v for k, v in dict(p.arguments).items() if k != "offset"}
                        == {k: v for k, v in dict(call.arguments).items() if k != "offset"}
                        for p, r in zip(calls[:k], results[:k], strict=True))
                    if not (continues or any(a in said for a in args) or args & later or found & later
                            or any(a in f for a in answers for f in found) or (quiet and k == len(calls) - 1)):
                        out.append(f"{spec.id} {task.id} turn {ti + 1}: {call.name}({dict(call.arguments)})")
            run.close()
    finally:
        sim.close()
    return out


def test_every_turns_reference_reads_only_what_that_turn_needs() -> None:
    found = [r for built in library40() for r in unneeded_reads(built.spec)]
    assert not found, f"{len(found)} reads no part of their turn needs, e.g. {found[:6]}"


def test_a_turn_that_declines_or_asks_keeps_its_reads_and_changes_nothing() -> None:
    """The reads that find out a request must be declined (or a yes asked for first) are that turn's; a turn that
    says so is marked, changes nothing and has no answer to give."""
    marked = kept = 0
    for built in library40():
        for task in built.spec.tasks:
            for turn in task.turns:
                if turn.expects is None:
                    continue
                marked += 1
                kept += bool(turn.calls())
                assert turn.expects in ("ask", "decline")
                assert any(c.kind == "unchanged" and not c.tables for c in turn.checks), (built.spec.id, task.id)
                assert not any(c.answers() for c in turn.checks), (built.spec.id, task.id)
    assert marked >= 40 and kept >= marked // 2, (marked, kept)

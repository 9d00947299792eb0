"""Tools a task withholds at its start and reveals at a later turn (spec_version 2; BFCL's ``miss_func``).

A task's ``withheld_tools`` are not offered when it begins; a turn whose ``reveal_tools`` names one offers it
from that turn on (gym_envs/ENVSPEC.md, "Tools offered later"). What every front end shares of it lives here:

* :func:`availability_problems`: the validation rules (:class:`~gym_envs.spec.EnvSpec` reports them with the
  spec's other cross-references): each name a tool of the spec, withheld once and revealed exactly once by a
  turn after the first, and no reference call or required call of a tool before the turn that reveals it;
* :func:`revealed_text`: what the turn that reveals tools adds to its instruction, their JSON Schemas (the
  form the system prompt lists tools in), so a policy that reads tools from the chat sees them as they come;
  :class:`~gym_envs.env.ToolEnv` and the BFCL suite write it alike.

The runtime offers only the tools available at each turn (the system prompt, ``info["tools"]``, the engine's
tool list) and answers a call of a withheld tool exactly as a call of a name no tool has
(:func:`gym_envs.errors.unknown_tool_message`): a policy cannot tell a tool withheld from one that does not
exist. Plain functions over duck-typed tasks: this module imports nothing of the spec's.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from corpora.errors import did_you_mean

__all__ = ["REVEALED_HEADER", "availability_problems", "revealed_text"]

REVEALED_HEADER = "New tools (JSON Schema of each):"
"""The line that opens the text of :func:`revealed_text`."""


def revealed_text(tools: Sequence[Mapping[str, Any]]) -> str:
    """The text a turn that reveals ``tools`` (``{"name", "description", "parameters"}`` dicts) adds to its
    instruction: a blank line, :data:`REVEALED_HEADER`, then one JSON line per tool; ``""`` for none."""
    if not tools:
        return ""
    return f"\n\n{REVEALED_HEADER}\n" + "\n".join(json.dumps(dict(t), ensure_ascii=False) for t in tools)


def availability_problems(where: str, task: Any, known: Collection[str]) -> list[str]:
    """What is wrong with the withheld and revealed tools of ``task`` (at location ``where``, e.g.
    ``tasks[2]``; ``known``: the spec's tool names), each problem saying what to fix."""
    withheld = list(task.withheld_tools)
    reveals = [list(t.reveal_tools) for t in task.turns]
    if not withheld and not any(reveals):
        return []
    out = [f"{where}.withheld_tools: unknown tool {n!r}{did_you_mean(n, known)}" for n in withheld if n not in known]
    out += [f"{where}.withheld_tools: {n!r} is listed more than once" for n in sorted(set(withheld))
            if withheld.count(n) > 1]
    revealed_by: dict[str, int] = {}
    for ui, names in enumerate(reveals):
        at = f"{where}.turns[{ui}].reveal_tools"
        for n in names:
            if n not in known:
                out.append(f"{at}: unknown tool {n!r}{did_you_mean(n, known)}")
            elif n not in withheld:
                out.append(f"{at}: {n!r} is revealed but never withheld: add it to {where}.withheld_tools, or "
                           "drop it here (a tool not withheld is offered from the first turn)")
            elif n in revealed_by:
                out.append(f"{at}: {n!r} is revealed again ({where}.turns[{revealed_by[n]}] revealed it already); "
                           "reveal each withheld tool once")
            elif ui == 0:
                out.append(f"{at}: the first turn cannot reveal {n!r} (a tool offered as the task begins is not "
                           f"withheld): drop it from {where}.withheld_tools and from here, or reveal it later")
                revealed_by[n] = ui
            else:
                revealed_by[n] = ui
    out += [f"{where}.withheld_tools: {n!r} is withheld but never revealed: name it in the reveal_tools of the "
            "turn that offers it" for n in dict.fromkeys(withheld) if n in known and n not in revealed_by]
    for ui, turn in enumerate(task.turns):
        early = {n: at for n, at in revealed_by.items() if at > ui}
        for ci, item in enumerate(turn.reference):
            name = getattr(item, "name", None)  # a tool call (a reference's ``say`` item names no tool)
            if name in early:
                out.append(f"{where}.turns[{ui}].reference[{ci}]: calls {name!r}, which is withheld until "
                           f"{where}.turns[{early[name]}] (its reveal_tools): move the call to that turn or "
                           "a later one, or reveal the tool earlier")
        for ki, check in enumerate(turn.checks):
            required = [n for i in getattr(check, "require", None) or [] if (n := getattr(i, "name", i)) in early]
            if required:
                out.append(f"{where}.turns[{ui}].checks[{ki}]: requires {required}, withheld at this turn (no "
                           "call of a withheld tool succeeds): require them from the turn that reveals them")
    return out

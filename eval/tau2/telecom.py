"""τ²'s telecom domain: why it is not converted, measured from τ²'s own code and data.

Role: ``tau2:telecom`` cannot be a spec yet, and :func:`telecom_status` says why with the figures that decide it,
read from the installed package: every task is scored by assertions (``ENV_ASSERTION``) on the state of a
simulated phone and of the agent's database, most gold actions are the *user's* (toggling airplane mode,
reseating the SIM, running a speed test: the user's own tools, which a user simulator with tools would call),
and τ²'s environment re-syncs the phone and the database after every call. The suite raises a ``ValueError``
with :func:`status_text`, and the agreement report lists the status in place of figures.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from eval.tau2 import _backend

__all__ = ["status_text", "telecom_status"]


def telecom_status() -> dict[str, Any]:
    """The figures of τ²'s telecom domain that decide whether it converts (its ``base`` split)."""
    tasks = _backend.tasks("telecom")
    basis: Counter[str] = Counter()
    requestors: Counter[str] = Counter()
    assertions: Counter[str] = Counter()
    needs_user = 0
    for t in tasks:
        ec = t.evaluation_criteria
        basis["+".join(sorted(str(getattr(b, "value", b)) for b in ec.reward_basis))] += 1
        actions = ec.actions or []
        requestors.update(a.requestor for a in actions)
        needs_user += any(a.requestor == "user" for a in actions)
        assertions.update(a.func_name for a in ec.env_assertions or [])
    return {
        "converted": False, "tasks": len(tasks), "reward_basis": dict(basis),
        "tasks_needing_user_tools": needs_user, "gold_actions": dict(requestors),
        "agent_tools": len(_backend.tool_schemas("telecom")),
        "user_tools": len(_backend.tool_schemas("telecom", user=True)), "assertions": dict(assertions),
    }


def status_text(status: dict[str, Any] | None = None) -> str:
    """:func:`telecom_status` in a sentence."""
    s = status or telecom_status()
    user, agent = s["gold_actions"].get("user", 0), s["gold_actions"].get("assistant", 0)
    basis = ", ".join(f"{k}: {v}" for k, v in s["reward_basis"].items())
    return (f"τ² telecom is not converted: all {s['tasks']} tasks are scored by assertions that read a simulated "
            f"phone ({basis}), which needs the phone's simulation ported (its state, and τ²'s re-sync of phone and "
            f"database after every call), and {s['tasks_needing_user_tools']} of them need the user to act with the "
            f"phone's {s['user_tools']} tools ({user} of the {user + agent} gold actions are the user's), which "
            f"needs a simulated user with tools; specs have neither yet (the agent has {s['agent_tools']} tools)")

"""What the scripted user adds to an episode's environment time (part of ``envwright bench runtime``).

Role: :func:`bench_users` plays the reference episodes of a shipped example's scenario tasks (the ``say`` items go to
the task's user, gym_envs/ENVSPEC.md "A turn with a user") twice, interleaved by round as every mode of the runtime
bench is: with the :class:`~gym_envs.users.ScriptedUser` (``ToolEnv``'s default), and with :class:`RecordedUser`,
which answers each message with what the scripted user answered it, looked up in a dict, so the conversation, the
calls and the checks are the same and only the simulator's own work (its sentence splitting, fact and confirmation
rules, and building its context) differs. Both executors; per episode: the median environment time, the extra time
and the ratio paired by round, and the scripted user's replies. The runtime bench's ``scripted_user_ratio`` target
(issue 35: at most 10% more environment time) reads the worker's ratio, the executor every mode that pays a
reward runs generated specs on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gym_envs.env import ToolEnv
from gym_envs.examples import load_example
from gym_envs.sandbox import Executor
from gym_envs.spec import Say, Task
from gym_envs.users import END_TURN, ScriptedUser, UserContext, UserReply, UserSimulator

__all__ = ["RecordedUser", "bench_users"]


class RecordedUser(UserSimulator):
    """Answers a message with the reply recorded for it (a dict lookup): the scripted user's conversation at no
    simulator cost."""

    label = "recorded"

    def __init__(self, replies: dict[str, UserReply]):
        self.replies = replies

    def reply(self, context: UserContext) -> UserReply:
        return self.replies.get(context.message, END_TURN)


def _plan(task: Task) -> list[list[dict[str, Any]]]:
    """Per turn, the reference's actions and then the oracle's reply, as ToolEnv actions."""
    from envgen.gate.replies import oracle_reply

    out = []
    for turn in task.turns:
        actions = [{"content": a.say, "tool_calls": []} if isinstance(a, Say) else
                   {"content": "", "tool_calls": [c.model_dump() for c in a]} for a in turn.plan()]
        out.append([*actions, {"content": oracle_reply(turn), "tool_calls": []}])
    return out


def bench_users(n: int, rounds: int, executors: dict[str, Executor], *, example: str = "shop-support",
                interleaved: Callable[..., dict[str, dict[str, Any]]],
                paired: Callable[[dict[str, Any], dict[str, Any]], tuple[float, float]]) -> dict[str, Any]:
    """The scripted user's share of a scenario episode's environment time (module docstring); ``interleaved`` and
    ``paired`` are the runtime bench's own timing helpers."""
    spec = load_example(example)
    tasks = [t for t in spec.tasks if t.scenario is not None]
    if not tasks:
        raise ValueError(f"example {example!r} has no scenario task")
    plans = {t.id: _plan(t) for t in tasks}
    scripted = ScriptedUser()
    recorded: dict[str, UserReply] = {}
    for t in tasks:  # what the scripted user answers each message of the references, recorded once
        assert t.scenario is not None
        for turn in plans[t.id]:
            for action in turn:
                if not action["tool_calls"]:
                    recorded[action["content"]] = scripted.reply(UserContext(t.scenario, 0, "", action["content"]))
    replies = sum(not r.ends_turn for r in recorded.values())

    def player(env: ToolEnv) -> Callable[[int], None]:
        def run(i: int) -> None:
            for t in tasks:
                env.reset(options={"task": t.id, "episode_seed": i})
                for turn in plans[t.id]:
                    for action in turn:
                        env.step(action)
        return run

    envs = {f"{mode}{'-recorded' if rec else ''}": ToolEnv(spec, executor=ex, user=RecordedUser(recorded) if rec
                                                          else scripted)
            for mode, ex in executors.items() for rec in (False, True)}
    try:
        timed = interleaved({name: (player(env), len(tasks)) for name, env in envs.items()}, max(1, n) * len(tasks),
                            rounds, warmup=3)
    finally:
        for env in envs.values():
            env.close()
    out: dict[str, Any] = {"example": example, "tasks": len(tasks), "user_replies_per_episode": replies / len(tasks),
                           "actions_per_episode": sum(len(a) for p in plans.values() for a in p) / len(tasks)}
    for mode in executors:
        ratio, extra = paired(timed[mode], timed[f"{mode}-recorded"])
        out[mode] = {"episode_us": timed[mode]["median_us"],
                     "recorded_episode_us": timed[f"{mode}-recorded"]["median_us"], "extra_us": extra, "ratio": ratio}
    return out

"""``bfcl:base|miss_func|miss_param|long_context``: BFCL v4 multi-turn categories as a suite.

Each entry's episode steps a :class:`BfclEnv`: BFCL's own backends (:class:`eval.bfcl.BfclEpisode`), scored
by its per-turn checker semantics (final state and execution results); needs ``pip install --no-deps
bfcl-eval mpmath``. An episode whose turn exceeds ``max_turn_steps`` is stopped (BFCL's force-termination:
the episode is truncated and later turns fail).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from corpora.errors import did_you_mean
from eval.suites.base import MAX_RESULT_CHARS, Suite
from gym_envs.availability import revealed_text
from gym_envs.env import tool_system_prompt
from gym_envs.episode import Episode, TaskRef
from gym_envs.episode_env import EpisodeEnv, Opening, Outcome
from gym_envs.parsing import parse_action

__all__ = ["BFCL_VARIANTS", "BfclEnv", "BfclOptions", "BfclSuite"]

BFCL_VARIANTS = {"base": "multi_turn_base", "miss_func": "multi_turn_miss_func",
                 "miss_param": "multi_turn_miss_param", "long_context": "multi_turn_long_context"}
_BFCL_ORACLE_REPLIES = {"ask": "Some information is missing: could you tell me the exact value to use?",
                        "decline": "I cannot do that: none of the available functions can do it."}


def _bfcl_tags(entry: Any) -> list[dict[str, Any]]:
    tags: list[dict[str, Any]] = []
    for t in range(entry.num_turns):
        tag: dict[str, Any] = {}
        nxt = entry.ground_truth[t + 1] if t + 1 < entry.num_turns else []
        if not entry.ground_truth[t] and nxt:
            names = sorted({c.split("(", 1)[0].strip() for c in nxt})
            if entry.category == "multi_turn_miss_param":
                tag = {"role": "ask", "write_tools": names}
            elif entry.category == "multi_turn_miss_func":
                tag = {"role": "decline", "write_tools": sorted(set(names) | entry.withheld_at(t))}
        withheld = sorted(entry.withheld_at(t))
        if withheld:
            tag["withheld"] = withheld
        tags.append(tag)
    return tags


class BfclEnv(EpisodeEnv):
    """A BFCL multi-turn entry as the engine steps it, played through :class:`eval.bfcl.BfclEpisode`.

    A turn's tools are those BFCL offers then; functions revealed later (``miss_func``) are shown in the
    instruction of the turn that reveals them. A plain message ends the turn; the last turn, or a turn of more
    than ``max_turn_steps`` actions (BFCL's force-termination: truncated), ends the episode.
    """

    def __init__(self, entry: Any, *, max_turn_steps: int):
        self.entry = entry
        self.max_turn_steps = max_turn_steps
        self.tags = _bfcl_tags(entry)
        self._ep: Any = None
        self._turns: list[dict[str, Any]] = []
        self._offered: set[str] = set()
        self._final: Any = None
        self._steps_in_turn = 0

    def _tools(self) -> list[dict[str, Any]]:
        return [{"type": "function", "function": t} for t in self._ep.tools_for_turn()]

    def _open_turn(self) -> str:
        messages = self._ep.begin_turn()
        tools = self._ep.tools_for_turn()
        new = [t for t in tools if t["name"] not in self._offered]
        self._offered |= {t["name"] for t in tools}
        text = "\n".join(m.get("content", "") for m in messages)
        if new and self._turns:  # withheld functions revealed: shown as ToolEnv shows a spec's revealed tools
            text += revealed_text(new)
        self._turns.append({"index": len(self._turns), "instruction": text, "calls": [], "reply": "",
                            "tags": self.tags[len(self._turns)]})
        self._steps_in_turn = 0
        return text

    def reset(self, seed: int) -> Opening:
        from eval.bfcl import BfclEpisode

        self._ep = BfclEpisode(self.entry)
        tools = self._ep.tools_for_turn(0)
        classes = ", ".join(self.entry.involved_classes)
        system = tool_system_prompt(f"the tools of {classes}", "Help the user with their requests.", tools)
        instruction = self._open_turn()
        return Opening(system, instruction, [{"type": "function", "function": t} for t in tools])

    def step(self, action: Any) -> Outcome:
        parsed = parse_action(action)
        turn = self._turns[-1]
        self._steps_in_turn += 1
        if parsed.is_message:
            turn["reply"] = parsed.content
            self._ep.end_turn()
            if self._ep.done:
                self._finish()
                return Outcome(turn_ended=True, terminated=True)
            instruction = self._open_turn()
            return Outcome(turn_ended=True, instruction=instruction, tools=self._tools())
        results, contents = [], []
        for c in parsed.calls:
            text = self._ep.call(c["name"], c["arguments"])
            short = text if len(text) <= MAX_RESULT_CHARS else text[:MAX_RESULT_CHARS] + "..."
            rec = {"name": c["name"], "arguments": c["arguments"], "ok": not text.startswith("Error during execution"),
                   "result": short, "changes": None}
            turn["calls"].append(rec)
            results.append(rec)
            contents.append(text)
        if self._steps_in_turn >= self.max_turn_steps:  # BFCL force-terminates the entry
            self._ep.end_turn()
            self._finish()
            return Outcome(results, contents, list(parsed.errors), turn_ended=True, truncated=True)
        return Outcome(results, contents, list(parsed.errors))

    def _finish(self) -> None:
        self._final = self._ep.score()
        self._ep.close()

    def _scored(self) -> Any:
        if self._final is None and self._ep is not None:
            self._final = self._ep.score()
        return self._final

    def score(self) -> dict[str, float]:
        final = self._scored()
        if final is None:
            return {"episode": 0.0, "turns": 0.0, "checks": 0.0}
        rate = final.turn_pass_rate
        return {"episode": 1.0 if final.valid else 0.0, "turns": rate, "checks": rate}

    def turn_records(self) -> list[dict[str, Any]]:
        final = self._scored()
        verdicts = final.turns if final is not None else []
        out = []
        for i, v in enumerate(verdicts):
            rec = self._turns[i] if i < len(self._turns) else {
                "index": i, "instruction": "", "calls": [], "reply": "", "tags": self.tags[i]}
            check = {"index": 0, "kind": "bfcl", "passed": v.passed,
                     "detail": v.reason if v.error_type is None else f"{v.error_type}: {v.reason}"}
            out.append({**rec, "passed": v.passed, "scored": i < len(self._turns), "checks": [check],
                        "error_type": v.error_type})
        return out

    def close(self) -> None:
        if self._ep is not None:
            self._ep.close()


@dataclass(kw_only=True)
class BfclOptions:
    """Options of the ``bfcl:VARIANT`` suite."""

    limit: int | None = None  #: load only the first N entries (the runner's --limit)


class BfclSuite(Suite):
    """``bfcl:VARIANT``: one BFCL v4 multi-turn category."""

    Options = BfclOptions

    @classmethod
    def from_spec(cls, arg: str, options: Any) -> BfclSuite:
        return cls(arg or "base", **vars(options))

    def __init__(self, variant: str = "base", *, limit: int | None = None):
        from eval.bfcl import load_entries

        if variant not in BFCL_VARIANTS:
            raise ValueError(f"unknown BFCL variant {variant!r}{did_you_mean(variant, BFCL_VARIANTS, n=1)} "
                             f"(known: {', '.join(BFCL_VARIANTS)})")
        self.variant = variant
        self.name = f"bfcl:{variant}"
        self.category = BFCL_VARIANTS[variant]
        self.entries = {e.id: e for e in load_entries(self.category, limit=limit)}
        self._refs: dict[str, list[list[Any]]] = {}

    def _reference(self, entry_id: str) -> list[list[Any]]:
        if entry_id not in self._refs:
            from eval.bfcl import reference_trajectory

            self._refs[entry_id] = reference_trajectory(self.entries[entry_id])
        return self._refs[entry_id]

    def _oracle(self, entry: Any) -> Callable[[int], tuple[list[dict[str, Any]], str]]:
        tags = _bfcl_tags(entry)

        def reference_turn(turn: int) -> tuple[list[dict[str, Any]], str]:
            calls = self._reference(entry.id)[turn]
            reply = _BFCL_ORACLE_REPLIES.get(str(tags[turn].get("role")), "Done.")
            return [{"name": c.name, "arguments": dict(c.arguments)} for c in calls], reply

        return reference_turn

    def tasks(self) -> list[TaskRef]:
        return [TaskRef(task_id=e.id, suite=self.name, env_id=self.category, kind=self.variant, n_turns=e.num_turns,
                        meta={"involved_classes": list(e.involved_classes)}) for e in self.entries.values()]

    def episode(self, task: TaskRef, *, trial: int, seed: int, max_turn_steps: int = 20) -> Episode:
        if max_turn_steps < 1:
            raise ValueError("max_turn_steps must be >= 1")
        entry = self.entries[task.task_id]
        return Episode(task, lambda: BfclEnv(entry, max_turn_steps=max_turn_steps), trial=trial, seed=seed,
                       oracle=self._oracle(entry), max_actions=max_turn_steps * task.n_turns + 1)

    def tool_docs(self) -> list[dict[str, Any]]:
        seen: dict[str, dict[str, Any]] = {}
        for e in self.entries.values():
            for f in e.functions:
                seen.setdefault(f["name"], {"env_id": ",".join(e.involved_classes), **f})
        return list(seen.values())

    def task_texts(self) -> list[tuple[str, str]]:
        out = []
        for e in self.entries.values():
            texts = [m.get("content", "") for i, turn in enumerate(e.turns) if not e.is_holdout_turn(i)
                     for m in turn]
            out.append((f"{self.name}/{e.id}", "\n".join(texts)))
        return out

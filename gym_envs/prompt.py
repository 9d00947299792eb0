"""The solver's system prompt: what a model is told about an environment, its policy and the tools it may call.

Role: every place that shows an environment to a model (``ToolEnv``'s ``info["system_prompt"]``, the episode
engine, the TRL adapter's bench, the dataset export) and suites whose tools are not a spec's (BFCL) build it here,
so every policy sees one prompt format. :mod:`gym_envs.env` re-exports both functions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from gym_envs.spec import EnvSpec, Task

__all__ = ["system_prompt", "tool_system_prompt"]


def system_prompt(spec: EnvSpec, task: Task | None = None) -> str:
    """The solver's system prompt: what the system is, its policy (numbered) and how to call its tools (with
    ``task``, the tools it offers as it begins: not those it withholds)."""
    description = spec.description
    if spec.policy:
        description += "\n\nPolicy:\n" + "\n".join(f"{i}. {r.text}" for i, r in enumerate(spec.policy, 1))
    return tool_system_prompt(spec.title, description, [t["function"] for t in spec.openai_tools(task)])


def tool_system_prompt(title: str, description: str, tools: Sequence[Mapping[str, Any]]) -> str:
    """The solver's system prompt for any tool list (``{"name", "description", "parameters"}`` dicts).

    :func:`system_prompt` is this for a spec; suites whose tools are not a spec's (BFCL) use it directly,
    so every policy sees one prompt format.
    """
    lines = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
    return (
        f"You are an assistant operating {title}. {description}\n\n"
        "You can call these tools (JSON Schema of each):\n"
        f"{lines}\n\n"
        "To call a tool, reply with one or more blocks\n"
        '<tool_call>{"name": TOOL, "arguments": {...}}</tool_call>\n'
        "and nothing else. You will see each result. When the request is done, or if you need "
        "information from the user, or if it cannot be done with these tools, reply with a plain "
        "message (no tool call); that ends your turn."
    )

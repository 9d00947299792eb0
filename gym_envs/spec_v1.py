"""What a spec_version 1 document holds: the fields only version 2 has, and a version 1 spec's dump without them.

Role: the one list of version 2 fields (:data:`V2_FIELDS`, by model; each check kind narrows its own with
:meth:`~gym_envs.checks.BaseCheck.version_1_schema`). :mod:`gym_envs.spec_schema` leaves them out of the version 1
JSON Schema, and :meth:`gym_envs.spec.EnvSpec.to_json` out of what it writes of a version 1 spec
(:func:`version_1_document`), so what this project writes is valid under the schema it publishes.
"""

from __future__ import annotations

import functools
from typing import Any

from gym_envs.checks import kind_names

__all__ = ["V2_FIELDS", "version_1_document"]

#: what only spec_version 2 has, by model (each check kind narrows its own:
#: :meth:`~gym_envs.checks.BaseCheck.version_1_schema`): the version 1 JSON Schema leaves them out
#: (:mod:`gym_envs.spec_schema`), and so does what this project writes of a version 1 spec
V2_FIELDS = {"EnvSpec": ("policy", "failed_calls"), "Task": ("policy", "setup_sql", "scenario", "withheld_tools"),
             "Turn": ("reveal_tools", "expects")}


@functools.cache
def _version_1_check_fields(kind: str) -> frozenset[str]:
    """The fields a version 1 document's check of ``kind`` may hold (its schema narrowed to version 1)."""
    from gym_envs.checks import check_kind

    cls = check_kind(kind)
    schema = cls.model_json_schema()
    cls.version_1_schema(schema)
    return frozenset(schema.get("properties", {}))


def version_1_document(doc: dict[str, Any]) -> dict[str, Any]:
    """A spec_version 1 document (a JSON dump of an :class:`EnvSpec`) without the version 2 fields the dump writes at
    their defaults (``policy: []``, ``failed_calls``, a ``calls`` check's ``ordered``, a reply check's ``scope``):
    what the version 1 schema admits, so a version 1 reader takes what this project writes of a version 1 spec."""
    def drop(d: dict[str, Any], model: str) -> dict[str, Any]:
        return {k: v for k, v in d.items() if k not in V2_FIELDS[model]}

    out = drop(doc, "EnvSpec")
    tasks = []
    for task in out.get("tasks", []):
        task = drop(task, "Task")
        turns = []
        for turn in task.get("turns", []):
            turn = drop(turn, "Turn")
            turn["checks"] = [{k: v for k, v in c.items() if k in _version_1_check_fields(c.get("kind", ""))}
                              if c.get("kind") in kind_names(1) else c for c in turn.get("checks", [])]
            turns.append(turn)
        task["turns"] = turns
        tasks.append(task)
    out["tasks"] = tasks
    return out

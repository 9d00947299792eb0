"""The JSON Schema of the environment spec (what ``envwright schema`` prints), for every version or for version 1.

Role: :func:`json_schema` builds the schema of :class:`~gym_envs.spec.EnvSpec` with every registered check kind (a
discriminated union of the kinds' own models, :mod:`gym_envs.checks`); ``version=1`` narrows it to what a
spec_version 1 document may hold (what the free stream decodes under, :mod:`envgen.structure`): the fields only
version 2 has are left out (each check kind narrows its own, :meth:`~gym_envs.checks.BaseCheck.version_1_schema`),
and so are the definitions nothing then refers to.
"""

from __future__ import annotations

from typing import Any

from gym_envs.checks import check_kinds, kind_names
from gym_envs.spec import SPEC_VERSION, EnvSpec
from gym_envs.spec_v1 import V2_FIELDS

__all__ = ["json_schema"]

def json_schema(version: int | None = None) -> dict[str, Any]:
    """The JSON Schema of the environment spec (what ``envwright schema`` prints): every version, with every registered
    check kind; with ``version=1`` only what a version 1 document may hold (what the free stream decodes under)."""
    from pydantic.json_schema import models_json_schema

    schema = EnvSpec.model_json_schema()
    kinds = check_kinds(version)
    refs, extra = models_json_schema([(k, "validation") for k in kinds], ref_template="#/$defs/{model}")
    defs = schema.setdefault("$defs", {})
    defs.update(extra.get("$defs", {}))
    defs["Turn"]["properties"]["checks"]["items"] = {
        "oneOf": [refs[(k, "validation")] for k in kinds],
        "discriminator": {"propertyName": "kind",
                          "mapping": {n: refs[(k, "validation")]["$ref"] for n, k in zip(kind_names(version), kinds,
                                                                                        strict=True)}}}
    if version == 1:
        _version_1(schema)
        for k in kinds:
            k.version_1_schema(defs[refs[(k, "validation")]["$ref"].rsplit("/", 1)[-1]])
        _drop_unreferenced(schema)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://envwright.dev/schema/envspec-v{version or SPEC_VERSION}.json"
    return schema


def _version_1(schema: dict[str, Any]) -> None:
    """Narrow a schema of every version to version 1: no v2 field of the spec or a task, no say item (the check kinds
    narrow their own)."""
    defs = schema["$defs"]
    schema["properties"]["spec_version"] = {"const": 1, "default": 1, "title": "Spec Version", "type": "integer"}
    for name, fields in V2_FIELDS.items():
        node = schema if name == "EnvSpec" else defs.get(name)
        if node is not None:
            for f in fields:
                node.get("properties", {}).pop(f, None)
    defs["Turn"]["properties"]["reference"]["items"] = {"$ref": "#/$defs/ToolCall"}


def _drop_unreferenced(schema: dict[str, Any]) -> None:
    """Remove the ``$defs`` nothing reaches any more from the top of ``schema`` (those of version 2 fields)."""
    defs = schema["$defs"]

    def refs(node: Any) -> set[str]:
        if isinstance(node, dict):
            out = {node["$ref"].rsplit("/", 1)[-1]} if isinstance(node.get("$ref"), str) else set()
            return out.union(*(refs(v) for k, v in node.items() if k != "$defs"))
        if isinstance(node, list):
            return set().union(*(refs(v) for v in node))
        return set()

    reached: set[str] = set()
    todo = refs(schema)
    while todo:
        name = todo.pop()
        if name not in reached and name in defs:
            reached.add(name)
            todo |= refs(defs[name])
    for name in [n for n in defs if n not in reached]:
        del defs[name]

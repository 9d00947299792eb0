"""Blueprints: the compact, typed proposal both the AST writer and a model write, and the one compiler.

The format and its rules are in ``envgen/blueprint/BLUEPRINT.md``. Modules:

* :mod:`~envgen.blueprint.schema` -- the pydantic models (the one source of the format), the bounded
  JSON Schema every backend decodes under (narrowed by a skill's requirements), lenient parsing;
* :mod:`~envgen.blueprint.normalize` and :mod:`~envgen.blueprint.compiler` -- blueprint + document +
  seed to a full :class:`~gym_envs.spec.EnvSpec`, with every repair recorded;
* :mod:`~envgen.blueprint.render` -- the compiler's renderers (environment model, seed values and
  rows, tools and code, tasks and checks, difficulty);
* :mod:`~envgen.blueprint.grounding` -- the share of an environment's entity and field names that
  occur in its source document.

The writers of blueprints sit above this package: the AST writer, the blueprint stream's prompt and
the teaching pairs are the template proposer's (:mod:`envgen.proposers.template`), and a model
writes blueprints through :mod:`envgen.proposers.llm`. Nothing here imports :mod:`envgen.proposers`.
"""

from __future__ import annotations

from envgen.blueprint.compiler import Compiled, CompileError, CompileOptions, compile_blueprint, document_vocabulary
from envgen.blueprint.grounding import grounding
from envgen.blueprint.schema import (
    BLUEPRINT_VERSION,
    Blueprint,
    ParsedBlueprint,
    blueprint_json_schema,
    max_completion_chars,
    parse_blueprint,
)

__all__ = [
    "BLUEPRINT_VERSION",
    "Blueprint",
    "CompileError",
    "CompileOptions",
    "Compiled",
    "ParsedBlueprint",
    "blueprint_json_schema",
    "compile_blueprint",
    "document_vocabulary",
    "grounding",
    "max_completion_chars",
    "parse_blueprint",
]

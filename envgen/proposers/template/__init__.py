"""The ``template`` proposer (static analysis of a Python document, no model) and the pieces it shares.

Modules:

* :mod:`~envgen.proposers.template.proposer`: :class:`TemplateProposer`, :func:`derive_spec`,
  :func:`derive_compiled` (the contract is in its docstring);
* :mod:`~envgen.proposers.template.extract` (what a document defines) and
  :mod:`~envgen.proposers.template.build` (the design: entities, operations);
* :mod:`~envgen.proposers.template.semantics` (what a document's operations do: roles, guards, states and
  a pattern, for the world graft) over :mod:`~envgen.proposers.template.bodies` (one body's changes and guards);
* :mod:`~envgen.proposers.template.model` (the environment model), :mod:`~envgen.proposers.template.words`
  (verb and status vocabularies) and :mod:`~envgen.proposers.template.values` (seeded values);
* the renderers the blueprint compiler uses: :mod:`~envgen.proposers.template.tools` (tools, code, SQL)
  and :mod:`~envgen.proposers.template.tasks` (instructions, references, checks).

The blueprint compiler (:mod:`envgen.blueprint.compiler`) imports the renderers, and the proposer
imports the compiler; so this package names the proposer's API lazily (:func:`__getattr__`) and
importing a renderer never runs the proposer (nor the compiler it needs).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envgen.proposers.template.build import TemplateError
    from envgen.proposers.template.proposer import GENERATOR, TemplateProposer, derive_compiled, derive_spec

__all__ = ["GENERATOR", "TemplateError", "TemplateProposer", "derive_compiled", "derive_spec"]

_LAZY = {"GENERATOR": "proposer", "TemplateError": "build", "TemplateProposer": "proposer",
         "derive_compiled": "proposer", "derive_spec": "proposer"}


def __getattr__(name: str) -> Any:
    """The proposer's API, imported on first use (see the module docstring)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

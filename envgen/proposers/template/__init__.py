"""The ``template`` proposer: static analysis of a Python document, written as a blueprint, no model.

Modules:

* :mod:`~envgen.proposers.template.proposer`: :class:`TemplateProposer`, :func:`derive_spec`,
  :func:`derive_compiled` (the contract is in its docstring);
* :mod:`~envgen.proposers.template.extract` (what a document defines, by AST analysis) and
  :mod:`~envgen.proposers.template.build` (the design: entities, operations);
* :mod:`~envgen.proposers.template.semantics` (what a document's operations do: roles, guards, states and
  a pattern, for the world graft) over :mod:`~envgen.proposers.template.bodies` (one body's changes and guards);
* :mod:`~envgen.proposers.template.writer` (the AST writer: the design as a blueprint) and
  :mod:`~envgen.proposers.template.deepen` (what it adds so deep tasks have something to work on);
* the AST writer is the model's teacher: :mod:`~envgen.proposers.template.prompt` is the blueprint
  stream's prompt (its worked example is the writer's blueprint of a small document); the (prompt,
  blueprint) teaching pairs and the held-out split of both AST writers are :mod:`envgen.proposers.pairs`.

Everything after the blueprint (the environment model, seed values, tools, code and tasks) is the
compiler's, in :mod:`envgen.blueprint`; this package imports it, never the reverse.
"""

from __future__ import annotations

from envgen.errors import TemplateError
from envgen.proposers.template.proposer import GENERATOR, TemplateProposer, derive_compiled, derive_spec

__all__ = ["GENERATOR", "TemplateError", "TemplateProposer", "derive_compiled", "derive_spec"]

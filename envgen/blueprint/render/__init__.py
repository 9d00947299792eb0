"""The compiler's renderers: from a normalized blueprint's environment model to the parts of a spec.

The compiler (:mod:`envgen.blueprint.compiler`) owns every renderer; writers of blueprints (the AST
writer in :mod:`envgen.proposers.template`, a model) only fill the blueprint. Modules:

* :mod:`~envgen.blueprint.render.model` -- the environment model (entities, columns, operations) and
  the naming rules every stage shares; :mod:`~envgen.blueprint.render.words` -- verb and status
  vocabularies and name-based type hints;
* :mod:`~envgen.blueprint.render.ops` -- tool names and the operations every main entity gets;
* :mod:`~envgen.blueprint.render.values` -- seeded values; :mod:`~envgen.blueprint.render.rows` --
  seed rows within capacity rules;
* :mod:`~envgen.blueprint.render.difficulty` -- what a difficulty level means, and its distractors;
* :mod:`~envgen.blueprint.render.tools` -- tool schemas, restricted tool code, DDL and seed SQL;
* :mod:`~envgen.blueprint.render.tasks` -- instructions, reference trajectories and checks.

Contract: this package imports nothing of :mod:`envgen.proposers` (the proposers build on the
compiler, never the reverse; ``tests/test_layout.py`` checks it).
"""

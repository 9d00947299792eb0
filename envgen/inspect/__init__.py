"""The inspector: a static HTML site for browsing generated environments (``envwright inspect``).

``envwright inspect LIBRARY_OR_SPEC --out DIR [--serve PORT]`` writes, with
Jinja2 templates and no external assets (it works offline, from ``file://``):

* an index of every environment (proposer, stream, skill, source document,
  task kinds, table and tool counts, grounding, solve rate, validation time,
  mutants killed), sortable and filterable in the page, with the library's
  realism figures (:mod:`envgen.realism`) beside the shipped examples' and
  τ²-bench's;
* one page per environment: the source document's excerpt beside what was
  made of it, tools with their schemas, tables with seed rows, every task with
  its turns, checks and reference, the validity gate's report (which wrong
  trajectories were tried and how each failed), the solve-rate history, and
  the episodes of any evaluation runs given with ``--run``;
* rejected proposals with their reasons;
* each ``--run``'s episodes, linked to environment pages and transcripts.

Modules: :mod:`~envgen.inspect.collect` gathers (read-only),
:mod:`~envgen.inspect.site` renders and writes, :mod:`~envgen.inspect.cli` is
the command. Templates, ``site.css`` and ``site.js`` are package data in
``templates/``.
"""

from __future__ import annotations

from envgen.inspect.site import SiteSummary, build_site

__all__ = ["SiteSummary", "build_site"]

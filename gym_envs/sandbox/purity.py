"""Whether a program's tool code keeps any state of its own between calls.

Role: an episode's state is its database plus whatever the program's code
keeps between calls (module-level objects, an imported ``random``...). When
the code is *stateless* the database is the whole state, so:

* the engine can give an episode cheap checkpoints (:meth:`Engine._op_fork`):
  rolling the database back to a savepoint puts the episode exactly where it
  was, with no replay of its calls;
* a call that changed no row had no effect at all (the validity gate judges
  some wrong trajectories in place on that ground, :mod:`envgen.gate.adequacy`).

:func:`stateless` decides it from the code's syntax, conservatively (any doubt
is "not stateless", which only costs time):

* the module defines functions (undecorated, with constant defaults), and
  binds names only to constants or tuples of constants: no module-level dict,
  list, set or other object a call could change;
* no ``global``/``nonlocal`` statement (no call rebinds a module name), no
  class, no lambda, and no ``import`` but of the sandbox's read-only module
  views (:data:`~gym_envs.sandbox.modules.ALLOWED_MODULES` less ``random``:
  ``import datetime`` in a tool keeps nothing, while an episode's own
  ``random`` keeps its state between calls);
* no SQL text that calls the connection's counters (``changes()``,
  ``last_insert_rowid()``), which a call that writes no row can still move.

RestrictedPython refuses attribute writes on functions and modules, so with
these conditions nothing a call does outlives it but its database writes
(and the connection's counters, which a checkpoint saves and restores).
"""

from __future__ import annotations

import ast
import functools
import re

from gym_envs.sandbox.modules import ALLOWED_MODULES

__all__ = ["stateless", "syntax_tree"]

#: modules whose import keeps no state: the sandbox hands code a read-only view of each (the episode's ``random``,
#: made per episode and advanced by every draw, is the one that keeps state)
_VIEWS = frozenset(m for m in ALLOWED_MODULES if m != "random")

_COUNTERS = re.compile(r"\b(changes|last_insert_rowid)\s*\(", re.I)


def _constant(node: ast.expr | None) -> bool:
    if node is None or isinstance(node, ast.Constant):
        return True
    return isinstance(node, ast.Tuple) and all(_constant(e) for e in node.elts)


def _view_import(node: ast.AST) -> bool:
    """Whether ``node`` is an ``import`` of module views only (module docstring)."""
    if isinstance(node, ast.Import):
        return all(a.name.split(".")[0] in _VIEWS for a in node.names)
    if isinstance(node, ast.ImportFrom):
        return node.level == 0 and (node.module or "").split(".")[0] in _VIEWS
    return False


def _module_statement(node: ast.stmt) -> bool:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return _view_import(node)
    if isinstance(node, ast.FunctionDef):
        args = node.args
        return not node.decorator_list and all(_constant(d) for d in [*args.defaults, *args.kw_defaults])
    if isinstance(node, ast.Expr):
        return isinstance(node.value, ast.Constant)  # a docstring
    if isinstance(node, ast.Assign):
        return all(isinstance(t, ast.Name) for t in node.targets) and _constant(node.value)
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Name) and _constant(node.value)
    return False


@functools.lru_cache(maxsize=4)
def syntax_tree(code: str) -> ast.Module:
    """``ast.parse(code)``, one tree for the same text while it is among the last few parsed (a spec's code is read
    by :func:`stateless` when its program is built and by the validity gate's signature rule): callers only read the
    tree, never change it. Raises what ``ast.parse`` raises (nothing is kept then)."""
    return ast.parse(code)


@functools.lru_cache(maxsize=256)
def stateless(code: str) -> bool:
    """Whether ``code`` keeps no state between calls but its database (see the module docstring)."""
    if _COUNTERS.search(code):
        return False
    try:
        tree = syntax_tree(code)
    except (SyntaxError, ValueError, RecursionError):
        return False
    if not all(_module_statement(n) for n in tree.body):
        return False
    forbidden = (ast.Global, ast.Nonlocal, ast.ClassDef, ast.Lambda)
    for node in ast.walk(tree):
        if isinstance(node, forbidden):
            return False
        if isinstance(node, (ast.Import, ast.ImportFrom)) and not _view_import(node):
            return False
        if isinstance(node, ast.FunctionDef) and node.decorator_list:
            return False
    return True

"""Rule 1's check of tool code against tool schemas: :func:`signature_problems`.

Each tool needs a top-level ``def NAME(db, ...)`` whose parameters are exactly its JSON Schema's
properties (``db`` first, injected, never a property), with a default for every optional one. Read from
the code's syntax tree, so nothing of the spec runs.
"""

from __future__ import annotations

import ast
import functools
from typing import NamedTuple

from gym_envs.sandbox.purity import syntax_tree
from gym_envs.spec import EnvSpec

__all__ = ["signature_problems"]


class _Signature(NamedTuple):
    """What the rule reads of one top-level ``def``."""

    positional_only: bool  #: it has positional-only parameters or ``*args``
    params: tuple[str, ...]  #: its positional-or-keyword parameters, in order
    names: tuple[str, ...]  #: every parameter but the first, keyword-only ones included
    defaults: frozenset[str]  #: the parameters with a default value
    kwargs: bool  #: it takes ``**kwargs``


@functools.lru_cache(maxsize=256)
def _signatures(code: str) -> dict[str, _Signature] | str:
    """The top-level functions of ``code`` by name, or the syntax error's text: one parse per text while it is among
    the last 256 read (:func:`~gym_envs.sandbox.purity.stateless` keeps its own verdict as long), read from the tree
    the program's build parsed when it is still held. Callers only read the dict."""
    try:
        tree = syntax_tree(code)
    except SyntaxError as e:
        return f"code: syntax error at line {e.lineno}: {e.msg}"
    out: dict[str, _Signature] = {}
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        a = fn.args
        params = tuple(x.arg for x in a.args)
        n_defaults = len(a.defaults)
        defaults = set(params[len(params) - n_defaults:] if n_defaults else [])
        defaults |= {x.arg for x, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None}
        out[fn.name] = _Signature(bool(a.posonlyargs or a.vararg), params,
                                  params[1:] + tuple(x.arg for x in a.kwonlyargs), frozenset(defaults),
                                  a.kwarg is not None)
    return out


def signature_problems(spec: EnvSpec) -> list[str]:
    """Mismatches between each tool's JSON Schema and its ``def NAME(db, ...)``."""
    funcs = _signatures(spec.code)
    if isinstance(funcs, str):
        return [funcs]
    problems: list[str] = []
    for tool in spec.tools:
        fn = funcs.get(tool.name)
        if fn is None:
            problems.append(f"tool {tool.name!r}: the code defines no top-level function {tool.name}(db, ...)")
            continue
        if fn.positional_only:
            problems.append(f"tool {tool.name!r}: use plain keyword parameters (no positional-only or *args)")
        if not fn.params or fn.params[0] != "db":
            problems.append(f"tool {tool.name!r}: the first parameter must be 'db'")
            continue
        names = fn.names
        props = set(tool.parameters.get("properties", {}))
        required = set(tool.parameters.get("required", []))
        extra = [n for n in names if n not in props]
        if extra and not fn.kwargs:
            problems.append(f"tool {tool.name!r}: parameters {extra} are not in its JSON Schema properties")
        missing = sorted(props - set(names))
        if missing and not fn.kwargs:
            problems.append(f"tool {tool.name!r}: schema properties {missing} have no matching parameter")
        optional_no_default = sorted((set(names) & props) - required - fn.defaults)
        if optional_no_default:
            problems.append(f"tool {tool.name!r}: optional properties {optional_no_default} need a default "
                            f"value in the function (or list them in 'required')")
        if "db" in props:
            problems.append(f"tool {tool.name!r}: 'db' is injected and must not be a schema property")
    return problems

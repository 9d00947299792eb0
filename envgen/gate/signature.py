"""Rule 1's check of tool code against tool schemas: :func:`signature_problems`.

Each tool needs a top-level ``def NAME(db, ...)`` whose parameters are exactly its JSON Schema's
properties (``db`` first, injected, never a property), with a default for every optional one. Read from
the code's syntax tree, so nothing of the spec runs.
"""

from __future__ import annotations

import ast

from gym_envs.sandbox.purity import syntax_tree
from gym_envs.spec import EnvSpec

__all__ = ["signature_problems"]


def signature_problems(spec: EnvSpec) -> list[str]:
    """Mismatches between each tool's JSON Schema and its ``def NAME(db, ...)``."""
    try:
        tree = syntax_tree(spec.code)  # the tree the program's build read, when it was built already
    except SyntaxError as e:
        return [f"code: syntax error at line {e.lineno}: {e.msg}"]
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    problems: list[str] = []
    for tool in spec.tools:
        fn = funcs.get(tool.name)
        if fn is None:
            problems.append(f"tool {tool.name!r}: the code defines no top-level function {tool.name}(db, ...)")
            continue
        a = fn.args
        if a.posonlyargs or a.vararg:
            problems.append(f"tool {tool.name!r}: use plain keyword parameters (no positional-only or *args)")
        params = [x.arg for x in a.args]
        if not params or params[0] != "db":
            problems.append(f"tool {tool.name!r}: the first parameter must be 'db'")
            continue
        names = params[1:] + [x.arg for x in a.kwonlyargs]
        n_defaults = len(a.defaults)
        defaults = set(params[len(params) - n_defaults:] if n_defaults else [])
        defaults |= {x.arg for x, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None}
        props = set(tool.parameters.get("properties", {}))
        required = set(tool.parameters.get("required", []))
        extra = [n for n in names if n not in props]
        if extra and a.kwarg is None:
            problems.append(f"tool {tool.name!r}: parameters {extra} are not in its JSON Schema properties")
        missing = sorted(props - set(names))
        if missing and a.kwarg is None:
            problems.append(f"tool {tool.name!r}: schema properties {missing} have no matching parameter")
        optional_no_default = sorted((set(names) & props) - required - defaults)
        if optional_no_default:
            problems.append(f"tool {tool.name!r}: optional properties {optional_no_default} need a default "
                            f"value in the function (or list them in 'required')")
        if "db" in props:
            problems.append(f"tool {tool.name!r}: 'db' is injected and must not be a schema property")
    return problems

"""The repository's shape: no import cycle inside a package, and every document the code cites exists.

* **Cycles.** For each top-level package, the graph of its modules' imports of one another (every
  ``import``, at module level or inside a function, ``if TYPE_CHECKING`` blocks excepted: those never
  run) must have no cycle. A lazy import inside a function still ties two modules together, so it
  counts; the cycle is named module by module.
* **Cited documents.** An upper-case markdown file name in the code or the tests is a document the
  reader is sent to. It must be cited by its path from the repository root (``gym_envs/ENVSPEC.md``,
  ``envgen/blueprint/BLUEPRINT.md``) and that file must exist. Files the code reads or writes by
  name (``README.md`` of an export, a skill's ``SKILL.md``) are data, not citations.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("corpora", "envgen", "eval", "gym_envs", "training")
DATA_FILE_NAMES = {"README.md", "SKILL.md"}  # names of files the code writes or reads, not citations


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(package: str) -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((ROOT / package).rglob("*.py"))
            if all(part.isidentifier() for part in p.relative_to(ROOT).with_suffix("").parts)}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(path: Path, module: str, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``module`` imports (``from pkg import mod`` counts as ``pkg.mod``)."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.orelse:
                    visit(sub)
                continue
            if isinstance(child, ast.Import):
                found.update(a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = module.split(".") if is_package else module.split(".")[:-1]
                    anchor = anchor[:len(anchor) - child.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                found.add(base)
                found.update(f"{base}.{a.name}" for a in child.names)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    out = set()
    for name in found:  # ``import a.b.c`` also runs a and a.b
        parts = name.split(".")
        out.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return {m for m in out & known if m != module}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (its modules in order, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def dfs(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := dfs(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := dfs(start)):
            return found
    return None


def _package_edges(graph: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """Edges between modules, without the package ``__init__`` re-exporting its own modules.

    A package's ``__init__`` importing its submodules is how Python packages work (importing
    ``pkg.mod`` runs ``pkg/__init__`` first, then ``mod``): an edge from a parent package down to
    its own submodule is not a cycle by itself, so those edges are left out.
    """
    return {m: {d for d in deps if not d.startswith(m + ".")} for m, deps in graph.items()}


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle_inside_the_package(package: str) -> None:
    modules = _modules(package)
    known = set(modules)
    graph = _package_edges({m: _imports(p, m, known) for m, p in modules.items()}, package)
    cycle = _cycle(graph)
    assert cycle is None, f"import cycle in {package}: {' -> '.join(cycle or [])}"


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


_CITATION = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[A-Z][A-Z0-9_]*\.md)\b")


def _citations() -> list[tuple[str, int, str]]:
    out = []
    for folder in (*PACKAGES, "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                out.extend((f"{path.relative_to(ROOT)}:{no}", no, m) for m in _CITATION.findall(line))
    return out


def test_cited_documents_are_cited_by_path_and_exist() -> None:
    shipped = {p.name: p.relative_to(ROOT).as_posix() for folder in PACKAGES for p in (ROOT / folder).rglob("*.md")
               if p.stem.isupper()}
    problems = []
    for where, _, cited in _citations():
        name = cited.rsplit("/", 1)[-1]
        if name in DATA_FILE_NAMES:
            continue
        if "/" in cited:
            if not (ROOT / cited).is_file():
                problems.append(f"{where}: {cited} does not exist")
        elif name in shipped:
            problems.append(f"{where}: cite {name} by its path, {shipped[name]}")
        else:
            problems.append(f"{where}: {name} is not in the repository")
    assert not problems, "\n".join(problems)
    assert {"gym_envs/ENVSPEC.md", "envgen/blueprint/BLUEPRINT.md"} <= {c for _, _, c in _citations()}


_BROAD = re.compile(r"^\s*except\s+(?:Exception|BaseException)\b[^:]*:(.*)$")


def test_every_broad_except_says_why() -> None:
    """A broad ``except Exception`` is a boundary where a failure becomes data (each package's
    ``errors.py`` lists them) or is kept broad for a stated reason; it says which on its line.
    An ``except BaseException`` must re-raise or say why too."""
    problems = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            lines = path.read_text(encoding="utf-8").splitlines()
            for no, line in enumerate(lines, 1):
                m = _BROAD.match(line)
                if not m or "boundary" in m.group(1) or "kept broad" in m.group(1):
                    continue
                body = lines[no:no + 8]
                indent = len(line) - len(line.lstrip())
                block = [b for b in body if b.strip()]
                block = block[:next((i for i, b in enumerate(block) if len(b) - len(b.lstrip()) <= indent),
                                    len(block))]
                if "BaseException" in line and any(b.strip().startswith("raise") for b in block):
                    continue  # cleanup, then the exception goes on
                problems.append(f"{path.relative_to(ROOT)}:{no}: {line.strip()}")
    assert not problems, "say '# the boundary: ...' or '# kept broad: ...' on these lines:\n" + "\n".join(problems)


#: What each package may import of ours. ``corpora`` sits below ``envgen``, so the packages above
#: ``envgen`` may use it directly (its registry, its similarity) as they reach it through ``envgen``.
LAYERS = {"corpora": set(), "gym_envs": set(), "envgen": {"corpora", "gym_envs"},
          "training": {"corpora", "envgen", "gym_envs"}, "eval": {"corpora", "envgen", "gym_envs"}}
#: The envwright command and its bench group may reach every package (lazily, by name).
ROOT_COMMANDS = {"envgen.cli", "envgen.cli.bench"}


def test_imports_point_one_way() -> None:
    everything = {m for package in PACKAGES for m in _modules(package)}
    problems = []
    for package in PACKAGES:
        for module, path in _modules(package).items():
            if module in ROOT_COMMANDS:
                continue
            for dep in sorted(_imports(path, module, everything)):
                top = dep.split(".", 1)[0]
                if top != package and top not in LAYERS[package]:
                    problems.append(f"{module} imports {dep} ({package} may import {sorted(LAYERS[package])})")
    assert not problems, "\n".join(problems)


def test_the_top_level_is_the_fixed_layout() -> None:
    """The user fixed the top level: these packages, the README, pyproject and CI; no other folder (no docs/,
    no scripts/). Documentation lives beside the code it describes."""
    import subprocess

    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    top = {line.split("/", 1)[0] for line in out.splitlines() if line}
    allowed = {"pyproject.toml", "README.md", "envgen", "corpora", "gym_envs", "training", "eval", "tests",
               ".ci", ".gitignore"}
    assert top <= allowed, f"unexpected top-level entries: {sorted(top - allowed)}"
    for package in ("envgen", "corpora", "gym_envs", "training", "eval", "tests"):
        assert (ROOT / package / "__init__.py").is_file(), f"{package}/ is not a package"

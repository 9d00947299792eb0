"""The repository's shape: its layers, no import cycle, small files, and every document the code cites exists.

* **Layers.** Imports point one way (:data:`LAYERS`)::

      base       corpora.registry, corpora.errors   the one Registry and did_you_mean (standard library only)
      bottom     corpora, gym_envs                   import nothing of ours but the base
      middle     envgen                              imports corpora and gym_envs
      top        training, eval                      import envgen, gym_envs (and corpora); never each other

  The base modules live in ``corpora`` (a new top-level package would break the fixed layout); every
  package may import them, and they import nothing of ours but each other. The ``envwright`` command
  (:data:`ROOT_COMMANDS`) may reach every package, lazily.
* **Cycles.** For each top-level package, the graph of its modules' imports of one another (every
  ``import``, at module level, inside a function or under ``if TYPE_CHECKING``: a lazy import still
  ties two modules together, and a type-only one makes each module's meaning depend on the other)
  must have no cycle; the cycle is named module by module. The same holds one level up, between the
  sub-packages and modules of each package (``envgen.blueprint`` and ``envgen.proposers`` may not
  import each other, whichever of their modules do it).
* **Sizes.** No module is over :data:`MAX_LINES` lines: a file that grows past it is split along its
  seams.
* **One of each.** The project's shared helpers (:data:`ONE_DEFINITION`) are defined once.
* **Tests test code.** No test reads committed run results (:data:`RESULTS`); the consistency between
  results and docs is ``envwright bench selfplay --merge ... --check``'s job.
* **Cited documents.** An upper-case markdown file name in the code or the tests is a document the
  reader is sent to. It must be cited by its path from the repository root (``gym_envs/ENVSPEC.md``,
  ``envgen/blueprint/BLUEPRINT.md``) and that file must exist. Files the code reads or writes by
  name (``README.md`` of an export, a skill's ``SKILL.md``) are data, not citations.
"""

from __future__ import annotations

import ast
import functools
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


def _imports(path: Path, module: str, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``module`` imports (``from pkg import mod`` counts as ``pkg.mod``)."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
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


@functools.cache
def _graph() -> dict[str, set[str]]:
    """Every module of every package and the modules of ours it imports."""
    modules = {m: p for package in PACKAGES for m, p in _modules(package).items()}
    return {m: _imports(p, m, set(modules)) for m, p in modules.items()}


def _sibling_graph(graph: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """The imports between the children of ``package`` (its sub-packages and modules): a child imports another
    when any module inside it imports any module inside the other. ``package``'s own ``__init__`` is no child."""
    def child(module: str) -> str | None:
        if not module.startswith(package + "."):
            return None
        return f"{package}.{module[len(package) + 1:].split('.', 1)[0]}"

    out: dict[str, set[str]] = {}
    for module, deps in graph.items():
        if (a := child(module)) is not None:
            out.setdefault(a, set()).update(b for d in deps if (b := child(d)) not in (None, a))
    for deps in list(out.values()):
        for d in deps:
            out.setdefault(d, set())
    return out


def _subpackages() -> list[str]:
    return sorted(m for package in PACKAGES for m, p in _modules(package).items() if p.name == "__init__.py")


@pytest.mark.parametrize("package", _subpackages())
def test_no_import_cycle_between_the_parts_of_a_package(package: str) -> None:
    """``envgen.blueprint`` importing ``envgen.proposers`` while a proposer imports the compiler is a cycle of
    the packages, although no two modules import each other."""
    cycle = _cycle(_sibling_graph(_graph(), package))
    assert cycle is None, f"import cycle between the parts of {package}: {' -> '.join(cycle or [])}"


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
    graph = {"p.x.one": {"p.y.two"}, "p.y.two": set(), "p.y.three": {"p.x"}, "p.x": set(), "p.z": {"p.x.one"}}
    assert _sibling_graph(graph, "p") == {"p.x": {"p.y"}, "p.y": {"p.x"}, "p.z": {"p.x"}}
    assert _cycle(_sibling_graph(graph, "p")) == ["p.x", "p.y", "p.x"]


def test_a_type_only_import_counts(tmp_path: Path) -> None:
    """An import under ``if TYPE_CHECKING`` ties two modules as any other does (``gym_envs.replay`` named
    ``gym_envs.env``'s ``TurnOutcome`` so while ``env`` imported ``replay``)."""
    path = tmp_path / "m.py"
    path.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.other import Thing\n")
    assert _imports(path, "pkg.m", {"pkg.other", "pkg.m"}) == {"pkg.other"}


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


#: What each package may import of ours, besides :data:`BASE`. ``corpora`` sits below ``envgen``, so the packages
#: above ``envgen`` may use it directly (its similarity, its loaders) as they reach it through ``envgen``.
LAYERS = {"corpora": set(), "gym_envs": set(), "envgen": {"corpora", "gym_envs"},
          "training": {"corpora", "envgen", "gym_envs"}, "eval": {"corpora", "envgen", "gym_envs"}}
#: The base layer: modules of the standard library only, which every package may import (the one ``Registry``,
#: ``entry_point`` and ``did_you_mean``, and the errors they raise). They live in ``corpora``: importing one runs
#: ``corpora/__init__`` too, which imports only ``corpora``'s own modules.
BASE = {"corpora.registry", "corpora.errors"}
#: The envwright command and its bench group may reach every package (lazily, by name).
ROOT_COMMANDS = {"envgen.cli", "envgen.cli.bench"}


def test_imports_point_one_way() -> None:
    everything = {m for package in PACKAGES for m in _modules(package)}
    problems = []
    for package in PACKAGES:
        for module, path in _modules(package).items():
            if module in ROOT_COMMANDS:
                continue
            deps = _imports(path, module, everything)
            for dep in sorted(deps):
                top = dep.split(".", 1)[0]
                if dep in BASE or any(b.startswith(dep + ".") for b in BASE & deps):
                    continue  # a base module (and the package it lives in, which importing it runs)
                if top != package and top not in LAYERS[package]:
                    problems.append(f"{module} imports {dep} ({package} may import {sorted(LAYERS[package])})")
    assert not problems, "\n".join(problems)


def test_the_base_layer_imports_only_the_standard_library() -> None:
    import sys

    for module in sorted(BASE):
        path = ROOT / (module.replace(".", "/") + ".py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level}
        outside = sorted(n for n in names if n not in BASE and n.split(".")[0] not in sys.stdlib_module_names
                         and n != "__future__")
        assert not outside, f"{module} is in the base layer but imports {outside}"


def test_the_layer_rule_lets_the_base_through_and_nothing_else_of_its_package() -> None:
    """``gym_envs`` may import ``corpora.errors`` (which runs ``corpora``'s ``__init__``), never ``corpora``
    itself or another of its modules."""
    here = {"gym_envs.x", "corpora", "corpora.errors", "corpora.similarity"}
    for deps, ok in (({"corpora", "corpora.errors"}, True), ({"corpora", "corpora.similarity"}, False),
                     ({"corpora"}, False)):
        flagged = [d for d in sorted(deps & here) if not (d in BASE or any(b.startswith(d + ".") for b in BASE & deps))]
        assert (not flagged) is ok, (deps, flagged)


#: The longest a module may be; past it, split the file along its seams.
MAX_LINES = 600
#: Modules over :data:`MAX_LINES` for now, each with the reason it waits.
TOO_LONG_FOR_NOW = {
    "envgen/library.py": "being edited in another branch; split once that lands",
    "envgen/gate/adequacy.py": "the gate is being moved into envgen/gate/ in another branch; split with it",
}


def test_no_module_is_over_the_line_limit() -> None:
    long = {p.relative_to(ROOT).as_posix(): n for folder in (*PACKAGES, "tests") for p in (ROOT / folder).rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    over = sorted(f"{p}: {n} lines" for p, n in long.items() if p not in TOO_LONG_FOR_NOW)
    assert not over, f"split these along their seams (at most {MAX_LINES} lines):\n" + "\n".join(over)


#: Helpers the project has one of, and the module that defines it.
ONE_DEFINITION = {"did_you_mean": "corpora.errors", "Registry": "corpora.registry", "entry_point": "corpora.registry",
                  "stable_seed": "gym_envs.seeding", "jaccard": "corpora.similarity",
                  "word_shingles": "corpora.similarity", "text_similarity": "corpora.similarity"}


def test_each_shared_helper_is_defined_once() -> None:
    where: dict[str, list[str]] = {}
    for package in PACKAGES:
        for module, path in _modules(package).items():
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in ONE_DEFINITION:
                    where.setdefault(node.name, []).append(module)
    wrong = {name: mods for name, mods in where.items() if mods != [ONE_DEFINITION[name]]}
    assert not wrong, f"defined elsewhere than its one home ({ONE_DEFINITION}): {wrong}"


#: Committed run results: data for the docs, read by the tools that render them, never by a test.
RESULTS = ("training/results", "eval/bench/results")
_RESULTS_RE = re.compile(r"""["'](?:training|eval)["']\)?\s*/\s*["'](?:results|bench)["']"""
                         r"|(?:training|eval/bench)/results\b")
_REPO_README_RE = re.compile(r"""(?:ROOT|parents\[\d\])\s*/\s*["']README\.md["']""")  # the repository's README


def test_no_test_reads_committed_results() -> None:
    """A test builds its own fixture; committed run numbers and README sentences are checked by
    ``envwright bench selfplay --merge ... --check``, not by the unit suite."""
    hits = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path == Path(__file__):
            continue
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _RESULTS_RE.search(line) or _REPO_README_RE.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{no}: {line.strip()}")
    assert not hits, f"tests read committed results ({', '.join(RESULTS)}) or the README:\n" + "\n".join(hits)


def test_the_results_rule_sees_the_ways_a_test_names_results() -> None:
    for line in ('ROOT / "training" / "results" / "h200"', "Path('eval') / 'bench' / 'results'",
                 'x = "training/results/h200/selfplay-v7"', 'p = "eval/bench/results/runtime.md"'):
        assert _RESULTS_RE.search(line), line
    assert not _RESULTS_RE.search('(tmp_path / "run" / "results.jsonl")')
    assert _REPO_README_RE.search('(root.parents[2] / "README.md").read_text()')
    assert not _REPO_README_RE.search('(tmp_path / "export" / "README.md").read_text()')


def test_run_data_stays_out_of_the_installed_package() -> None:
    """The package data a wheel would hold (setuptools' own ``build_py``, from pyproject.toml) has every shipped
    document, example and config, and nothing under :data:`RESULTS`: run data stays in the repository."""
    import os
    import warnings

    setuptools = pytest.importorskip("setuptools")
    from setuptools.config import pyprojecttoml

    dist = setuptools.Distribution({"script_name": "setup.py"})
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pyprojecttoml.apply_configuration(dist, "pyproject.toml")
            cmd = dist.get_command_obj("build_py")
            cmd.ensure_finalized()
            files = {Path(src, f).as_posix() for _, src, _, fs in cmd.get_data_files_without_manifest() for f in fs}
    finally:
        os.chdir(cwd)
    shipped = [f for f in files if f.startswith(RESULTS)] + [p for p in dist.packages if "results" in p.split(".")]
    assert not shipped, f"run data would ship in the wheel: {sorted(shipped)[:5]}"
    assert {"gym_envs/ENVSPEC.md", "training/configs/smoke-cpu.yaml", "gym_envs/examples/library-loans.json",
            "envgen/skills/builtin/records-crud/SKILL.md"} <= files


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

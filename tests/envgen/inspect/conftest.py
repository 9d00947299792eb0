"""Fixtures of the inspector tests: a small library (accepted, rejected, hostile text, evaluated) and its site.

The library holds two environments the template proposer made from standard-library modules (so their
source documents resolve), three from a stand-in proposer (one rejected, kept under ``rejected/``), and
one whose title, description and tool description carry HTML, rich markup and escape sequences. A
scripted evaluation of it (reference and empty) writes solve-rate history and two run folders.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

HOSTILE_TITLE = '<script>alert("title")</script> [/] \x1b[2J'
HOSTILE_DESCRIPTION = '<img src=x onerror=alert("description")> [link=javascript:alert(1)]x[/link]'


def _stdlib_docs(names: list[str]) -> list[Any]:
    from corpora import Document
    from corpora.loaders.stdlib import stdlib_root

    root = stdlib_root()
    return [Document.create((root / n).read_text(encoding="utf-8"), corpus="stdlib", path=n) for n in names]


@pytest.fixture(scope="session")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from envgen.generate import GenerateConfig, run_generate
    from envgen.library import Library
    from gym_envs.spec import parse_spec
    from tests.cli.specs import lending_spec
    from tests.envgen.test_generate import FixtureProposer, _docs

    root = tmp_path_factory.mktemp("inspect") / "lib"
    cfg = GenerateConfig(out=root, n=2, proposer="template", validation="inprocess")
    run_generate(cfg, progress=False, docs=_stdlib_docs(["sched.py", "queue.py"]))
    docs = _docs(3)
    cfg = GenerateConfig(proposer="fixture", out=root, n=3, max_retries=0, validation="inprocess")
    run_generate(cfg, progress=False, proposer=FixtureProposer(hopeless=[docs[2].id]), docs=docs)
    spec = lending_spec()
    spec["id"] = "hostile-desk"
    spec["title"] = HOSTILE_TITLE
    spec["description"] = HOSTILE_DESCRIPTION
    spec["tools"][0]["description"] = "</pre></td><script>alert('tool')</script>"
    with Library(root) as lib:
        lib.add(parse_spec(spec))
    return root


@pytest.fixture(scope="session")
def runs(library: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    from eval.runner import EvalConfig, run_eval

    base = tmp_path_factory.mktemp("runs")
    out = []
    for model in ("reference", "empty"):
        folder = base / model
        run_eval(EvalConfig(policy="scripted", model=model, suites=[f"library:{library}"], out=folder,
                            executor="inprocess", progress=False, n_boot=50, write_back=True))
        out.append(folder)
    return out


@pytest.fixture(scope="session")
def site(library: Path, runs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    from envgen.inspect import build_site

    out = tmp_path_factory.mktemp("site") / "site"
    build_site(str(library), out, runs=runs, executor="inprocess")
    return out


def env_ids(library: Path) -> list[str]:
    return sorted(p.stem for p in (library / "specs").glob("*.json"))


def rejected_ids(library: Path) -> list[str]:
    return sorted(json.loads(p.read_text())["attempt_id"] for p in (library / "rejected").glob("*.json"))


RLO = "\u202e"  #: RIGHT-TO-LEFT OVERRIDE, never closed: it would reverse whatever follows it in its paragraph
LONG = "A" * 3000  #: one unbroken token


@pytest.fixture(scope="session")
def hostile_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site of one spec whose every text carries a bidi override and a 3,000-character token."""
    from envgen.inspect import build_site
    from tests.cli.specs import lending_spec, write_spec

    spec = lending_spec()
    spec["id"] = "rtl-desk"
    bad = f"{RLO}evil gnp.exe {LONG}"
    spec["title"] = f"T {bad}"
    spec["description"] = f"D {bad} \u2069{RLO}x"  # a PDI of its own must not close the isolate around it
    spec["provenance"].update(generator=f"llm:{bad}", skill_id=f"s  {bad}  ", parents=[bad, bad])  # whitespace too
    spec["source"] = {"corpus": "stdlib", "doc_id": f"stdlib:{bad}", "path": f"{LONG}.py"}
    for tool in spec["tools"]:
        tool["description"] += f" {bad}"
        for prop in tool["parameters"].get("properties", {}).values():
            prop["description"] = f"{prop.get('description', '')} {bad}"
    for task in spec["tasks"]:
        for turn in task["turns"]:
            turn["instruction"] += f" {bad}"
    spec["state"]["seed_sql"] += f"\nINSERT INTO members VALUES (9, '{bad}');\n"
    folder = tmp_path_factory.mktemp("hostile_specs")
    write_spec(folder / "rtl-desk.json", spec)
    out = tmp_path_factory.mktemp("hostile_site") / "site"
    build_site(str(folder), out, executor="inprocess", gate="run", rows=10)
    return out

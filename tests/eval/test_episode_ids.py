"""Episode ids are unique (issue 20, class 6): never a lossy slug of suite, env, task and trial.

Env ``aaa-bbb`` with task ``ccc`` and env ``aaa`` with task ``bbb-ccc`` used to get the same id, so
``--agreement`` kept one of the two tasks and the HTML report had two sections with one anchor.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

from envgen.library import Library
from eval.runner import EvalConfig, run_eval
from eval.suites import TaskRef, episode_id
from gym_envs.spec import parse_spec
from tests.fixtures.library_spec import SPEC


def _env(env_id: str, task_id: str, tag: str) -> dict:
    data = copy.deepcopy(SPEC)
    data["id"], data["title"] = env_id, f"Library {tag}"
    data["tasks"][0]["id"] = task_id
    data["tasks"][0]["turns"][0]["instruction"] = f"Branch {tag} here: member 7 wants 'Dune', lend it."
    return data


def test_ids_of_different_episodes_differ_even_when_their_slugs_agree() -> None:
    a = TaskRef(suite="library:x", env_id="aaa-bbb", task_id="ccc", kind="read", n_turns=1)
    b = TaskRef(suite="library:x", env_id="aaa", task_id="bbb-ccc", kind="read", n_turns=1)
    c = TaskRef(suite="library:x-aaa", env_id="bbb", task_id="ccc", kind="read", n_turns=1)
    ids = {episode_id(a, 0), episode_id(b, 0), episode_id(a, 1), episode_id(c, 0)}
    assert len(ids) == 4
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+", i) for i in ids)  # safe as an HTML anchor and a file name
    same = TaskRef(suite="library:x", env_id="aaa-bbb", task_id="ccc", kind="execute", n_turns=2)
    assert episode_id(a, 0) == episode_id(same, 0)  # stable


def test_agreement_and_report_anchors_keep_both_tasks(tmp_path: Path) -> None:
    lib = Library(tmp_path / "lib")
    lib.add(parse_spec(_env("aaa-bbb", "ccc", "north")))
    lib.add(parse_spec(_env("aaa", "bbb-ccc", "south")))
    out = tmp_path / "run"
    run = run_eval(EvalConfig(policy="scripted", model="reference", suites=[f"library:{tmp_path / 'lib'}"], out=out,
                              executor="inprocess", progress=False, n_boot=50, agreement=True, write_back=False))
    ids = [r["episode_id"] for r in run.records]
    assert len(set(ids)) == 2
    agreement = next(iter(run.summary["runs"].values()))["agreement"]
    assert agreement["tasks"] == 2 and {r["task"] for r in agreement["rows"]} == {"aaa-bbb/ccc", "aaa/bbb-ccc"}
    html = (out / "report.html").read_text(encoding="utf-8")
    anchors = re.findall(r'<section class="episode" id="([^"]+)"', html)
    assert len(anchors) == 2 and len(set(anchors)) == 2
    for anchor in anchors:
        assert f'href="#{anchor}"' in html

"""What the inspector must never do: publish files of this machine a spec points at, build an empty site from
a file that is no spec, or silently take over the site of something else. And what it must show a reader:
rule numbers with their meaning, assistant turns as text and calls."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from envgen.cli import cli
from envgen.inspect import build_site

SECRET = "TOP-SECRET-host-file-5f1e"


def _site_text(out: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in out.rglob("*") if p.is_file())


def _spec_with_source(folder: Path, name: str, corpus: str, path: str) -> None:
    from tests.cli.specs import lending_spec, write_spec

    spec = lending_spec()
    spec["id"] = f"src-{name}"
    spec["source"] = {"corpus": corpus, "doc_id": f"{corpus}:{name}", "path": path}
    write_spec(folder / f"src-{name}.json", spec)


@pytest.fixture
def host(tmp_path: Path) -> dict[str, Path]:
    """A secret file outside a corpus folder, the corpus (one real document, a link pointing out), and specs."""
    secret = tmp_path / "secret" / "key.py"
    secret.parent.mkdir()
    secret.write_text(f"API_KEY = '{SECRET}'\n")
    corpus = tmp_path / "corpus"
    (corpus / "pkg").mkdir(parents=True)
    (corpus / "pkg" / "queue.py").write_text("class JobQueue:\n    def push(self, job):\n        pass\n")
    os.symlink(secret, corpus / "pkg" / "link.py")
    specs = tmp_path / "specs"
    specs.mkdir()
    _spec_with_source(specs, "good", str(corpus), "pkg/queue.py")
    _spec_with_source(specs, "absolute", str(corpus), str(secret))
    _spec_with_source(specs, "climb", str(corpus), "../secret/key.py")
    _spec_with_source(specs, "deep-climb", str(corpus), "pkg/../../secret/./key.py")
    _spec_with_source(specs, "link", str(corpus), "pkg/link.py")
    _spec_with_source(specs, "stdlib-absolute", "stdlib", str(secret))
    _spec_with_source(specs, "stdlib-climb", "stdlib", os.path.relpath(secret, _stdlib_root()))
    _spec_with_source(specs, "nul", str(corpus), "pkg/queue.py\x00../../secret/key.py")
    return {"secret": secret, "corpus": corpus, "specs": specs}


def _stdlib_root() -> Path:
    from corpora.loaders.stdlib import stdlib_root

    return Path(stdlib_root()).resolve()


def test_a_source_path_outside_its_corpus_is_never_copied_into_the_site(host: dict[str, Path],
                                                                          tmp_path: Path) -> None:
    out = tmp_path / "site"
    summary = build_site(str(host["specs"]), out, corpus=str(host["corpus"]), executor="inprocess", gate="off",
                         rows=0)
    assert summary.envs == 8  # one bad path never stops the site
    assert "names no file" in (out / "envs" / "src-nul.html").read_text()
    assert SECRET not in _site_text(out)  # no page holds the file, whichever way the path reached it
    good = (out / "envs" / "src-good.html").read_text()
    assert "JobQueue" in good  # a document inside the corpus is still shown
    for name in ("absolute", "stdlib-absolute"):
        page = (out / "envs" / f"src-{name}.html").read_text()
        assert "is absolute" in page and "so the file is not shown" in page
    for name in ("climb", "deep-climb", "link", "stdlib-climb"):
        page = (out / "envs" / f"src-{name}.html").read_text()
        assert "leads out of its corpus" in page and "it is not shown" in page


def test_a_rejected_attempt_id_from_the_catalog_cannot_name_a_file_outside_the_library(tmp_path: Path) -> None:
    import sqlalchemy as sa

    from envgen.catalog import ATTEMPTS
    from envgen.library import Library

    secret = tmp_path / "creds.json"
    secret.write_text(json.dumps({"candidate": SECRET, "reasons": [SECRET]}))
    lib_dir = tmp_path / "lib"
    with Library(lib_dir) as lib:
        lib.record_attempt(attempt_id="a1", run_id="r", doc_id="d", proposer="p", accepted=False,
                           reasons=["bad"], rejected_spec={"x": 1})
        with lib.engine.begin() as c:  # a tampered catalog: the attempt id climbs out of rejected/
            c.execute(sa.update(ATTEMPTS).where(ATTEMPTS.c.attempt_id == "a1").values(attempt_id="../../creds"))
    out = tmp_path / "site"
    build_site(str(lib_dir), out, executor="inprocess", gate="off", rows=0)
    assert SECRET not in _site_text(out)


def test_a_file_that_is_not_a_spec_is_an_error_not_an_empty_site(tmp_path: Path) -> None:
    notes = tmp_path / "notes.json"
    notes.write_text(json.dumps({"hello": "world"}))
    text = tmp_path / "README.txt"
    text.write_text("just text\n")
    for bad in (notes, text):
        out = tmp_path / f"site-{bad.stem}"
        result = CliRunner().invoke(cli, ["inspect", str(bad), "--out", str(out), "--executor", "inprocess"])
        assert result.exit_code == 1, result.output
        assert "holds no environment spec that loads" in result.output and str(bad) in result.output
        assert not out.exists()
    folder = tmp_path / "jsons"
    folder.mkdir()
    (folder / "a.json").write_text("[1, 2]")
    result = CliRunner().invoke(cli, ["inspect", str(folder), "--out", str(tmp_path / "s"), "--executor",
                                      "inprocess"])
    assert result.exit_code == 1 and "holds no environment spec" in result.output


def test_a_site_of_another_source_needs_force_and_a_rebuild_says_what_it_replaced(tmp_path: Path) -> None:
    from tests.cli.specs import lending_spec, write_spec

    out = tmp_path / "site"
    args = ["--out", str(out), "--executor", "inprocess", "--gate", "off", "--rows", "0"]
    first = CliRunner().invoke(cli, ["inspect", "library-loans", *args])
    assert first.exit_code == 0 and "replaced" not in first.output
    again = CliRunner().invoke(cli, ["inspect", "library-loans", *args])
    assert again.exit_code == 0 and "replaced the site that was in" in again.output
    assert "library-loans (1 environment, built " in again.output
    spec = tmp_path / "mine.json"
    write_spec(spec, lending_spec())
    other = CliRunner().invoke(cli, ["inspect", str(spec), *args])
    assert other.exit_code == 1 and "holds the inspector site of library-loans" in other.output
    assert "--force" in other.output and (out / "envs" / "library-loans.html").is_file()  # untouched
    forced = CliRunner().invoke(cli, ["inspect", str(spec), *args, "--force"])
    assert forced.exit_code == 0 and not (out / "envs" / "library-loans.html").exists()
    assert "--force" in CliRunner().invoke(cli, ["inspect", "-h"]).output


def test_gate_rule_numbers_come_with_their_name_and_meaning(tmp_path: Path) -> None:
    out = tmp_path / "site"
    build_site("library-loans", out, executor="inprocess", gate="run", rows=0)
    page = (out / "envs" / "library-loans.html").read_text()
    assert "The gate&#39;s rules" in page or "The gate's rules" in page
    for name in ("parse", "near-miss", "adequacy", "determinism"):
        assert f'<td class="word">{name}</td>' in page
    assert "each task&#39;s reference calls run without error" in page
    assert ">5 near-miss</td>" in page or ">7 adequacy</td>" in page  # a mutation's rule, named


def test_assistant_turns_read_as_text_and_calls() -> None:
    from envgen.inspect.collect import assistant_view, call_text

    msg = {"role": "assistant", "content": "Let me look.", "raw": {"content": "Let me look.", "tool_calls": [
        {"name": "find_book", "arguments": {"title": "Emma"}}]},
           "tool_calls": [{"id": "c", "type": "function",
                           "function": {"name": "find_book", "arguments": json.dumps({"title": "Emma", "n": 2})}}]}
    view = assistant_view(msg)
    assert view["text"] == "Let me look." and view["calls"] == ['find_book(title="Emma", n=2)']
    assert call_text("list_loans", {}) == "list_loans()"
    plain = assistant_view({"role": "assistant", "content": "Done.", "raw": "Done."})
    assert plain == {"text": "Done.", "calls": [], "raw": None}  # nothing more to show


def test_the_episode_page_shows_assistant_calls_not_json(site: Path) -> None:
    pages = sorted((site / "runs" / "reference").glob("*.html"))
    episodes = [p for p in pages if p.name != "index.html"]
    shown = "\n".join(p.read_text() for p in episodes)
    assert '<div class="msg assistant"><b>assistant</b>' in shown
    assert re.search(r'<ul class="calls"><li><code>[a-z_]+\((?:[a-z_]+=|\))', shown)  # name(arg=...) or name()
    for page in episodes:
        body = page.read_text().split("<h2>Transcript</h2>", 1)[1]
        for block in body.split('<div class="msg assistant">')[1:]:
            visible = block.split("<details>", 1)[0]
            assert "&#34;tool_calls&#34;" not in visible and '"tool_calls"' not in visible


def test_a_library_whose_files_link_out_of_it_never_shows_their_targets(tmp_path: Path) -> None:
    """A library is data from elsewhere: a spec or gate report that is a link to a file of this machine."""
    from envgen.library import Library
    from gym_envs.spec import parse_spec
    from tests.cli.specs import lending_spec

    secret = tmp_path / "creds.json"
    secret.write_text(json.dumps({"id": "a-secret", "accepted": True, "token": SECRET, "reasons": [SECRET]}))
    root = tmp_path / "lib"
    with Library(root) as lib:
        lib.add(parse_spec(lending_spec()))
    spec_file = next((root / "specs").glob("*.json"))
    env_id = spec_file.stem
    (root / "gate").mkdir(exist_ok=True)
    os.symlink(secret, root / "gate" / f"{env_id}.json")
    out = tmp_path / "site"
    build_site(str(root), out, executor="inprocess", gate="stored", rows=0)
    assert SECRET not in _site_text(out)
    spec_file.unlink()
    os.symlink(secret, spec_file)
    out2 = tmp_path / "site2"
    build_site(str(root), out2, executor="inprocess", gate="stored", rows=0)
    assert SECRET not in _site_text(out2) and "a link that leads out of the library" in _site_text(out2)
    listed = CliRunner().invoke(cli, ["list", str(root)])
    assert "(corrupt spec file)" in listed.output and "leads out of the library" in " ".join(listed.output.split())
    assert SECRET not in listed.output

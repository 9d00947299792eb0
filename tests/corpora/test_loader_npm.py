"""The ``npm`` loader (JavaScript/TypeScript packages from a cache folder; ``npm pack`` on a miss) and the
stateful score of documents that are not Python."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from corpora import CorpusError, Document, SelectConfig, load_corpus, select_documents, stateful_score
from corpora.loaders import npm as npm_loader

QUEUE = """\
class Queue {
  constructor(name) { this.name = name; this.jobs = []; }
  addJob(data) { this.jobs.push(data); this.count = this.jobs.length; }
  getJob(id) { return this.jobs[id]; }
  removeJob(id) { this.jobs.splice(id, 1); }
}
"""
UTIL = "export function clamp(x, lo, hi) { return Math.min(hi, Math.max(lo, x)); }\n"


def _cache(root: Path) -> Path:
    pkg = root / "npm" / "queuey@1.0.0" / "package"
    (pkg / "lib").mkdir(parents=True)
    (pkg / "dist").mkdir()
    (pkg / "lib" / "queue.js").write_text(QUEUE)
    (pkg / "lib" / "util.ts").write_text(UTIL)
    (pkg / "lib" / "types.d.ts").write_text("export type X = number;\n")
    (pkg / "dist" / "bundle.min.js").write_text("var a=1;")
    (pkg / "README.md").write_text("# queuey\n")
    return root


def test_loads_sources_from_the_cache_without_the_network(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVWRIGHT_CACHE", str(_cache(tmp_path)))
    monkeypatch.setattr(npm_loader.shutil, "which", lambda _: None)  # no npm: everything comes from the cache
    docs = list(load_corpus("npm:queuey@1.0.0"))
    assert [d.path for d in docs] == ["queuey@1.0.0/lib/queue.js", "queuey@1.0.0/lib/util.ts"]
    assert docs[0].id == "npm:queuey@1.0.0/lib/queue.js" and docs[0].language == "javascript"
    assert docs[1].language == "typescript" and docs[0].metadata == {"package": "queuey", "version": "1.0.0"}


def test_a_missing_package_without_npm_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVWRIGHT_CACHE", str(tmp_path))
    monkeypatch.setattr(npm_loader.shutil, "which", lambda _: None)
    with pytest.raises(CorpusError, match="npm command is not installed"):
        list(load_corpus("npm:queuey@1.0.0"))
    with pytest.raises(CorpusError, match="name@version"):
        list(load_corpus("npm:queuey"))


def test_fetch_unpacks_what_npm_pack_writes(tmp_path, monkeypatch):
    def fake_run(cmd, **kw):  # what `npm pack SPEC --pack-destination DIR` does: a tarball of package/
        dest = Path(cmd[cmd.index("--pack-destination") + 1])
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            data = QUEUE.encode()
            info = tarfile.TarInfo("package/index.js")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
            evil = tarfile.TarInfo("../escape.js")  # never written outside the folder
            evil.size = 1
            tar.addfile(evil, io.BytesIO(b"x"))
        (dest / "queuey-1.0.0.tgz").write_bytes(buf.getvalue())
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(npm_loader.shutil, "which", lambda _: "/usr/bin/npm")
    monkeypatch.setattr(npm_loader.subprocess, "run", fake_run)
    root = npm_loader.fetch_package("queuey@1.0.0", tmp_path / "cache")
    assert (root / "index.js").read_text() == QUEUE
    assert not (tmp_path / "escape.js").exists() and not (tmp_path / "cache" / "escape.js").exists()
    monkeypatch.setattr(npm_loader.subprocess, "run", lambda *a, **k: pytest.fail("fetched twice"))
    assert npm_loader.fetch_package("queuey@1.0.0", tmp_path / "cache") == root  # cached


def test_stateful_score_of_javascript_and_the_selection_keeps_it(tmp_path, monkeypatch):
    queue = Document.create(QUEUE, corpus="mem", path="queue.js")
    util = Document.create(UTIL, corpus="mem", path="util.js")
    assert stateful_score(queue) > 2 and stateful_score(util) == 0.0
    monkeypatch.setenv("ENVWRIGHT_CACHE", str(_cache(tmp_path)))
    picked = select_documents(load_corpus("npm:queuey@1.0.0"), SelectConfig(min_stateful_score=0.0))
    assert [d.path for d in picked] == ["queuey@1.0.0/lib/queue.js"]

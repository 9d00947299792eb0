"""The stdlib loader, the offline default."""

from __future__ import annotations

import itertools
import time

from corpora import filter_stateful, load_corpus, stateful_score
from corpora.loaders.stdlib import module_name


def test_stdlib_ids_order_and_exclusions() -> None:
    docs = list(load_corpus("stdlib"))
    ids = [d.id for d in docs]
    assert len(ids) == len(set(ids)) > 500
    assert "stdlib:json/decoder.py" in ids
    paths = [d.path for d in docs]
    for part in ("test/", "tests/", "idle_test/", "site-packages/", "turtledemo/", "__pycache__/"):
        assert not any("/" + part in "/" + p for p in paths), part
    assert not any(p.rsplit("/", 1)[-1].startswith("test_") for p in paths)
    assert all(d.language == "python" for d in docs)
    decoder = docs[ids.index("stdlib:json/decoder.py")]
    assert decoder.metadata["module"] == "json.decoder"
    assert ids == [d.id for d in load_corpus("stdlib")]


def test_stdlib_is_lazy_and_fast() -> None:
    start = time.perf_counter()
    first = list(itertools.islice(load_corpus("stdlib"), 5))
    assert len(first) == 5
    assert time.perf_counter() - start < 2.0


def test_module_name() -> None:
    assert module_name("json/__init__.py") == "json"
    assert module_name("email/mime/text.py") == "email.mime.text"


def test_private_modules_can_be_dropped() -> None:
    paths = [d.path for d in load_corpus("stdlib", include_private=False)]
    assert "_pyio.py" not in paths and "json/__init__.py" in paths


def test_enough_stateful_stdlib_documents() -> None:
    """The generator needs at least ~250 distinct stdlib documents with a stateful class."""
    stateful = list(filter_stateful(load_corpus("stdlib")))
    assert len({d.sha256 for d in stateful}) >= 250
    assert all(stateful_score(d) > 0 for d in stateful[:10])

"""``envwright generate`` on inputs that go wrong: special files and odd corpora, unusable ``--out``
folders, respelled corpus paths, bad numbers, loader options, and the reasons a run prints."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from envgen.cli import cli
from envgen.errors import error_message
from envgen.generate import GenerateConfig, GenerateSummary, corpus_key

SHELF = ("class Shelf:\n    def __init__(self):\n        self.items = {}\n\n    def add_item(self, name, qty):\n"
         "        self.items[name] = qty\n\n    def get_item(self, name):\n        return self.items[name]\n\n"
         "    def remove_item(self, name):\n        del self.items[name]\n")

BANK_GO = """package store

type Bank struct {
\taccounts map[string]int64
}

func (b *Bank) Open(id string) { b.accounts[id] = 0 }

func (b *Bank) Deposit(id string, amount int64) { b.accounts[id] += amount }
"""


def _generate(*args: str, seconds: float = 120.0) -> tuple[int, str]:
    """Run ``envwright generate ARGS`` in a thread, failing (not hanging) when it blocks."""
    box: list[object] = []
    thread = threading.Thread(target=lambda: box.append(CliRunner().invoke(cli, ["generate", *args])), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"generate {' '.join(args)} blocked for {seconds}s"
    result = box[0]
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)  # type: ignore[attr-defined]
    return result.exit_code, result.output  # type: ignore[attr-defined]


def _corpus(tmp_path: Path, files: dict[str, str], name: str = "corpus") -> Path:
    root = tmp_path / name
    root.mkdir()
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes need POSIX")
def test_a_named_pipe_in_the_corpus_is_skipped_and_named(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path, {})
    os.mkfifo(corpus / "pipe.py")
    code, out = _generate("--corpus", str(corpus), "--n", "2", "--out", str(tmp_path / "lib"))
    assert code == 1
    assert "1 skipped as not a regular file: pipe.py (a named pipe)" in " ".join(out.split())
    assert not (tmp_path / "lib").exists()  # a failed run leaves no library behind


@pytest.mark.parametrize("where", ["file", "below-file", "other-folder"])
def test_an_unusable_out_is_one_line_naming_it_and_nothing_is_written(tmp_path: Path, where: str) -> None:
    corpus = _corpus(tmp_path, {"shelf.py": SHELF})
    (tmp_path / "afile").write_text("keep me")
    project = _corpus(tmp_path, {"main.py": "x = 1\n"}, name="project")
    out = {"file": tmp_path / "afile", "below-file": tmp_path / "afile" / "lib", "other-folder": project}[where]
    code, text = _generate("--corpus", str(corpus), "--n", "1", "--out", str(out))
    assert code == 1 and "Traceback" not in text
    (line,) = [t for t in text.splitlines() if t.startswith("Error:")]
    assert str(out) in line and ("give a new folder" in line or "give a new or empty folder" in line), line
    assert (tmp_path / "afile").read_text() == "keep me"
    assert sorted(p.name for p in project.iterdir()) == ["main.py"]


def test_a_read_only_library_is_one_line_naming_the_catalog(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path, {"shelf.py": SHELF})
    code, _ = _generate("--corpus", str(corpus), "--n", "1", "--out", str(tmp_path / "lib"))
    assert code == 0
    catalog = tmp_path / "lib" / "catalog.sqlite"
    code, text = _generate("--corpus", str(corpus), "--n", "1", "--out", str(tmp_path / "lib"),
                           "--catalog-url", f"sqlite:///file:{catalog}?mode=ro&uri=true")
    assert code == 1 and "Traceback" not in text
    assert f"Error: cannot write the catalog file:{catalog}" in text and "writable" in text


def test_a_nonexistent_corpus_leaves_no_library(tmp_path: Path) -> None:
    code, text = _generate("--corpus", str(tmp_path / "nope"), "--n", "1", "--out", str(tmp_path / "lib"))
    assert code == 1 and "neither a registered loader nor an existing path" in text
    assert not (tmp_path / "lib").exists()


def test_a_corpus_in_another_encoding_says_where_and_how_to_read_it(tmp_path: Path) -> None:
    path = tmp_path / "legacy.jsonl"
    path.write_bytes(json.dumps({"content": "# café\n" + SHELF, "path": "shelf.py", "lang": "python"},
                                ensure_ascii=False).encode("cp1252") + b"\n")
    code, text = _generate("--corpus", str(path), "--n", "1", "--out", str(tmp_path / "lib"))
    flat = " ".join(text.split())
    assert code == 1 and f"{path}:1: not utf-8 text (byte 0xe9" in flat
    assert "--corpus-option encoding=cp1252" in flat
    code, text = _generate("--corpus", str(path), "--n", "1", "--out", str(tmp_path / "lib"),
                           "--corpus-option", "encoding=cp1252")
    assert code == 0, text


def test_a_corrupt_gz_corpus_is_one_line(tmp_path: Path) -> None:
    fake = tmp_path / "dump.jsonl.gz"
    fake.write_text(json.dumps({"content": SHELF, "path": "shelf.py"}) + "\n")
    code, text = _generate("--corpus", str(fake), "--n", "1", "--out", str(tmp_path / "lib"))
    assert code == 1 and "Traceback" not in text
    assert "not a valid gzip file" in text and "rename it without the .gz" in " ".join(text.split())


def test_a_source_tree_with_a_state_json_is_read_as_a_tree(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path, {"shelf.py": SHELF, "state.json": '{"open": true}'})
    code, text = _generate("--corpus", str(corpus), "--n", "1", "--out", str(tmp_path / "lib"))
    assert code == 0, text


def test_error_message_is_the_message_of_every_exception_type() -> None:
    decode = UnicodeDecodeError("utf-8", b"caf\xe9!", 3, 4, "invalid continuation byte")
    assert error_message(decode) == "'utf-8' codec can't decode byte 0xe9 in position 3: invalid continuation byte"
    assert error_message(KeyError("no such loader")) == "no such loader"
    assert error_message(FileNotFoundError(2, "No such file or directory", "x.json")) == \
        "[Errno 2] No such file or directory: 'x.json'"
    assert error_message(RuntimeError()) == "RuntimeError"


def test_a_go_corpus_passes_the_stateful_filter_and_rejections_are_printed(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path, {"store/store.go": BANK_GO})
    script = tmp_path / "script.jsonl"
    script.write_text('"not a spec"\n')
    code, text = _generate("--corpus", str(corpus), "--n", "2", "--proposer", "llm", "--backend", "scripted",
                           "--model", str(script), "--backend-option", "cycle=true", "--max-retries", "0",
                           "--out", str(tmp_path / "lib"))
    flat = " ".join(text.split())
    assert "no usable documents" not in flat
    assert code == 1 and "no environment was accepted from 1 documents" in flat
    assert "Why attempts were rejected" in flat and "no_json (1):" in flat
    assert "the rejection reasons are listed above" in flat and f"envwright inspect {tmp_path / 'lib'}" in flat


def test_the_template_proposer_says_it_reads_python_on_a_go_corpus(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path, {"store.go": BANK_GO})
    code, text = _generate("--corpus", str(corpus), "--n", "2", "--out", str(tmp_path / "lib"))
    flat = " ".join(text.split())
    assert code == 1 and "the language filter (only python) removed 1" in flat
    assert "the template proposer reads Python source" in flat and "--proposer llm" in flat


def test_rejections_the_summary_table_only_counts_are_printed_with_their_reason(tmp_path: Path) -> None:
    py2 = ("class Shelf:\n    def add_item(self, x):\n        self.items.append(x)\n        print 'added'\n\n"
           "    def get_item(self, i):\n        return self.items[i]\n")
    corpus = _corpus(tmp_path, {"shelf.py": py2})
    code, text = _generate("--corpus", str(corpus), "--n", "1", "--out", str(tmp_path / "lib"),
                           "--proposer", "template")
    flat = " ".join(text.split())
    assert code == 1 and "no_spec (1):" in flat and "document is not parsable Python" in flat


def test_the_same_corpus_spelled_differently_resumes_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = _corpus(tmp_path, {"shelf.py": SHELF})
    lib = str(tmp_path / "lib")
    code, text = _generate("--corpus", str(corpus), "--n", "1", "--out", lib, "--json")
    assert code == 0 and json.loads(text)["accepted"] == 1
    monkeypatch.chdir(tmp_path)
    for spelling in (str(corpus) + "/", "corpus", "./corpus/", "tree:" + str(corpus)):
        code, text = _generate("--corpus", spelling, "--n", "1", "--out", lib, "--json")
        summary = json.loads(text)
        assert code == 0 and (summary["attempted"], summary["skipped_resumed"]) == (0, 1), (spelling, summary)
    assert corpus_key("corpus") == corpus_key(str(corpus)) == str(corpus.resolve())
    assert corpus_key("stdlib") == "stdlib" and corpus_key("hf:bigcode/the-stack-smol") == "hf:bigcode/the-stack-smol"
    keyed = GenerateConfig(corpus=str(corpus), corpus_options={"max_bytes": 5000})
    assert keyed.run_id != GenerateConfig(corpus=str(corpus)).run_id  # other documents, another run


def test_a_run_whose_every_attempt_is_already_in_the_library_succeeds(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from envgen import generate as gen

    def all_duplicates(cfg, progress=True):
        return GenerateSummary(run_id="r", attempted=3, duplicates=3, rejected_by_reason={"duplicate": 3},
                               reason_examples={"duplicate": ["environment 'a' duplicates 'b'"]})

    monkeypatch.setattr(gen, "run_generate", all_duplicates)
    code, text = _generate("--out", str(tmp_path / "lib"))
    assert code == 0 and "Nothing new: each of the 3 documents attempted gave an environment" in " ".join(text.split())


@pytest.mark.parametrize(("flag", "value", "expected"), [
    ("--batch-size", "-3", "--batch-size"), ("--batch-size", "0", "--batch-size"),
    ("--max-retries", "-5", "--max-retries"),
])
def test_out_of_range_numbers_are_usage_errors(tmp_path: Path, flag: str, value: str, expected: str) -> None:
    code, text = _generate(flag, value, "--out", str(tmp_path / "lib"))
    assert code == 2 and expected in text and "range" in text
    assert not (tmp_path / "lib").exists()


def test_the_config_refuses_what_the_flags_refuse() -> None:
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        GenerateConfig(batch_size=0)
    with pytest.raises(ValueError, match="max_retries must be >= 0"):
        GenerateConfig(max_retries=-1)


def test_corpus_options_reach_the_loader_and_bad_ones_are_named(tmp_path: Path) -> None:
    path = tmp_path / "dump.jsonl"
    path.write_text(json.dumps({"code": SHELF, "file": "shelf.py"}) + "\n")
    code, text = _generate("--corpus", str(path), "--n", "1", "--out", str(tmp_path / "lib"))
    flat = " ".join(text.split())
    assert code == 1 and "set text_field=KEY (command line: --corpus-option text_field=KEY)" in flat
    code, text = _generate("--corpus", str(path), "--n", "1", "--out", str(tmp_path / "lib"),
                           "--corpus-option", "text_field=code", "--corpus-option", "path_field=file",
                           "--corpus-option", "language_field=None")
    assert code == 0, text
    code, text = _generate("--corpus", str(path), "--corpus-option", "text_feild=code", "--out", str(tmp_path / "x"))
    assert code == 2 and "the 'jsonl' corpus loader has no option 'text_feild'; did you mean 'text_field'" in text
    code, text = _generate("--corpus", str(tmp_path), "--corpus-option", "max_bytes=lots", "--out",
                           str(tmp_path / "x"))
    assert code == 1 and "option 'max_bytes' of corpus loader 'tree' must be an integer, got 'lots'" in text
    code, text = _generate("--corpus", str(path), "--corpus-option", "oops", "--out", str(tmp_path / "x"))
    assert code == 2 and "--corpus-option must look like KEY=VALUE" in text


def test_test_code_is_left_out_unless_kept(tmp_path: Path) -> None:
    """A repository of tests gave environments of its fixtures ('Fake carts (tests.test_cart)'): test code is
    dropped, the message says so and how to keep it, and --keep-tests is its own run."""
    root = _corpus(tmp_path, {"tests/test_shelf.py": SHELF})
    code, out = _generate("--corpus", str(root), "--n", "2", "--out", str(tmp_path / "lib"))
    assert code == 1 and "the test-code filter" in out and "--keep-tests keeps test code" in out
    assert "reads Python source" not in out  # the language filter removed nothing
    assert not (tmp_path / "lib").exists()
    code, out = _generate("--corpus", str(root), "--n", "2", "--out", str(tmp_path / "kept"), "--keep-tests")
    assert code == 0, out
    plain = GenerateConfig(corpus=str(root), out=tmp_path / "a")
    assert plain.run_id != GenerateConfig(corpus=str(root), out=tmp_path / "a", keep_tests=True).run_id

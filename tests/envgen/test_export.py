"""``envwright export --format hf`` and ``envwright import``: a library as a Hugging Face dataset and back.

A small library (three shipped examples, the gym_envs/ENVSPEC.md demo with catalog data, and a spec file in a
non-canonical layout) is exported; ``datasets.load_dataset`` reads both configs; importing the export
gives byte-identical spec files and the same catalog rows; the card states the library's figures;
writes are atomic and refuse to overwrite; ``--push-to-hub`` is exercised up to the network boundary
(an autospec of ``huggingface_hub.HfApi`` records what would be uploaded).
"""

from __future__ import annotations

import copy
import filecmp
import json
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

pytest.importorskip("pyarrow", reason="the hf extra is not installed (pip install -e '.[hf]')")

from click.testing import CliRunner

from envgen.cli import cli
from envgen.export import export_hf, import_hf, push_to_hub
from envgen.export_columns import DATA_FILES, ENV_COLUMNS, TASK_COLUMNS
from envgen.library import Library
from gym_envs.examples import example_path
from gym_envs.spec import load_spec, parse_spec
from tests.fixtures.library_spec import SPEC

EXAMPLES = ("library-loans", "bank-ledger", "support-tickets")
HAND_FORMATTED = "hand-formatted-demo"


@pytest.fixture
def library(tmp_path: Path) -> Library:
    """Five environments: three examples, the demo with a model, grounding and evaluation results, and
    one spec file written in a layout of its own (compact JSON, keys reordered), indexed on reopen."""
    root = tmp_path / "lib"
    lib = Library(root)
    for name in EXAMPLES:
        lib.add(load_spec(example_path(name)), run_id="run-1", grounding=0.5)
    lib.add(parse_spec(SPEC), model="Qwen/Qwen3-8B", run_id="run-2", grounding=0.9)
    lib.record_task_result("library-demo", "t0", "Qwen/Qwen3-8B", n=4, passes=1)
    lib.record_task_result("library-demo", "t0", "reference", n=1, passes=1, reference_passes=True)
    lib.set_split("library-demo", "test")
    other = copy.deepcopy(SPEC)
    other["id"] = HAND_FORMATTED
    other["tasks"][0]["turns"][0]["instruction"] = "Lend the novel Dune to the member with number seven, please."
    other["tasks"][0]["turns"][1]["instruction"] = "Then count what that member holds at this moment."
    text = json.dumps(dict(reversed(list(other.items()))), separators=(",", ":"))  # no trailing newline
    (root / "specs" / f"{HAND_FORMATTED}.json").write_text(text, encoding="utf-8")
    lib.close()
    return Library(root)


def _spec_files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / "specs").glob("*.json"))}


def _catalog(lib: Library) -> list[dict[str, Any]]:
    """The catalog rows, but for what import measures afresh (the gate's mutation score and mutants)."""
    return [{k: v for k, v in r.items() if k not in ("path", "mutation_score", "mutants")}
            for r in lib.rows(sort="id")]


def test_export_loads_with_datasets_and_imports_byte_for_byte(library: Library, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "export"
    summary = export_hf(library, out)
    assert (summary.envs, summary.tasks) == (5, 7 + 7 + 7 + 1 + 1)
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "data"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folder left

    cache = str(tmp_path / "hf-cache")
    envs = datasets.load_dataset(str(out), "environments", split="train", cache_dir=cache)
    tasks = datasets.load_dataset("parquet", data_files=str(out / DATA_FILES["tasks"]), split="train",
                                  cache_dir=cache)
    assert envs.column_names == [c[0] for c in ENV_COLUMNS]
    assert tasks.column_names == [c[0] for c in TASK_COLUMNS]
    files = _spec_files(library.root)
    assert {f"{r['env_id']}.json": r["spec_json"].encode() for r in envs} == files
    assert {f"{r['env_id']}.json": r["spec_json"].encode() for r in tasks} == files  # every task row
    n_tasks = sum(len(parse_spec(t).tasks) for t in files.values())
    assert len(tasks) == summary.tasks == n_tasks
    demo = next(r for r in tasks if r["env_id"] == "library-demo")
    assert demo["instructions"] == [t["instruction"] for t in SPEC["tasks"][0]["turns"]]
    assert demo["kind"] == "read_then_write" and demo["tool_names"] == ["find_book", "borrow_book", "list_loans"]
    assert json.loads(demo["tools"])[0]["function"]["name"] == "find_book"
    assert demo["solve_rate"] == 0.25 and demo["n_evals"] == 4  # the reference policy is not counted
    assert demo["provenance"]["generator"] == "manual"
    assert "You can call these tools" in demo["system_prompt"]

    target = Library(tmp_path / "imported")
    result = import_hf(out, target, executor="inprocess")
    assert sorted(result.added) == sorted(p.removesuffix(".json") for p in files) and not result.present
    assert not result.refused and all(r["mutation_score"] == 1.0 for r in target.rows())  # the gate, re-run
    assert all((target.gate_report(i) or {}).get("accepted") for i in result.added)  # its reports kept
    assert _spec_files(target.root) == files
    _, mismatch, errors = filecmp.cmpfiles(library.root / "specs", target.root / "specs", list(files),
                                               shallow=False)
    assert not mismatch and not errors
    assert _catalog(target) == _catalog(library)
    row = target.get_row("library-demo")
    assert (row["model"], row["grounding"], row["solve_rate"], row["n_evals"], row["split"]) == \
        ("Qwen/Qwen3-8B", 0.9, 0.25, 4, "test")
    strip = [{k: v for k, v in s.items() if k != "updated_at"} for s in library.task_stats()]
    assert sorted([{k: v for k, v in s.items() if k != "updated_at"} for s in target.task_stats()],
                  key=str) == sorted(strip, key=str)

    again = import_hf(out, target, executor="inprocess")  # importing twice adds nothing and changes nothing
    assert not again.added and len(again.present) == 5 and _spec_files(target.root) == files


def test_card_states_the_library_figures(library: Library, tmp_path: Path) -> None:
    export_hf(library, tmp_path / "export", repo_id="someone/envs")
    card = (tmp_path / "export" / "README.md").read_text()
    head, _, body = card.partition("\n---\n")
    assert "config_name: tasks" in head and "config_name: environments" in head
    assert "path: data/tasks.parquet" in head and "default: true" in head
    assert "| environments | 5 |" in body
    assert "| proposers | manual (5) |" in body
    assert "| skills | none" in body
    assert "mean 0.600 over 4 environments" in body  # grounding: 0.5 x3 and 0.9; one spec has none
    assert "| solve rates (environments) | mean 0.250 over 1 environments" in body
    assert "1 of 23 tasks evaluated, mean 0.250" in body
    assert 'load_dataset("someone/envs", "tasks", split="train")' in body
    assert "hf://datasets/someone/envs/data/tasks.parquet" in body
    for name, _, meaning in TASK_COLUMNS + ENV_COLUMNS:
        assert f"| `{name}` |" in body and meaning in body


def test_writes_are_atomic_and_never_overwrite_silently(library: Library, tmp_path: Path) -> None:
    out = tmp_path / "export"
    export_hf(library, out)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(FileExistsError, match="--overwrite"):
        export_hf(library, out)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    export_hf(library, out, overwrite=True)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before  # same library, same bytes
    stranger = tmp_path / "notes"
    stranger.mkdir()
    (stranger / "todo.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not an envwright export"):
        export_hf(library, stranger, overwrite=True)
    assert (stranger / "todo.txt").read_text() == "mine"
    # a failure half way leaves nothing behind: no output, no temporary folder
    (library.root / "specs" / "bank-ledger.json").unlink()
    with pytest.raises(FileNotFoundError, match="bank-ledger"):
        export_hf(library, tmp_path / "broken")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export", "lib", "notes"]


def test_import_refuses_a_conflicting_library_and_writes_nothing(library: Library, tmp_path: Path) -> None:
    export_hf(library, tmp_path / "export")
    target = Library(tmp_path / "target")
    changed = copy.deepcopy(SPEC)
    changed["description"] = "A different lending library."
    changed["tasks"][0]["turns"][0]["instruction"] = "Words entirely unlike the exported ones, about lending."
    changed["tasks"][0]["turns"][1]["instruction"] = "Yet another unrelated sentence for this second turn."
    target.add(parse_spec(changed))
    before = _spec_files(target.root)
    with pytest.raises(ValueError, match=r"(?s)nothing was imported.*library-demo: an environment with id "
                                         r".* different spec file"):
        import_hf(tmp_path / "export", target, executor="inprocess")
    assert _spec_files(target.root) == before and len(target) == 1


def _tamper(out: Path, change: Any) -> str:
    """Rewrite the first environment row of an export with ``change(row)``; returns its id."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(out / DATA_FILES["environments"]).to_pylist()
    change(table[0])
    pq.write_table(pa.Table.from_pylist(table), out / DATA_FILES["environments"])
    return str(table[0]["env_id"])


def test_import_refuses_a_damaged_row(library: Library, tmp_path: Path) -> None:
    out = tmp_path / "export"
    export_hf(library, out)
    bad = _tamper(out, lambda r: r.update(spec_json=r["spec_json"].replace("a", "b", 1)))
    result = import_hf(out, target := Library(tmp_path / "target"), executor="inprocess")
    assert list(result.refused) == [bad] and "does not match its spec_sha256" in result.refused[bad]
    assert bad not in {r["id"] for r in target.rows()} and len(result.added) == 4


def _break_reference(row: dict[str, Any]) -> None:
    """A spec whose first check expects what its reference does not do, its hash updated, marked valid."""
    spec = json.loads(row["spec_json"])
    checks = spec["tasks"][0]["turns"][0]["checks"]
    sql = next(c for c in checks if c["kind"] == "sql")
    sql["expect"] = [[987654]]
    row["spec_json"] = json.dumps(spec, indent=2) + "\n"
    row["spec_sha256"] = __import__("hashlib").sha256(row["spec_json"].encode()).hexdigest()
    row["valid"] = True


def test_import_runs_the_gate_again_and_refuses_a_tampered_row_marked_valid(library: Library,
                                                                             tmp_path: Path) -> None:
    out = tmp_path / "export"
    export_hf(library, out)
    bad = _tamper(out, _break_reference)
    target = tmp_path / "target"
    result = CliRunner().invoke(cli, ["import", str(out), "--out", str(target)])  # the default: worker sandbox
    assert result.exit_code == 1, result.output
    said = " ".join(result.output.split())  # rich folds long lines
    assert f"refused {bad}: the validity gate, run on import, rejects it" in said
    assert "rule 3" in result.output and "1 environment of" in result.output
    assert not (target / "specs" / f"{bad}.json").exists()  # never installed: train, serve and eval never see it
    with Library.open_readonly(target) as lib:
        assert bad not in {r["id"] for r in lib.rows()} and len(lib) == 4


def test_import_refuses_a_row_whose_own_gate_report_or_flag_says_rejected(library: Library, tmp_path: Path) -> None:
    out = tmp_path / "export"
    export_hf(library, out)

    def rejected_report(row: dict[str, Any]) -> None:
        row["gate_report"] = json.dumps({"accepted": False, "reasons": [{"text": "rule 7 (adequacy): a survivor"}]})

    bad = _tamper(out, rejected_report)
    result = import_hf(out, Library(tmp_path / "t1"), executor="inprocess")
    assert result.refused == {bad: "its exported gate report says it was rejected: rule 7 (adequacy): a survivor"}
    bad = _tamper(out, lambda r: r.update(gate_report=None, valid=False))
    result = import_hf(out, Library(tmp_path / "t2"), executor="inprocess")
    assert result.refused == {bad: "its row says it was not accepted (valid is false)"}


def test_export_carries_the_gate_reports_the_library_kept(library: Library, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    library.write_gate_report("library-demo", {"accepted": True, "mutation_score": 1.0, "reasons": []})
    export_hf(library, tmp_path / "export")
    rows = {r["env_id"]: r for r in pq.read_table(tmp_path / "export" / DATA_FILES["environments"]).to_pylist()}
    assert json.loads(rows["library-demo"]["gate_report"])["accepted"] is True
    assert rows["bank-ledger"]["gate_report"] is None  # none kept for it


def test_push_to_hub_uploads_the_export_folder(library: Library, tmp_path: Path) -> None:
    from huggingface_hub import HfApi

    out = tmp_path / "export"
    export_hf(library, out, repo_id="someone/envs")
    api = mock.create_autospec(HfApi, instance=True)  # the real API's signatures; no network
    api.upload_folder.return_value.commit_url = "https://huggingface.co/datasets/someone/envs/commit/abc"
    url = push_to_hub(out, "someone/envs", private=True, api=api)
    assert url.endswith("/commit/abc")
    api.create_repo.assert_called_once_with("someone/envs", repo_type="dataset", private=True, exist_ok=True)
    kwargs = api.upload_folder.call_args.kwargs
    assert kwargs["repo_id"] == "someone/envs" and kwargs["repo_type"] == "dataset"
    assert Path(kwargs["folder_path"]) == out
    uploaded = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert uploaded == ["README.md", DATA_FILES["environments"], DATA_FILES["tasks"]]
    assert set(kwargs["allow_patterns"]) == {"README.md", "data/*.parquet"}
    with pytest.raises(FileNotFoundError, match="not an envwright export"):
        push_to_hub(tmp_path, "someone/envs", api=api)


def test_cli_export_push_and_import(library: Library, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub

    calls: list[tuple[str, Any]] = []

    class FakeApi:  # records what the CLI asks of HfApi (the real one would need the network)
        def __init__(self, token: str | None = None) -> None:
            calls.append(("init", token))

        def create_repo(self, repo_id: str, **kwargs: Any) -> None:
            calls.append(("create_repo", (repo_id, kwargs)))

        def upload_folder(self, **kwargs: Any) -> Any:
            calls.append(("upload_folder", kwargs))
            return mock.Mock(commit_url="https://huggingface.co/datasets/me/envs/commit/1")

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    out = tmp_path / "export"
    root = str(library.root)
    library.close()
    result = CliRunner().invoke(cli, ["export", root, "--format", "hf", "--out", str(out), "--push-to-hub",
                                      "me/envs"])
    assert result.exit_code == 0, result.output
    assert "exported 5 environments (23 tasks)" in result.output and " s (" in result.output
    assert "pushed to https://huggingface.co/datasets/me/envs" in result.output
    assert [c[0] for c in calls] == ["init", "create_repo", "upload_folder"]
    assert calls[1][1] == ("me/envs", {"repo_type": "dataset", "private": False, "exist_ok": True})
    again = CliRunner().invoke(cli, ["export", root, "--out", str(out)])
    assert again.exit_code == 1 and "--overwrite" in again.output

    # `import owner/name` downloads the dataset repository (mocked at the network boundary)
    seen: dict[str, Any] = {}

    def fake_download(repo_id: str, **kwargs: Any) -> str:
        seen.update(kwargs, repo_id=repo_id)
        return str(out)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    result = CliRunner().invoke(cli, ["import", "me/envs", "--out", str(tmp_path / "mine")])
    assert result.exit_code == 0, result.output
    assert "imported 5 environments" in result.output
    assert seen["repo_id"] == "me/envs" and seen["repo_type"] == "dataset"
    assert _spec_files(tmp_path / "mine") == _spec_files(library.root)
    missing = CliRunner().invoke(cli, ["import", str(tmp_path / "nowhere"), "--out", str(tmp_path / "x")])
    assert missing.exit_code == 1 and "not a Hub dataset id" in missing.output


@pytest.mark.slow
def test_a_generated_library_of_200_environments_exports_every_one(tmp_path: Path) -> None:
    """``envwright generate --corpus stdlib --n 200 --workers 2``, then export it: every environment is in the
    export (how long it takes is a benchmark's figure, not a test's)."""
    from envgen.generate import GenerateConfig, run_generate

    run_generate(GenerateConfig(corpus="stdlib", n=200, out=tmp_path / "lib", workers=2), progress=False)
    lib = Library(tmp_path / "lib")
    assert len(lib) >= 190
    summary = export_hf(lib, tmp_path / "export")
    assert summary.envs == len(lib), summary


def test_import_from_the_hub_without_network_is_one_clear_error(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub

    def offline(repo_id: str, **kwargs: Any) -> str:
        raise OSError("network is unreachable")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    r = CliRunner().invoke(cli, ["import", "me/envs", "--out", str(tmp_path / "lib")])
    assert r.exit_code == 1 and "cannot download the Hub dataset me/envs: OSError: network is unreachable" in r.output


def test_a_task_that_withholds_a_tool_exports_the_tools_it_offers_as_it_begins(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from tests.fixtures.withheld import withheld_spec

    lib = Library(tmp_path / "lib")
    lib.add(parse_spec(withheld_spec()))
    export_hf(lib, tmp_path / "export")
    rows = {r["task_id"]: r for r in pq.read_table(tmp_path / "export" / DATA_FILES["tasks"]).to_pylist()}
    later, other = rows["renew-later"], rows["borrow-dune"]
    assert "renew_loan" not in [t["function"]["name"] for t in json.loads(later["tools"])]
    assert "renew_loan" not in later["system_prompt"] and "renew_loan" in other["system_prompt"]
    assert "renew_loan" in [t["function"]["name"] for t in json.loads(other["tools"])]
    assert "renew_loan" in later["tool_names"]  # the environment's tools, all of them

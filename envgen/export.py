"""A library as a Hugging Face ``datasets`` dataset (Parquet), and back.

``envwright export LIBRARY --format hf --out DIR`` writes::

    DIR/
      README.md                   the dataset card: counts, proposers, skills, grounding, solve rates,
                                  how to load, play and import it; YAML front matter names the configs
      data/tasks.parquet          config "tasks" (the default): one row per task
      data/environments.parquet   config "environments": one row per environment (its catalog row)

so ``datasets.load_dataset(DIR_OR_REPO, "tasks")`` and ``load_dataset("parquet", data_files=...)``
both read it. Every column is listed once, with its type and meaning, in :mod:`envgen.export_columns`
(the card's column tables come from there too). ``spec_json`` is the spec file's exact text, so
:func:`import_hf` (``envwright import``) writes byte-identical spec files and restores the catalog rows
(solve rates, grounding, per-task statistics) into a library. Each environment row carries the gate
report the library kept (``gate_report``); import trusts neither it nor the ``valid`` flag: it runs the
gate again on every spec, refuses what the gate rejects, and keeps the fresh reports.

Writes are atomic: the dataset is built in a temporary folder next to ``DIR`` and renamed into
place; an existing ``DIR`` is refused unless ``overwrite`` (and even then only when it is an export
or empty). :func:`push_to_hub` uploads an export folder as a dataset repository through
``huggingface_hub.HfApi`` (``create_repo`` then ``upload_folder``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envgen.catalog import PreparedEnv
from envgen.export_columns import DATA_FILES, ENV_COLUMNS, TASK_COLUMNS
from envgen.library import Library
from gym_envs import system_prompt
from gym_envs.errors import exception_text
from gym_envs.spec import EnvSpec, parse_spec

__all__ = ["ExportSummary", "ImportSummary", "export_hf", "import_hf",
           "push_to_hub", "read_export"]

_CATALOG = ("model", "grounding", "solve_rate", "n_evals", "split", "valid", "reasons", "run_id", "created_at")


@dataclass
class ExportSummary:
    """What :func:`export_hf` wrote: the folder, counts, time, size and the Hub URL when pushed."""
    out: Path
    envs: int
    tasks: int
    seconds: float
    bytes: int
    repo_url: str | None = None


@dataclass
class ImportSummary:
    """What :func:`import_hf` did: the environments added, those already present, and those refused
    (env id -> why: the gate rejects it, or its row says it was not accepted)."""
    library: Path
    added: list[str]
    present: list[str]
    seconds: float
    refused: dict[str, str] = field(default_factory=dict)


def _arrow(type_text: str) -> Any:
    """A pyarrow type from the short spelling used in the column tables."""
    import pyarrow as pa

    simple = {"string": pa.string(), "int32": pa.int32(), "int64": pa.int64(), "float64": pa.float64(),
              "bool": pa.bool_()}
    t = type_text.strip()
    if t in simple:
        return simple[t]
    if t.startswith("list<") and t.endswith(">"):
        return pa.list_(_arrow(t[5:-1]))
    if t.startswith("struct<") and t.endswith(">"):
        fields, depth, cur = [], 0, ""
        for ch in t[7:-1] + ",":
            if ch == "," and depth == 0:
                name, _, sub = cur.partition(":")
                fields.append(pa.field(name.strip(), _arrow(sub)))
                cur = ""
                continue
            depth += (ch == "<") - (ch == ">")
            cur += ch
        return pa.struct(fields)
    raise ValueError(f"unknown column type {type_text!r}")


def _schema(columns: tuple[tuple[str, str, str], ...]) -> Any:
    import pyarrow as pa

    return pa.schema([pa.field(name, _arrow(t), metadata={"description": text}) for name, t, text in columns])


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- export ----------------------------------------------------------------------------------------


def _task_solve(stats: list[dict[str, Any]]) -> dict[str, tuple[float | None, int]]:
    """Per task: (solve rate, attempts) over evaluated policies (the reference policy excluded)."""
    tot: dict[str, list[int]] = {}
    for s in stats:
        if s["policy"] != "reference":
            t = tot.setdefault(s["task_id"], [0, 0])
            t[0] += int(s["n"] or 0)
            t[1] += int(s["passes"] or 0)
    return {k: ((p / n) if n else None, n) for k, (n, p) in tot.items()}


def _rows(spec: EnvSpec, text: str, row: dict[str, Any], stats: list[dict[str, Any]],
          gate: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The environment's row (with its gate report, when the library kept one) and its task rows."""
    prov = spec.provenance.model_dump()
    source = spec.source.model_dump() if spec.source else None
    tool_names = [t.name for t in spec.tools]
    tools_json = json.dumps(spec.openai_tools(), ensure_ascii=False)
    prompt = system_prompt(spec)
    solve = _task_solve(stats)
    tasks = []
    for task in spec.tasks:
        rate, n = solve.get(task.id, (None, 0))
        opening = (json.dumps(spec.openai_tools(task), ensure_ascii=False), system_prompt(spec, task)) \
            if task.withheld_tools else (tools_json, prompt)  # the tools it offers as it begins
        tasks.append({"env_id": spec.id, "task_id": task.id, "kind": task.kind, "n_turns": len(task.turns),
                      "instructions": [t.instruction for t in task.turns], "title": spec.title,
                      "description": spec.description, "tool_names": tool_names, "tools": opening[0],
                      "system_prompt": opening[1], "proposer": prov["generator"], "skill_id": prov["skill_id"],
                      "stream": prov["stream"], "provenance": prov, "source": source, "solve_rate": rate,
                      "n_evals": n, "spec_json": text})
    env = {"env_id": spec.id, "title": spec.title, "description": spec.description, "n_tools": len(spec.tools),
           "n_tasks": len(spec.tasks), "tool_names": tool_names, "task_ids": [t.id for t in spec.tasks],
           "task_kinds": [t.kind for t in spec.tasks], "proposer": row.get("proposer") or prov["generator"],
           "skill_id": row.get("skill_id"), "stream": row.get("stream"), "corpus": row.get("corpus"),
           "doc_id": row.get("doc_id"), "doc_path": row.get("doc_path"),
           **{k: row.get(k) for k in _CATALOG},
           "signature": row.get("signature"), "task_stats": json.dumps(stats, ensure_ascii=False, default=str),
           "spec_sha256": _sha(text), "spec_json": text,
           "gate_report": json.dumps(gate, ensure_ascii=False, default=str) if gate is not None else None}
    env["valid"] = bool(env["valid"]) if env["valid"] is not None else True
    env["n_evals"] = int(env["n_evals"] or 0)
    return env, tasks


def _check_out(out: Path, overwrite: bool) -> None:
    if not out.exists():
        return
    if not overwrite:
        raise FileExistsError(f"{out} already exists; pass --overwrite to replace it, or choose another --out")
    if not out.is_dir():
        raise FileExistsError(f"{out} exists and is not a folder; refusing to replace it")
    if any(out.iterdir()) and not (out / DATA_FILES["environments"]).is_file():
        raise FileExistsError(f"{out} is not an envwright export (no {DATA_FILES['environments']}); refusing to "
                              "replace it even with --overwrite")


def _replace_dir(tmp: Path, out: Path) -> None:
    """Move the finished ``tmp`` to ``out``; an old ``out`` is renamed aside first and removed after."""
    old = None
    if out.exists():
        old = out.with_name(f".{out.name}.old-{os.getpid()}-{time.time_ns()}")
        os.replace(out, old)
    os.replace(tmp, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def export_hf(library: Library, out: str | os.PathLike[str], *, overwrite: bool = False, repo_id: str | None = None,
              progress: Callable[[int, int], None] | None = None) -> ExportSummary:
    """Write ``library`` as a dataset folder at ``out`` (see the module docstring).

    ``repo_id`` (when the export is meant for the Hub) is named in the card's snippets;
    ``progress(done, total)`` is called per environment.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from envgen.export_card import dataset_card

    t0 = time.perf_counter()
    out = Path(out)
    _check_out(out, overwrite)
    rows = sorted(library.rows(), key=lambda r: r["id"])
    stats_by_env: dict[str, list[dict[str, Any]]] = {}
    for s in library.task_stats():
        stats_by_env.setdefault(s["env_id"], []).append({k: s[k] for k in ("env_id", "task_id", "policy", "n",
                                                                             "passes", "reference_passes",
                                                                             "updated_at")})
    env_rows: list[dict[str, Any]] = []
    task_rows: list[dict[str, Any]] = []
    for i, row in enumerate(rows):
        path = library.spec_path(row["id"])
        try:
            text = library.inside(path).read_text(encoding="utf-8")
        except (OSError, ValueError) as e:
            raise FileNotFoundError(f"the catalog lists {row['id']!r} but its spec file {path} cannot be read "
                                    f"({e}); restore the file or remove the row") from None
        env, tasks = _rows(parse_spec(text, source=str(path)), text, row,
                           sorted(stats_by_env.get(row["id"], []), key=lambda s: (s["task_id"], s["policy"])),
                           library.gate_report(row["id"]))
        env_rows.append(env)
        task_rows.extend(tasks)
        if progress is not None:
            progress(i + 1, len(rows))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}-{time.time_ns()}")
    try:
        (tmp / "data").mkdir(parents=True)
        for name, data, cols in (("tasks", task_rows, TASK_COLUMNS), ("environments", env_rows, ENV_COLUMNS)):
            table = pa.Table.from_pylist(data, schema=_schema(cols))
            pq.write_table(table, tmp / DATA_FILES[name], compression="zstd")
        (tmp / "README.md").write_text(dataset_card(library, env_rows, task_rows, repo_id=repo_id),
                                       encoding="utf-8")
        for f in (tmp / "data").iterdir():  # durable before the rename makes them visible
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
        _replace_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    return ExportSummary(out, len(env_rows), len(task_rows), time.perf_counter() - t0, size)


# -- the Hub -----------------------------------------------------------------------------------------


def push_to_hub(folder: str | os.PathLike[str], repo_id: str, *, private: bool = False, token: str | None = None,
                api: Any = None) -> str:
    """Upload an export folder as the dataset repository ``repo_id`` (created when missing); returns
    the commit's URL. ``api`` is a ``huggingface_hub.HfApi`` (default: a new one with ``token``,
    which falls back to ``HF_TOKEN`` or the saved login)."""
    folder = Path(folder)
    if not (folder / DATA_FILES["environments"]).is_file():
        raise FileNotFoundError(f"{folder} is not an envwright export (no {DATA_FILES['environments']})")
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi(token=token)
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    info = api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=str(folder),
                             allow_patterns=["README.md", "data/*.parquet"],
                             commit_message=f"envwright export: {folder.name}")
    return str(getattr(info, "commit_url", info))


# -- import ------------------------------------------------------------------------------------------


def _resolve_source(src: str, token: str | None = None) -> Path:
    """A local export folder, or a Hub dataset id (``owner/name``) downloaded with ``snapshot_download``."""
    path = Path(src).expanduser()
    if path.is_dir():
        if not (path / DATA_FILES["environments"]).is_file():
            raise FileNotFoundError(f"{src} is not an envwright export: {DATA_FILES['environments']} is missing")
        return path
    if path.exists():
        raise FileNotFoundError(f"{src} is a file; give an export folder (envwright export --out DIR) or a Hub "
                                "dataset id owner/name")
    if src.count("/") != 1 or src.startswith((".", "/", "~")):
        raise FileNotFoundError(f"no export folder {src}, and it is not a Hub dataset id (owner/name)")
    from huggingface_hub import snapshot_download

    try:
        folder = Path(snapshot_download(src, repo_type="dataset", token=token,
                                        allow_patterns=["README.md", "data/*.parquet"]))
    except Exception as e:  # kept broad: the Hub's many errors (network, no such repository, no access) become one
        raise FileNotFoundError(f"cannot download the Hub dataset {src}: {exception_text(e)}") from None
    return _resolve_source(str(folder))


def read_export(src: str | os.PathLike[str], *, strict: bool = True) -> list[dict[str, Any]]:
    """The environments table of an export folder as dicts, each ``spec_json`` checked against its
    ``spec_sha256`` and parsed into ``spec``. A bad row raises a ``ValueError`` naming it; with
    ``strict=False`` it is kept with ``spec`` None and ``problem`` saying what is wrong."""
    import pyarrow.parquet as pq

    path = _resolve_source(str(src))
    rows = pq.read_table(path / DATA_FILES["environments"]).to_pylist()
    for r in rows:
        r["spec"], r["problem"] = None, None
        try:
            if _sha(r["spec_json"]) != r["spec_sha256"]:
                raise ValueError(f"{path}: the spec of {r['env_id']!r} does not match its spec_sha256 (a damaged "
                                 "or altered export)")
            spec = parse_spec(r["spec_json"], source=f"{path}:{r['env_id']}")
            if spec.id != r["env_id"]:
                raise ValueError(f"{path}: row {r['env_id']!r} holds the spec of {spec.id!r}")
        except ValueError as e:  # SpecError is a ValueError
            if strict:
                raise
            r["problem"] = str(e)
            continue
        r["spec"] = spec
    return rows


def _exported_gate(row: dict[str, Any]) -> dict[str, Any] | None:
    """The gate report a row carries (None: none, or an export from before gate reports were exported)."""
    text = row.get("gate_report")
    try:
        report = json.loads(text) if isinstance(text, str) and text else None
    except ValueError:
        return {"accepted": False, "reasons": [{"text": "the exported gate report is not JSON"}]}
    return report if isinstance(report, dict) else None


def _refusal(row: dict[str, Any], exported: dict[str, Any] | None, fresh: Any) -> str | None:
    """Why a row may not be imported (None: it may): the gate, run here, must accept its spec, and the row
    must say it was accepted (``valid``, and its own gate report when it has one)."""
    if not fresh.accepted:
        said = " (its exported gate report says accepted)" if exported and exported.get("accepted") else ""
        return f"the validity gate, run on import, rejects it{said}: " + "; ".join(str(r) for r in fresh.reasons)
    if row.get("valid") is False:
        return "its row says it was not accepted (valid is false)"
    if exported is not None and not exported.get("accepted"):
        why = "; ".join(str(r.get("text", r)) if isinstance(r, dict) else str(r) for r in exported.get("reasons") or [])
        return f"its exported gate report says it was rejected{': ' + why if why else ''}"
    return None


def import_hf(src: str | os.PathLike[str], library: Library, *, token: str | None = None,
              executor: str = "worker", progress: Callable[[int, int], None] | None = None) -> ImportSummary:
    """Add the environments of an export (a folder or a Hub dataset id) to ``library``: spec files byte
    for byte, catalog rows and per-task statistics as exported, and a gate report each.

    An export is data from elsewhere, so every spec goes through the validity gate again (spec code in
    ``executor``: isolated ``worker`` processes, or ``inprocess`` for exports you trust), and a row is
    refused, with the reason, when the gate rejects it now, when the row says it was not accepted (its
    ``valid`` flag, or its exported gate report), or when its spec does not match its ``spec_sha256`` or
    does not parse. The gate's fresh report is kept (``gate/<id>.json``), and
    its mutation score goes into the catalog. Refused rows are left out; the rest is all or nothing (see
    :meth:`Library.restore`), and environments already there with identical spec files are skipped.
    ``progress(done, total)`` is called after each spec is validated.
    """
    from envgen.gate import validate_spec
    from gym_envs.sandbox import make_executor

    t0 = time.perf_counter()
    rows = read_export(_resolve_source(str(src), token), strict=False)
    envs: list[tuple[PreparedEnv, dict[str, Any]]] = []
    stats: list[dict[str, Any]] = []
    refused: dict[str, str] = {}
    reports: dict[str, dict[str, Any]] = {}
    ex = make_executor(executor)
    try:
        for i, r in enumerate(rows):
            why: str | None
            if r["spec"] is None:
                why = str(r["problem"])
            else:
                fresh = validate_spec(r["spec"], executor=ex, source=f"{src}:{r['env_id']}")
                why = _refusal(r, _exported_gate(r), fresh)
            if progress is not None:
                progress(i + 1, len(rows))
            if why is not None:
                refused[r["env_id"]] = why
                continue
            reports[r["env_id"]] = fresh.to_dict()
            prepared = PreparedEnv(r["env_id"], r["spec_json"], PreparedEnv.of(r["spec"]).entry)
            catalog = {k: r[k] for k in _CATALOG} | {"mutation_score": fresh.mutation_score,
                                                     "mutants": fresh.mutants}
            catalog.update({k: r[k] for k in ("proposer", "skill_id", "stream", "corpus", "doc_id", "doc_path")
                            if r.get(k) is not None})
            envs.append((prepared, catalog))
            stats.extend(json.loads(r["task_stats"] or "[]"))
    finally:
        ex.close()
    added, present = library.restore(envs, stats)
    for env_id in added:
        library.write_gate_report(env_id, reports[env_id])
    return ImportSummary(library.root, added, present, time.perf_counter() - t0, refused)


"""The environment library: spec files plus a catalog in any SQLAlchemy database.

Layout of a library folder::

    LIBRARY/
      specs/<env_id>.json       accepted specs (written atomically)
      gate/<env_id>.json        the validity gate's report on each (rules, near-miss mutations tried)
      rejected/<attempt>.json   rejected candidates with their reasons (and gate report), for inspection
      catalog.sqlite            the default catalog (or ``catalog_url=`` any SQLAlchemy URL)

Catalog tables: ``envs`` (one row per accepted environment: title, source
document, proposer, model, skill, stream, counts, signature, the gate's
mutation score and number of mutants, solve-rate statistics filled in by
evaluation), ``attempts`` (every attempt of every run:
document, proposer, verdict and reasons, retries, tokens, seconds; what makes a
run resumable and what the yield measures read), ``task_stats``
(per-task solve rates written by evaluation) and ``solve_history`` (one row per
evaluation result, so the inspector can draw how a solve rate moved).

``Library(root)`` creates a library; ``Library(root, create=False)`` refuses a
folder that is not one (:class:`NotALibrary`) instead of writing a catalog into it,
but may still write (``specs/``, the catalog, re-indexed rows). ``Library(root,
readonly=True)`` (also spelled :meth:`Library.open_readonly`; what ``list``,
``stats``, ``export``, ``inspect`` and ``contamination`` use) writes nothing at all,
into the folder or beside the catalog, so a library in a read-only folder or on a
read-only mount can be read; every method that would write raises
:class:`LibraryReadOnly` (details under :meth:`Library.open_readonly`). Two processes
creating the same new library at once both succeed. A path that is (or is below)
a file is refused with :class:`NotALibrary`; a folder or catalog that cannot be
written (permissions, a read-only database) with :class:`LibraryNotWritable`,
when the library is opened for writing (``create=True`` probes the catalog with a
write that changes nothing) rather than part way through a run.
:func:`check_library_folder` is what ``generate`` asks before it starts: a new
path, an empty folder or an existing library is fine; a non-empty folder that is
not a library is refused, so a run never takes over another folder.

Guarantees: a spec file is written atomically (temp file, fsync, rename; the
folder is fsynced once per batch) before its catalog row is committed, and on
open any spec file without a row is re-indexed, so a killed run loses nothing.
:meth:`Library.record_batch` stores a batch of attempts (their accepted
environments' files, then the ``envs`` and ``attempts`` rows in one
transaction), so an attempt is never recorded without its environment. An
environment whose tool signatures equal an existing one's and whose task texts
are near-identical is refused with the original's id (:class:`DuplicateEnv`).

Spec files that do not load (corrupt) are found by :meth:`Library.corrupt_specs` (cheaply: the catalog
keeps each file's SHA-256) and set aside for a run to redo by :meth:`Library.set_aside_corrupt`
(:mod:`envgen.library_health`). Ids from the catalog name files only inside the library
(:meth:`Library.spec_path` refuses a separator or ``..``).

What a library folder may be, and the one-line errors of one that cannot be used, are in
:mod:`envgen.library_folder` (re-exported here). This module owns the files; the catalog's tables, its
rows (:class:`~envgen.catalog.PreparedEnv`, :class:`~envgen.catalog.AttemptRecord`), the dialect-aware
upserts and the evaluation statistics' queries live in :mod:`envgen.catalog`; the WAL pragmas apply to
SQLite only. Any SQLAlchemy URL works, for example ``postgresql+psycopg://user@host/envwright``
(``pip install 'envwright[postgres]'``).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from corpora.similarity import text_similarity
from envgen.catalog import (
    ATTEMPTS,
    ENVS,
    SOLVE_HISTORY,
    TASK_STATS,
    AttemptRecord,
    PreparedEnv,
    copy_catalog,
    create_tables,
    env_entry,
    make_engine,
    missing_schema,
    probe_write,
    record_task_result,
    solve_history,
    sqlite_file,
    suspicious_tasks,
    task_stats,
)
from envgen.catalog import upsert as _upsert  # a module global: tests replace it to simulate a kill
from envgen.errors import DuplicateEnv, FailureCode, NotALibrary
from envgen.library_folder import (
    LibraryNotWritable,
    LibraryReadOnly,
    catalog_problem,
    check_library_folder,
    file_in_the_way,
    file_name,
    is_library,
    needs_recovery,
    not_a_library,
    os_problem,
)
from envgen.library_health import corrupt_specs, set_aside_corrupt, text_sha256
from gym_envs.spec import EnvSpec, atomic_write_text, load_spec, parse_spec

__all__ = ["BACKEND_FAILURE", "DuplicateEnv", "Library", "LibraryNotWritable", "LibraryReadOnly", "NotALibrary",
           "check_library_folder", "is_library"]

BACKEND_FAILURE = FailureCode.GENERATION  #: the code of an attempt the model backend failed (retried on resume)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def _same_spec(a: str | None, b: str | None) -> bool:
    """Whether two spec texts describe the same environment (creation times aside)."""
    if a is None or b is None:
        return False
    if a == b:
        return True
    try:
        da, db = json.loads(a), json.loads(b)
    except ValueError:
        return False
    for d in (da, db):
        if isinstance(d, dict) and isinstance(d.get("provenance"), dict):
            d["provenance"].pop("created_at", None)
    return bool(da == db)


def _fsync_dir(path: Path) -> None:
    """Make the renames in a folder durable (a no-op where folders cannot be opened, e.g. Windows)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class Library:
    """A folder of specs plus a catalog. Safe to reopen after a crash.

    Args:
        root: the library folder (created if missing).
        catalog_url: a SQLAlchemy URL; default ``sqlite:///ROOT/catalog.sqlite``. A shared catalog on a
            server works too, e.g. ``postgresql+psycopg://user@host/envwright`` (spec files stay in ``root``).
        near_duplicate: task-text similarity at or above which same-signature envs are duplicates.
        create: make the library when ``root`` is not one (False: refuse it with :class:`NotALibrary`).
        readonly: only read (see :meth:`open_readonly`); implies ``create=False``.
    """

    readonly: bool = False  #: opened with ``readonly=True``: every write raises :class:`LibraryReadOnly`
    _scratch: weakref.finalize[[str, bool], Library] | None = None  #: removes a read-only opening's private catalog

    def __init__(self, root: str | Path, catalog_url: str | None = None, *, near_duplicate: float = 0.8,
                 create: bool = True, readonly: bool = False):
        self.root = Path(root)
        self.near_duplicate = near_duplicate
        if readonly:
            self._open_readonly(catalog_url)
            return
        if not create and not is_library(self.root):
            raise NotALibrary(f"{self.root} is not an envwright library (it has no specs/ folder and no "
                              f"catalog.sqlite); make one with: envwright generate --out {self.root}")
        problem = file_in_the_way(self.root)
        if problem is not None:
            raise NotALibrary(f"cannot use {self.root} as a library folder: {problem}; give a new folder, an "
                              "empty one, or an existing library")
        try:
            (self.root / "specs").mkdir(parents=True, exist_ok=True)
            if create:
                (self.root / "rejected").mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise os_problem(self.root, e) from None
        self.url = catalog_url or f"sqlite:///{(self.root / 'catalog.sqlite').resolve()}"
        self.engine = make_engine(self.url)
        try:
            create_tables(self.engine)
            if create:
                probe_write(self.engine)  # a read-only catalog fails here, not after a run's first batch
            self.reindex()
        except sa.exc.DBAPIError as e:
            self.engine.dispose()
            err = catalog_problem(self.root, self.url, e)
            if err is None:
                raise
            raise err from None

    @classmethod
    def open_readonly(cls, root: str | Path, catalog_url: str | None = None) -> Library:
        """Open an existing library only to read it: nothing is written into ``root`` or beside its catalog.

        No folder, catalog or table is created, and a folder that is not a library (or a path that does
        not exist, or a file) is refused with a one-line :class:`NotALibrary`. The SQLite catalog is read
        in place without creating or leaving ``-wal``/``-shm`` files (:func:`envgen.catalog.make_engine`),
        which also works in a read-only folder or on a read-only mount. Where reading in place would have
        to write (a catalog of an older version, which a writing opening upgrades; a killed writer's
        rollback journal, or a WAL without its ``-shm`` index), a private copy in a temporary folder is
        read instead, removed by :meth:`close`. A library of spec files without a catalog is indexed
        into such a copy. Spec files without a catalog row (a run killed between the two, or one still
        writing) are not shown: the next opening for writing indexes them.

        Every method that writes (:meth:`add`, :meth:`record_batch`, :meth:`remove`, :meth:`set_split`,
        :meth:`record_task_result`, ...) raises :class:`LibraryReadOnly`. A server catalog
        (``catalog_url``) is only queried: its database user may be one that can only read.
        """
        return cls(root, catalog_url, readonly=True)

    def _open_readonly(self, catalog_url: str | None) -> None:
        self.readonly = True
        if not is_library(self.root):
            raise not_a_library(self.root)
        self.url = catalog_url or f"sqlite:///{(self.root / 'catalog.sqlite').resolve()}"
        file = sqlite_file(self.url)
        try:
            if file is not None and not file.is_file():
                if catalog_url is not None:
                    raise NotALibrary(f"the catalog {file} of the library {self.root} does not exist; pass the "
                                      "--catalog-url the library was made with")
                self.engine = self._private_catalog(None)  # spec files only: index them into a private catalog
                self._reindex()
            elif file is not None and needs_recovery(file):
                self.engine = self._private_catalog(file)  # SQLite recovers the copy, not the library
            else:
                self.engine = make_engine(self.url, readonly=True)
                if missing_schema(self.engine):  # an older version's catalog: read an upgraded private copy
                    source, self.engine = self.engine, self._private_catalog(None)
                    try:
                        copy_catalog(source, self.engine)
                    finally:
                        source.dispose()
        except sa.exc.DBAPIError as e:
            self.close()
            why = str(e.orig) if e.orig is not None else str(e)
            where = file or sa.engine.make_url(self.url).render_as_string(hide_password=True)
            raise NotALibrary(f"cannot read the catalog {where} of the library {self.root}: {why}") from None
        except BaseException:
            self.close()
            raise

    def _private_catalog(self, copy_of: Path | None) -> sa.Engine:
        """A writable catalog in a new temporary folder (removed by :meth:`close`), with this version's
        tables: empty, or a copy of the SQLite file ``copy_of`` with its WAL or rollback journal."""
        scratch = tempfile.mkdtemp(prefix="envwright-catalog-")
        self._scratch = weakref.finalize(self, shutil.rmtree, scratch, True)
        target = Path(scratch) / "catalog.sqlite"
        if copy_of is not None:
            for suffix in ("", "-wal", "-journal"):  # never the -shm: SQLite rebuilds it from the WAL
                src = copy_of.with_name(copy_of.name + suffix)
                if src.exists():
                    shutil.copyfile(src, target.with_name(target.name + suffix))
        engine = make_engine(f"sqlite:///{target}")
        create_tables(engine)
        return engine

    def _refuse_if_readonly(self, what: str) -> None:
        if self.readonly:
            raise LibraryReadOnly(f"cannot {what}: the library {self.root} was opened read-only "
                                  "(readonly=True); open it without readonly=True to change it")

    def close(self) -> None:
        """Close the catalog's connections (a server catalog holds some open until then)."""
        engine = getattr(self, "engine", None)
        if engine is not None:
            engine.dispose()
        if self._scratch is not None:
            self._scratch()

    def __enter__(self) -> Library:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- writing -------------------------------------------------------------------------------
    def spec_path(self, env_id: str) -> Path:
        """``specs/<env_id>.json``; ``ValueError`` for an id that would name a file elsewhere (a tampered
        catalog: a path separator, ``..``)."""
        return self.root / "specs" / f"{file_name(env_id, 'environment id')}.json"

    def find_duplicate(self, spec: EnvSpec) -> str | None:
        """The id of an existing env with the same signatures and near-identical tasks, if any."""
        p = PreparedEnv.of(spec)
        return self._duplicate_of(p, self._known_rows([p]))

    def _known_rows(self, envs: Sequence[PreparedEnv]) -> list[dict[str, Any]]:
        """Catalog rows that could conflict with ``envs``: same signature or same id (one query)."""
        if not envs:
            return []
        sigs = sorted({p.signature for p in envs})
        ids = sorted({p.id for p in envs})
        q = sa.select(ENVS.c.id, ENVS.c.signature, ENVS.c.task_text, ENVS.c.run_id).where(
            sa.or_(ENVS.c.signature.in_(sigs), ENVS.c.id.in_(ids)))
        with self.engine.connect() as c:
            return [dict(r) for r in c.execute(q).mappings()]

    def _duplicate_of(self, p: PreparedEnv, known: Iterable[dict[str, Any]]) -> str | None:
        text = p.task_text
        for row in known:
            if row["signature"] == p.signature and row["id"] != p.id \
                    and text_similarity(text, row["task_text"] or "") >= self.near_duplicate:
                return str(row["id"])
        return None

    def _conflict(self, p: PreparedEnv, known: Iterable[dict[str, Any]], *, run_id: str | None = None,
                  idempotent: bool = False) -> Exception | None:
        """Why ``p`` cannot be added (:class:`DuplicateEnv` or ``FileExistsError``), or None.

        With ``idempotent``, re-adding the same spec (equal but for its creation time) under the same
        run, or over a row re-indexed after a crash (no run), is allowed: a resumed run re-attempts
        documents whose spec files were written but whose catalog rows were not committed.
        """
        known = list(known)
        original = self._duplicate_of(p, known)
        if original is not None:
            return DuplicateEnv(p.id, original)
        path = self.spec_path(p.id)
        same_id = [r for r in known if r["id"] == p.id]
        if same_id and path.exists():
            if idempotent and same_id[0]["run_id"] in (None, run_id) and _same_spec(_read(path), p.text):
                return None
            return FileExistsError(f"an environment with id {p.id!r} is already in {self.root}")
        return None

    def add(self, spec: EnvSpec, *, model: str | None = None, run_id: str | None = None,
            reasons: list[str] | None = None, grounding: float | None = None,
            mutation_score: float | None = None, mutants: int | None = None) -> Path:
        """Add an accepted spec; raises :class:`DuplicateEnv` or ``FileExistsError`` (same id)."""
        self._refuse_if_readonly("add an environment")
        p = PreparedEnv.of(spec)
        err = self._conflict(p, self._known_rows([p]))
        if err is not None:
            raise err
        path = self.spec_path(p.id)
        atomic_write_text(path, p.text)
        _fsync_dir(path.parent)
        with self.engine.begin() as c:
            _upsert(c, ENVS, [self._env_row(p, model=model, run_id=run_id, reasons=reasons or [],
                                            grounding=grounding, mutation_score=mutation_score, mutants=mutants)])
        return path

    def remove(self, env_ids: Iterable[str]) -> int:
        """Take environments out of the library: spec files, catalog rows, task statistics and solve history
        (their attempts stay, as the record of what was tried); returns how many were there.

        A crash part way loses nothing else: each spec file is first renamed out of the ``*.json`` the
        library re-indexes on open, then the rows go in one transaction, then the renamed files.
        """
        self._refuse_if_readonly("remove environments")
        ids = sorted(set(env_ids))
        if not ids:
            return 0
        moved = []
        for env_id in ids:
            path = self.spec_path(env_id)
            if path.exists():
                gone = path.with_suffix(".json.removed")
                os.replace(path, gone)
                moved.append(gone)
        with self.engine.begin() as c:
            n = c.execute(sa.delete(ENVS).where(ENVS.c.id.in_(ids))).rowcount
            c.execute(sa.delete(TASK_STATS).where(TASK_STATS.c.env_id.in_(ids)))
            c.execute(sa.delete(SOLVE_HISTORY).where(SOLVE_HISTORY.c.env_id.in_(ids)))
        for env_id in ids:  # those renamed now, and any a removal cut short left behind
            self.spec_path(env_id).with_suffix(".json.removed").unlink(missing_ok=True)
        return max(int(n or 0), len(moved))

    def run_env_ids(self, run_id_prefix: str) -> dict[str, str]:
        """Environment id -> run id, of the environments whose ``run_id`` starts with ``run_id_prefix``."""
        q = sa.select(ENVS.c.id, ENVS.c.run_id).where(ENVS.c.run_id.startswith(run_id_prefix, autoescape=True))
        with self.engine.connect() as c:
            return {str(i): str(r) for i, r in c.execute(q)}

    def _env_row(self, p: PreparedEnv, *, model: str | None, run_id: str | None, reasons: list[str],
                 grounding: float | None, mutation_score: float | None = None,
                 mutants: int | None = None) -> dict[str, Any]:
        return {**p.entry, "model": model, "valid": True, "reasons": json.dumps(reasons), "run_id": run_id,
                "path": str(self.spec_path(p.id).relative_to(self.root)), "grounding": grounding,
                "mutation_score": mutation_score, "mutants": mutants, "spec_sha256": text_sha256(p.text)}

    def record_batch(self, records: Sequence[AttemptRecord]) -> list[AttemptRecord]:
        """Store a batch of attempts; returns them, with duplicates turned into rejections.

        Order of the writes (what makes a killed run lose nothing and resume where it stopped): the
        accepted environments' spec files (atomic), one fsync of the folder, then their ``envs`` rows
        and every attempt's row in one transaction. Until that commit nothing of the batch counts as
        attempted, so a resumed run re-attempts it; spec files written before a kill are re-indexed on
        open and re-added idempotently. Duplicates are checked against the catalog (one query for the
        batch) and against earlier environments of the same batch.
        """
        self._refuse_if_readonly("record attempts")
        records = list(records)
        envs = [r.env for r in records if r.accepted and r.env is not None]
        known = self._known_rows(envs)
        to_write: list[AttemptRecord] = []
        batch_ids: set[str] = set()
        for r in records:
            if not (r.accepted and r.env is not None):
                continue
            err = self._conflict(r.env, known, run_id=r.run_id, idempotent=True)
            if err is None and r.env.id in batch_ids:
                err = FileExistsError(f"an environment with id {r.env.id!r} is already in this batch")
            if err is not None:
                r.accepted, r.duplicate, r.env_id = False, True, None
                r.reasons, r.codes = [str(err)], ["duplicate"]
                if r.rejected_spec is None:
                    r.rejected_spec = r.env.text
                continue
            r.env_id = r.env.id
            batch_ids.add(r.env.id)
            known.append({"id": r.env.id, "signature": r.env.signature, "task_text": r.env.task_text,
                          "run_id": r.run_id})
            to_write.append(r)
        try:
            for r in to_write:
                assert r.env is not None
                if r.gate is not None:
                    self.write_gate_report(r.env.id, r.gate)
                atomic_write_text(self.spec_path(r.env.id), r.env.text)
            if to_write:
                _fsync_dir(self.root / "specs")
            for r in records:
                if not r.accepted and r.rejected_spec is not None:
                    self._write_rejected(r.attempt_id, r.doc_id, r.reasons, r.rejected_spec, r.gate)
        except OSError as e:  # permissions changed, a full disk: nothing of the batch is recorded, say why
            raise os_problem(self.root, e) from None
        env_rows = [{**self._env_row(r.env, model=r.model, run_id=r.run_id, reasons=[], grounding=r.grounding,
                                     mutation_score=r.mutation_score, mutants=r.mutants),
                     "structure": r.structure, "repairs": json.dumps(r.repairs), "difficulty": r.difficulty}
                    for r in to_write if r.env is not None]
        try:
            with self.engine.begin() as c:
                _upsert(c, ENVS, env_rows)
                _upsert(c, ATTEMPTS, [r.attempt_row() for r in records])
        except sa.exc.DBAPIError as e:
            err = catalog_problem(self.root, self.url, e)
            if err is None:
                raise
            raise err from None
        return records

    def restore(self, envs: Sequence[tuple[PreparedEnv, dict[str, Any]]],
                task_stats: Sequence[dict[str, Any]] = ()) -> tuple[list[str], list[str]]:
        """Add environments taken from another library (``envwright import``): each spec file is
        written with exactly ``PreparedEnv.text``, its ``envs`` row gets the given catalog columns
        (solve rate, grounding, model...) over :func:`env_entry`'s, and ``task_stats`` rows are
        stored. Returns ``(added ids, ids already here with identical spec files)``.

        All or nothing: a same-id environment with a different spec file, or a near-duplicate of
        one here, refuses the whole batch (``ValueError`` listing each) before anything is written.
        """
        self._refuse_if_readonly("import environments")
        known = self._known_rows([p for p, _ in envs])
        added: list[tuple[PreparedEnv, dict[str, Any]]] = []
        present: list[str] = []
        problems: list[str] = []
        for p, columns in envs:
            if any(r["id"] == p.id for r in known) and _read(self.spec_path(p.id)) == p.text:
                present.append(p.id)
                continue
            err = self._conflict(p, known)
            if err is not None:
                problems.append(f"{p.id}: {err}" + (" with a different spec file"
                                                    if isinstance(err, FileExistsError) else ""))
                continue
            known.append({"id": p.id, "signature": p.signature, "task_text": p.task_text, "run_id": None})
            added.append((p, columns))
        if problems:
            raise ValueError(f"{len(problems)} environment(s) conflict with {self.root}, nothing was imported:\n  "
                             + "\n  ".join(problems))
        for p, _ in added:
            atomic_write_text(self.spec_path(p.id), p.text)
        if added:
            _fsync_dir(self.root / "specs")
        rows = [self._env_row(p, model=None, run_id=None, reasons=[], grounding=None)
                | {"solve_rate": None, "n_evals": 0, "split": None}  # every row carries every column
                | {k: v for k, v in columns.items() if k in ENVS.c and k not in ("id", "path")} for p, columns in added]
        ids = {p.id for p, _ in added}
        stats = [dict(s) for s in task_stats if s["env_id"] in ids]
        with self.engine.begin() as c:
            _upsert(c, ENVS, rows)
            _upsert(c, TASK_STATS, stats)
        return [p.id for p, _ in added], present

    def _write_rejected(self, attempt_id: str, doc_id: str, reasons: Iterable[str],
                        rejected_spec: dict[str, Any] | str, gate: dict[str, Any] | None = None) -> None:
        self._refuse_if_readonly("keep a rejected candidate")
        payload = {"attempt_id": attempt_id, "doc_id": doc_id, "reasons": list(reasons), "candidate": rejected_spec}
        if gate is not None:
            payload["gate"] = gate
        (self.root / "rejected").mkdir(exist_ok=True)
        atomic_write_text(self.root / "rejected" / f"{attempt_id}.json", json.dumps(payload, indent=1))

    def write_gate_report(self, env_id: str, report: dict[str, Any]) -> None:
        """Keep the gate's report on an environment (``gate/<env_id>.json``, atomic)."""
        self._refuse_if_readonly("write a gate report")
        (self.root / "gate").mkdir(exist_ok=True)
        atomic_write_text(self.root / "gate" / f"{file_name(env_id, 'environment id')}.json",
                          json.dumps(report, indent=1, default=str))

    def gate_report(self, env_id: str) -> dict[str, Any] | None:
        """The stored gate report of an environment (None when the library has none for it, or the file is
        not one: not JSON, no ``accepted`` verdict, or a link that leads out of the library)."""
        try:
            path = self.inside(self.root / "gate" / f"{file_name(env_id, 'environment id')}.json")
        except ValueError:
            return None
        text = _read(path)
        try:
            report = json.loads(text) if text else None
        except ValueError:
            return None
        return report if isinstance(report, dict) and isinstance(report.get("accepted"), bool) else None

    def inside(self, path: Path) -> Path:
        """``path`` resolved (links followed), when it lies inside the library; else ``ValueError``. A library
        is data that may come from elsewhere: a spec or report file that is a link to another file of this
        machine is never read."""
        base, target = self.root.resolve(), path.resolve()
        if base not in target.parents:
            raise ValueError(f"{path} is a link that leads out of the library {self.root}: it is not read")
        return target

    def record_attempt(self, *, attempt_id: str, run_id: str, doc_id: str, proposer: str, accepted: bool,
                       env_id: str | None = None, reasons: Iterable[str] = (), codes: Iterable[str] = (),
                       retries: int = 0, tokens: int = 0, seconds: float = 0.0, model: str | None = None,
                       skill_id: str | None = None, stream: str | None = None,
                       rejected_spec: dict[str, Any] | str | None = None) -> None:
        """Record one attempt (accepted or not); rejected candidates are kept under ``rejected/``."""
        self._refuse_if_readonly("record an attempt")
        rec = AttemptRecord(attempt_id=attempt_id, run_id=run_id, doc_id=doc_id, proposer=proposer,
                            accepted=accepted, env_id=env_id, reasons=list(reasons), codes=list(codes),
                            retries=retries, tokens=tokens, seconds=seconds, model=model, skill_id=skill_id,
                            stream=stream)
        if rejected_spec is not None:
            self._write_rejected(attempt_id, doc_id, rec.reasons, rejected_spec)
        with self.engine.begin() as c:
            _upsert(c, ATTEMPTS, [rec.attempt_row()])

    def attempted_docs(self, run_id: str) -> set[str]:
        """Documents already attempted in a run (to resume it).

        An attempt that failed only because the model backend failed (its codes are ``["generation"]``:
        a server down, an engine error) does not count: a re-run retries that document.
        """
        with self.engine.connect() as c:
            rows = c.execute(sa.select(ATTEMPTS.c.doc_id, ATTEMPTS.c.codes).where(ATTEMPTS.c.run_id == run_id))
            return {doc for doc, codes in rows if json.loads(codes or "[]") != [BACKEND_FAILURE]}

    def reindex(self) -> int:
        """Index spec files that have no catalog row (after a crash); returns how many."""
        self._refuse_if_readonly("index spec files into the catalog")
        return self._reindex()

    def _reindex(self) -> int:
        with self.engine.connect() as c:
            known = {r[0] for r in c.execute(sa.select(ENVS.c.id))}
        rows = []
        for path in sorted((self.root / "specs").glob("*.json")):
            if path.stem in known:
                continue
            try:
                text = path.read_text(encoding="utf-8")
                spec = parse_spec(text, source=str(path))
            except (ValueError, OSError):
                continue  # a corrupt file is not indexed: corrupt_specs() reports it
            if spec.id != path.stem:
                continue
            rows.append({**env_entry(spec), "model": None, "valid": True, "reasons": "[]", "run_id": None,
                         "path": str(path.relative_to(self.root)), "grounding": None, "mutation_score": None,
                         "mutants": None, "spec_sha256": text_sha256(text)})
        if rows:
            with self.engine.begin() as c:
                _upsert(c, ENVS, rows)
        return len(rows)

    # -- reading -------------------------------------------------------------------------------
    def get_row(self, env_id: str) -> dict[str, Any] | None:
        with self.engine.connect() as c:
            row = c.execute(sa.select(ENVS).where(ENVS.c.id == env_id)).mappings().first()
        return dict(row) if row else None

    def load(self, env_id: str) -> EnvSpec:
        """The spec of an environment (``ValueError``: its file is a link out of the library)."""
        return load_spec(self.inside(self.spec_path(env_id)))

    def corrupt_specs(self, rows: Iterable[dict[str, Any]] | None = None) -> dict[str, str]:
        """Environment id -> why its spec file is corrupt (missing, not JSON, not a valid spec, another id),
        over ``rows`` (default: every row, and ``specs/*.json`` files without one). Cheap: a file with the
        bytes it was written with is not parsed (:mod:`envgen.library_health`)."""
        return corrupt_specs(self, rows)

    def set_aside_corrupt(self, run_id: str) -> dict[str, str]:
        """Set aside the corrupt environments of a run's accepted attempts (each file kept as
        ``specs/<id>.json.corrupt``, its row and attempt dropped), so the run redoes their documents;
        returns env id -> why it was corrupt (:func:`envgen.library_health.set_aside_corrupt`)."""
        self._refuse_if_readonly("set aside corrupt spec files")
        return set_aside_corrupt(self, run_id)

    def __len__(self) -> int:
        with self.engine.connect() as c:
            return int(c.execute(sa.select(sa.func.count()).select_from(ENVS)).scalar_one())

    def __iter__(self) -> Iterator[EnvSpec]:
        for row in self.rows():
            yield self.load(row["id"])

    def rows(self, *, proposer: str | None = None, stream: str | None = None, skill: str | None = None,
             min_solve: float | None = None, max_solve: float | None = None, doc: str | None = None,
             sort: str = "created_at", descending: bool = False, limit: int | None = None) -> list[dict[str, Any]]:
        """Catalog rows with filters and sorting (what ``envwright list`` shows)."""
        q = sa.select(ENVS)
        if proposer:
            q = q.where(ENVS.c.proposer.like(f"{proposer}%"))
        if stream:
            q = q.where(ENVS.c.stream == stream)
        if skill:
            q = q.where(ENVS.c.skill_id == skill)
        if doc:
            q = q.where(ENVS.c.doc_id.like(f"%{doc}%"))
        if min_solve is not None:
            q = q.where(ENVS.c.solve_rate >= min_solve)
        if max_solve is not None:
            q = q.where(ENVS.c.solve_rate <= max_solve)
        if sort not in ENVS.c:
            raise ValueError(f"cannot sort by {sort!r}; columns: {[c.name for c in ENVS.c]}")
        col = ENVS.c[sort]
        # missing values (an env not evaluated yet) last either way, on every database
        q = q.order_by((col.desc() if descending else col.asc()).nulls_last(), ENVS.c.id)
        if limit:
            q = q.limit(limit)
        with self.engine.connect() as c:
            return [dict(r) for r in c.execute(q).mappings()]

    def attempts(self, run_id: str | None = None) -> list[dict[str, Any]]:
        q = sa.select(ATTEMPTS)
        if run_id:
            q = q.where(ATTEMPTS.c.run_id == run_id)
        with self.engine.connect() as c:
            return [dict(r) for r in c.execute(q.order_by(ATTEMPTS.c.created_at, ATTEMPTS.c.attempt_id)).mappings()]

    # -- evaluation statistics (the queries: envgen.catalog) ----------------------------------------
    def record_task_result(self, env_id: str, task_id: str, policy: str, *, n: int, passes: int,
                           reference_passes: bool | None = None) -> None:
        """Accumulate a policy's results on a task and refresh the env's solve rate.

        The policy ``"reference"`` (the scripted reference trajectory) is stored, and read by
        :meth:`suspicious_tasks`, but is not counted in the env's solve rate.
        """
        self._refuse_if_readonly("record task results")
        record_task_result(self.engine, env_id, task_id, policy, n=n, passes=passes,
                           reference_passes=reference_passes)

    def task_stats(self, env_id: str | None = None) -> list[dict[str, Any]]:
        """Per task and policy: runs, passes, whether the reference passes (of one env or all)."""
        return task_stats(self.engine, env_id)

    def solve_history(self, env_id: str | None = None) -> list[dict[str, Any]]:
        """Every evaluation result recorded (oldest first), of one env or all."""
        return solve_history(self.engine, env_id)

    def suspicious_tasks(self) -> list[dict[str, Any]]:
        """Tasks every evaluated policy fails although the reference passes (check candidates)."""
        return suspicious_tasks(self.task_stats())

    def set_split(self, env_id: str, split: str) -> None:
        self._refuse_if_readonly("set a split")
        with self.engine.begin() as c:
            c.execute(sa.update(ENVS).where(ENVS.c.id == env_id).values(split=split))

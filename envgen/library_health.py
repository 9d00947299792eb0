"""Which spec files of a library are corrupt, found cheaply, and how ``generate`` sets them aside to redo them.

A spec file is **corrupt** when it does not load as the environment its catalog row names: the file is
missing or unreadable, is not JSON, is not a valid spec (:func:`gym_envs.spec.parse_spec`), or holds
another id. The catalog keeps each spec file's SHA-256 (``envs.spec_sha256``, written with the file), so
a file that still has the bytes it was accepted with is known good without parsing it (parsing checks
every tool's JSON Schema: about 20 ms a spec, against microseconds for the hash); only a file whose hash
differs, or a row without one (older catalogs), is parsed. A ``*.json`` in ``specs/`` with no catalog row
is corrupt when it does not load (a valid one is only waiting to be indexed).

Where it is used: ``list`` and ``stats`` flag corrupt files (with the reason), the ``library:`` eval suite
skips them with a warning, and ``generate`` redoes the documents of its run whose environment is corrupt:
:func:`set_aside_corrupt` renames each such file to ``specs/<id>.json.corrupt`` (kept to look at; never
re-indexed) and drops its ``envs`` row and its attempt, so the run attempts the document again.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

import sqlalchemy as sa

from envgen.catalog import ATTEMPTS, ENVS
from gym_envs.spec import SpecError, parse_spec

__all__ = ["CORRUPT_SUFFIX", "corrupt_specs", "set_aside_corrupt", "spec_problem", "text_sha256"]

CORRUPT_SUFFIX = ".json.corrupt"  #: what a corrupt spec file is renamed to when ``generate`` redoes it


class Library(Protocol):
    """What this module uses of an :class:`envgen.library.Library` (which imports this module, so it is
    typed by its shape here rather than imported)."""

    root: Path
    engine: sa.Engine

    def rows(self, *, sort: str = ...) -> list[dict[str, Any]]: ...

    def spec_path(self, env_id: str) -> Path: ...

    def inside(self, path: Path) -> Path: ...


def text_sha256(text: str) -> str:
    """The SHA-256 of a spec file's text (what the catalog's ``spec_sha256`` holds)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def spec_problem(path: Path, env_id: str, sha256: str | None = None) -> str | None:
    """Why the spec file ``path`` of the environment ``env_id`` is corrupt (None: it loads as that environment).

    ``sha256``: the catalog's hash of the file as it was written; a file with those bytes is good unread.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return f"the spec file {path.name} is missing"
    except OSError as e:
        return f"the spec file {path.name} cannot be read: {e.strerror or e}"
    if sha256 is not None and hashlib.sha256(raw).hexdigest() == sha256:
        return None
    try:
        spec = parse_spec(raw.decode("utf-8"), source=path.name)
    except UnicodeDecodeError:
        return f"the spec file {path.name} is not UTF-8 text"
    except (SpecError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return f"the spec file {path.name} does not load: {first[:300]}"
    if spec.id != env_id:
        return f"the spec file {path.name} holds the environment {spec.id!r}, not {env_id!r}"
    return None


def corrupt_specs(lib: Library, rows: Iterable[dict[str, Any]] | None = None,
                  unindexed: bool = True) -> dict[str, str]:
    """Environment id -> why its spec file is corrupt, over ``rows`` (catalog rows; default every row) and,
    with ``unindexed``, the ``specs/*.json`` files without a row (keyed by the file's stem)."""
    every = lib.rows(sort="id") if rows is None or unindexed else []
    rows = every if rows is None else list(rows)
    out: dict[str, str] = {}
    for r in rows:
        try:
            path = lib.spec_path(str(r["id"]))
            if path.exists() or path.is_symlink():
                path = lib.inside(path)
        except ValueError as e:  # an id that names no file of specs/, a link out of the library
            out[str(r["id"])] = str(e)
            continue
        problem = spec_problem(path, str(r["id"]), r.get("spec_sha256"))
        if problem is not None:
            out[str(r["id"])] = problem
    if unindexed:
        known = {str(r["id"]) for r in every}
        for path in sorted((lib.root / "specs").glob("*.json")):
            if path.stem not in known and path.stem not in out:
                try:
                    problem = spec_problem(lib.inside(path), path.stem)
                except ValueError as e:
                    problem = str(e)
                if problem is not None:
                    out[path.stem] = problem + " (and the catalog has no row for it)"
    return out


def set_aside_corrupt(lib: Library, run_id: str) -> dict[str, str]:
    """Set aside the corrupt environments of run ``run_id``'s accepted attempts so the run redoes their
    documents: each spec file becomes ``specs/<id>.json.corrupt``, then its ``envs`` row and its attempt go
    (one transaction). Returns env id -> why it was corrupt."""
    with lib.engine.connect() as c:
        accepted = [dict(r) for r in c.execute(
            sa.select(ATTEMPTS.c.attempt_id, ATTEMPTS.c.env_id).where(
                (ATTEMPTS.c.run_id == run_id) & ATTEMPTS.c.accepted & ATTEMPTS.c.env_id.is_not(None))).mappings()]
        ids = sorted({str(a["env_id"]) for a in accepted})
        rows = [dict(r) for r in c.execute(sa.select(ENVS.c.id, ENVS.c.spec_sha256).where(ENVS.c.id.in_(ids)))
                .mappings()] if ids else []
    have = {r["id"] for r in rows}
    rows += [{"id": i, "spec_sha256": None} for i in ids if i not in have]  # a row lost: the file must load
    corrupt = corrupt_specs(lib, rows, unindexed=False)
    if not corrupt:
        return {}
    for env_id in corrupt:
        try:
            path = lib.spec_path(env_id)
        except ValueError:
            continue
        if path.exists():
            os.replace(path, path.with_name(env_id + CORRUPT_SUFFIX))
    attempts = [a["attempt_id"] for a in accepted if a["env_id"] in corrupt]
    with lib.engine.begin() as c:
        c.execute(sa.delete(ENVS).where(ENVS.c.id.in_(sorted(corrupt))))
        c.execute(sa.delete(ATTEMPTS).where(ATTEMPTS.c.attempt_id.in_(attempts)))
    return corrupt

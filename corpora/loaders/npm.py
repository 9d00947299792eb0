"""Load the JavaScript and TypeScript sources of npm packages: a non-Python corpus.

Role: a second real-world corpus whose documents the AST writer cannot read,
so only a model writes environments from them. ``--corpus
npm:bull@4.16.5,nedb@1.8.0`` (or ``load_corpus("npm", packages=[...])``)
fetches each package tarball with ``npm pack`` from the npm registry into a
cache folder once, unpacks it, and reads its ``.js``/``.mjs``/``.cjs``/``.ts``
files as documents (through the ``tree`` loader's reader).

Contract:

* Packages are ``name@version`` (pin the version: the corpus is then the same
  on every machine); the cache folder is ``$ENVWRIGHT_CACHE/npm`` (default
  ``~/.cache/envwright/npm``), one folder per package, written atomically; a
  cached package is never fetched again, so an offline machine works from a
  cache copied to it (a GPU machine with no network, for example).
* Minified and bundled files (``*.min.js``, ``dist/``, ``umd/``, ``browser/``),
  tests, examples, type declarations (``*.d.ts``) and ``node_modules`` are
  skipped.
* Ids are ``npm:<package>@<version>/<path in the package>``; ``metadata``
  holds ``package`` and ``version``.
* A package that cannot be fetched raises :class:`~corpora.errors.CorpusError`
  naming it and what npm said (no network, unknown version, no ``npm``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from corpora.cache import cache_dir
from corpora.document import Document
from corpora.errors import CorpusError
from corpora.languages import language_from_path
from corpora.loaders.tree import iter_tree_files, read_source

__all__ = ["NPM_EXCLUDE", "NpmConfig", "fetch_package", "load_npm"]

NPM_EXCLUDE = ("**/node_modules/**", "**/dist/**", "**/umd/**", "**/browser/**", "**/test/**", "**/tests/**",
               "**/__tests__/**", "**/example/**", "**/examples/**", "**/bench/**", "**/benchmark/**",
               "**/*.min.js", "**/*.d.ts", "**/*.test.*", "**/*.spec.*")
_SUFFIXES = frozenset({".js", ".mjs", ".cjs", ".ts"})
_PACKAGE = re.compile(r"^(@[a-z0-9][a-z0-9._-]*/)?[a-z0-9][a-z0-9._-]*@[0-9A-Za-z.+-]+$")


def _safe_members(tar: tarfile.TarFile, dest: Path) -> list[tarfile.TarInfo]:
    out = []
    root = dest.resolve()
    for m in tar.getmembers():
        target = (dest / m.name).resolve()
        if (m.isfile() or m.isdir()) and (target == root or root in target.parents):
            out.append(m)
    return out


def fetch_package(spec: str, cache: Path | None = None) -> Path:
    """The unpacked folder of package ``name@version`` (fetched with ``npm pack`` unless cached)."""
    if not _PACKAGE.match(spec):
        raise CorpusError(f"npm package {spec!r} must be name@version (for example bull@4.16.5)")
    root = cache or cache_dir("npm")
    folder = root / spec.replace("/", "__")
    if (folder / "package").is_dir():
        return folder / "package"
    npm = shutil.which("npm")
    if npm is None:
        raise CorpusError(f"cannot fetch {spec}: the npm command is not installed (or copy a cache folder to {root})")
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".fetch-", dir=root))
    try:
        proc = subprocess.run([npm, "pack", spec, "--silent", "--pack-destination", str(tmp)], capture_output=True,
                              text=True, timeout=300, check=False)
        tarballs = list(tmp.glob("*.tgz"))
        if proc.returncode != 0 or not tarballs:
            raise CorpusError(f"npm pack {spec} failed: {(proc.stderr or proc.stdout).strip()[-400:]}")
        unpacked = tmp / "unpacked"
        with tarfile.open(tarballs[0]) as tar:
            tar.extractall(unpacked, members=_safe_members(tar, unpacked))
        if not (unpacked / "package").is_dir():
            raise CorpusError(f"npm pack {spec}: the tarball has no package/ folder")
        unpacked.rename(folder) if not folder.exists() else None
        return folder / "package"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@dataclass
class NpmConfig:
    """Options of the ``npm`` loader.

    Attributes:
        packages: ``name@version`` entries (the spec's source: comma-separated after ``npm:``).
        max_bytes: skip files larger than this many bytes.
        cache: the cache folder (default ``$ENVWRIGHT_CACHE/npm``).
    """

    source_field: ClassVar[str | None] = "packages"

    packages: tuple[str, ...] = ()
    max_bytes: int = 200_000
    cache: str | None = None
    exclude: tuple[str, ...] = field(default=NPM_EXCLUDE)

    def __post_init__(self) -> None:
        if isinstance(self.packages, str):
            self.packages = tuple(p.strip() for p in self.packages.split(",") if p.strip())
        self.packages = tuple(self.packages)
        if not self.packages:
            raise CorpusError("the npm corpus needs packages, e.g. npm:bull@4.16.5,nedb@1.8.0")
        for p in self.packages:
            if not _PACKAGE.match(p):
                raise CorpusError(f"npm package {p!r} must be name@version (for example bull@4.16.5)")
        if self.max_bytes <= 0:
            raise CorpusError(f"max_bytes must be positive, got {self.max_bytes}")


def load_npm(config: NpmConfig) -> Iterator[Document]:
    """Yield the JavaScript/TypeScript files of every package, package by package, in path order."""
    cache = Path(config.cache) if config.cache else None
    for spec in config.packages:
        root = fetch_package(spec, cache)
        name, _, version = spec.rpartition("@")
        for full, rel in iter_tree_files(root, include=None, exclude=tuple(config.exclude), suffixes=_SUFFIXES,
                                         follow_symlinks=False):
            text = read_source(full, max_bytes=config.max_bytes)
            if text is None:
                continue
            language = language_from_path(rel)
            yield Document.create(text, corpus="npm", path=f"{spec}/{rel}", language=language,
                                  metadata={"package": name, "version": version})

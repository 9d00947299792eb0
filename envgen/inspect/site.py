"""Build the inspector's static site: Jinja2 templates over what :mod:`envgen.inspect.collect` gathers.

Layout of ``OUT``::

    index.html                 every environment: sortable, filterable (site.js, no server needed)
    envs/<env_id>.html         one page per environment
    rejected/index.html        rejected proposals with their reasons; rejected/<attempt>.html each
    runs/<run>/index.html      an evaluation run's episodes, linked to env pages and transcripts
    runs/<run>/<episode>.html  one transcript per episode
    runs/<run>/report/report.html  the run's own report (copied, when the run folder has one)
    assets/site.css, site.js   the only assets (local files: the site works offline)
    .envwright-inspect         marks the folder as a site and lists every file written (the manifest)

Contract: every text from a spec, a model or a tool is escaped (Jinja2 autoescape;
nothing is marked safe but our own markup) and isolated for bidi (the ``bidi``
filter: a spec's U+202E cannot reorder the text around it). The site is built in a
temporary folder beside ``OUT`` and swapped in at the end, so ``OUT`` is always a
whole site. ``OUT`` is replaced only when every file in it is one the manifest
lists (a non-empty ``OUT`` that is not a site, or a site with files added to it,
is refused, naming them), and never when it holds, or sits inside, what is being
inspected (the library, a ``--run`` folder, a ``--corpus`` folder). A site of the
same library or spec is rebuilt in place (the summary's ``replaced`` says what was
there); a site of something else is replaced only with ``force`` (else refused,
naming what it shows), so one command never silently takes over another's site.
A spec's source path is read only inside its corpus (:func:`~envgen.inspect.collect.confined`).
Environment pages are written as they are collected, so memory stays flat on large
libraries. A ``ref`` that holds no spec (a file that does not load as one, a folder
whose every ``*.json`` fails) is an error, not an empty site.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envgen.depth import spec_depth
from envgen.inspect.collect import (
    EnvPage,
    RunPage,
    assistant_view,
    collect_env,
    collect_rejected,
    collect_runs,
    find_documents,
    gate_rules,
    page_name,
)
from gym_envs.errors import exception_text
from gym_envs.spec import EnvSpec, SpecError, load_spec

__all__ = ["MARKER", "SiteSummary", "build_site", "isolate", "template_env"]

MARKER = ".envwright-inspect"
TEMPLATES = Path(__file__).parent / "templates"
GATE_MODES = ("auto", "stored", "run", "off")
REPORT_DIR = "report"  #: runs/<run>/report/report.html: a folder, so no episode page's name can collide with it
INDEX_PAGE = 500  #: index rows shown before "show all" (the filters always search every row)


@dataclass
class SiteSummary:
    """What :func:`build_site` wrote."""

    out: Path
    envs: int
    rejected: int
    runs: int
    episodes: int
    seconds: float
    problems: list[str]
    replaced: str | None = None  #: the earlier site at ``out`` that this one replaced (None: there was none)

    @property
    def index(self) -> Path:
        return self.out / "index.html"


# -- templates ------------------------------------------------------------------------------------


def _fmt(x: Any, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and x != x):
        return "–"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


# What can reorder the text around it: explicit bidi controls and marks, and strong right-to-left letters.
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc"
                   "\U00010800-\U00010fff\U0001e800-\U0001efff]")
_ISOLATES = re.compile("([\u2066-\u2069])")  #: LRI, RLI, FSI, PDI (captured: split keeps them)
FSI, PDI = "\u2068", "\u2069"


def isolate(value: Any) -> Any:
    """``value`` bidi-isolated when it could reorder what surrounds it: wrapped in FSI … PDI (what ``<bdi>``
    does, but also valid inside attributes), its own isolates balanced first, so a U+2069 in it cannot close
    ours and an unclosed U+2067 cannot swallow what follows. Other values come back unchanged.

    It is the templates' ``finalize``: every ``{{ … }}`` passes through it, so every text from a spec is
    isolated without a filter to forget. (Our own markup, a macro's output, is :class:`~markupsafe.Markup` and
    left alone: the texts inside it were isolated as they were rendered.)
    """
    from markupsafe import Markup

    if not isinstance(value, str) or isinstance(value, Markup) or not _BIDI.search(value):
        return value
    out, depth = [], 0
    for part in _ISOLATES.split(value):
        if part in ("\u2066", "\u2067", "\u2068"):
            depth += 1
        elif part == PDI:
            if depth == 0:
                continue  # would close our isolate: dropped
            depth -= 1
        out.append(part)
    return FSI + "".join(out) + PDI * depth + PDI


def _isolate_markup(text: Any) -> Any:
    """Markup built from spec text (a join, an excerpt), isolated like :func:`isolate`."""
    from markupsafe import Markup

    return Markup(isolate(str(text))) if _BIDI.search(str(text)) else text


def _join(items: Iterable[Any], sep: str = "") -> Any:
    """Jinja's ``join`` with each item escaped and isolated (so one item's override cannot reach the next)."""
    from markupsafe import Markup, escape

    return Markup(escape(sep)).join(escape(isolate(str(i))) for i in items)


def _highlight(text: str, words: Iterable[str]) -> Any:
    """``text`` escaped, with each whole identifier in ``words`` wrapped in ``<mark>``."""
    import re

    from markupsafe import Markup, escape

    wanted = {w.lower() for w in words}
    if not wanted:
        return escape(text)
    out, last, focused = [], 0, False
    for m in re.finditer(r"[A-Za-z_][A-Za-z0-9_]*", text):
        if m.group().lower() in wanted or any(p in wanted for p in m.group().lower().split("_") if len(p) > 2):
            # the first class or def the environment's names trace to: site.js scrolls the excerpt there
            before = text[max(0, m.start() - 40):m.start()]
            focus = not focused and re.search(r"(?:^|\n)[ \t]*(?:class|def)[ \t]+$", before)
            focused = focused or bool(focus)
            out.append(escape(text[last:m.start()]))
            out.append(Markup('<mark class="focus">' if focus else "<mark>") + escape(m.group()) + Markup("</mark>"))
            last = m.end()
    out.append(escape(text[last:]))
    return _isolate_markup(Markup("").join(out))


def template_env() -> Any:
    """The Jinja2 environment: autoescape on, undefined names are errors, every output bidi-isolated."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             finalize=isolate)
    env.filters["join"] = _join
    env.filters["fmt"] = _fmt
    env.filters["highlight"] = _highlight
    env.filters["tojson_text"] = lambda v: json.dumps(v, ensure_ascii=False, default=str)
    env.filters["page"] = page_name
    env.filters["fromjson"] = lambda v: json.loads(v) if isinstance(v, str) else (v or [])
    env.filters["assistant"] = assistant_view
    rules = gate_rules()
    env.globals["gate_rules"] = rules
    env.globals["rule_names"] = {r["n"]: r["name"] for r in rules}
    env.globals["rule_meanings"] = {r["n"]: r["meaning"] for r in rules}
    return env


def _chart(history: list[dict[str, Any]], width: int = 560, height: int = 160) -> dict[str, Any] | None:
    """Polylines of each policy's running solve rate over its evaluations (an inline SVG, no script)."""
    by_policy: dict[str, list[float]] = {}
    for h in history:
        if h["cumulative"] is not None:
            by_policy.setdefault(str(h["policy"]), []).append(h["cumulative"])
    if not by_policy:
        return None
    n = max(len(v) for v in by_policy.values())
    colours = ["#3b7dd8", "#e08a2c", "#6a9f38", "#b3261e", "#7b4fb0", "#2b8c8c"]
    lines = []
    for i, (policy, vals) in enumerate(sorted(by_policy.items())):
        step = (width - 60) / max(1, n - 1)
        pts = " ".join(f"{40 + j * step:.1f},{10 + (1 - v) * (height - 30):.1f}" for j, v in enumerate(vals))
        lines.append({"policy": policy, "points": pts, "colour": colours[i % len(colours)], "last": vals[-1]})
    return {"width": width, "height": height, "lines": lines, "n": n}


# -- the build ------------------------------------------------------------------------------------


def _marker(out: Path) -> dict[str, Any]:
    """A site's marker as a dict (empty for a marker of a site written before manifests)."""
    try:
        data = json.loads((out / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _manifest(out: Path) -> set[str] | None:
    """The files a site's marker lists (relative POSIX paths); None for a marker of a site written before
    manifests (then the site's own layout stands in for it)."""
    files = _marker(out).get("files")
    return {str(f) for f in files} if isinstance(files, list) else None


_LAYOUT = re.compile(r"index\.html|envs/[^/]+\.html|rejected/[^/]+\.html|runs/[^/]+/[^/]+\.html"
                     r"|assets/site\.(?:css|js)")


def _foreign(out: Path) -> list[str]:
    """What in ``out`` (an inspector site) this command did not write: files the manifest does not list,
    links, folders holding none of its files. Empty when ``out`` may be replaced."""
    listed = _manifest(out)
    known = (lambda rel: rel in listed) if listed is not None else (lambda rel: bool(_LAYOUT.fullmatch(rel)))
    foreign: list[str] = []
    for folder, dirs, files in os.walk(out):
        base = Path(folder)
        for name in sorted(dirs):
            path = base / name
            if path.is_symlink():
                foreign.append(path.relative_to(out).as_posix())
        dirs[:] = sorted(d for d in dirs if not (base / d).is_symlink())
        for name in sorted(files):
            path = base / name
            rel = path.relative_to(out).as_posix()
            if rel == MARKER:
                continue
            if path.is_symlink() or not path.is_file() or not known(rel):
                foreign.append(rel)
        if base != out and not dirs and not files:
            foreign.append(base.relative_to(out).as_posix() + "/")
    return foreign


def _inside(a: Path, b: Path) -> bool:
    """Whether ``a`` is ``b`` or lies under it (both resolved)."""
    return a == b or b in a.parents


def _check_out(out: Path, keep: Iterable[Path], source: _Source | None = None, force: bool = False) -> str | None:
    """Refuse an ``out`` that would put what is inspected at risk, that holds something else, or that is the
    site of another library or spec (unless ``force``). Returns what an existing site showed (None: no site)."""
    keep = list(keep)
    out_r = out.expanduser().resolve()
    for what in keep:
        p = what.expanduser().resolve()
        if p == out_r:
            how = f"is {what}"
        elif _inside(p, out_r):
            how = f"holds {what}"
        elif p.is_dir() and _inside(out_r, p):
            how = f"is inside {what}"
        else:
            continue
        raise FileExistsError(f"--out {out} {how}, which is being inspected: the site must not hold it (rebuilding "
                              "the site would delete it) nor sit inside it; give --out a folder outside it")
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} exists and is not a folder; give an empty or new folder to --out")
    if not out.exists() or not any(out.iterdir()):
        return None
    if not (out / MARKER).is_file():
        raise FileExistsError(f"{out} exists and is not an inspector site (no {MARKER}); give an empty or new "
                              "folder to --out")
    foreign = _foreign(out)
    if foreign:
        shown = ", ".join(foreign[:10]) + (f" and {len(foreign) - 10} more" if len(foreign) > 10 else "")
        raise FileExistsError(f"{out} is an inspector site, but these files in it are not the inspector's: {shown}; "
                              "move them out (or give another folder to --out): rebuilding replaces the whole folder")
    marker = _marker(out)
    was = _describe(marker)
    if source is not None and marker.get("source_key") != source.key and not force:
        raise FileExistsError(f"{out} holds the inspector site of {was}, not of {source.label}; give another folder "
                              f"to --out, or add --force to replace that site")
    return was


def _describe(marker: dict[str, Any]) -> str:
    """What an existing site shows, from its marker (``library/ (20 environments, built 2025-01-01T10:00Z)``)."""
    label = marker.get("source")
    if not isinstance(label, str):
        return "something this version cannot name (a site from an older version)"
    envs, built = marker.get("envs"), marker.get("built_at")
    parts = ([f"{envs} environment{'' if envs == 1 else 's'}"] if isinstance(envs, int) else []) + (
        [f"built {built}"] if isinstance(built, str) else [])
    return f"{label}" + (f" ({', '.join(parts)})" if parts else "")


def _prepare(out: Path) -> Path:
    """A fresh temporary folder beside ``out`` (made with the umask's mode, as ``out`` will keep it)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    while True:
        tmp = out.parent / f".{out.name}.{secrets.token_hex(6)}.tmp"
        try:
            tmp.mkdir(mode=0o777)  # not mkdtemp: its 0700 would become the site's mode
            return tmp
        except FileExistsError:
            continue


def _swap(tmp: Path, out: Path) -> None:
    """Replace ``out`` by ``tmp`` (the old site goes only once the new one is complete)."""
    old = None
    if out.exists():
        old = out.with_name(f".{out.name}.old-{time.time_ns()}")
        out.rename(old)
    tmp.rename(out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _write_manifest(site: Path, source: _Source, envs: int) -> None:
    """The marker: what the site shows (so a later build knows whether it is a rebuild) and every file of the
    site (what a later build may replace)."""
    import datetime as dt

    files = sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file())
    built = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    data = {"built_by": "envwright inspect", "source": source.label, "source_key": source.key, "envs": envs,
            "built_at": built, "files": files}
    (site / MARKER).write_text(json.dumps(data, indent=0) + "\n", encoding="utf-8")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", errors="backslashreplace")


@dataclass
class _Source:
    """What to inspect: a library, or loose spec files (a spec, a folder of specs, an example)."""

    label: str
    library: Any = None  #: an open :class:`~envgen.library.Library`
    files: list[Path] | None = None
    roots: tuple[Path, ...] = ()  #: what the site must never hold or sit in (the library, the folder, the file)

    @property
    def key(self) -> str:
        """What the site shows, however it was spelled: the resolved library, folder or file."""
        return "\n".join(sorted(str(r.expanduser().resolve()) for r in self.roots))


def _open_source(ref: str, catalog_url: str | None = None) -> _Source:
    from envgen.library import Library, is_library

    path = Path(ref).expanduser()
    if path.is_dir() and is_library(path):
        return _Source(str(path), library=Library.open_readonly(path, catalog_url), roots=(path,))
    if path.is_dir():
        files = sorted(p for p in path.glob("*.json") if p.is_file())
        if not files:
            raise FileNotFoundError(f"{ref} is neither a library (no specs/ folder, no catalog.sqlite) nor a folder "
                                    "of *.json spec files; pass a library folder (the folder envwright generate --out "
                                    "wrote), a spec file, a folder of spec files or an example's name")
        return _Source(str(path), files=files, roots=(path,))
    from gym_envs.cli import locate_spec

    try:
        found = locate_spec(ref).path
        return _Source(ref, files=[found], roots=(Path(found),))
    except LookupError as e:
        raise FileNotFoundError(str(e)) from None


def build_site(ref: str, out: str | Path, *, runs: Iterable[str | Path] = (), corpus: str | None = None,
               gate: str = "auto", executor: str = "worker", rows: int = 5, catalog_url: str | None = None,
               progress: Callable[[int, int], None] | None = None, force: bool = False) -> SiteSummary:
    """Write the site for ``ref`` (a library folder, a spec file, a folder of specs or an example's name).

    Args:
        ref: a library folder, a spec file, a folder of specs or a shipped example's name.
        out: the site's folder (built beside it and swapped in whole; an existing one must be empty, or a site
            of the same ``ref``, or any site with ``force``).
        runs: evaluation run folders whose episodes are linked from env pages.
        corpus: the corpus the library was generated from, to show source documents that are not in
            this interpreter's standard library.
        gate: ``auto`` (the stored gate report, else run the gate), ``stored``, ``run`` or ``off``.
        executor: where spec code runs to build seed rows (and the gate): ``worker`` or ``inprocess``.
        rows: seed rows shown per table.
        catalog_url: the library's catalog when it is not ``LIBRARY/catalog.sqlite`` (e.g. PostgreSQL).
        progress: called with ``(done, total)`` after each environment.
        force: replace a site of another library or spec at ``out`` (its files only, never others').

    Raises:
        FileNotFoundError: ``ref`` is not found, or holds no spec that loads.
        FileExistsError: ``out`` is not a folder the site may take (see the module docstring).
    """
    if gate not in GATE_MODES:
        raise ValueError(f"gate must be one of {GATE_MODES}, got {gate!r}")
    t0 = time.perf_counter()
    out = Path(out)
    run_dirs = [Path(r) for r in runs]
    source = _open_source(ref, catalog_url)
    try:
        keep = [*source.roots, *run_dirs] + ([Path(corpus)] if corpus and Path(corpus).expanduser().exists() else [])
        replaced = _check_out(out, keep, source, force)
        run_pages = collect_runs(run_dirs)
    except BaseException:
        if source.library is not None:
            source.library.close()
        raise
    tmp = _prepare(out)
    try:
        summary = _build(source, tmp, run_pages, corpus=corpus, gate=gate, executor=executor, rows=rows,
                         progress=progress)
        _write_manifest(tmp, source, summary.envs)
        _swap(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if source.library is not None:
            source.library.close()
    summary.out, summary.seconds, summary.replaced = out, time.perf_counter() - t0, replaced
    return summary


def _episodes_by_env(run_pages: list[RunPage]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for run in run_pages:
        for r in run.episodes:
            out.setdefault(str(r.get("env_id")), []).append({"run": run.name, **r})
    return out


def _specs(source: _Source, problems: list[str]) -> list[tuple[EnvSpec, dict[str, Any], str]]:
    """(spec, catalog row, file) of every environment to show."""
    items = []
    if source.library is not None:
        for row in source.library.rows(sort="id"):
            try:
                items.append((source.library.load(row["id"]), row, str(source.library.spec_path(row["id"]))))
            except (SpecError, OSError, ValueError) as e:
                problems.append(f"{row['id']}: the spec file does not load: {e}")
        return items
    for path in source.files or []:
        try:
            items.append((load_spec(path), {}, str(path)))
        except (SpecError, OSError, ValueError) as e:
            problems.append(f"{path}: {e}")
    return items


def _build(source: _Source, tmp: Path, run_pages: list[RunPage], *, corpus: str | None, gate: str,
           executor: str, rows: int, progress: Callable[[int, int], None] | None) -> SiteSummary:
    from gym_envs.sandbox import make_executor

    env = template_env()
    problems: list[str] = []
    items = _specs(source, problems)
    if source.files is not None and not items:
        raise ValueError(f"{source.label} holds no environment spec that loads: {'; '.join(problems[:5])}"
                         f"{' ...' if len(problems) > 5 else ''} (envwright inspect takes a library folder, a spec "
                         "file, a folder of spec files or an example's name)")
    lib = source.library
    wanted = {s.source.doc_id: (s.source.corpus, s.source.path) for s, _, _ in items if s.source is not None}
    docs = find_documents(wanted, corpus, on_problem=problems.append)
    history: dict[str, list[dict[str, Any]]] = {}
    for h in lib.solve_history() if lib is not None else []:
        history.setdefault(h["env_id"], []).append(h)
    episodes = _episodes_by_env(run_pages)
    site = {"title": f"envwright inspect: {source.label}", "source": source.label, "is_library": lib is not None,
            "runs": [{"name": r.name, "path": r.path, "episodes": len(r.episodes)} for r in run_pages]}
    ex = make_executor(executor)
    index_rows = []
    try:
        for i, (spec, row, file) in enumerate(items):
            page = collect_env(spec, row=row, file=file, stored_gate=lib.gate_report(spec.id) if lib else None,
                               gate_mode=gate, executor=ex, rows=rows,
                               doc=docs.get(spec.source.doc_id) if spec.source else None,
                               history=history.get(spec.id, ()))
            page.episodes = episodes.get(spec.id, [])
            _write(tmp / "envs" / f"{page_name(spec.id)}.html", _env_html(env, page, site))
            index_rows.append(page.index_row())
            if progress:
                progress(i + 1, len(items))
        realism = _realism([spec for spec, _, _ in items], ex, problems) if items else None
    finally:
        ex.close()
    rejected = collect_rejected(Path(source.label), lib.attempts()) if lib is not None else []
    known = {r["id"] for r in index_rows}
    for rej in rejected:
        _write(tmp / "rejected" / f"{page_name(rej.attempt_id)}.html",
               env.get_template("rejected.html.jinja").render(site=site, root="../", r=rej))
    if lib is not None:
        _write(tmp / "rejected" / "index.html",
               env.get_template("rejected_index.html.jinja").render(
                   site=site, root="../", rejected=rejected, codes=sorted({c for r in rejected for c in r.codes})))
    n_episodes = 0
    for run in run_pages:
        base = tmp / "runs" / run.name
        report = None
        if run.report is not None:  # copied in, so the link works over HTTP and when the site is moved
            (base / REPORT_DIR).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(run.report, base / REPORT_DIR / "report.html")
            report = f"{REPORT_DIR}/report.html"
        _write(base / "index.html", env.get_template("run.html.jinja").render(site=site, root="../../", run=run,
                                                                               known=known, report=report))
        for rec in run.episodes:
            n_episodes += 1
            _write(base / f"{rec['page']}.html", env.get_template("episode.html.jinja").render(
                site=site, root="../../", run=run, e=rec, known=known))
    depth = spec_depth(spec for spec, _, _ in items) if items else None
    _write(tmp / "index.html", env.get_template("index.html.jinja").render(
        site=site, root="", envs=index_rows, n_rejected=len(rejected), problems=problems,
        options=_options(index_rows), page=INDEX_PAGE, depth=depth, realism=realism))
    for name in ("site.css", "site.js"):
        _write(tmp / "assets" / name, (TEMPLATES / name).read_text(encoding="utf-8"))
    return SiteSummary(tmp, len(index_rows), len(rejected), len(run_pages), n_episodes, 0.0, problems)


def _realism(specs: list[EnvSpec], executor: Any, problems: list[str]) -> dict[str, Any] | None:
    """The realism figures of the environments beside the shipped examples' and τ²-bench's
    (:mod:`envgen.realism`), as the index's table: ``{"columns", "rows"}``; None (and a problem) on failure."""
    from envgen.realism import anchors, measure_specs, realism_rows

    try:
        columns, rows = realism_rows([("these environments", measure_specs(specs, executor)), *anchors()])
    except Exception as e:  # the inspector's boundary: figures that cannot be computed are said on the page
        problems.append(f"realism figures: {exception_text(e)}")
        return None
    return {"columns": columns, "rows": rows}


def _options(rows: list[dict[str, Any]]) -> dict[str, list[str]]:
    """The values each index filter offers."""
    return {"proposer": sorted({r["proposer"] for r in rows}), "stream": sorted({r["stream"] for r in rows}),
            "skill": sorted({r["skill"] for r in rows if r["skill"]}),
            "kind": sorted({k for r in rows for k in r["kinds"]})}


def _env_html(env: Any, page: EnvPage, site: dict[str, Any]) -> str:
    hits = {h for n in page.names for h in n["hits"]}
    return env.get_template("env.html.jinja").render(site=site, root="../", p=page, chart=_chart(page.history),
                                                     hits=sorted(hits))

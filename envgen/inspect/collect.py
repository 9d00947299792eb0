"""What the inspector shows, gathered from a library (or one spec) into plain dicts for the templates.

Role: read, never write. For each environment: its spec (a scenario task's
simulated user included), its catalog row,
the validity gate's report (stored under ``LIBRARY/gate/`` by ``generate``,
else re-run when asked), a few seed rows of each table (built through an
executor session, so untrusted specs run isolated), the source document's
excerpt and which of its identifiers the environment's names use, the
solve-rate history, and the episodes of the given evaluation runs. Rejected
proposals come from the catalog's ``attempts`` and ``LIBRARY/rejected/``.

Contract: a failure while collecting one environment (a state that does not
build, a document that cannot be found, a gate that crashes) is recorded on
that environment's page as data; it never stops the site.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gym_envs.cli import check_summary, format_call, source_label, tool_parameters
from gym_envs.errors import exception_text
from gym_envs.spec import EnvSpec, SpecError, ToolCall, parse_spec

__all__ = ["EnvPage", "Refused", "RejectedPage", "RunPage", "SourceDoc", "assistant_view", "call_text",
           "collect_env", "collect_rejected", "collect_runs", "confined", "find_documents", "gate_rules", "page_name"]

EXCERPT_TOKENS = 2_000  #: source excerpt budget (about 8,000 characters)

def gate_rules() -> list[dict[str, Any]]:
    """Every rule of the validity gate: ``n``, ``name`` and ``meaning`` (empty for a rule not described here)."""
    from envgen.gate.verdict import RULE_MEANINGS, RULES

    return [{"n": n, "name": name, "meaning": RULE_MEANINGS.get(n, "")} for n, name in sorted(RULES.items())]


def call_text(name: str, arguments: Any) -> str:
    """A tool call as a person reads it: ``borrow_book(member_id=1, title="Emma")`` (values as JSON)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return f"{name}({arguments})"
    if not isinstance(arguments, dict):
        return f"{name}({json.dumps(arguments, ensure_ascii=False, default=str)})"
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in arguments.items())
    return f"{name}({args})"


def assistant_view(message: dict[str, Any]) -> dict[str, Any]:
    """An assistant message of a transcript as a person reads it: its ``text``, its ``calls`` (each as
    :func:`call_text`), and ``raw``, what the policy wrote, when it says more than those (tags, JSON)."""
    text = message.get("content")
    text = text if isinstance(text, str) else ("" if text is None else json.dumps(text, ensure_ascii=False))
    calls = []
    for c in message.get("tool_calls") or []:
        if isinstance(c, dict):
            fn: dict[str, Any] = c["function"] if isinstance(c.get("function"), dict) else c
            calls.append(call_text(str(fn.get("name", "?")), fn.get("arguments", {})))
    raw = message.get("raw")
    if raw is not None and not isinstance(raw, str):
        raw = json.dumps(raw, ensure_ascii=False, indent=1, default=str)
    if raw is not None and (raw.strip() == text.strip() and not calls):
        raw = None
    return {"text": text, "calls": calls, "raw": raw}


def page_name(key: str) -> str:
    """A file name for any key: ids that are already safe keep their text, others get a hash suffix."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", key)[:80].strip(".") or "x"
    return safe if safe == key else f"{safe}-{hashlib.sha256(key.encode('utf-8', 'surrogatepass')).hexdigest()[:10]}"


@dataclass
class SourceDoc:
    """The document an environment was made from, when it could be found."""

    doc_id: str
    text: str | None = None  #: the excerpt shown (None: not found)
    complete: bool = False  #: whether ``text`` is the whole document
    lines: int = 0
    sha_matches: bool | None = None  #: the document's sha256 equals the spec's (None: not checked)
    problem: str | None = None  #: why it is not shown
    identifiers: set[str] = field(default_factory=set)


@dataclass
class EnvPage:
    """Everything one environment's page and its index row show."""

    id: str
    spec: EnvSpec
    row: dict[str, Any]  #: catalog columns (empty for a spec outside a library)
    file: str
    tools: list[dict[str, Any]] = field(default_factory=list)
    tables: dict[str, Any] | None = None
    tables_error: str | None = None
    tasks: list[dict[str, Any]] = field(default_factory=list)
    gate: dict[str, Any] | None = None
    gate_source: str = "none"  #: ``stored``, ``run`` or ``none``
    source: SourceDoc | None = None
    names: list[dict[str, Any]] = field(default_factory=list)  #: tool/table names and whether the doc has them
    history: list[dict[str, Any]] = field(default_factory=list)
    episodes: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def kinds(self) -> list[str]:
        return sorted({t.kind for t in self.spec.tasks})

    @property
    def n_tables(self) -> int:
        return len(_table_names(self.spec))

    def index_row(self) -> dict[str, Any]:
        """The index table's cells (raw values; the template formats them)."""
        r, g = self.row, self.gate or {}
        muts = g.get("mutations") or []
        killed = sum(1 for m in muts if m.get("outcome") in ("killed", "tolerated"))
        secs = g.get("seconds") if g else None
        return {"id": self.id, "title": self.spec.title, "proposer": self.spec.provenance.generator,
                "stream": self.spec.provenance.stream, "skill": self.spec.provenance.skill_id or "",
                "doc": self.spec.source.doc_id if self.spec.source else "", "kinds": self.kinds,
                "tables": self.n_tables, "tools": len(self.spec.tools), "tasks": len(self.spec.tasks),
                "grounding": r.get("grounding"), "solve_rate": r.get("solve_rate"),
                "validation_ms": None if secs is None else 1000.0 * secs,
                "mutations": f"{killed}/{len(muts)}" if muts else "", "kill_rate": killed / len(muts) if muts else None,
                "accepted": g.get("accepted")}


def _table_names(spec: EnvSpec) -> list[str]:
    return re.findall(r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?[\"`\[]?(\w+)", spec.state.schema_sql, flags=re.I)


def _tasks(spec: EnvSpec) -> list[dict[str, Any]]:
    out = []
    for task in spec.tasks:
        turns = []
        for i, turn in enumerate(task.turns):
            checks = [{"n": ci + 1, "kind": c.kind, "summary": check_summary(c), "detail": _check_detail(c)}
                      for ci, c in enumerate(turn.checks)]
            calls = [format_call(c.name, c.arguments) if isinstance(c, ToolCall) else f"say {json.dumps(c.say)}"
                     for c in turn.reference]
            turns.append({"n": i + 1, "instruction": turn.instruction, "checks": checks, "reference": calls})
        out.append({"id": task.id, "kind": task.kind, "turns": turns, "scenario": _scenario(task)})
    return out


def _scenario(task: Any) -> list[str]:
    """A scenario task's simulated user as lines a person reads (none for a task without a scenario)."""
    sc = task.scenario
    if sc is None:
        return []
    lines = [f"persona: {sc.persona}"] if sc.persona else []
    lines.append(f"goal: {sc.goal}")
    lines += [f"knows {key}: {value}" for key, value in sc.facts.items()]
    lines.append(f"asked to confirm: {sc.on_confirm}; a question it cannot answer: {sc.unknown!r}; "
                 f"at most {sc.max_replies} replies a turn")
    return lines


def _check_detail(check: Any) -> str:
    """The full text of a check (query and expected rows, the python code, ...: its kind's ``detail``)."""
    return str(check.detail())


def _dump_tables(spec: EnvSpec, executor: Any, rows: int) -> tuple[dict[str, Any] | None, str | None]:
    from gym_envs.sandbox import LoadFailure

    try:
        session = executor.session(spec, seed=0)
    except LoadFailure as e:
        return None, str(e)
    except Exception as e:  # the inspector's boundary: what cannot be shown is said on the page
        return None, exception_text(e)
    try:
        return session.dump(limit=rows), None
    except Exception as e:  # the inspector's boundary, as above
        return None, exception_text(e)
    finally:
        session.close()


def _gate(spec: EnvSpec, stored: dict[str, Any] | None, mode: str, executor: Any) -> tuple[dict[str, Any] | None, str]:
    """The gate report: the stored one, or a fresh run (``mode``: auto, stored, run, off)."""
    if mode == "off":
        return None, "none"
    if stored is not None and mode in ("auto", "stored"):
        return stored, "stored"
    if mode == "stored":
        return None, "none"
    from envgen.gate import validate_spec

    return validate_spec(spec, executor=executor).to_dict(), "run"


def _names(spec: EnvSpec, doc: SourceDoc | None) -> list[dict[str, Any]]:
    """Tool and table names, each with the document identifiers it traces to (grounding, shown)."""
    idents = doc.identifiers if doc is not None else set()
    words = {w for i in idents for w in i.lower().split("_") if len(w) > 2} | {i.lower() for i in idents}
    out = []
    for what, name in [("tool", t.name) for t in spec.tools] + [("table", n) for n in _table_names(spec)]:
        parts = [p for p in name.lower().split("_") if len(p) > 2]
        hits = sorted({p for p in parts if p in words or p.rstrip("s") in words} | (
            {name.lower()} if name.lower() in words else set()))
        out.append({"kind": what, "name": name, "hits": hits, "grounded": bool(hits) if idents else None})
    return out


def collect_env(spec: EnvSpec, *, row: dict[str, Any] | None = None, file: str = "",
                stored_gate: dict[str, Any] | None = None, gate_mode: str = "auto", executor: Any = None,
                rows: int = 5, doc: Any = None, history: Iterable[dict[str, Any]] = ()) -> EnvPage:
    """One environment's page data (a problem with any part is noted on the page, never raised)."""
    page = EnvPage(spec.id, spec, dict(row or {}), file)
    page.tools = [{"name": t.name, "description": t.description, "parameters": tool_parameters(t),
                   "schema": json.dumps(t.parameters, indent=2, ensure_ascii=False)} for t in spec.tools]
    page.tasks = _tasks(spec)
    if executor is not None:
        page.tables, page.tables_error = _dump_tables(spec, executor, rows)
    try:
        page.gate, page.gate_source = _gate(spec, stored_gate, gate_mode, executor or "worker")
    except Exception as e:  # the inspector's boundary: the page says the gate could not run, and why
        page.problems.append(f"the validity gate could not run: {exception_text(e)}")
    page.source = _source(spec, doc)
    page.names = _names(spec, page.source)
    page.history = _history(history)
    page.row.setdefault("source_label", source_label(spec))
    return page


def _source(spec: EnvSpec, doc: Any) -> SourceDoc | None:
    if spec.source is None:
        return None
    out = SourceDoc(spec.source.doc_id)
    if isinstance(doc, Refused):
        out.problem = doc.reason
        return out
    if doc is None:
        out.problem = ("the document was not found: pass the corpus it came from with --corpus "
                       "(a source tree's folder, a .jsonl/.parquet file or hf:NAME)")
        return out
    from corpora import excerpt_parts, identifiers

    ex = excerpt_parts(doc, EXCERPT_TOKENS)
    out.text, out.complete, out.lines = ex.text, ex.complete, doc.text.count("\n") + 1
    out.sha_matches = None if not spec.source.sha256 else doc.sha256 == spec.source.sha256
    out.identifiers = set(identifiers(doc))  # never raises: a text that does not parse is scanned as text
    return out


def _history(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Evaluation results in order, with each policy's running solve rate on this environment."""
    totals: dict[str, list[int]] = {}
    out = []
    for r in rows:
        n, k = int(r.get("n") or 0), int(r.get("passes") or 0)
        t = totals.setdefault(str(r.get("policy")), [0, 0])
        t[0] += n
        t[1] += k
        out.append({**r, "rate": k / n if n else None, "cumulative": t[1] / t[0] if t[0] else None})
    return out


# -- documents ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Refused:
    """A source document the inspector will not read, and why (its page says so instead of showing it)."""

    reason: str


def confined(root: Path, path: str) -> Path | Refused:
    """``root / path`` resolved (links followed), when it lies inside ``root`` (also resolved); else why not.

    A spec's ``source.path`` is spec data: an absolute path, a ``..`` that climbs out, or a link inside the
    corpus that points out of it would otherwise name any file of this machine.
    """
    base = root.resolve()
    try:
        if Path(path).is_absolute() or Path(path).drive:
            return Refused(f"the spec's source path {path!r} is absolute; a source path is relative to its corpus "
                           f"({base}), so the file is not shown")
        target = (base / path).resolve()
    except (ValueError, OSError) as e:  # a NUL byte, a name too long, a link loop
        return Refused(f"the spec's source path {path[:200]!r} names no file ({e}), so nothing is shown")
    if base not in target.parents:
        return Refused(f"the spec's source path {path!r} leads out of its corpus ({base}) to another file of "
                       "this machine, so it is not shown")
    return target


def find_documents(wanted: dict[str, tuple[str, str | None]], corpus: str | None = None,
                   on_problem: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Documents by id for ``wanted`` (doc id -> (corpus name, path)).

    ``stdlib`` documents are read from this interpreter's standard library; others from ``corpus`` (a
    source tree's folder is read file by file; any other corpus spec is scanned until every wanted id is
    found). Ids not found are simply absent. A path that leads out of its corpus's folder (absolute,
    ``..``, a link pointing out) is never read: its id maps to a :class:`Refused` saying why.
    """
    from corpora import Document, load_corpus, resolve_spec
    from corpora.loaders.stdlib import stdlib_root
    from corpora.loaders.tree import read_source

    found: dict[str, Any] = {}
    tree_root: Path | None = None
    if corpus:
        try:
            name, source = resolve_spec(corpus)
            tree_root = Path(source) if name == "tree" and source else None
        except ValueError as e:  # a CorpusError: no such loader or path
            if on_problem:
                on_problem(f"--corpus {corpus!r}: {e}")
            corpus = None
    for doc_id, (corpus_name, path) in wanted.items():
        root = stdlib_root() if corpus_name == "stdlib" else tree_root
        if root is None or not path:
            continue
        where = confined(root, path)
        if isinstance(where, Refused):
            found[doc_id] = where
            continue
        text = read_source(where, max_bytes=50_000_000)
        if text is not None:
            found[doc_id] = Document.create(text, corpus=corpus_name, path=path)
    rest = {d for d in wanted if d not in found}
    if rest and corpus and tree_root is None:
        for doc in load_corpus(corpus):
            if doc.id in rest:
                found[doc.id] = doc
                rest.discard(doc.id)
                if not rest:
                    break
    return found


# -- rejected proposals ---------------------------------------------------------------------------


@dataclass
class RejectedPage:
    """One rejected proposal: its attempt row, reasons, candidate (parsed when it parses) and gate report."""

    attempt_id: str
    row: dict[str, Any]
    reasons: list[str]
    codes: list[str]
    candidate_text: str | None = None
    spec: EnvSpec | None = None
    parse_error: str | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    tasks: list[dict[str, Any]] = field(default_factory=list)
    gate: dict[str, Any] | None = None


def collect_rejected(root: Path, attempts: Iterable[dict[str, Any]]) -> list[RejectedPage]:
    """Every rejected attempt of a library, with what ``rejected/<attempt>.json`` kept of it."""
    out = []
    for a in attempts:
        if a.get("accepted"):
            continue
        page = RejectedPage(a["attempt_id"], dict(a), json.loads(a.get("reasons") or "[]"),
                            json.loads(a.get("codes") or "[]"))
        path = confined(root / "rejected", f"{a['attempt_id']}.json")  # the id is catalog data: kept inside
        try:
            payload = None if isinstance(path, Refused) else json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            payload = None
        if isinstance(payload, dict):
            cand = payload.get("candidate")
            page.gate = payload.get("gate") if isinstance(payload.get("gate"), dict) else None
            page.candidate_text = cand if isinstance(cand, str) else json.dumps(cand, indent=1, ensure_ascii=False)
            try:
                page.spec = parse_spec(cand if isinstance(cand, str | dict) else json.dumps(cand))
                page.tools = [{"name": t.name, "description": t.description, "parameters": tool_parameters(t),
                               "schema": json.dumps(t.parameters, indent=2, ensure_ascii=False)}
                              for t in page.spec.tools]
                page.tasks = _tasks(page.spec)
            except (SpecError, ValueError, TypeError) as e:
                page.parse_error = str(e)
        out.append(page)
    return out


# -- evaluation runs ------------------------------------------------------------------------------


@dataclass
class RunPage:
    """An evaluation run folder: its summary and episodes (each with a page name for its transcript)."""

    name: str
    path: str
    summary: dict[str, Any]
    episodes: list[dict[str, Any]]

    @property
    def report(self) -> Path | None:
        """The run's own ``report.html`` (self-contained), when it has one: the site copies it in and links it."""
        path = Path(self.path) / "report.html"
        return path if path.is_file() else None


def collect_runs(folders: Iterable[Path]) -> list[RunPage]:
    """Read evaluation run folders; a folder that is not one raises ValueError.

    A run folder (``envwright eval --out``) holds ``results.jsonl``, one episode record per line, and
    ``summary.json``. (envgen does not import eval: the run folder's files are the interface.)
    """
    out: list[RunPage] = []
    names: set[str] = set()
    for folder in folders:
        results = folder / "results.jsonl"
        if not results.is_file():
            raise ValueError(f"{folder} is not an evaluation run folder (no results.jsonl); make one with "
                             f"envwright eval --out {folder}")
        with results.open(encoding="utf-8") as f:
            records = [json.loads(line) for line in f if line.strip()]
        try:
            summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            summary = {}
        name = page_name(folder.resolve().name or "run")
        while name in names:
            name += "-1"
        names.add(name)
        for r in records:
            r["page"] = page_name(str(r.get("episode_id")))
        out.append(RunPage(name, str(folder), summary, records))
    return out

r"""Run folders, reports and run comparison.

Role: persist what :mod:`eval.runner` produced and render it for people.

Contract:

- :func:`write_run` writes ``results.jsonl`` (one episode record per line, transcript
  included), ``summary.json``, ``report.md`` and ``report.html`` into a folder and returns their
  paths; :func:`load_run` reads a folder back. Nothing is lost to odd text: JSON is written with
  lone surrogates (text that is no valid Unicode, say from a tool result) as ``\udXXX`` escapes,
  which read back to the same strings, and the reports show them as such escapes. The four
  files are staged in the folder and renamed into place together, so a failure leaves the
  folder as it was (a new folder is removed); a report that cannot be rendered is written as a
  page that says why, so the records and the summary are always kept.
- ``report.html`` is self-contained: inline CSS, matplotlib plots embedded as base64 PNG
  (per-suite pass@1 / pass^k bars with bootstrap intervals, per-kind breakdown, action-class
  diagnostics), an index of every episode linking to its transcript, anchored
  ``id="ep-EPISODE_ID"``. Long messages are cut in the HTML (``results.jsonl`` keeps them whole).
- Episodes the model backend failed (:func:`eval.errors.is_backend_failure`) are counted in the
  ``backend failures`` column and said in one sentence (:func:`backend_note`) at the top of both
  reports; they are in no other figure, nor in :func:`compare_runs`.
- :func:`compare_runs` puts two run folders side by side per suite and task kind (pass@1 and
  partial credit per check), with a paired bootstrap interval of the difference B - A over the
  tasks both runs share (unpaired when they share none); :func:`compare_markdown` renders it.
- Plots use matplotlib's object API (no pyplot state), so reports can be written from threads. Each
  plot shows the mean check fraction beside pass@1, so a run that passes nothing still draws bars;
  legends sit outside the axes.
- **Untrusted text is data.** Suite, task and environment names, policy labels, error and check
  messages come from specs, models and tools. ``report.md`` shows them only inside code spans
  (:func:`md_code`: control characters and newlines as visible escapes, a backtick fence longer than
  any backtick run inside, table pipes escaped), so they cannot add tables, HTML or links;
  ``report.html`` escapes every field (:func:`html.escape`).
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
import re
import shutil
import tempfile
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from eval.errors import is_backend_failure
from eval.judging import judged_markdown
from eval.metrics import group_by_task, mean, paired_bootstrap_diff, task_values
from gym_envs import display
from gym_envs.errors import exception_text

__all__ = ["backend_note", "claim_run_folder", "compare_markdown", "compare_runs", "diagnostics_figure", "json_text",
           "kinds_figure", "load_run", "md_code", "render_html", "render_markdown", "suites_figure", "write_run"]

_HTML_MESSAGE_CHARS = 6_000
_DIAG_KEYS = ("fabricated_rate", "asked_rate", "declined_rate", "acted_rate", "withheld_call_rate")


def _fmt(x: Any, digits: int = 3) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def _ci(ci: Any) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "–"


def anchor(episode_id: str) -> str:
    """The HTML anchor of an episode's transcript."""
    return f"ep-{episode_id}"


def md_code(value: Any, *, table: bool = False, limit: int = 300) -> str:
    """Untrusted text as one inline Markdown code span that cannot break out of it.

    Control characters, newlines and tabs become visible escapes (one line, so no new table row or
    heading), the text is cut to ``limit`` characters, the fence is one backtick longer than the
    longest run of backticks inside (CommonMark), and in a table cell ``|`` is escaped (GFM splits
    cells on it even inside code spans).
    """
    text = display.one_line(value)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    if not text:
        return "(empty)"
    if table:
        text = text.replace("|", "\\|")
    fence = "`" * (max((len(r) for r in re.findall("`+", text)), default=0) + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


# -- files ----------------------------------------------------------------------------------------
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
RUN_FILES = ("results.jsonl", "summary.json", "report.md", "report.html")
_RUN_FILES = dict(zip(("results", "summary", "markdown", "html"), RUN_FILES, strict=True))


def json_text(obj: Any, **kwargs: Any) -> str:
    r"""JSON text that a UTF-8 file can always hold.

    Non-ASCII text stays readable, and lone surrogates (which no encoding can write) become ``\udXXX``
    escapes, which ``json.loads`` reads back to the same string. (Inside JSON text such a code point can
    only occur in a string, where the escape is valid.)
    """
    text = json.dumps(obj, ensure_ascii=False, default=str, **kwargs)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _rendered(kind: str, render: Callable[[], str]) -> str:
    """A report, or a page saying why it could not be rendered (the records are in results.jsonl)."""
    try:
        return render()
    except Exception as e:  # the boundary: the run's records and summary must still be written
        why = exception_text(e)
        if kind == "html":
            return (f"<!doctype html><meta charset=\"utf-8\"><title>report</title><p>The report could not be "
                    f"rendered ({html.escape(why)}); results.jsonl holds every episode record.</p>\n")
        return f"# Report\n\nThe report could not be rendered ({why}); results.jsonl holds every episode record.\n"


def write_run(out: str | Path, records: list[dict[str, Any]], summary: dict[str, Any]) -> dict[str, Path]:
    """Write the run folder; returns ``{"results", "summary", "markdown", "html"}`` paths (see the module
    docstring: lossless JSON, all four files or none)."""
    out = Path(out)
    texts = {
        "results": "".join(json_text(rec) + "\n" for rec in records),
        "summary": json_text(summary, indent=2) + "\n",
        "markdown": _rendered("markdown", lambda: render_markdown(records, summary)),
        "html": _rendered("html", lambda: render_html(records, summary)),
    }
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".writing-", dir=out))
    try:
        for key, text in texts.items():
            with open(staging / _RUN_FILES[key], "wb") as f:
                f.write(text.encode("utf-8", "backslashreplace"))
                f.flush()
                os.fsync(f.fileno())
        for name in _RUN_FILES.values():
            os.replace(staging / name, out / name)
    except BaseException:
        if created:
            shutil.rmtree(out, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return {key: out / name for key, name in _RUN_FILES.items()}


def claim_run_folder(out: str | Path, *, overwrite: bool = False) -> None:
    """Refuse a folder that already holds an evaluation run, unless ``overwrite`` (then its run files go).

    Called before any episode runs, so a refused run costs nothing.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"--out {out} is a file; give a folder for the run")
    present = [name for name in RUN_FILES if (out / name).exists()]
    if not present:
        return
    if not overwrite:
        raise FileExistsError(f"{out} already holds an evaluation run ({', '.join(present)}); choose another "
                              "--out, or pass --overwrite to replace it")
    for name in present:
        (out / name).unlink()


def load_run(path: str | Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``(records, summary)`` of a run folder."""
    root = Path(path)
    if not (root / "results.jsonl").is_file():
        raise FileNotFoundError(f"{root} is not a run folder (no results.jsonl); "
                                f"run `envwright eval --out {root}`")
    with (root / "results.jsonl").open(encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    summary_path = root / "summary.json"
    summary = json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.is_file() else {}
    return records, summary


# -- markdown -------------------------------------------------------------------------------------
def _suite_rows(summary: Mapping[str, Any]) -> list[list[str]]:
    k = (summary.get("run") or {}).get("config", {}).get("k", 1)
    rows = []
    for name, s in (summary.get("suites") or {}).items():
        hat = s["pass^k"].get(str(k), {})
        at = s["pass@k"].get(str(k), {})
        run = (summary.get("runs") or {}).get(name, {})
        rows.append([name, str(s["tasks"]), str(s["episodes"]), _fmt(s["pass@1"]), _ci(s["pass@1_ci"]),
                     _fmt(hat.get("value")), _fmt(at.get("value")), _fmt(s["avg@k"]), _fmt(s["turns@k"]),
                     _fmt(s["checks@k"]), str(s["errors"]), str(s.get("backend_failures", 0)),
                     _fmt(run.get("episodes_per_s"), 1)])
    return rows


_SUITE_HEAD = ["suite", "tasks", "episodes", "pass@1", "95% CI", "pass^k", "pass@k", "avg@k", "turns",
               "checks", "errors", "backend failures", "episodes/s"]


def backend_note(summary: Mapping[str, Any]) -> str | None:
    """What a run's backend failures mean, in one sentence (None: every episode reached the model)."""
    run = summary.get("run") or {}
    n, total = int(run.get("backend_failures") or 0), int(run.get("episodes") or 0)
    if not n:
        return None
    first = f"First error: {run.get('backend_error') or '?'}"
    if n == total:
        return (f"no episode reached the model: all {n} failed in the model backend (no completion came back), so "
                f"none is scored. {first}")
    return (f"{n} of {total} episodes failed in the model backend (no completion came back) and are not scored; "
            f"they are not the model's failures. {first}")


def _md_table(head: list[str], rows: Iterable[list[str]], untrusted: tuple[int, ...] = ()) -> str:
    """A GFM table; cells of the ``untrusted`` columns become code spans (:func:`md_code`)."""
    def cell(i: int, c: str) -> str:
        return md_code(c, table=True) if i in untrusted else c.replace("|", "\\|")

    lines = ["| " + " | ".join(cell(i, h) if i not in untrusted else h for i, h in enumerate(head)) + " |",
             "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell(i, c) for i, c in enumerate(r)) + " |" for r in rows]
    return "\n".join(lines)


def _kind_rows(summary: Mapping[str, Any]) -> list[list[str]]:
    """A row per task kind of each suite, then per split (``split train``) when its tasks carry one."""
    return [[name, kind, str(b["tasks"]), str(b["episodes"]), _fmt(b["pass@1"]), _ci(b["pass@1_ci"]),
             _fmt(b["checks@k"])]
            for name, s in (summary.get("suites") or {}).items()
            for kind, b in [*s["by_kind"].items(), *((f"split {k}", v) for k, v in s.get("by_split", {}).items())]]


_KIND_HEAD = ["suite", "kind", "tasks", "episodes", "pass@1", "95% CI", "checks"]


def _diag_rows(summary: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for name, s in (summary.get("suites") or {}).items():
        d = s["diagnostics"]
        rows.append([name, f"{d['fabricated']}/{d['ask_turns']}", f"{d['asked']}/{d['ask_turns']}",
                     f"{d['declined']}/{d['decline_turns']}", f"{d['acted']}/{d['decline_turns']}",
                     f"{d['withheld_calls']} in {d['withheld_turns']} turns", _fmt(d["withheld_call_rate"])])
    return rows


_DIAG_HEAD = ["suite", "fabricated (ask turns)", "asked", "declined (decline turns)", "acted",
              "withheld calls", "withheld-call rate"]


def _extras_md(summary: Mapping[str, Any]) -> list[str]:
    out = []
    for name, run in (summary.get("runs") or {}).items():
        if "agreement" in run:
            a = run["agreement"]
            out += [f"\n### Checker agreement: {md_code(name)}\n",
                    f"reference pass rate {_fmt(a['reference_pass_rate'])} over {a['tasks']} tasks; "
                    f"empty pass rate {_fmt(a['empty_pass_rate_state_changing'])} over "
                    f"{a['state_changing']} state-changing tasks; agrees: **{a['agrees']}**"]
            out += [f"- violation: {md_code(v['task'])} ({md_code(v['kind'])}): reference passed "
                    f"{v['reference_passed']}, empty passed {v['empty_passed']}" for v in a["violations"]]
        if run.get("notes"):  # what a suite converted from a benchmark says of itself (and of its agreement)
            out += [f"\n### Notes: {md_code(name)}\n", *(f"- {md_code(str(n))}" for n in run["notes"])]
        if "library" in run:
            lib = run["library"]
            out += [f"\n### Labelled pool: {md_code(name)}\n",
                    f"{lib['written']} task results written to the catalog."]
            if lib["suspicious"]:
                out.append("Tasks every evaluated policy fails although the reference passes:")
                out += [f"- {md_code(s['env_id'] + '/' + s['task_id'])} (policies: "
                        f"{', '.join(md_code(p) for p in s['policies'])})" for s in lib["suspicious"][:500]]
                if len(lib["suspicious"]) > 500:
                    out.append(f"- ... {len(lib['suspicious']) - 500} more")
    return out + judged_markdown(summary, md_code)


def render_markdown(records: list[dict[str, Any]], summary: Mapping[str, Any]) -> str:
    """The Markdown report (tables; failed episodes link into ``report.html``)."""
    run = summary.get("run") or {}
    cfg = run.get("config") or {}
    lines = [f"# Evaluation: {md_code(run.get('policy', '?'))}", "",
             f"- started {md_code(run.get('started', '?'))}, {_fmt(run.get('episodes', len(records)))} episodes in "
             f"{_fmt(run.get('seconds'), 1)} s ({_fmt(run.get('episodes_per_s'), 1)} episodes/s)",
             f"- suites: {', '.join(md_code(x) for x in cfg.get('suites', []))}; k = {_fmt(cfg.get('k', 1))}; "
             f"seed = {_fmt(cfg.get('seed', 0))}",
             *([f"- **backend failures**: {md_code(backend_note(summary))}"] if backend_note(summary) else []),
             "", "## Suites", "", _md_table(_SUITE_HEAD, _suite_rows(summary), untrusted=(0,)),
             "", "## By task kind", "", _md_table(_KIND_HEAD, _kind_rows(summary), untrusted=(0, 1)),
             "", "## Action classes", "", _md_table(_DIAG_HEAD, _diag_rows(summary), untrusted=(0,))]
    lines += _extras_md(summary)
    failed = [r for r in records if not r["passed"]]
    lines += ["", f"## Failed episodes ({len(failed)} of {len(records)})", ""]
    for r in failed[:500]:
        why = r.get("error") or _first_failure(r)
        target = urllib.parse.quote(anchor(str(r["episode_id"])), safe="")
        lines.append(f"- [{md_code(r['episode_id'])}](report.html#{target}): {md_code(why)}")
    if len(failed) > 500:
        lines.append(f"- ... {len(failed) - 500} more in results.jsonl")
    return "\n".join(lines) + "\n"


def _first_failure(rec: Mapping[str, Any]) -> str:
    for t in rec.get("turns") or []:
        if not t.get("passed"):
            bad = [c for c in t.get("checks") or [] if not c.get("passed")]
            detail = f"{bad[0]['kind']}: {bad[0]['detail']}" if bad else "not reached"
            return f"turn {t['index'] + 1}: {detail}"[:300]
    return "failed"


# -- plots ----------------------------------------------------------------------------------------
def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height))


def _err(value: float | None, ci: Any) -> list[float]:
    if value is None or not ci:
        return [0.0, 0.0]
    return [max(0.0, value - ci[0]), max(0.0, ci[1] - value)]


def _legend(ax: Any) -> None:
    """The legend right of the axes, where it covers no bar."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=8)


def _labels(ax: Any, bars: Any) -> None:
    """Each bar's value on top of it, so a bar of height 0 still says 0.00."""
    ax.bar_label(bars, fmt="%.2f", fontsize=6, padding=2)


def suites_figure(summary: Mapping[str, Any]) -> Any:
    """Per-suite pass@1, pass^k (bootstrap intervals) and mean check fraction bars (base64 PNG)."""
    suites = summary.get("suites") or {}
    k = str((summary.get("run") or {}).get("config", {}).get("k", 1))
    names = list(suites)
    fig = _figure(max(6.0, 1.9 * len(names) + 3), 3.4)
    ax = fig.add_subplot(1, 1, 1)
    xs = list(range(len(names)))
    p1 = [suites[n]["pass@1"] or 0.0 for n in names]
    e1 = [_err(suites[n]["pass@1"], suites[n]["pass@1_ci"]) for n in names]
    hk = [suites[n]["pass^k"].get(k, {}).get("value") or 0.0 for n in names]
    ek = [_err(suites[n]["pass^k"].get(k, {}).get("value"), suites[n]["pass^k"].get(k, {}).get("ci"))
          for n in names]
    ck = [suites[n].get("checks@k") or 0.0 for n in names]
    _labels(ax, ax.bar([x - 0.27 for x in xs], p1, 0.27, yerr=list(zip(*e1, strict=True)) if e1 else None,
                       capsize=4, label="pass@1", color="#3b7dd8"))
    _labels(ax, ax.bar(xs, hk, 0.27, yerr=list(zip(*ek, strict=True)) if ek else None, capsize=4,
                       label=f"pass^{k}", color="#e08a2c"))
    _labels(ax, ax.bar([x + 0.27 for x in xs], ck, 0.27, label="check fraction", color="#6a9f38"))
    ax.set_xticks(xs, [n if len(n) < 28 else "…" + n[-26:] for n in names], rotation=15, ha="right")
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("rate")
    ax.set_title("Per suite (95% bootstrap CI)")
    _legend(ax)
    return fig


def plot_suites(summary: Mapping[str, Any]) -> str:
    """:func:`suites_figure` as a base64 PNG."""
    return _png(suites_figure(summary))


def kinds_figure(summary: Mapping[str, Any]) -> Any:
    """pass@1 (solid) and mean check fraction (hatched) per task kind, for each suite (base64 PNG)."""
    suites = summary.get("suites") or {}
    kinds = sorted({kind for s in suites.values() for kind in s["by_kind"]})
    fig = _figure(min(14.0, max(6.0, 1.4 * len(kinds) * max(1, len(suites)) + 3)), 3.4)
    ax = fig.add_subplot(1, 1, 1)
    width = 0.8 / max(1, 2 * len(suites))
    for i, (name, s) in enumerate(suites.items()):
        blocks = [s["by_kind"].get(kd) or {} for kd in kinds]
        vals = [b.get("pass@1") or 0.0 for b in blocks]
        errs = [_err(b.get("pass@1"), b.get("pass@1_ci")) for b in blocks]
        checks = [b.get("checks@k") or 0.0 for b in blocks]
        xs = [x + 2 * i * width - 0.4 + width / 2 for x in range(len(kinds))]
        bars = ax.bar(xs, vals, width, yerr=list(zip(*errs, strict=True)) if errs else None, capsize=3,
                      label=f"{name}: pass@1")
        _labels(ax, bars)
        _labels(ax, ax.bar([x + width for x in xs], checks, width, color=bars.patches[0].get_facecolor()
                           if bars.patches else None, alpha=0.45, hatch="//", label=f"{name}: check fraction"))
    ax.set_xticks(list(range(len(kinds))), kinds, rotation=15, ha="right")
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("rate")
    ax.set_title("Per task kind")
    _legend(ax)
    return fig


def plot_kinds(summary: Mapping[str, Any]) -> str:
    """:func:`kinds_figure` as a base64 PNG."""
    return _png(kinds_figure(summary))


def diagnostics_figure(summary: Mapping[str, Any]) -> Any:
    """Action-class rates per suite (base64 PNG); missing rates are drawn as 0 and marked n/a."""
    suites = summary.get("suites") or {}
    fig = _figure(8.0, 3.4)
    ax = fig.add_subplot(1, 1, 1)
    width = 0.8 / max(1, len(suites))
    for i, (name, s) in enumerate(suites.items()):
        d = s["diagnostics"]
        xs = [x + i * width - 0.4 + width / 2 for x in range(len(_DIAG_KEYS))]
        _labels(ax, ax.bar(xs, [d.get(key) or 0.0 for key in _DIAG_KEYS], width, label=name))
        for x, key in zip(xs, _DIAG_KEYS, strict=True):
            if d.get(key) is None:
                ax.text(x, 0.15, "n/a", ha="center", fontsize=6, rotation=90)
    ax.set_xticks(list(range(len(_DIAG_KEYS))), [k.removesuffix("_rate") for k in _DIAG_KEYS], rotation=15)
    ax.set_ylim(0, 1.1)
    ax.set_title("Action classes (share of tagged turns)")
    _legend(ax)
    return fig


def plot_diagnostics(summary: Mapping[str, Any]) -> str:
    """:func:`diagnostics_figure` as a base64 PNG."""
    return _png(diagnostics_figure(summary))


# -- html -----------------------------------------------------------------------------------------
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1.5rem}td,th{border:1px solid #ccc;padding:.25rem .5rem;
font-size:.85rem;text-align:left}th{background:#f2f2f2}.pass{color:#167a2c;font-weight:600}
.fail{color:#b3261e;font-weight:600}.msg{border-left:4px solid #ccc;margin:.3rem 0;padding:.2rem .6rem;
white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:.8rem}.system{border-color:#999}
.user{border-color:#3b7dd8}.assistant{border-color:#e08a2c}.tool{border-color:#6a9f38}
section.episode{border-top:1px solid #ddd;padding-top:.5rem;margin-top:1rem}img{max-width:100%}
.turn{font-size:.8rem;margin:.2rem 0 .2rem 1rem}code{background:#f4f4f4;padding:0 .2rem}
"""


def _e(value: Any) -> str:
    """Any value as escaped HTML text."""
    return html.escape(value if isinstance(value, str) else str(value))


def _html_table(head: list[str], rows: Iterable[list[str]]) -> str:
    h = "".join(f"<th>{html.escape(c)}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{h}</tr>{body}</table>"


def _cut(text: str) -> str:
    return text if len(text) <= _HTML_MESSAGE_CHARS else text[:_HTML_MESSAGE_CHARS] + (
        f"\n... [{len(text) - _HTML_MESSAGE_CHARS} more characters in results.jsonl]")


def _message_html(m: Mapping[str, Any]) -> str:
    role = str(m.get("role", "?"))
    body = m.get("raw") if role == "assistant" and "raw" in m else m.get("content")
    if not isinstance(body, str):
        body = json.dumps(body, ensure_ascii=False)
    if role == "assistant" and "raw" not in m and m.get("tool_calls"):
        body += "\n" + "\n".join(json.dumps(c.get("function", c), ensure_ascii=False)
                                 for c in m["tool_calls"])
    label = role if role != "tool" else f"tool {m.get('name', '')}"
    inner = f"<b>{html.escape(label)}</b>\n{html.escape(_cut(body or ''))}"
    if role == "system":
        return (f'<details class="msg system"><summary>system prompt</summary>'
                f'{html.escape(_cut(body or ""))}</details>')
    return f'<div class="msg {html.escape(role)}">{inner}</div>'


def _episode_html(rec: Mapping[str, Any]) -> str:
    status = '<span class="pass">PASS</span>' if rec["passed"] else '<span class="fail">FAIL</span>'
    score = rec.get("score") or {}
    head = (f'<section class="episode" id="{_e(anchor(rec["episode_id"]))}">'
            f"<h3>{_e(rec['episode_id'])} {status}</h3>"
            f"<p>suite <code>{_e(rec['suite'])}</code>, kind "
            f"<code>{_e(rec['kind'])}</code>, trial {_e(rec['trial'])}, seed {_e(rec['seed'])}, "
            f"{_e(rec['steps'])} steps; score episode {_e(_fmt(score.get('episode')))}, turns "
            f"{_e(_fmt(score.get('turns')))}, checks {_e(_fmt(score.get('checks')))}"
            f"{'; truncated' if rec.get('truncated') else ''}</p>")
    if rec.get("error"):
        head += f"<p class=\"fail\">error: {_e(rec['error'])}</p>"
    turns = []
    for t in rec.get("turns") or []:
        checks = ", ".join(f"{c['kind']}:{'pass' if c['passed'] else 'FAIL'}" for c in t.get("checks") or [])
        fails = "; ".join(str(c.get("detail", ""))[:200] for c in t.get("checks") or [] if not c["passed"])
        tag = (t.get("tags") or {}).get("role")
        turns.append(f'<div class="turn">turn {_e(t["index"] + 1)}: {"PASS" if t.get("passed") else "FAIL"} '
                     f"({_e(checks)}){' [' + _e(tag) + ' turn]' if tag else ''}"
                     f"{' – ' + _e(fails) if fails else ''}</div>")
    msgs = "".join(_message_html(m) for m in rec.get("transcript") or [])
    return head + "".join(turns) + msgs + '<p><a href="#episodes">back to the index</a></p></section>'


def _extras_html(summary: Mapping[str, Any]) -> str:
    parts = _extras_md(summary)
    if not parts:
        return ""
    out = []
    for p in parts:
        if p.startswith("\n### "):
            out.append(f"<h3>{html.escape(p.strip().removeprefix('### '))}</h3>")
        else:
            out.append(f"<p>{html.escape(p)}</p>")
    return "<h2>Checker and library</h2>" + "".join(out)


def render_html(records: list[dict[str, Any]], summary: Mapping[str, Any]) -> str:
    """The self-contained HTML report (see the module docstring)."""
    run = summary.get("run") or {}
    cfg = run.get("config") or {}
    plots = ""
    if summary.get("suites"):
        figures = (("Suites", plot_suites(summary)), ("Task kinds", plot_kinds(summary)),
                   ("Action classes", plot_diagnostics(summary)))
        plots = "".join(f'<h3>{title}</h3><img alt="{title}" src="data:image/png;base64,{png}">'
                        for title, png in figures)
    index_rows = "".join(
        f'<tr><td><a href="#{_e(anchor(r["episode_id"]))}">{_e(r["episode_id"])}</a></td>'
        f"<td>{_e(r['suite'])}</td><td>{_e(r['kind'])}</td><td>{_e(r['trial'])}</td>"
        f"<td class=\"{'pass' if r['passed'] else 'fail'}\">{'pass' if r['passed'] else 'fail'}</td>"
        f"<td>{_e(_fmt((r.get('score') or {}).get('checks')))}</td><td>{_e(r['steps'])}</td>"
        f"<td>{_e(str(r.get('error') or '')[:120])}</td></tr>" for r in records)
    title = f"Evaluation: {run.get('policy', '?')}"
    return (
        f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
        f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>"
        f"<p>started {_e(run.get('started', '?'))}; {_e(run.get('episodes', len(records)))} "
        f"episodes in {_e(_fmt(run.get('seconds'), 1))} s ({_e(_fmt(run.get('episodes_per_s'), 1))} episodes/s); "
        f"suites {_e(', '.join(str(x) for x in cfg.get('suites', [])))}; k = {_e(cfg.get('k', 1))}; "
        f"seed = {_e(cfg.get('seed', 0))}</p>"
        + (f'<p class="fail">{_e(backend_note(summary))}</p>' if backend_note(summary) else "")
        + f"<h2>Suites</h2>{_html_table(_SUITE_HEAD, _suite_rows(summary))}"
        f"<h2>Plots</h2>{plots}"
        f"<h2>By task kind</h2>{_html_table(_KIND_HEAD, _kind_rows(summary))}"
        f"<h2>Action classes</h2>{_html_table(_DIAG_HEAD, _diag_rows(summary))}"
        f"{_extras_html(summary)}"
        f'<h2 id="episodes">Episodes</h2><table><tr><th>episode</th><th>suite</th><th>kind</th><th>trial</th>'
        f"<th>result</th><th>checks</th><th>steps</th><th>error</th></tr>{index_rows}</table>"
        f"<h2>Transcripts</h2>{''.join(_episode_html(r) for r in records)}</body></html>\n"
    )


# -- compare --------------------------------------------------------------------------------------
def _per_task(records: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, dict[str, float]]]:
    """(suite, kind) -> task key -> {"pass@1", "checks"}; kind ``(all)`` holds every task."""
    out: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
    for key, trials in group_by_task(r for r in records if not is_backend_failure(r)).items():
        v = task_values(trials, [1])
        vals = {"pass@1": v["pass@1"], "checks": v["checks"]}
        suite, kind = trials[0]["suite"], str(trials[0].get("kind"))
        out.setdefault((suite, "(all)"), {})[key] = vals
        out.setdefault((suite, kind), {})[key] = vals
    return out


def compare_runs(run_a: str | Path, run_b: str | Path, *, n_boot: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Side-by-side metrics of two run folders with bootstrap intervals of B - A."""
    recs_a, sum_a = load_run(run_a)
    recs_b, sum_b = load_run(run_b)
    ta, tb = _per_task(recs_a), _per_task(recs_b)
    rows = []
    for suite, kind in sorted(set(ta) | set(tb), key=lambda sk: (sk[0], sk[1] != "(all)", sk[1])):
        a, b = ta.get((suite, kind), {}), tb.get((suite, kind), {})
        common = sorted(set(a) & set(b))
        for metric in ("pass@1", "checks"):
            if common:
                va, vb = [a[t][metric] for t in common], [b[t][metric] for t in common]
            else:
                va, vb = [x[metric] for x in a.values()], [x[metric] for x in b.values()]
            d = paired_bootstrap_diff(va, vb, n_boot=n_boot, seed=seed)
            ci = d["ci"]
            rows.append({"suite": suite, "kind": kind, "metric": metric, "tasks_a": len(a), "tasks_b": len(b),
                         "common": len(common), "a": mean(va), "b": mean(vb), "diff": d["diff"], "ci": ci,
                         "paired": d["paired"], "significant": bool(ci and (ci[0] > 0 or ci[1] < 0))})
    return {"a": {"path": str(run_a), "policy": (sum_a.get("run") or {}).get("policy")},
            "b": {"path": str(run_b), "policy": (sum_b.get("run") or {}).get("policy")}, "rows": rows}


def compare_markdown(result: Mapping[str, Any]) -> str:
    """A Markdown table of :func:`compare_runs`."""
    a, b = result["a"], result["b"]
    head = ["suite", "kind", "metric", "tasks (common)", f"A: {md_code(a['policy'])}",
            f"B: {md_code(b['policy'])}", "B - A", "95% CI", ""]
    rows = [[r["suite"], r["kind"], r["metric"], f"{r['tasks_a']}/{r['tasks_b']} ({r['common']})",
             _fmt(r["a"]), _fmt(r["b"]), _fmt(r["diff"]), _ci(r["ci"]), "*" if r["significant"] else ""]
            for r in result["rows"]]
    return (f"# Compare\n\nA = {md_code(a['path'])}, B = {md_code(b['path'])}. Differences are B - A over the "
            "tasks both runs share (paired bootstrap); * marks an interval that excludes 0.\n\n"
            + _md_table(head, rows, untrusted=(0, 1)) + "\n")

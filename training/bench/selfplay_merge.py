"""Merging self-play results of separate sessions, and checking a committed result against the docs.

Role: :func:`merge` writes one report (:func:`training.bench.selfplay_report.report`) over the seeds of
several result folders of ``envwright bench selfplay`` (``--merge``), after checking that the runs trained
alike; :func:`check` (``--merge ... --check``) re-renders a committed result without writing it and reports
every figure of its report, and of the docs that quote it, that disagrees; :func:`stored_config` is a run's
settings as a config file (``config.yaml`` beside each committed run).

Runs store their settings (``state.json``: the config's name, the ``--set`` overrides, and every resolved
setting) as the config spelt them when they ran; :func:`upgrade_settings` reads them in today's spelling
(:data:`RENAMED`), so older runs merge and check as they did.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from training.bench.selfplay_report import report

__all__ = ["MEASUREMENT_ONLY", "RENAMED", "check", "merge", "stored_config", "upgrade_overrides",
           "upgrade_settings"]

#: overrides that change what a run measures or where its files are, not how it trains: runs whose overrides
#: differ only in these can be merged into one report (:func:`merge`)
MEASUREMENT_ONLY = ("model.name_or_path", "selfplay.probe.documents", "selfplay.probe.every",
                    "selfplay.probe.max_tokens", "selfplay.probe.samples", "selfplay.eval_attempts")

#: settings whose key changed since runs stored them: the stored key, and today's
RENAMED = {"selfplay.acceptance_probe": "selfplay.probe.documents",
           "selfplay.acceptance_probe_every": "selfplay.probe.every",
           "selfplay.acceptance_probe_samples": "selfplay.probe.samples",
           "selfplay.acceptance_probe_max_tokens": "selfplay.probe.max_tokens",
           "selfplay.format_recovery": "selfplay.recovery.enabled",
           "selfplay.format_recovery_documents": "selfplay.recovery.documents"}


def upgrade_overrides(overrides: list[str]) -> list[str]:
    """``key=value`` overrides with each renamed key (:data:`RENAMED`) in today's spelling."""
    out = []
    for item in overrides:
        key, sep, value = str(item).partition("=")
        out.append(f"{RENAMED.get(key.strip(), key.strip())}{sep}{value}" if sep else str(item))
    return out


def upgrade_settings(resolved: dict[str, Any]) -> dict[str, Any]:
    """A stored resolved config (nested dicts) with each renamed key (:data:`RENAMED`) moved to today's place."""
    out = json.loads(json.dumps(resolved))
    for old, new in RENAMED.items():
        *path, leaf = old.split(".")
        node = out
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict) or leaf not in node:
            continue
        value = node.pop(leaf)
        *new_path, new_leaf = new.split(".")
        target = out
        for part in new_path:
            target = target.setdefault(part, {})
        target.setdefault(new_leaf, value)
    return out


def _upgraded(state: dict[str, Any]) -> dict[str, Any]:
    """A stored ``state.json`` in today's spelling (its overrides and resolved settings)."""
    st = dict(state)
    st["overrides"] = upgrade_overrides(list(st.get("overrides") or []))
    if st.get("resolved"):
        st["resolved"] = upgrade_settings(st["resolved"])
    return st


def _training_overrides(state: dict[str, Any]) -> dict[str, str]:
    """A run's overrides that shape its training (``key=value`` of ``--set``, without :data:`MEASUREMENT_ONLY`)."""
    out = {}
    for item in state.get("overrides") or []:
        key, _, value = str(item).partition("=")
        if key not in MEASUREMENT_ONLY:
            out[key] = value
    return out


def _read_states(out: Path, folders: list[Path]) -> list[tuple[Path, dict[str, Any]]]:
    """Each folder's ``state.json`` (or ``work/state.json``), checked: no seed twice, not the output folder.
    A seed counts only where both its self-play and its baseline finished (a seed stopped part-way, say to give
    another the device, is left out and listed in the state's ``unfinished_seeds``); no finished seed at all
    is an error."""
    states: list[tuple[Path, dict[str, Any]]] = []
    seen: dict[int, Path] = {}
    for folder in map(Path, folders):
        if folder.resolve() == out.resolve():
            raise ValueError(f"{folder} is both an input and the output: give the merged report a folder of its own")
        path = folder / "state.json" if (folder / "state.json").is_file() else folder / "work" / "state.json"
        if not path.is_file():
            raise ValueError(f"{folder} has no state.json (nor work/state.json): it is not a `bench selfplay` result")
        st = _upgraded(json.loads(path.read_text()))
        finished = [s for s in st.get("seeds") or [] if {f"selfplay-s{s}", f"baseline-s{s}"} <= set(st)]
        unfinished = [s for s in st.get("seeds") or [] if s not in finished]
        for seed in finished:
            if seed in seen:
                raise ValueError(f"seed {seed} is in both {seen[seed]} and {folder}: merge folders of different seeds")
            seen[seed] = folder
        states.append((folder, {**st, "seeds": finished, "unfinished_seeds": unfinished}))
    if not seen:
        left = "; ".join(f"{f}: seeds {', '.join(map(str, st['unfinished_seeds'])) or 'none'}" for f, st in states)
        raise ValueError(f"no seed finished both its self-play and its baseline ({left}); resume the run with the "
                         "same command first")
    return states


def _default_settings() -> dict[str, Any]:
    """Every setting's default, as :func:`_settings` spells a resolved config (JSON values)."""
    from training.config import TrainConfig, config_to_dict

    return _settings(json.loads(json.dumps(config_to_dict(TrainConfig()), default=str)))


def _settings(d: dict[str, Any]) -> dict[str, Any]:
    """A resolved config as ``section.key`` settings, without :data:`MEASUREMENT_ONLY`."""
    from training.metrics import leaves

    return {k: v for k, v in leaves(d, ".").items() if k not in MEASUREMENT_ONLY}


def _check_same_training(states: list[tuple[Path, dict[str, Any]]]) -> None:
    """Raise unless every run has the first one's config, size and training overrides, and, where both
    recorded it (``resolved``), every setting that shapes training: a config file edited between two sessions
    trains differently under the same name."""
    first_folder, first = states[0]
    want = (first.get("config"), _training_overrides(first), bool(first.get("tiny")))
    for folder, st in states[1:]:
        got = (st.get("config"), _training_overrides(st), bool(st.get("tiny")))
        if got == want and first.get("resolved") and st.get("resolved"):
            a, b = _settings(first["resolved"]), _settings(st["resolved"])
            # a setting one run predates ran as its default (a key added later keeps the old behaviour there)
            default = _default_settings()
            keys = sorted(k for k in set(a) | set(b) if a.get(k, default.get(k)) != b.get(k, default.get(k)))
            if keys:
                raise ValueError(f"{first_folder} and {folder} trained differently (settings " + ", ".join(
                    f"{k}: {a.get(k, '(unset)')} vs {b.get(k, '(unset)')}" for k in keys[:6]) + "); only "
                    f"{', '.join(MEASUREMENT_ONLY)} may differ between merged runs")
        if got == want:
            continue
        keys = sorted(k for k in set(want[1]) | set(got[1]) if want[1].get(k) != got[1].get(k))
        what = (f"config {want[0]!r} vs {got[0]!r}" if want[0] != got[0]
                else "tiny vs full size" if want[2] != got[2] else "overrides " + ", ".join(
                    f"{k}: {want[1].get(k, '(unset)')} vs {got[1].get(k, '(unset)')}" for k in keys))
        raise ValueError(f"{first_folder} and {folder} trained differently ({what}); only "
                         f"{', '.join(MEASUREMENT_ONLY)} may differ between merged runs")


def _gather_runs(work: Path, states: list[tuple[Path, dict[str, Any]]], merged: dict[str, Any]) -> None:
    """Lay each seed's runs out under ``work`` as the report reads them, and their state entries into ``merged``."""
    for folder, st in states:
        for seed in st.get("seeds") or []:
            for name in ("selfplay", "baseline"):
                key = f"{name}-s{seed}"
                if key in st:
                    merged[key] = st[key]
                run = work / key
                run.mkdir()
                for part, flat in (("metrics.jsonl", "metrics.jsonl"), ("summary.json", "summary.json"),
                                   ("episodes.jsonl", "final-episodes.jsonl"), ("probes.jsonl", "probes.jsonl")):
                    src = next((f for f in (folder / f"{key}-{flat}", folder / "work" / key / part) if f.is_file()),
                               None)
                    if src is not None:
                        shutil.copyfile(src, run / part)
                probes = folder / "work" / key / "probes"  # an --out of the bench: the probe's files per round
                if not (run / "probes.jsonl").is_file() and probes.is_dir():
                    shutil.copytree(probes, run / "probes")


def merge(out: Path, folders: list[Path], *, draw: bool = True, echo: bool = True) -> dict[str, Any]:
    """One report over the seeds of several result folders of ``envwright bench selfplay`` (the spread of
    seeds run in separate sessions). Each folder is an ``--out`` of the bench, or a copy that keeps its
    ``state.json`` and, per seed S, ``selfplay-sS-{metrics.jsonl,summary.json}`` and the baseline's. The runs
    must share the config and the overrides that shape training (:data:`MEASUREMENT_ONLY` may differ), and no
    seed may come twice. Writes ``selfplay.{json,md,png}`` (with ``merged_from``; the plot unless not ``draw``)
    and the runs' settings (``config.yaml``, :func:`stored_config`) into ``out``, and prints the report (when
    ``echo``); nothing runs."""
    import tempfile

    from training.config import load_config

    if not folders:
        raise ValueError("merge needs at least one result folder")
    out = Path(out)
    if (out / "work").exists():
        raise ValueError(f"{out} holds a run (work/): give the merged report a folder of its own")
    states = _read_states(out, folders)
    _check_same_training(states)
    first = states[0][1]
    merged: dict[str, Any] = {k: first.get(k) for k in ("config", "overrides", "tiny", "proposer", "solver",
                                                        "environments", "heldout")}
    merged["seeds"] = sorted(seed for _, st in states for seed in st.get("seeds") or [])
    merged["merged_from"] = [{"folder": str(f), "seeds": st.get("seeds"), "overrides": st.get("overrides"),
                              **({"unfinished_seeds": st["unfinished_seeds"]} if st["unfinished_seeds"] else {})}
                             for f, st in states]
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        _gather_runs(Path(tmp), states, merged)
        cfg = load_config(first["config"], [*(first.get("overrides") or []), "model.device=cpu"])
        res = report(out, Path(tmp), merged, cfg, draw=draw, echo=echo)
    settings = stored_config(first)
    if settings is not None:
        (out / "config.yaml").write_text(settings, encoding="utf-8")
    return res


def stored_config(state: dict[str, Any]) -> str | None:
    """A run's settings as a config file (YAML, today's keys: :func:`upgrade_settings`), from the resolved
    config its ``state.json`` stored; None for a run that stored none (its config's name and overrides are all
    it kept). ``envwright bench selfplay --config FILE`` and ``envwright train selfplay --config FILE`` take it."""
    import yaml

    resolved = state.get("resolved")
    if not resolved:
        return None
    settings = upgrade_settings(resolved)
    sets = upgrade_overrides(list(state.get("overrides") or []))
    head = [f"# The settings this run resolved: config {state.get('config')!r}"
            + (" with these overrides:" if sets else " as it was."), *(f"#   --set {o}" for o in sets),
            "# Stored in the run's state.json, written here in today's keys; model.name_or_path is where the run",
            "# loaded the model from."]
    return "\n".join(head) + "\n" + yaml.safe_dump(settings, sort_keys=False, allow_unicode=True)


# -- checking a committed result against its report and the docs -------------------------------------------------

#: figures a document quotes, by the way it writes them (each compared with the report's figures of that kind)
_CLAIMS: dict[str, re.Pattern[str]] = {
    "paired difference": re.compile(r"([+-]\d+\.\d{3})\s*±\s*(\d+\.\d{3})"),
    "probe, warm start -> final": re.compile(r"(?<![\d.])(\d\.\d{3})\s*(?:→|->)\s*(\d\.\d{3})(?![\d.])"),
    "rise in points": re.compile(r"(?<![\w.])([+-]\d+\.\d) points"),
    "held-out passes": re.compile(r"(?<![\w.])(\d+) vs (\d+) of (\d+)"),
    "check fraction": re.compile(r"check fraction:?\s*\**\s*(\d\.\d{3})\s*(?:vs|against)\s*(\d\.\d{3})", re.I),
    "progress fraction": re.compile(r"progress fraction:?\s*\**\s*(\d\.\d{3})\s*(?:vs|against)\s*(\d\.\d{3})",
                                    re.I),
    "probe documents gained, lost": re.compile(r"(?<![\w.])(\d+) gained, (\d+) lost"),
}


def _allowed(res: dict[str, Any]) -> dict[str, set[tuple[str, ...]]]:
    """What a document may quote of a report, per kind of :data:`_CLAIMS`: each seed's figure and the mean."""
    from training.bench.selfplay_report import rises

    sp, base, c, t = res["selfplay"], res["baseline"], res["comparison"], res["targets"]
    out: dict[str, set[tuple[str, ...]]] = {k: set() for k in _CLAIMS}
    paired = [*c["paired"]["seeds"].values(), c["paired"]["all"]]
    paired += [(c.get("progress_fraction") or {}).get("paired") or {}]
    out["paired difference"] = {(f"{p['mean']:+.3f}", f"{p['stderr']:.3f}") for p in paired
                                if p.get("mean") is not None and p.get("stderr") is not None}
    for seed, run in sp.items():
        b = base.get(seed, {})
        warm = run["rounds"][0].get("probe_acceptance") if run["rounds"] else None
        if warm is not None and run.get("probe_final") is not None:
            out["probe, warm start -> final"].add((f"{warm:.3f}", f"{run['probe_final']:.3f}"))
        n = run.get("eval_final_episodes")
        if n and run.get("eval_final") is not None and b.get("eval_final") is not None:
            out["held-out passes"].add((str(round(run["eval_final"] * n)), str(round(b["eval_final"] * n)), str(n)))
        for kind, key in (("check fraction", "eval_final_reward"), ("progress fraction", "eval_final_progress")):
            if run.get(key) is not None and b.get(key) is not None:
                out[kind].add((f"{run[key]:.3f}", f"{b[key]:.3f}"))
        if run.get("probe_pairs"):
            out["probe documents gained, lost"].add((str(run["probe_pairs"]["gained"]),
                                                     str(run["probe_pairs"]["lost"])))
    for kind, part in (("check fraction", c["check_fraction"]), ("progress fraction", c.get("progress_fraction"))):
        if part and part["selfplay"]["mean"] is not None and part["baseline"]["mean"] is not None:
            out[kind].add((f"{part['selfplay']['mean']:.3f}", f"{part['baseline']['mean']:.3f}"))
    counted = [(run, base.get(seed, {})) for seed, run in sp.items() if run.get("eval_final_episodes")]
    if len(counted) > 1 and all(b.get("eval_final") is not None and r.get("eval_final") is not None
                                for r, b in counted):
        total = sum(r["eval_final_episodes"] for r, _ in counted)
        out["held-out passes"].add((str(sum(round(r["eval_final"] * r["eval_final_episodes"]) for r, _ in counted)),
                                    str(sum(round(b["eval_final"] * r["eval_final_episodes"]) for r, b in counted)),
                                    str(total)))
    points = [*rises(res, "acceptance"), *rises(res, "probe_acceptance", "probe_final"),
              *rises(res, "acceptance_explore")]
    points += [t.get(k) for k in ("acceptance_rise_points", "probe_acceptance_rise_points",
                                  "explore_acceptance_rise_points") if t.get(k) is not None]
    out["rise in points"] = {(f"{x:+.1f}",) for x in points}
    return out


_HEADING = re.compile(r"^(#+)\s")
_ARROW_AFTER = re.compile(r"\s*(?:→|->)\s*\d")
_ARROW_BEFORE = re.compile(r"(?:→|->)\s*$")
_RUN_NAME = re.compile(r"(?<![A-Za-z0-9_])selfplay-[\w-]*\w")  #: a run folder's name, as the docs write it


def _scoped_lines(text: str, names: set[str]) -> list[tuple[int, str]]:
    """The lines of a markdown document about the runs ``names``: those of a section whose heading names one
    (to the next heading of its level or above), and single lines that name one and no other run."""
    out: list[tuple[int, str]] = []
    level = 0  # the level of the heading of the section in scope; 0: none
    for no, line in enumerate(text.splitlines(), 1):
        named = set(_RUN_NAME.findall(line))
        heading = _HEADING.match(line)
        if heading:
            depth = len(heading.group(1))
            if level and depth <= level:
                level = 0
            if not level and named & names:
                level = depth
            continue
        if level:
            if not named - names:
                out.append((no, line))
        elif named and named <= names:
            out.append((no, line))
    return out


def _blocks(lines: list[tuple[int, str]]) -> list[tuple[str, list[tuple[int, int]]]]:
    """Consecutive lines joined into one text (a sentence may wrap), with where each line starts in it."""
    blocks: list[tuple[str, list[tuple[int, int]]]] = []
    text, last = "", -1
    starts: list[tuple[int, int]] = []
    for no, line in lines:
        if no != last + 1 and starts:
            blocks.append((text, starts))
            text, starts = "", []
        starts.append((len(text) + (1 if text else 0), no))
        text = f"{text} {line.strip()}" if text else line.strip()
        last = no
    if starts:
        blocks.append((text, starts))
    return blocks


def _doc_problems(doc: Path, res: dict[str, Any], names: set[str]) -> tuple[list[str], int]:
    """Each figure of ``doc`` about the runs ``names`` that the report ``res`` does not give, and how many were
    compared. A held-out pass count over another number of episodes (a figure pooled with other runs) is not
    this report's and is left alone, as is a series of figures (``a -> b -> c``)."""
    allowed = _allowed(res)
    counts = {n for *_, n in allowed["held-out passes"]}
    problems, checked = [], 0
    for text, starts in _blocks(_scoped_lines(doc.read_text(encoding="utf-8"), names)):
        for kind, pattern in _CLAIMS.items():
            for m in pattern.finditer(text):
                quoted = tuple(m.groups())
                if kind == "held-out passes" and quoted[2] not in counts:
                    continue
                if kind == "probe, warm start -> final" and (_ARROW_AFTER.match(text, m.end())
                                                             or _ARROW_BEFORE.search(text, 0, m.start())):
                    continue
                checked += 1
                if quoted not in allowed[kind]:
                    no = max(n for start, n in starts if start <= m.start())
                    said = ", ".join(" / ".join(a) for a in sorted(allowed[kind])) or "none"
                    problems.append(f"{doc}:{no}: {kind} {' / '.join(quoted)!r} is not the report's ({said})")
    return problems, checked


def _report_problems(committed: Path, rendered: Path, res: dict[str, Any]) -> tuple[list[str], int]:
    """Where the committed report in ``committed`` (``selfplay.md``, the figures of ``selfplay.json``) differs
    from the one re-rendered in ``rendered``; and how many parts were compared."""
    problems, checked = [], 0
    md = committed / "selfplay.md"
    if md.is_file():
        old, new = md.read_text(encoding="utf-8").splitlines(), (rendered / "selfplay.md").read_text().splitlines()
        checked += len(new)
        problems += [f"{md}:{i}: the committed line {a!r} re-renders as {b!r}"
                     for i, (a, b) in enumerate(zip(old, new, strict=False), 1) if a != b][:10]
        if len(old) != len(new):
            problems.append(f"{md}: {len(old)} lines committed, {len(new)} re-rendered")
    kept = committed / "selfplay.json"
    if kept.is_file():
        stored = json.loads(kept.read_text(encoding="utf-8"))
        for part in ("comparison", "targets"):
            checked += 1
            if json.dumps(stored.get(part), sort_keys=True) != json.dumps(res.get(part), sort_keys=True, default=str):
                problems.append(f"{kept}: its {part!r} differs from the re-rendered report's")
    return problems, checked


def check(out: Path, folders: list[Path], docs: list[Path]) -> tuple[list[str], int]:
    """Re-render the merge of ``folders`` without writing anything, and compare it with the committed report in
    ``out`` (``selfplay.md`` line by line, the figures of ``selfplay.json``) and with the figures ``docs``
    quote about these runs (:func:`_doc_problems`). Returns the disagreements, each naming the file and line,
    and how many things were compared."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        res = merge(Path(tmp) / "report", folders, draw=False, echo=False)
        problems, checked = _report_problems(Path(out), Path(tmp) / "report", res)
    names = {Path(f).resolve().name for f in folders} | {Path(out).resolve().name}
    for doc in docs:
        found, n = _doc_problems(Path(doc), res, names)
        problems += found
        checked += n
    return problems, checked


def default_docs() -> list[Path]:
    """The docs that quote committed results: ``training/results/h200.md`` and ``README.md`` of the checkout
    (none in an installed package, which ships no results)."""
    root = Path(__file__).resolve().parents[2]
    return [p for p in (root / "training" / "results" / "h200.md", root / "README.md") if p.is_file()]


def check_or_exit(out: Path, folders: list[Path], docs: list[Path]) -> None:
    """``--merge ... --check``: print what disagrees and exit 1 if anything does."""
    import click

    problems, checked = check(out, folders, docs)
    for p in problems:
        click.echo(p, err=True)
    if problems:
        raise SystemExit(f"{len(problems)} of {checked} figures and lines disagree with the re-rendered report of "
                         f"{', '.join(map(str, folders))}: re-render the report (--merge without --check) or fix "
                         "the docs")
    click.echo(f"{checked} figures and lines agree with the re-rendered report of {', '.join(map(str, folders))} "
               f"(docs: {', '.join(map(str, docs)) or 'none'})")

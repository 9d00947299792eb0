"""``envwright skills ...``: inspect, export, compare and simulate skill libraries.

The root command (:mod:`envgen.cli`) loads :data:`skills`, a click group, lazily.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from envgen.skills.library import SkillLibrary, builtin_skills_dir
from gym_envs import display

__all__ = ["skills"]


@click.group("skills", no_args_is_help=True,
             context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
def skills() -> None:
    """Skill libraries: list, show, stats, export, diff, simulate."""


dir_option = click.option("--dir", "-d", "folder", type=click.Path(path_type=Path), default=None,
                          help="Skill library folder (default: the built-in skills).")
archived_option = click.option("--archived/--no-archived", default=False, help="Include archived skills.")


def _open(folder: Path | None) -> SkillLibrary:
    root = folder or builtin_skills_dir()
    if not root.exists():
        raise click.BadParameter(f"no skill library at {root}")
    return SkillLibrary(root)


def _rate(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


@skills.command("list")
@dir_option
@archived_option
def list_cmd(folder: Path | None, archived: bool) -> None:
    """One row per skill: id, name and tags, examples, attempts, solve rate, validity, state."""
    lib = _open(folder)
    table = Table(show_lines=True, caption="solve: mean solve rate; valid: share of valid proposals")
    table.add_column("skill / name / tags", overflow="fold")
    for h in ("examples", "attempts", "solve", "valid", "state"):
        table.add_column(h, no_wrap=True, justify="right" if h != "state" else "left")
    skills = [*lib.skills.values(), *(lib.archived.values() if archived else [])]
    for s in skills:
        cell = display.text(s.id, "bold")
        cell.append("\n" + display.clean(s.name))
        if s.tags:
            cell.append("\n" + display.clean(", ".join(s.tags)), style="dim")
        table.add_row(cell, str(len(s.examples)), str(s.stats.attempts), _rate(s.stats.mean_solve_rate),
                      _rate(s.stats.validity_rate), "archived" if s.archived else "active")
    Console().print(display.readable_headers(table))


@skills.command("show")
@click.argument("skill_id")
@dir_option
@click.option("--level", default="full", help="Disclosure level: name, summary, rules, full.")
def show_cmd(skill_id: str, folder: Path | None, level: str) -> None:
    """A skill as a proposer would see it at a disclosure level, plus its statistics."""
    lib = _open(folder)
    try:
        s = lib.get(skill_id)
    except KeyError as e:
        raise click.BadParameter(str(e.args[0])) from None
    Console().print(display.text(s.render(level)))
    if s.blueprint:
        Console().print(display.text(f"\nstructure required of a blueprint: {json.dumps(s.blueprint)}"))
    Console().print(f"\n[bold]validator[/bold]: {'yes' if s.validator else 'no'}  "
                  f"[bold]parent[/bold]: {display.markup(s.parent)}  [bold]added[/bold]: iteration "
                  f"{s.added_iteration}")
    Console().print_json(json.dumps(s.stats.to_dict()))


@skills.command("stats")
@dir_option
def stats_cmd(folder: Path | None) -> None:
    """Library totals and the evolution log's event counts."""
    lib = _open(folder)
    events: dict[str, int] = {}
    for e in lib.events():
        events[e["event"]] = events.get(e["event"], 0) + 1
    total_attempts = sum(s.stats.attempts for s in lib)
    Console().print(f"active skills: {len(lib)}   archived: {len(lib.archived)}   attempts: {total_attempts}")
    Console().print(display.text(f"events: {json.dumps(events, ensure_ascii=False)}"))
    from envgen.skills.controller import Controller

    w = Controller(lib).weights()
    table = Table("skill", "routing weight", "recent solve rate", "attempts")
    for sid, weight in sorted(w.items(), key=lambda kv: -kv[1]):
        s = lib.get(sid)
        table.add_row(display.text(sid), f"{weight:.3f}", _rate(s.stats.recent_solve_rate), str(s.stats.attempts))
    Console().print(display.readable_headers(table))


@skills.command("export")
@click.argument("out", type=click.Path(path_type=Path))
@dir_option
@click.option("--archived/--no-archived", default=False, help="Also export archived skills.")
def export_cmd(out: Path, folder: Path | None, archived: bool) -> None:
    """Copy a skill library (or the built-ins) to OUT, e.g. to start evolving it."""
    src = folder or builtin_skills_dir()
    if out.exists() and any(out.iterdir()):
        raise click.BadParameter(f"{out} exists and is not empty; choose a new folder")
    ignore = ["__pycache__", "*.py[co]", "__init__.py"] + ([] if archived else ["_archive"])
    shutil.copytree(src, out, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*ignore))
    Console().print(display.text(f"exported {len(SkillLibrary(out))} skills to {out}"))


@skills.command("diff")
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the difference as one JSON object.")
def diff_cmd(a: Path, b: Path, as_json: bool) -> None:
    """What changed from library A to library B: skills added, archived, rewritten (rules, hints, structure),
    their statistics, and the evolution log's events in between.

    A is the earlier library (e.g. RUN/skill-rounds/round-0000), B the later one (e.g.
    RUN/skill-rounds/round-0003).
    """
    from envgen.skills.diff import diff_libraries

    try:
        d = diff_libraries(a, b)
    except FileNotFoundError as e:
        raise click.BadParameter(str(e)) from None
    if as_json:
        click.echo(json.dumps(d, indent=1, default=str))
        return
    con = Console()
    con.print(display.text(f"{a} -> {b}"))
    for what in ("added", "archived", "restored"):
        con.print(display.text(f"{what}: {', '.join(d[what]) or '-'}"))
    for sid, ch in d["changed"].items():
        con.print(display.text(f"changed {sid}:", "bold"))
        for field, v in ch.items():
            if "added" in v or "removed" in v:
                for line in v.get("removed", []):
                    con.print(display.text(f"  - {field}: {line}", "red"))
                for line in v.get("added", []):
                    con.print(display.text(f"  + {field}: {line}", "green"))
            else:
                con.print(display.text(f"  {field}: {v.get('old')!r} -> {v.get('new')!r}"))
    for sid, st in d["stats"].items():
        moved = ", ".join(f"{k} {v['old']} -> {v['new']}" for k, v in st.items())
        con.print(display.text(f"stats {sid}: {moved}", "dim"))
    for ev in d["events"]:
        con.print(display.text(f"[iter {ev.get('iteration')}] {ev.get('event')} {ev.get('skill')}: {ev.get('why')}"))
    if not (d["added"] or d["archived"] or d["restored"] or d["changed"] or d["stats"] or d["events"]):
        con.print("no difference")


@skills.command("simulate")
@click.option("--out", type=click.Path(path_type=Path), default=Path("runs/skill-simulation"),
              help="Folder for the library and log.")
@click.option("--rounds", type=click.IntRange(min=1), default=6)
@click.option("--envs-per-round", type=click.IntRange(min=2), default=40)
@click.option("--alpha", type=click.FloatRange(0.0, 1.0), default=0.5)
@click.option("--seed", type=int, default=0)
@click.option("--overwrite", is_flag=True, help="Replace a simulation already in OUT.")
def simulate_cmd(out: Path, rounds: int, envs_per_round: int, alpha: float, seed: int, overwrite: bool) -> None:
    """Run the controller against synthetic solver competences and print per-round numbers."""
    from envgen.skills.simulate import SimulationConfig, run_simulation, summarize

    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise click.BadParameter(f"{out} is not empty (a previous simulation?); pass --overwrite to replace "
                                     "it, or choose another --out", param_hint="--out")
        shutil.rmtree(out)
    table = Table("round", "solve", "valid", "comp.", "skills", "pruned", "refined", "induced", "merged",
                  "refused", box=None, header_style="bold underline",
                  caption="solve: mean solve rate of routed environments; valid: validity; comp.: solver "
                          "competence; which skills changed is listed below")
    changes: list[str] = []

    def row(m: dict) -> None:
        table.add_row(str(m["iteration"]), _rate(m["mean_solve_rate_routed"]), f"{m['validity']:.2f}",
                      f"{m['competence']:.2f}", str(m["active_skills"]), str(len(m["pruned"])),
                      str(len(m["refined"])), str(len(m["induced"])), str(len(m["merged"])), str(len(m["refused"])))
        named = [(what, ids) for what, ids in (("pruned", m["pruned"]), ("refined", m["refined"]),
                                               ("induced", m["induced"]),
                                               ("merged", [f"{a}<-{b}" for a, b in m["merged"]])) if ids]
        if named:
            changes.append(f"round {m['iteration']}: " + "; ".join(f"{what} {', '.join(ids)}" for what, ids in named))

    hist = run_simulation(out, SimulationConfig(rounds=rounds, envs_per_round=envs_per_round, alpha=alpha,
                                                seed=seed), printer=row)
    Console().print(display.readable_headers(table))
    for line in changes:
        Console().print(display.text(line))
    s = summarize(hist)
    r5 = hist[min(4, len(hist) - 1)]["mean_solve_rate_routed"]
    ok = r5 is not None and 0.4 <= r5 <= 0.6
    Console().print(f"mean solve rate of routed environments after round {min(5, len(hist))}: {_rate(r5)} "
                  f"(target 0.4-0.6: {'PASS' if ok else 'MISS'})")
    Console().print(f"evolution log: {out / 'evolution.log'}  ({len(s['refused'])} duplicates refused)")

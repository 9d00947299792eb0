"""Rendering of realism figures: one row per measure, one column per set (a library, the examples, a benchmark).

Role: what ``envwright stats`` prints (a :mod:`rich` table) and what the inspector shows (:func:`realism_rows`,
plain strings for its template), from :class:`~envgen.realism.measures.Realism` values, their dicts (as
``--json`` writes them), or a string saying why a set is missing.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from envgen.realism.measures import Realism
from gym_envs import display

__all__ = ["ROWS", "TARGETS", "realism_rows", "realism_table"]

#: ``(label, Realism field, format)`` of each row, in print order; ``%`` formats a share as a percentage.
ROWS: tuple[tuple[str, str, str], ...] = (
    ("environments", "envs", "{:d}"),
    ("tasks / user turns", "tasks", "{:d}"),
    ("tools per env", "tools_per_env", "{:.1f}"),
    ("tools in scope per task", "tools_in_scope", "{:.1f}"),
    ("CRUD-verb tools", "crud_share", "%"),
    ("slug strings", "slug_share", "%"),
    ("tables per env", "tables_per_env", "{:.1f}"),
    ("rows per table", "rows_per_table", "{:.1f}"),
    ("rows in the main table", "main_table_rows", "{:.0f}"),
    ("envs with a <x>_groups parent", "generic_parent_share", "%"),
    ("user turns naming a row id", "row_id_turn_share", "%"),
    ("tasks naming a row id", "row_id_task_share", "%"),
    ("words per first turn (median)", "first_turn_words", "{:.1f}"),
    ("words per user turn", "words_per_turn", "{:.1f}"),
    ("distinct turn skeletons", "skeletons", "{:d}"),
    ("turns in the top 20 skeletons", "top20_coverage", "%"),
    ("hop depth per task", "hop_depth", "{:.2f}"),
    ("tasks of >= 2 hops", "hop2_share", "%"),
    ("filter-and-choose tasks", "filter_choose_share", "%"),
    ("repeated identical reads", "repeated_read_share", "%"),
    ("policy rules per env", "policy_rules_per_env", "{:.1f}"),
    ("policy tasks per env", "policy_tasks_per_env", "{:.1f}"),
    ("scenario tasks (a simulated user)", "scenario_share", "%"),
)

#: The targets of issue 34 for a library, by field (shown after the measure's name; the skeleton target is for
#: a library of 200 environments).
TARGETS: dict[str, str] = {
    "crud_share": "<=50%", "slug_share": "<=5%", "tables_per_env": ">=4", "rows_per_table": ">=50",
    "main_table_rows": ">=200", "row_id_turn_share": "0%", "first_turn_words": ">=20", "skeletons": ">=300",
    "top20_coverage": "<5%", "hop2_share": ">=40%", "filter_choose_share": ">=30%", "policy_rules_per_env": ">=5",
    "policy_tasks_per_env": ">=2", "scenario_share": ">=25%",
}


def _cell(d: dict[str, Any], key: str, fmt: str) -> str:
    v = d.get(key)
    if key == "tasks":
        return f"{d.get('tasks', 0)}/{d.get('turns', 0)}"
    if v is None or (isinstance(v, float) and v != v):
        return "-"
    if fmt == "%":
        return f"{100 * v:.1f}%"
    return fmt.format(int(v)) if fmt == "{:d}" else fmt.format(v)


def realism_rows(sets: list[tuple[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """``(column names, rows of cells)``: the measure (with its target, if it has one), one cell per set."""
    dicts = [(name, r if isinstance(r, dict | str) else r.to_dict()) for name, r in sets]
    rows = []
    for label, key, fmt in ROWS:
        target = f" (target {TARGETS[key]})" if key in TARGETS else ""
        rows.append([label + target, *[d if isinstance(d, str) and key == "envs" else "" if isinstance(d, str)
                                       else _cell(d, key, fmt) for _, d in dicts]])
    return ["measure", *[name for name, _ in dicts]], rows


def realism_table(sets: list[tuple[str, Any]], title: str = "Realism") -> Table:
    """The realism figures of sets side by side: ``(name, Realism, its dict, or why it is missing)``; the
    caption counts, per set, the environments not fully measured (:attr:`Realism.problems`)."""
    columns, rows = realism_rows(sets)
    unread = [f"{name}: {len(r.problems if isinstance(r, Realism) else r.get('problems') or [])}"
              for name, r in sets if not isinstance(r, str)
              and (r.problems if isinstance(r, Realism) else r.get("problems"))]
    caption = f"not fully measured (environments; --json lists why): {', '.join(unread)}" if unread else None
    t = Table(title=display.text(title), caption=display.text(caption) if caption else None)
    missing = {i + 1 for i, (_, r) in enumerate(sets) if isinstance(r, str)}
    for i, c in enumerate(columns):
        # a figure is never cut; a narrow header folds, and so does the text saying why a set is missing
        widest = 16 if i in missing else max((len(row[i]) for row in rows), default=0)
        t.add_column(display.text(c), justify="left" if i == 0 else "right", overflow="fold",
                     min_width=16 if i == 0 else widest)
    for row in rows:
        t.add_row(*[display.text(c) for c in row])
    return t

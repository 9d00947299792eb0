"""Reports treat model- and spec-written text as data, and their plots say something when pass@1 is 0.

``report.md``: a check message with newlines, a fake table, raw HTML and a ``javascript:`` link stays
inside one code span. ``report.html``: every field that can carry such text is escaped (one case each).
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from eval.report import diagnostics_figure, kinds_figure, md_code, render_html, render_markdown, suites_figure

PAYLOAD = '<img src=x onerror=alert(1)>'
INJECTION = ("boom`\n\n| suite | pass@1 |\n|---|---|\n| fake | 1.000 |\n\n<script>alert(1)</script> "
             "[click](javascript:alert(1)) \x1b[2J")


def _record(**over: Any) -> dict[str, Any]:
    rec = {"episode_id": "examples-lib-t0-0", "suite": "examples", "env_id": "lib", "task_id": "t0",
           "kind": "execute", "split": "all", "trial": 0, "seed": 1, "passed": False,
           "score": {"episode": 0.0, "turns": 0.0, "checks": 0.5}, "steps": 2, "truncated": False, "error": None,
           "usage": {}, "turns": [{"index": 0, "instruction": "do it", "calls": [], "reply": "done",
                                   "passed": False, "tags": {},
                                   "checks": [{"index": 0, "kind": "python", "passed": False, "detail": "x"}]}],
           "transcript": [{"role": "system", "content": "sys"}, {"role": "user", "content": "do it"},
                          {"role": "assistant", "content": "done", "raw": "done"},
                          {"role": "tool", "name": "t", "content": "{}"}]}
    rec.update(over)
    return rec


def _summary(**over: Any) -> dict[str, Any]:
    block = {"tasks": 1, "episodes": 1, "pass@1": 0.0, "pass@1_ci": [0.0, 0.0], "pass^k": {"1": {"value": 0.0}},
             "pass@k": {"1": {"value": 0.0}}, "avg@k": 0.0, "turns@k": 0.0, "checks@k": 0.5, "errors": 0,
             "by_kind": {"execute": {"tasks": 1, "episodes": 1, "pass@1": 0.0, "pass@1_ci": [0, 0],
                                     "checks@k": 0.5}},
             "diagnostics": {"fabricated": 0, "ask_turns": 0, "asked": 0, "declined": 0, "decline_turns": 0,
                             "acted": 0, "withheld_calls": 0, "withheld_turns": 0, "fabricated_rate": None,
                             "asked_rate": None, "declined_rate": None, "acted_rate": None,
                             "withheld_call_rate": 0.0}}
    summary = {"run": {"policy": "scripted:empty", "started": "now", "seconds": 1.0, "episodes": 1,
                       "episodes_per_s": 1.0, "config": {"suites": ["examples"], "k": 1, "seed": 0}},
               "suites": {"examples": block}, "runs": {"examples": {"episodes": 1, "episodes_per_s": 1.0}}}
    summary.update(over)
    return summary


def test_md_code_keeps_any_text_in_one_inert_span() -> None:
    span = md_code(INJECTION)
    assert "\n" not in span and "\x1b" not in span and "\\x1b[2J" in span
    fence = re.match(r"`+", span).group()  # type: ignore[union-attr]
    assert len(fence) == 2 and span.endswith(fence) and "``" not in span[len(fence):-len(fence)]
    assert md_code("a|b", table=True) == "`a\\|b`" and md_code("") == "(empty)"
    assert md_code("`x`") == "`` `x` ``"


def test_a_check_message_cannot_forge_the_markdown_report() -> None:
    rec = _record()
    rec["turns"][0]["checks"][0]["detail"] = INJECTION
    md = render_markdown([rec], _summary())
    failed = md.split("## Failed episodes", 1)[1]
    line = next(x for x in failed.splitlines() if x.startswith("- ["))
    assert "turn 1: python: boom" in line and "[click](javascript:alert(1))" in line
    assert line.count("``") == 2  # the whole message inside one double-backtick span
    # every line of the report is one of ours: no line starts with the injected table
    assert not any(x.startswith("| fake") for x in md.splitlines())


def test_untrusted_names_in_the_markdown_tables_are_code() -> None:
    summary = _summary(suites={"a|b <i>x</i>": _summary()["suites"]["examples"]})
    md = render_markdown([_record(suite="a|b <i>x</i>")], summary)
    assert "| `a\\|b <i>x</i>` |" in md


FIELDS = {  # where untrusted text can be in a run: a way to put PAYLOAD there
    "policy": lambda r, s: s["run"].__setitem__("policy", PAYLOAD),
    "started": lambda r, s: s["run"].__setitem__("started", PAYLOAD),
    "suites config": lambda r, s: s["run"]["config"].__setitem__("suites", [PAYLOAD]),
    "suite name": lambda r, s: (s.__setitem__("suites", {PAYLOAD: s["suites"]["examples"]}),
                                r.__setitem__("suite", PAYLOAD)),
    "task kind": lambda r, s: r.__setitem__("kind", PAYLOAD),
    "kind in summary": lambda r, s: s["suites"]["examples"].__setitem__(
        "by_kind", {PAYLOAD: s["suites"]["examples"]["by_kind"]["execute"]}),
    "episode id": lambda r, s: r.__setitem__("episode_id", PAYLOAD),
    "error": lambda r, s: r.__setitem__("error", PAYLOAD),
    "check kind": lambda r, s: r["turns"][0]["checks"][0].__setitem__("kind", PAYLOAD),
    "check detail": lambda r, s: r["turns"][0]["checks"][0].__setitem__("detail", PAYLOAD),
    "turn tag": lambda r, s: r["turns"][0].__setitem__("tags", {"role": PAYLOAD}),
    "message role": lambda r, s: r["transcript"].append({"role": PAYLOAD, "content": "x"}),
    "message content": lambda r, s: r["transcript"][1].__setitem__("content", PAYLOAD),
    "assistant raw": lambda r, s: r["transcript"][2].__setitem__("raw", PAYLOAD),
    "tool name": lambda r, s: r["transcript"][3].__setitem__("name", PAYLOAD),
    "system prompt": lambda r, s: r["transcript"][0].__setitem__("content", PAYLOAD),
    "tool call": lambda r, s: r["transcript"].append({"role": "assistant", "content": "",
                                                      "tool_calls": [{"name": PAYLOAD, "arguments": {}}]}),
    "agreement violation": lambda r, s: s["runs"]["examples"].__setitem__("agreement", {
        "reference_pass_rate": 1.0, "tasks": 1, "empty_pass_rate_state_changing": 0.0, "state_changing": 1,
        "agrees": False, "violations": [{"task": PAYLOAD, "kind": PAYLOAD, "reference_passed": True,
                                         "empty_passed": True}]}),
    "suspicious task": lambda r, s: s["runs"]["examples"].__setitem__("library", {
        "written": 1, "suspicious": [{"env_id": PAYLOAD, "task_id": PAYLOAD, "policies": [PAYLOAD]}]}),
}


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_report_html_escapes(field: str) -> None:
    rec, summary = _record(), copy.deepcopy(_summary())
    FIELDS[field](rec, summary)
    text = render_html([rec], summary)
    assert PAYLOAD not in text, field
    assert "&lt;img src=x onerror=alert(1)&gt;" in text, field


def test_plots_show_the_check_fraction_when_nothing_passes_and_keep_legends_off_the_bars() -> None:
    summary = _summary()
    fig = suites_figure(summary)
    ax = fig.axes[0]
    heights = [p.get_height() for p in ax.patches]
    assert max(heights) == pytest.approx(0.5)  # the check fraction, although pass@1 and pass^k are 0
    assert "check fraction" in [t.get_text() for t in ax.get_legend().get_texts()]
    for figure in (fig, kinds_figure(summary), diagnostics_figure(summary)):
        figure.canvas.draw()
        axes, legend = figure.axes[0], figure.axes[0].get_legend()
        assert legend.get_window_extent().x0 >= axes.get_window_extent().x1  # right of the axes, not on them
    kinds = kinds_figure(summary).axes[0]
    assert max(p.get_height() for p in kinds.patches) == pytest.approx(0.5)

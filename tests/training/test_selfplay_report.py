"""The self-play benchmark's report (``training.bench.selfplay_report``, ``selfplay_render``, ``selfplay_merge``) on
a small synthetic result folder the tests build (:mod:`tests.training.selfplay_results`): the report it renders
(one golden test), merging folders of separate sessions, older runs' stored settings, and ``--check``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from envgen.cli import cli
from tests.training.selfplay_results import CONFIG, result_folder
from training.bench.selfplay_merge import check, merge, stored_config

GOLDEN = """\
Self-play on SmolLM2-135M-Instruct.Q4_1.gguf (1 seed(s); per-round figures of each seed; held-out pass: the policy \
that played the round, round 0 = warm start)

| round | acceptance | free stream | acceptance, no grammar | frontier share | grounding | tool sets | skills + | \
pruned | refined | held-out pass | baseline held-out | held-out checks | baseline checks | env share |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
| 0 | 0.500 | 0.250 | 0.500 | 0.500 | 0.400 | 3 | 1 | 0 | 0 | 0.000 | 0.250 | 0.600 | 0.600 | 0.004 |
| 1 | 0.750 | 0.500 | - | 0.500 | 0.400 | 3 | 1 | 0 | 1 | 0.250 | 0.250 | 0.700 | 0.650 | 0.004 |

| held-out after the last round | mean | min | max | seeds |
|---|---|---|---|---|
| selfplay, pass rate | 0.250 | 0.250 | 0.250 | 1 |
| baseline, pass rate | 0.000 | 0.000 | 0.000 | 1 |
| selfplay, check fraction | 0.562 | 0.562 | 0.562 | 1 |
| baseline, check fraction | 0.500 | 0.500 | 0.500 | 1 |
| selfplay, progress fraction | 0.500 | 0.500 | 0.500 | 1 |
| baseline, progress fraction | 0.250 | 0.250 | 0.250 | 1 |

Paired on the same held-out tasks and episode seeds (the final policies, 4 episodes over seeds): self-play minus \
baseline check fraction +0.062 ± 0.157 (standard error); self-play better on 1, worse on 1, equal on 2.

The same, in progress fraction (a turn's guards credited only beside a check doing nothing fails): +0.250 ± 0.102 \
(standard error); self-play better on 3, worse on 0, equal on 1.

| held-out after the last round, by source (mean over seeds) | episodes | pass: self-play / baseline | checks: \
self-play / baseline |
|---|---|---|---|
| model | 2 | 0.000 / 0.000 | 0.375 / 0.500 |
| template | 2 | 0.500 / 0.000 | 0.750 / 0.500 |

Round 0's held-out figures of self-play and baseline score the same warm-start policy on the same tasks with other \
samples: their gap (pass rate 0.250, check fraction 0.000, largest over seeds) is the noise of one measurement.

Acceptance without the grammar (the probe), warm start -> final policy: seed 0 0.500 -> 0.750 (on the same 4 \
documents: 2 gained, 1 lost; sign test p 1.00).
Why the probe's unparsed proposals failed: seed 0 warm start: blueprint_schema 1, json_syntax 1 (1 cut off by the \
token budget); seed 0 final: no_json 1; first schema problem: title: too_long 1.

Format recovery, round by round (proposals recovered under the grammar and learnt / proposals that did not parse, \
the free stream's and the extra documents'; +N, M parsed: N more documents written only for this step, M of whose \
proposals parsed): seed 0 2/2 (+4, 2 parsed), 1/1 (+4, 3 parsed).

Targets: acceptance +25.0 points (>= 15: True); acceptance without the grammar +25.0 points (>= 15: True); \
self-play >= baseline: pass rate True, check fraction True; environment share max 0.004 (< 0.02: True).
"""


def test_the_report_of_a_small_run_is_the_golden_one(tmp_path: Path) -> None:
    """Every table and sentence of ``selfplay.md`` for the fixture, whose figures the fixture's docstring works
    out by hand: the paired difference +0.0625 over 4 matched episodes (the unmatched and the non-final ones
    left out), the probe's 2 gained and 1 lost documents, the rises of 25 points, the warm-start gap."""
    res = merge(tmp_path / "out", [result_folder(tmp_path / "run")], echo=False)
    assert (tmp_path / "out" / "selfplay.md").read_text() == GOLDEN
    assert res["comparison"]["paired"]["all"]["mean"] == pytest.approx(0.0625)
    assert res["comparison"]["paired"]["all"]["stderr"] == pytest.approx(0.157288, abs=1e-6)
    assert res["selfplay"]["s0"]["probe_pairs"] == {"documents": 4, "rounds": [0, 2], "gained": 2, "lost": 1,
                                                   "p_value": 1.0}
    assert (tmp_path / "out" / "selfplay.png").stat().st_size > 10_000
    kept = (tmp_path / "out" / "baseline-s0-final-episodes.jsonl").read_text().splitlines()
    assert len(kept) == 5 and all(json.loads(x)["final"] for x in kept)  # the final episodes travel along
    assert json.loads((tmp_path / "out" / "selfplay-s0-probes.jsonl").read_text().splitlines()[0])["doc_id"] == "d0"


def test_a_run_without_the_newer_records_gets_no_such_lines(tmp_path: Path) -> None:
    """A run from before the probe, format recovery, the progress fraction and sources were recorded: no probe,
    failure, recovery, progress or by-source line, and no extra plot panel."""
    from training.bench.selfplay_render import _extra_panels

    res = merge(tmp_path / "out", [result_folder(tmp_path / "run", extras=False)], echo=False)
    md = (tmp_path / "out" / "selfplay.md").read_text()
    for absent in ("Acceptance without the grammar", "Why the probe", "Format recovery", "progress fraction",
                   "by source"):
        assert absent not in md, absent
    assert "progress_fraction" not in res["comparison"] and _extra_panels(res) == []


def test_the_plot_adds_the_panels_a_run_recorded(tmp_path: Path) -> None:
    from matplotlib.figure import Figure

    from training.bench.selfplay_render import _extra_panels, _plot_by_source, _plot_recovery, _plot_round_time

    res = merge(tmp_path / "out", [result_folder(tmp_path / "run")], draw=False, echo=False)
    assert _extra_panels(res) == [_plot_by_source, _plot_recovery, _plot_round_time]

    def legend() -> list[str]:
        ax = Figure().add_subplot()
        _plot_round_time(ax, res)
        return [t.get_text() for t in ax.get_legend().get_texts()]

    assert legend() == ["generation: proposals", "generation: episodes", "update", "the rest"]
    for r in res["selfplay"]["s0"]["rounds"]:  # a run that did not split generation's time
        r["seconds_generation_proposals"] = None
    assert legend() == ["generation", "update", "the rest"]


def test_probe_pairs_pair_the_first_and_last_probe_on_their_documents() -> None:
    """The probe's documents are fixed, so the first and the last probe pair up document by document: gained,
    lost, and the exact two-sided sign test on them; one probe, or none, gives no pairing."""
    from training.bench.selfplay_report import _probe_pairs

    def line(r: int, doc: str, ok: bool) -> str:
        return json.dumps({"round": r, "doc_id": doc, "accepted": ok})

    docs = [f"d{i}" for i in range(6)]
    first = [line(0, d, i < 2) for i, d in enumerate(docs)]  # d0, d1 accepted
    last = [line(5, d, i in (1, 2, 3, 4, 5)) for i, d in enumerate(docs)]  # d0 lost; d2..d5 gained
    middle = [line(2, d, False) for d in docs]  # only the first and the last probe count
    pp = _probe_pairs(first + middle + last)
    assert pp == {"documents": 6, "rounds": [0, 5], "gained": 4, "lost": 1, "p_value": pytest.approx(12 / 32)}
    assert _probe_pairs(first) is None and _probe_pairs([]) is None
    same = _probe_pairs(first + [line(5, d, i < 2) for i, d in enumerate(docs)])  # no change either way
    assert same is not None and (same["gained"], same["lost"], same["p_value"]) == (0, 0, 1.0)
    # several samples a document (probe.samples): a document counts once, by its share accepted
    twice = [line(0, "a", True), line(0, "a", False), line(0, "b", False), line(0, "b", False),
             line(5, "a", True), line(5, "a", True), line(5, "b", True), line(5, "b", False)]
    both = _probe_pairs(twice)
    assert both is not None and (both["documents"], both["gained"], both["lost"]) == (2, 2, 0)


def test_the_probe_rise_runs_from_round_0_to_the_final_policy() -> None:
    """With a probe every few rounds, the rise is taken from round 0's probe to the final policy's
    (``probe_final``), else to the last round that was probed; a seed with one probe has no rise."""
    from training.bench.selfplay_report import rises

    def run(probes: list[float | None], final: float | None) -> dict[str, object]:
        return {"rounds": [{"round": i, "probe_acceptance": a} for i, a in enumerate(probes)], "probe_final": final}

    res = {"selfplay": {"s0": run([0.25, None, None, None, None], 0.5), "s1": run([0.5, None, 0.75, None, None], None),
                        "s2": run([0.5, None, None], None)}}
    assert rises(res, "probe_acceptance", "probe_final") == [25.0, 25.0]


def test_merge_reports_the_spread_and_refuses_runs_that_trained_differently(tmp_path: Path) -> None:
    """``bench selfplay --merge``: one report over the seeds of two folders; the probe and the held-out attempts
    (measurement) may differ between them, a training override may not, nor a seed repeat, nor an OUT that
    holds a run."""
    s0 = result_folder(tmp_path / "s0")
    s1 = result_folder(tmp_path / "s1", 1, overrides=["selfplay.eval_attempts=2", "selfplay.probe.documents=8"])
    result = CliRunner().invoke(cli, ["bench", "selfplay", "--out", str(tmp_path / "merged"), "--merge", str(s0),
                                      str(s1)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    res = json.loads((tmp_path / "merged" / "selfplay.json").read_text())
    assert res["seeds"] == [0, 1] and [m["seeds"] for m in res["merged_from"]] == [[0], [1]]
    assert res["comparison"]["check_fraction"]["selfplay"]["n"] == 2
    assert "Seed 1:" in (tmp_path / "merged" / "selfplay.md").read_text()
    with pytest.raises(ValueError, match="seed 0 is in both"):
        merge(tmp_path / "again", [s0, s0])
    lr = result_folder(tmp_path / "s2", 2, overrides=["selfplay.eval_attempts=1", "grpo.learning_rate=1e-5"])
    with pytest.raises(ValueError, match=r"trained differently \(overrides grpo.learning_rate: \(unset\) vs 1e-5\)"):
        merge(tmp_path / "bad", [s0, lr])
    (tmp_path / "run" / "work").mkdir(parents=True)
    with pytest.raises(ValueError, match="holds a run"):
        merge(tmp_path / "run", [s0])
    result = CliRunner().invoke(cli, ["bench", "selfplay", "--out", str(tmp_path / "x"), "--merge", str(s0), str(s0)])
    assert result.exit_code == 2 and "seed 0 is in both" in result.output


def test_merge_leaves_out_unfinished_seeds(tmp_path: Path) -> None:
    """A seed whose self-play or baseline did not finish is left out of a merge and named; a merge with no
    finished seed is an error that says to resume the run."""
    s0, part = result_folder(tmp_path / "s0"), result_folder(tmp_path / "s1", 1)
    state = json.loads((part / "state.json").read_text())
    del state["baseline-s1"]
    (part / "state.json").write_text(json.dumps(state))
    res = merge(tmp_path / "out", [s0, part], echo=False)
    assert res["seeds"] == [0] and res["merged_from"][1] == {"folder": str(part), "seeds": [], "overrides":
                                                              state["overrides"], "unfinished_seeds": [1]}
    assert f"seed 1 of {part}" in (tmp_path / "out" / "selfplay.md").read_text()
    with pytest.raises(ValueError, match=r"no seed finished both its self-play and its baseline \(.*s1: seeds 1\)"):
        merge(tmp_path / "none", [part])


def _resolved(*sets: str) -> dict[str, Any]:
    from training.config import config_to_dict, load_config

    return json.loads(json.dumps(config_to_dict(load_config(CONFIG, ["selfplay.eval_attempts=1", *sets])),
                                 default=str))


def test_merge_compares_every_resolved_setting(tmp_path: Path) -> None:
    """Runs recorded with their resolved config merge only if every setting that shapes training agrees: a
    config file edited between sessions is caught although its name and overrides agree. A setting a run
    predates ran as its default there."""
    folders = [result_folder(tmp_path / f"s{seed}", seed, resolved=_resolved(*sets)) for seed, sets in
               ((0, ()), (1, ("selfplay.probe.documents=8",)), (2, ("grpo.num_iterations=1",)))]
    assert merge(tmp_path / "ok", folders[:2], echo=False)["seeds"] == [0, 1]  # the probe is measurement
    with pytest.raises(ValueError, match=r"settings grpo.num_iterations: 2 vs 1"):
        merge(tmp_path / "bad", [folders[0], folders[2]])
    older = json.loads((folders[1] / "state.json").read_text())
    del older["resolved"]["selfplay"]["recovery"]
    (folders[1] / "state.json").write_text(json.dumps(older))
    assert merge(tmp_path / "older", folders[:2], echo=False)["seeds"] == [0, 1]
    newer = json.loads((folders[0] / "state.json").read_text())
    newer["resolved"]["selfplay"]["recovery"]["enabled"] = True
    (folders[0] / "state.json").write_text(json.dumps(newer))
    with pytest.raises(ValueError, match=r"settings selfplay.recovery.enabled: True vs \(unset\)"):
        merge(tmp_path / "changed", folders[:2])


def test_older_runs_stored_settings_are_read_in_todays_keys(tmp_path: Path) -> None:
    """Runs stored ``selfplay.acceptance_probe*`` and ``selfplay.format_recovery*`` before they became
    ``selfplay.probe.*`` and ``selfplay.recovery.*``: such a run merges with a run in today's keys, is refused
    for a real difference named in today's keys, and its settings file loads as today's config."""
    from training.config import load_config

    old_sets = ["selfplay.eval_attempts=1", "selfplay.format_recovery=true", "selfplay.format_recovery_documents=8",
                "selfplay.acceptance_probe_samples=2", "selfplay.proposer.explore_constrained=false"]
    new_sets = ["selfplay.eval_attempts=1", "selfplay.recovery.enabled=true", "selfplay.recovery.documents=8",
                "selfplay.probe.samples=4", "selfplay.proposer.explore_constrained=false"]
    resolved = _resolved(*new_sets[1:])
    flat = json.loads(json.dumps(resolved))
    sp = flat["selfplay"]
    probe, recovery = sp.pop("probe"), sp.pop("recovery")
    sp.update(acceptance_probe=probe["documents"], acceptance_probe_every=probe["every"], acceptance_probe_samples=2,
              acceptance_probe_max_tokens=probe["max_tokens"], format_recovery=recovery["enabled"],
              format_recovery_documents=recovery["documents"])
    old = result_folder(tmp_path / "old", overrides=old_sets, resolved=flat)
    new = result_folder(tmp_path / "new", 1, overrides=new_sets, resolved=resolved)
    assert merge(tmp_path / "out", [old, new], echo=False)["seeds"] == [0, 1]
    text = stored_config(json.loads((old / "state.json").read_text()))
    assert text is not None and "--set selfplay.recovery.documents=8" in text
    (tmp_path / "config.yaml").write_text(text)
    cfg = load_config(tmp_path / "config.yaml")
    assert (cfg.selfplay.probe.samples, cfg.selfplay.recovery.enabled, cfg.selfplay.recovery.documents) == (2, True, 8)
    fewer = result_folder(tmp_path / "fewer", 2, overrides=[*old_sets[:2], "selfplay.format_recovery_documents=4",
                                                            *old_sets[3:]])
    with pytest.raises(ValueError, match=r"overrides selfplay.recovery.documents: 8 vs 4"):
        merge(tmp_path / "bad", [old, fewer])
    assert stored_config({"config": CONFIG, "overrides": []}) is None  # a run that stored no resolved settings


DOC = """\
# Runs

## The run (`selfplay-r1/`)

Acceptance without the grammar 0.500 → 0.750 (+25.0 points; 2 gained, 1 lost); held-out pass 1 vs 0 of 4,
check fraction 0.562 vs 0.500, paired +0.062 ± 0.157; the progress fraction 0.500 against 0.250, paired
+0.250 ± 0.102. The rounds' checks went 0.600 → 0.700 → 0.650 (a series, not a start and an end).
Pooled with other runs: pass 3 vs 4 of 64.

## Another run (`selfplay-r2/`)

Check fraction 0.999 vs 0.111, about another run.

A line about `selfplay-r1` outside its section: paired +0.062 ± 0.157.
"""


def test_check_reports_the_figures_that_disagree(tmp_path: Path) -> None:
    """``--merge ... --check`` re-renders the committed run without writing it: a doc figure about the run that the
    report does not give is named by file and line, figures about other runs and pooled ones are left alone,
    and an edited committed report is caught line by line; the command exits 1 on any, 0 when all agree."""
    run = result_folder(tmp_path / "selfplay-r1")
    merge(tmp_path / "committed", [run], draw=False, echo=False)
    doc = tmp_path / "runs.md"
    doc.write_text(DOC)
    problems, checked = check(tmp_path / "committed", [run], [doc])
    assert problems == [] and checked > 20
    before = sorted(p.name for p in (tmp_path / "committed").iterdir())
    doc.write_text(DOC.replace("+25.0 points", "+26.0 points").replace("1 vs 0 of 4", "1 vs 1 of 4"))
    problems, _ = check(tmp_path / "committed", [run], [doc])
    assert [p.split(": ", 1)[0] for p in problems] == [f"{doc}:5", f"{doc}:5"]
    assert "rise in points '+26.0' is not the report's (+25.0)" in problems[0] and "'1 / 1 / 4'" in problems[1]
    md = tmp_path / "committed" / "selfplay.md"
    md.write_text(md.read_text().replace("| 1 | 0.750 |", "| 1 | 0.875 |"))
    problems, _ = check(tmp_path / "committed", [run], [])
    assert len(problems) == 1 and problems[0].startswith(f"{md}:6: the committed line")
    assert sorted(p.name for p in (tmp_path / "committed").iterdir()) == before  # nothing written
    args = ["bench", "selfplay", "--out", str(tmp_path / "committed"), "--merge", str(run), "--check", "--docs"]
    failed = CliRunner().invoke(cli, [*args, str(doc)])
    assert failed.exit_code == 1 and f"{md}:6" in failed.output
    merge(tmp_path / "committed2", [run], draw=False, echo=False)
    doc.write_text(DOC)
    ok = CliRunner().invoke(cli, [*args[:3], str(tmp_path / "committed2"), *args[4:], str(doc)])
    assert ok.exit_code == 0 and "agree" in ok.output
    alone = CliRunner().invoke(cli, ["bench", "selfplay", "--out", str(tmp_path), "--check"])
    assert alone.exit_code == 2 and "--merge" in alone.output

"""Self-play end to end: scripted rounds (groups, both roles, held-out scoring, skill snapshots, resume), the
distillation phase and the sequential schedule, and the bundled CPU smoke config on the random tiny model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.training.conftest import selfplay_script, solver_plan
from training.config import TrainConfig, config_from_dict
from training.errors import CheckpointError
from training.generation import ScriptedGenerator

ROOT = Path(__file__).resolve().parents[2]


def selfplay_config(tiny_dir: Path, corpus: Path, out: Path, selfplay: dict | None = None, **run: Any) -> TrainConfig:
    return config_from_dict({
        "model": {"name_or_path": str(tiny_dir), "device": "cpu"},
        "rollout": {"max_turn_tokens": 64, "max_completion_tokens": 640, "max_steps": 8},
        "solver": {"num_generations": 2},
        "selfplay": {"rounds": 2, "corpus": str(corpus), "docs": 2, "tasks_per_env": 1, "write_skills": False,
                     "round": {"n": 2, "alpha": 0.5, "oversample": 3.0, "group_size": 3},
                     "proposer": {"structure": "spec", "constrained": False, "max_new_tokens": 3000, "n_examples": 0,
                                  "excerpt_tokens": 60, "system_prompt": "Write one environment spec as JSON."},
                     "eval_envs": ["examples:library-loans"], "eval_tasks_per_env": 1, "eval_attempts": 2,
                     **(selfplay or {})},
        "run": {"output_dir": str(out), "report_to": ["tensorboard"], **run},
        "grpo": {"per_device_train_batch_size": 4, "learning_rate": 1e-3}})


def test_two_selfplay_rounds_then_resume(tmp_path: Path, tiny_dir: Path, tokenizer: Any, corpus_dir: Path) -> None:
    from training.selfplay import SelfPlay

    run = tmp_path / "run"
    cfg = selfplay_config(tiny_dir, corpus_dir, run)
    sp = SelfPlay(cfg, generator=ScriptedGenerator(tokenizer, selfplay_script(solver_plan(wrong_every=2))))
    before = {n: p.detach().clone() for n, p in sp.model.named_parameters()}
    history = sp.run()
    assert [h["round"] for h in history] == [0, 1]
    for h in history:
        # two groups of three proposals from one prompt each (one skill-routed group, one exploration group);
        # the script answers valid, unparsable, valid in turn
        p = h["proposer"]
        assert p["candidates"] == 6 and p["groups"] == 2 and p["parsed"] == pytest.approx(4 / 6)
        valid = round(p["acceptance"] * 6)
        assert 2 <= valid <= 4 and p["validity_by_stream"]["explore"] == pytest.approx(2 / 3)
        # each valid environment's task is played k=2 times: once right, once with the wrong book
        assert h["solver"]["episodes"] == 2 * valid and h["solver"]["pass_rate"] == 0.5
        assert h["solver"]["solve_rate_histogram"]["counts"] == [0.0, 0.0, float(valid), 0.0, 0.0]
        assert p["frontier"] == 1.0 and p["distinct_tool_sets"] == 1 and p["grounding"] is not None
        assert h["samples"] == {"proposer": 6, "solver": 2 * valid}
        # proposer groups have spread (valid 1.0 vs unparsable -1.0); solver groups have spread (pass vs fail)
        assert h["update"]["proposer"]["samples"] >= 3 and h["update"]["solver"]["samples"] == 2 * valid
        assert h["update"]["steps"] == 1 and h["update"]["trained_tokens"] > 0
        assert h["eval"]["episodes"] == 2 and 0.0 <= h["eval"]["pass_rate"] <= 1.0  # held out, in the same batch
        assert 0.0 <= h["eval"]["progress"] <= 1.0  # every rollout scores the progress fraction too
        assert sum(h["skills"]["routing"].values()) == 1 and h["skills"]["weights"]
        assert set(h["time"]) >= {"generation", "environment", "validation", "update", "round", "environment_share"}
        assert 0.0 < h["time"]["environment_share"] < 1.0
        # generation split into the proposals' and the episodes' (the solver's and the held-out's)
        assert h["time"]["generation"] == pytest.approx(h["time"]["generation_proposals"]
                                                        + h["time"]["generation_episodes"])
        assert h["time"]["generation_proposals"] > 0 and h["time"]["generation_episodes"] > 0
        assert h["throughput"]["tokens_per_second"] > 0
    assert any(not (p.detach() == before[n]).all() for n, p in sp.model.named_parameters())
    for h in history:  # a scripted generator records no log-probabilities: the gap is not measured
        assert h["generation"]["engine"] == "scripted" and h["generation"]["logprob_gap"]["tokens"] == 0
        assert h["time"]["weight_sync"] >= 0.0
    assert sp.generator.weights.steps >= 2 and sp.generator.weights.pending == 0  # every step was synced
    eps = [json.loads(x) for x in (run / "episodes.jsonl").read_text().splitlines()]
    trained = [e for e in eps if not e.get("heldout")]
    assert {e["passed"] for e in trained} == {True, False}
    assert sum(bool(e.get("heldout")) and not e.get("final") for e in eps) == 4  # 2 a round, in its batch
    assert [e["round"] for e in eps if e.get("final")] == [2, 2]  # the final policy's scoring
    assert len(sp.library) >= 1 and (run / "library" / "specs").is_dir()
    assert any(r["solve_rate"] == 0.5 for r in sp.library.rows())  # the solver's results reached the catalog
    assert sum(s.stats.proposals for s in sp.controller.library) == 6  # 3 skill-routed proposals a round
    summary = json.loads((run / "summary.json").read_text())
    assert summary["eval_final"]["episodes"] == 2 and summary["rounds"] == 2
    snaps = sorted(p.name for p in (run / "skill-rounds").iterdir())
    assert snaps == ["round-0000", "round-0001"] and (run / "skill-rounds" / "round-0001" / "search-then-act").is_dir()
    lines = (run / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["step"] == 0
    assert any((run / "tensorboard").iterdir())
    ckpts = sorted(p.name for p in (run / "checkpoints").iterdir())
    assert ckpts == ["round-0000", "round-0001"]
    ck = run / "checkpoints" / "round-0000"
    assert (ck / "optimizer.pt").is_file() and (ck / "rng.pt").is_file() and (ck / "skills").is_dir()
    assert json.loads((ck / "state.json").read_text())["next_round"] == 1

    # resume from the first checkpoint: what round 1 wrote goes, and the round is replayed exactly
    after_round_0 = {r["id"] for r in sp.library.rows() if r["run_id"].endswith("/round-0000")}
    assert len(after_round_0) >= 1 and all(r["run_id"].startswith(sp.run_tag) for r in sp.library.rows())
    cfg2 = selfplay_config(tiny_dir, corpus_dir, run, resume=str(ck))
    script = selfplay_script(solver_plan(wrong_every=2))
    for _ in range(6):  # the proposer script's position after round 0
        script("proposer context")
    with pytest.warns(UserWarning, match="goes on from round 1"):
        resumed = SelfPlay(cfg2, generator=ScriptedGenerator(tokenizer, script))
    assert resumed.start_round == 1
    assert {r["id"] for r in resumed.library.rows()} == after_round_0
    assert [json.loads(x)["round"] for x in (run / "metrics.jsonl").read_text().splitlines()] == [0]
    assert {json.loads(x)["round"] for x in (run / "episodes.jsonl").read_text().splitlines()} == {0}
    assert sorted(p.name for p in (run / "skill-rounds").iterdir()) == ["round-0000"]
    assert resumed.optimizer.state_dict()["state"], "optimizer state restored"
    again = resumed.run()
    assert [h["round"] for h in again] == [1]
    for key in ("solver", "proposer", "samples"):
        assert again[0][key] == history[1][key]
    assert again[0]["update"]["loss"] == pytest.approx(history[1]["update"]["loss"], rel=1e-4)
    assert again[0]["skills"]["routing"] == history[1]["skills"]["routing"]
    assert again[0]["library_size"] == history[1]["library_size"]  # round 1's environments are kept again
    assert [json.loads(x)["round"] for x in (run / "metrics.jsonl").read_text().splitlines()] == [0, 1]


def test_a_fresh_start_discards_what_a_start_without_checkpoint_left(tmp_path: Path, tiny_dir: Path,
                                                                     tokenizer: Any, corpus_dir: Path) -> None:
    """A start killed in its first round, after the round had kept environments, induced skills and logged,
    but before the checkpoint: starting again in the same folder begins from the clean state, as the first
    start did (on the H200 an out-of-memory kill left a round's environments and an induced skill behind)."""
    from envgen.skills import SkillLibrary
    from training.selfplay import SelfPlay

    run = tmp_path / "run"
    cfg = selfplay_config(tiny_dir, corpus_dir, run, {"rounds": 1})
    first = SelfPlay(cfg, generator=ScriptedGenerator(tokenizer, selfplay_script(solver_plan(wrong_every=2))))
    skills_at_start = sorted(s.id for s in first.controller.library)
    (h,) = first.run()
    assert h["library_size"] >= 1
    shutil.rmtree(run / "checkpoints")  # the kill came before the checkpoint
    (run / "skills" / "induced-leftover").mkdir()
    (run / "skills" / "induced-leftover" / "skill.yaml").write_text("id: induced-leftover\n")
    with pytest.warns(UserWarning) as caught:
        again = SelfPlay(cfg, generator=ScriptedGenerator(tokenizer, selfplay_script(solver_plan(wrong_every=2))))
    said = " ".join(str(w.message) for w in caught)
    assert "left skills here" in said and "goes on from round 0" in said and "environments in the library" in said
    assert again.start_round == 0 and len(again.library) == 0
    assert sorted(s.id for s in SkillLibrary(run / "skills")) == skills_at_start
    assert not (run / "metrics.jsonl").read_text() and not list((run / "skill-rounds").iterdir())
    (h2,) = again.run()
    assert h2["library_size"] == h["library_size"] and h2["proposer"] == h["proposer"]


def test_distill_phase_and_sequential_schedule(tmp_path: Path, tiny_dir: Path, tokenizer: Any,
                                               corpus_dir: Path) -> None:
    """One round with a proposer step, a solver step and a recovery-distillation step (reference teacher)."""
    from training.selfplay import SelfPlay

    cfg = selfplay_config(tiny_dir, corpus_dir, tmp_path / "run",
                          {"rounds": 1, "schedule": "sequential", "distill": True, "eval_envs": []})
    sp = SelfPlay(cfg, generator=ScriptedGenerator(tokenizer, selfplay_script(solver_plan(wrong_every=2))))
    (h,) = sp.run()
    up = h["update"]
    assert up["schedule"] == "sequential" and up["steps"] == 2
    assert up["proposer"]["samples"] > 0 and up["solver"]["samples"] > 0
    d = h["distill"]
    # the wrong-book episodes leave the reference at the borrow call: the teacher's recovery is learnt
    assert d["episodes"] >= 1 and d["divergences"] >= 1 and d["update"]["samples"] >= 1
    assert h["time"]["distill"] > 0 and "eval" not in h


def test_the_acceptance_probe_writes_without_the_grammar(tmp_path: Path, tiny_dir: Path, tokenizer: Any,
                                                         corpus_dir: Path) -> None:
    """``selfplay.probe``: at the start of a round the policy writes proposals for fixed documents
    unconstrained and the gate judges them (the script answers valid, unparsable, valid, ...); with
    ``probe.every: 2`` round 1 has no probe, and the final policy is probed after the last round."""
    from training.selfplay import SelfPlay

    cfg = selfplay_config(tiny_dir, corpus_dir, tmp_path / "run",
                          {"rounds": 2, "probe": {"documents": 2, "every": 2}, "eval_envs": [],
                           "proposer": {"structure": "spec", "constrained": True, "max_new_tokens": 3000,
                                        "n_examples": 0, "excerpt_tokens": 60}})
    sp = SelfPlay(cfg, generator=ScriptedGenerator(tokenizer, selfplay_script(solver_plan(wrong_every=2))))
    assert len(sp.probe_docs) == 2 and not sp.free_proposer.constrained
    assert sp.free_proposer.max_new_tokens == 3000 == sp.proposer.max_new_tokens  # no probe budget: the proposer's
    h0, h1 = sp.run()
    probe = h0["probe"]
    assert probe["documents"] == 2 and probe["parsed"] == 0.5 and probe["acceptance"] == 0.5
    assert probe["seconds"] > 0 and h0["proposer"]["candidates"] == 6  # the round itself is unchanged
    assert probe["failures"]["truncated"] == 0 and sum(probe["failures"]["codes"].values()) == 1
    kept = [json.loads(line) for line in (tmp_path / "run" / "probes" / "round-0.jsonl").open()]
    assert [k["parsed"] for k in kept] == [True, False] and [k["accepted"] for k in kept] == [True, False]
    assert kept[1]["error_code"] in probe["failures"]["codes"] and kept[1]["completion"] and kept[1]["error"]
    assert kept[0]["error_code"] is None and kept[0]["completion_tokens"] > 0
    assert "probe" not in h1
    assert (tmp_path / "run" / "probes" / "round-2.jsonl").is_file()  # the final policy's
    final = json.loads((tmp_path / "run" / "summary.json").read_text())["probe_final"]
    assert final["documents"] == 2 and final["seconds"] > 0 and final["acceptance"] > 0  # the script's turn
    capped = selfplay_config(tiny_dir, corpus_dir, tmp_path / "capped", {"probe": {"documents": 1,
                                                                                    "max_tokens": 1200}})
    assert SelfPlay(capped, generator=ScriptedGenerator(tokenizer, selfplay_script(solver_plan()))) \
        .free_proposer.max_new_tokens == 1200
    for bad in ({"documents": -1}, {"every": 0}, {"max_tokens": 0}, {"samples": 0}):
        with pytest.raises(ValueError, match=rf"selfplay\.probe: .*{next(iter(bad))}"):
            selfplay_config(tiny_dir, corpus_dir, tmp_path / "x", {"probe": bad})


def test_the_acceptance_probe_takes_several_samples_a_document(tmp_path: Path, tiny_dir: Path, tokenizer: Any,
                                                               corpus_dir: Path) -> None:
    """``selfplay.probe.samples: 3``: each probe document gets 3 proposals in the probe's one batch;
    acceptance is over all 6, and the kept file says each proposal's document and sample."""
    from training.selfplay import SelfPlay

    cfg = selfplay_config(tiny_dir, corpus_dir, tmp_path / "run",
                          {"rounds": 1, "probe": {"documents": 2, "samples": 3}, "eval_envs": [],
                           "proposer": {"structure": "spec", "constrained": True, "max_new_tokens": 3000,
                                        "n_examples": 0, "excerpt_tokens": 60}})
    gen = ScriptedGenerator(tokenizer, selfplay_script(solver_plan()))
    calls: list[int] = []
    generate = gen.generate

    def counting(contexts: list[list[int]], **kw: Any) -> Any:
        calls.append(len(contexts))
        return generate(contexts, **kw)

    gen.generate = counting  # type: ignore[method-assign]
    sp = SelfPlay(cfg, generator=gen)
    (h,) = sp.run()
    probe = h["probe"]
    assert probe["documents"] == 2 and probe["samples"] == 3 and calls[0] == 6  # one batch of 2 x 3
    kept = [json.loads(line) for line in (tmp_path / "run" / "probes" / "round-0.jsonl").open()]
    assert [k["sample"] for k in kept] == [0, 1, 2, 0, 1, 2]
    assert [k["doc_id"] for k in kept] == [d.id for d in sp.probe_docs for _ in range(3)]
    assert probe["acceptance"] == pytest.approx(sum(k["accepted"] for k in kept) / 6)
    assert probe["parsed"] == pytest.approx(sum(k["parsed"] for k in kept) / 6)


def test_the_probe_decodes_in_batches_of_the_generation_batch_size(tmp_path: Path, tiny_dir: Path,
                                                                    corpus_dir: Path) -> None:
    """``generation.batch_size``: the probe's proposals reach the model in ``generate`` calls of at most that
    many rows (longest prompts first), so one long proposal holds up only its own batch."""
    import dataclasses

    from training.selfplay import SelfPlay

    cfg = selfplay_config(tiny_dir, corpus_dir, tmp_path / "run",
                          {"rounds": 1, "eval_envs": [], "probe": {"documents": 3, "max_tokens": 6}})
    cfg.generation = dataclasses.replace(cfg.generation, engine="transformers", batch_size=2)
    sp = SelfPlay(cfg)
    rows: list[int] = []
    real = sp.model.generate

    def counting(*args: Any, **kw: Any) -> Any:
        rows.append(int(kw["input_ids"].shape[0]))
        return real(*args, **kw)

    sp.model.generate = counting
    probe = sp._probe(0)
    assert probe is not None and probe["documents"] == 3 and rows == [2, 1]


def test_the_free_stream_can_write_without_the_grammar(tmp_path: Path, tiny_dir: Path, tokenizer: Any,
                                                        corpus_dir: Path) -> None:
    """``proposer.explore_constrained: false``: the skill stream decodes under the grammar, the exploration stream
    without it and within ``explore_max_tokens``, both in one batch (the grammar on the skill rows only); its
    unparsable proposals are scored -1 against the parsed ones of their group, so the update learns the format
    from them, and the round reports acceptance per stream."""
    from envgen.backends.base import budget_list
    from training.generation import ScriptedGenerator
    from training.selfplay import SelfPlay

    class Recording(ScriptedGenerator):
        def generate(self, contexts: list[list[int]], *, max_new_tokens: Any, **kw: Any) -> list[Any]:
            calls.append((budget_list(max_new_tokens, len(contexts)),
                          [s is not None for s in kw.get("json_schemas") or [None] * len(contexts)]))
            return super().generate(contexts, max_new_tokens=max_new_tokens, **kw)

    calls: list[tuple[list[int], list[bool]]] = []
    proposer = {"structure": "spec", "constrained": True, "explore_constrained": False, "explore_max_tokens": 2500,
                "max_new_tokens": 3000, "n_examples": 0, "excerpt_tokens": 60}
    cfg = selfplay_config(tiny_dir, corpus_dir, tmp_path / "run", {"rounds": 1, "eval_envs": [], "proposer": proposer})
    sp = SelfPlay(cfg, generator=Recording(tokenizer, selfplay_script(solver_plan(wrong_every=2))))
    assert sp.proposer.constrained and sp.explore_proposer is not None
    assert not sp.explore_proposer.constrained and sp.explore_proposer.max_new_tokens == 2500
    (h,) = sp.run()
    (budgets, grammar), = [c for c in calls if any(c[1])]  # the round's proposals: both streams in one call
    assert grammar == [True] * 3 + [False] * 3  # a group of 3 each: the skill stream's rows under the grammar
    assert min(budgets[:3]) >= 3000 and budgets[3:] == [2500] * 3  # under a schema the budget is its worst case
    p = h["proposer"]
    assert p["validity_by_stream"]["explore"] == pytest.approx(2 / 3)  # the script: valid, unparsable, valid
    assert sum(p["failures"]["codes"].values()) == round(p["candidates"] * (1 - p["parsed"]))
    assert p["failures"]["codes"] and p["failures"]["truncated"] == 0
    assert h["samples"]["proposer"] >= 3  # the explore group's rewards differ: its samples carry an advantage
    same = selfplay_config(tiny_dir, corpus_dir, tmp_path / "same", {"proposer": {**proposer,
                                                                                   "explore_constrained": True,
                                                                                   "explore_max_tokens": None}})
    assert SelfPlay(same, generator=ScriptedGenerator(tokenizer, selfplay_script(solver_plan()))).explore_proposer \
        is None  # nothing differs from the skill stream: one proposer
    with pytest.raises(ValueError, match="explore_max_tokens"):
        selfplay_config(tiny_dir, corpus_dir, tmp_path / "x", {"proposer": {**proposer, "explore_max_tokens": 0}})


def test_resume_needs_a_checkpoint(tmp_path: Path, tiny_dir: Path, corpus_dir: Path) -> None:
    from training.selfplay import SelfPlay

    cfg = selfplay_config(tiny_dir, corpus_dir, tmp_path / "run", resume=str(tmp_path / "nowhere"))
    with pytest.raises(CheckpointError, match="not a checkpoint folder"):
        SelfPlay(cfg)


@pytest.mark.slow
def test_smoke_cpu_config_trains_both_roles(tmp_path: Path, tiny_dir: Path) -> None:
    """`envwright train selfplay --config smoke-cpu`, as the README writes it: the random tiny model proposes
    constrained blueprints and solves them, and both roles take gradient steps in every round (minutes)."""
    out = tmp_path / "smoke"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "envgen", "train", "selfplay", "--config", "smoke-cpu", "--output-dir",
           str(out), "--set", f"model.name_or_path={tiny_dir}", "--set", "run.report_to=[]"]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=3000)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rounds = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(rounds) == 2
    for h in rounds:
        assert h["update"]["proposer"]["samples"] > 0, h["update"]
        assert h["update"]["solver"]["samples"] > 0, h["update"]
        assert h["proposer"]["acceptance"] > 0 and h["proposer"]["parsed"] == 1.0  # constrained: all parse
        assert h["solver"]["episodes"] > 0 and "eval" in h
        gap = h["generation"]["logprob_gap"]  # the transformers engine samples from the trainer's own weights
        assert h["generation"]["engine"] == "transformers" and gap["tokens"] > 0 and gap["max"] < 1e-3
    assert '"update/proposer/samples"' in proc.stdout
    assert (out / "summary.json").is_file() and len(list((out / "skill-rounds").iterdir())) == 2


def test_fixed_environment_baseline_matches_episodes(tmp_path: Path, tiny_dir: Path, tokenizer: Any,
                                                     corpus_dir: Path, spec: Any) -> None:
    """The baseline plays a self-play run's solver episodes round for round, k per task, one update a round."""
    from training.baseline import FixedEnvGRPO, matched_episodes

    sp_run = tmp_path / "sp"
    sp_run.mkdir()
    (sp_run / "metrics.jsonl").write_text("\n".join(json.dumps({"round": r, "solver": {"episodes": n}})
                                                    for r, n in ((0, 4), (1, 2))) + "\n")
    episodes = matched_episodes(sp_run)
    assert episodes == [4, 2]
    cfg = selfplay_config(tiny_dir, corpus_dir, tmp_path / "base")
    other = spec.model_copy(update={"id": "library-demo-2"})
    base = FixedEnvGRPO(cfg, [spec, other], episodes,
                        generator=ScriptedGenerator(tokenizer, solver_plan(wrong_every=2)))
    assert [len(base.draw(r)) for r in (0, 1)] == [4, 2]
    assert {t.spec.id for t in base.draw(0)} == {spec.id, other.id}  # one pass over the pool before repeating
    hist = base.run()
    assert [h["solver"]["episodes"] for h in hist] == [4, 2]
    assert all(h["update"]["solver"]["samples"] == h["solver"]["episodes"] for h in hist)  # pass vs fail in a group
    assert hist[0]["eval"]["episodes"] == 2 and 0 <= hist[0]["time"]["environment_share"] < 1
    summary = json.loads((tmp_path / "base" / "summary.json").read_text())
    assert summary["episodes"] == [4, 2] and summary["eval_final"]["episodes"] == 2
    # its episodes are written as self-play writes them, so the two runs compare task by task
    eps = [json.loads(x) for x in (tmp_path / "base" / "episodes.jsonl").read_text().splitlines()]
    assert [e["round"] for e in eps if not e.get("heldout")] == [0] * 4 + [1] * 2
    assert [e["round"] for e in eps if e.get("final")] == [2, 2] and all("task_id" in e for e in eps)
    # resumed from round 0's checkpoint, it discards what round 1 (2 + 2 held out) and the final scoring (2) wrote
    cfg2 = selfplay_config(tiny_dir, corpus_dir, tmp_path / "base",
                           resume=str(tmp_path / "base" / "checkpoints" / "round-0000"))
    with pytest.warns(UserWarning, match="discarded 6 lines of episodes.jsonl"):
        again = FixedEnvGRPO(cfg2, [spec, other], episodes,
                             generator=ScriptedGenerator(tokenizer, solver_plan(wrong_every=2)))
    assert again.start_round == 1
    assert {json.loads(x)["round"] for x in (tmp_path / "base" / "episodes.jsonl").read_text().splitlines()} == {0}
    assert sorted(p.name for p in (tmp_path / "base" / "checkpoints").iterdir()) == ["round-0000", "round-0001"]


def test_held_out_tasks_are_each_environments_first_tasks_whatever_their_length() -> None:
    """The held-out set takes each environment's first ``per_env`` tasks, long ones too: each episode gets the
    actions its task's reference takes (:func:`training.rollout.step_budget`), so none is skipped for its length."""
    import warnings

    from training.selfplay import heldout_tasks

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        first = heldout_tasks(["examples:library-loans"], 1, 2, seed=7)
    from gym_envs.seeding import stable_seed  # each attempt's episode seed derives from the run seed

    assert [(t.task_id, t.episode_seed) for t in first] == [(first[0].task_id, stable_seed(7, "heldout", a))
                                                            for a in (0, 1)]
    assert first[0].episode_seed != first[1].episode_seed
    assert first[0].spec.task(first[0].task_id).reference_actions() == 5  # the first task, not the first short one
    assert len(heldout_tasks(["examples:library-loans"], None, 1, seed=0)) == 7  # every task


def test_the_held_out_score_is_also_given_per_source(tmp_path: Path) -> None:
    """Each held-out task names its source, and the score has a ``by_source`` part: held-out template and
    model-written environments can favour different training, so the comparison is made per source too."""
    from training.rollout import Episode, TaskRef
    from training.selfplay import heldout_tasks
    from training.selfplay_metrics import pass_rate

    sources = ["examples:library-loans", "examples:bank-ledger"]
    tasks = heldout_tasks(sources, 1, 2, seed=0)
    assert [t.source for t in tasks] == [sources[0]] * 2 + [sources[1]] * 2
    eps = [Episode(t) for t in tasks]
    for e, (passed, reward) in zip(eps, [(True, 1.0), (False, 0.5), (False, 0.25), (False, 0.0)], strict=True):
        e.score, e.reward = {"episode": 1.0 if passed else 0.0}, reward
    res = pass_rate(eps)
    assert res["pass_rate"] == 0.25 and res["by_source"] == {
        sources[0]: {"pass_rate": 0.5, "reward": 0.75, "episodes": 2},
        sources[1]: {"pass_rate": 0.0, "reward": 0.125, "episodes": 2}}
    assert "by_source" not in pass_rate([Episode(TaskRef(tasks[0].spec, tasks[0].task_id))])  # no source


def test_the_raw_rate_is_timed_at_the_rounds_own_shape(tmp_path: Path, tiny_dir: Path, tokenizer: Any,
                                                      corpus_dir: Path) -> None:
    """``generation.measure_raw``: after the round's generation the engine is timed on the round's own rows, one
    per proposal and one per action, each to the length it generated: their tokens are the round's generated
    tokens, the round's time leaves the measure out, and ``of_raw`` is the in-loop rate over the raw one; the
    round's calls, replayed one by one, give ``raw_by_call`` and ``of_raw_by_call``."""
    from training.selfplay import SelfPlay

    cfg = selfplay_config(tiny_dir, corpus_dir, tmp_path / "run", {"rounds": 1})
    cfg.generation.measure_raw = True
    gen = ScriptedGenerator(tokenizer, selfplay_script(solver_plan(wrong_every=2)))
    seen: list[tuple[list[list[int]], list[int]]] = []

    def raw(contexts: list[list[int]], budgets: list[int], *, seed: int = 0) -> dict[str, Any]:
        seen.append((contexts, list(budgets)))
        return {"rows": len(contexts), "tokens": sum(budgets), "seconds": 0.5, "tokens_per_second": sum(budgets) / 0.5}

    gen.raw_throughput = raw  # type: ignore[method-assign]
    plain = gen.generate

    def logging(contexts: list[list[int]], **kw: Any) -> Any:  # as an engine with a raw measure logs its calls
        out = plain(contexts, **kw)
        if gen.call_log is not None:
            gen.call_log.append([(list(c), len(g.ids)) for c, g in zip(contexts, out, strict=True)])
        return out

    gen.generate = logging  # type: ignore[method-assign]
    (h,) = SelfPlay(cfg, generator=gen).run()
    (contexts, budgets), *calls = seen  # the one-call measure, then each call of the round replayed
    assert gen.call_log is None  # the log is the round's only
    tp = h["throughput"]
    assert len(calls) == tp["raw_by_call"]["calls"] > 1 and tp["raw_by_call"]["tokens"] == tp["generated_tokens"]
    assert tp["of_raw_by_call"] == pytest.approx(tp["tokens_per_second"] / tp["raw_by_call"]["tokens_per_second"])
    assert sum(budgets) == tp["generated_tokens"] > 0 and all(contexts) and len(contexts) == len(budgets)
    assert len(contexts) > h["proposer"]["candidates"]  # the proposals and every action of the episodes
    assert tp["raw"]["tokens_per_second"] == 2 * sum(budgets)
    assert tp["of_raw"] == pytest.approx(tp["tokens_per_second"] / tp["raw"]["tokens_per_second"])
    off = selfplay_config(tiny_dir, corpus_dir, tmp_path / "off", {"rounds": 1})
    (h,) = SelfPlay(off, generator=ScriptedGenerator(tokenizer, selfplay_script(solver_plan()))).run()
    assert "raw" not in h["throughput"]

"""One recovery-step self-distillation iteration end to end (tiny model, a scripted student mistake)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gym_envs.parsing import format_tool_call
from training.config import config_from_dict
from training.distill import Distiller, ReferenceTeacher, TeacherView, recovery_samples, teacher_samples
from training.generation import ScriptedGenerator
from training.rollout import TaskRef, rollout


def student(context: str) -> str:
    """Looks the book up with a typo (off the teacher's support), then gives up."""
    step = context.count("<|im_start|>assistant") - 1
    return [format_tool_call("find_book", {"title": "Dnue"}), "I could not find that book."][min(step, 1)]


def test_reference_teacher(spec: Any) -> None:
    t = ReferenceTeacher()
    first = TeacherView(spec, "t0", 0, [], [])
    assert t.act(first) == format_tool_call("find_book", {"title": "Dune"})
    failed = TeacherView(spec, "t0", 0, [{"name": "find_book", "arguments": {"title": "Dnue"}, "ok": False}], [])
    assert t.act(failed) == format_tool_call("find_book", {"title": "Dune"})
    done = TeacherView(spec, "t0", 0, [{"name": "find_book", "arguments": {"title": "Dune"}, "ok": True},
                                       {"name": "borrow_book", "arguments": {"member_id": 7, "book_id": 3},
                                        "ok": True}], [])
    assert t.act(done) == "Done."
    assert t.act(TeacherView(spec, "t0", 1, [{"name": "list_loans", "arguments": {"member_id": 7}, "ok": True}],
                             [])) == "2"


def test_one_distillation_iteration(tmp_path: Path, tiny_dir: Path, tokenizer: Any, chat: Any, spec: Any) -> None:
    cfg = config_from_dict({
        "model": {"name_or_path": str(tiny_dir), "device": "cpu"},
        "rollout": {"max_turn_tokens": 64, "max_completion_tokens": 800, "max_steps": 8},
        "distill": {"iterations": 1, "episodes_per_iteration": 2},
        "run": {"output_dir": str(tmp_path / "run"), "report_to": []},
        "grpo": {"per_device_train_batch_size": 4, "learning_rate": 1e-3}})
    gen = ScriptedGenerator(tokenizer, student)
    episodes = rollout([TaskRef(spec, "t0")], gen, chat, cfg.rollout)
    assert not episodes[0].passed
    samples, stats = recovery_samples(episodes, ReferenceTeacher(), chat, cfg, max_length=None)
    assert stats["divergences"] == 1 and stats["recovery_successes"] == 1
    correction, recovery = sorted(samples, key=lambda s: s.role)
    ep = episodes[0]
    # the correction: the student's prefix is context only; the teacher's step at the divergence is trained
    assert correction.completion_ids[:ep.steps[0].start] == ep.completion_ids[:ep.steps[0].start]
    assert tokenizer.decode([t for t, m in zip(correction.completion_ids, correction.loss_mask, strict=True) if m]) \
        == format_tool_call("find_book", {"title": "Dune"}) + "<|im_end|>"
    # the recovery: the off-support step and the env's answer are masked; the teacher's steps are trained
    prefix = ep.steps[1].start
    assert recovery.completion_ids[:prefix] == ep.completion_ids[:prefix] and not any(recovery.loss_mask[:prefix])
    trained = tokenizer.decode([t for t, m in zip(recovery.completion_ids, recovery.loss_mask, strict=True) if m])
    assert trained == (format_tool_call("find_book", {"title": "Dune"}) + "<|im_end|>"
                       + format_tool_call("borrow_book", {"member_id": 7, "book_id": 3}) + "<|im_end|>Done.<|im_end|>")
    masked = tokenizer.decode([t for t, m in zip(recovery.completion_ids, recovery.loss_mask, strict=True) if not m])
    assert '"loan_id": 2' in masked  # the replayed env executed the teacher's borrow: the state changed
    assert recovery.meta["turn_passed"] is True

    distiller = Distiller(cfg, generator=gen, tasks=[TaskRef(spec, "t0")])
    before = {n: p.detach().clone() for n, p in distiller.model.named_parameters()}
    history = distiller.run()
    assert len(history) == 1
    h = history[0]
    assert h["distill"]["recovery_samples"] == 2 and h["distill"]["correction_samples"] == 2
    assert h["update"]["samples"] == 4 and h["update"]["loss"] > 0
    assert any(not (p.detach() == before[n]).all() for n, p in distiller.model.named_parameters())
    rec = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[0])
    assert rec["distill"]["divergences"] == 2
    assert (tmp_path / "run" / "checkpoints" / "round-0000" / "state.json").is_file()


def test_teacher_samples_are_sft_data(spec: Any, chat: Any) -> None:
    from training.config import RolloutConfig

    samples, too_long = teacher_samples([TaskRef(spec, "t0")], ReferenceTeacher(), chat,
                                        RolloutConfig(executor="inprocess"), max_length=None)
    assert too_long == 0 and len(samples) == 1 and samples[0].meta["passed"]
    s = samples[0]
    assert 0 < sum(s.loss_mask) < len(s.loss_mask)

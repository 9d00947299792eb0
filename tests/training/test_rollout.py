"""Episode assembly: chat tokens, env masks, batched multi-turn rollouts, truncation, failures as data."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from gym_envs.parsing import format_tool_call
from gym_envs.spec import STEP_MARGIN
from tests.fixtures.trips import counted_trips
from tests.training.conftest import solver_plan
from training.config import RolloutConfig
from training.generation import Generated, Generator, ScriptedGenerator, TransformersGenerator
from training.rollout import TaskRef, rollout


def segments(tokenizer: Any, ids: list[int], mask: list[int]) -> list[tuple[int, str]]:
    out: list[tuple[int, list[int]]] = []
    for t, m in zip(ids, mask, strict=True):
        if not out or out[-1][0] != m:
            out.append((m, []))
        out[-1][1].append(t)
    return [(m, tokenizer.decode(x)) for m, x in out]


def test_chat_suffixes_follow_the_template(chat: Any, tokenizer: Any) -> None:
    tool = tokenizer.decode(chat.tool_suffix_ids([{"role": "tool", "name": "f", "content": '{"a": 1}'}]))
    assert tool == '\n<|im_start|>user\n<tool_response>\n{"a": 1}\n</tool_response><|im_end|>\n<|im_start|>assistant\n'
    user = tokenizer.decode(chat.user_suffix_ids("next?"))
    assert user == "\n<|im_start|>user\nnext?<|im_end|>\n<|im_start|>assistant\n"
    assert chat.assistant_ids("Done.")[-1] == chat.eos_id


def test_rollout_plays_multi_turn_episode_and_masks_env_tokens(spec: Any, chat: Any, tokenizer: Any) -> None:
    gen = ScriptedGenerator(tokenizer, solver_plan())
    cfg = RolloutConfig(max_turn_tokens=96, max_completion_tokens=1200, executor="inprocess")
    calls: list[int] = []
    orig = gen.generate

    def counting(contexts: list[list[int]], **kw: Any) -> list[Generated]:
        calls.append(len(contexts))
        return orig(contexts, **kw)

    gen.generate = counting  # type: ignore[method-assign]
    episodes = rollout([TaskRef(spec, "t0", 3)] * 3, gen, chat, cfg)
    assert calls == [3, 3, 3, 3, 3]  # one batched generate per step across all episodes
    for ep in episodes:
        assert ep.status == "terminated" and ep.passed and ep.reward == 1.0
        assert [s.turn for s in ep.steps] == [0, 0, 0, 1, 1]
        borrow = ep.steps[1].results[0]
        assert borrow["name"] == "borrow_book" and borrow["ok"] and borrow["changes"] == 1  # the DB changed
        assert len(ep.completion_ids) == len(ep.env_mask) == len(ep.logprobs)
        segs = segments(tokenizer, ep.completion_ids, ep.env_mask)
        model_text = [t for m, t in segs if m == 1]
        env_text = [t for m, t in segs if m == 0]
        assert model_text[0].startswith("<tool_call>") and model_text[0].endswith("<|im_end|>")
        assert all("<tool_response>" in t or "How many books" in t for t in env_text)
        assert "<tool_response>" not in "".join(model_text)
        assert [m["role"] for m in ep.messages][:4] == ["system", "user", "assistant", "tool"]
        assert ep.record()["tool_calls"] == 3


def test_truncation_statuses(spec: Any, chat: Any, tokenizer: Any) -> None:
    looping = ScriptedGenerator(tokenizer, lambda ctx: format_tool_call("find_book", {"title": "Dune"}))
    ep, = rollout([TaskRef(spec, "t0")], looping, chat, RolloutConfig(max_steps=3, max_turn_tokens=64,
                                                                       max_completion_tokens=2000,
                                                                       executor="inprocess"))
    # t0's reference takes 5 actions: the episode may take them and a margin (training.rollout.step_budget)
    limit = spec.task("t0").reference_actions() + STEP_MARGIN
    assert ep.status == "max_steps" and ep.truncated and len(ep.steps) == limit and ep.reward == 0.0
    # the first turn is scored as it stands: only its unchanged check (books, members) holds, 1 of 5 checks
    assert ep.score == {"episode": 0.0, "turns": 0.0, "checks": 0.2, "progress": 0.0}
    ep, = rollout([TaskRef(spec, "t0")], looping, chat, RolloutConfig(max_steps=20, max_turn_tokens=64,
                                                                       max_completion_tokens=200,
                                                                       executor="inprocess"))
    assert ep.status == "max_tokens" and len(ep.completion_ids) <= 200
    chatty = ScriptedGenerator(tokenizer, lambda ctx: "word " * 200)
    ep, = rollout([TaskRef(spec, "t0")], chatty, chat, RolloutConfig(max_turn_tokens=16, executor="inprocess"))
    assert ep.status == "turn_too_long" and len(ep.completion_ids) == 16 and ep.completion_ids[-1] != chat.eos_id


def test_the_progress_reward_pays_the_looping_solver_nothing(spec: Any, chat: Any, tokenizer: Any) -> None:
    """``rollout.reward_mode: progress``: the looping solver above keeps the first turn's guard (its books are
    unchanged) and ``checks`` pays it 0.2; ``progress`` pays nothing, since the turn made no progress; the reference
    solver is paid in full in both."""
    looping = ScriptedGenerator(tokenizer, lambda ctx: format_tool_call("find_book", {"title": "Dune"}))
    for mode, want in (("checks", 0.2), ("progress", 0.0)):
        ep, = rollout([TaskRef(spec, "t0")], looping, chat, RolloutConfig(max_steps=3, max_turn_tokens=64,
                                                                           reward_mode=mode, executor="inprocess"))
        assert ep.reward == pytest.approx(want) and ep.score[mode] == pytest.approx(want)
    ep, = rollout([TaskRef(spec, "t0")], ScriptedGenerator(tokenizer, solver_plan()), chat,
                  RolloutConfig(max_turn_tokens=96, reward_mode="progress", executor="inprocess"))
    assert ep.passed and ep.reward == 1.0 and ep.score["progress"] == 1.0


class Broken(Generator):
    eos_ids = [0]

    def generate(self, contexts: list[list[int]], **kw: Any) -> list[Generated]:
        return [Generated([], [], "error", "CUDA out of memory") for _ in contexts]


def test_failures_are_data(spec: Any, chat: Any, tokenizer: Any) -> None:
    ep, = rollout([TaskRef(spec, "t0")], Broken(), chat, RolloutConfig(executor="inprocess"))
    assert ep.status == "generation_error" and ep.failed
    assert ep.error == "no completion from the model: CUDA out of memory"
    assert ep.stage == "backend" and ep.reward == 0.0
    bad = spec.model_copy(deep=True)
    bad.state.schema_sql = "CREATE TABLE broken ("
    ep, = rollout([TaskRef(bad, "t0")], ScriptedGenerator(tokenizer, solver_plan()), chat,
                  RolloutConfig(executor="inprocess"))
    assert ep.status == "env_error" and ep.error and ep.reward == 0.0


def test_hf_generator_batches_and_records_sampling_logprobs(tiny_dir: Any, tokenizer: Any, chat: Any,
                                                            spec: Any) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    gen = TransformersGenerator(model, eos_ids=[tokenizer.eos_token_id], pad_id=tokenizer.pad_token_id, batch_size=2)
    contexts = [tokenizer("hello")["input_ids"], tokenizer("a longer context about books")["input_ids"],
                tokenizer("x")["input_ids"]]
    outs = gen.generate(contexts, max_new_tokens=6, temperature=0.7, seed=1)
    again = gen.generate(contexts, max_new_tokens=6, temperature=0.7, seed=1)
    assert [o.ids for o in outs] == [o.ids for o in again]  # seeded
    for ctx, out in zip(contexts, outs, strict=True):
        with torch.no_grad():
            logits = model(torch.tensor([ctx + out.ids])).logits[0, len(ctx) - 1:-1] / 0.7
        ref = torch.log_softmax(logits, -1).gather(1, torch.tensor(out.ids).view(-1, 1)).squeeze(1)
        assert out.logprobs == pytest.approx(ref.tolist(), abs=1e-4)
    eps = rollout([TaskRef(spec, "t0")] * 2, gen, chat, RolloutConfig(max_turn_tokens=4, max_completion_tokens=12,
                                                                      executor="inprocess"))
    assert all(e.done and e.gen_seconds > 0 and sum(e.env_mask) > 0 for e in eps)


@pytest.mark.parametrize("static_cache", [False, True])
def test_hf_generator_under_bf16_autocast(tiny_dir: Any, tokenizer: Any, static_cache: bool,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """``model.dtype: bf16-mixed``: fp32 weights, generation's matmuls in bf16, always on the dynamic cache
    (transformers 5.17 allocates a static cache in the weights' dtype and refuses bf16 keys)."""
    import torch

    import training.model as tm
    import training.trl_config as tc
    from training.config import config_from_dict

    cfg = config_from_dict({"model": {"name_or_path": str(tiny_dir), "device": "cpu", "dtype": "bf16-mixed"},
                            "generation": {"engine": "transformers", "static_cache": static_cache}})
    model, tok = tm.load_policy(cfg)
    assert model.dtype == torch.float32
    assert not tm.make_generator(cfg, model, tok).autocast_bf16  # on CPU, bf16-mixed is plain fp32
    monkeypatch.setattr(tc, "resolve_device", lambda cfg: "cuda")  # as on a GPU (the model stays on CPU)
    gen = tm.make_generator(cfg, model, tok)
    assert gen.autocast_bf16
    seen: list[Any] = []
    model.register_forward_hook(lambda mod, inp, out: seen.append(out.logits.dtype))
    out, = gen.generate([tokenizer("hello")["input_ids"]], max_new_tokens=5, temperature=0.0)
    assert out.finish != "error" and out.ids and seen and set(seen) == {torch.bfloat16}
    calls: list[dict[str, Any]] = []
    real = model.generate
    monkeypatch.setattr(model, "generate", lambda **kw: calls.append(kw) or real(**kw))
    gen.generate([tokenizer("hi")["input_ids"]], max_new_tokens=2, temperature=0.0)
    assert "cache_implementation" not in calls[0]  # the dynamic cache, even with static_cache set
    assert all(p.dtype == torch.float32 for p in model.parameters())


def test_sync_keeps_processes_in_step(spec: Any, chat: Any, tokenizer: Any) -> None:
    """A process whose episodes are done keeps calling generate (with no rows) while others still play."""
    gen = ScriptedGenerator(tokenizer, solver_plan())
    sizes: list[int] = []
    orig = gen.generate

    def counting(contexts: list[list[int]], **kw: Any) -> list[Generated]:
        sizes.append(len(contexts))
        return orig(contexts, **kw)

    gen.generate = counting  # type: ignore[method-assign]
    others = iter([True] * 7)  # another process plays seven more steps than this one
    ep, = rollout([TaskRef(spec, "t0")], gen, chat, RolloutConfig(executor="inprocess"),
                  sync=lambda here: here or next(others, False))
    assert ep.passed and sizes == [1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]


def test_worker_rollout_batches_env_work_and_isolates_a_broken_env(spec: Any, chat: Any, tokenizer: Any) -> None:
    """On worker processes every step's tool calls of all episodes go in one round trip per worker
    (step_many), resets likewise (reset_many); a spec that cannot load fails alone, as data."""
    from gym_envs.sandbox import WorkerExecutor

    bad = spec.model_copy(deep=True)
    bad.code = spec.code + "\nraise ValueError('broken at import')\n"
    ex = WorkerExecutor(2)
    trips = counted_trips(ex)
    try:
        tasks = [TaskRef(spec, "t0", 1), TaskRef(bad, "t0", 2), TaskRef(spec, "t0", 3), TaskRef(spec, "t0", 4)]
        episodes = rollout(tasks, ScriptedGenerator(tokenizer, solver_plan()), chat,
                           RolloutConfig(max_turn_tokens=96, max_completion_tokens=1200, executor="worker"),
                           executor=ex)
        alone = [rollout([t], ScriptedGenerator(tokenizer, solver_plan()), chat,
                         RolloutConfig(max_turn_tokens=96, max_completion_tokens=1200), executor="inprocess")[0]
                 for t in tasks]
    finally:
        ex.close()
    assert episodes[1].status == "env_error" and "broken at import" in str(episodes[1].error)
    assert [e.status for e in episodes] == ["terminated", "env_error", "terminated", "terminated"]
    assert [e.reward for e in episodes] == [e.reward for e in alone]
    assert [e.completion_ids for e in episodes] == [e.completion_ids for e in alone]
    assert [e.record()["tool_calls"] for e in episodes] == [3, 0, 3, 3]
    # the sessions alternate between the two workers: one open batch per worker (the broken spec's
    # open is refused before its trip), then one call batch per worker for each of the three tool steps
    assert trips == [2, 2] + [2, 1] * 3


def test_a_task_needs_one_action_per_reference_call_and_a_reply_per_turn() -> None:
    from gym_envs.examples import load_example

    spec = load_example("library-loans")
    for task in spec.tasks:
        assert task.reference_actions() == sum(len(t.reference) + 1 for t in task.turns)
    assert [t.reference_actions() for t in spec.tasks] == [5, 4, 2, 5, 2, 1, 10]


def test_a_task_whose_reference_needs_more_actions_than_max_steps_gets_them_and_a_margin() -> None:
    """The step limit is never lower than what a task's reference takes (a world's reference reads on through a
    listing's pages): ``max(rollout.max_steps, reference actions + STEP_MARGIN)``, the same in training and
    evaluation, and reported."""
    from gym_envs.examples import load_example
    from gym_envs.spec import STEP_MARGIN
    from training.rollout import step_budget, step_budgets

    spec = load_example("library-loans")
    tasks = [TaskRef(spec, t.id) for t in spec.tasks]
    need = [spec.task(t.task_id).reference_actions() for t in tasks]
    assert [step_budget(t, 4) for t in tasks] == [max(4, n + STEP_MARGIN) for n in need]
    assert [step_budget(t, 40) for t in tasks] == [40] * len(tasks)  # a roomier limit is kept as it is
    assert step_budgets(tasks, 6) == {"configured": 6, "tasks": 7, "raised": sum(n + STEP_MARGIN > 6 for n in need),
                                      "largest": max(need) + STEP_MARGIN}


def test_an_episode_is_not_truncated_before_its_reference_can_pass(spec: Any, chat: Any, tokenizer: Any) -> None:
    """The library demo's t0 takes 5 actions; under ``rollout.max_steps`` 3 the reference solver still passes (it was
    truncated after 3 before), in the trainer's episodes as in evaluation's."""
    from eval.suites.generated import SpecSuite

    assert spec.task("t0").reference_actions() == 5
    ep, = rollout([TaskRef(spec, "t0")], ScriptedGenerator(tokenizer, solver_plan()), chat,
                  RolloutConfig(max_steps=3, max_turn_tokens=96, executor="inprocess"))
    assert ep.status == "terminated" and ep.passed
    episode = SpecSuite("s", [spec], executor="inprocess").episode(TaskRef(spec, "t0"), trial=0, seed=0,
                                                                   max_turn_steps=1)
    assert episode.max_actions is not None and episode.max_actions > spec.task("t0").reference_actions()


def test_self_play_draws_from_every_task() -> None:
    from gym_envs.examples import load_example
    from training.selfplay_steps import draw_tasks

    spec = load_example("library-loans")
    drawn = {i for seed in range(20) for i in draw_tasks(spec, 2, seed)}
    assert len(drawn) > 4 and any(spec.task(i).reference_actions() > 5 for i in drawn)


def test_teacher_trajectories_are_not_lost_to_the_step_budget(chat: Any) -> None:
    """Every task the teacher plays gets the actions its reference takes, so every reference trajectory passes and
    becomes a sample, the 10-action task too under ``max_steps`` 5 (before, the warm start of the self-play bench
    silently kept 39 of 120; then the tasks over the budget were left out with a warning)."""
    from gym_envs.examples import load_example
    from training.distill import ReferenceTeacher, teacher_samples

    spec = load_example("library-loans")
    tasks = [TaskRef(spec, t.id) for t in spec.tasks]
    cfg = RolloutConfig(max_steps=5, max_turn_tokens=64, executor="inprocess")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is left out
        samples, too_long = teacher_samples(tasks, ReferenceTeacher(), chat, cfg, max_length=None)
    assert too_long == 0 and len(samples) == 7 and all(s.meta["passed"] for s in samples)


def test_a_teacher_whose_trajectories_fail_is_reported_not_silently_dropped(chat: Any) -> None:
    from gym_envs.examples import load_example
    from training.distill import Teacher, teacher_samples

    class Replier(Teacher):
        name = "replier"

        def act_batch(self, views: Any) -> list[str]:
            return ["Done."] * len(views)  # ends every turn without a call: nothing is written

    spec = load_example("library-loans")
    tasks = [TaskRef(spec, t.id) for t in spec.tasks[:2]]
    cfg = RolloutConfig(max_steps=12, max_turn_tokens=64, executor="inprocess")
    with pytest.warns(UserWarning, match=r"the replier teacher did not pass 2 of 2 tasks; they are left out"):
        assert teacher_samples(tasks, Replier(), chat, cfg, max_length=None) == ([], 0)
    assert len(teacher_samples(tasks, Replier(), chat, cfg, max_length=None, require_success=False)[0]) == 2

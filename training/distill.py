"""Recovery-step self-distillation: teach the student to get back on track from its own mistakes.

One iteration (:meth:`Distiller.iteration`):

1. **student rollouts** -- the student plays ``distill.episodes_per_iteration``
   tasks (:func:`training.rollout.rollout`);
2. **divergence** -- every state the student visited is shown to the teacher,
   replayed from the same state (the same chat, the same calls made so far in
   the turn); the first step where the teacher would not take the student's
   step (:func:`same_action`: a different tool call or arguments, a call where
   the teacher would answer, or the reverse) is where the student left
   teacher-supported states;
3. **recovery** -- the environment is rebuilt in the state *after* that step
   (a fresh episode replaying the student's actions; episodes are
   deterministic from their seed, gym_envs/ENVSPEC.md rule 6), and the teacher acts from
   there until the turn ends (at most ``distill.max_recovery_steps``), through the one episode engine
   (:func:`gym_envs.engine.play`, the episode resumed in that state: the same messages and tokens as a
   rollout's); with
   ``distill.require_success`` a recovery counts only if the turn's checks
   then pass;
4. **samples** -- the student's own tokens up to and including the off-support
   step and the environment's answer are context with loss mask 0 (its valid
   prefix is not re-taught); the teacher's recovery actions have mask 1 and the
   environment tokens between them mask 0. With ``distill.include_correction``
   the teacher's action at the divergence state is a second sample;
5. **update** -- the student's engine sleeps (vLLM's sleep mode) and the sampler-trainer gap is measured
   on its episodes (:func:`training.weight_sync.sampler_report`), then masked negative log-likelihood
   (:func:`training.loss.update`, ``objective="nll"``), ``distill.epochs`` passes; the engine is synced;
   metrics and a checkpoint.

Teachers (:class:`Teacher`): :class:`ReferenceTeacher` (the spec's reference
trajectory: at a state, the first reference call of the turn not yet made
successfully, else the oracle reply) and :class:`BackendTeacher` (any envgen
backend: ``transformers``, ``vllm``, ``openai``, ``scripted``). The same
machinery plays a teacher from the start of a task: :func:`teacher_samples`
(used for the SFT warm start on reference trajectories).
"""

from __future__ import annotations

import json
import random
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from envgen.gate import oracle_reply
from gym_envs.engine import play
from gym_envs.env import ToolEnv
from gym_envs.episode_env import ToolEnvAdapter
from gym_envs.messages import ChatFormat
from gym_envs.parsing import format_tool_call, parse_action
from gym_envs.sandbox import default_executor
from gym_envs.seeding import stable_seed
from gym_envs.spec import EnvSpec, Say
from gym_envs.users import END_TURN, UserReply, is_confirmation
from training.config import RolloutConfig, TrainConfig, config_to_dict
from training.generation import Generator
from training.loss import Sample, UpdateConfig, drop_too_long, update
from training.rollout import Episode, TaskRef, rollout, scenario_user, step_budget
from training.selfplay_steps import solver_samples
from training.weight_sync import sampler_report

__all__ = ["TOO_LONG_FIX", "BackendTeacher", "Distiller", "ReferenceTeacher", "Teacher", "TeacherPolicy",
           "TeacherView", "find_divergence", "make_teacher", "recovery_samples", "same_action", "teacher_samples"]


@dataclass
class TeacherView:
    """A state as a teacher sees it."""

    spec: EnvSpec
    task_id: str
    turn: int
    turn_calls: list[dict[str, Any]]  #: calls made so far in this turn, with ``ok`` (the env's results)
    messages: list[dict[str, Any]]  #: the chat up to this state (ends with a user or tool message)
    turn_said: int = 0  #: plain messages of this turn the user answered so far (a scenario task's ``say`` items)


class Teacher:
    """Maps states to the action the teacher would take (text: tool-call blocks or a message)."""

    name = "teacher"

    def act_batch(self, views: Sequence[TeacherView]) -> list[str]:
        raise NotImplementedError


def _canonical(calls: Sequence[dict[str, Any]]) -> list[str]:
    return [json.dumps({"name": c["name"], "arguments": c.get("arguments", {})}, sort_keys=True) for c in calls]


def same_action(a: Any, b: Any) -> bool:
    """True when two actions do the same thing: the same calls (names and arguments), or both end the turn."""
    pa, pb = parse_action(a), parse_action(b)
    if pa.is_message and pb.is_message:
        return True
    return not (pa.errors or pb.errors) and _canonical(pa.calls) == _canonical(pb.calls)


class ReferenceTeacher(Teacher):
    """The spec's reference trajectory as a teacher (module docstring)."""

    name = "reference"

    def act(self, view: TeacherView) -> str:
        turn = view.spec.task(view.task_id).turns[view.turn]
        ref = turn.calls()
        done = 0
        for c in view.turn_calls:
            if done < len(ref) and c.get("ok", True) and _canonical([c]) == _canonical(
                    [{"name": ref[done].name, "arguments": ref[done].arguments}]):
                done += 1
        calls = says = 0  # the reference's items in order: its calls made so far, its messages the user answered
        for item in turn.reference:
            if isinstance(item, Say):
                if says >= view.turn_said:
                    return item.say
                says += 1
            elif calls >= done:
                return format_tool_call(item.name, dict(item.arguments))
            else:
                calls += 1
        return oracle_reply(turn)

    def act_batch(self, views: Sequence[TeacherView]) -> list[str]:
        return [self.act(v) for v in views]


class BackendTeacher(Teacher):
    """Any envgen backend as a teacher (greedy by default); a failed request answers ``""``."""

    def __init__(self, backend: Any, *, max_new_tokens: int = 512, temperature: float = 0.0, pass_tools: bool = False):
        self.backend = backend
        self.name = f"backend:{getattr(backend, 'model_id', backend.name)}"
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.pass_tools = pass_tools

    def act_batch(self, views: Sequence[TeacherView]) -> list[str]:
        if not views:
            return []
        offered = [v.spec.openai_tools(v.spec.task(v.task_id), v.turn) for v in views] if self.pass_tools else []
        tools = offered[0] if offered and all(o == offered[0] for o in offered[1:]) else None  # one tools= per batch
        outs = self.backend.generate([v.messages for v in views], max_new_tokens=self.max_new_tokens,
                                     temperature=self.temperature, tools=tools)
        return [c.text if c.ok else "" for c in outs]


def make_teacher(cfg: TrainConfig) -> Teacher:
    """The teacher ``distill.teacher`` names."""
    d = cfg.distill
    if d.teacher == "reference":
        return ReferenceTeacher()
    from envgen.backends import make_backend

    backend = make_backend(d.teacher, model=d.teacher_model, **d.teacher_options)
    return BackendTeacher(backend, max_new_tokens=d.teacher_max_new_tokens, pass_tools=cfg.rollout.pass_tools)


# -- divergence -----------------------------------------------------------------------------------


def _spec(ep: Episode) -> EnvSpec:
    if ep.task.spec is None:
        raise ValueError(f"distillation plays tasks of environment specs; {ep.task.key} has none")
    return ep.task.spec


def _calls(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": r["name"], "arguments": r["arguments"], "ok": r["ok"]} for r in results]


def _views(ep: Episode) -> list[TeacherView]:
    """The state before each of the episode's steps."""
    views: list[TeacherView] = []
    turn_calls: list[dict[str, Any]] = []
    turn = 0
    said = 0
    for st in ep.steps:
        if st.turn != turn:
            turn, turn_calls, said = st.turn, [], 0
        views.append(TeacherView(_spec(ep), ep.task.task_id, st.turn, list(turn_calls),
                                 ep.messages[: st.message_index], said))
        turn_calls += _calls(st.results)
        said += st.user_reply is not None
    return views


def find_divergence(episodes: Sequence[Episode], teacher: Teacher) -> list[tuple[int | None, str | None]]:
    """For each episode, ``(k, teacher_action)`` at its first off-support step, or ``(None, None)``."""
    views = [_views(ep) for ep in episodes]
    flat = [v for vs in views for v in vs]
    actions = teacher.act_batch(flat) if flat else []
    out: list[tuple[int | None, str | None]] = []
    i = 0
    for ep, vs in zip(episodes, views, strict=True):
        found: tuple[int | None, str | None] = (None, None)
        for k, st in enumerate(ep.steps):
            if found[0] is None and not same_action(st.text, actions[i + k]):
                found = (k, actions[i + k])
        out.append(found)
        i += len(vs)
    return out


# -- playing a teacher ----------------------------------------------------------------------------


class TeacherPolicy:
    """A :class:`Teacher` as the episode engine's policy: each episode's state as a :class:`TeacherView` (the
    calls made so far in the turn include those made before a resumed state, ``meta["turn_calls"]`` of turn
    ``meta["turn"]``)."""

    def __init__(self, teacher: Teacher):
        self.teacher = teacher

    @staticmethod
    def view(ep: Episode) -> TeacherView:
        calls = list(ep.meta.get("turn_calls", [])) if ep.turn == ep.meta.get("turn", 0) else []
        said = 0
        for st in ep.steps:
            if st.turn == ep.turn:
                calls += _calls(st.results)
                said += st.user_reply is not None
        return TeacherView(_spec(ep), ep.task.task_id, ep.turn, calls, list(ep.messages), said)

    def act_batch(self, episodes: Sequence[Episode]) -> list[str]:
        return self.teacher.act_batch([self.view(ep) for ep in episodes]) if episodes else []


def _turn_passed(ep: Episode) -> bool | None:
    """The verdict of the last turn the episode ended (None: it ended none)."""
    return next((st.turn_passed for st in reversed(ep.steps) if st.turn_ended), None)


def _replay_env(ep: Episode, upto: int, cfg: RolloutConfig, executor: Any) -> tuple[ToolEnv, list[dict[str, Any]]]:
    """A fresh env in the state after the episode's steps ``0..upto``; returns it and the turn's calls so far."""
    env = ToolEnv(_spec(ep), ep.task.task_id, reward_mode=cfg.reward_mode,
                  max_steps=step_budget(ep.task, cfg.max_steps), executor=executor,
                  max_observation_chars=cfg.max_observation_chars)
    env.reset(options={"task": ep.task.task_id, "episode_seed": ep.seed})
    turn_calls: list[dict[str, Any]] = []
    for st in ep.steps[: upto + 1]:
        if st.user_reply is not None:  # the user's answer as it was (a model-backed user's too)
            env.preset_reply(UserReply(st.user_reply, is_confirmation(st.user_reply)))
        elif st.turn_ended:
            env.preset_reply(END_TURN)
        _, _, _, _, info = env.step(st.text)
        if "turn_passed" in info:
            turn_calls = []
        else:
            turn_calls += _calls(info.get("tool_results") or [])
    return env, turn_calls


#: what to do when SFT samples are longer than the model's context window (:func:`training.loss.drop_too_long`)
TOO_LONG_FIX = ("keep tool results short (the environments' listings page; rollout.max_observation_chars cuts each "
                "result), ask fewer steps of a task (rollout.max_steps), or train a model with a longer context window")


def recovery_samples(episodes: Sequence[Episode], teacher: Teacher, chat: ChatFormat, cfg: TrainConfig, *,
                     max_length: int | None, executor: Any = None) -> tuple[list[Sample], dict[str, float]]:
    """Divergence, recovery and samples for a batch of student episodes (module docstring, steps 2-4); a sample
    longer than ``max_length`` tokens (the model's context window; None: no limit) is left out and counted
    (``too_long``), with a warning (:func:`training.loss.drop_too_long`)."""
    d = cfg.distill
    ex = executor or default_executor(cfg.rollout.executor)
    found = find_divergence(episodes, teacher)
    samples: list[Sample] = []
    plays: list[tuple[Episode, int, Episode]] = []
    stats = {"divergences": 0.0, "recovery_attempts": 0.0, "recovery_successes": 0.0, "recovery_samples": 0.0,
             "correction_samples": 0.0, "supported_episodes": 0.0}
    for ep, (k, teacher_action) in zip(episodes, found, strict=True):
        if k is None or teacher_action is None:
            stats["supported_episodes"] += 1
            continue
        stats["divergences"] += 1
        st = ep.steps[k]
        if d.include_correction:
            ids = chat.assistant_ids(teacher_action)
            samples.append(Sample(ep.prompt_ids, ep.completion_ids[: st.start] + ids,
                                  [0] * st.start + [1] * len(ids), role="correction",
                                  meta={"task": ep.task.key, "step": k}))
            stats["correction_samples"] += 1
        if st.turn_ended or k + 1 >= len(ep.steps) or st.finish != "stop":
            continue  # the off-support step ended the turn or the episode: nothing to recover within it
        env, turn_calls = _replay_env(ep, k, cfg.rollout, ex)
        play_ep = Episode(ep.task, max_actions=d.max_recovery_steps, stop_at_turn_end=True,
                          user=scenario_user(cfg.rollout), meta={"turn": st.turn, "turn_calls": turn_calls})
        play_ep.resume(ToolEnvAdapter(env, ep.task.task_id), ep.messages[: ep.steps[k + 1].message_index],
                       turn=st.turn, tools=ep.tools)
        plays.append((ep, ep.steps[k + 1].start, play_ep))
        stats["recovery_attempts"] += 1
    play([p for _, _, p in plays], TeacherPolicy(teacher), chat=chat)
    for ep, prefix_end, p in plays:
        ok = bool(_turn_passed(p)) and p.error is None
        stats["recovery_successes"] += float(ok)
        if (d.require_success and not ok) or not any(p.env_mask):
            continue
        samples.append(Sample(ep.prompt_ids, ep.completion_ids[:prefix_end] + p.completion_ids,
                              [0] * prefix_end + p.env_mask, role="recovery",
                              meta={"task": ep.task.key, "steps": len(p.steps), "turn_passed": _turn_passed(p)}))
        stats["recovery_samples"] += 1
    samples, too_long = drop_too_long(samples, max_length, what="distillation samples", fix=TOO_LONG_FIX)
    stats["too_long"] = float(too_long)
    return samples, stats


def teacher_samples(tasks: Sequence[TaskRef], teacher: Teacher, chat: ChatFormat, cfg: RolloutConfig, *,
                    max_length: int | None, executor: Any = None,
                    require_success: bool = True) -> tuple[list[Sample], int]:
    """Whole episodes played by the teacher from the start (SFT data; env tokens masked), and how many were longer
    than ``max_length`` tokens (the model's context window: :func:`training.model.context_window`; None: no limit):
    those are left out with a warning (:func:`training.loss.drop_too_long`), never trained on."""
    ex = executor or default_executor(cfg.executor)

    def episode(t: TaskRef) -> Episode:
        spec = t.spec

        steps = step_budget(t, cfg.max_steps)

        def make() -> ToolEnvAdapter:
            return ToolEnvAdapter(ToolEnv(spec, t.task_id, reward_mode=cfg.reward_mode, max_steps=steps,
                                          executor=ex, max_observation_chars=cfg.max_observation_chars), t.task_id)

        return Episode(t, make, max_actions=steps, user=scenario_user(cfg))

    plays = play([episode(t) for t in tasks], TeacherPolicy(teacher), chat=chat)
    out, failed = [], []
    for t, p in zip(tasks, plays, strict=True):
        passed = float(p.score.get("episode", 0.0)) == 1.0
        if (require_success and not passed) or not p.prompt_ids:
            failed.append(f"{t.key}" + (f" ({p.error})" if p.error else ""))
            continue
        out.append(Sample(p.prompt_ids, p.completion_ids, p.env_mask, role="teacher",
                          meta={"task": t.key, "passed": passed}))
    if failed:  # a drop is data lost from a warm start: say so rather than train on less in silence
        warnings.warn(f"the {teacher.name} teacher did not pass {len(failed)} of {len(tasks)} tasks; they are "
                      f"left out of its samples (first: {'; '.join(failed[:3])})", stacklevel=2)
    return drop_too_long(out, max_length, what=f"{teacher.name} trajectories", fix=TOO_LONG_FIX)


# -- the trainer ----------------------------------------------------------------------------------


class Distiller:
    """The recovery-step self-distillation trainer (see the module docstring).

    Args:
        cfg: the configuration (``distill:``, ``solver.envs`` for the tasks, ``rollout:``, ``grpo:`` for the
            optimizer).
        model, tokenizer, generator: the student and how it samples (default: loaded from ``model:``).
        teacher: replaces ``distill.teacher``.
        tasks: replaces the tasks of ``solver.envs``.
    """

    def __init__(self, cfg: TrainConfig, *, model: Any = None, tokenizer: Any = None,
                 generator: Generator | None = None, teacher: Teacher | None = None,
                 tasks: Sequence[TaskRef] | None = None):
        from training.checkpoint import load_training_state
        from training.metrics import MetricsWriter
        from training.model import context_window, make_generator, open_policy_run
        from training.solver import TaskPool

        self.cfg = cfg
        run = open_policy_run(cfg, model, tokenizer)
        resume = run.resume_from
        self.run_dir, self.model, self.tokenizer = run.run_dir, run.model, run.tokenizer
        self.update_cfg: UpdateConfig = run.update_cfg
        self.optimizer = run.optimizer
        self.chat = ChatFormat(self.tokenizer, pass_tools=cfg.rollout.pass_tools)
        self.generator = generator or make_generator(cfg, self.model, self.tokenizer)
        self.window = context_window(self.model, self.tokenizer)  #: no sample longer is trained on
        self.generator.track(self.optimizer)
        self.teacher = teacher or make_teacher(cfg)
        self.tasks = list(tasks) if tasks is not None else list(TaskPool.from_config(cfg).tasks.values())
        self.rng = random.Random(cfg.run.seed)
        self.metrics = MetricsWriter(self.run_dir, cfg.run.report_to, run_name=cfg.run.run_name,
                                     config=config_to_dict(cfg))
        self.start = 0
        self.history: list[dict[str, Any]] = []
        if resume is not None:
            state = load_training_state(resume, self.optimizer)
            self.start = int(state["next_round"])
            if state.get("extra", {}).get("rng") is not None:
                self.rng.setstate(state["extra"]["rng"])
            self.generator.sync()

    def _draw(self, it: int) -> list[TaskRef]:
        n = self.cfg.distill.episodes_per_iteration
        picks = [self.rng.choice(self.tasks) for _ in range(n)]
        return [TaskRef(t.spec, t.task_id, stable_seed(self.cfg.run.seed, "episodes", it), t.source) for t in picks]

    def iteration(self, it: int) -> dict[str, Any]:
        """One iteration (module docstring); returns its metrics."""
        from training.checkpoint import save_checkpoint
        from training.rollout import batch_stats

        t0 = time.perf_counter()
        episodes = rollout(self._draw(it), self.generator, self.chat, self.cfg.rollout,
                           seed=stable_seed(self.cfg.run.seed, "rollout", it))
        t1 = time.perf_counter()
        samples, stats = recovery_samples(episodes, self.teacher, self.chat, self.cfg, max_length=self.window)
        t2 = time.perf_counter()
        engine = sampler_report(self.generator, self.model, solver_samples(episodes, [""] * len(episodes), 1.0),
                                pad_id=self.chat.pad_id, cfg=self.update_cfg,
                                limit=self.cfg.generation.max_logprob_gap)
        upd: dict[str, float] = {}
        for _ in range(self.cfg.distill.epochs):
            upd = update(self.model, self.optimizer, samples, pad_id=self.chat.pad_id, cfg=self.update_cfg,
                         objective="nll")
        t3 = time.perf_counter()
        self.generator.sync()
        t4 = time.perf_counter()
        bs = batch_stats(episodes)
        metrics = {"iteration": it,
                   "student": {"reward": bs["reward"], "pass_rate": bs["pass_rate"], "statuses": bs["statuses"]},
                   "distill": stats, "update": upd, "generation": engine,
                   "throughput": {"tokens_per_second": bs["tokens_per_second"]},
                   "time": {"generation": bs["gen_seconds"], "environment": bs["env_seconds"],
                            "teacher": t2 - t1, "update": t3 - t2, "weight_sync": t4 - t3, "round": t4 - t0}}
        self.metrics.log(metrics, step=it)
        self.history.append(metrics)
        save_checkpoint(self.run_dir, it, model=self.model, tokenizer=self.tokenizer, optimizer=self.optimizer,
                        trainer="distill", extra={"rng": self.rng.getstate()})
        return metrics

    def run(self) -> list[dict[str, Any]]:
        try:
            for it in range(self.start, self.cfg.distill.iterations):
                self.iteration(it)
        finally:
            self.metrics.close()
        return self.history

